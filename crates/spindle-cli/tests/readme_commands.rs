//! Every `spindle …` command in the README's shell blocks runs as written (from the repository
//! root, as `cargo run --release -- …` would) and succeeds. Commands with placeholders
//! (`FILE`, `IN OUT`, `[--json]`, `…`) are synopses, not examples; `bench` (minutes of
//! measurement), `serve` (a server) and `validate --against-disksim` (needs an oracle built by
//! a script) are left to their own tests.

mod common;
use common::{stderr, stdout};
use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The argument lists of the README's runnable commands, with their README line.
fn readme_commands() -> Vec<(usize, Vec<String>)> {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let (start, mut cmd) = match pending.take() {
            Some((start, prefix)) => (start, format!("{prefix} {}", line.trim())),
            None => (i + 1, line.trim().to_string()),
        };
        if let Some(rest) = cmd.strip_suffix('\\') {
            pending = Some((start, rest.trim().to_string()));
            continue;
        }
        if let Some((c, _comment)) = cmd.split_once(" #") {
            cmd = c.trim().to_string();
        }
        let args = if let Some(a) = cmd.strip_prefix("cargo run --release -- ") {
            a
        } else if let Some(a) = cmd.strip_prefix("cargo run --release --") {
            a
        } else if let Some(a) = cmd.strip_prefix("spindle ") {
            a
        } else {
            continue;
        };
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        // FILE, IN, OUT, MODEL.parv, T, `[--json]`, `key=value…`.
        let placeholder = args.iter().any(|a| {
            let stem = a.split('.').next().unwrap_or("");
            a.contains(['[', '…'])
                || (!stem.is_empty() && stem.chars().all(|c| c.is_ascii_uppercase()))
        });
        let skipped = matches!(args.first().map(String::as_str), Some("bench" | "serve"))
            || args.iter().any(|a| a == "--against-disksim");
        if !placeholder && !skipped {
            out.push((start, args));
        }
    }
    out
}

#[test]
fn the_readme_lists_the_commands_this_test_runs() {
    let cmds = readme_commands();
    let shown: Vec<String> = cmds.iter().map(|(_, a)| a.join(" ")).collect();
    for want in [
        "run",
        "drives list",
        "drives show cheetah9lp",
        "run --set array.layout=sr-array --set array.disks=6 --set array.ds=3 --set array.dr=2 --set array.scheduler=rsatf --set workload.queue_depth=1",
        "run --set array.layout=ew-array --set array.dm=2 --set array.ds=1.5 --set array.dd=2 --set array.scheduler=satf-ew --set workload.read_fraction=0.5",
    ] {
        assert!(shown.iter().any(|s| s == want), "{want:?} not among {shown:#?}");
    }
    assert!(
        !shown
            .iter()
            .any(|s| s.contains("FILE") || s.contains("bench")),
        "{shown:#?}"
    );
}

#[test]
fn every_readme_command_runs() {
    for (line, args) in readme_commands() {
        if args.iter().any(|a| a.starts_with("../shared")) {
            let needed = repo().join(args.iter().find(|a| a.starts_with("../shared")).unwrap());
            if !needed.exists() {
                spindle::testing::shared_missing(&format!(
                    "README line {line} needs {}",
                    needed.display()
                ));
                continue;
            }
        }
        let o = Command::new(env!("CARGO_BIN_EXE_spindle"))
            .arg("--quiet")
            .args(&args)
            .current_dir(repo())
            .output()
            .expect("spindle runs");
        let shown = args.join(" ");
        assert!(
            o.status.success(),
            "README line {line}: spindle {shown}: {}",
            stderr(&o)
        );
        assert!(
            !stdout(&o).is_empty(),
            "README line {line}: spindle {shown}"
        );
    }
}

/// The README's array examples on the built-in default run one configuration: the array the
/// overrides describe, with its scheduler (not the comparison rows' schedulers, not a row
/// labelled FCFS that runs another policy).
#[test]
fn array_overrides_of_the_built_in_default_run_one_configuration() {
    for (line, args) in readme_commands() {
        if args.first().map(String::as_str) != Some("run")
            || !args.iter().any(|a| a.starts_with("array."))
        {
            continue;
        }
        let scheduler = args
            .iter()
            .find_map(|a| a.strip_prefix("array.scheduler="))
            .expect("the examples name their scheduler");
        let o = Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(["--quiet"])
            .args(&args)
            .arg("--csv")
            .current_dir(repo())
            .output()
            .expect("spindle runs");
        assert!(o.status.success(), "README line {line}: {}", stderr(&o));
        let csv = stdout(&o);
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        assert_eq!(rows.len(), 1, "README line {line}: one row: {csv}");
        assert!(
            rows[0].starts_with("array from --set,"),
            "README line {line}: {csv}"
        );
        assert!(
            rows[0].contains(&format!(",{scheduler},")),
            "README line {line}: runs {scheduler}: {csv}"
        );
    }
}
