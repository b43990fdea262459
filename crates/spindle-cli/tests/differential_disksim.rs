//! Differential test against DiskSim 4.0 (issue 16): random drive models and request streams
//! through both simulators, compared request by request (`spindle validate
//! --against-disksim`, docs/validation.md).
//!
//! DiskSim is built from ../shared/tools/disksim-4.0 into a temporary folder by
//! `scripts/build_disksim_oracle.sh` (15 s; needs gcc, make, bison, flex). Without the source
//! or the compilers the tests say so on stderr and pass as skipped, unless
//! `SPINDLE_REQUIRE_DISKSIM=1` (set by `.ci/run`), which makes that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The oracle's folder, built once per test binary; `None` (with a message) when it cannot
/// be built here.
fn oracle() -> Option<&'static Path> {
    static ORACLE: OnceLock<Option<PathBuf>> = OnceLock::new();
    ORACLE
        .get_or_init(|| {
            let require = std::env::var("SPINDLE_REQUIRE_DISKSIM").is_ok_and(|v| v == "1");
            let skip = |why: String| {
                assert!(!require, "SPINDLE_REQUIRE_DISKSIM=1 but {why}");
                eprintln!("skipped: {why}");
                None
            };
            let src = repo().join("../shared/tools/disksim-4.0/build.sh");
            if !src.is_file() {
                return skip(format!("no DiskSim source at {}", src.display()));
            }
            for tool in ["gcc", "make", "bison", "flex"] {
                let found = Command::new("sh")
                    .args(["-c", &format!("command -v {tool}")])
                    .output()
                    .is_ok_and(|o| o.status.success());
                if !found {
                    return skip(format!(
                        "{tool} is missing (apt-get install build-essential bison flex)"
                    ));
                }
            }
            // Under target/ (reused by later runs, never left in the system's temp folder).
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("differential_oracle");
            let st = Command::new("bash")
                .arg(repo().join("scripts/build_disksim_oracle.sh"))
                .arg(&out)
                .output()
                .expect("running scripts/build_disksim_oracle.sh");
            assert!(
                st.status.success(),
                "the DiskSim oracle did not build: {}",
                String::from_utf8_lossy(&st.stderr)
            );
            Some(out)
        })
        .as_deref()
}

fn differential(oracle: &Path, profile: &str, models: u32, requests: u32) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(["--quiet", "validate", "--json", "--against-disksim"])
        .arg(oracle)
        .args([
            "--profile",
            profile,
            "--models",
            &models.to_string(),
            "--model-requests",
            &requests.to_string(),
        ])
        .output()
        .expect("running spindle");
    assert!(
        out.status.success(),
        "spindle validate --against-disksim failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn pct(a: &serde_json::Value) -> f64 {
    100.0 * a["agree"].as_f64().unwrap() / a["total"].as_f64().unwrap()
}

/// DiskSim's service time of each request of `trace` on `parv` (both in `dir`), in ms, with
/// whether it is a write (the oracle's `DISKSIM_REQLOG` lines).
fn disksim_requests(oracle: &Path, dir: &Path, parv: &str, trace: &str) -> Vec<(bool, f64)> {
    let out = Command::new(oracle.join("bin/disksim"))
        .current_dir(dir)
        .env("DISKSIM_REQLOG", "1")
        .args([parv, "oracle.outv", "validate", trace, "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "DiskSim failed on {parv}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("REQ "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[4] == "W", f[1].parse::<f64>().unwrap())
        })
        .collect()
}

/// spindle's service time of each request of the drive directory `dir`'s trace
/// (`spindle validate DIR --requests`), in ms, with whether it is a write.
fn spindle_requests(dir: &Path) -> Vec<(bool, f64)> {
    let st = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(["--quiet", "validate"])
        .arg(dir)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--requests")
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let name = dir.file_name().unwrap().to_str().unwrap();
    let csv = std::fs::read_to_string(dir.join(format!("out/{name}.requests.csv"))).unwrap();
    csv.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1] == "W", f[6].parse::<f64>().unwrap())
        })
        .collect()
}

