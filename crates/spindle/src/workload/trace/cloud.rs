//! Cloud block traces published on SNIA IOTTA: Tencent CBS and SYSTOR'17.
//!
//! * Tencent CBS: `timestamp_s,offset_sectors,size_sectors,iotype,volume` — Unix seconds
//!   (1-s resolution), 512-byte sectors, `iotype` 0 = read and 1 = write, the volume ID becomes
//!   the device.
//! * SYSTOR'17: `Timestamp,Response,IOType,LUN,Offset,Size` (a header line of that shape is
//!   skipped) — Unix seconds with a decimal fraction, response time (ignored), `R`/`W`, LUN (an
//!   empty LUN is device 0), byte offset and byte size.
//!
//! Both keep their absolute Unix times (as ns since 1970); neither is sorted by time, so replay
//! them through `trace convert --sort` (or sort them) before a speed-up.

use super::parse::{next_field, record_bytes, record_sectors, CsvFields, Field};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

/// Line parser for Tencent CBS CSV (stateless).
#[derive(Clone, Debug, Default)]
pub struct TencentParser;

/// A streaming Tencent CBS reader.
pub type TencentReader<R> = Reader<R, TencentParser>;

impl LineParser for TencentParser {
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        const TIMESTAMP: Field = Field::new(1, "timestamp");
        const OFFSET: Field = Field::new(2, "offset");
        const SIZE: Field = Field::new(3, "size");
        const TYPE: Field = Field::new(4, "iotype");
        const VOLUME: Field = Field::new(5, "volume");
        const FIELDS: usize = 5;
        let all = CsvFields::new(line);
        let mut f = all.clone();
        let arrival = TIMESTAMP.time(next_field(&mut f, &all, FIELDS)?, 9)?;
        let lba = OFFSET.u64(next_field(&mut f, &all, FIELDS)?)?;
        let sectors = SIZE.u64(next_field(&mut f, &all, FIELDS)?)?;
        let op = match next_field(&mut f, &all, FIELDS)? {
            b"0" => Op::Read,
            b"1" => Op::Write,
            other => return Err(TYPE.bad("0 (read) or 1 (write)", other)),
        };
        let device = VOLUME.u32(next_field(&mut f, &all, FIELDS)?)?;
        record_sectors(arrival, device, lba, sectors, op, SIZE).map(Some)
    }
}

/// Line parser for SYSTOR'17 CSV; skips the header line.
#[derive(Clone, Debug, Default)]
pub struct SystorParser {
    lines: u64,
}

/// A streaming SYSTOR'17 reader.
pub type SystorReader<R> = Reader<R, SystorParser>;

impl LineParser for SystorParser {
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        const TIMESTAMP: Field = Field::new(1, "timestamp");
        const TYPE: Field = Field::new(3, "iotype");
        const LUN: Field = Field::new(4, "lun");
        const OFFSET: Field = Field::new(5, "offset");
        const SIZE: Field = Field::new(6, "size");
        const FIELDS: usize = 6;
        self.lines += 1;
        let all = CsvFields::new(line);
        let mut f = all.clone();
        let ts = next_field(&mut f, &all, FIELDS)?;
        if self.lines == 1 && ts.eq_ignore_ascii_case(b"timestamp") {
            return Ok(None);
        }
        let arrival = TIMESTAMP.time(ts, 9)?;
        let _response = next_field(&mut f, &all, FIELDS)?;
        let op = match next_field(&mut f, &all, FIELDS)? {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => return Err(TYPE.bad("'R' or 'W'", other)),
        };
        let lun = next_field(&mut f, &all, FIELDS)?;
        let device = if lun.is_empty() { 0 } else { LUN.u32(lun)? };
        let offset = OFFSET.u64(next_field(&mut f, &all, FIELDS)?)?;
        let size = SIZE.u64(next_field(&mut f, &all, FIELDS)?)?;
        record_bytes(arrival, device, offset, size, op, SIZE).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    #[test]
    fn tencent_lines() {
        let r = TencentParser
            .parse_line(b"1538323200,4247200,128,1,1058")
            .expect("valid")
            .expect("record");
        assert_eq!(
            r,
            TraceRecord {
                arrival: Nanos(1_538_323_200_000_000_000),
                device: 1058,
                lba: 4_247_200,
                sectors: 128,
                op: Op::Write
            }
        );
        let e = TencentParser.parse_line(b"1,2,3,R,5").expect_err("type");
        assert!(e.to_string().starts_with("field 4 (iotype)"), "{e}");
    }

    #[test]
    fn systor_lines_and_header() {
        let mut p = SystorParser::default();
        assert!(matches!(
            p.parse_line(b"Timestamp,Response,IOType,LUN,Offset,Size"),
            Ok(None)
        ));
        let r = p
            .parse_line(b"1456095145.133076000,0.000806000,R,0,899056122368,131072")
            .expect("valid")
            .expect("record");
        assert_eq!(
            r,
            TraceRecord {
                arrival: Nanos(1_456_095_145_133_076_000),
                device: 0,
                lba: 1_755_968_989,
                sectors: 256,
                op: Op::Read
            }
        );
        let r = p
            .parse_line(b"1.5,0.1,W,,1024,512")
            .expect("valid")
            .expect("record");
        assert_eq!((r.device, r.lba, r.op), (0, 2, Op::Write));
    }
}
