//! Block-trace readers, writers, statistics and transforms.
//!
//! Readers stream: they take any `BufRead`, hold one line at a time and yield
//! [`TraceRecord`]s; a malformed line is a [`TraceError`] naming its line number.
//! Addresses and sizes are in 512-byte sectors whatever the format's own unit.
//!
//! # Brief overview
//! * Reading: [`open`] (a known [`TraceFormat`]) or [`detect_and_open`] (format from content)
//!   give a [`TraceReader`], an `Iterator<Item = Result<TraceRecord, TraceError>>`. Each format
//!   also has its own generic reader type ([`DiskSimReader`], [`MqSimReader`], …), all of them
//!   [`Reader`] over a format's [`LineParser`]. Compressed input: wrap it with [`decompress`].
//! * Transforms ([`transform`]): speed-up, time window, device filter and concatenation of
//!   devices into one logical data set, as iterator adapters ([`TraceIterExt`]).
//! * Statistics ([`stats`]): one streaming pass, a serde struct.
//! * Writing ([`writer`]): DiskSim, MQSim, SPC, MSR and fio v3.
//!
//! ```
//! use spindle::workload::trace::{self, TraceFormat, TraceIterExt, SpeedUp};
//! let text = "0.0 1 100 8 1\n2.0 0 0 16 0\n4.0 1 108 8 1\n";
//! // Pass 1: each device's extent; pass 2: concatenate devices and replay twice as fast.
//! let extents = trace::device_extents(trace::open(TraceFormat::DiskSim, text.as_bytes()))?;
//! let layout = extents.concat_layout();
//! let replay: Vec<_> = trace::open(TraceFormat::DiskSim, text.as_bytes())
//!     .concat(layout)
//!     .speed_up("2".parse::<SpeedUp>()?)
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(replay[1].arrival.0, 1_000_000); // 2 ms / 2
//! assert_eq!(replay[0].lba, 16 + 100); // device 1 follows device 0's 16 sectors
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Invariants
//! Arrival times are integer nanoseconds, exact to the unit of the format (decimal times are
//! converted without floating point). A record always has `sectors > 0` and
//! `lba + sectors <= u64::MAX`. Readers accept records that go back in time (several public
//! traces are not sorted); the replay transform ([`TraceIterExt::speed_up`]) rejects them.
//!
//! The core does no I/O: the caller opens files and hands over a `BufRead`.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::str::FromStr;

use crate::{Nanos, Op};

pub mod blkparse;
pub mod characterise;
pub mod cloud;
pub mod detect;
pub mod disksim;
pub mod fio;
pub mod mqsim;
pub mod msr;
mod parse;
pub mod spc;
pub mod stats;
pub mod transform;
pub mod writer;

pub use blkparse::{BlkparseParser, BlkparseReader};
pub use cloud::{SystorParser, SystorReader, TencentParser, TencentReader};
pub use detect::{detect, detect_and_open, DetectError, DetectedReader, DETECT_LINES_MAX};
pub use disksim::{DiskSimParser, DiskSimReader};
pub use fio::{FioParser, FioReader};
pub use mqsim::{MqSimParser, MqSimReader};
pub use msr::{MsrParser, MsrReader};
pub use parse::LINE_MAX_BYTES;
pub use spc::{SpcParser, SpcReader};
pub use stats::{StatsBuilder, TraceStats};
pub use transform::{
    device_extents, ConcatLayout, DeviceExtents, DeviceSet, SpeedUp, TraceIterExt,
};
pub use writer::TraceWriter;

/// One traced host request, normalised: arrival time, device, 512-byte sector address and count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub arrival: Nanos,
    pub device: u32,
    pub lba: u64,
    pub sectors: u32,
    pub op: Op,
}

/// A bad trace: the 1-based line it was found on and what was wrong.
///
/// `line` is 0 for errors found by a transform rather than a reader (those name the record
/// instead); the message then has no `line N:` prefix.
#[derive(Debug)]
pub struct TraceError {
    pub line: u64,
    pub kind: TraceErrorKind,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "line {}: {}", self.line, self.kind)
        }
    }
}

impl std::error::Error for TraceError {}

impl TraceError {
    /// An error found by a transform, not tied to an input line.
    pub fn unlined(kind: TraceErrorKind) -> Self {
        TraceError { line: 0, kind }
    }
}

