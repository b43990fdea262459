//! Trace format detection from content.
//!
//! Rules, in order, applied to the first [`DETECT_LINES_MAX`] lines that are neither blank nor
//! `#` comments:
//!
//! 1. A first line `fio version 2 iolog` / `fio version 3 iolog` is fio v2 / v3.
//! 2. Otherwise every other format's own line parser is run over the sample lines. A format is a
//!    candidate if it accepts every line and yields at least one record (for blkparse, whose
//!    first issue event may come late, at least one line must be a blkparse event line).
//! 3. Exactly one candidate: that format. None: [`DetectError::Unknown`]. Several:
//!    [`DetectError::Ambiguous`].
//!
//! The one ambiguity real traces hit is DiskSim vs MQSim: both are five whitespace-separated
//! numbers. A decimal point in a time settles it (MQSim times are integer ns), as does a flags
//! value other than 0 or 1 (DiskSim's hex flags); a trace of integer times and 0/1 types is
//! genuinely either (ms or ns?) and needs `--format`.

use std::io::{self, BufRead, Chain, Cursor, Read};

use super::parse::{is_blank_or_comment, LINE_MAX_BYTES};
use super::{blkparse, fio, open, AnyParser, LineParser, TraceFormat, TraceReader};

/// How many lines detection looks at.
pub const DETECT_LINES_MAX: usize = 20;

/// Why a format could not be detected.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error("cannot detect the trace format: the input has no data lines")]
    Empty,
    #[error("cannot detect the trace format: {}; pass the format explicitly ({})", unknown_reason(.first_line, .closest), format_list())]
    Unknown {
        /// The first data line (an excerpt).
        first_line: String,
        /// The format that read the most sample lines before failing, if any read one: the
        /// format, the 1-based line it failed on, and why.
        closest: Option<(TraceFormat, usize, String)>,
    },
    #[error("cannot detect the trace format: the first lines read as {}; pass the format explicitly{}", names(.candidates), hint(.candidates))]
    Ambiguous { candidates: Vec<TraceFormat> },
    #[error("read error: {0}")]
    Io(io::Error),
}

fn unknown_reason(first_line: &str, closest: &Option<(TraceFormat, usize, String)>) -> String {
    match closest {
        Some((format, line, why)) => format!(
            "the lines before line {line} read as {format}, but line {line} does not ({why})"
        ),
        None => format!("no reader accepts the first lines (first: {first_line:?})"),
    }
}

fn format_list() -> String {
    TraceFormat::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn names(c: &[TraceFormat]) -> String {
    c.iter().map(|f| f.name()).collect::<Vec<_>>().join(" or ")
}

fn hint(c: &[TraceFormat]) -> &'static str {
    if c.contains(&TraceFormat::DiskSim) && c.contains(&TraceFormat::MqSim) {
        " (integer times: milliseconds for disksim, nanoseconds for mqsim)"
    } else {
        ""
    }
}

/// The formats tried in rule 2, in the order candidates are listed.
const CANDIDATES: [TraceFormat; 7] = [
    TraceFormat::DiskSim,
    TraceFormat::MqSim,
    TraceFormat::Spc,
    TraceFormat::Msr,
    TraceFormat::Blkparse,
    TraceFormat::Tencent,
    TraceFormat::Systor,
];

fn strip_eol(mut line: &[u8]) -> &[u8] {
    if let [rest @ .., b'\n'] = line {
        line = rest;
    }
    if let [rest @ .., b'\r'] = line {
        line = rest;
    }
    line
}

/// Detects the format of a trace from its first lines (with or without line endings).
pub fn detect(first_lines: &[&[u8]]) -> Result<TraceFormat, DetectError> {
    // (1-based position in `first_lines`, line without its end-of-line bytes)
    let lines: Vec<(usize, &[u8])> = first_lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, strip_eol(l)))
        .filter(|(_, l)| !is_blank_or_comment(l))
        .take(DETECT_LINES_MAX)
        .collect();
    let Some(&(_, first)) = lines.first() else {
        return Err(DetectError::Empty);
    };
    let first_trimmed = super::parse::trim(first);
    if first_trimmed == fio::FIO2_HEADER.as_bytes() {
        return Ok(TraceFormat::Fio2);
    }
    if first_trimmed == fio::FIO3_HEADER.as_bytes() {
        return Ok(TraceFormat::Fio3);
    }
    let mut candidates = Vec::new();
    // The format with the longest run of good lines before its first bad one.
    let mut closest: Option<(usize, TraceFormat, usize, String)> = None;
    for format in CANDIDATES {
        match accepts(format, &lines) {
            Ok(true) => candidates.push(format),
            Ok(false) => {}
            Err((good, line, why)) => {
                if good > closest.as_ref().map_or(0, |c| c.0) {
                    closest = Some((good, format, line, why));
                }
            }
        }
    }
    match candidates.len() {
        0 => Err(DetectError::Unknown {
            first_line: super::parse::excerpt(first),
            closest: closest.map(|(_, f, line, why)| (f, line, why)),
        }),
        1 => Ok(candidates[0]),
        _ => Err(DetectError::Ambiguous { candidates }),
    }
}

/// `Ok(true)` if `format` reads every line and finds requests in them, `Ok(false)` if it reads
/// every line but finds none, and `Err((good lines, failing line, why))` otherwise.
fn accepts(format: TraceFormat, lines: &[(usize, &[u8])]) -> Result<bool, (usize, usize, String)> {
    let mut parser = AnyParser::new(format);
    let mut records = 0usize;
    for (good, &(n, line)) in lines.iter().enumerate() {
        match parser.parse_line(line) {
            Ok(Some(_)) => records += 1,
            Ok(None) => {}
            Err(e) => return Err((good, n, e.to_string())),
        }
    }
    Ok(records > 0
        || (format == TraceFormat::Blkparse
            && lines.iter().any(|(_, l)| blkparse::is_event_line(l))))
}

