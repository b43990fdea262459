//! Sweeps (`spindle sweep FILE`): an experiment file plus `[[axis]]` tables. The sweep's
//! points are the Cartesian product of its axes (first axis outermost); each point is the
//! base experiment with the point's keys set through [`Experiment::with_settings`], so its
//! errors name keys and lines as `spindle run` does. The format is in `docs/sweep.md`.
//!
//! Pure: parsing and expansion only; the driver checks and runs the points.
//!
//! ```toml
//! [[axis]]                       # a scalar axis: one key, a list of values
//! key = "workload.queue_depth"
//! values = [1, 2, 4, 8]
//!
//! [[axis]]                       # a compound axis: named points, each setting several keys
//! name = "config"
//! points = [
//!   { label = "SATF", set = { "array.scheduler" = "satf" } },
//!   { label = "LOOK", set = { "array.scheduler" = "look" } },
//! ]
//! ```

use crate::config::{key_line, line_of, ConfigError, Experiment, Setting};

mod output;
pub use output::{
    format, to_csv, to_json_lines, to_table, warnings, Format, PointDr, PointEnergy, PointResult,
    DR_FIELDS, ENERGY_FIELDS,
};

/// At most this many points: more is a configuration error, not an allocation failure.
pub const MAX_POINTS: usize = 100_000;

/// The headline fields a sweep prints for each point, beside its axis values (see
/// `docs/sweep.md`); an axis cannot be named like one of them.
pub const HEADLINE_FIELDS: [&str; 9] = [
    "throughput_iops",
    "throughput_mb_s",
    "mean_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "utilization",
    "seek_ms",
    "rotation_ms",
];

/// The fields a sweep prints after [`HEADLINE_FIELDS`]: the offered and achieved rates
/// (null for closed loops) and whether the point is saturated or sustainable (see
/// `docs/report.md`).
pub const STATE_FIELDS: [&str; 4] = ["offered_iops", "achieved_iops", "saturated", "sustainable"];

/// A rough wall-time estimate of running `exp` (every `[[compare]]` row), in arbitrary
/// units (about microseconds on one core): for ordering a sweep's points, not for reporting.
/// Per row: the requests (a trace's are unknown here: taken as 100,000) times a per-request
/// cost by layout family and scheduler queue, plus an eager-writing array's start-up, which
/// grows with its data set.
pub fn estimated_cost(exp: &Experiment) -> f64 {
    let rows = exp
        .variants()
        .map(|v| v.into_iter().map(|(_, e)| e).collect())
        .unwrap_or_else(|_| vec![exp.clone()]);
    rows.iter().map(|e| row_cost(&e.spec)).sum()
}

fn row_cost(spec: &crate::config::ExperimentSpec) -> f64 {
    use crate::config::{LayoutName, SchedulerName, WorkloadKind};
    use crate::sched::Policy;
    let a = &spec.array;
    let requests = match spec.workload.kind {
        WorkloadKind::Closed | WorkloadKind::Open | WorkloadKind::Groups => {
            spec.run.requests as f64
        }
        WorkloadKind::Trace | WorkloadKind::Validate => 100_000.0,
        // Two runs over a whole update stream (the windows, the immediate secondary).
        WorkloadKind::Dr => 1_000_000.0,
    };
    let dims = |d: Option<f64>| d.unwrap_or(1.0).max(1.0);
    let disks = f64::from(a.disks.unwrap_or(0))
        .max(
            dims(a.ds)
                * f64::from(a.dr.unwrap_or(1))
                * f64::from(a.dm.unwrap_or(1))
                * if a.layout.is_eager() { dims(a.dd) } else { 1.0 },
        )
        .max(1.0);
    // Per request, µs: one disk access plus the family's bookkeeping.
    let per_request = match a.layout {
        LayoutName::Jbod | LayoutName::Striping => 0.5,
        LayoutName::EwArray | LayoutName::Ddm => 5.0,
        _ => 3.5,
    };
    // A scheduler weighing its whole queue costs more with more requests queued per disk.
    let queued = match spec.workload.kind {
        WorkloadKind::Closed => f64::from(spec.workload.queue_depth) / disks,
        _ => 4.0,
    };
    let weighs_queue = match a.scheduler {
        Some(SchedulerName::Disk(Policy::Fcfs)) => false,
        None => a.layout.is_eager(),
        Some(_) => true,
    };
    let per_request = if weighs_queue {
        per_request * (1.0 + queued / 8.0)
    } else {
        per_request
    };
    // Eager writing builds a free-space index and a map over the data set (one disk's
    // capacity when not given: ~2 M blocks, ~0.1 s).
    let start_up = if a.layout.is_eager() {
        let blocks = a.data_set_bytes.unwrap_or(9_100_000_000) as f64 / 4096.0;
        blocks * 0.05
    } else {
        0.0
    };
    requests * per_request + start_up
}

