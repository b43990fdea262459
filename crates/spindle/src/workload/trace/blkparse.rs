//! Linux `blkparse` default text output; only `D` (issued to the driver) events are used.
//!
//! An event line is `maj,min cpu seq sec.nsec pid action RWBS sector + nsectors [process]`.
//! The device is `maj * 256 + min` (the classic `dev_t` numbering, as in
//! `shared/traces/trace_stats.py`); the time is exact to the nanosecond.
//!
//! What is skipped, silently: every line that is not an event line (per-CPU and total summary
//! sections, `CPU0 (8,16):`, `Throughput …`, blank lines), events other than `D`, `D` events
//! whose RWBS has neither `R` nor `W` (flushes `FN`, discards `D`, `N` pass-through requests),
//! `D` events without a `sector + n` payload (e.g. a bare flush `D FWS [kworker]` or a SCSI
//! pass-through `D R 0 (12 00 …)`), and `D` events of 0 sectors. A `D` event with a read or
//! write flag and a malformed time, sector or count is an error.

use super::parse::{next_field, record_sectors, Field, Fields};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

const DEVICE: Field = Field::new(1, "device");
const TIME: Field = Field::new(4, "time");
const RWBS: Field = Field::new(7, "rwbs");
const SECTOR: Field = Field::new(8, "sector");
const SECTORS: Field = Field::new(10, "sectors");
const FIELDS: usize = 7;

/// Line parser for `blkparse` text (stateless).
#[derive(Clone, Debug, Default)]
pub struct BlkparseParser;

/// A streaming `blkparse` reader.
pub type BlkparseReader<R> = Reader<R, BlkparseParser>;

/// Splits `maj,min` into its two numbers when the field has that shape.
fn split_dev(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let comma = s.iter().position(|&b| b == b',')?;
    let (maj, min) = (&s[..comma], &s[comma + 1..]);
    let digits = |x: &[u8]| !x.is_empty() && x.iter().all(u8::is_ascii_digit);
    (digits(maj) && digits(min)).then_some((maj, min))
}

/// True if `line` looks like a blkparse event line (`maj,min cpu seq time pid action …`),
/// whatever its action. Used by format detection.
pub fn is_event_line(line: &[u8]) -> bool {
    let mut f = Fields::new(line);
    let ints =
        |x: Option<&[u8]>| x.is_some_and(|x| !x.is_empty() && x.iter().all(u8::is_ascii_digit));
    let dev = f.next().and_then(split_dev).is_some();
    let cpu = ints(f.next());
    let seq = ints(f.next());
    let time = f
        .next()
        .is_some_and(|t| super::parse::parse_decimal_scaled(t, 9).is_ok());
    let pid = ints(f.next());
    let action = f
        .next()
        .is_some_and(|a| !a.is_empty() && a.len() <= 2 && a.iter().all(u8::is_ascii_alphabetic));
    dev && cpu && seq && time && pid && action
}

