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
/// value format detection, an even one decompression then detection; bit 7 reads through a 16-byte buffer (lines
/// straddle buffer refills, the slow path), and the records and errors must then be the same
/// as through a large buffer.
pub fn trace_reader(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let read = |input: Box<dyn BufRead + '_>| -> Vec<String> {
        match sel & 0x7f {
            s if usize::from(s) < TraceFormat::ALL.len() => {
                drain(trace::open(TraceFormat::ALL[usize::from(s)], input))
            }
            s if s % 2 == 1 => match trace::detect_and_open(input) {
                Ok((_, r)) => drain(r),
                Err(e) => vec![format!("detect: {e}")],
            },
            _ => match trace::decompress(input) {
                Ok((_, d)) => match trace::detect_and_open(d) {
                    Ok((_, r)) => drain(r),
                    Err(e) => vec![format!("detect: {e}")],
                },
                Err(e) => vec![format!("decompress: {e}")],
            },
        }
    };
    let whole = read(Box::new(body));
    if sel & 0x80 != 0 {
        let small = read(Box::new(BufReader::with_capacity(16, body)));
        assert_eq!(whole, small, "a 16-byte input buffer changed the result");
    }
}

/// Experiment (and sweep) TOML: parse with `--set` overrides, expand comparisons and sweep
/// points, derive the array's shape, then check everything short of running (built-in
/// drives only; files and traces are refused).
pub fn experiment_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let toml = parts.next().unwrap_or_default();
    let sets: Vec<String> = parts.take(8).map(str::to_string).collect();
    let no_file = |p: &str| -> Result<Vec<u8>, String> { Err(format!("{p}: no files here")) };
    let no_trace = |_: &TraceSpec, _: u32, _: u32, _: u64| Err("no traces here".to_string());
    let no_validate = |_: &ValidateSpec, _: u32| Err("no traces here".to_string());
    let check = |exp: &Experiment| {
        let _ = exp.shape();
        let _ = exp.ew_shape();
        let _ = exp.check(&no_file, &no_trace, &no_validate);
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
