//! Experiment-file parsing, validation errors and determinism.

use super::*;

const DRIVE: &str = r#"
id = "testdrive"
name = "Test drive"
rpm = 10000
surfaces = 2
cylinders = 2000
head_switch_ms = 0.5
overhead_read_ms = 1.0
overhead_write_ms = 1.5
[[zones]]
first_cylinder = 0
last_cylinder = 999
sectors_per_track = 300
track_skew = 20
cylinder_skew = 40
[[zones]]
first_cylinder = 1000
last_cylinder = 1999
sectors_per_track = 200
track_skew = 15
cylinder_skew = 30
[seek]
kind = "linear"
full_ms = 8.0
"#;

const EXP: &str = r#"seed = 3
[drive]
model = "drives/test.toml"
[array]
disks = 2
scheduler = "satf"
[workload]
kind = "closed"
queue_depth = 4
read_fraction = 0.6
[run]
requests = 2000
"#;

fn read_file(path: &str) -> Result<Vec<u8>, String> {
    match path {
        "drives/test.toml" => Ok(DRIVE.as_bytes().to_vec()),
        other => Err(format!("{other}: no such file")),
    }
}

fn no_trace(
    _: &TraceSpec,
    _: u32,
    _: u32,
    _: u64,
) -> Result<(Arrivals<'static>, Option<u64>), String> {
    Err("no traces in this test".into())
}

fn run(text: &str, sets: &[&str]) -> Result<Report, ConfigError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let exp = Experiment::parse(text, "exp.toml", &sets)?;
    exp.run(&read_file, &no_trace, &mut |_, _, _, _| {})
}

#[test]
fn same_seed_gives_identical_reports_and_another_seed_differs() {
    let a = serde_json::to_string(&run(EXP, &[]).unwrap()).unwrap();
    let b = serde_json::to_string(&run(EXP, &[]).unwrap()).unwrap();
    assert_eq!(a, b);
    let c = serde_json::to_string(&run(EXP, &["seed=4"]).unwrap()).unwrap();
    assert_ne!(a, c);
}

#[test]
fn set_overrides_a_key() {
    let r = run(EXP, &["workload.queue_depth=1", "array.scheduler=fcfs"]).unwrap();
    assert_eq!(r.scheduler, "fcfs");
    assert!(r.workload.contains("Q=1"), "{}", r.workload);
}

#[test]
fn unknown_key_names_the_key_and_line() {
    let text = EXP.replace("queue_depth = 4", "queue_depht = 4");
    let err = run(&text, &[]).unwrap_err().to_string();
    assert!(err.contains("exp.toml: line 9"), "{err}");
    assert!(err.contains("queue_depht"), "{err}");
}

#[test]
fn zero_queue_depth_names_file_line_and_key() {
    let text = EXP.replace("queue_depth = 4", "queue_depth = 0");
    let err = run(&text, &[]).unwrap_err().to_string();
    assert_eq!(
        err,
        "exp.toml: line 9: workload.queue_depth: must be >= 1, got 0"
    );
}

