//! Entry points for the `cargo fuzz` targets in `fuzz/` (and the stable test that replays
//! their seeds and past crashes, `tests/fuzz_corpus.rs`). Not an API: each function takes
//! arbitrary bytes, drives one input-facing part of the core and panics only if the core
//! misbehaves (a panic inside it, or a broken documented invariant). Rejecting the input
//! with an error is the expected outcome for most bytes.
//!
//! Input layouts (so that seeds can be written by hand or by `scripts/fuzz.sh`):
//! * [`trace_reader`]: one selector byte, then the trace bytes (see the function).
//! * [`experiment_toml`] / [`drive_toml`]: UTF-8 text; for experiments, NUL bytes separate the
//!   TOML from `--set key=value` overrides.
//! * [`disksim_import`]: UTF-8 text, the top `.parv` file followed by any number of
//!   `\n@@ NAME\n` sections, each a file the `.parv` may `source` or name (found by its last
//!   path component).

use std::io::{BufRead, BufReader};

use crate::config::{Experiment, TraceSpec, ValidateSpec};
use crate::drive::{disksim, parse_drive, Drive};
use crate::sweep::Sweep;
use crate::workload::trace::{self, TraceFormat, TraceRecord};

/// Most records a trace input is drained for (a decompressed input can be long).
const RECORDS_MAX: usize = 100_000;

/// Every record or error of a reader, as comparable text, checking each record's invariants.
fn drain<I>(reader: I) -> Vec<String>
where
    I: Iterator<Item = Result<TraceRecord, trace::TraceError>>,
{
    let mut out = Vec::new();
    for item in reader.take(RECORDS_MAX) {
        match item {
            Ok(r) => {
                assert!(r.sectors > 0, "record with zero sectors: {r:?}");
                assert!(
                    r.lba.checked_add(u64::from(r.sectors)).is_some(),
                    "record past the 64-bit address space: {r:?}"
                );
                out.push(format!("{r:?}"));
            }
            Err(e) => out.push(format!("error: {e}")),
        }
    }
    out
}

/// The trace readers. `data[0]` chooses: `0..=8` one of [`TraceFormat::ALL`]; above, an odd
/// value format detection, an even one decompression then detection; bit 7 reads through a
/// 16-byte buffer (lines straddle buffer refills, the slow path), and the records and errors
/// must then be the same as through a large buffer.
///
/// Decompression always sees the whole input and the 16-byte buffer sits on its output:
/// how much a gzip or bzip2 decoder hands out before it meets corrupt data depends on how
/// its input is chunked (libbz2 checks a block's CRC only at the block's end), so only the
/// readers after it are held to chunking independence.
pub fn trace_reader(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let read = |tiny: bool| -> Vec<String> {
        match sel & 0x7f {
            s if usize::from(s) < TraceFormat::ALL.len() => drain(trace::open(
                TraceFormat::ALL[usize::from(s)],
                through_16_bytes(Box::new(body), tiny),
            )),
            s if s % 2 == 1 => match trace::detect_and_open(through_16_bytes(Box::new(body), tiny))
            {
                Ok((_, r)) => drain(r),
                Err(e) => vec![format!("detect: {e}")],
            },
            _ => match trace::decompress(body) {
                Ok((_, d)) => match trace::detect_and_open(through_16_bytes(d, tiny)) {
                    Ok((_, r)) => drain(r),
                    Err(e) => vec![format!("detect: {e}")],
                },
                Err(e) => vec![format!("decompress: {e}")],
            },
        }
    };
    let whole = read(false);
    if sel & 0x80 != 0 {
        assert_eq!(
            whole,
            read(true),
            "a 16-byte input buffer changed the result"
        );
    }
}

/// `input`, read through a 16-byte buffer when `yes`.
fn through_16_bytes<'a>(input: Box<dyn BufRead + 'a>, yes: bool) -> Box<dyn BufRead + 'a> {
    if yes {
        Box::new(BufReader::with_capacity(16, input))
    } else {
        input
    }
}

/// The drive file [`experiment_toml`] can read: `drive.model = "fuzz.toml"`.
pub const FUZZ_DRIVE_NAME: &str = "fuzz.toml";

