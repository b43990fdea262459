//! `spindle report`: a self-contained page, checked in a real browser. Headless Chromium
//! (Debian's `chromium`) loads the page from a file with networking off, runs its inline
//! script, and prints the rendered DOM (`--dump-dom`); the script records on `<body>` how many
//! figures were laid out with a size and hold drawn data, and how many table rows there are.
//! Without chromium the browser half skips with a message, unless `SPINDLE_REQUIRE_BROWSER=1`
//! (CI installs the package and sets it), which makes that a failure.

mod common;
use common::{spindle, stderr};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn require_browser() -> bool {
    std::env::var("SPINDLE_REQUIRE_BROWSER").is_ok_and(|v| v == "1")
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .filter_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
        .next()
}

fn write_stdout(args: &[&str], to: &Path) {
    let o = spindle(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    std::fs::write(to, &o.stdout).unwrap();
}

/// The value of `name="…"` in `tag`.
fn attr(tag: &str, name: &str) -> Option<String> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    Some(tag[at..].split('"').next()?.to_string())
}

#[test]
fn the_report_holds_its_figures_and_tables_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let sweep_toml = root().join("examples/sweep_queue_depth.toml");
    let run_toml = root().join("examples/look_vs_queue.toml");
    let sweep = dir.path().join("sweep.csv");
    let run = dir.path().join("run.json");
    let series = dir.path().join("series.csv");
    write_stdout(
        &["--quiet", "sweep", sweep_toml.to_str().unwrap(), "--csv"],
        &sweep,
    );
    write_stdout(
        &[
            "--quiet",
            "run",
            run_toml.to_str().unwrap(),
            "--json",
            "--series",
            series.to_str().unwrap(),
        ],
        &run,
    );
    let readme = root().join("examples/sr_array/README.md");
    let html_path = dir.path().join("report.html");
    let o = spindle(&[
        "report",
        sweep_toml.to_str().unwrap(),
        sweep.to_str().unwrap(),
        run.to_str().unwrap(),
        series.to_str().unwrap(),
        readme.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    // Self-contained: nothing is fetched (the only URL is SVG's namespace name).
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in ["http://", "https://", " src=", "<link", "@import"] {
        assert!(!without_ns.contains(needle), "the page refers to {needle}");
    }
    assert_eq!(html.matches("<figure class=\"plot\">").count(), 3);
    // The experiment as written, and the recorded verdicts (sr_array's table names no file
    // given here, so every row of it is kept).
    assert!(html.contains("workload.queue_depth"));
    assert!(html.contains("<table class=\"verdict\">") && html.contains("reproduced"));
    // The same inputs give the same page.
    let again = dir.path().join("again.html");
    let o = spindle(&[
        "report",
        sweep_toml.to_str().unwrap(),
        sweep.to_str().unwrap(),
        run.to_str().unwrap(),
        series.to_str().unwrap(),
        readme.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert_eq!(html, std::fs::read_to_string(&again).unwrap());

    let Some(browser) = chromium() else {
        let why = "no chromium on PATH (Debian package `chromium`)";
        assert!(!require_browser(), "{why}, and SPINDLE_REQUIRE_BROWSER=1");
        eprintln!("skipping the browser check: {why}");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", html_path.canonicalize().unwrap().display());
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--run-all-compositor-stages-before-draw",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && dom.contains("</html>"),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = &dom[dom.find("<body").expect("a body")..];
    let body_tag = &body[..body.find('>').unwrap()];
    // Every figure was laid out with a size and holds drawn data (the page's script).
    assert_eq!(attr(body_tag, "data-figures").as_deref(), Some("3"));
    assert_eq!(
        attr(body_tag, "data-figures-rendered").as_deref(),
        Some("3"),
        "the script found fewer rendered figures: {body_tag}"
    );
    // Tables: 6 sweep points, the run's rows, up to 100 series rows, the verdicts.
    let rows: usize = attr(body_tag, "data-table-rows").unwrap().parse().unwrap();
    assert!(rows >= 6 + 2 + 9, "{rows} table rows");
    assert_eq!(dom.matches("<figure class=\"plot\"><svg").count(), 3);
}
