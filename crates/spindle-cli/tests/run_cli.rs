//! The `spindle run`, `drives` and `bench` commands as a user runs them.

use std::path::Path;
mod common;
use common::{spindle, stderr, stdout};

/// A small, fast experiment written to a temporary directory.
fn experiment(dir: &Path, body: &str) -> String {
    let path = dir.join("exp.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

const SMALL: &str = "seed = 5\n[drive]\nmodel = \"cheetah9lp\"\n[array]\nscheduler = \"satf\"\n[workload]\nkind = \"closed\"\nqueue_depth = 4\nread_fraction = 0.6\n[run]\nrequests = 3000\n";

#[test]
fn default_run_prints_a_comparison_of_every_scheduler() {
    let o = spindle(&["run", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for label in ["FCFS", "SSTF", "SCAN", "LOOK", "C-LOOK", "SATF"] {
        assert!(
            out.lines().any(|l| l.starts_with(label)),
            "no {label} row in\n{out}"
        );
    }
}

#[test]
fn json_has_the_documented_fields_and_is_byte_identical_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), SMALL);
    let a = spindle(&["run", &exp, "--json"]);
    assert!(a.status.success(), "{}", stderr(&a));
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).expect("one JSON object");
    for class in ["all", "read", "write"] {
        for f in ["mean_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"] {
            assert!(
                v["latency"][class][f].is_number(),
                "latency.{class}.{f} missing"
            );
        }
    }
    assert!(v["throughput_iops"].as_f64().unwrap() > 0.0);
    assert!(v["window_s"].as_f64().unwrap() > 0.0);
    for f in ["offered_iops", "achieved_iops", "host_queue", "drain_s"] {
        assert!(
            v[f].is_null(),
            "{f}: a closed loop without draining has none"
        );
    }
    assert_eq!(v["saturated"], false);
    assert!(v["sustainable"].is_boolean());
    for f in ["ops", "bytes", "nvram_entries"] {
        assert!(v["backlog"][f].is_u64(), "backlog.{f}");
        assert!(v["backlog"]["growth"][f].is_i64(), "backlog.growth.{f}");
    }
    assert!(v["breakdown_ms"]["host_wait"].is_number());
    assert_eq!(v["requests"].as_u64(), Some(2100), "middle 70 % of 3,000");
    let u = v["disks"][0]["utilization"].as_f64().unwrap();
    assert!(
        (0.99..=1.0).contains(&u),
        "a closed loop keeps its disk busy: {u}"
    );
    let b = spindle(&["run", &exp, "--json"]);
    assert_eq!(
        a.stdout, b.stdout,
        "same experiment and seed must give identical bytes"
    );
}

