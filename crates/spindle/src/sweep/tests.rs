//! Axis parsing, expansion order and errors.

use super::*;

const BASE: &str = r#"seed = 3
[drive]
model = "st39133lwv"
[array]
scheduler = "look"
[workload]
kind = "closed"
queue_depth = 1
[run]
requests = 500
"#;

fn sweep(axes: &str) -> Result<Sweep, ConfigError> {
    Sweep::parse(&format!("{BASE}{axes}"), "s.toml", &[])
}

fn err(axes: &str) -> String {
    sweep(axes).expect_err("an error").to_string()
}

const TWO_AXES: &str = r#"
[[axis]]
key = "workload.queue_depth"
values = [1, 2, 4]

[[axis]]
name = "config"
points = [
  { label = "two SATF", set = { "array.disks" = 2, "array.scheduler" = "satf" } },
  { label = "one FCFS", set = { array = { scheduler = "fcfs" } } },
]
"#;

#[test]
fn the_product_of_the_axes_with_the_first_outermost() {
    let s = sweep(TWO_AXES).unwrap();
    assert_eq!(s.len(), 6);
    let got: Vec<String> = (0..s.len()).map(|i| s.describe(i)).collect();
    assert_eq!(
        got,
        [
            "workload.queue_depth = 1, config = two SATF",
            "workload.queue_depth = 1, config = one FCFS",
            "workload.queue_depth = 2, config = two SATF",
            "workload.queue_depth = 2, config = one FCFS",
            "workload.queue_depth = 4, config = two SATF",
            "workload.queue_depth = 4, config = one FCFS",
        ]
    );
    assert_eq!(s.coords(5), [2, 1]);
    assert_eq!(s.axes[0].points[1].value, toml::Value::Integer(2));
    assert_eq!(
        s.axes[1].points[0].value,
        toml::Value::String("two SATF".into())
    );
}

#[test]
fn a_point_is_the_base_with_its_keys_set_and_nested_tables_merged() {
    let s = sweep(TWO_AXES).unwrap();
    let p = s.point(2).unwrap().spec;
    assert_eq!(p.workload.queue_depth, 2);
    assert_eq!(p.array.disks, Some(2));
    assert_eq!(p.array.scheduler.unwrap().to_string(), "satf");
    let p = s.point(5).unwrap().spec;
    assert_eq!(p.workload.queue_depth, 4);
    assert_eq!(
        p.array.disks, None,
        "a nested table sets its keys, it does not replace [array]"
    );
    assert_eq!(p.array.scheduler.unwrap().to_string(), "fcfs");
    assert_eq!(p.seed, 3);
    assert_eq!(p.run.requests, 500);
}

#[test]
fn a_set_override_changes_the_base_of_every_point() {
    let s = Sweep::parse(&format!("{BASE}{TWO_AXES}"), "s.toml", &["seed=9".into()]).unwrap();
    assert!((0..s.len()).all(|i| s.point(i).unwrap().spec.seed == 9));
}

#[test]
fn a_set_override_of_a_swept_key_is_refused() {
    let e = Sweep::parse(
        &format!("{BASE}{TWO_AXES}"),
        "s.toml",
        &["array.disks=4".into()],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("array.disks") && e.contains("--set"), "{e}");
}

#[test]
fn lines_of_the_base_are_the_files_own_after_the_axes_are_removed() {
    // The axis comes first, so the base's keys are below it.
    let text = format!(
        "[[axis]]\nkey = \"seed\"\nvalues = [1, 2]\n\n{}",
        BASE.replace("queue_depth = 1", "queue_depth = \"x\"")
    );
    let e = Sweep::parse(&text, "s.toml", &[]).unwrap_err();
    assert_eq!(e.line, Some(12), "{e}");
    assert!(e.to_string().contains("workload.queue_depth"), "{e}");
}

#[test]
fn an_inline_axis_array_and_nested_point_tables_are_accepted() {
    let text = format!("axis = [ {{ key = \"seed\", values = [1, 2] }} ]\n{BASE}");
    let s = Sweep::parse(&text, "s.toml", &[]).unwrap();
    assert_eq!(s.len(), 2);
    let s = sweep(
        "[[axis]]\nname = \"c\"\n[[axis.points]]\nlabel = \"a\"\n[axis.points.set]\n\"array.disks\" = 2\n[[axis.points]]\nlabel = \"b\"\n",
    )
    .unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s.point(0).unwrap().spec.array.disks, Some(2));
    assert_eq!(s.point(1).unwrap().spec.array.disks, None);
}

#[test]
fn a_bad_value_names_the_point_the_axis_the_key_and_the_line() {
    let e = sweep("[[axis]]\nkey = \"array.disks\"\nvalues = [1, \"six\"]\n")
        .unwrap()
        .point(1)
        .unwrap_err();
    let m = e.to_string();
    assert_eq!(e.line, Some(13), "{m}");
    for part in [
        "point 2 of 2",
        "array.disks = six",
        "axis array.disks",
        "invalid type",
    ] {
        assert!(m.contains(part), "{part:?} not in {m}");
    }
}