impl LineParser for BlkparseParser {
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        let all = Fields::new(line);
        let mut f = all.clone();
        let Some((maj, min)) = f.next().and_then(split_dev) else {
            return Ok(None); // not an event line: a summary section or other text
        };
        let (_cpu, _seq) = (f.next(), f.next());
        let time = f.next();
        let _pid = f.next();
        if f.next() != Some(b"D") {
            return Ok(None);
        }
        let time = time.ok_or(TraceErrorKind::MissingFields {
            expected: FIELDS,
            got: 0,
        })?;
        let rwbs = next_field(&mut f, &all, FIELDS)?;
        let is_read = rwbs.contains(&b'R');
        if !is_read && !rwbs.contains(&b'W') {
            return Ok(None);
        }
        if !rwbs.iter().all(u8::is_ascii_alphabetic) {
            return Err(RWBS.bad("RWBS flags", rwbs));
        }
        let (Some(sector), Some(b"+"), Some(count)) = (f.next(), f.next(), f.next()) else {
            return Ok(None); // no `sector + n` payload: a flush or a pass-through command
        };
        let arrival = TIME.time(time, 9)?;
        let maj = DEVICE.u32(maj)?;
        let min = DEVICE.u32(min)?;
        let device = maj
            .checked_mul(256)
            .and_then(|d| d.checked_add(min))
            .ok_or_else(|| TraceErrorKind::OutOfRange {
                index: DEVICE.index,
                name: DEVICE.name,
                got: format!("{maj},{min}"),
            })?;
        let lba = SECTOR.u64(sector)?;
        let sectors = SECTORS.u64(count)?;
        if sectors == 0 {
            return Ok(None);
        }
        let op = if is_read { Op::Read } else { Op::Write };
        record_sectors(arrival, device, lba, sectors, op, SECTORS).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn parse(line: &str) -> Result<Option<TraceRecord>, TraceErrorKind> {
        BlkparseParser.parse_line(line.as_bytes())
    }

    #[test]
    fn uses_issue_events_only() {
        let r = parse("  8,16   5       22     0.200104326 18615  D   R 1444646178 + 256 [java]")
            .expect("valid")
            .expect("a D event");
        assert_eq!(
            r,
            TraceRecord {
                arrival: Nanos(200_104_326),
                device: 2064,
                lba: 1_444_646_178,
                sectors: 256,
                op: Op::Read
            }
        );
        let w = parse("8,0 1 3 1.5 7 D WS 100 + 8 [kworker/1:1]")
            .expect("valid")
            .expect("write");
        assert_eq!((w.op, w.device), (Op::Write, 2048));
        for skipped in [
            "  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]",
            "  8,16   5        0     0.000012990     0  m   N cfq18615S / insert_request",
            "  8,16   5        4     0.000008750 18615  P   N [java]",
            "8,0 1 4 1.6 7 D FN [kworker]",
            "8,0 1 4 1.6 7 D FWS [kworker]",
            "8,0 1 4 1.6 7 D WS 100 + 0 [x]",
            "8,0 1 4 1.6 7 D R 0 (12 00 00 00 24 00 ..) [sg_inq]",
            "CPU0 (8,16):",
            " Reads Queued:           0,        0KiB\t Writes Queued:           0,        0KiB",
            "Total (8,16):",
            "Throughput (R/W): 0KiB/s / 0KiB/s",
            "Events (8,16): 41141 entries",
        ] {
            assert!(
                matches!(parse(skipped), Ok(None)),
                "{skipped:?} should be skipped"
            );
        }
    }

    #[test]
    fn a_malformed_issue_event_is_an_error() {
        let e = parse("8,16 5 22 0.2x 18615 D R 1 + 8 [java]").expect_err("bad time");
        assert!(e.to_string().starts_with("field 4 (time)"), "{e}");
        let e = parse("8,16 5 22 0.2 18615 D R 1 + eight [java]").expect_err("bad count");
        assert!(e.to_string().starts_with("field 10 (sectors)"), "{e}");
        let e = parse("8,16 5 22 0.2 18615 D R -1 + 8 [java]").expect_err("bad sector");
        assert!(e.to_string().starts_with("field 8 (sector)"), "{e}");
        let e = parse("8,16 5 22 0.2 18615 D").expect_err("no rwbs");
        assert_eq!(e.to_string(), "expected at least 7 fields, got 6");
    }

    #[test]
    fn event_line_shape() {
        assert!(is_event_line(
            b"  8,16   5        1     0.000000000 18615  A   R 1 + 256 <- (8,17) 1"
        ));
        assert!(is_event_line(
            b"  8,16   5        0     0.000012990     0  m   N cfq18615S / x"
        ));
        assert!(!is_event_line(b"CPU0 (8,16):"));
        assert!(!is_event_line(b"0.000 5 174224064 16 1"));
    }
}