/// What was wrong with a trace line or record. Messages are lowercase without a period.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceErrorKind {
    #[error("expected at least {expected} fields, got {got}")]
    MissingFields { expected: usize, got: usize },
    #[error("expected {expected} fields, got {got}")]
    FieldCount { expected: &'static str, got: usize },
    #[error("field {index} ({name}): expected {expected}, got {got:?}")]
    BadField {
        index: usize,
        name: &'static str,
        expected: &'static str,
        got: String,
    },
    #[error("field {index} ({name}): {got} is out of range")]
    OutOfRange {
        index: usize,
        name: &'static str,
        got: String,
    },
    #[error("field {index} ({name}): zero-size request")]
    ZeroSize { index: usize, name: &'static str },
    #[error("request of {sectors} sectors is too large (at most 4294967295)")]
    TooLarge { sectors: u64 },
    #[error(
        "request at lba {lba} of {sectors} sectors runs past the end of a 64-bit address space"
    )]
    AddressOverflow { lba: u64, sectors: u64 },
    #[error("line is longer than {max} bytes (is this a binary file?)")]
    LineTooLong { max: usize },
    #[error("expected the header {expected:?}, got {got:?}")]
    Header { expected: &'static str, got: String },
    #[error("file {name:?} was not added (no `add` line before it)")]
    UnknownFile { name: String },
    #[error("timestamp {ticks} is earlier than the first record's {first_ticks}: MSR arrivals are relative to the first record, so the trace must not start later than it")]
    BeforeFirst { ticks: u64, first_ticks: u64 },
    #[error("record {record}: arrival {got_ns} ns is earlier than the previous record's {prev_ns} ns; the trace is not sorted by time (sort it first: `spindle trace convert --sort`)")]
    OutOfOrder {
        record: u64,
        prev_ns: u64,
        got_ns: u64,
    },
    #[error("record {record}: device {device} is not in the concatenation layout (was the trace changed between the two passes?)")]
    UnknownDevice { record: u64, device: u32 },
    #[error("record {record}: sectors {lba}..{end} of device {device} lie beyond its extent of {extent} sectors (was the trace changed between the two passes?)")]
    BeyondExtent {
        record: u64,
        device: u32,
        lba: u64,
        end: u64,
        extent: u64,
    },
    #[error("record {record}: address {lba} + base {base} overflows 64 bits")]
    ConcatOverflow { record: u64, lba: u64, base: u64 },
    #[error("read error: {0}")]
    Io(io::Error),
}

/// One trace format's line parser: turns one line into at most one record.
///
/// Lines reach the parser without their end-of-line bytes; blank lines and lines whose first
/// non-blank byte is `#` never reach it. A parser may keep state (a header, a file table, the
/// first timestamp), so it sees lines in order.
pub trait LineParser {
    /// `Ok(None)` for a line that holds no request (a header, a file action, a skipped event).
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind>;
}

/// A streaming trace reader: one reused line buffer over a `BufRead`, one [`LineParser`].
///
/// Yields `Err` for a bad line and carries on with the next line on the next call; after a read
/// error or an over-long line it ends.
pub struct Reader<R, P> {
    input: R,
    parser: P,
    buf: Vec<u8>,
    line: u64,
    ended: bool,
}

impl<R, P: Default> Reader<R, P> {
    /// A reader with the format's default parser.
    pub fn new(input: R) -> Self {
        Reader::with_parser(input, P::default())
    }
}

impl<R, P> Reader<R, P> {
    pub fn with_parser(input: R, parser: P) -> Self {
        Reader {
            input,
            parser,
            buf: Vec::with_capacity(256),
            line: 0,
            ended: false,
        }
    }

    /// The number of lines read so far (the line of the last record or error).
    pub fn line(&self) -> u64 {
        self.line
    }

    pub fn parser(&self) -> &P {
        &self.parser
    }

    pub fn into_inner(self) -> R {
        self.input
    }
}

