//! Reading the files spindle writes back as tables, for `spindle plot` and `spindle report`:
//! `run --json` (one object, `compare` rows inside), `run --csv`, `sweep --json` (JSON Lines)
//! and `sweep --csv`, `run --series` CSV, `validate --out`'s `<drive>.cdf.csv` and
//! `validate --json` lines. The kind is recognised from the content (the columns), not the
//! file name; anything else is an error naming the file.

use anyhow::{anyhow, bail};
use spindle::sweep::{HEADLINE_FIELDS, STATE_FIELDS};
use std::fmt;
use std::path::Path;

/// One cell: results hold numbers, words, flags and empty cells (a closed loop's
/// `offered_iops`).
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Num(f64),
    Text(String),
    Bool(bool),
    Empty,
}

impl Cell {
    pub fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(v) => Some(*v),
            _ => None,
        }
    }

    pub fn is_true(&self) -> bool {
        matches!(self, Cell::Bool(true))
    }

    /// From a CSV cell: a number, `true`/`false`, empty, or text.
    fn parse(s: &str) -> Cell {
        match s {
            "" => Cell::Empty,
            "true" => Cell::Bool(true),
            "false" => Cell::Bool(false),
            _ => s
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .map_or_else(|| Cell::Text(s.to_string()), Cell::Num),
        }
    }

    fn from_json(v: &serde_json::Value) -> Cell {
        match v {
            serde_json::Value::Null => Cell::Empty,
            serde_json::Value::Bool(b) => Cell::Bool(*b),
            serde_json::Value::Number(n) => n.as_f64().map_or(Cell::Empty, Cell::Num),
            serde_json::Value::String(s) => Cell::Text(s.clone()),
            other => Cell::Text(other.to_string()),
        }
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Up to 3 decimals, trailing zeros dropped: 1, 0.5, 152.347.
            Cell::Num(v) => {
                let s = format!("{v:.3}");
                let s = s.trim_end_matches('0').trim_end_matches('.');
                f.write_str(if s == "-0" { "0" } else { s })
            }
            Cell::Text(s) => f.write_str(s),
            Cell::Bool(b) => write!(f, "{b}"),
            Cell::Empty => Ok(()),
        }
    }
}

/// What a results file is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// `spindle run --json|--csv`: one row per configuration, `label` names it.
    Run,
    /// `spindle sweep --json|--csv`: one row per point; these columns are its axes.
    Sweep { axes: Vec<String> },
    /// `spindle run --series`: one row per sample and configuration.
    Series,
    /// `spindle validate --out`: `<drive>.cdf.csv`, one row per histogram bucket.
    Cdf,
    /// `spindle validate --json`: one row per drive (a table, no picture).
    Validate,
}

/// A results file as a table.
#[derive(Clone, Debug)]
pub struct Table {
    /// The file, as named on the command line.
    pub source: String,
    pub kind: Kind,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// The index of `name`, or an error naming the file and the columns it has.
    pub fn column(&self, name: &str) -> anyhow::Result<usize> {
        self.columns.iter().position(|c| c == name).ok_or_else(|| {
            anyhow!(
                "{}: no column {name:?} (it has: {})",
                self.source,
                self.columns.join(", ")
            )
        })
    }

    /// What the file is, in words.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::Run => "a run report",
            Kind::Sweep { .. } => "a sweep",
            Kind::Series => "a time series",
            Kind::Cdf => "a validation CDF",
            Kind::Validate => "validation scores",
        }
    }
}

/// Reads and recognises `path`.
pub fn read(path: &Path) -> anyhow::Result<Table> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{source}: {e}"))?;
    parse(&text, &source)
}

/// Recognises `text` (from `source`) by its content.
pub fn parse(text: &str, source: &str) -> anyhow::Result<Table> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        bail!("{source}: empty file");
    }
    if trimmed.starts_with('{') {
        // One object over many lines is a run report; one object per line is a sweep or
        // validate --json.
        // (A one-point sweep is one object on one line too: a run report has `latency`.)
        if let Ok(serde_json::Value::Object(obj)) = serde_json::from_str(text) {
            if obj.contains_key("latency") {
                return run_json(&obj, source);
            }
        }
        return json_lines(text, source);
    }
    csv(text, source)
}

/// The columns a run report row gives, named as in `run --csv` (energy: drives with power
/// data, docs/power.md).
const RUN_COLUMNS: [&str; 14] = [
    "label",
    "throughput_iops",
    "throughput_mb_s",
    "mean_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "mean_utilization",
    "offered_iops",
    "achieved_iops",
    "saturated",
    "sustainable",
    "energy_j",
    "mean_w",
];

