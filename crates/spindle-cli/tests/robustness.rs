//! Issue 24's defects, end to end: user input that panicked, outputs that replaced devices,
//! errors that blamed the wrong key, empty results that exited 0, `--jobs` without bounds,
//! a time window that read the whole trace, `--print-config` and `--unset`. A panic exits
//! with 101; every refusal here must exit 2 and name the file, line and key.

mod common;
use common::{spindle, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

fn refused(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Two requests, DiskSim ASCII.
const TRACE: &str = "0.0 0 0 8 1\n1.0 0 8 8 0\n";

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "stderr: {}", stderr(o));
    stdout(o)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write fixture");
    p.to_str().expect("UTF-8 path").to_string()
}

fn shared(rel: &str) -> Option<PathBuf> {
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

/// `spindle run` on the built-in default with a trace workload and these overrides.
fn run_trace(trace: &str, sets: &[&str]) -> Output {
    let mut args = vec![
        "--quiet".to_string(),
        "run".into(),
        "--set".into(),
        "workload.kind=trace".into(),
        "--set".into(),
        format!("workload.trace.path={trace}"),
    ];
    for s in sets {
        args.push("--set".into());
        args.push(s.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    spindle(&args)
}

// ---------------------------------------------------------------------------------------------
// 1. Panics on user input

#[test]
fn trace_stats_of_a_request_over_2_31_sectors() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "big.trace", "0.0 0 0 4294967295 1\n");
    let out = ok(&spindle(&["trace", "stats", "-f", "disksim", &t, "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["size"]["max_bytes"], 4_294_967_295u64 * 512);
    let hist = v["size"]["histogram"].as_array().unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!(hist[0]["le_bytes"], 512u64 << 32, "{v}");
}

#[test]
fn a_trace_whose_devices_overflow_concatenation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(
        dir.path(),
        "huge.trace",
        "0.0 0 18446744073709550000 8 1\n1.0 1 18446744073709550000 8 1\n",
    );
    let err = refused(&run_trace(&t, &[]));
    assert!(
        err.contains(&format!("{t}: concatenated devices exceed 2^64 sectors")),
        "{err}"
    );
    assert!(err.contains("workload.trace.concat"), "{err}");
    // The same check as `trace convert --concat`.
    let out = dir.path().join("out.txt");
    let err = refused(&spindle(&[
        "trace",
        "convert",
        &t,
        out.to_str().unwrap(),
        "--to",
        "mqsim",
        "--concat",
    ]));
    assert!(
        err.contains("concatenated devices exceed 2^64 sectors"),
        "{err}"
    );
}

#[test]
fn a_request_count_that_overflows_the_warm_up_is_refused() {
    let err = refused(&spindle(&[
        "run",
        "--set",
        "run.requests=1229782938247303442",
    ]));
    assert!(
        err.contains("run.requests (from --set): must be at most"),
        "{err}"
    );
}

/// The HP C2247A's DiskSim model with one line of its `.model` changed.
fn hp_c2247a_with(dir: &Path, from: &str, to: &str) -> Option<String> {
    let src = shared("validation/disksim/hp_c2247a")?;
    for f in [
        "hp_c2247a.parv",
        "hp_c2247a.diskspecs",
        "hp_c2247a_validate.model",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let model = dir.join("hp_c2247a_validate.model");
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(text.contains(from), "{from}");
    std::fs::write(&model, text.replacen(from, to, 1)).unwrap();
    Some(dir.join("hp_c2247a.parv").to_str().unwrap().to_string())
}

#[test]
fn a_parv_with_a_huge_cylinder_skew_is_an_import_error() {
    let dir = tempfile::tempdir().unwrap();
    let Some(parv) = hp_c2247a_with(
        dir.path(),
        "Skew for cylinder switch = 32,",
        "Skew for cylinder switch = 1e15,",
    ) else {
        return;
    };
    let err = refused(&spindle(&["drives", "import", &parv]));
    assert!(err.contains("hp_c2247a_validate.model"), "{err}");
    assert!(
        err.contains("Skew for cylinder switch: line 17: must be below 2^31"),
        "{err}"
    );
}

#[test]
fn a_parv_with_a_huge_hpl_seek_value_is_an_import_error() {
    let dir = tempfile::tempdir().unwrap();
    let Some(parv) = hp_c2247a_with(dir.path(), "         3.810000,", "         1e300,") else {
        return;
    };
    let err = refused(&spindle(&["drives", "import", &parv]));
    assert!(err.contains("hp_c2247a_validate.model"), "{err}");
    assert!(
        err.contains(
            "HPL seek equation values: line 161: the seek time at 11 cylinders passes 2^64 ps"
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Outputs that are not regular files

#[test]
fn convert_never_replaces_a_device_a_fifo_or_a_link() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "in.txt", TRACE);
    // A device: written through (/dev/full refuses the bytes), never replaced.
    let err = refused(&spindle(&[
        "trace",
        "convert",
        &t,
        "/dev/full",
        "--to",
        "mqsim",
    ]));
    assert!(err.contains("/dev/full"), "{err}");
    let meta = std::fs::symlink_metadata("/dev/full").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/full is still a device"
    );
    ok(&spindle(&[
        "--quiet",
        "trace",
        "convert",
        &t,
        "/dev/null",
        "--to",
        "mqsim",
    ]));
    assert!(std::fs::symlink_metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    // A FIFO: its reader gets the trace.
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    ok(&spindle(&[
        "--quiet",
        "trace",
        "convert",
        &t,
        fifo.to_str().unwrap(),
        "--to",
        "disksim",
    ]));
    assert_eq!(reader.join().unwrap().lines().count(), 2);
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A link: the file it names is replaced, the link stays.
    let target = write(dir.path(), "target.txt", "old\n");
    let link = dir.path().join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(&spindle(&[
        "--quiet",
        "trace",
        "convert",
        &t,
        link.to_str().unwrap(),
        "--to",
        "disksim",
    ]));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap().lines().count(), 2);
    // `-`: standard output.
    let out = ok(&spindle(&[
        "--quiet", "trace", "convert", &t, "-", "--to", "disksim",
    ]));
    assert_eq!(out.lines().count(), 2, "{out}");
}

// ---------------------------------------------------------------------------------------------
// 7. Empty results

#[test]
fn empty_results_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "in.txt", TRACE);
    let o = spindle(&["trace", "stats", "-f", "blkparse", &t]);
    let err = refused(&o);
    assert!(
        err.contains(&format!("{t}: no requests read as blkparse")),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let out = dir.path().join("out.txt");
    let o = out.to_str().unwrap();
    let err = refused(&spindle(&[
        "trace",
        "convert",
        &t,
        o,
        "--to",
        "mqsim",
        "--devices",
        "5",
    ]));
    assert!(
        err.contains("no records to write on the devices kept by --devices"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
    std::fs::write(&out, "previous\n").unwrap();
    refused(&spindle(&[
        "trace",
        "convert",
        &t,
        o,
        "--to",
        "mqsim",
        "--devices",
        "5",
    ]));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous\n");
}

// ---------------------------------------------------------------------------------------------
// 6. Errors that blamed the wrong key or a file the user never saw

#[test]
fn trace_settings_errors_name_their_own_key() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "in.txt", TRACE);
    for (set, want) in [
        (
            "workload.trace.speedup=1e300",
            "workload.trace.speedup (from --set): 1e300 is not a usable factor",
        ),
        (
            "workload.trace.end_s=-1",
            "workload.trace.end_s (from --set): must be a number of seconds >= 0, got -1",
        ),
        (
            "workload.trace.format=nope",
            "workload.trace.format (from --set): unknown trace format",
        ),
    ] {
        let err = refused(&run_trace(&t, &[set]));
        assert!(err.contains(want), "{set}: {err}");
        assert!(!err.contains("workload.trace.path"), "{set}: {err}");
    }
    let err = refused(&run_trace(
        &t,
        &["workload.trace.start_s=2", "workload.trace.end_s=1"],
    ));
    assert!(
        err.contains("workload.trace.end_s (from --set): must be after workload.trace.start_s (2 s), got 1 s"),
        "{err}"
    );
}

#[test]
fn an_error_caused_by_overrides_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let exp = write(
        dir.path(),
        "exp.toml",
        "[drive]\nmodel = \"st39133lwv\"\n\n[array]\ndisks = 1\n\n[workload]\nkind = \"closed\"\n",
    );
    let err = refused(&spindle(&[
        "run",
        &exp,
        "--set",
        "array.layout=sr-array",
        "--set",
        "array.ds=3",
        "--set",
        "array.dr=2",
    ]));
    assert!(
        err.contains(&format!("{exp}: line 5: array.disks: 1 disks, but Ds x Dr x Dm = 3 x 2 x 1 = 6 (with --set array.layout=sr-array --set array.ds=3 --set array.dr=2)")),
        "{err}"
    );
}

/// On the built-in default, an `array.*` override replaces its `[array]` table: an error
/// about the array names the overrides, not a line of a file the user never saw.
#[test]
fn an_array_error_on_the_built_in_default_names_the_overrides_not_a_line() {
    let err = refused(&spindle(&[
        "run",
        "--set",
        "array.layout=striping",
        "--set",
        "array.disks=2",
        "--set",
        "array.stripe_unit_bytes=100",
    ]));
    assert!(
        err.starts_with("spindle: built-in default experiment: array: stripe unit of 100 bytes"),
        "{err}"
    );
    assert!(
        err.contains("(with --set array.layout=striping --set array.disks=2 --set array.stripe_unit_bytes=100)"),
        "{err}"
    );
}

#[test]
fn drive_file_errors_carry_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(repo.join("drives/atlas10k.toml")).unwrap();
    let line = text.lines().position(|l| l.starts_with("rpm =")).unwrap() + 1;
    for (to, want) in [
        ("rpm = -5.0", format!("line {line}: rpm: must be within")),
        ("rpm = \"fast\"", format!("line {line}: rpm: invalid type")),
    ] {
        let d = write(dir.path(), "d.toml", &text.replacen("rpm = 10025.0", to, 1));
        let err = refused(&spindle(&["run", "--set", &format!("drive.model={d}")]));
        assert!(err.contains(&format!("{d}: {want}")), "{to}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

// ---------------------------------------------------------------------------------------------
// 8. A time window reads the trace only up to its end

#[test]
fn end_s_stops_reading_at_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..100 {
        text.push_str(&format!("{}.0 0 {} 8 1\n", i * 10, i * 8));
    }
    text.push_str("2000.0 0 0 8 zz\n"); // past the window: never read
    let t = write(dir.path(), "long.txt", &text);
    let out = ok(&run_trace(
        &t,
        &["workload.trace.format=disksim", "workload.trace.end_s=0.5"],
    ));
    assert!(out.contains("FCFS"), "{out}");
    // Without the window, the bad line is read and named.
    let err = refused(&run_trace(&t, &["workload.trace.format=disksim"]));
    assert!(err.contains("line 101"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// 5. --jobs

#[test]
fn sweep_caps_jobs_at_the_points() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "sweep.toml",
        "[drive]\nmodel = \"st39133lwv\"\n[workload]\nkind = \"closed\"\n[run]\nrequests = 200\n\
         [[axis]]\nkey = \"workload.queue_depth\"\nvalues = [1, 2]\n",
    );
    let o = spindle(&["--quiet", "sweep", &f, "--jobs", "100000", "--csv"]);
    let out = ok(&o);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(
        stderr(&o).contains("--jobs 100000: running 2 at once"),
        "{}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------------------------------------
// 9. --print-config and --unset

#[test]
fn print_config_loads_back_and_unset_removes_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let text = ok(&spindle(&["run", "--print-config"]));
    assert!(
        text.contains("[array]") && text.contains("# dd = "),
        "{text}"
    );
    let f = write(dir.path(), "all.toml", &text);
    let out = ok(&spindle(&[
        "--quiet",
        "run",
        &f,
        "--set",
        "run.requests=300",
        "--csv",
    ]));
    assert_eq!(out.lines().count(), 2, "{out}");

    let exp = write(
        dir.path(),
        "exp.toml",
        "[drive]\nmodel = \"st39133lwv\"\n[array]\nscheduler = \"sstf\"\n[workload]\nkind = \"closed\"\n[run]\nrequests = 300\n",
    );
    let out = ok(&spindle(&["--quiet", "run", &exp]));
    assert!(out.contains("sstf"), "{out}");
    let out = ok(&spindle(&[
        "--quiet",
        "run",
        &exp,
        "--unset",
        "array.scheduler",
    ]));
    assert!(out.contains("fcfs") && !out.contains("sstf"), "{out}");
    let err = refused(&spindle(&["run", &exp, "--unset", "array.dd"]));
    assert!(
        err.contains("--unset array.dd: not set in the experiment"),
        "{err}"
    );
}