/// One axis of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The column name: `name`, else the key of a scalar axis.
    pub name: String,
    /// The key of a scalar axis; `None` for a compound axis.
    pub key: Option<String>,
    pub points: Vec<AxisPoint>,
}

/// One point of an axis.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisPoint {
    /// How the point is shown in a table: a scalar axis's value (strings bare, the rest in
    /// TOML syntax), a compound axis's label.
    pub shown: String,
    /// Its value in records: a scalar axis's value, a compound axis's label (a string).
    pub value: toml::Value,
    /// The keys it sets (dotted) and their values.
    pub sets: Vec<(String, toml::Value)>,
    line: Option<usize>,
}

/// A parsed sweep: the base experiment (with `--set` overrides applied) and its axes.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub base: Experiment,
    pub axes: Vec<Axis>,
    origin: String,
    len: usize,
}

impl Sweep {
    /// Parses a sweep file's `text` (from `origin`, its name in errors); `sets` override keys
    /// of the base experiment as in `spindle run` and may not touch a swept key.
    pub fn parse(text: &str, origin: &str, sets: &[String]) -> Result<Sweep, ConfigError> {
        let err = |path: &str, msg: String| ConfigError {
            origin: origin.to_string(),
            line: key_line(text, path),
            msg: format!("{path}: {msg}"),
        };
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError {
            origin: origin.to_string(),
            line: e.span().map(|s| line_of(text, s.start)),
            msg: e.message().to_string(),
        })?;
        if doc.contains_key("compare") {
            return Err(err(
                "compare",
                "a sweep file cannot have [[compare]] entries: each point is one row of the \
                 sweep; make the configurations a compound [[axis]] (name and points with \
                 label and set) instead"
                    .into(),
            ));
        }
        for set in sets {
            let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k).trim();
            if let Some(top @ ("compare" | "axis")) = key.split('.').next() {
                return Err(ConfigError {
                    origin: origin.to_string(),
                    line: None,
                    msg: format!(
                        "--set {set}: a sweep's `{top}` cannot be set from the command line"
                    ),
                });
            }
        }
        let raw = match doc.get("axis") {
            None => {
                return Err(ConfigError {
                    origin: origin.to_string(),
                    line: None,
                    msg: "no [[axis]] table: a sweep needs at least one axis (docs/sweep.md); \
                          a single experiment runs with `spindle run`"
                        .into(),
                })
            }
            Some(toml::Value::Array(a)) => a,
            Some(_) => {
                return Err(err(
                    "axis",
                    "must be an array of tables, each written [[axis]]".into(),
                ))
            }
        };
        let base_text = blank_axis(text).ok_or_else(|| {
            err(
                "axis",
                "could not separate the [[axis]] tables from the experiment; write each axis \
                 as an [[axis]] table"
                    .into(),
            )
        })?;
        let mut without_axis = doc.clone();
        without_axis.remove("axis");
        if base_text.parse::<toml::Table>().ok().as_ref() != Some(&without_axis) {
            return Err(err(
                "axis",
                "could not separate the [[axis]] tables from the experiment; write each axis \
                 as an [[axis]] table"
                    .into(),
            ));
        }
        let base = Experiment::parse(&base_text, origin, sets)?;
        if raw.is_empty() {
            return Err(err("axis", "no axes: add at least one [[axis]]".into()));
        }
        let axes = raw
            .iter()
            .enumerate()
            .map(|(i, v)| parse_axis(text, i, v).map_err(|(path, msg)| err(&path, msg)))
            .collect::<Result<Vec<_>, _>>()?;
        check_axes(&axes, sets).map_err(|(path, msg)| err(&path, msg))?;
        let mut len = 1usize;
        for (i, a) in axes.iter().enumerate() {
            len = len
                .checked_mul(a.points.len())
                .filter(|&n| n <= MAX_POINTS)
                .ok_or_else(|| {
                    err(
                        &format!("axis[{i}]"),
                        format!("the axes make more than {MAX_POINTS} points"),
                    )
                })?;
        }
        Ok(Sweep {
            base,
            axes,
            origin: origin.to_string(),
            len,
        })
    }

    /// The number of points: the product of the axes' lengths.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a sweep has at least one axis and every axis at least one point.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The point index along each axis of point `index` (the first axis outermost).
    pub fn coords(&self, index: usize) -> Vec<usize> {
        let mut rest = index;
        let mut coords = vec![0; self.axes.len()];
        for (c, axis) in coords.iter_mut().zip(&self.axes).rev() {
            *c = rest % axis.points.len();
            rest /= axis.points.len();
        }
        coords
    }

    /// Each axis's point at point `index`, in axis order.
    pub fn axis_points(&self, index: usize) -> Vec<&AxisPoint> {
        self.coords(index)
            .into_iter()
            .zip(&self.axes)
            .map(|(c, a)| &a.points[c])
            .collect()
    }

    /// `name = shown` for every axis of point `index`, e.g. `workload.queue_depth = 8, config = LOOK`.
    pub fn describe(&self, index: usize) -> String {
        self.axis_points(index)
            .iter()
            .zip(&self.axes)
            .map(|(p, a)| format!("{} = {}", a.name, p.shown))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The experiment of point `index` (< [`Sweep::len`]): the base with its keys set.
    pub fn point(&self, index: usize) -> Result<Experiment, ConfigError> {
        let mut settings = Vec::new();
        for (p, a) in self.axis_points(index).into_iter().zip(&self.axes) {
            for (key, value) in &p.sets {
                settings.push(Setting {
                    key: key.clone(),
                    value: value.clone(),
                    from: format!("axis {}", a.name),
                    line: p.line,
                });
            }
        }
        self.base
            .with_settings(&settings)
            .map_err(|e| self.point_error(index, e))
    }

    /// The point indices in the order to start them on a pool of workers: the costliest
    /// first (by [`estimated_cost`]), ties in point order, so that a slow point does not
    /// start last and leave the other workers idle while it runs. A point whose experiment
    /// does not build counts as free (it fails at once).
    pub fn longest_first(&self) -> Vec<usize> {
        let cost: Vec<f64> = (0..self.len)
            .map(|i| self.point(i).map_or(0.0, |e| estimated_cost(&e)))
            .collect();
        let mut order: Vec<usize> = (0..self.len).collect();
        order.sort_by(|&a, &b| cost[b].total_cmp(&cost[a]).then(a.cmp(&b)));
        order
    }

    /// `e` said of point `index`: its number and axis values are put before the message.
    pub fn point_error(&self, index: usize, e: ConfigError) -> ConfigError {
        ConfigError {
            msg: format!(
                "point {} of {} ({}): {}",
                index + 1,
                self.len,
                self.describe(index),
                e.msg
            ),
            origin: if e.origin.is_empty() {
                self.origin.clone()
            } else {
                e.origin
            },
            ..e
        }
    }
}

