//! `spindle validate DIR | --all DIR`: replay real drives' measured traces and score the model.
//!
//! A drive directory holds `<drive>.trace` (DiskSim validate format), the DiskSim model
//! `<drive>.parv` and, optionally, DiskSim's own CDF `cdf_measured_vs_disksim.csv` (its rms is
//! computed from that file, never typed in). The replay and the score are the core's
//! (`spindle::validate`); this file finds the files, picks the drive model, prints, and writes
//! the CDF CSV and SVG plot of each drive (`--out`), each file atomically, after every drive
//! has run.
//!
//! The model: `--drive` when given (a built-in id, a drive TOML file or a `.parv` file);
//! otherwise the directory's `.parv` through the DiskSim import. When that import fails the
//! command fails: validating another model than the one asked for would mislead.

use crate::progress;
use anyhow::{anyhow, bail, Context};
use clap::Args;
use serde::Serialize;
use spindle::config::resolve_drive;
use spindle::drive::{disksim::import_parv, library, Drive};
use spindle::validate::{self, ClassMeans, DiskSimCdfs, ValidateReader, Validation};
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args)]
pub struct ValidateArgs {
    /// A drive directory (`<drive>.trace`, `<drive>.parv`); with --all, a folder of them.
    #[arg(value_name = "DIR", required_unless_present = "against_disksim")]
    dir: Option<PathBuf>,
    /// Validate every subdirectory of DIR that holds a `.trace` file.
    #[arg(long)]
    all: bool,
    /// The drive model: a built-in id, a drive file (TOML) or a DiskSim `.parv` file.
    /// Default: the directory's `.parv`.
    #[arg(long, value_name = "ID_OR_FILE", conflicts_with = "all")]
    drive: Option<String>,
    /// Write each drive's CDF (`<drive>.cdf.csv`) and plot (`<drive>.cdf.svg`) here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print one JSON object per drive (one per line).
    #[arg(long)]
    json: bool,
    /// Also write every request's measured and simulated service time to
    /// `<drive>.requests.csv` in the --out folder.
    #[arg(long, requires = "out")]
    requests: bool,
    /// Differential test instead: random drive models and request streams run through
    /// spindle and the DiskSim oracle built in this folder
    /// (`scripts/build_disksim_oracle.sh ORACLE`), compared request by request.
    #[arg(long, value_name = "ORACLE", conflicts_with_all = ["dir", "all", "drive", "out", "requests"])]
    against_disksim: Option<PathBuf>,
    /// With --against-disksim: how many random drive models.
    #[arg(long, default_value_t = 300, requires = "against_disksim")]
    models: u64,
    /// With --against-disksim: requests per model.
    #[arg(long, default_value_t = 2000, requires = "against_disksim")]
    model_requests: usize,
    /// With --against-disksim: the first model's seed (models use seed, seed + 1, ...).
    #[arg(long, default_value_t = 1, requires = "against_disksim")]
    seed: u64,
    /// With --against-disksim: `full` draws every parameter the importer accepts;
    /// `mechanics` only the layout, mechanics and interface (buffer off, overheads zero).
    #[arg(long, value_enum, default_value_t = ProfileArg::Full, requires = "against_disksim")]
    profile: ProfileArg,
    /// With --against-disksim: keep every model's files (parv, seek, trace, and requests.csv:
    /// both service times request by request) in this folder.
    #[arg(long, value_name = "DIR", requires = "against_disksim")]
    keep: Option<PathBuf>,
    /// With --against-disksim: switch off spindle's documented departures from DiskSim 4.0
    /// (docs/validation.md), to compare DiskSim's own semantics.
    #[arg(long, requires = "against_disksim")]
    disksim_semantics: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ProfileArg {
    Full,
    Mechanics,
}

/// One drive's result, as printed with `--json`.
#[derive(Serialize)]
struct DriveResult {
    drive: String,
    /// The drive model replayed on.
    model: String,
    requests: u64,
    measured_mean_ms: f64,
    simulated_mean_ms: f64,
    mean_error_pct: f64,
    rms_ms: f64,
    /// DiskSim 4.0's rms on the same trace, from its published CDF (null when absent).
    disksim_rms_ms: Option<f64>,
    mean_abs_diff_ms: f64,
    reads: ClassMeans,
    writes: ClassMeans,
}

struct Done {
    result: DriveResult,
    validation: Validation,
    disksim: Option<DiskSimCdfs>,
    /// Per-request CSV (with `--requests`).
    requests_csv: Option<String>,
}

/// The header of `<drive>.requests.csv`: one row per request in trace order.
const REQUESTS_HEADER: &str =
    "index,op,buffer,lbn,sectors,measured_ms,simulated_ms,simulated_minus_measured_ms,think_ms\n";

/// Files of `dir` whose name ends with `.ext`, sorted.
fn files_with(dir: &Path, ext: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let p = e.with_context(|| format!("{}", dir.display()))?.path();
        if p.is_file() && p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn dir_name(dir: &Path) -> String {
    dir.canonicalize()
        .ok()
        .as_deref()
        .unwrap_or(dir)
        .file_name()
        .map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
}

use spindle_files::{count_validate_records as count_records, open_input};

/// Imports a DiskSim `.parv` (includes resolved beside it).
fn import(parv: &Path) -> Result<Drive, String> {
    let base = parv.parent().map(Path::to_path_buf).unwrap_or_default();
    let read = move |name: &str| -> Result<String, String> {
        let p = Path::new(name);
        let p = if p.is_absolute() || p.exists() {
            p.to_path_buf()
        } else {
            base.join(p)
        };
        std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let spec = import_parv(&parv.display().to_string(), &read).map_err(|e| e.to_string())?;
    Drive::from_spec(&spec).map_err(|e| format!("{}: {e}", parv.display()))
}

/// The model for `dir` and its description: `choice` (`--drive`) when given, else the
/// directory's one `.parv`. A missing, ambiguous or unimportable `.parv` is an error naming
/// the directory; no other model is substituted.
fn pick_model(dir: &Path, choice: Option<&str>) -> anyhow::Result<(Drive, String)> {
    if let Some(m) = choice {
        if m.ends_with(".parv") {
            let d = import(Path::new(m))
                .map_err(|e| anyhow!("--drive {m}: the DiskSim import failed: {e}"))?;
            return Ok((d, m.to_string()));
        }
        let read = crate::run_cmd::reader_relative_to(None);
        let d = resolve_drive(m, &read).map_err(|e| anyhow!("--drive {m}: {e}"))?;
        let what = if library::builtin_spec(m).is_some() {
            format!("built-in {m}")
        } else {
            m.to_string()
        };
        return Ok((d, what));
    }
    let parvs = files_with(dir, "parv")?;
    let failure = match parvs.as_slice() {
        [parv] => match import(parv) {
            Ok(d) => {
                let file = parv.file_name().map(|f| f.to_string_lossy().into_owned());
                return Ok((d, file.unwrap_or_default()));
            }
            Err(e) => format!("the DiskSim import of its .parv failed: {e}"),
        },
        [] => "it has no .parv file".to_string(),
        _ => "it has several .parv files".to_string(),
    };
    // A validation that quietly used another model would report numbers for the wrong drive.
    bail!("{}: {failure} (name a model with --drive)", dir.display())
}

fn validate_dir(dir: &Path, choice: Option<&str>, per_request: bool) -> anyhow::Result<Done> {
    let name = dir_name(dir);
    let traces = files_with(dir, "trace")?;
    let trace_path = match traces.as_slice() {
        [t] => t.clone(),
        [] => bail!("{}: no .trace file (expected <drive>.trace)", dir.display()),
        _ => bail!(
            "{}: several .trace files; keep one per directory",
            dir.display()
        ),
    };
    let (drive, model) = pick_model(dir, choice)?;
    let count = count_records(&trace_path).map_err(|e| anyhow!(e))?;
    let shown = trace_path.display().to_string();
    let records = ValidateReader::new(open_input(&trace_path).map_err(|e| anyhow!(e))?);
    let mut rows = per_request.then(|| String::from(REQUESTS_HEADER));
    let mut index = 0u64;
    let v = validate::replay_observed(
        Arc::new(drive),
        records,
        Some(count),
        &mut |_, _| {},
        &mut |r, service| {
            if let Some(rows) = rows.as_mut() {
                let sim = service.as_ms_f64();
                let _ = writeln!(
                    rows,
                    "{index},{},{:?},{},{},{:.6},{:.6},{:.6},{:.6}",
                    if r.op == spindle::Op::Read { "R" } else { "W" },
                    r.buffer,
                    r.lbn,
                    r.sectors,
                    r.measured_ms(),
                    sim,
                    sim - r.measured_ms(),
                    r.think_us / 1000.0
                );
            }
            index += 1;
        },
    )
    .with_context(|| format!("{shown} on {model}"))?;
    let csv = dir.join("cdf_measured_vs_disksim.csv");
    let disksim = if csv.exists() {
        let text = std::fs::read_to_string(&csv).with_context(|| format!("{}", csv.display()))?;
        Some(DiskSimCdfs::parse_csv(&text).map_err(|e| anyhow!("{}: {e}", csv.display()))?)
    } else {
        None
    };
    let result = DriveResult {
        drive: name,
        model,
        requests: v.requests,
        measured_mean_ms: v.measured_mean_ms,
        simulated_mean_ms: v.simulated_mean_ms,
        mean_error_pct: v.mean_error_pct(),
        rms_ms: v.rms_ms,
        disksim_rms_ms: disksim.as_ref().map(DiskSimCdfs::rms_ms),
        mean_abs_diff_ms: v.mean_abs_diff_ms,
        reads: v.reads.clone(),
        writes: v.writes.clone(),
    };
    Ok(Done {
        result,
        validation: v,
        disksim,
        requests_csv: rows,
    })
}

/// The drive directories under `root`: subdirectories holding a `.trace` file, sorted.
fn drive_dirs(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for e in std::fs::read_dir(root).with_context(|| format!("{}", root.display()))? {
        let p = e.with_context(|| format!("{}", root.display()))?.path();
        if p.is_dir() && !files_with(&p, "trace")?.is_empty() {
            dirs.push(p);
        }
    }
    dirs.sort();
    if dirs.is_empty() {
        bail!("{}: no subdirectory holds a .trace file", root.display());
    }
    Ok(dirs)
}

/// The drive's service-time CDFs — measured, spindle's and DiskSim 4.0's when its CSV is
/// there — drawn as `spindle plot` draws a `.cdf.csv` (log time axis).
fn svg(d: &Done) -> anyhow::Result<String> {
    use crate::plot::{draw, figure};
    let r = &d.result;
    let measured = d.validation.measured_cdf();
    let simulated = d.validation.simulated_cdf();
    let mut series = vec![
        figure::cdf_series(
            format!("measured ({} requests)", r.requests),
            measured.points(),
            false,
        ),
        figure::cdf_series(
            format!("spindle, rms {:.3} ms", r.rms_ms),
            simulated.points(),
            false,
        ),
    ];
    if let Some(ds) = &d.disksim {
        series.push(figure::cdf_series(
            format!("DiskSim 4.0, rms {:.3} ms", ds.rms_ms()),
            ds.disksim.points(),
            true,
        ));
    }
    draw::svg(&figure::Figure {
        title: format!("{}: service-time CDF ({})", r.drive, r.model),
        panels: vec![figure::cdf_panel(series)],
    })
}

fn table(done: &[Done]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:<22} {:>8} {:>12} {:>12} {:>8} {:>8} {:>12}",
        "drive",
        "model",
        "requests",
        "measured ms",
        "simulated ms",
        "error",
        "rms ms",
        "DiskSim rms"
    );
    for d in done {
        let r = &d.result;
        let model = &r.model;
        let disksim = r
            .disksim_rms_ms
            .map_or_else(|| "-".to_string(), |x| format!("{x:.3}"));
        let _ = writeln!(
            s,
            "{:<12} {:<22} {:>8} {:>12.3} {:>12.3} {:>+7.1}% {:>8.3} {:>12}",
            r.drive,
            model,
            r.requests,
            r.measured_mean_ms,
            r.simulated_mean_ms,
            r.mean_error_pct,
            r.rms_ms,
            disksim
        );
    }
    s.push_str("(means are per request; rms = DiskSim's demerit figure, rms horizontal distance between the service-time CDFs)\n");
    s
}

pub fn run(args: ValidateArgs, quiet: bool) -> anyhow::Result<()> {
    if let Some(oracle) = args.against_disksim {
        return crate::differential_cmd::run(
            crate::differential_cmd::DifferentialArgs {
                oracle,
                models: args.models,
                requests: args.model_requests,
                seed: args.seed,
                keep: args.keep,
                json: args.json,
                disksim_semantics: args.disksim_semantics,
                profile: match args.profile {
                    ProfileArg::Full => spindle::validate::differential::Profile::Full,
                    ProfileArg::Mechanics => spindle::validate::differential::Profile::Mechanics,
                },
            },
            quiet,
        );
    }
    let dir = args
        .dir
        .clone()
        .expect("clap requires DIR without --against-disksim");
    let dirs = if args.all {
        drive_dirs(&dir)?
    } else {
        vec![dir]
    };
    let bar = progress::bar(Some(dirs.len() as u64), quiet, "validating");
    let mut done = Vec::with_capacity(dirs.len());
    for dir in &dirs {
        bar.set_message(format!("validating {}", dir_name(dir)));
        done.push(validate_dir(dir, args.drive.as_deref(), args.requests)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Every drive ran: only now write the files.
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).with_context(|| format!("{}", out.display()))?;
        for d in &done {
            let stem = &d.result.drive;
            crate::output::write_atomically(
                &out.join(format!("{stem}.cdf.csv")),
                d.validation.cdf_csv().as_bytes(),
            )?;
            crate::output::write_atomically(
                &out.join(format!("{stem}.cdf.svg")),
                svg(d)?.as_bytes(),
            )?;
            if let Some(rows) = &d.requests_csv {
                crate::output::write_atomically(
                    &out.join(format!("{stem}.requests.csv")),
                    rows.as_bytes(),
                )?;
            }
        }
    }
    let mut text = String::new();
    if args.json {
        for d in &done {
            text.push_str(&serde_json::to_string(&d.result)?);
            text.push('\n');
        }
    } else {
        text = table(&done);
    }
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

pub use spindle_files::validate_opener as opener;
