//! `spindle._core`: the Python package's bridge to the core, called in-process (no
//! subprocess). The pure-Python part (`spindle/`) wraps these functions with the documented
//! API; everything here takes and returns plain data (strings, bytes, lists) so the same
//! calls run in a Ray worker.
//!
//! Runs go through the same functions as `spindle run` and `spindle sweep`:
//! [`Experiment::parse_with`] (with `--set`/`--unset` strings), the openers of
//! `spindle-files`, and the sweep text of `spindle::sweep`; so a report's JSON and a sweep's
//! CSV are the command line's, byte for byte.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use spindle::config::{ConfigError as CoreConfigError, Experiment, WorkloadKind};
use spindle::sweep::{Format, PointResult, Sweep};
use spindle::workload::trace::characterise::{CharacteriseBuilder, StatsReport};
use spindle::workload::trace::{self, StatsBuilder, TraceFormat, TraceRecord};
use std::path::PathBuf;

create_exception!(
    spindle._core,
    SpindleError,
    PyException,
    "Base class of every error spindle raises."
);
create_exception!(
    spindle._core,
    ConfigError,
    SpindleError,
    "A bad experiment: `file`, `line` (1-based, or None) and `key` (or None) say where."
);
create_exception!(
    spindle._core,
    TraceError,
    SpindleError,
    "A trace that cannot be read: `file` names it."
);

/// A core configuration error as `spindle.ConfigError` (its text is the command line's).
fn config_error(e: CoreConfigError) -> PyErr {
    Python::with_gil(|py| {
        let err = ConfigError::new_err(e.to_string());
        let value = err.value(py);
        let _ = value.setattr("file", e.origin.clone());
        let _ = value.setattr("line", e.line);
        let _ = value.setattr("key", key_of(&e.msg));
        let _ = value.setattr("reason", e.msg.clone());
        err
    })
}

/// The dotted key an error message starts with (`workload.queue_depth: …`,
/// `array.dd (from axis …): …`), if it starts with one.
fn key_of(msg: &str) -> Option<String> {
    let end = msg.find([':', ' '])?;
    let (key, rest) = msg.split_at(end);
    let named = rest.starts_with(':') || rest.starts_with(" (from ");
    let ok = named
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        && key.chars().next().is_some_and(|c| c.is_ascii_alphabetic());
    ok.then(|| key.to_string())
}

fn trace_error(file: &str, msg: impl std::fmt::Display) -> PyErr {
    Python::with_gil(|py| {
        let err = TraceError::new_err(format!("{file}: {msg}"));
        let _ = err.value(py).setattr("file", file.to_string());
        err
    })
}

/// A Python value as a TOML value (dicts become tables, lists arrays).
fn to_toml(v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, item) in d.iter() {
            let k: String = k
                .extract()
                .map_err(|_| PyValueError::new_err("experiment keys must be strings"))?;
            t.insert(k, to_toml(&item)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = v.extract()?;
        return Ok(toml::Value::Array(
            items.iter().map(to_toml).collect::<PyResult<_>>()?,
        ));
    }
    Err(PyValueError::new_err(format!(
        "cannot write {} as a TOML value",
        v.get_type().name()?
    )))
}

/// A dict as TOML text (an experiment given as a dict).
#[pyfunction]
fn dict_to_toml(d: &Bound<'_, PyDict>) -> PyResult<String> {
    match to_toml(d.as_any())? {
        toml::Value::Table(t) => {
            toml::to_string(&t).map_err(|e| PyValueError::new_err(e.to_string()))
        }
        _ => unreachable!("a dict is a table"),
    }
}

/// An override `key=value` as `--set` takes it, the value written in TOML syntax.
#[pyfunction]
fn set_string(key: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(format!("{key}={}", to_toml(value)?))
}

fn base_dir(base: Option<String>) -> Option<PathBuf> {
    base.map(PathBuf::from)
}

