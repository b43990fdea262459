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
            let out = std::env::temp_dir().join(format!("spindle-oracle-{}", std::process::id()));
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

/// Layout, mechanics and interface (the buffer off): a regression guard at the measured
/// level. Measured 2026-11-26 on seeds 1..=100 × 2,000 requests: 94.67 % of requests within
/// 2 µs (reads 97.5 %, writes 90.4 %); this run (60 models × 1,000 requests, seeds 1..=60)
/// is deterministic and gave 95.2 % (reads 97.7 %, writes 91.5 %; DiskSim aborted on 2); the bound is 94 %, a
/// regression guard below that, not the criterion (99 %, test below).
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
    assert!(all >= 94.0, "{all:.2} % within 2 us; regions: {}", s["regions"]);
}

/// The criterion: ≥ 99 % of requests within 2 µs over 300 models × 2,000 requests
/// with every parameter drawn. Not met yet: 56.3 % on 2026-11-26 (224 models compared,
/// DiskSim aborted on 76); worst regions: fast write level 1, read-ahead modes 2 and 4,
/// per-request overhead (docs/validation.md).
#[test]
#[ignore = "issue 16 is open: 56 % of requests agree with every parameter drawn, 99 % needed (docs/validation.md)"]
fn every_parameter_models_agree_with_disksim_request_by_request() {
    let Some(oracle) = oracle() else { return };
    let s = differential(oracle, "full", 300, 2000);
    let all = pct(&s["all"]);
    assert!(all >= 99.0, "{all:.2} % within 2 us; regions: {}", s["regions"]);
}