#[test]
fn a_set_error_says_it_came_from_set() {
    let err = run(EXP, &["workload.queue_depth=0"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("workload.queue_depth (from --set)"), "{err}");
}

#[test]
fn a_data_set_larger_than_the_array_is_refused() {
    let err = run(EXP, &["workload.data_set_bytes=1000000000000"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("workload.data_set_bytes") && err.contains("do not fit"),
        "{err}"
    );
}

#[test]
fn zero_rpm_drive_is_refused_naming_the_drive_key() {
    let read = |p: &str| -> Result<Vec<u8>, String> {
        read_file(p).map(|b| {
            String::from_utf8(b)
                .unwrap()
                .replace("rpm = 10000", "rpm = 0")
                .into_bytes()
        })
    };
    let exp = Experiment::parse(EXP, "exp.toml", &[]).unwrap();
    let err = exp
        .run(&read, &no_trace, &mut |_, _, _, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("drive.model") && err.contains("rpm"), "{err}");
}

#[test]
fn compare_entries_become_rows() {
    let text = format!(
        "{EXP}\n[[compare]]\nlabel = \"fcfs\"\nset = {{ \"array.scheduler\" = \"fcfs\" }}\n"
    );
    let r = run(&text, &[]).unwrap();
    assert_eq!(r.compare.len(), 1);
    assert_eq!(r.compare[0].scheduler, "fcfs");
    assert_eq!(r.compare[0].label, "fcfs");
    // SATF beats FCFS at Q = 4 on every drive: a sanity check that the rows really differ.
    assert!(r.throughput_iops > r.compare[0].throughput_iops);
}

#[test]
fn breakdown_adds_up_to_mean_latency() {
    let r = run(EXP, &[]).unwrap();
    let b = &r.breakdown_ms;
    let sum = b.queue + b.overhead + b.seek + b.rotation + b.transfer + b.switches;
    // Each component is an exact integer-ns mean; the histogram mean is within its 0.1 %
    // resolution of the exact mean.
    assert!(
        (sum - r.latency.all.mean_ms).abs() < 0.001 * sum + 1e-6,
        "{sum} vs {}",
        r.latency.all.mean_ms
    );
    assert_eq!(r.requests, 1400, "middle 70 % of 2,000");
}

fn shape_of(sets: &[&str]) -> Result<Shape, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let e = Experiment::parse(EXP, "exp.toml", &sets).map_err(|e| e.to_string())?;
    e.shape().map_err(|e| e.to_string())
}

#[test]
fn layout_shapes_resolve_from_their_dimensions_and_disks() {
    let sr = |ds, dr, dm| Ok(Shape::SrMirror { ds, dr, dm });
    // EXP has disks = 2.
    assert_eq!(shape_of(&[]), Ok(Shape::Jbod { disks: 2 }));
    assert_eq!(shape_of(&["array.layout=striping"]), sr(2, 1, 1));
    assert_eq!(shape_of(&["array.layout=mirror"]), sr(1, 1, 2));
    assert_eq!(
        shape_of(&["array.layout=raid-10", "array.disks=6"]),
        sr(3, 1, 2)
    );
    assert_eq!(
        shape_of(&["array.layout=sr-array", "array.disks=6", "array.dr=3"]),
        sr(2, 3, 1)
    );
    assert_eq!(
        shape_of(&[
            "array.layout=sr-mirror",
            "array.disks=12",
            "array.ds=3",
            "array.dr=2"
        ]),
        sr(3, 2, 2)
    );
}

#[test]
fn impossible_layout_shapes_name_the_key() {
    let e = shape_of(&["array.layout=raid-10", "array.disks=6", "array.dr=2"]).unwrap_err();
    assert!(e.contains("array.dr") && e.contains("raid-10"), "{e}");
    let e = shape_of(&["array.layout=sr-array", "array.disks=7", "array.dr=2"]).unwrap_err();
    assert!(
        e.contains("array.disks") && e.contains("cannot be divided"),
        "{e}"
    );
    let e = shape_of(&[
        "array.layout=sr-array",
        "array.disks=6",
        "array.ds=3",
        "array.dr=3",
    ])
    .unwrap_err();
    assert!(e.contains("Ds x Dr x Dm = 3 x 3 x 1 = 9"), "{e}");
    let e = shape_of(&["array.layout=sr-mirror", "array.disks=6"]).unwrap_err();
    assert!(e.contains("give array.ds and array.dr and array.dm"), "{e}");
    let e = shape_of(&["array.dr=2"]).unwrap_err();
    assert!(e.contains("JBOD"), "{e}");
    let e = shape_of(&["array.layout=sr-array", "array.ds=0", "array.dr=2"]).unwrap_err();
    assert!(e.contains("array.ds") && e.contains(">= 1"), "{e}");
}

/// `kind = "groups"` on two striped disks of the test drive (1,000,000 sectors each; the
/// data set is one disk, 125,000 blocks of 4 KiB).
const GROUPS: &str = r#"seed = 3
[drive]
model = "drives/test.toml"
[array]
layout = "striping"
disks = 2
[workload]
kind = "groups"
rate_iops = 100.0
[workload.groups]
subset_fraction = 0.01
[run]
requests = 3000
"#;

#[test]
fn a_groups_experiment_runs_reports_and_repeats() {
    let r = run(GROUPS, &[]).unwrap();
    assert!(
        r.workload
            .starts_with("groups 10 (9 × 1% + 1 whole), 100 IOPS, 60% reads"),
        "{}",
        r.workload
    );
    assert_eq!(r.requests, 2100, "middle 70 % of 3,000");
    // 2,100 measured requests: the read share's binomial sd is 0.011; allow 0.05.
    let reads = r.latency.read.count as f64 / r.latency.all.count as f64;
    assert!((reads - 0.6).abs() < 0.05, "read share {reads}");
    // 100 IOPS offered, far below two disks' capacity: each group's ~210 gaps have a
    // relative sd of 0.5/√210 = 3.5 %, the ten together ≈ 1.1 %; allow 5 %.
    let offered = r
        .offered_iops
        .expect("a timed workload reports its offered rate");
    assert!((offered / 100.0 - 1.0).abs() < 0.05, "offered {offered}");
    assert!(!r.saturated);
    let a = serde_json::to_string(&r).unwrap();
    let b = serde_json::to_string(&run(GROUPS, &[]).unwrap()).unwrap();
    assert_eq!(a, b, "same seed, same report");
    let c = serde_json::to_string(&run(GROUPS, &["seed=4"]).unwrap()).unwrap();
    assert_ne!(a, c, "another seed, another report");
}

#[test]
fn groups_run_on_every_layout() {
    let layouts = [
        "layout = \"jbod\"\ndisks = 2",
        "layout = \"striping\"\ndisks = 2",
        "layout = \"mirror\"\ndisks = 2",
        "layout = \"raid-10\"\ndisks = 4",
        "layout = \"striped-mirror\"\nds = 2\ndm = 2",
        "layout = \"sr-array\"\nds = 1\ndr = 2",
        "layout = \"sr-mirror\"\nds = 1\ndr = 2\ndm = 2",
        // Eager writing needs free room: half a disk's data set.
        "layout = \"ew-array\"\ndm = 1\nds = 1\ndd = 2\ndata_set_bytes = 250000000",
        "layout = \"ddm\"\nds = 1\ndd = 2\ndata_set_bytes = 250000000",
    ];
    for l in layouts {
        let text = GROUPS
            .replace("layout = \"striping\"\ndisks = 2", l)
            .replace("requests = 3000", "requests = 600");
        let text = text.replace(
            "subset_fraction = 0.01",
            "subset_fraction = 0.01\nburst_period_s = 2.0\nburst_length_s = 0.5",
        );
        let r = run(&text, &[]).unwrap_or_else(|e| panic!("{l}: {e}"));
        assert_eq!(r.requests, 420, "{l}");
        assert!(r
            .workload
            .contains("bursts ×3 of 0.5 s from 1.5 s every 2 s"));
    }
}

#[test]
fn groups_read_fraction_defaults_to_the_papers_and_other_kinds_keep_one() {
    let exp = Experiment::parse(GROUPS, "exp.toml", &[]).unwrap();
    assert_eq!(exp.spec.workload.read_fraction(), 0.6);
    let exp = Experiment::parse(EXP, "exp.toml", &["workload.read_fraction=0.25".into()]);
    assert_eq!(exp.unwrap().spec.workload.read_fraction(), 0.25);
    let closed = EXP.replace("read_fraction = 0.6\n", "");
    let exp = Experiment::parse(&closed, "exp.toml", &[]).unwrap();
    assert_eq!(exp.spec.workload.read_fraction(), 1.0);
}

#[test]
fn groups_errors_name_their_keys() {
    // The file's line when the key is in it.
    let text = GROUPS.replace("subset_fraction = 0.01", "subset_fraction = 0.0");
    assert_eq!(
        run(&text, &[]).unwrap_err().to_string(),
        "exp.toml: line 11: workload.groups.subset_fraction: must be in (0, 1], got 0"
    );
    let text = GROUPS.replace("subset_fraction = 0.01", "subset_fractoin = 0.01");
    let err = run(&text, &[]).unwrap_err().to_string();
    assert!(
        err.contains("line 11") && err.contains("subset_fractoin"),
        "{err}"
    );
    let cases: [(&str, &str); 14] = [
        ("workload.rate_iops=0.001", "workload.rate_iops"),
        ("workload.read_fraction=1.5", "workload.read_fraction"),
        ("workload.groups.count=0", "workload.groups.count"),
        (
            "workload.groups.global_groups=11",
            "workload.groups.global_groups",
        ),
        (
            "workload.groups.block_bytes=1000",
            "workload.groups.block_bytes",
        ),
        (
            "workload.groups.mean_blocks=0.5",
            "workload.groups.mean_blocks",
        ),
        (
            "workload.groups.history_bytes=4096",
            "workload.groups.history_bytes",
        ),
        (
            "workload.groups.arrival_cv=-1",
            "workload.groups.arrival_cv",
        ),
        (
            "workload.groups.write_history_fraction=2",
            "workload.groups.write_history_fraction",
        ),
        (
            "workload.groups.burst_factor=3",
            "workload.groups.burst_factor",
        ),
        (
            "workload.groups.burst_length_s=1",
            "workload.groups.burst_length_s",
        ),
        // 1 % of 25 blocks is one block; requests of mean 2 blocks reach 13.
        (
            "workload.data_set_bytes=102400",
            "workload.groups.subset_fraction",
        ),
        ("workload.data_set_bytes=100", "workload.data_set_bytes"),
        ("workload.kind=\"closed\"", "workload.groups"),
    ];
    for (set, key) in cases {
        let err = run(GROUPS, &[set]).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{key} (from --set)")) || err.contains(&format!("{key}:")),
            "{set}: {err}"
        );
    }
    let err = run(GROUPS, &["workload.rate_iops=0.001"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("each of the 10 groups"), "{err}");
    let no_rate = GROUPS.replace("rate_iops = 100.0\n", "");
    let err = run(&no_rate, &[]).unwrap_err().to_string();
    assert!(
        err.contains("workload.rate_iops: a groups workload needs"),
        "{err}"
    );
    let err = run(
        GROUPS,
        &[
            "workload.groups.burst_length_s=2",
            "workload.groups.burst_period_s=2",
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("workload.groups.burst_period_s") && err.contains("longer than"),
        "{err}"
    );
}

/// An eager-writing array takes `array.failed_disk` (Dm >= 2, not disk 0) and reports its
/// rebuild; a failure it cannot survive is refused naming the key.
#[test]
fn ew_failures_run_to_a_rebuild_or_are_refused_naming_the_key() {
    let ew = |extra: &str| {
        format!(
            "seed = 1\n[drive]\nmodel = \"st39133lwv\"\n[array]\n{extra}dd = 2\n\
             data_set_bytes = 16000000\nfail_at_ms = 50\n[workload]\nkind = \"closed\"\n\
             queue_depth = 4\nread_fraction = 0.5\nsize_bytes = 4096\n[run]\nrequests = 400\n"
        )
    };
    for layout in [
        "layout = \"ew-array\"\ndm = 2\nds = 1\nfailed_disk = 1\n",
        "layout = \"ddm\"\nds = 1\nfailed_disk = 3\n",
    ] {
        let r = run(&ew(layout), &[]).unwrap_or_else(|e| panic!("{layout}: {e}"));
        assert!(r.rebuild.is_some(), "{layout}: no rebuild in the report");
    }
    for (layout, says) in [
        (
            "layout = \"ew-array\"\ndm = 1\nds = 2\nfailed_disk = 1\n",
            "loses its data",
        ),
        ("layout = \"ddm\"\nds = 1\nfailed_disk = 0\n", "map log"),
    ] {
        let err = run(&ew(layout), &[]).unwrap_err().to_string();
        assert!(
            err.contains("array.failed_disk") && err.contains(says),
            "{err}"
        );
    }
}
