//! MSR Cambridge CSV traces (SNIA IOTTA):
//! `timestamp,hostname,disknumber,type,offset,size,responsetime`.
//!
//! `timestamp` is a Windows FILETIME (100-ns ticks since 1601-01-01); arrivals are made relative
//! to the first record, so the first record arrives at 0 and a record stamped earlier than the
//! first is an error. `disknumber` becomes the device (the host name is ignored, so a file that
//! mixes hosts with the same disk numbers merges them). `type` is `Read` or `Write` (any case);
//! `offset` and `size` are bytes (start rounded down, end rounded up to 512-byte sectors). The
//! response time is ignored. A header line (first field not a number) before the first record
//! is skipped.

use super::parse::{next_field, record_bytes, CsvFields, Field};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

const TIMESTAMP: Field = Field::new(1, "timestamp");
const DISK: Field = Field::new(3, "disk");
const TYPE: Field = Field::new(4, "type");
const OFFSET: Field = Field::new(5, "offset");
const SIZE: Field = Field::new(6, "size");
const FIELDS: usize = 6;

/// The duration of one FILETIME tick in ns.
pub const FILETIME_TICK_NS: u64 = 100;

/// Line parser for MSR Cambridge CSV; remembers the first record's timestamp.
#[derive(Clone, Debug, Default)]
pub struct MsrParser {
    first_ticks: Option<u64>,
    lines: u64,
}

/// A streaming MSR Cambridge reader.
pub type MsrReader<R> = Reader<R, MsrParser>;

impl MsrParser {
    /// The FILETIME (100-ns ticks) of the first record, once one has been read.
    pub fn first_filetime(&self) -> Option<u64> {
        self.first_ticks
    }
}

impl LineParser for MsrParser {
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        self.lines += 1;
        let all = CsvFields::new(line);
        let mut f = all.clone();
        let ts = next_field(&mut f, &all, FIELDS)?;
        let is_header = self.lines == 1 && !ts.first().is_some_and(u8::is_ascii_digit);
        if is_header {
            return Ok(None);
        }
        let ticks = TIMESTAMP.u64(ts)?;
        let _host = next_field(&mut f, &all, FIELDS)?;
        let device = DISK.u32(next_field(&mut f, &all, FIELDS)?)?;
        let op_field = next_field(&mut f, &all, FIELDS)?;
        let op = if op_field.eq_ignore_ascii_case(b"read") || op_field.eq_ignore_ascii_case(b"r") {
            Op::Read
        } else if op_field.eq_ignore_ascii_case(b"write") || op_field.eq_ignore_ascii_case(b"w") {
            Op::Write
        } else {
            return Err(TYPE.bad("Read or Write", op_field));
        };
        let offset = OFFSET.u64(next_field(&mut f, &all, FIELDS)?)?;
        let size = SIZE.u64(next_field(&mut f, &all, FIELDS)?)?;
        let first = *self.first_ticks.get_or_insert(ticks);
        let Some(rel_ticks) = ticks.checked_sub(first) else {
            return Err(TraceErrorKind::BeforeFirst {
                ticks,
                first_ticks: first,
            });
        };
        let Some(arrival) = rel_ticks.checked_mul(FILETIME_TICK_NS) else {
            return Err(TraceErrorKind::OutOfRange {
                index: TIMESTAMP.index,
                name: TIMESTAMP.name,
                got: ticks.to_string(),
            });
        };
        record_bytes(arrival, device, offset, size, op, SIZE).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    #[test]
    fn arrivals_are_relative_to_the_first_record() {
        let mut p = MsrParser::default();
        let a = p
            .parse_line(b"128166385295514663,hm,0,Write,9056014336,2048,2833")
            .expect("valid")
            .expect("record");
        assert_eq!(
            a,
            TraceRecord {
                arrival: Nanos(0),
                device: 0,
                lba: 17_687_528,
                sectors: 4,
                op: Op::Write
            }
        );
        let b = p
            .parse_line(b"128166385295514878,hm,0,Read,11855351808,512,2617")
            .expect("valid")
            .expect("record");
        assert_eq!((b.arrival, b.op, b.sectors), (Nanos(21_500), Op::Read, 1));
        assert_eq!(p.first_filetime(), Some(128_166_385_295_514_663));
        let e = p
            .parse_line(b"128166385295514000,hm,0,Read,0,512,1")
            .expect_err("earlier than first");
        assert!(
            e.to_string().contains("earlier than the first record"),
            "{e}"
        );
    }

    #[test]
    fn skips_one_header_line_only() {
        let mut p = MsrParser::default();
        assert!(matches!(
            p.parse_line(b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"),
            Ok(None)
        ));
        let e = p
            .parse_line(b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime")
            .expect_err("twice");
        assert!(e.to_string().starts_with("field 1 (timestamp)"), "{e}");
        let e = p.parse_line(b"1,h,0,Trim,0,512,1").expect_err("bad type");
        assert_eq!(
            e.to_string(),
            r#"field 4 (type): expected Read or Write, got "Trim""#
        );
    }
}