fn run_json(
    obj: &serde_json::Map<String, serde_json::Value>,
    source: &str,
) -> anyhow::Result<Table> {
    if !obj.contains_key("throughput_iops") || !obj.contains_key("latency") {
        bail!(
            "{source}: a JSON object that is not a `spindle run --json` report (no throughput_iops and latency)"
        );
    }
    let mut rows = vec![run_row(obj)];
    if let Some(serde_json::Value::Array(compare)) = obj.get("compare") {
        for c in compare {
            if let serde_json::Value::Object(c) = c {
                rows.push(run_row(c));
            }
        }
    }
    Ok(Table {
        source: source.to_string(),
        kind: Kind::Run,
        columns: RUN_COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows,
    })
}

fn run_row(r: &serde_json::Map<String, serde_json::Value>) -> Vec<Cell> {
    let at = |path: &[&str]| {
        let mut v = r.get(path[0]);
        for k in &path[1..] {
            v = v.and_then(|v| v.get(k));
        }
        v.map_or(Cell::Empty, Cell::from_json)
    };
    // The mean over disks, as `run --csv`'s `mean_utilization`.
    let util = match r.get("disks") {
        Some(serde_json::Value::Array(d)) if !d.is_empty() => {
            let sum: f64 = d
                .iter()
                .filter_map(|d| d.get("utilization").and_then(serde_json::Value::as_f64))
                .sum();
            Cell::Num(sum / d.len() as f64)
        }
        _ => Cell::Empty,
    };
    vec![
        at(&["label"]),
        at(&["throughput_iops"]),
        at(&["throughput_mb_s"]),
        at(&["latency", "all", "mean_ms"]),
        at(&["latency", "all", "p50_ms"]),
        at(&["latency", "all", "p95_ms"]),
        at(&["latency", "all", "p99_ms"]),
        util,
        at(&["offered_iops"]),
        at(&["achieved_iops"]),
        at(&["saturated"]),
        at(&["sustainable"]),
        at(&["energy", "total_j"]),
        at(&["energy", "mean_w"]),
    ]
}

/// A JSON object's fields in the order written (serde_json's map would sort them, and a
/// sweep's axes are the fields before its outputs, in axis order).
struct Ordered(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = m.next_entry()? {
                    out.push(kv);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Fields a sweep line has besides its axes (docs/sweep.md).
fn is_sweep_output(name: &str) -> bool {
    HEADLINE_FIELDS.contains(&name)
        || STATE_FIELDS.contains(&name)
        || ["dr", "cache", "energy", "disk_writes_per_host_write"].contains(&name)
}

fn json_lines(text: &str, source: &str) -> anyhow::Result<Table> {
    // Each column: its name, the field it comes from and, for a nested object's member
    // (a DR plan, a cache, energy), the member. Axis names may hold dots themselves.
    let mut columns: Vec<(String, String, Option<String>)> = Vec::new();
    let mut objects = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ordered(fields) = serde_json::from_str(line)
            .map_err(|e| anyhow!("{source}:{}: not a JSON object per line: {e}", i + 1))?;
        for (k, v) in &fields {
            let names: Vec<(String, String, Option<String>)> = match v {
                serde_json::Value::Object(o) => o
                    .keys()
                    .map(|s| (format!("{k}.{s}"), k.clone(), Some(s.clone())))
                    .collect(),
                _ => vec![(k.clone(), k.clone(), None)],
            };
            for n in names {
                if !columns.iter().any(|c| c.0 == n.0) {
                    columns.push(n);
                }
            }
        }
        objects.push(fields);
    }
    let rows = objects
        .iter()
        .map(|fields| {
            columns
                .iter()
                .map(|(_, k, sub)| {
                    fields
                        .iter()
                        .find(|(n, _)| n == k)
                        .and_then(|(_, v)| match sub {
                            Some(s) => v.get(s),
                            None => Some(v),
                        })
                        .map_or(Cell::Empty, Cell::from_json)
                })
                .collect()
        })
        .collect();
    let has = |n: &str| columns.iter().any(|c| c.0 == n);
    let kind = if has("throughput_iops") && has("mean_ms") {
        Kind::Sweep {
            axes: columns
                .iter()
                .filter(|(_, k, _)| !is_sweep_output(k))
                .map(|c| c.0.clone())
                .collect(),
        }
    } else if has("drive") && has("rms_ms") {
        Kind::Validate
    } else {
        bail!(
            "{source}: JSON that is none of `spindle run --json` (throughput_iops, latency), `spindle sweep --json` (throughput_iops, mean_ms) and `spindle validate --json` (drive, rms_ms)"
        );
    };
    Ok(Table {
        source: source.to_string(),
        kind,
        columns: columns.into_iter().map(|c| c.0).collect(),
        rows,
    })
}

/// RFC 4180 records: fields split at commas, `"…"` quoting commas, newlines and doubled
/// quotes (the way spindle writes labels).
fn csv_records(text: &str, source: &str) -> anyhow::Result<Vec<Vec<String>>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => {
                line += usize::from(c == '\n');
                field.push(c);
            }
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
                line += 1;
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        bail!("{source}:{line}: a quoted field is not closed");
    }
    if !field.is_empty() || !record.is_empty() {
        record.push(field);
        records.push(record);
    }
    Ok(records)
}

