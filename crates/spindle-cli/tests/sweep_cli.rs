//! `spindle sweep` as a user runs it: rows, agreement with `spindle run`, determinism, errors.

use std::path::Path;
mod common;
use common::{spindle, stderr, stdout};

fn write(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

const BASE: &str = "seed = 5\n[drive]\nmodel = \"cheetah9lp\"\n[array]\nscheduler = \"satf\"\n[workload]\nkind = \"closed\"\nqueue_depth = 4\nread_fraction = 0.6\n[run]\nrequests = 600\n";

/// 3 × 2 points: a scalar axis and a compound one.
const AXES: &str = r#"
[[axis]]
key = "workload.queue_depth"
values = [1, 4, 16]

[[axis]]
name = "config"
points = [
  { label = "2 disks LOOK", set = { "array.disks" = 2, "array.scheduler" = "look" } },
  { label = "1 disk SATF", set = { "workload.read_fraction" = 1.0 } },
]
"#;

#[test]
fn one_row_per_point_carrying_its_axis_values_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", &format!("{BASE}{AXES}"));
    let combos = [
        ("1", "2 disks LOOK"),
        ("1", "1 disk SATF"),
        ("4", "2 disks LOOK"),
        ("4", "1 disk SATF"),
        ("16", "2 disks LOOK"),
        ("16", "1 disk SATF"),
    ];

    let o = spindle(&["sweep", &file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().skip(2).take(6).collect();
    for (row, (q, label)) in rows.iter().zip(combos) {
        let mut words = row.split_whitespace();
        assert_eq!(words.next(), Some(q), "{out}");
        assert!(row.contains(label), "{label} not in {row}");
    }
    assert_eq!(out.lines().count(), 2 + 6 + 1, "{out}");

    let o = spindle(&["sweep", &file, "--csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "workload.queue_depth,config,throughput_iops,throughput_mb_s,mean_ms,p50_ms,p95_ms,p99_ms,utilization,seek_ms,rotation_ms,offered_iops,achieved_iops,saturated,sustainable"
    );
    assert_eq!(lines.len(), 1 + 6);
    for (line, (q, label)) in lines[1..].iter().zip(combos) {
        assert!(line.starts_with(&format!("{q},{label},")), "{line}");
    }

    let o = spindle(&["sweep", &file, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let records: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(records.len(), 6);
    for (r, (q, label)) in records.iter().zip(combos) {
        assert_eq!(r["workload.queue_depth"].to_string(), q);
        assert_eq!(r["config"], label);
        for f in [
            "throughput_iops",
            "throughput_mb_s",
            "mean_ms",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "utilization",
        ] {
            assert!(r[f].as_f64().is_some_and(|v| v > 0.0), "{f} in {r}");
        }
        // A closed loop offers no rate and cannot fall behind.
        assert!(
            r["offered_iops"].is_null() && r["achieved_iops"].is_null(),
            "{r}"
        );
        assert_eq!(r["saturated"], false, "{r}");
        assert!(r["sustainable"].is_boolean(), "{r}");
    }
}

#[test]
fn a_point_gives_the_numbers_of_spindle_run_with_its_keys_set() {
    let dir = tempfile::tempdir().unwrap();
    let sweep_file = write(dir.path(), "s.toml", &format!("{BASE}{AXES}"));
    let run_file = write(dir.path(), "r.toml", BASE);
    let o = spindle(&["sweep", &sweep_file, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Point 5: Q = 16, "2 disks LOOK".
    let o = spindle(&[
        "run",
        &run_file,
        "--json",
        "--set",
        "workload.queue_depth=16",
        "--set",
        "array.disks=2",
        "--set",
        "array.scheduler=look",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let point = &records[4];
    assert_eq!(point["throughput_iops"], run["throughput_iops"]);
    assert_eq!(point["throughput_mb_s"], run["throughput_mb_s"]);
    for f in ["mean_ms", "p50_ms", "p95_ms", "p99_ms"] {
        assert_eq!(point[f], run["latency"]["all"][f], "{f}");
    }
    let disks = run["disks"].as_array().unwrap();
    let util = disks
        .iter()
        .map(|d| d["utilization"].as_f64().unwrap())
        .sum::<f64>()
        / disks.len() as f64;
    assert_eq!(point["utilization"].as_f64(), Some(util));
}

#[test]
fn same_file_and_seed_give_identical_bytes_whatever_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", &format!("{BASE}{AXES}"));
    let a = spindle(&["sweep", &file, "--json"]);
    let b = spindle(&["sweep", &file, "--json", "--jobs", "1"]);
    let c = spindle(&["sweep", &file, "--json", "--jobs", "3"]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.stdout, c.stdout);
    let t1 = spindle(&["sweep", &file]);
    let t2 = spindle(&["sweep", &file]);
    assert_eq!(t1.stdout, t2.stdout);
    let other = spindle(&["sweep", &file, "--json", "--set", "seed=6"]);
    assert!(other.status.success(), "{}", stderr(&other));
    assert_ne!(a.stdout, other.stdout, "another seed, other numbers");
}

#[test]
fn a_bad_value_in_the_last_point_fails_before_any_runs_naming_axis_value_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "s.toml",
        &format!(
            "{BASE}[[axis]]\nkey = \"run.requests\"\nvalues = [1000000000, 2000000000]\n[[axis]]\nkey = \"workload.queue_depth\"\nvalues = [1, 2, 0]\n"
        ),
    );
    let start = std::time::Instant::now();
    let o = spindle(&["sweep", &file, "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        start.elapsed().as_secs() < 20,
        "checked before billions of requests ran"
    );
    let e = stderr(&o);
    for part in [
        "s.toml: line 17:",
        "point 3 of 6",
        "workload.queue_depth = 0",
        "(from axis workload.queue_depth)",
        "must be >= 1, got 0",
    ] {
        assert!(e.contains(part), "{part:?} not in {e}");
    }
    assert!(stdout(&o).is_empty());
}

#[test]
fn an_unknown_key_in_an_axis_is_named_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "s.toml",
        &format!(
            "{BASE}[[axis]]\nname = \"c\"\npoints = [{{ label = \"x\", set = {{ \"array.diskz\" = 2 }} }}]\n"
        ),
    );
    let o = spindle(&["sweep", &file]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.starts_with("spindle: "), "{e}");
    assert!(e.contains("diskz") && e.contains("line 14"), "{e}");
}

#[test]
fn compare_in_a_sweep_is_refused_and_run_on_a_sweep_points_to_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "s.toml",
        &format!("{BASE}{AXES}[[compare]]\nlabel = \"LOOK\"\nset = {{ \"array.scheduler\" = \"look\" }}\n"),
    );
    let o = spindle(&["sweep", &file]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("[[compare]]") && e.contains("compound [[axis]]"),
        "{e}"
    );

    let file = write(dir.path(), "t.toml", &format!("{BASE}{AXES}"));
    let o = spindle(&["run", &file]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("spindle sweep"), "{e}");

    let file = write(dir.path(), "u.toml", BASE);
    let o = spindle(&["sweep", &file]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no [[axis]]"), "{}", stderr(&o));
}

#[test]
fn the_example_sweep_is_valid() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sweep_queue_depth.toml"
    );
    // Small request counts keep it fast; the file itself is checked as written.
    let o = spindle(&["sweep", example, "--csv", "--set", "run.requests=400"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 1 + 6, "{out}");
    let iops: Vec<f64> = out
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(iops[5] > iops[0], "LOOK gains with the queue: {iops:?}");
}
