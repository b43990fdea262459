//! The paged disk (`layout = "paged"`, docs/paged.md) from the CLI, as a user runs it: the
//! fig. 4 reproduction with the paper's claims as thresholds, the accounting, and errors
//! that name the key.

use std::collections::HashMap;
use std::path::Path;
mod common;
use common::{spindle, stderr, stdout};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn experiment(dir: &Path, body: &str) -> String {
    let path = dir.join("exp.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// `spindle run EXP --json --quiet [--set KEY=VALUE]…`: its report and stderr.
fn run_json(exp: &str, sets: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec!["run", exp, "--json", "--quiet"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = spindle(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = serde_json::from_slice(&o.stdout).expect("one JSON object");
    (v, stderr(&o))
}

fn body(array: &str, read_fraction: f64) -> String {
    format!(
        "seed = 2\n[drive]\nmodel = \"ibm18es\"\n[array]\nlayout = \"paged\"\n{array}\n\
         [workload]\nkind = \"closed\"\nqueue_depth = 1\nread_fraction = {read_fraction}\n\
         size_bytes = 8192\nalignment_bytes = 8192\n[run]\nrequests = 2000\n"
    )
}

#[test]
fn fig_4_the_paper_claims_hold_within_their_tolerances() {
    // examples/paged/fig4_write_fraction.toml at 6,000 requests a point.
    let file = repo().join("examples/paged/fig4_write_fraction.toml");
    let o = spindle(&[
        "sweep",
        file.to_str().unwrap(),
        "--csv",
        "--quiet",
        "--set",
        "run.requests=6000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut mean: HashMap<(u32, String), f64> = HashMap::new();
    for line in out.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        mean.insert(
            (f[0].parse().unwrap(), f[1].to_string()),
            f[4].parse().unwrap(),
        );
    }
    let m = |r: u32, reads: &str| mean[&(r, reads.to_string())];
    // Write-only, 4-way with bad tenants: 4.36x over 1-way (paper), within 15 %.
    let w = m(1, "0.0") / m(4, "0.0");
    assert!((3.7..=5.0).contains(&w), "write-only 4-way speedup {w:.2}");
    // 60 % writes, 4-way: 2.1x, within 15 % (measured 2.34x at 20,000 requests).
    let s60 = m(1, "0.4") / m(4, "0.4");
    assert!(
        (1.8..=2.42).contains(&s60),
        "60 % writes 4-way speedup {s60:.2}"
    );
    // Read-only: the optimum at 3- to 5-way, 4-way about 1.3x (within 15 %: ≥ 1.1).
    let best = (1..=8)
        .min_by(|&a, &b| m(a, "1.0").total_cmp(&m(b, "1.0")))
        .unwrap();
    assert!((3..=5).contains(&best), "read-only optimum at {best}-way");
    let r4 = m(1, "1.0") / m(4, "1.0");
    assert!((1.1..=1.5).contains(&r4), "read-only 4-way speedup {r4:.2}");
    // Bad tenants make writes cheaper than reads at every replication above 1.
    for r in 2..=8 {
        assert!(m(r, "0.0") < m(r, "1.0") / 2.0, "{r}-way: writes not cheap");
    }
}

#[test]
fn replica_writes_are_delayed_work_and_cleaning_is_zero() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(
        dir.path(),
        &body(
            "replicas = 4\nbad_tenants = false\nmap_nvram_bytes = 4096",
            0.0,
        ),
    );
    let (v, _) = run_json(&exp, &[]);
    assert_eq!(v["layout"], "paged 1x4-way 8kb");
    let c = &v["disks"][0]["utilization_by_cause"];
    let share = |k: &str| c[k].as_f64().unwrap();
    assert_eq!(share("cleaning"), 0.0);
    assert_eq!(share("host_read"), 0.0);
    // Three more copies after each first copy, in one pass around the track: about 3/4 of a
    // revolution (8.33 ms) a request (fig. 3(b)).
    let per_request_ms = v["window_s"].as_f64().unwrap() * 1e3 / v["requests"].as_f64().unwrap();
    let replicas_ms = share("delayed_write") * per_request_ms;
    assert!(
        (5.0..=7.5).contains(&replicas_ms),
        "replicas {replicas_ms:.2} ms"
    );
    assert!(share("map_logging") > 0.0, "{c}");
    assert!(v["map_recovery_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn requests_that_are_not_whole_pages_are_counted_and_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), &body("replicas = 2", 1.0));
    // Whole pages (the body aligns to the 8 KiB page): no warning, a zero count.
    let (v, err) = run_json(&exp, &[]);
    assert_eq!(v["paged"]["unaligned_requests"], 0);
    assert_eq!(v["paged"]["page_bytes"], 8192);
    assert!(!err.contains("not whole"), "{err}");
    // At 4 KiB alignment about half the 8 KiB requests straddle two pages.
    let (v, err) = run_json(&exp, &["workload.alignment_bytes=4096"]);
    let n = v["paged"]["unaligned_requests"].as_u64().unwrap();
    let measured = v["requests"].as_u64().unwrap();
    // Binomial(measured, 1/2): 5 sigma is under 0.08 of measured for 1,400 requests.
    assert!(
        n.abs_diff(measured / 2) < measured * 8 / 100,
        "{n} of {measured}"
    );
    assert!(
        err.contains(&format!("{n} host requests were not whole 8192-byte pages"))
            && err.contains("workload.alignment_bytes"),
        "{err}"
    );
}

#[test]
fn bad_keys_are_errors_that_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (array, key) in [
        ("replicas = 9", "array.replicas"),
        ("replicas = 0", "array.replicas"),
        ("page_kb = 0", "array.page_kb"),
        ("dr = 2", "array.dr"),
        ("scheduler = \"satf\"", "array.scheduler"),
        ("ds = 1.5", "array.ds"),
        ("ds = 4000", "array.ds"),
        ("map_nvram_bytes = 1000000000000", "array.map_nvram_bytes"),
        ("page_runs = true\nbad_tenants = false", "array.page_runs"),
        (
            "page_runs = true\ncleaner = \"piggyback\"",
            "array.page_runs",
        ),
    ] {
        let exp = experiment(dir.path(), &body(array, 1.0));
        let o = spindle(&["run", &exp]);
        assert_eq!(o.status.code(), Some(2), "{array}: {}", stderr(&o));
        assert!(stderr(&o).contains(key), "{array}: {}", stderr(&o));
    }
    // The paged keys on another layout.
    let exp = experiment(
        dir.path(),
        "[drive]\nmodel = \"ibm18es\"\n[array]\nlayout = \"mirror\"\ndisks = 2\nreplicas = 2\n\
         [workload]\nkind = \"closed\"\n",
    );
    let o = spindle(&["run", &exp]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("array.replicas"), "{}", stderr(&o));
    assert!(stderr(&o).contains("paged"), "{}", stderr(&o));
}

#[test]
fn page_runs_write_a_multi_page_request_in_fewer_commands() {
    // Writes of 8 consecutive 8 KiB pages on a 4-way paged disk: with page runs most go as
    // one command, so the disk is busy less per request and each request answers sooner.
    let dir = tempfile::tempdir().unwrap();
    let text = body("replicas = 4", 0.0).replace("size_bytes = 8192", "size_bytes = 65536");
    let exp = experiment(dir.path(), &text);
    let run = |runs: &str| {
        let (v, _) = run_json(&exp, &[&format!("array.page_runs={runs}")]);
        (
            v["latency"]["all"]["mean_ms"].as_f64().unwrap(),
            v["disks"][0]["ops"].as_u64().unwrap(),
            v["layout"].as_str().unwrap().to_string(),
        )
    };
    let (page_ms, page_ops, _) = run("false");
    let (run_ms, run_ops, label) = run("true");
    assert!(label.contains("runs"), "{label}");
    // One command a page is 8 a request; runs need at least 2 fewer on average (a run is
    // cut where the track under the head has no room, at most once or twice a request).
    assert!(
        run_ops * 8 < page_ops * 6,
        "{run_ops} vs {page_ops} disk commands"
    );
    // Each command saved is at least its overhead (0.5 ms on the 18ES) of a request's time.
    assert!(run_ms < page_ms - 1.0, "{run_ms:.2} vs {page_ms:.2} ms");
}

#[test]
fn striped_paged_disks_share_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), &body("ds = 2\nreplicas = 3", 0.5));
    let o = spindle(&[
        "run",
        &exp,
        "--json",
        "--quiet",
        "--set",
        "workload.queue_depth=4",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let disks = v["disks"].as_array().unwrap();
    assert_eq!(disks.len(), 2);
    for d in disks {
        assert!(d["ops"].as_u64().unwrap() > 500, "{d}");
    }
}

#[test]
fn the_same_seed_gives_the_same_report() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), &body("replicas = 5\nds = 2", 0.3));
    let run = || {
        let o = spindle(&[
            "run",
            &exp,
            "--json",
            "--quiet",
            "--set",
            "workload.queue_depth=3",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    assert_eq!(run(), run());
}
