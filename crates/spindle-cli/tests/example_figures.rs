//! Every example README shows a figure that exists, and `scripts/example_figures.sh` (which
//! made them) regenerates two of them from fresh runs with this build's `spindle plot`: the
//! same series and as many points as the committed figures. Bytes are not compared: a model
//! change that moves a number would fail it, while what this checks is that the figure is
//! made by the script from the example, not drawn by hand.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `![…](name.svg)` images of a README.
fn figures(readme: &str) -> Vec<String> {
    readme
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|target| target.ends_with(".svg") && !target.contains("://"))
        .map(String::from)
        .collect()
}

/// The text of every `<text>` element: titles, axis labels, ticks and legend entries.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = t.split_once('>')?.1;
            Some(body.split("</text>").next()?.trim().to_string())
        })
        .collect()
}

#[test]
fn every_example_readme_shows_a_figure_that_exists() {
    let mut readmes = 0;
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let dir = entry.unwrap().path();
        let readme = dir.join("README.md");
        if !readme.is_file() {
            continue;
        }
        readmes += 1;
        let text = std::fs::read_to_string(&readme).unwrap();
        let figs = figures(&text);
        assert!(!figs.is_empty(), "{} shows no figure", readme.display());
        for f in figs {
            let path = dir.join(&f);
            let svg = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {f}: {e}", readme.display()));
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            assert!(
                svg.contains("<polyline") || svg.contains("<circle"),
                "{}: no data drawn",
                path.display()
            );
        }
    }
    assert!(readmes >= 7, "{readmes} example READMEs");
}

fn regenerate(dirs: &str, out: &Path) {
    let o = Command::new("bash")
        .arg(root().join("scripts/example_figures.sh"))
        .args(["--only", dirs, "--out"])
        .arg(out)
        .env("SPINDLE", env!("CARGO_BIN_EXE_spindle"))
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "example_figures.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_script_regenerates_two_example_figures_from_fresh_runs() {
    let out = tempfile::tempdir().unwrap();
    regenerate("sr_array,track_aligned", out.path());
    for (dir, name) in [
        ("sr_array", "fig4_9_read_write_mix"),
        ("track_aligned", "raid0_track_vs_fixed"),
    ] {
        let fresh = std::fs::read_to_string(out.path().join(dir).join(format!("{name}.svg")))
            .expect("a fresh figure");
        let committed = std::fs::read_to_string(
            root()
                .join("examples")
                .join(dir)
                .join(format!("{name}.svg")),
        )
        .unwrap();
        // Same title, axis labels and legend (ticks may move with the numbers: those are
        // the texts that parse as numbers), and the same number of markers.
        let words = |s: &str| -> Vec<String> {
            texts(s)
                .into_iter()
                .filter(|t| t.parse::<f64>().is_err())
                .collect()
        };
        assert_eq!(words(&fresh), words(&committed), "{dir}/{name}.svg");
        assert_eq!(
            fresh.matches("<circle").count(),
            committed.matches("<circle").count(),
            "{dir}/{name}.svg"
        );
    }
    // The example report is made alongside the SR-Array figure.
    let html = std::fs::read_to_string(out.path().join("sr_array/report.html")).unwrap();
    assert!(html.contains("<figure class=\"plot\"><svg") && html.contains("reproduced"));
}
