//! SPC (Storage Performance Council / UMass Trace Repository) ASCII traces:
//! `asu,lba,size_bytes,opcode,timestamp_s[,…]`, comma separated.
//!
//! The ASU (application-specific unit) becomes the device; `lba` is in 512-byte sectors;
//! `size_bytes` is rounded up to whole sectors; `opcode` is `r` or `w` (either case); the
//! timestamp is decimal seconds from the start of the trace (converted exactly to ns). Optional
//! fields after the fifth are ignored.

use super::parse::{next_field, record_sectors, CsvFields, Field};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

const ASU: Field = Field::new(1, "asu");
const LBA: Field = Field::new(2, "lba");
const SIZE: Field = Field::new(3, "size");
const OPCODE: Field = Field::new(4, "opcode");
const TIMESTAMP: Field = Field::new(5, "timestamp");
const FIELDS: usize = 5;

/// Line parser for SPC ASCII (stateless).
#[derive(Clone, Debug, Default)]
pub struct SpcParser;

/// A streaming SPC reader.
pub type SpcReader<R> = Reader<R, SpcParser>;

impl LineParser for SpcParser {
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        let all = CsvFields::new(line);
        let mut f = all.clone();
        let device = ASU.u32(next_field(&mut f, &all, FIELDS)?)?;
        let lba = LBA.u64(next_field(&mut f, &all, FIELDS)?)?;
        let size = SIZE.u64(next_field(&mut f, &all, FIELDS)?)?;
        let op = match next_field(&mut f, &all, FIELDS)? {
            b"r" | b"R" => Op::Read,
            b"w" | b"W" => Op::Write,
            other => return Err(OPCODE.bad("'r' or 'w'", other)),
        };
        let arrival = TIMESTAMP.time(next_field(&mut f, &all, FIELDS)?, 9)?;
        // The LBA is already in sectors; the size is in bytes and rounds up to whole sectors.
        record_sectors(arrival, device, lba, size.div_ceil(512), op, SIZE).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    #[test]
    fn parses_financial1_first_records() {
        let r = SpcParser
            .parse_line(b"0,303567,3584,w,0.000000")
            .expect("valid")
            .expect("record");
        assert_eq!(
            r,
            TraceRecord {
                arrival: Nanos(0),
                device: 0,
                lba: 303_567,
                sectors: 7,
                op: Op::Write
            }
        );
        let r = SpcParser
            .parse_line(b"1,55596,3072,R,0.078643")
            .expect("valid")
            .expect("record");
        assert_eq!(
            (r.arrival, r.device, r.sectors, r.op),
            (Nanos(78_643_000), 1, 6, Op::Read)
        );
        let odd = SpcParser
            .parse_line(b"2, 10, 1000 , w , 1.5, extra")
            .expect("valid")
            .expect("record");
        assert_eq!(
            (odd.lba, odd.sectors, odd.arrival),
            (10, 2, Nanos(1_500_000_000))
        );
    }

    #[test]
    fn rejects_bad_opcodes_and_sizes() {
        let e = SpcParser.parse_line(b"0,1,512,x,0").expect_err("opcode");
        assert_eq!(
            e.to_string(),
            r#"field 4 (opcode): expected 'r' or 'w', got "x""#
        );
        let e = SpcParser
            .parse_line(b"0,1,-512,r,0")
            .expect_err("negative size");
        assert!(e.to_string().starts_with("field 3 (size)"), "{e}");
        let e = SpcParser.parse_line(b"0,1,0,r,0").expect_err("zero size");
        assert_eq!(e.to_string(), "field 3 (size): zero-size request");
        let e = SpcParser
            .parse_line(b"0,18446744073709551615,512,r,0")
            .expect_err("past 2^64");
        assert!(
            e.to_string()
                .contains("runs past the end of a 64-bit address space"),
            "{e}"
        );
        let e = SpcParser.parse_line(b"0,1,512,r").expect_err("short");
        assert_eq!(e.to_string(), "expected at least 5 fields, got 4");
    }
}