#[test]
fn csv_has_a_header_and_one_line_per_configuration() {
    let o = spindle(&["run", "--csv", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<_> = out.lines().collect();
    assert!(
        lines[0].starts_with("label,drive,disks,layout,scheduler"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines.len(),
        11,
        "header + six schedulers + SR-Array + RAID-10 + EW-Array + RAID-5"
    );
}

#[test]
fn set_overrides_reach_the_report() {
    let o = spindle(&[
        "run",
        "--json",
        "--set",
        "workload.queue_depth=1",
        "--set",
        "run.requests=2000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["workload"].as_str().unwrap().contains("Q=1"));
    assert_eq!(v["requests_issued"].as_u64(), Some(2000));
}

#[test]
fn an_unknown_key_fails_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(
        dir.path(),
        &SMALL.replace("queue_depth = 4", "queue_dpth = 4"),
    );
    let o = spindle(&["run", &exp]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("exp.toml: line 8") && err.contains("queue_dpth"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "no partial report on error");
}

#[test]
fn impossible_parameters_fail_with_the_key() {
    for (set, key) in [
        ("workload.queue_depth=0", "workload.queue_depth"),
        ("array.disks=0", "array.disks"),
        ("workload.read_fraction=1.5", "workload.read_fraction"),
        (
            "workload.data_set_bytes=99999999999999",
            "workload.data_set_bytes",
        ),
        ("array.scheduler=elevator", "unknown scheduler"),
        ("array.scheduler=satf-ew", "needs layout ew-array or ddm"),
        (
            "array.layout=ew-array",
            "give array.dm and array.ds and array.dd",
        ),
    ] {
        let o = spindle(&["run", "--set", set]);
        assert_eq!(o.status.code(), Some(2), "{set}");
        assert!(stderr(&o).contains(key), "{set}: {}", stderr(&o));
    }
}

#[test]
fn an_unknown_drive_lists_the_library() {
    let o = spindle(&["run", "--set", "drive.model=nosuchdrive"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("nosuchdrive") && err.contains("cheetah9lp"),
        "{err}"
    );
}

#[test]
fn a_drive_file_with_zero_rpm_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let drive = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../drives/hp97560.toml"
    ))
    .unwrap();
    let zero = drive
        .lines()
        .map(|l| if l.starts_with("rpm") { "rpm = 0" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.path().join("zero.toml"), zero).unwrap();
    let exp = experiment(
        dir.path(),
        &SMALL.replace("\"cheetah9lp\"", "\"zero.toml\""),
    );
    let o = spindle(&["run", &exp]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("drive.model") && err.contains("rpm"), "{err}");
}

#[test]
fn a_malformed_trace_fails_naming_the_trace_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.disksim"),
        "0.0 0 100 8 1\n1.0 0 zz 8 1\n",
    )
    .unwrap();
    let exp = experiment(
        dir.path(),
        "[drive]\nmodel = \"cheetah9lp\"\n[workload]\nkind = \"trace\"\n[workload.trace]\npath = \"t.disksim\"\nformat = \"disksim\"\n",
    );
    let o = spindle(&["run", &exp]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("t.disksim: line 2"), "{err}");
}

#[test]
fn a_trace_replays_with_speedup_and_concatenation() {
    let dir = tempfile::tempdir().unwrap();
    // Two devices of 1,000 sectors; device 1 lands after device 0 in the logical data set.
    let mut t = String::new();
    for i in 0..200u32 {
        t.push_str(&format!(
            "{}.0 {} {} 8 {}\n",
            i * 20,
            i % 2,
            (i * 37) % 992,
            i % 3 % 2
        ));
    }
    std::fs::write(dir.path().join("t.disksim"), t).unwrap();
    let body = "[drive]\nmodel = \"cheetah9lp\"\n[workload]\nkind = \"trace\"\n[workload.trace]\npath = \"t.disksim\"\nspeedup = 2.0\n";
    let exp = experiment(dir.path(), body);
    let o = spindle(&["run", &exp, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["requests"].as_u64(), Some(200));
    // 200 arrivals 20 ms apart, replayed twice as fast: a 1.99 s span (plus the last service).
    let window = v["window_s"].as_f64().unwrap();
    assert!((1.990..2.030).contains(&window), "{window}");
}

#[test]
fn drives_list_and_show() {
    let o = spindle(&["drives", "list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for id in [
        "st39133lwv",
        "hp97560",
        "ibm18es",
        "cheetah9lp",
        "atlas10k",
        "ibm36z15",
        "t7k250",
        "exos_x24",
        "hc580",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(id)),
            "{id} missing from\n{out}"
        );
    }
    let o = spindle(&["drives", "show", "st39133lwv"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(
        out.contains("10026 rpm") && out.contains("sources of the values"),
        "{out}"
    );
    let o = spindle(&["drives", "show", "nosuch"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bench_runs_its_builtin_scenarios() {
    // A smoke test of the benchmark's plumbing on a small request count; speed is measured by
    // `spindle bench` itself, never asserted in a test.
    let o = spindle(&[
        "bench",
        "--only",
        "a,b,c",
        "--requests",
        "20000",
        "--json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["requests"].as_u64(), Some(20000), "{r}");
        assert_eq!(r["model"].as_str(), Some("cheetah9lp"), "{r}");
    }
    // Scenario b's arrival rate was chosen for ~70 % utilisation; Poisson sampling over 20,000
    // requests keeps it within a few points.
    let util_b = rows[1]["utilization"].as_f64().unwrap();
    assert!(
        (0.62..0.78).contains(&util_b),
        "scenario b utilisation {util_b}"
    );
}

#[test]
fn bench_runs_the_disksim_scenarios_on_the_model_it_names() {
    let o = spindle(&[
        "bench",
        "--only",
        "da,db,dc1,dc2",
        "--requests",
        "3000",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["da", "db", "dc1", "dc2"]);
    // The shared DiskSim model when present, else the built-in; stderr says which.
    let expect = match shared("validation/disksim/cheetah9LP/cheetah9LP.parv") {
        Some(p) => p.canonicalize().unwrap().display().to_string(),
        None => "cheetah9lp".to_string(),
    };
    for r in rows {
        assert_eq!(r["requests"].as_u64(), Some(3000), "{r}");
        assert_eq!(r["model"].as_str(), Some(expect.as_str()), "{r}");
        assert!(r["peak_rss_mb"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert!(stderr(&o).contains("DiskSim scenarios:"), "{}", stderr(&o));
    // --model chooses the drive.
    let o = spindle(&[
        "bench",
        "--only",
        "da",
        "--requests",
        "500",
        "--model",
        "hp97560",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["model"].as_str(), Some("hp97560"));
    // An unknown scenario is an error naming the known ones.
    let o = spindle(&["bench", "--only", "zz", "--quiet"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("dc2"), "{}", stderr(&o));
}

/// The file-server replay replays the whole shared trace (or is skipped, saying so), and the
/// two-thread sweep reports its rate per core: requests / wall / 2.
#[test]
fn bench_replays_the_file_server_trace_and_runs_the_sweep_on_two_threads() {
    let o = spindle(&["bench", "--only", "fs,sw2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    if shared("traces/msnfs_fileserver_replayer/MSN-FS-30s-ms").is_some() {
        assert_eq!(names, ["fs", "sw2"]);
        // Every line of the trace, each one request.
        assert_eq!(rows[0]["requests"].as_u64(), Some(149_999), "{}", rows[0]);
        let u = rows[0]["utilization"].as_f64().unwrap();
        assert!(u > 0.0 && u <= 1.0, "{}", rows[0]);
    } else {
        assert_eq!(names, ["sw2"]);
        assert!(stderr(&o).contains("bench (fs): SKIPPED"), "{}", stderr(&o));
    }
    let sw = rows.last().unwrap();
    // 64 points of 20,000 requests.
    assert_eq!(sw["requests"].as_u64(), Some(1_280_000), "{sw}");
    let (n, wall, rate) = (
        sw["requests"].as_f64().unwrap(),
        sw["wall_s"].as_f64().unwrap(),
        sw["requests_per_s"].as_f64().unwrap(),
    );
    // Rounding only: the rate is computed from the same two numbers.
    assert!((rate * wall * 2.0 / n - 1.0).abs() < 1e-9, "{sw}");
}

fn shared(rel: &str) -> Option<std::path::PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        spindle::testing::shared_missing(&format!("{} is absent", p.display()));
        None
    }
}

#[test]
fn validate_scores_a_real_drive_against_its_measured_trace() {
    let Some(dir) = shared("validation/disksim/cheetah9LP") else {
        return;
    };
    let o = spindle(&["validate", dir.to_str().unwrap(), "--json", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let v: serde_json::Value =
        serde_json::from_str(out.lines().next().unwrap()).expect("JSON per drive");
    assert_eq!(v["drive"], "cheetah9LP");
    assert_eq!(v["requests"].as_u64(), Some(10_000));
    // The measured mean is the trace's own (4.273 ms in the folder's README).
    assert!((v["measured_mean_ms"].as_f64().unwrap() - 4.273).abs() < 0.0005);
    for f in ["simulated_mean_ms", "rms_ms", "disksim_rms_ms"] {
        assert!(v[f].as_f64().is_some_and(|x| x > 0.0), "{f}: {v}");
    }
}

#[test]
fn validate_refuses_a_folder_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.trace"), "R Hit 100 8 5000.0 100.0\n").unwrap();
    let o = spindle(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no .parv"), "{}", stderr(&o));
}

#[test]
fn an_imported_drive_file_runs_like_the_parv_it_came_from() {
    let Some(parv) = shared("validation/disksim/atlas10k/atlas10k.parv") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("atlas.toml");
    let o = spindle(&[
        "drives",
        "import",
        parv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run = |model: &str| {
        let o = spindle(&[
            "run",
            "--json",
            "--set",
            &format!("drive.model={model:?}"),
            "--set",
            "run.requests=3000",
            "--set",
            "workload.read_fraction=0.6",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["latency"].clone(), v["throughput_iops"].clone())
    };
    // Same experiment on the .parv and on the written file: identical results.
    assert_eq!(run(parv.to_str().unwrap()), run(out.to_str().unwrap()));
}

/// An SR-Array from the command line: the report names the layout and RSATF, six disks
/// serve, and delayed writes are propagated.
#[test]
fn an_sr_array_runs_from_the_command_line() {
    let o = spindle(&[
        "run",
        "--json",
        "--quiet",
        "--set",
        "array.layout=sr-array",
        "--set",
        "array.disks=6",
        "--set",
        "array.dr=2",
        "--set",
        "array.scheduler=rsatf",
        "--set",
        "workload.read_fraction=0.5",
        "--set",
        "run.requests=3000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["layout"], "sr-array 3x2x1 track-group delayed-writes");
    assert_eq!(v["scheduler"], "rsatf");
    assert_eq!(v["disks_count"], 6);
    let disks = v["disks"].as_array().unwrap();
    assert_eq!(disks.len(), 6);
    let propagated: u64 = disks
        .iter()
        .map(|d| d["propagations"].as_u64().unwrap())
        .sum();
    assert!(propagated > 0, "{v}");
}

#[test]
fn a_dr_that_cannot_be_written_in_one_rotation_is_refused() {
    let o = spindle(&[
        "run",
        "--quiet",
        "--set",
        "array.layout=sr-array",
        "--set",
        "array.disks=7",
        "--set",
        "array.ds=1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("Dr = 7") && e.contains("one rotation") && e.contains("at most Dr = 6"),
        "{e}"
    );
}

#[test]
fn validate_writes_every_requests_times_on_request() {
    let Some(dir) = shared("validation/disksim/hp_c2247a") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let o = spindle(&[
        "validate",
        dir.to_str().unwrap(),
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
        "--requests",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.path().join("hp_c2247a.requests.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("index,op,buffer,lbn,sectors,measured_ms,simulated_ms"));
    assert_eq!(lines.len(), 1 + 9999, "a row per request");
    assert!(
        lines[1].starts_with("0,R,Miss,564347,2,14.095370,"),
        "{}",
        lines[1]
    );
    // The CDF figure (drawn by the plot module): the three curves, labelled, on a time axis.
    let svg = std::fs::read_to_string(out.path().join("hp_c2247a.cdf.svg")).unwrap();
    for label in [
        "measured (9999 requests)",
        "spindle, rms 0.0",
        "DiskSim 4.0, rms 0.090 ms",
        "service time (ms)",
        "fraction of requests",
    ] {
        assert!(svg.contains(label), "{label} missing from the CDF figure");
    }
    // Each curve in its own colour (measured blue, spindle vermillion, DiskSim green).
    for colour in ["#0072B2", "#D55E00", "#009E73"] {
        assert!(svg.contains(&format!("stroke=\"{colour}\"")), "{colour}");
    }
    let o = spindle(&["validate", dir.to_str().unwrap(), "--requests"]);
    assert_eq!(o.status.code(), Some(2), "--requests needs --out");
}

/// Writes a DiskSim trace of `n` random 4 KiB requests (70 % reads) over the Cheetah 9LP
/// arriving every `gap_ms`, and an experiment replaying it with `extra` trace keys.
fn random_trace(dir: &Path, n: u32, gap_ms: f64, extra: &str) -> String {
    let mut t = String::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let lba = (x % 17_000_000) / 8 * 8;
        let read = u32::from(x % 10 < 7);
        t.push_str(&format!("{:.6} 0 {lba} 8 {read}\n", f64::from(i) * gap_ms));
    }
    std::fs::write(dir.join("r.disksim"), t).unwrap();
    experiment(
        dir,
        &format!(
            "seed = 3\n[drive]\nmodel = \"cheetah9lp\"\n[array]\nscheduler = \"satf\"\n\
             [workload]\nkind = \"trace\"\n[workload.trace]\npath = \"r.disksim\"\n{extra}"
        ),
    )
}

/// The disk's capacity for these requests: a closed loop of 8 random 4 KiB requests, 70 %
/// reads (what a trace's queue reaches once it backs up under SATF).
fn capacity_iops(dir: &Path) -> f64 {
    let body = "seed = 3\n[drive]\nmodel = \"cheetah9lp\"\n[array]\nscheduler = \"satf\"\n\
                [workload]\nkind = \"closed\"\nqueue_depth = 8\nread_fraction = 0.7\n\
                size_bytes = 4096\n[run]\nrequests = 3000\n";
    let o = spindle(&["run", &experiment(dir, body), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["offered_iops"],
        serde_json::Value::Null,
        "a closed loop offers no rate"
    );
    assert_eq!(v["saturated"], false);
    v["throughput_iops"].as_f64().unwrap()
}

#[test]
fn a_trace_replayed_beyond_the_arrays_capacity_is_flagged_saturated() {
    let dir = tempfile::tempdir().unwrap();
    let capacity = capacity_iops(dir.path());
    // Half the capacity: keeps up (achieved within 2 % of offered), no warning.
    let exp = random_trace(dir.path(), 3000, 1000.0 / (0.5 * capacity), "");
    let o = spindle(&["run", &exp, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let (offered, achieved) = (
        v["offered_iops"].as_f64().unwrap(),
        v["achieved_iops"].as_f64().unwrap(),
    );
    assert!(
        (offered / (0.5 * capacity) - 1.0).abs() < 0.01,
        "{offered} vs {capacity}"
    );
    assert!(achieved > 0.98 * offered, "{achieved} of {offered}");
    assert_eq!(v["saturated"], false, "{v}");
    assert!(!stderr(&o).contains("saturated"), "{}", stderr(&o));

    // Three times the capacity: the array falls behind, and says so.
    let exp = random_trace(dir.path(), 3000, 1000.0 / (3.0 * capacity), "");
    let o = spindle(&["run", &exp, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // (SATF gains from the deep queue, so the disk answers more than its Q = 8 capacity,
    // but far from all.)
    assert_eq!(v["saturated"], true, "{v}");
    let achieved = v["achieved_iops"].as_f64().unwrap();
    assert!(achieved < 0.9 * v["offered_iops"].as_f64().unwrap(), "{v}");
    for d in v["disks"].as_array().unwrap() {
        assert!(d["utilization"].as_f64().unwrap() <= 1.0, "{d}");
    }
    assert!(stderr(&o).contains("saturated: offered"), "{}", stderr(&o));
    let o = spindle(&["run", &exp]);
    assert!(stdout(&o).contains("SATURATED"), "{}", stdout(&o));
}

#[test]
fn a_trace_requests_latency_includes_its_wait_for_a_host_slot() {
    let dir = tempfile::tempdir().unwrap();
    let capacity = capacity_iops(dir.path());
    let exp = random_trace(
        dir.path(),
        2000,
        1000.0 / (3.0 * capacity),
        "max_outstanding = 2\n",
    );
    let o = spindle(&["run", &exp, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let b = &v["breakdown_ms"];
    let parts: f64 = [
        "host_wait",
        "queue",
        "overhead",
        "seek",
        "rotation",
        "transfer",
        "switches",
    ]
    .iter()
    .map(|k| b[k].as_f64().unwrap())
    .sum();
    let mean = v["latency"]["all"]["mean_ms"].as_f64().unwrap();
    // The parts add up to the latency (the histogram's mean is kept to 3 significant
    // digits: 0.1 %), and the host wait is most of it: the requests queue in the host, not
    // in the array (at most 2 there).
    assert!((parts - mean).abs() < 1e-3 * mean, "{parts} vs {mean}");
    let host_wait = b["host_wait"].as_f64().unwrap();
    assert!(host_wait > 0.5 * mean, "host wait {host_wait} of {mean} ms");
    // Hundreds of requests wait in the host on average (arrivals at 3x what the array
    // answers); the window runs to the last completion, when the host queue is empty again.
    let q = &v["host_queue"];
    assert!(q["mean"].as_f64().unwrap() > 100.0, "{q}");
    assert_eq!(v["saturated"], true, "{v}");
}

/// Delayed replica writes defer work: a short run whose NVRAM table is still filling is
/// reported unsustainable, with its backlog; a table full at both ends of the window is a
/// steady state. `run.drain` finishes the owed work and says how long it took.
#[test]
fn a_growing_backlog_is_unsustainable_and_drain_reports_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let body = "seed = 2\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"raid-10\"\n\
                disks = 4\nds = 2\ndr = 1\ndm = 2\nscheduler = \"satf\"\nnvram_entries = 5000\n\
                [workload]\nkind = \"closed\"\nqueue_depth = 16\nread_fraction = 0.2\n\
                [run]\nrequests = 4000\n";
    let exp = experiment(dir.path(), body);
    let o = spindle(&["run", &exp, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["sustainable"], false, "{v}");
    let growth = v["backlog"]["growth"]["ops"].as_i64().unwrap();
    assert!(growth > 100, "{v}");
    assert!(v["backlog"]["nvram_entries"].as_u64().unwrap() > 100, "{v}");
    assert!(stderr(&o).contains("not sustainable"), "{}", stderr(&o));
    assert!(v["drain_s"].is_null());

    let o = spindle(&["run", &exp, "--json", "--set", "run.drain=true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let drain = d["drain_s"].as_f64().unwrap();
    // Each owed copy is a random write of a few ms: the backlog takes a while.
    assert!(drain > 0.1, "{d}");
    // Draining changes nothing inside the window.
    assert_eq!(d["latency"], v["latency"]);
    assert_eq!(d["throughput_iops"], v["throughput_iops"]);

    // A 50-entry table fills within the warm-up: full at both edges, a steady state.
    let o = spindle(&["run", &exp, "--json", "--set", "array.nvram_entries=50"]);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["sustainable"], true, "{s}");
    assert!(s["backlog"]["nvram_entries"].as_u64().unwrap() <= 50, "{s}");
}

#[test]
fn run_says_how_fast_it_simulated_unless_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), SMALL);
    let o = spindle(&["run", &exp]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("simulated 3000 requests in ") && err.contains(" requests/s"),
        "{err}"
    );
    let o = spindle(&["run", &exp, "--quiet"]);
    assert!(!stderr(&o).contains("simulated"), "{}", stderr(&o));
}

/// A host queue of one (`max_outstanding = 1`) with requests arriving together: each waits
/// in the host and starts the instant its predecessor completes. The driver once left the
/// array's answer to a request issued from the host unpolled, so the run ended (a panic)
/// with requests still waiting, or a disk started late, at the next event.
#[test]
fn a_host_queue_of_one_issues_each_request_as_the_last_completes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.trace");
    std::fs::write(
        &trace,
        "0.0 0 0 16 0\n0.0 0 1000 16 0\n0.0 0 2000 16 0\n5.0 0 3000 16 1\n",
    )
    .unwrap();
    let exp = experiment(
        dir.path(),
        &format!(
            "[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"jbod\"\ndisks = 1\n[workload]\nkind = \"trace\"\n[workload.trace]\npath = \"{}\"\nformat = \"disksim\"\nmax_outstanding = 1\n",
            trace.display()
        ),
    );
    let o = spindle(&["run", "--quiet", &exp, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["requests"], 4);
    // One disk, one request at a time, each issued at its predecessor's completion: the
    // disk is never idle while requests wait, so it is busy from the first arrival to
    // the last completion.
    let util = v["disks"][0]["utilization"].as_f64().unwrap();
    assert!(util > 0.999, "the disk idled while requests waited: {util}");
    assert!(v["breakdown_ms"]["host_wait"].as_f64().unwrap() > 0.0);
}