/// Layout, mechanics and interface (the buffer off): a regression guard at the measured
/// level. Measured 2026-11-26 on seeds 1..=100 × 2,000 requests: 99.94 % of requests within
/// 2 µs (reads 99.96 %, writes 99.92 %); this run (60 models × 1,000 requests, seeds 1..=60)
/// is deterministic and gave 99.94 % (reads 99.94 %, writes 99.94 %; DiskSim aborted on 2).
/// The bound, 99.5 %, is a regression guard just below that.
#[test]
fn mechanics_only_models_agree_with_disksim_request_by_request() {
    let Some(oracle) = oracle() else { return };
    let s = differential(oracle, "mechanics", 60, 1000);
    let failed = s["oracle_failed"].as_array().unwrap().len();
    assert!(failed <= 6, "DiskSim aborted on {failed} of 60 models");
    let all = pct(&s["all"]);
    eprintln!(
        "mechanics: {all:.2} % of requests within 2 us (reads {:.2} %, writes {:.2} %)",
        pct(&s["reads"]),
        pct(&s["writes"])
    );
    assert!(
        all >= 99.5,
        "{all:.2} % within 2 us; regions: {}",
        s["regions"]
    );
}

/// The criterion: ≥ 99 % of requests within 2 µs over 300 models × 2,000 requests
/// with every parameter drawn ("Use separate write segment" too since the fifth round of
/// 2026-11-27), as users run it (the documented departure on). Measured after that round:
/// 99.22 % (99.34 % with `--disksim-semantics`; 228 models compared, DiskSim aborted on 72).
/// Deterministic, so the bound is the criterion itself; worst regions in docs/validation.md.
#[test]
fn every_parameter_models_agree_with_disksim_request_by_request() {
    let Some(oracle) = oracle() else { return };
    let s = differential(oracle, "full", 300, 2000);
    let all = pct(&s["all"]);
    assert!(
        all >= 99.0,
        "{all:.2} % within 2 us; regions: {}",
        s["regions"]
    );
}

/// Every parameter drawn, as a regression guard at the measured level: seeds 1..=40 ×
/// 1,000 requests gave 99.05 % within 2 µs on 2026-11-27 after the fifth round of that
/// day's fixes (33 models compared, DiskSim aborted on 7; deterministic; 98.76 % after the
/// fourth, 98.14 % after the third, 97.31 % before it, 96.69 % and 92.33 % earlier that day,
/// 89.17 % before the fixes of 2026-11-26). The bound, 98.7 %, sits about a third of a
/// point below: the run is deterministic, so the
/// margin is not for noise but leaves room for a faithful fix that trades a few requests
/// in these 40 models for more elsewhere (a kept fix of 2026-11-27 cost one model at most
/// 30 requests, 0.07 % of this run). It is not the criterion (above).
#[test]
fn every_parameter_models_do_not_regress() {
    let Some(oracle) = oracle() else { return };
    let s = differential(oracle, "full", 40, 1000);
    let all = pct(&s["all"]);
    eprintln!(
        "full: {all:.2} % of requests within 2 us (reads {:.2} %, writes {:.2} %)",
        pct(&s["reads"]),
        pct(&s["writes"])
    );
    assert!(
        all >= 98.7,
        "{all:.2} % within 2 us; regions: {}",
        s["regions"]
    );
}