/// A drive of 1,280 sectors, so that building an array of it is cheap.
pub const FUZZ_DRIVE: &str = r#"
id = "fuzz"
name = "a tiny drive for fuzzing"
rpm = 6000.0
sector_bytes = 512
surfaces = 2
cylinders = 40
head_switch_ms = 0.5
write_settle_ms = 0.1
overhead_read_ms = 0.3
overhead_write_ms = 0.3
slips = []
zones = [
  { first_cylinder = 0, last_cylinder = 19, sectors_per_track = 20, track_skew = 2.0, cylinder_skew = 4.0 },
  { first_cylinder = 20, last_cylinder = 39, sectors_per_track = 12, track_skew = 1.0, cylinder_skew = 3.0 },
]
[seek]
kind = "two_piece"
a_ms = 1.0
b_ms = 0.4
c_ms = 2.0
e_ms = 0.01
boundary = 10
"#;

/// Experiment (and sweep) TOML: parse with `--set` overrides, expand comparisons and sweep
/// points, derive the array's shape. A variant on [`FUZZ_DRIVE_NAME`] is then checked
/// short of running (drive, array, workload and run window built); other drive files and
/// traces are refused, and variants on built-in drives are not checked, since building an
/// array of real disks takes up to seconds (per-sector free-space maps).
pub fn experiment_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let toml = parts.next().unwrap_or_default();
    let sets: Vec<String> = parts.take(8).map(str::to_string).collect();
    let read_file = |p: &str| -> Result<Vec<u8>, String> {
        if p == FUZZ_DRIVE_NAME {
            Ok(FUZZ_DRIVE.as_bytes().to_vec())
        } else {
            Err(format!("{p}: no such file"))
        }
    };
    let no_trace = |_: &TraceSpec, _: u32, _: u32, _: u64| Err("no traces here".to_string());
    let no_validate = |_: &ValidateSpec, _: u32| Err("no traces here".to_string());
    let check = |exp: &Experiment| {
        let _ = exp.shape();
        let _ = exp.ew_shape();
        if exp.spec.drive.model == FUZZ_DRIVE_NAME {
            let _ = exp.check(&read_file, &no_trace, &no_validate);
        }
    };
    if toml.contains("[[axis]]") {
        if let Ok(sweep) = Sweep::parse(toml, "fuzz.toml", &sets) {
            for i in 0..sweep.len().min(4) {
                let _ = sweep.describe(i);
                if let Ok(exp) = sweep.point(i) {
                    check(&exp);
                }
            }
        }
        return;
    }
    let Ok(exp) = Experiment::parse(toml, "fuzz.toml", &sets) else {
        return;
    };
    if let Ok(variants) = exp.variants() {
        for (_, v) in variants.iter().take(4) {
            check(v);
        }
    }
}

/// A drive TOML file, parsed and validated into a [`Drive`].
pub fn drive_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(drive) = parse_drive(text) {
        let _ = drive.capacity_sectors();
    }
}

/// The name [`disksim_import`] gives the top file.
pub const DISKSIM_TOP: &str = "fuzz.parv";

/// Splits [`disksim_import`]'s input into (name, text) files, the top one first.
pub fn disksim_files(text: &str) -> Vec<(String, String)> {
    let mut sections = text.split("\n@@ ");
    let mut files = vec![(
        DISKSIM_TOP.to_string(),
        sections.next().unwrap_or_default().to_string(),
    )];
    for s in sections {
        let (name, body) = s.split_once('\n').unwrap_or((s, ""));
        files.push((name.trim().to_string(), body.to_string()));
    }
    files
}

/// A DiskSim model: `.parv` import through an in-memory file reader, the imported spec built
/// into a [`Drive`]; also the seek-file and parameter-file parsers on their own.
pub fn disksim_import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let files = disksim_files(text);
    let read = |p: &str| -> Result<String, String> {
        let base = p.rsplit('/').next().unwrap_or(p);
        files
            .iter()
            .find(|(n, _)| n == p || n.rsplit('/').next() == Some(base))
            .map(|(_, t)| t.clone())
            .ok_or_else(|| format!("{p}: no such file"))
    };
    let read: ReadFileText = &read;
    let _ = disksim::seekfile::parse(DISKSIM_TOP, &files[0].1);
    let _ = disksim::libparam::parse_top(DISKSIM_TOP, read);
    if let Ok(spec) = disksim::import_parv(DISKSIM_TOP, read) {
        if let Ok(drive) = Drive::from_spec(&spec) {
            let _ = drive.capacity_sectors();
        }
    }
}

type ReadFileText<'a> = &'a dyn Fn(&str) -> Result<String, String>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fuzz_drive_is_valid_and_through_16_bytes() {
        let d = parse_drive(FUZZ_DRIVE).expect("FUZZ_DRIVE parses");
        assert_eq!(d.capacity_sectors(), 20 * 2 * 20 + 20 * 2 * 12);
    }
}
