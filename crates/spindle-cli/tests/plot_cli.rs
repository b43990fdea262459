//! `spindle plot`: figures of fresh results (sweep, run, time series), deterministic bytes,
//! saturated points marked, clear errors that leave no half-written file.

mod common;
use common::{spindle, stderr};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn write_stdout(args: &[&str], to: &Path) {
    let o = spindle(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    std::fs::write(to, &o.stdout).unwrap();
}

fn plot(args: &[&str]) -> std::process::Output {
    let mut all = vec!["plot"];
    all.extend_from_slice(args);
    spindle(&all)
}

#[test]
fn a_fresh_sweep_plots_the_same_bytes_twice_in_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = root().join("examples/sweep_queue_depth.toml");
    let csv = dir.path().join("q.csv");
    let json = dir.path().join("q.json");
    write_stdout(
        &["--quiet", "sweep", sweep.to_str().unwrap(), "--csv"],
        &csv,
    );
    write_stdout(
        &["--quiet", "sweep", sweep.to_str().unwrap(), "--json"],
        &json,
    );
    let a = dir.path().join("a.svg");
    let b = dir.path().join("b.svg");
    let c = dir.path().join("c.svg");
    for (input, out) in [(&csv, &a), (&csv, &b), (&json, &c)] {
        let o = plot(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let svg = std::fs::read_to_string(&a).unwrap();
    assert_eq!(
        svg,
        std::fs::read_to_string(&b).unwrap(),
        "same input, same bytes"
    );
    // The titles differ (the file's name); the drawing is the same from CSV and JSON.
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.contains(">q<"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&svg), body(&std::fs::read_to_string(&c).unwrap()));
    // Two panels (throughput, mean latency) against the queue depth, with units; six
    // points each (Q = 1 … 32).
    for label in [
        "throughput (IOPS)",
        "mean latency (ms)",
        "queue depth (requests outstanding)",
    ] {
        assert!(svg.contains(label), "{label} missing");
    }
    // 12 data markers plus one legend marker per panel.
    assert_eq!(svg.matches("<circle").count(), 12 + 2, "{svg}");
    let png = dir.path().join("q.png");
    let o = plot(&[csv.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let o = plot(&[csv.to_str().unwrap(), "-o", png.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(
        bytes,
        std::fs::read(&png).unwrap(),
        "PNG bytes are deterministic too"
    );
}

#[test]
fn saturated_points_are_hollow_and_in_the_legend() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("open.toml");
    // One ST39133LWV disk answers about 110 random reads a second at Q = 1 and ~170 with a
    // deep queue: 60 IOPS keeps up, 1000 IOPS cannot.
    std::fs::write(
        &toml,
        "seed = 1\n[drive]\nmodel = \"st39133lwv\"\n[array]\nscheduler = \"satf\"\n\
         [workload]\nkind = \"open\"\nread_fraction = 1.0\nrate_iops = 60.0\n[run]\nrequests = 3000\n\
         [[axis]]\nkey = \"workload.rate_iops\"\nvalues = [60.0, 1000.0]\n",
    )
    .unwrap();
    let csv = dir.path().join("open.csv");
    write_stdout(&["--quiet", "sweep", toml.to_str().unwrap(), "--csv"], &csv);
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.contains(",true,"),
        "1000 IOPS saturates one disk: {text}"
    );
    let svg = dir.path().join("open.svg");
    let o = plot(&[csv.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("saturated (hollow)"), "legend entry");
    // A hollow marker is a circle with no fill: the saturated point in each of the two
    // panels, and each panel's legend entry.
    let hollow = svg
        .lines()
        .filter(|l| l.contains("<circle") && l.contains("fill=\"none\""))
        .count();
    assert_eq!(hollow, 2 + 2, "{svg}");
}

#[test]
fn a_run_report_and_a_time_series_plot() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let series = dir.path().join("series.csv");
    let toml = root().join("examples/look_vs_queue.toml");
    write_stdout(
        &[
            "--quiet",
            "run",
            toml.to_str().unwrap(),
            "--json",
            "--series",
            series.to_str().unwrap(),
        ],
        &json,
    );
    for input in [&json, &series] {
        let out = dir.path().join("f.svg");
        let o = plot(&[input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", input.display(), stderr(&o));
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"));
        if input == &series {
            assert!(svg.contains("virtual time (s)") && svg.contains("<polyline"));
        } else {
            assert!(svg.contains("throughput (IOPS)"));
        }
    }
}

#[test]
fn bad_inputs_are_errors_naming_the_file_and_leave_the_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("s.csv");
    std::fs::write(&csv, "Q,throughput_iops,mean_ms\n1,100,10\n2,150,13\n").unwrap();
    let out = dir.path().join("fig.svg");
    std::fs::write(&out, "old").unwrap();
    let cases: [(&[&str], String); 2] = [
        (
            &["--y", "p42_ms"],
            format!("{}: no column \"p42_ms\"", csv.display()),
        ),
        (
            &["--x", "nope"],
            format!("{}: no column \"nope\"", csv.display()),
        ),
    ];
    for (extra, want) in &cases {
        let mut args = vec![csv.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let o = plot(&args);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(want.as_str()), "{}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "old",
            "not replaced"
        );
    }
    // An unknown results format, an unknown figure format.
    let junk = dir.path().join("junk.csv");
    std::fs::write(&junk, "a,b\n1,2\n").unwrap();
    let o = plot(&[junk.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{}: not a results file", junk.display())),
        "{}",
        stderr(&o)
    );
    let pdf = dir.path().join("fig.pdf");
    let o = plot(&[csv.to_str().unwrap(), "-o", pdf.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown figure format"),
        "{}",
        stderr(&o)
    );
    // A directory is refused; no temporary file is left anywhere.
    let o = plot(&[csv.to_str().unwrap(), "-o", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains("spindle-tmp")),
        "{names:?}"
    );
    assert!(!pdf.exists());
}
