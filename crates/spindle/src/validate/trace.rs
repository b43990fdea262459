//! The DiskSim *validate* trace format: a streaming reader with line-numbered errors.
//!
//! One request per line, six whitespace-separated fields:
//! `R|W  Hit|Miss|Doub|Trip  lbn  nsectors  measured_service_us  think_us`. Field 5 is the
//! real drive's measured service time; field 6 the host's idle gap between this request's
//! completion and the next request's issue. Blank lines and `#` comments are skipped.
//! Addresses are in 512-byte blocks; times are decimal microseconds (kept as `f64`, as
//! DiskSim reads them, because DiskSim's histogram bins the measured time from that double).
//!
//! The reader holds one line at a time; it never loads the trace.

use crate::sim::ReplayRequest;
use crate::{Op, Span};
use std::io::{self, BufRead, Read};

/// The longest line the reader accepts, in bytes (a guard against binary input).
pub const LINE_MAX_BYTES: usize = 4096;

/// The largest time a field may hold, in µs (about 11.6 days): keeps sums and the
/// conversion to nanoseconds far from overflow.
pub const TIME_MAX_US: f64 = 1e12;

/// How the real drive's buffer served the request (field 2). DiskSim only records it; it is
/// meaningful only for the HP C2247A trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BufferOutcome {
    Hit,
    Miss,
    /// Written in two pieces.
    Doub,
    /// Written in three pieces.
    Trip,
}

/// One request of a validate trace.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ValidateRecord {
    pub op: Op,
    pub buffer: BufferOutcome,
    /// First 512-byte block.
    pub lbn: u64,
    /// Size in 512-byte blocks (> 0).
    pub sectors: u32,
    /// The real drive's service time, µs (finite, 0 ..= [`TIME_MAX_US`]).
    pub measured_us: f64,
    /// Idle time after this request completes before the next is issued, µs (same range).
    pub think_us: f64,
}

impl ValidateRecord {
    /// The measured service time in ms, computed as DiskSim does (`servtime / 1000`).
    pub fn measured_ms(&self) -> f64 {
        self.measured_us / 1000.0
    }

    /// The think time rounded to the nanosecond.
    pub fn think(&self) -> Span {
        Span((self.think_us * 1000.0).round() as u64)
    }

    /// The request in sectors of a drive with `sector_bytes`-byte sectors (a multiple of
    /// 512): the start is floored and the end rounded up, as trace replay does.
    pub fn replay_request(&self, sector_bytes: u32) -> ReplayRequest {
        assert!(
            sector_bytes >= 512 && sector_bytes.is_multiple_of(512),
            "sector size {sector_bytes} is not a multiple of 512"
        );
        let scale = u64::from(sector_bytes / 512);
        let start = self.lbn / scale;
        let end = (self.lbn + u64::from(self.sectors)).div_ceil(scale);
        assert!(end > start, "a record has at least one block");
        ReplayRequest {
            op: self.op,
            lba: start,
            sectors: u32::try_from(end - start).expect("fewer sectors than blocks"),
            think: self.think(),
        }
    }
}

/// A bad validate-trace line: its 1-based number and what was wrong.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ValidateTraceError {
    pub line: u64,
    pub kind: ValidateTraceErrorKind,
}

/// What was wrong with a validate-trace line. Messages are lowercase without a period.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValidateTraceErrorKind {
    #[error("expected 6 fields (R|W, Hit|Miss|Doub|Trip, lbn, nsectors, measured_service_us, think_us), got {got}")]
    FieldCount { got: usize },
    #[error("field {index} ({name}): expected {expected}, got {got:?}")]
    BadField {
        index: usize,
        name: &'static str,
        expected: &'static str,
        got: String,
    },
    #[error("field 4 (nsectors): zero-size request")]
    ZeroSize,
    #[error("blocks {lbn}+{sectors} run past the end of a 64-bit address space")]
    AddressOverflow { lbn: u64, sectors: u32 },
    #[error("line is longer than {max} bytes (is this a binary file?)")]
    LineTooLong { max: usize },
    #[error("read error: {0}")]
    Io(io::Error),
}

const NAMES: [&str; 6] = [
    "op",
    "buffer",
    "lbn",
    "nsectors",
    "measured_service_us",
    "think_us",
];

/// Parses one non-blank line.
pub fn parse_line(line: &str) -> Result<ValidateRecord, ValidateTraceErrorKind> {
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    if fields.len() != 6 {
        return Err(ValidateTraceErrorKind::FieldCount { got: fields.len() });
    }
    let bad = |i: usize, expected: &'static str| ValidateTraceErrorKind::BadField {
        index: i + 1,
        name: NAMES[i],
        expected,
        got: fields[i].to_string(),
    };
    let op = match fields[0] {
        "R" | "r" => Op::Read,
        "W" | "w" => Op::Write,
        _ => return Err(bad(0, "'R' or 'W'")),
    };
    let buffer = match fields[1].to_ascii_lowercase().as_str() {
        "hit" => BufferOutcome::Hit,
        "miss" => BufferOutcome::Miss,
        "doub" => BufferOutcome::Doub,
        "trip" => BufferOutcome::Trip,
        _ => return Err(bad(1, "Hit, Miss, Doub or Trip")),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let lbn = fields[2]
        .parse::<u64>()
        .ok()
        .filter(|_| digits(fields[2]))
        .ok_or_else(|| bad(2, "a block number (unsigned 64-bit integer)"))?;
    let sectors = fields[3]
        .parse::<u32>()
        .ok()
        .filter(|_| digits(fields[3]))
        .ok_or_else(|| bad(3, "a block count (unsigned 32-bit integer)"))?;
    if sectors == 0 {
        return Err(ValidateTraceErrorKind::ZeroSize);
    }
    if lbn.checked_add(u64::from(sectors)).is_none() {
        return Err(ValidateTraceErrorKind::AddressOverflow { lbn, sectors });
    }
    let time = |i: usize| -> Result<f64, ValidateTraceErrorKind> {
        let plain = fields[i]
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
        match fields[i].parse::<f64>() {
            Ok(v) if plain && v.is_finite() && (0.0..=TIME_MAX_US).contains(&v) => Ok(v),
            _ => Err(bad(i, "a time in µs within 0..=1e12")),
        }
    };
    let measured_us = time(4)?;
    let think_us = time(5)?;
    Ok(ValidateRecord {
        op,
        buffer,
        lbn,
        sectors,
        measured_us,
        think_us,
    })
}

