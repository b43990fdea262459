//! fio I/O logs (`read_iolog` / `write_iolog`), versions 2 and 3.
//!
//! Both start with a header line, `fio version 2 iolog` or `fio version 3 iolog`. Then:
//!
//! * v2: `filename add|open|close` and `filename read|write|sync|datasync|trim offset length`;
//!   `filename wait usec [0]` advances the clock by `usec` µs (fio: "relative to the previous
//!   wait"). A request arrives at the sum of the waits before it.
//! * v3 (fio ≥ 3.31): every line starts with a timestamp in µs from the start of the run
//!   (`utime_since_now` in fio 3.33's `iolog.c`), then the v2 fields; `wait` is not allowed and,
//!   as in fio, is ignored.
//!
//! Offsets and lengths are bytes (start rounded down, end rounded up to 512-byte sectors).
//! Devices are numbered 0, 1, 2, … in the order files are first `add`ed; an I/O on a file that
//! was never added is an error (fio requires the `add`). `sync`, `datasync` and `trim` carry no
//! data transfer in this model and are skipped. Filenames cannot contain whitespace (fio reads
//! them with `%s`).

use std::collections::BTreeMap;

use super::parse::{excerpt, record_bytes, Field, Fields};
use super::{LineParser, Reader, TraceErrorKind, TraceRecord};
use crate::Op;

/// The first line of a version-2 log.
pub const FIO2_HEADER: &str = "fio version 2 iolog";
/// The first line of a version-3 log.
pub const FIO3_HEADER: &str = "fio version 3 iolog";

/// Line parser for fio iologs; holds the file table and, for v2, the wait clock.
#[derive(Clone, Debug)]
pub struct FioParser {
    version: u8,
    header_seen: bool,
    files: BTreeMap<Box<[u8]>, u32>,
    clock_ns: u64,
}

/// A streaming fio iolog reader (either version; see [`FioParser::v2`] and [`FioParser::v3`]).
pub type FioReader<R> = Reader<R, FioParser>;

impl FioParser {
    pub fn v2() -> Self {
        FioParser {
            version: 2,
            header_seen: false,
            files: BTreeMap::new(),
            clock_ns: 0,
        }
    }

    pub fn v3() -> Self {
        FioParser {
            version: 3,
            ..FioParser::v2()
        }
    }

    /// The file names seen so far, by device number.
    pub fn files(&self) -> Vec<(u32, String)> {
        let mut v: Vec<(u32, String)> = self
            .files
            .iter()
            .map(|(k, &d)| (d, String::from_utf8_lossy(k).into_owned()))
            .collect();
        v.sort_unstable();
        v
    }

    fn file_action(
        &mut self,
        name: &[u8],
        action: &[u8],
        index: usize,
    ) -> Result<(), TraceErrorKind> {
        match action {
            b"add" => {
                if !self.files.contains_key(name) {
                    let Ok(device) = u32::try_from(self.files.len()) else {
                        return Err(TraceErrorKind::OutOfRange {
                            index,
                            name: "filename",
                            got: excerpt(name),
                        });
                    };
                    self.files.insert(name.into(), device);
                }
                Ok(())
            }
            b"open" | b"close" => Ok(()),
            other => Err(Field::new(index, "action").bad("add, open or close", other)),
        }
    }

    fn io_action(
        &mut self,
        arrival_ns: u64,
        fields: [&[u8]; 4],
        first_index: usize,
    ) -> Result<Option<TraceRecord>, TraceErrorKind> {
        let [name, action, offset, length] = fields;
        let action_field = Field::new(first_index + 1, "action");
        let offset_field = Field::new(first_index + 2, "offset");
        let length_field = Field::new(first_index + 3, "length");
        let op = match action {
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"sync" | b"datasync" | b"trim" => return Ok(None),
            other => {
                return Err(action_field.bad("read, write, sync, datasync, trim or wait", other))
            }
        };
        let offset = offset_field.u64(offset)?;
        let length = length_field.u64(length)?;
        let Some(&device) = self.files.get(name) else {
            return Err(TraceErrorKind::UnknownFile {
                name: excerpt(name),
            });
        };
        record_bytes(arrival_ns, device, offset, length, op, length_field).map(Some)
    }

    fn parse_v2(&mut self, f: &[&[u8]]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        match *f {
            [name, action] => self.file_action(name, action, 2).map(|()| None),
            [_, b"wait", usec] | [_, b"wait", usec, _] => {
                let usec = Field::new(3, "wait").u64(usec)?;
                let add = usec.checked_mul(1000);
                self.clock_ns = add
                    .and_then(|ns| self.clock_ns.checked_add(ns))
                    .ok_or_else(|| TraceErrorKind::OutOfRange {
                        index: 3,
                        name: "wait",
                        got: usec.to_string(),
                    })?;
                Ok(None)
            }
            [name, action, offset, length] => {
                self.io_action(self.clock_ns, [name, action, offset, length], 1)
            }
            _ => Err(TraceErrorKind::FieldCount {
                expected: "2 or 4",
                got: f.len(),
            }),
        }
    }

    fn parse_v3(&mut self, f: &[&[u8]]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        let timestamp = Field::new(1, "timestamp");
        match *f {
            [ts, _, b"wait", ..] => {
                timestamp.u64(ts)?;
                Ok(None)
            }
            [ts, name, action] => {
                timestamp.u64(ts)?;
                self.file_action(name, action, 3).map(|()| None)
            }
            [ts, name, action, offset, length] => {
                let us = timestamp.u64(ts)?;
                let ns = us
                    .checked_mul(1000)
                    .ok_or_else(|| TraceErrorKind::OutOfRange {
                        index: 1,
                        name: "timestamp",
                        got: us.to_string(),
                    })?;
                self.io_action(ns, [name, action, offset, length], 2)
            }
            _ => Err(TraceErrorKind::FieldCount {
                expected: "3 or 5",
                got: f.len(),
            }),
        }
    }
}

