//! DiskSim ASCII traces: `arrival_ms devno lbn nsectors flags_hex`, whitespace separated.
//!
//! The arrival time is in milliseconds (decimal, converted exactly to ns), `lbn` and `nsectors`
//! are 512-byte sectors, and bit 0 of the hexadecimal `flags` is set for a read (DiskSim's
//! `READ` flag; other bits, such as DiskSim's time-critical flags, are ignored). Fields after the
//! fifth are ignored. This is DiskSim 4.0's default `ascii` input format (manual §4.1.1).

use super::parse::{next_field, record_sectors, Field, Fields};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

const ARRIVAL: Field = Field::new(1, "arrival");
const DEVICE: Field = Field::new(2, "device");
const LBA: Field = Field::new(3, "lba");
const SECTORS: Field = Field::new(4, "sectors");
const FLAGS: Field = Field::new(5, "flags");
const FIELDS: usize = 5;

/// Line parser for DiskSim ASCII (stateless).
#[derive(Clone, Debug, Default)]
pub struct DiskSimParser;

/// A streaming DiskSim ASCII reader.
pub type DiskSimReader<R> = Reader<R, DiskSimParser>;

impl LineParser for DiskSimParser {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        let all = Fields::new(line);
        let mut f = all.clone();
        let arrival = ARRIVAL.time(next_field(&mut f, &all, FIELDS)?, 6)?;
        let device = DEVICE.u32(next_field(&mut f, &all, FIELDS)?)?;
        let lba = LBA.u64(next_field(&mut f, &all, FIELDS)?)?;
        let sectors = SECTORS.u64(next_field(&mut f, &all, FIELDS)?)?;
        let flags = FLAGS.hex(next_field(&mut f, &all, FIELDS)?)?;
        let op = if flags & 1 == 1 { Op::Read } else { Op::Write };
        record_sectors(arrival, device, lba, sectors, op, SECTORS).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn parse(line: &str) -> Result<Option<TraceRecord>, TraceErrorKind> {
        DiskSimParser.parse_line(line.as_bytes())
    }

    #[test]
    fn parses_the_bundled_example_line() {
        let r = parse("17.829285\t20\t576560\t6\t1")
            .expect("valid")
            .expect("a record");
        assert_eq!(
            r,
            TraceRecord {
                arrival: Nanos(17_829_285),
                device: 20,
                lba: 576_560,
                sectors: 6,
                op: Op::Read
            }
        );
        let w = parse("162.145 5 150229712 16 0")
            .expect("valid")
            .expect("a record");
        assert_eq!((w.arrival, w.op), (Nanos(162_145_000), Op::Write));
        let hex = parse("1 0 0 1 0x3 extra")
            .expect("valid")
            .expect("a record");
        assert_eq!(hex.op, Op::Read, "bit 0 of 0x3 is set");
        let even = parse("1 0 0 1 a").expect("valid").expect("a record");
        assert_eq!(even.op, Op::Write, "bit 0 of 0xa is clear");
    }

    #[test]
    fn bad_fields_name_the_field() {
        let e = parse("1.0 2 3 4 zz").expect_err("bad flags");
        assert_eq!(
            e.to_string(),
            r#"field 5 (flags): expected a hex number, got "zz""#
        );
        let e = parse("1.0 2 3").expect_err("short");
        assert_eq!(e.to_string(), "expected at least 5 fields, got 3");
        let e = parse("-1 2 3 4 1").expect_err("negative time");
        assert!(e.to_string().starts_with("field 1 (arrival)"), "{e}");
        let e = parse("1 2 3 0 1").expect_err("zero size");
        assert_eq!(e.to_string(), "field 4 (sectors): zero-size request");
        let e = parse("1 99999999999 3 4 1").expect_err("device too large");
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}