/// DiskSim's own Cheetah 9LP model, closed loop Q = 1 (each request issued when the previous
/// completes), 5,000 random 4 KiB requests, 60 % reads, the same trace through both: the
/// issue asks for the read and the write means each within 2 % of DiskSim's. Measured
/// 2026-11-26 on this trace: reads 12.856 vs 12.866 ms (−0.08 %), writes 4.567 vs 4.570 ms
/// (−0.07 %); before the fixes of issue 16 the split was 14.97 / 1.49 against 12.85 / 4.62.
#[test]
fn cheetah9lp_q1_read_and_write_means_match_disksim() {
    let Some(oracle) = oracle() else { return };
    let src = repo().join("../shared/validation/disksim/cheetah9LP");
    let dir = std::env::temp_dir().join(format!("spindle-c9q1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        "cheetah9LP.parv",
        "cheetah9LP.diskspecs",
        "cheetah9LP.model",
        "cheetah9LP.seek",
        "statdefs",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    // A deterministic LCG: the test needs no random-number crate, only the same trace twice.
    let mut x: u64 = 7;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 11
    };
    let capacity = 17_783_240u64;
    let mut trace = String::new();
    for _ in 0..5000 {
        let op = if next() % 10 < 6 { 'R' } else { 'W' };
        let lbn = next() % (capacity / 8 - 1) * 8;
        trace.push_str(&format!("{op} Hit {lbn} 8 1000.0 0.0\n"));
    }
    std::fs::write(dir.join("q1.trace"), &trace).unwrap();
    let disksim = disksim_requests(oracle, &dir, "cheetah9LP.parv", "q1.trace");
    let ours = spindle_requests(&dir);
    assert_eq!(ours.len(), disksim.len());
    let mean = |v: &[(bool, f64)], w: bool| {
        let xs: Vec<f64> = v.iter().filter(|r| r.0 == w).map(|r| r.1).collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    for (w, what) in [(false, "read"), (true, "write")] {
        let (a, b) = (mean(&ours, w), mean(&disksim, w));
        let err = 100.0 * (a - b) / b;
        eprintln!("cheetah9LP Q=1 {what}s: spindle {a:.3} ms, DiskSim {b:.3} ms ({err:+.2} %)");
        assert!(err.abs() <= 2.0, "{what} mean {a:.3} vs DiskSim {b:.3} ms");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every request of a validation drive's own measured trace (its real think times), DiskSim's
/// model of the drive through both simulators, within 2 µs of DiskSim's service time.
fn own_trace_agrees_with_disksim(drive: &str, requests: usize) {
    let Some(oracle) = oracle() else { return };
    let src = repo().join("../shared/validation/disksim").join(drive);
    let dir = std::env::temp_dir().join(format!("spindle-{drive}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    let (parv, trace) = (format!("{drive}.parv"), format!("{drive}.trace"));
    let disksim: Vec<f64> = disksim_requests(oracle, &dir, &parv, &trace)
        .into_iter()
        .map(|r| r.1)
        .collect();
    let ours: Vec<f64> = spindle_requests(&dir).into_iter().map(|r| r.1).collect();
    assert_eq!(ours.len(), requests);
    assert_eq!(disksim.len(), requests);
    let off: Vec<(usize, f64, f64)> = ours
        .iter()
        .zip(&disksim)
        .enumerate()
        .filter(|(_, (a, b))| (*a - *b).abs() > 0.002)
        .map(|(i, (a, b))| (i, *a, *b))
        .collect();
    assert!(
        off.is_empty(),
        "{drive}: {} of {requests} requests differ from DiskSim by more than 2 us; the first (request, spindle ms, DiskSim ms): {:?}",
        off.len(),
        &off[..off.len().min(5)]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The DEC RZ26 (7,980 requests): every request agrees since 2026-11-27 (the drive reads
/// ahead in mode 1 and never disconnects; none of spindle's documented departures applies).
#[test]
fn dec_rz26_trace_agrees_with_disksim_request_by_request() {
    own_trace_agrees_with_disksim("dec_rz26", 7980);
}

/// The HP C2247A (9,999 requests): every request agrees since the fifth round of
/// 2026-11-27 (its dedicated write segment, imported since; 7,785 agreed before). The other
/// three drives each trip a documented departure or a remaining difference (Atlas 10K
/// 9,323 of 10,000: "read any free blocks"; Cheetah 9LP 9,998; Ultrastar 18ES 9,999;
/// docs/validation.md), so they are scored against the measured drive instead
/// (`spindle validate --all`).
#[test]
fn hp_c2247a_trace_agrees_with_disksim_request_by_request() {
    own_trace_agrees_with_disksim("hp_c2247a", 9999);
}

/// The HP C2490A (9,984 requests): every request agrees since the fourth and fifth rounds
/// of 2026-11-27 (9,977 before).
#[test]
fn hp_c2490a_trace_agrees_with_disksim_request_by_request() {
    own_trace_agrees_with_disksim("hp_c2490a", 9984);
}