/// A streaming validate-trace reader over any `BufRead`: one reused line buffer.
///
/// Yields `Err` for a bad line and carries on with the next line on the next call; after a
/// read error or an over-long line it ends.
pub struct ValidateReader<R> {
    input: R,
    buf: Vec<u8>,
    line: u64,
    ended: bool,
}

impl<R: BufRead> ValidateReader<R> {
    pub fn new(input: R) -> Self {
        ValidateReader {
            input,
            buf: Vec::with_capacity(128),
            line: 0,
            ended: false,
        }
    }

    /// Lines read so far (the line of the last record or error).
    pub fn line(&self) -> u64 {
        self.line
    }
}

impl<R: BufRead> Iterator for ValidateReader<R> {
    type Item = Result<ValidateRecord, ValidateTraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.ended {
            self.buf.clear();
            let limit = LINE_MAX_BYTES as u64 + 1;
            let read = (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.buf);
            let n = match read {
                Ok(n) => n,
                Err(e) => {
                    self.ended = true;
                    let kind = ValidateTraceErrorKind::Io(e);
                    return Some(Err(ValidateTraceError {
                        line: self.line + 1,
                        kind,
                    }));
                }
            };
            if n == 0 {
                self.ended = true;
                break;
            }
            self.line += 1;
            let err = |kind| {
                Some(Err(ValidateTraceError {
                    line: self.line,
                    kind,
                }))
            };
            if self.buf.len() > LINE_MAX_BYTES {
                self.ended = true;
                return err(ValidateTraceErrorKind::LineTooLong {
                    max: LINE_MAX_BYTES,
                });
            }
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                return err(ValidateTraceErrorKind::BadField {
                    index: 1,
                    name: NAMES[0],
                    expected: "ASCII text",
                    got: String::from_utf8_lossy(&self.buf).trim().to_string(),
                });
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            return Some(parse_line(text).map_err(|kind| ValidateTraceError {
                line: self.line,
                kind,
            }));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<Result<ValidateRecord, ValidateTraceError>> {
        ValidateReader::new(text.as_bytes()).collect()
    }

    #[test]
    fn reads_disksim_and_hp_style_lines() {
        let text = "R Hit    1975456   4  15362.00000  56074.00000\n\
                    \n# a comment\n\
                    W Trip 1205090    13     10133.390     19712.710\r\n";
        let got: Vec<_> = read(text).into_iter().map(Result::unwrap).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].op, Op::Read);
        assert_eq!(got[0].lbn, 1_975_456);
        assert_eq!(got[0].sectors, 4);
        assert_eq!(got[0].measured_us, 15362.0);
        assert_eq!(got[0].think(), Span(56_074_000));
        assert_eq!(got[1].buffer, BufferOutcome::Trip);
        assert_eq!(got[1].think(), Span(19_712_710));
    }

    #[test]
    fn bad_lines_name_their_line_and_field() {
        let text = "R Hit 1 4 100.0 200.0\nX Hit 1 4 100.0 200.0\nR Hit 1 0 1 1\n\
                    R Hit 1 4 100.0\nR Hit -1 4 1 1\nR Hit 1 4 1 nan\nR Hot 1 4 1 1\n";
        let errs: Vec<String> = read(text)
            .into_iter()
            .filter_map(|r| r.err().map(|e| e.to_string()))
            .collect();
        assert_eq!(
            errs,
            [
                "line 2: field 1 (op): expected 'R' or 'W', got \"X\"",
                "line 3: field 4 (nsectors): zero-size request",
                "line 4: expected 6 fields (R|W, Hit|Miss|Doub|Trip, lbn, nsectors, measured_service_us, think_us), got 5",
                "line 5: field 3 (lbn): expected a block number (unsigned 64-bit integer), got \"-1\"",
                "line 6: field 6 (think_us): expected a time in µs within 0..=1e12, got \"nan\"",
                "line 7: field 2 (buffer): expected Hit, Miss, Doub or Trip, got \"Hot\"",
            ]
        );
    }

    #[test]
    fn an_overlong_line_ends_the_stream() {
        let text = format!("R Hit 1 4 1 1\n{}\nR Hit 1 4 1 1\n", "9".repeat(5000));
        let got = read(&text);
        assert_eq!(got.len(), 2);
        assert!(got[1]
            .as_ref()
            .unwrap_err()
            .to_string()
            .starts_with("line 2: line is longer"));
    }

    #[test]
    fn blocks_map_onto_larger_sectors() {
        let r = parse_line("W Hit 7 2 1 0.0004").unwrap();
        let q = r.replay_request(4096);
        assert_eq!((q.lba, q.sectors), (0, 2));
        assert_eq!(q.think, Span(0));
        let q = r.replay_request(512);
        assert_eq!((q.lba, q.sectors), (7, 2));
    }
}
