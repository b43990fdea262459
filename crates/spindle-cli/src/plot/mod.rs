//! `spindle plot RESULTS -o FIG.svg|png [--x COLUMN] [--y COLUMN]… [--title T]`: a figure of
//! a results file spindle wrote (docs/plot.md). `results` reads the file, `figure` chooses
//! what goes where, `draw` renders it.

pub mod draw;
pub mod figure;
pub mod results;

use anyhow::bail;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct PlotArgs {
    /// A results file: `run --json|--csv`, `sweep --json|--csv`, `run --series` CSV or
    /// `validate --out`'s `<drive>.cdf.csv` (recognised by its content).
    results: PathBuf,
    /// The figure: `.svg` or `.png` (written whole or not at all).
    #[arg(short, long, value_name = "FIG.svg|png")]
    output: PathBuf,
    /// The column on the x axis (default: a sweep's first varying numeric axis; `label` for a
    /// run; `t_s` for a time series; `edge_ms` for a CDF).
    #[arg(long, value_name = "COLUMN")]
    x: Option<String>,
    /// A column on the y axis, one panel each (default: throughput_iops and mean_ms; a time
    /// series: outstanding, backlog_ops and occupancy when present).
    #[arg(long, value_name = "COLUMN")]
    y: Vec<String>,
    /// A logarithmic y axis (all plotted values must be above 0).
    #[arg(long)]
    log_y: bool,
    /// The figure's title (default: the file's name).
    #[arg(long)]
    title: Option<String>,
}

/// The picture formats, from the output's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

pub fn format_of(path: &Path) -> anyhow::Result<Format> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => bail!(
            "{}: unknown figure format (name the output .svg or .png)",
            path.display()
        ),
    }
}

pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    // Refused before any work: a bad format, a directory, a link to nothing.
    let format = format_of(&args.output)?;
    crate::output::check_writable(&args.output)?;
    let table = results::read(&args.results)?;
    let choice = figure::Choice {
        x: args.x,
        log_y: args.log_y,
        y: args.y,
        title: args.title,
    };
    let fig = figure::build(&table, &choice)?;
    let bytes = match format {
        Format::Svg => draw::svg(&fig)?.into_bytes(),
        Format::Png => draw::png(&fig)?,
    };
    crate::output::write_atomically(&args.output, &bytes)
}