type Failure = (String, String);

fn parse_axis(text: &str, i: usize, v: &toml::Value) -> Result<Axis, Failure> {
    let at = |field: &str| {
        if field.is_empty() {
            format!("axis[{i}]")
        } else {
            format!("axis[{i}].{field}")
        }
    };
    let fail = |field: &str, msg: &str| (at(field), msg.to_string());
    let t = v.as_table().ok_or_else(|| {
        fail(
            "",
            "must be a table: `key` and `values` (a scalar axis) or `name` and `points` (a \
             compound axis)",
        )
    })?;
    if let Some(k) = t
        .keys()
        .find(|k| !matches!(k.as_str(), "key" | "values" | "name" | "points"))
    {
        return Err(fail(
            k,
            "unknown field; an axis has `key` and `values`, or `name` and `points`",
        ));
    }
    let string = |field: &str| -> Result<Option<String>, Failure> {
        match t.get(field) {
            None => Ok(None),
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
            Some(_) => Err(fail(field, "must be a non-empty string")),
        }
    };
    let name = string("name")?;
    let key = string("key")?;
    let list = |field: &str| -> Result<&Vec<toml::Value>, Failure> {
        match t.get(field) {
            Some(toml::Value::Array(a)) if !a.is_empty() => Ok(a),
            Some(toml::Value::Array(_)) => {
                Err(fail(field, "is empty: an axis needs at least one point"))
            }
            _ => Err(fail(field, "must be an array")),
        }
    };
    match (key, t.contains_key("points")) {
        (Some(_), true) => Err(fail(
            "",
            "has both `key` and `points`: a scalar axis has `key` and `values`, a compound \
             axis `name` and `points`",
        )),
        (None, false) => Err(fail(
            "",
            "has neither `key` nor `points`: a scalar axis has `key` and `values`, a compound \
             axis `name` and `points`",
        )),
        (Some(key), false) => {
            check_key(&key).map_err(|m| fail("key", &m))?;
            if !t.contains_key("values") {
                return Err(fail("", "a scalar axis (with `key`) needs `values`"));
            }
            let values = list("values")?;
            let mut points = Vec::with_capacity(values.len());
            for (j, value) in values.iter().enumerate() {
                if values[..j].contains(value) {
                    return Err(fail(
                        &format!("values[{j}]"),
                        &format!("{value} appears twice"),
                    ));
                }
                let shown = match value {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                points.push(AxisPoint {
                    shown,
                    value: value.clone(),
                    sets: vec![(key.clone(), value.clone())],
                    line: key_line(text, &at(&format!("values[{j}]"))),
                });
            }
            Ok(Axis {
                name: name.unwrap_or_else(|| key.clone()),
                key: Some(key),
                points,
            })
        }
        (None, true) => {
            if t.contains_key("values") {
                return Err(fail(
                    "values",
                    "belongs to a scalar axis (with `key`); a compound axis has `points`",
                ));
            }
            let name =
                name.ok_or_else(|| fail("", "a compound axis (with `points`) needs a `name`"))?;
            let raw = list("points")?;
            let mut points: Vec<AxisPoint> = Vec::with_capacity(raw.len());
            for (j, p) in raw.iter().enumerate() {
                let here = format!("points[{j}]");
                let p = p
                    .as_table()
                    .ok_or_else(|| fail(&here, "must be a table with `label` and `set`"))?;
                if let Some(k) = p.keys().find(|k| !matches!(k.as_str(), "label" | "set")) {
                    return Err(fail(
                        &here,
                        &format!("unknown field `{k}`; a point has `label` and `set`"),
                    ));
                }
                let label = match p.get("label") {
                    Some(toml::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
                    _ => return Err(fail(&here, "needs a `label`, a non-empty string")),
                };
                if points.iter().any(|q| q.shown == label) {
                    return Err(fail(&here, &format!("label {label:?} appears twice")));
                }
                let mut sets = Vec::new();
                match p.get("set") {
                    None => {}
                    Some(toml::Value::Table(set)) => flatten("", set, &mut sets),
                    Some(_) => {
                        return Err(fail(
                            &here,
                            "`set` must be a table of dotted keys and values, e.g. \
                             { \"array.disks\" = 6 }",
                        ))
                    }
                }
                for (k, _) in &sets {
                    check_key(k).map_err(|m| fail(&here, &format!("set.{k}: {m}")))?;
                }
                points.push(AxisPoint {
                    shown: label.clone(),
                    value: toml::Value::String(label),
                    sets,
                    line: key_line(text, &at(&here)),
                });
            }
            Ok(Axis {
                name,
                key: None,
                points,
            })
        }
    }
}

/// A point's `set` as dotted keys: `{ array = { disks = 6 } }` and `{ "array.disks" = 6 }`
/// both set `array.disks` alone (a table is merged key by key, not replaced).
fn flatten(prefix: &str, table: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(t) => flatten(&format!("{key}."), t, out),
            other => out.push((key, other.clone())),
        }
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if key.split('.').any(|p| p.trim().is_empty()) {
        return Err(format!(
            "{key:?} is not a dotted key such as \"workload.queue_depth\""
        ));
    }
    match key.split('.').next() {
        Some("compare") => Err("a sweep cannot set `compare`; use a compound axis".into()),
        Some("axis") => Err("an axis cannot set `axis`".into()),
        _ => Ok(()),
    }
}

/// Whether two dotted keys set the same thing (equal, or one inside the other).
fn overlaps(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| x.strip_prefix(y).is_some_and(|r| r.starts_with('.'));
    a == b || inside(a, b) || inside(b, a)
}

fn axis_keys(a: &Axis) -> Vec<&str> {
    let mut keys: Vec<&str> = a
        .points
        .iter()
        .flat_map(|p| p.sets.iter().map(|(k, _)| k.as_str()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn check_axes(axes: &[Axis], sets: &[String]) -> Result<(), Failure> {
    for (i, a) in axes.iter().enumerate() {
        let at = format!("axis[{i}]");
        if HEADLINE_FIELDS.contains(&a.name.as_str()) || STATE_FIELDS.contains(&a.name.as_str()) {
            return Err((
                at,
                format!(
                    "the name {:?} is an output field; name the axis otherwise",
                    a.name
                ),
            ));
        }
        if let Some(j) = axes[..i].iter().position(|b| b.name == a.name) {
            return Err((
                at,
                format!(
                    "axis[{j}] has the same name {:?}; give one a `name`",
                    a.name
                ),
            ));
        }
        for (j, b) in axes[..i].iter().enumerate() {
            for ka in axis_keys(a) {
                if let Some(kb) = axis_keys(b).into_iter().find(|kb| overlaps(ka, kb)) {
                    return Err((
                        at,
                        format!(
                            "sets `{ka}`, which axis[{j}] ({}) also sets (`{kb}`): a key belongs \
                             to one axis; make them one compound axis",
                            b.name
                        ),
                    ));
                }
            }
        }
        for set in sets {
            let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k).trim();
            if let Some(k) = axis_keys(a).into_iter().find(|k| overlaps(k, key)) {
                return Err((
                    at,
                    format!("sets `{k}`, which --set {set} also sets: drop the --set or the axis"),
                ));
            }
        }
    }
    Ok(())
}

/// The sweep file's text with its `[[axis]]` tables replaced by blanks, line breaks kept: the
/// base experiment, whose errors then point at the file's own lines.
fn blank_axis(text: &str) -> Option<String> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let root = doc.as_table();
    let mut spans = Vec::new();
    match root.get("axis")? {
        toml_edit::Item::ArrayOfTables(aot) => {
            for t in aot.iter() {
                table_spans(t, &mut spans)?;
            }
        }
        toml_edit::Item::Value(v) => {
            let start = root.key("axis")?.span()?.start;
            spans.push(start..v.span()?.end);
        }
        _ => return None,
    }
    let mut bytes = text.as_bytes().to_vec();
    for r in spans {
        for b in bytes.get_mut(r)? {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    String::from_utf8(bytes).ok()
}

/// The spans of a table's header and keys, and those of the tables under it.
fn table_spans(t: &toml_edit::Table, out: &mut Vec<std::ops::Range<usize>>) -> Option<()> {
    if !t.is_implicit() && !t.is_dotted() {
        out.push(t.span()?);
    }
    for (_, item) in t.iter() {
        match item {
            toml_edit::Item::Table(sub) => table_spans(sub, out)?,
            toml_edit::Item::ArrayOfTables(aot) => {
                for sub in aot.iter() {
                    table_spans(sub, out)?;
                }
            }
            _ => {}
        }
    }
    Some(())
}

#[cfg(test)]
mod tests;
