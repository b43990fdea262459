//! The fuzz targets of `fuzz/` on stable: every committed seed (`fuzz/seeds/TARGET/`) and
//! every input that once crashed a target (`fuzz/regressions/TARGET/`) goes through the
//! same entry point the target calls (`spindle::fuzzing`), so CI replays them without
//! nightly or libFuzzer. `docs/fuzzing.md` tells how to fuzz for real (`scripts/fuzz.sh`).
//!
//! `SPINDLE_FUZZ_SECONDS=N` also runs every target for N seconds with cargo-fuzz (nightly);
//! without it, or without nightly or cargo-fuzz, that test says it skipped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every input of a target: its seeds and its regression inputs.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["seeds", "regressions"] {
        let d = repo().join("fuzz").join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        paths.sort();
        for p in paths {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push((p, bytes));
        }
    }
    out
}

fn replay(target: &str, run: fn(&[u8])) {
    let all = inputs(target);
    assert!(
        !all.is_empty(),
        "no seeds for {target} in fuzz/seeds/{target}"
    );
    for (path, bytes) in all {
        eprintln!("{target}: {}", path.display());
        run(&bytes);
    }
}

#[test]
fn trace_reader_seeds() {
    replay("trace_reader", spindle::fuzzing::trace_reader);
}

#[test]
fn experiment_toml_seeds() {
    replay("experiment_toml", spindle::fuzzing::experiment_toml);
}

#[test]
fn drive_toml_seeds() {
    replay("drive_toml", spindle::fuzzing::drive_toml);
}

#[test]
fn disksim_import_seeds() {
    replay("disksim_import", spindle::fuzzing::disksim_import);
}

/// A message that shows even though the test harness captures a passing test's output.
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{msg}");
}

#[test]
fn cargo_fuzz_runs_each_target_briefly() {
    let Ok(seconds) = std::env::var("SPINDLE_FUZZ_SECONDS") else {
        say("skipping the cargo-fuzz runs: set SPINDLE_FUZZ_SECONDS=N to fuzz each target N s (needs nightly and cargo-fuzz; the first build takes minutes)");
        return;
    };
    let nightly = Command::new("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !nightly {
        say("skipping the cargo-fuzz runs: `cargo +nightly fuzz` is not available (rustup toolchain install nightly; cargo install cargo-fuzz)");
        return;
    }
    let status = Command::new("bash")
        .arg(repo().join("scripts/fuzz.sh"))
        .arg(&seconds)
        .status()
        .expect("run scripts/fuzz.sh");
    assert!(
        status.success(),
        "scripts/fuzz.sh {seconds} failed: {status}"
    );
}