impl<R: BufRead, P: LineParser> Iterator for Reader<R, P> {
    type Item = Result<TraceRecord, TraceError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        while !self.ended {
            // The common case: the whole line is in the input's buffer, parsed where it lies.
            if let Ok(avail) = self.input.fill_buf() {
                let within = &avail[..avail.len().min(LINE_MAX_BYTES)];
                if let Some(n) = memchr::memchr(b'\n', within) {
                    self.line += 1;
                    let parsed = parse_raw_line(&mut self.parser, &within[..n]);
                    self.input.consume(n + 1);
                    match parsed {
                        Some(r) => return Some(self.located(r)),
                        None => continue,
                    }
                }
            }
            self.buf.clear();
            let limit = LINE_MAX_BYTES as u64 + 1;
            let read = (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.buf);
            match read {
                Ok(0) => self.ended = true,
                Ok(_) => {
                    self.line += 1;
                    if self.buf.len() > LINE_MAX_BYTES {
                        self.ended = true;
                        let kind = TraceErrorKind::LineTooLong {
                            max: LINE_MAX_BYTES,
                        };
                        return Some(Err(TraceError {
                            line: self.line,
                            kind,
                        }));
                    }
                    if let Some(r) = parse_raw_line(&mut self.parser, &self.buf) {
                        return Some(self.located(r));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.ended = true;
                    return Some(Err(TraceError {
                        line: self.line + 1,
                        kind: TraceErrorKind::Io(e),
                    }));
                }
            }
        }
        None
    }
}

impl<R, P> Reader<R, P> {
    /// A parsed line's result, an error naming the line.
    fn located(&self, r: Result<TraceRecord, TraceErrorKind>) -> Result<TraceRecord, TraceError> {
        r.map_err(|kind| TraceError {
            line: self.line,
            kind,
        })
    }
}

/// One line as read (with or without its line ending): `None` for a line without a record
/// (blank, a comment, or one the parser skips).
#[inline]
fn parse_raw_line<P: LineParser>(
    parser: &mut P,
    mut line: &[u8],
) -> Option<Result<TraceRecord, TraceErrorKind>> {
    if let [rest @ .., b'\n'] = line {
        line = rest;
    }
    if let [rest @ .., b'\r'] = line {
        line = rest;
    }
    if parse::is_blank_or_comment(line) {
        return None;
    }
    parser.parse_line(line).transpose()
}

/// The trace formats spindle reads (and, for some, writes).
#[derive(
    Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// DiskSim ASCII: `arrival_ms devno lbn nsectors flags_hex`.
    DiskSim,
    /// MQSim ASCII: `arrival_ns devno lba nsectors type` (1 = read).
    MqSim,
    /// SPC / UMass: `asu,lba,size_bytes,r|w,seconds`.
    Spc,
    /// MSR Cambridge CSV: `filetime,host,disk,Read|Write,offset,size,response`.
    Msr,
    /// Linux `blkparse` default text (`D` events).
    Blkparse,
    /// fio iolog version 2.
    Fio2,
    /// fio iolog version 3.
    Fio3,
    /// Tencent CBS CSV: `ts_s,offset_sectors,size_sectors,0|1,volume`.
    Tencent,
    /// SYSTOR'17 CSV: `Timestamp,Response,IOType,LUN,Offset,Size`.
    Systor,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 9] = [
        TraceFormat::DiskSim,
        TraceFormat::MqSim,
        TraceFormat::Spc,
        TraceFormat::Msr,
        TraceFormat::Blkparse,
        TraceFormat::Fio2,
        TraceFormat::Fio3,
        TraceFormat::Tencent,
        TraceFormat::Systor,
    ];

    /// The name used on the command line and in `Display`/`FromStr`.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::DiskSim => "disksim",
            TraceFormat::MqSim => "mqsim",
            TraceFormat::Spc => "spc",
            TraceFormat::Msr => "msr",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Fio2 => "fio2",
            TraceFormat::Fio3 => "fio3",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Systor => "systor",
        }
    }

    /// A one-line description of the record layout.
    pub fn description(self) -> &'static str {
        match self {
            TraceFormat::DiskSim => {
                "DiskSim ASCII: arrival_ms devno lbn nsectors flags_hex (bit 0 = read)"
            }
            TraceFormat::MqSim => {
                "MQSim ASCII: arrival_ns devno lba nsectors type (1 = read, 0 = write)"
            }
            TraceFormat::Spc => "SPC/UMass: asu,lba,size_bytes,r|w,seconds",
            TraceFormat::Msr => {
                "MSR Cambridge: filetime,host,disk,Read|Write,offset_bytes,size_bytes,response"
            }
            TraceFormat::Blkparse => {
                "blkparse text: maj,min cpu seq sec.nsec pid D RWBS sector + n [proc]"
            }
            TraceFormat::Fio2 => "fio iolog v2: filename read|write offset length, wait usec",
            TraceFormat::Fio3 => "fio iolog v3: usec filename read|write offset length",
            TraceFormat::Tencent => {
                "Tencent CBS: ts_s,offset_sectors,size_sectors,0|1 (1 = write),volume"
            }
            TraceFormat::Systor => "SYSTOR'17: ts_s,response_s,R|W,lun,offset_bytes,size_bytes",
        }
    }

    /// True if [`TraceWriter`] can write this format.
    pub fn is_writable(self) -> bool {
        matches!(
            self,
            TraceFormat::DiskSim
                | TraceFormat::MqSim
                | TraceFormat::Spc
                | TraceFormat::Msr
                | TraceFormat::Fio3
        )
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown format name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown trace format {got:?} (expected one of {})", format_names())]
pub struct ParseFormatError {
    pub got: String,
}

fn format_names() -> String {
    TraceFormat::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for TraceFormat {
    type Err = ParseFormatError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        if matches!(lower.as_str(), "dsascii" | "ascii") {
            return Ok(TraceFormat::DiskSim);
        }
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name() == lower)
            .ok_or_else(|| ParseFormatError { got: s.to_string() })
    }
}