impl LineParser for FioParser {
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        if !self.header_seen {
            let expected = if self.version == 2 {
                FIO2_HEADER
            } else {
                FIO3_HEADER
            };
            if super::parse::trim(line) != expected.as_bytes() {
                return Err(TraceErrorKind::Header {
                    expected,
                    got: excerpt(line),
                });
            }
            self.header_seen = true;
            return Ok(None);
        }
        let mut buf: [&[u8]; 6] = [&[]; 6];
        let mut n = 0;
        for field in Fields::new(line) {
            if n == buf.len() {
                return Err(TraceErrorKind::FieldCount {
                    expected: if self.version == 2 {
                        "2 or 4"
                    } else {
                        "3 or 5"
                    },
                    got: Fields::new(line).count(),
                });
            }
            buf[n] = field;
            n += 1;
        }
        if self.version == 2 {
            self.parse_v2(&buf[..n])
        } else {
            self.parse_v3(&buf[..n])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;

    fn read_all(mut p: FioParser, text: &str) -> Result<Vec<TraceRecord>, (usize, TraceErrorKind)> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(r) = p.parse_line(line.as_bytes()).map_err(|e| (i + 1, e))? {
                out.push(r);
            }
        }
        Ok(out)
    }

    const V2: &str = "fio version 2 iolog
/dev/sdb add
/dev/sdc add
/dev/sdb open
/dev/sdb read 0 4096
/dev/sdb wait 1500 0
/dev/sdc write 1000 30
/dev/sdb sync 0 0
/dev/sdb trim 0 4096
/dev/sdb wait 500
/dev/sdb read 4096 8192
/dev/sdb close";

    #[test]
    fn v2_waits_accumulate_microseconds() {
        let recs = read_all(FioParser::v2(), V2).expect("valid log");
        assert_eq!(
            recs,
            vec![
                TraceRecord {
                    arrival: Nanos(0),
                    device: 0,
                    lba: 0,
                    sectors: 8,
                    op: Op::Read
                },
                TraceRecord {
                    arrival: Nanos(1_500_000),
                    device: 1,
                    lba: 1,
                    sectors: 2,
                    op: Op::Write
                },
                TraceRecord {
                    arrival: Nanos(2_000_000),
                    device: 0,
                    lba: 8,
                    sectors: 16,
                    op: Op::Read
                },
            ]
        );
    }

    const V3: &str = "fio version 3 iolog
2 Nvme1n1 add
872 Nvme1n1 open
878 Nvme1n1 write 0 16384
888 Nvme1n1 read 16384 16384
900 Nvme1n1 wait 100 0
891 Nvme1n1 write 512 512
10001677 Nvme1n1 close";

    #[test]
    fn v3_timestamps_are_microseconds() {
        let mut p = FioParser::v3();
        let recs = read_all(p.clone(), V3).expect("valid log");
        assert_eq!(
            recs,
            vec![
                TraceRecord {
                    arrival: Nanos(878_000),
                    device: 0,
                    lba: 0,
                    sectors: 32,
                    op: Op::Write
                },
                TraceRecord {
                    arrival: Nanos(888_000),
                    device: 0,
                    lba: 32,
                    sectors: 32,
                    op: Op::Read
                },
                TraceRecord {
                    arrival: Nanos(891_000),
                    device: 0,
                    lba: 1,
                    sectors: 1,
                    op: Op::Write
                },
            ]
        );
        for line in V3.lines() {
            let _ = p.parse_line(line.as_bytes());
        }
        assert_eq!(p.files(), vec![(0, "Nvme1n1".to_string())]);
    }

    #[test]
    fn errors() {
        let (line, e) = read_all(FioParser::v3(), V2).expect_err("v2 text is not v3");
        assert_eq!(line, 1);
        assert_eq!(
            e.to_string(),
            r#"expected the header "fio version 3 iolog", got "fio version 2 iolog""#
        );
        let (line, e) = read_all(FioParser::v2(), "fio version 2 iolog\n/dev/x read 0 512")
            .expect_err("not added");
        assert_eq!(
            (line, e.to_string()),
            (
                2,
                r#"file "/dev/x" was not added (no `add` line before it)"#.to_string()
            )
        );
        let (_, e) = read_all(FioParser::v2(), "fio version 2 iolog\nf add\nf frob 0 512")
            .expect_err("action");
        assert!(e.to_string().starts_with("field 2 (action)"), "{e}");
        let (_, e) = read_all(FioParser::v3(), "fio version 3 iolog\n1 f add\n2 f read 0")
            .expect_err("fields");
        assert_eq!(e.to_string(), "expected 3 or 5 fields, got 4");
        let (_, e) = read_all(
            FioParser::v3(),
            "fio version 3 iolog\n1 f add\nx f read 0 512",
        )
        .expect_err("ts");
        assert!(e.to_string().starts_with("field 1 (timestamp)"), "{e}");
        let (_, e) =
            read_all(FioParser::v2(), "fio version 2 iolog\nf add\nf read 0 0").expect_err("zero");
        assert_eq!(e.to_string(), "field 4 (length): zero-size request");
    }
}