/// Runs an experiment as `spindle run --json` does and returns that JSON.
#[pyfunction]
#[pyo3(signature = (text, origin, base, sets, unsets))]
fn run(
    py: Python<'_>,
    text: String,
    origin: String,
    base: Option<String>,
    sets: Vec<String>,
    unsets: Vec<String>,
) -> PyResult<String> {
    let base = base_dir(base);
    py.allow_threads(move || {
        let exp = Experiment::parse_with(&text, &origin, &unsets, &sets).map_err(config_error)?;
        let base = base.as_deref();
        let read_file = spindle_files::reader_relative_to(base);
        let open_trace = spindle_files::replay::opener(base);
        let open_validate = spindle_files::validate_opener(base);
        let report = exp
            .run_with(
                &read_file,
                &open_trace,
                &open_validate,
                &mut |_, _, _, _| {},
            )
            .map_err(config_error)?;
        // As `spindle run`: a DR secondary that cannot keep its RTO is refused.
        if exp.spec.workload.kind == WorkloadKind::Dr {
            if let Some(i) = report
                .rows()
                .find_map(|r| r.dr.as_ref().and_then(|d| d.infeasible.as_ref()))
            {
                return Err(config_error(exp.error(&i.key, i.reason.clone())));
            }
        }
        serde_json::to_string_pretty(&report).map_err(|e| SpindleError::new_err(e.to_string()))
    })
}

fn parse_sweep(text: &str, origin: &str, sets: &[String]) -> PyResult<Sweep> {
    Sweep::parse(text, origin, sets).map_err(config_error)
}

/// The number of points of a sweep (parsing it; errors as `spindle sweep`'s).
#[pyfunction]
fn sweep_len(text: &str, origin: &str, sets: Vec<String>) -> PyResult<usize> {
    Ok(parse_sweep(text, origin, &sets)?.len())
}

/// The points in the order a pool should start them: the costliest first.
#[pyfunction]
fn sweep_order(text: &str, origin: &str, sets: Vec<String>) -> PyResult<Vec<usize>> {
    Ok(parse_sweep(text, origin, &sets)?.longest_first())
}

fn pool(jobs: usize) -> PyResult<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| SpindleError::new_err(format!("starting the worker threads: {e}")))
}

/// Checks every point before any runs (as `spindle sweep`): the first bad point's error.
#[pyfunction]
#[pyo3(signature = (text, origin, base, sets, jobs))]
fn sweep_check(
    py: Python<'_>,
    text: String,
    origin: String,
    base: Option<String>,
    sets: Vec<String>,
    jobs: usize,
) -> PyResult<()> {
    let base = base_dir(base);
    py.allow_threads(move || {
        let sweep = parse_sweep(&text, &origin, &sets)?;
        spindle_files::check_points(&sweep, base.as_deref(), &pool(jobs)?).map_err(config_error)
    })
}

fn encode(r: &spindle::metrics::Report) -> PyResult<Vec<u8>> {
    bincode::serialize(&PointResult::of(r)).map_err(|e| SpindleError::new_err(e.to_string()))
}

/// Runs every point on `jobs` threads (as `spindle sweep --jobs`); each point's result as
/// bytes, in point order.
#[pyfunction]
#[pyo3(signature = (text, origin, base, sets, jobs))]
fn sweep_local(
    py: Python<'_>,
    text: String,
    origin: String,
    base: Option<String>,
    sets: Vec<String>,
    jobs: usize,
) -> PyResult<Vec<Py<PyBytes>>> {
    let base = base_dir(base);
    let encoded: Vec<Vec<u8>> = py.allow_threads(move || {
        let sweep = parse_sweep(&text, &origin, &sets)?;
        let pool = pool(jobs.clamp(1, sweep.len().max(1)))?;
        spindle_files::run_points(&sweep, base.as_deref(), &pool, &|| {})
            .into_iter()
            .map(|r| encode(&r.map_err(config_error)?))
            .collect::<PyResult<Vec<_>>>()
    })?;
    Ok(encoded
        .iter()
        .map(|b| PyBytes::new(py, b).unbind())
        .collect())
}