/// Any format's parser, chosen at run time (see [`open`]).
#[derive(Clone, Debug)]
pub enum AnyParser {
    DiskSim(DiskSimParser),
    MqSim(MqSimParser),
    Spc(SpcParser),
    Msr(MsrParser),
    Blkparse(BlkparseParser),
    Fio(FioParser),
    Tencent(TencentParser),
    Systor(SystorParser),
}

impl AnyParser {
    pub fn new(format: TraceFormat) -> Self {
        match format {
            TraceFormat::DiskSim => AnyParser::DiskSim(DiskSimParser),
            TraceFormat::MqSim => AnyParser::MqSim(MqSimParser),
            TraceFormat::Spc => AnyParser::Spc(SpcParser),
            TraceFormat::Msr => AnyParser::Msr(MsrParser::default()),
            TraceFormat::Blkparse => AnyParser::Blkparse(BlkparseParser),
            TraceFormat::Fio2 => AnyParser::Fio(FioParser::v2()),
            TraceFormat::Fio3 => AnyParser::Fio(FioParser::v3()),
            TraceFormat::Tencent => AnyParser::Tencent(TencentParser),
            TraceFormat::Systor => AnyParser::Systor(SystorParser::default()),
        }
    }
}

impl LineParser for AnyParser {
    #[inline]
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, TraceErrorKind> {
        match self {
            AnyParser::DiskSim(p) => p.parse_line(line),
            AnyParser::MqSim(p) => p.parse_line(line),
            AnyParser::Spc(p) => p.parse_line(line),
            AnyParser::Msr(p) => p.parse_line(line),
            AnyParser::Blkparse(p) => p.parse_line(line),
            AnyParser::Fio(p) => p.parse_line(line),
            AnyParser::Tencent(p) => p.parse_line(line),
            AnyParser::Systor(p) => p.parse_line(line),
        }
    }
}

/// A reader for any format, chosen at run time.
pub type TraceReader<R> = Reader<R, AnyParser>;

/// Opens a streaming reader for `format` over `input`.
pub fn open<R: BufRead>(format: TraceFormat, input: R) -> TraceReader<R> {
    Reader::with_parser(input, AnyParser::new(format))
}

/// A compression wrapper recognised by [`decompress`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
}

impl Compression {
    /// The compression of a stream starting with `prefix` (gzip `1f 8b`, bzip2 `BZh`).
    pub fn sniff(prefix: &[u8]) -> Compression {
        if prefix.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if prefix.starts_with(b"BZh") {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }
}

/// Wraps `input` in a gzip or bzip2 decoder when its first bytes are a gzip or bzip2 magic
/// number (multi-member streams as written by `pigz`/`pbzip2` included); otherwise returns it
/// unchanged.
pub fn decompress<'a, R: BufRead + 'a>(
    mut input: R,
) -> io::Result<(Compression, Box<dyn BufRead + 'a>)> {
    const DECODED_BUF_BYTES: usize = 256 * 1024;
    let kind = Compression::sniff(input.fill_buf()?);
    let out: Box<dyn BufRead + 'a> = match kind {
        Compression::None => Box::new(input),
        Compression::Gzip => Box::new(io::BufReader::with_capacity(
            DECODED_BUF_BYTES,
            flate2::bufread::MultiGzDecoder::new(input),
        )),
        Compression::Bzip2 => Box::new(io::BufReader::with_capacity(
            DECODED_BUF_BYTES,
            bzip2::bufread::MultiBzDecoder::new(input),
        )),
    };
    Ok((kind, out))
}

#[cfg(test)]
mod tests;