/// The reader [`detect_and_open`] returns: the sampled prefix, then the rest of the input.
pub type DetectedReader<R> = TraceReader<Chain<Cursor<Vec<u8>>, R>>;

/// Reads the first lines of `input`, detects the format, and opens a reader that still sees
/// every line (the sampled prefix is replayed in front of the rest of the input).
pub fn detect_and_open<R: BufRead>(
    mut input: R,
) -> Result<(TraceFormat, DetectedReader<R>), DetectError> {
    let mut prefix = Vec::new();
    let mut ends = Vec::new();
    let mut data_lines = 0;
    while data_lines < DETECT_LINES_MAX {
        let start = prefix.len();
        let n = (&mut input)
            .take(LINE_MAX_BYTES as u64 + 1)
            .read_until(b'\n', &mut prefix)
            .map_err(DetectError::Io)?;
        if n == 0 || n > LINE_MAX_BYTES {
            ends.push((start, prefix.len()));
            break;
        }
        ends.push((start, prefix.len()));
        if !is_blank_or_comment(strip_eol(&prefix[start..])) {
            data_lines += 1;
        }
    }
    let lines: Vec<&[u8]> = ends.iter().map(|&(a, b)| &prefix[a..b]).collect();
    let format = detect(&lines)?;
    Ok((format, open(format, Cursor::new(prefix).chain(input))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(text: &str) -> Result<TraceFormat, DetectError> {
        let lines: Vec<&[u8]> = text.lines().map(str::as_bytes).collect();
        detect(&lines)
    }

    #[test]
    fn detects_each_format_from_a_few_lines() {
        assert_eq!(
            det("13.191135\t30\t0\t5\t1\n17.829285\t20\t576560\t6\t1").ok(),
            Some(TraceFormat::DiskSim)
        );
        assert_eq!(
            det("0 5 174224064 16 1\n2 5 1 16 0x2").ok(),
            Some(TraceFormat::DiskSim)
        );
        assert_eq!(
            det("0,303567,3584,w,0.000000\n1,55590,3072,w,0.000000").ok(),
            Some(TraceFormat::Spc)
        );
        assert_eq!(
            det("128166385295514663,hm,0,Write,9056014336,2048,2833").ok(),
            Some(TraceFormat::Msr)
        );
        assert_eq!(
            det("1538323200,4247200,128,1,1058").ok(),
            Some(TraceFormat::Tencent)
        );
        assert_eq!(
            det("Timestamp,Response,IOType,LUN,Offset,Size\n1456095145.133076000,0.000806000,R,0,899056122368,131072").ok(),
            Some(TraceFormat::Systor)
        );
        assert_eq!(
            det("  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632\n  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]").ok(),
            Some(TraceFormat::Blkparse)
        );
        assert_eq!(
            det("# comment\n\nfio version 2 iolog\n/dev/sdb add").ok(),
            Some(TraceFormat::Fio2)
        );
        assert_eq!(
            det("fio version 3 iolog\n0 f add").ok(),
            Some(TraceFormat::Fio3)
        );
    }

    #[test]
    fn integer_five_column_traces_are_ambiguous() {
        let e = det("11413000 0 657728 16 1\n11565000 1 31244784 64 1").expect_err("ms or ns?");
        assert!(
            matches!(&e, DetectError::Ambiguous { candidates } if candidates == &[TraceFormat::DiskSim, TraceFormat::MqSim])
        );
        assert_eq!(
            e.to_string(),
            "cannot detect the trace format: the first lines read as disksim or mqsim; pass the format \
             explicitly (integer times: milliseconds for disksim, nanoseconds for mqsim)"
        );
    }

    #[test]
    fn unknown_and_empty_inputs() {
        assert!(matches!(det(""), Err(DetectError::Empty)));
        assert!(matches!(
            det("\n  \n# only a comment"),
            Err(DetectError::Empty)
        ));
        let e = det("hello world").expect_err("not a trace");
        assert!(e.to_string().contains(r#"first: "hello world""#), "{e}");
        let e = det("1.0 0 0 8 1\n# note\n2.0 0 0 8 zz\n3.0 0 0 8 1").expect_err("bad line 3");
        assert_eq!(
            e.to_string(),
            "cannot detect the trace format: the lines before line 3 read as disksim, but line 3 does not \
             (field 5 (flags): expected a hex number, got \"zz\"); pass the format explicitly (disksim, mqsim, \
             spc, msr, blkparse, fio2, fio3, tencent, systor)"
        );
        assert!(matches!(
            det("\u{fffd}\u{0}\u{1}"),
            Err(DetectError::Unknown { .. })
        ));
    }

    #[test]
    fn detect_and_open_replays_the_sampled_prefix() {
        let mut text = String::from("# header comment\n");
        for i in 0..50 {
            text.push_str(&format!("{i}.5 0 {i} 8 1\n"));
        }
        let (format, reader) = detect_and_open(text.as_bytes()).expect("detected");
        assert_eq!(format, TraceFormat::DiskSim);
        let recs: Vec<_> = reader.collect::<Result<_, _>>().expect("valid");
        assert_eq!(recs.len(), 50, "no line lost to sampling");
        assert_eq!(recs[49].lba, 49);
    }
}
