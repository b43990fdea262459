//! `spindle track-align` and `[array] track_aligned` from the command line
//! (docs/track_aligned.md): every library drive gets a row, zero latency raises the aligned
//! efficiency, the RAID table has the one-track unit, and bad arguments are refused.

mod common;
use common::*;

#[test]
fn every_library_drive_reports_its_aligned_to_unaligned_ratio() {
    let o = spindle(&["track-align", "--requests", "200", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let rows = rows.as_array().expect("rows");
    let listed = spindle(&["drives", "list"]);
    assert_eq!(
        rows.len() + 1,
        stdout(&listed).lines().count(),
        "one row per drive"
    );
    for r in rows {
        let id = r["drive"].as_str().expect("drive");
        let zl = &r["zero_latency"];
        let aligned = zl["aligned"]["transfer_ns"]
            .as_f64()
            .expect("aligned transfer");
        assert!(aligned > 0.0, "{id}");
        // Aligned whole tracks on a zero-latency drive: under one sector of rotation each.
        let rot = zl["aligned"]["rotation_ns"].as_f64().unwrap();
        let n = zl["aligned"]["requests"].as_f64().unwrap();
        assert!(rot / n < 300_000.0, "{id}: {} ns", rot / n);
    }
    let atlas = rows
        .iter()
        .find(|r| r["drive"] == "atlas10kv")
        .expect("atlas10kv");
    assert_eq!(atlas["zero_latency_in_file"], true);
}

#[test]
fn the_table_and_the_raid_table_print() {
    let o = spindle(&[
        "track-align",
        "atlas10k",
        "--requests",
        "100",
        "--span",
        "0.05",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("atlas10k") && out.contains("5 % of each disk"),
        "{out}"
    );
    let o = spindle(&[
        "track-align",
        "atlas10kv",
        "--raid",
        "5",
        "--disks",
        "5",
        "--requests",
        "100",
        "--units-kib",
        "64",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("RAID-5 of 5 disks") && out.contains("one track"),
        "{out}"
    );
}

#[test]
fn bad_arguments_are_refused_naming_them() {
    for (args, want) in [
        (vec!["track-align", "--span", "0"], "--span"),
        (vec!["track-align", "nosuchdrive"], "nosuchdrive"),
        (
            vec!["track-align", "atlas10k", "--raid", "5", "--disks", "2"],
            "at least 3 disks",
        ),
        (
            vec!["track-align", "atlas10k", "--raid", "0", "--units-kib", "0"],
            "--units-kib",
        ),
    ] {
        let o = spindle(&args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn the_track_aligned_example_runs_and_beats_fixed_units() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/track_aligned/raid0_track_vs_fixed.toml"
    );
    let o = spindle(&["run", example, "--json", "--set", "run.requests=800"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(r["layout"].as_str().unwrap().contains("track-aligned"));
    let rot = r["breakdown_ms"]["rotation"].as_f64().unwrap();
    assert!(rot < 0.02, "rotation {rot} ms");
    for row in r["compare"].as_array().unwrap() {
        assert!(
            r["throughput_iops"].as_f64() > row["throughput_iops"].as_f64(),
            "{}",
            row["label"]
        );
    }
}

#[test]
fn the_track_aligned_raid5_example_runs_and_beats_fixed_units_on_atlas10kv() {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/track_aligned/raid5_track_vs_fixed.toml"
    );
    let o = spindle(&["run", example, "--json", "--set", "run.requests=60"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(r["layout"].as_str().unwrap().contains("track-aligned"));
    let rot = r["breakdown_ms"]["rotation"].as_f64().unwrap();
    assert!(rot < 0.05, "rotation {rot} ms");
    let mb = |row: &serde_json::Value| row["throughput_mb_s"].as_f64().unwrap();
    let rows = r["compare"].as_array().unwrap();
    // atlas10kv (zero latency): the aligned reads and writes beat every fixed unit.
    let aligned_writes = rows
        .iter()
        .find(|row| row["label"] == "atlas10kv aligned wr")
        .expect("the writes row");
    for row in rows.iter().filter(|row| {
        let l = row["label"].as_str().unwrap();
        l.starts_with("atlas10kv") && !l.contains("aligned")
    }) {
        let best = if row["label"].as_str().unwrap().ends_with("wr") {
            mb(aligned_writes)
        } else {
            mb(&r)
        };
        assert!(best > 1.3 * mb(row), "{}", row["label"]);
    }
}