fn csv(text: &str, source: &str) -> anyhow::Result<Table> {
    let mut records = csv_records(text, source)?.into_iter();
    let columns = records.next().unwrap_or_default();
    let has = |n: &str| columns.iter().any(|c| c == n);
    let kind = if has("edge_ms") && has("measured_cdf") && has("simulated_cdf") {
        Kind::Cdf
    } else if has("config") && has("t_s") && has("backlog_ops") {
        Kind::Series
    } else if has("label") && has("throughput_iops") && has("mean_ms") {
        Kind::Run
    } else if let Some(first) = columns.iter().position(|c| c == "throughput_iops") {
        // A sweep's axis columns come first, then its outputs (docs/sweep.md).
        Kind::Sweep {
            axes: columns[..first].to_vec(),
        }
    } else {
        bail!(
            "{source}: not a results file spindle writes: its header ({}) is none of run --csv, sweep --csv, run --series or validate --out's .cdf.csv",
            columns.join(",")
        );
    };
    let mut rows = Vec::new();
    for (i, r) in records.enumerate() {
        if r.len() == 1 && r[0].is_empty() {
            continue;
        }
        if r.len() != columns.len() {
            bail!(
                "{source}:{}: {} fields, the header has {}",
                i + 2,
                r.len(),
                columns.len()
            );
        }
        rows.push(r.iter().map(|s| Cell::parse(s)).collect());
    }
    Ok(Table {
        source: source.to_string(),
        kind,
        columns,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_csv_axes_are_the_columns_before_the_outputs() {
        let t = parse(
            "Q,\"a, b\",throughput_iops,mean_ms\n1,x,10.5,2\n2,\"y \"\"z\"\"\",11,2.5\n",
            "s.csv",
        )
        .unwrap();
        assert_eq!(
            t.kind,
            Kind::Sweep {
                axes: vec!["Q".into(), "a, b".into()]
            }
        );
        assert_eq!(t.rows[1][1], Cell::Text("y \"z\"".into()));
        assert_eq!(t.rows[0][2], Cell::Num(10.5));
    }

    #[test]
    fn sweep_json_keeps_axis_order_and_flattens_objects() {
        let t = parse(
            "{\"z.q\":1,\"a\":\"SATF\",\"throughput_iops\":5.0,\"mean_ms\":1.0,\"saturated\":false,\"cache\":{\"overflows\":3}}\n",
            "s.json",
        )
        .unwrap();
        assert_eq!(
            t.kind,
            Kind::Sweep {
                axes: vec!["z.q".into(), "a".into()]
            }
        );
        assert_eq!(
            t.rows[0][t.column("cache.overflows").unwrap()],
            Cell::Num(3.0)
        );
    }

    #[test]
    fn unknown_content_and_columns_are_errors_naming_the_file() {
        let e = parse("a,b\n1,2\n", "x.csv").unwrap_err().to_string();
        assert!(e.starts_with("x.csv: not a results file"), "{e}");
        let e = parse("{\"a\":1}\n{\"a\":2}\n", "x.json")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.json: JSON that is none of"), "{e}");
        let e = parse("label,throughput_iops,mean_ms\nx,1\n", "r.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.csv:2: 2 fields"), "{e}");
        let t = parse("label,throughput_iops,mean_ms\nx,1,2\n", "r.csv").unwrap();
        let e = t.column("p42_ms").unwrap_err().to_string();
        assert!(e.contains("r.csv: no column \"p42_ms\""), "{e}");
    }
}