/// Runs point `index` of a sweep (one Ray task); its result as bytes.
#[pyfunction]
#[pyo3(signature = (text, origin, base, sets, index))]
fn sweep_point<'py>(
    py: Python<'py>,
    text: String,
    origin: String,
    base: Option<String>,
    sets: Vec<String>,
    index: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let base = base_dir(base);
    let bytes = py.allow_threads(move || {
        let sweep = parse_sweep(&text, &origin, &sets)?;
        if index >= sweep.len() {
            return Err(PyValueError::new_err(format!(
                "point {index} of a sweep of {} points",
                sweep.len()
            )));
        }
        encode(&spindle_files::run_point(&sweep, base.as_deref(), index).map_err(config_error)?)
    })?;
    Ok(PyBytes::new(py, &bytes))
}

fn decode(results: &[Bound<'_, PyBytes>]) -> PyResult<Vec<PointResult>> {
    results
        .iter()
        .map(|b| {
            bincode::deserialize(b.as_bytes())
                .map_err(|e| SpindleError::new_err(format!("a point's result: {e}")))
        })
        .collect()
}

/// The sweep's text (`"table"`, `"csv"` or `"json"`) from every point's result, in order;
/// and the points' warnings.
#[pyfunction]
fn sweep_format(
    text: &str,
    origin: &str,
    sets: Vec<String>,
    results: Vec<Bound<'_, PyBytes>>,
    format: &str,
) -> PyResult<(String, Vec<String>)> {
    let sweep = parse_sweep(text, origin, &sets)?;
    if results.len() != sweep.len() {
        return Err(PyValueError::new_err(format!(
            "{} results for a sweep of {} points",
            results.len(),
            sweep.len()
        )));
    }
    let fmt = Format::parse(format)
        .ok_or_else(|| PyValueError::new_err(format!("unknown format {format:?}")))?;
    let points = decode(&results)?;
    Ok((
        spindle::sweep::format(&sweep, &points, fmt),
        spindle::sweep::warnings(&sweep, &points),
    ))
}

fn parse_format(format: Option<&str>) -> PyResult<Option<TraceFormat>> {
    format
        .map(|f| {
            f.parse::<TraceFormat>()
                .map_err(|e| PyValueError::new_err(e.to_string()))
        })
        .transpose()
}

type Records = Box<dyn Iterator<Item = Result<TraceRecord, trace::TraceError>>>;

/// Opens a trace (gzip/bzip2 undone; format detected unless given).
fn open_records(
    path: &str,
    format: Option<TraceFormat>,
) -> PyResult<(TraceFormat, &'static str, Records)> {
    let file = std::fs::File::open(path).map_err(|e| trace_error(path, e))?;
    let input = std::io::BufReader::with_capacity(256 * 1024, file);
    let (compression, input) = trace::decompress(input).map_err(|e| trace_error(path, e))?;
    let compression = match compression {
        trace::Compression::None => "none",
        trace::Compression::Gzip => "gzip",
        trace::Compression::Bzip2 => "bzip2",
    };
    let (format, records): (TraceFormat, Records) = match format {
        Some(f) => (f, Box::new(trace::open(f, input))),
        None => {
            let (f, reader) = trace::detect_and_open(input).map_err(|e| trace_error(path, e))?;
            (f, Box::new(reader))
        }
    };
    Ok((format, compression, records))
}

/// A trace read in batches of columns (`spindle.trace.read_batches` makes Arrow record
/// batches of them): arrival_ns, device, lba, sectors (512-byte), op ("R" or "W").
#[pyclass(unsendable)]
struct TraceBatches {
    path: String,
    format: TraceFormat,
    records: Records,
    batch: usize,
}

#[pymethods]
impl TraceBatches {
    #[new]
    #[pyo3(signature = (path, format=None, batch_size=65536))]
    fn new(path: String, format: Option<&str>, batch_size: usize) -> PyResult<Self> {
        let (format, _, records) = open_records(&path, parse_format(format)?)?;
        Ok(TraceBatches {
            path,
            format,
            records,
            batch: batch_size.max(1),
        })
    }

    /// The trace's format (detected or given).
    #[getter]
    fn format(&self) -> String {
        self.format.to_string()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut arrival = Vec::with_capacity(self.batch);
        let mut device = Vec::with_capacity(self.batch);
        let mut lba = Vec::with_capacity(self.batch);
        let mut sectors = Vec::with_capacity(self.batch);
        let mut op = Vec::with_capacity(self.batch);
        for rec in self.records.by_ref().take(self.batch) {
            let rec = rec.map_err(|e| trace_error(&self.path, e))?;
            arrival.push(rec.arrival.0);
            device.push(rec.device);
            lba.push(rec.lba);
            sectors.push(rec.sectors);
            op.push(if rec.op == spindle::Op::Read {
                "R"
            } else {
                "W"
            });
        }
        if arrival.is_empty() {
            return Ok(None);
        }
        let d = PyDict::new(py);
        d.set_item("arrival_ns", arrival)?;
        d.set_item("device", device)?;
        d.set_item("lba", lba)?;
        d.set_item("sectors", sectors)?;
        d.set_item("op", op)?;
        Ok(Some(d))
    }
}

/// A trace's statistics as `spindle trace stats --json` prints them (JSON text).
#[pyfunction]
#[pyo3(signature = (path, format=None))]
fn trace_stats(py: Python<'_>, path: String, format: Option<String>) -> PyResult<String> {
    let format = parse_format(format.as_deref())?;
    py.allow_threads(move || {
        let (format, compression, records) = open_records(&path, format)?;
        let mut builder = StatsBuilder::new();
        let mut chars = CharacteriseBuilder::new();
        for r in records {
            let r = r.map_err(|e| trace_error(&path, e))?;
            builder.push(&r);
            chars.push(&r);
        }
        let stats = builder.finish();
        if stats.requests == 0 {
            return Err(trace_error(&path, format!("no requests read as {format}")));
        }
        let characterisation = chars.finish();
        let report = StatsReport {
            path: &path,
            format,
            compression,
            stats: &stats,
            characterisation: &characterisation,
        };
        serde_json::to_string(&report).map_err(|e| SpindleError::new_err(e.to_string()))
    })
}

/// The built-in drive library: (id, drive TOML) pairs.
#[pyfunction]
fn drive_specs() -> Vec<(String, String)> {
    spindle::drive::library::builtin_ids()
        .map(|id| {
            (
                id.to_string(),
                spindle::drive::library::builtin_spec(id)
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

/// A built-in drive's derived numbers (as `spindle drives list` shows them).
#[pyfunction]
fn drive_summary<'py>(py: Python<'py>, id: &str) -> PyResult<Bound<'py, PyDict>> {
    let d = spindle::config::resolve_drive(id, &spindle_files::reader_relative_to(None))
        .map_err(|e| SpindleError::new_err(format!("drive {id}: {e}")))?;
    let g = d.geometry();
    let out = PyDict::new(py);
    out.set_item("name", d.name.clone())?;
    out.set_item("capacity_bytes", g.capacity_bytes())?;
    out.set_item("sector_bytes", g.sector_bytes())?;
    out.set_item("surfaces", g.surfaces())?;
    out.set_item("cylinders", g.cylinders())?;
    out.set_item("zones", g.zone_count())?;
    out.set_item(
        "mean_seek_ms",
        d.seek_curve(spindle::Op::Read).mean_random().as_ms_f64(),
    )?;
    out.set_item("half_rotation_ms", d.period().as_ms_f64() / 2.0)?;
    out.set_item("contains_estimates", d.estimated)?;
    Ok(out)
}

/// The built-in default experiment's TOML (`spindle run` without FILE).
#[pyfunction]
fn default_experiment() -> &'static str {
    spindle::config::DEFAULT_EXPERIMENT
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SpindleError", py.get_type::<SpindleError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add_function(wrap_pyfunction!(dict_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(set_string, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_len, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_order, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_check, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_local, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_format, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(drive_specs, m)?)?;
    m.add_function(wrap_pyfunction!(drive_summary, m)?)?;
    m.add_function(wrap_pyfunction!(default_experiment, m)?)?;
    m.add_class::<TraceBatches>()?;
    Ok(())
}
