//! The paged disk's cleaner (docs/paged.md, issue 19) from the CLI: its keys, errors naming
//! them, and the study's example run.

use std::path::Path;
mod common;
use common::{spindle, stderr};

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn experiment(dir: &Path, array: &str) -> String {
    let path = dir.join("exp.toml");
    std::fs::write(
        &path,
        format!(
            "seed = 2\n[drive]\nmodel = \"ibm18es\"\n[array]\n{array}\n\
             [workload]\nkind = \"open\"\nrate_iops = 20.0\nread_fraction = 0.4\n\
             size_bytes = 8192\nalignment_bytes = 8192\n[run]\nrequests = 3000\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn bad_cleaner_keys_are_errors_that_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let paged = "layout = \"paged\"\nreplicas = 4\n";
    for (array, key) in [
        (format!("{paged}cleaner = \"sometimes\""), "array.cleaner"),
        (
            format!("{paged}cleaner = \"idle\"\ncleaner_idle_ms = -1.0"),
            "array.cleaner_idle_ms",
        ),
        (
            format!("{paged}cleaner = \"nightly\"\ncleaner_window = [1.0]"),
            "array.cleaner_window",
        ),
        (
            format!("{paged}cleaner = \"nightly\"\ncleaner_window = [0.0, 1e9]"),
            "array.cleaner_window",
        ),
        (
            format!("{paged}cleaner = \"idle\"\ncleaner_max_tenants = 3"),
            "array.cleaner_max_tenants",
        ),
        (
            "layout = \"mirror\"\ndisks = 2\ncleaner = \"idle\"".to_string(),
            "array.cleaner",
        ),
    ] {
        let exp = experiment(dir.path(), &array);
        let o = spindle(&["run", &exp]);
        assert_eq!(o.status.code(), Some(2), "{array}: {}", stderr(&o));
        assert!(stderr(&o).contains(key), "{array}: {}", stderr(&o));
    }
}

#[test]
fn each_policy_cleans_charges_cleaning_and_reports_the_tenants() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, cleans) in [
        ("", false),
        ("cleaner = \"idle\"\ncleaner_idle_ms = 50", true),
        ("cleaner = \"dirtiness\"\ncleaner_max_tenants = 100", true),
        ("cleaner = \"piggyback\"", true),
        ("cleaner = \"nightly\"\ncleaner_window = [0, 3600]", true),
        (
            "cleaner = \"nightly\"\ncleaner_window = [3600, 3600]",
            false,
        ),
    ] {
        let exp = experiment(
            dir.path(),
            &format!("layout = \"paged\"\nreplicas = 4\n{extra}"),
        );
        let o = spindle(&["run", &exp, "--json", "--quiet"]);
        assert!(o.status.success(), "{extra}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
        let cleaning = v["disks"][0]["utilization_by_cause"]["cleaning"]
            .as_f64()
            .unwrap();
        let p = &v["paged"];
        let cleaned = p["cleaned"].as_u64().unwrap();
        let end = p["tenants_end"].as_u64().unwrap();
        assert!(v["disks"][0]["utilization"].as_f64().unwrap() <= 1.0);
        if cleans {
            assert!(cleaning > 0.0 && cleaned > 0, "{extra}: {p}");
        } else {
            assert!(cleaning == 0.0 && cleaned == 0, "{extra}: {p}");
            assert!(end > p["tenants_start"].as_u64().unwrap(), "{extra}: {p}");
        }
    }
}

#[test]
fn the_study_example_runs() {
    let file = repo().join("examples/paged/cleaner/study.toml");
    let o = spindle(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--json",
        "--set",
        "run.requests=3000",
        "--set",
        "workload.rate_iops=25",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let rows = v["compare"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(
        rows[1]["layout"],
        "paged 1x4-way 8kb bad-tenants cleaner=idle"
    );
    assert!(v.get("paged").is_some());
}
