//! A failed disk of a mirrored layout from the CLI (docs/failures.md).

use std::path::Path;
mod common;
use common::{spindle, stderr};

fn experiment(dir: &Path, body: &str) -> String {
    let path = dir.join("exp.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// A 4-disk RAID-10 holding 20 MB; disk 1 fails at 10 s (inside the measured window).
fn body(layout: &str, extra: &str) -> String {
    format!(
        "seed = 2\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"{layout}\"\n\
         ds = 2\ndr = 1\ndm = 2\ndata_set_bytes = 20000000\nfailed_disk = 1\nfail_at_ms = 10000\n{extra}\
         [workload]\nkind = \"open\"\nrate_iops = 100\nread_fraction = 0.6\nsize_bytes = 8192\n\
         [run]\nrequests = 3000\ndrain = true\n"
    )
}

#[test]
fn a_mirrored_disk_is_rebuilt_and_the_report_says_how_long_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let exp = experiment(dir.path(), &body("raid-10", ""));
    let o = spindle(&["run", &exp, "--json", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["rebuild"];
    assert_eq!(r["disk"].as_u64(), Some(1));
    assert_eq!(r["failed_at_s"].as_f64(), Some(10.0));
    assert_eq!(r["stripes_done"], r["stripes_total"], "{r}");
    // 10 MB of column data in 256 KiB steps.
    assert_eq!(
        r["stripes_total"].as_u64(),
        Some(10_000_000u64.div_ceil(262_144))
    );
    assert!(v["rebuild_s"].as_f64().unwrap() > 0.0);
    assert!(r["during"]["requests"].as_u64().unwrap() > 0, "{r}");
    for (disk, role) in [(1, "spare"), (0, "source")] {
        let c = &v["disks"][disk]["utilization_by_cause"];
        assert!(c["rebuild"].as_f64().unwrap() > 0.0, "{role}: {c}");
    }
    let c = &v["disks"][2]["utilization_by_cause"];
    assert_eq!(c["rebuild"].as_f64(), Some(0.0), "the other column: {c}");
}

#[test]
fn layouts_that_lose_data_or_are_not_built_say_so() {
    let dir = tempfile::tempdir().unwrap();
    for (layout, extra, says) in [
        ("sr-array", "", "loses its data"),
        ("striping", "", "loses its data"),
        ("raid-10", "rebuild_rate_mb_s = 0.0001\n", "at least 0.001"),
    ] {
        let b = body(layout, extra);
        let b = if layout == "raid-10" {
            b
        } else {
            b.replace("dm = 2\n", "dm = 1\n")
        };
        let o = spindle(&["run", &experiment(dir.path(), &b), "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{layout}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("array.") && e.contains(says), "{layout}: {e}");
    }
    // Eager-writing arrays: one copy (Dm = 1) loses data; disk 0 holds the map log, whose
    // rebuild is not built.
    for (dm, disk, says) in [(1, 1, "loses its data"), (2, 0, "map log")] {
        let b = format!(
            "seed = 1\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"ew-array\"\n\
             dm = {dm}\nds = 1\ndd = 2\nfailed_disk = {disk}\n[workload]\nkind = \"closed\"\n\
             [run]\nrequests = 10\n"
        );
        let o = spindle(&["run", &experiment(dir.path(), &b), "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("array.failed_disk") && e.contains(says), "{e}");
    }
}

/// Latent sector errors (docs/failures.md): a mirror repairs what it meets; striping loses
/// those reads, flags the row and warns; a bad rate or a layout without the model is an
/// error naming the key.
#[test]
fn latent_sector_errors_are_repaired_from_a_mirror_or_reported_as_data_lost() {
    let dir = tempfile::tempdir().unwrap();
    let no_failure = |layout: &str, dm: u32, extra: &str| {
        body(layout, extra)
            .replace("failed_disk = 1\nfail_at_ms = 10000\n", "")
            .replace("dm = 2", &format!("dm = {dm}"))
    };
    let exp = experiment(
        dir.path(),
        &no_failure("raid-10", 2, "latent_error_rate = 0.001\n"),
    );
    let o = spindle(&["run", &exp, "--json", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let l = &v["latent"];
    assert!(l["errors"].as_u64().unwrap() > 0, "{l}");
    assert!(l["repairs"].as_u64().unwrap() > 0, "{l}");

    let exp = experiment(
        dir.path(),
        &no_failure("striping", 1, "latent_error_rate = 0.001\n"),
    );
    let o = spindle(&["run", &exp, "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("DATA LOST"), "{out}");
    assert!(
        stderr(&o).contains("answered without their data"),
        "{}",
        stderr(&o)
    );

    for (layout, dm, rate, says) in [
        ("raid-10", 2, "1.5", "array.latent_error_rate"),
        ("raid-10", 2, "0", "array.latent_error_rate"),
        ("raid-5", 1, "0.001", "not yet"),
    ] {
        let b = no_failure(layout, dm, &format!("latent_error_rate = {rate}\n"));
        let b = if layout == "raid-5" {
            b.replace("ds = 2\ndr = 1\ndm = 1\n", "disks = 5\n")
        } else {
            b
        };
        let exp = experiment(dir.path(), &b);
        let o = spindle(&["run", &exp, "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{layout} {rate}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(says) && stderr(&o).contains("latent_error_rate"),
            "{layout} {rate}: {}",
            stderr(&o)
        );
    }
}

/// An EW-Array and a DDM with latent sector errors and a failed disk rebuilt
/// (docs/failures.md): the report counts the errors met and repaired; a rate that leaves
/// too few good free locations for eager writing is an error naming the key.
#[test]
fn eager_writing_arrays_repair_latent_errors_and_report_them() {
    let dir = tempfile::tempdir().unwrap();
    let ew = |layout: &str, extra: &str| {
        format!(
            "seed = 2\n[drive]\nmodel = \"st39133lwv\"\n[array]\nlayout = \"{layout}\"\n\
             dm = 2\nds = 1\ndd = 2\ndata_set_bytes = 20000000\nfailed_disk = 1\n\
             fail_at_ms = 10000\n{extra}[workload]\nkind = \"open\"\nrate_iops = 100\n\
             read_fraction = 0.6\nsize_bytes = 8192\n[run]\nrequests = 3000\ndrain = true\n"
        )
    };
    for layout in ["ew-array", "ddm"] {
        let exp = experiment(dir.path(), &ew(layout, "latent_error_rate = 0.001\n"));
        let o = spindle(&["run", &exp, "--json", "--quiet"]);
        assert!(o.status.success(), "{layout}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let l = &v["latent"];
        assert!(l["errors"].as_u64().unwrap() > 0, "{layout}: {l}");
        assert!(l["repairs"].as_u64().unwrap() > 0, "{layout}: {l}");
        assert!(
            v["rebuild"]["done_s"].is_number(),
            "{layout}: {}",
            v["rebuild"]
        );
    }
    // Dd = 2 leaves half of each band free: 0.2 of sectors makes 83 % of locations bad.
    let exp = experiment(dir.path(), &ew("ew-array", "latent_error_rate = 0.2\n"));
    let o = spindle(&["run", &exp, "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("array.latent_error_rate") && stderr(&o).contains("raise Dd"),
        "{}",
        stderr(&o)
    );
}
