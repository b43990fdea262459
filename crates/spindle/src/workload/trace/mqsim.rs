//! MQSim ASCII traces: `arrival_ns devno lba nsectors type`, whitespace separated.
//!
//! The arrival time is an integer in nanoseconds, `lba` and `nsectors` are 512-byte sectors and
//! `type` is `1` for a read and `0` for a write (MQSim's `ASCIITraceReadCode`/`WriteCode`); any
//! other type is an error. Fields after the fifth are ignored.

use super::parse::{next_field, record_sectors, Field, Fields};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

const ARRIVAL: Field = Field::new(1, "arrival");
const DEVICE: Field = Field::new(2, "device");
const LBA: Field = Field::new(3, "lba");
const SECTORS: Field = Field::new(4, "sectors");
const TYPE: Field = Field::new(5, "type");
const FIELDS: usize = 5;

/// Line parser for MQSim ASCII (stateless).
#[derive(Clone, Debug, Default)]
pub struct MqSimParser;

/// A streaming MQSim ASCII reader.
pub type MqSimReader<R> = Reader<R, MqSimParser>;

impl LineParser for MqSimParser {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        let all = Fields::new(line);
        let mut f = all.clone();
        let arrival = ARRIVAL.u64(next_field(&mut f, &all, FIELDS)?)?;
        let device = DEVICE.u32(next_field(&mut f, &all, FIELDS)?)?;
        let lba = LBA.u64(next_field(&mut f, &all, FIELDS)?)?;
        let sectors = SECTORS.u64(next_field(&mut f, &all, FIELDS)?)?;
        let op = match next_field(&mut f, &all, FIELDS)? {
            b"1" => Op::Read,
            b"0" => Op::Write,
            other => return Err(TYPE.bad("1 (read) or 0 (write)", other)),
        };
        record_sectors(arrival, device, lba, sectors, op, SECTORS).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    #[test]
    fn parses_integer_nanoseconds_and_type_codes() {
        let r = MqSimParser
            .parse_line(b"938944000 13 93230992 32 0")
            .expect("valid")
            .expect("record");
        assert_eq!(
            r,
            TraceRecord {
                arrival: Nanos(938_944_000),
                device: 13,
                lba: 93_230_992,
                sectors: 32,
                op: Op::Write
            }
        );
        let r = MqSimParser
            .parse_line(b"11413000 0 657728 16 1")
            .expect("valid")
            .expect("record");
        assert_eq!(r.op, Op::Read);
    }

    #[test]
    fn rejects_decimal_times_and_unknown_types() {
        let e = MqSimParser
            .parse_line(b"1.5 0 0 8 1")
            .expect_err("decimal time");
        assert_eq!(
            e.to_string(),
            r#"field 1 (arrival): expected a non-negative integer, got "1.5""#
        );
        let e = MqSimParser.parse_line(b"1 0 0 8 2").expect_err("type 2");
        assert_eq!(
            e.to_string(),
            r#"field 5 (type): expected 1 (read) or 0 (write), got "2""#
        );
    }
}
