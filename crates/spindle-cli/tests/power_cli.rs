//! `spindle run` with power states (docs/power.md): the example's JSON carries the energy
//! fields under their documented names, the policies differ as the paper's drive predicts,
//! the table and CSV show them, and a drive without power data shows none.

mod common;
use common::*;

fn example() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/power/timeout_vs_never.toml"
    )
    .to_string()
}

#[test]
fn the_power_example_reports_energy_per_policy() {
    let o = spindle(&["run", &example(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let rows: Vec<&serde_json::Value> = std::iter::once(&r)
        .chain(r["compare"].as_array().expect("compare rows"))
        .collect();
    assert_eq!(rows.len(), 3);
    let mut mean_w = Vec::new();
    for row in &rows {
        let e = &row["energy"];
        let total = e["total_j"].as_f64().expect("energy.total_j");
        let window = row["window_s"].as_f64().expect("window_s");
        assert!((e["mean_w"].as_f64().expect("energy.mean_w") - total / window).abs() < 1e-6);
        let d = &row["disks"][0];
        assert!((d["energy_j"].as_f64().expect("disks[0].energy_j") - total).abs() < 1e-6);
        let s = &d["state_s"];
        let sum: f64 = [
            "active",
            "idle",
            "standby",
            "unloaded",
            "low_rpm",
            "transition",
        ]
        .iter()
        .map(|k| s[k].as_f64().unwrap_or_else(|| panic!("state_s.{k}")))
        .sum();
        assert!((sum - window).abs() < 1e-6, "{sum} vs {window}");
        assert!(d["spin_ups"].as_u64().is_some());
        mean_w.push(e["mean_w"].as_f64().expect("mean_w"));
    }
    // Never: idle draw (22.3 W) plus a sliver of active; spinning down after 10 s of idle
    // at one request per 100 s roughly halves it.
    assert!((mean_w[0] - 22.3).abs() < 0.05, "{mean_w:?}");
    assert!(mean_w[1] < 0.6 * mean_w[0], "{mean_w:?}");
    assert_eq!(rows[0]["disks"][0]["spin_ups"], 0);
    assert!(rows[1]["disks"][0]["spin_ups"].as_u64().expect("spin_ups") > 100);
    // The spin-up shows in the response time: the median request waited for it.
    assert!(rows[1]["latency"]["all"]["p50_ms"].as_f64().expect("p50") > 20_000.0);

    let t = spindle(&["run", &example()]);
    assert!(stdout(&t).contains("energy timeout 10 s"), "{}", stdout(&t));
    let c = spindle(&["run", &example(), "--csv"]);
    let csv = stdout(&c);
    assert!(csv
        .lines()
        .next()
        .expect("header")
        .ends_with(",energy_j,mean_w,spin_ups"));
}

#[test]
fn a_drive_without_power_data_reports_none_and_refuses_a_policy() {
    let o = spindle(&["run", "--set", "workload.queue_depth=2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("energy") && !out.contains("state_s"));
    let o = spindle(&[
        "run",
        &example(),
        "--set",
        "drive.model=st39133lwv",
        "--set",
        "power.policy=timeout",
        "--set",
        "power.timeout_s=5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no power data"), "{}", stderr(&o));
}