#[test]
fn an_unknown_key_in_an_axis_is_named() {
    let e = sweep("[[axis]]\nkey = \"array.diskz\"\nvalues = [1]\n")
        .unwrap()
        .point(0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("diskz") && e.contains("axis array.diskz"), "{e}");
}

#[test]
fn malformed_axes_are_refused_with_their_place() {
    let cases = [
        ("[[axis]]\nkey = \"seed\"\nvalues = []\n", "axis[0].values: is empty"),
        ("[[axis]]\nname = \"c\"\npoints = []\n", "axis[0].points: is empty"),
        (
            "[[axis]]\nkey = \"seed\"\nvalues = [1]\npoints = [{ label = \"a\" }]\n",
            "has both `key` and `points`",
        ),
        ("[[axis]]\nname = \"x\"\n", "has neither `key` nor `points`"),
        ("[[axis]]\nkey = \"seed\"\n", "needs `values`"),
        ("[[axis]]\nkey = \"seed\"\nvalues = [1]\nstep = 2\n", "axis[0].step: unknown field"),
        ("[[axis]]\npoints = [{ label = \"a\" }]\n", "needs a `name`"),
        (
            "[[axis]]\nname = \"c\"\npoints = [{ label = \"a\" }, { label = \"a\" }]\n",
            "appears twice",
        ),
        ("[[axis]]\nkey = \"seed\"\nvalues = [1, 1]\n", "1 appears twice"),
        (
            "[[axis]]\nkey = \"seed\"\nvalues = [1]\n[[axis]]\nname = \"c\"\npoints = [{ label = \"a\", set = { seed = 2 } }]\n",
            "axis[1]: sets `seed`, which axis[0] (seed) also sets",
        ),
        (
            "[[axis]]\nkey = \"workload\"\nvalues = [{ kind = \"open\" }]\n[[axis]]\nkey = \"workload.queue_depth\"\nvalues = [2]\n",
            "which axis[0] (workload) also sets",
        ),
        (
            "[[axis]]\nname = \"mean_ms\"\nkey = \"seed\"\nvalues = [1]\n",
            "is an output field",
        ),
        ("[[axis]]\nkey = \"compare\"\nvalues = [1]\n", "cannot set `compare`"),
        ("[[axis]]\nkey = \"array..disks\"\nvalues = [1]\n", "not a dotted key"),
        ("[axis]\nkey = \"seed\"\nvalues = [1]\n", "array of tables"),
        ("", "no [[axis]] table"),
        (
            "[[axis]]\nkey = \"seed\"\nvalues = [1]\n[[compare]]\nlabel = \"x\"\n",
            "cannot have [[compare]]",
        ),
    ];
    for (axes, want) in cases {
        let e = err(axes);
        assert!(e.contains(want), "{axes:?}: {want:?} not in {e}");
        assert!(e.starts_with("s.toml"), "{e}");
    }
}

#[test]
fn too_many_points_are_refused() {
    let e = err(
        "[[axis]]\nkey = \"seed\"\nvalues = [1,2,3,4,5,6,7,8,9,10]\n[[axis]]\nkey = \"run.requests\"\nvalues = [100,200,300,400,500,600,700,800,900,1000]\n[[axis]]\nkey = \"workload.queue_depth\"\nvalues = [1,2,3,4,5,6,7,8,9,10]\n[[axis]]\nkey = \"workload.read_fraction\"\nvalues = [0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0]\n[[axis]]\nkey = \"array.disks\"\nvalues = [1,2,3,4,5,6,7,8,9,10,11]\n",
    );
    assert!(e.contains("more than 100000 points"), "{e}");
}

#[test]
fn run_on_a_sweep_file_points_to_sweep() {
    let e = Experiment::parse(&format!("{BASE}{TWO_AXES}"), "s.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("spindle sweep"), "{e}");
    assert!(e.contains("line 12"), "{e}");
}

#[test]
fn longest_first_starts_the_costliest_points_first_ties_in_point_order() {
    let s = sweep(
        r#"
[[axis]]
name = "layout"
points = [
  { label = "jbod", set = { "array.layout" = "jbod" } },
  { label = "ew", set = { "array.layout" = "ew-array", "array.dm" = 1, "array.ds" = 1, "array.dd" = 2, "array.scheduler" = "satf-ew" } },
]

[[axis]]
key = "run.requests"
values = [500, 5000]

[[axis]]
key = "workload.read_fraction"
values = [0.5, 1.0]
"#,
    )
    .unwrap();
    // The eager-writing points (4-7) first, the larger request count first; points of
    // equal cost (differing in the read fraction) keep their order.
    assert_eq!(s.longest_first(), vec![6, 7, 4, 5, 2, 3, 0, 1]);
}
