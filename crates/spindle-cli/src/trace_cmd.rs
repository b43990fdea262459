//! `spindle trace …`: statistics and format conversion of block traces.
//!
//! This module opens files (the core does not), shows progress on stderr, and prints. Errors
//! carry the path: `trace.txt: line 1042: field 5 (flags): expected a hex number, got "zz"`.
//! `convert` writes its output through [`crate::output::Output`]: `-` is standard output, a
//! file is replaced whole or not at all (a failure leaves no partial output), a device or FIFO
//! is written through, never replaced; an empty result is an error and writes nothing.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::output::Output;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use spindle::workload::trace::{
    self,
    characterise::{Characterisation, CharacteriseBuilder, StatsReport},
    stats::TraceStats,
    Compression, DeviceSet, SpeedUp, StatsBuilder, TraceError, TraceFormat, TraceIterExt,
    TraceRecord, TraceWriter,
};

#[derive(Subcommand)]
pub enum TraceCmd {
    /// Summarise a trace: requests, time span, read share, sizes, addresses, inter-arrival
    /// times, sequentiality, seek locality L, per-device breakdown.
    Stats(StatsArgs),
    /// The workload parameters the array models need (docs/advise.md): p, seek locality L,
    /// sizes, arrival rate and burstiness, read-after-write and overwrite shares, working set
    /// and LRU reuse distances.
    Characterise(StatsArgs),
    /// Convert a trace to another format, optionally keeping some devices, concatenating them
    /// into one logical data set, sorting by time and speeding it up.
    Convert(ConvertArgs),
    /// List the trace formats and what each can do.
    Formats,
}

#[derive(Args)]
pub struct StatsArgs {
    /// The trace (plain, .gz or .bz2: compression is recognised from the content).
    pub file: PathBuf,
    /// The input format (default: detected from the first lines).
    #[arg(long, short = 'f', value_name = "FORMAT")]
    pub format: Option<TraceFormat>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ConvertArgs {
    /// The input trace (plain, .gz or .bz2).
    pub input: PathBuf,
    /// The output file (replaced atomically on success; a device or FIFO is written through;
    /// `-`: standard output).
    pub output: PathBuf,
    /// The input format (default: detected from the first lines).
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<TraceFormat>,
    /// The output format: disksim, mqsim, spc, msr or fio3.
    #[arg(long, value_name = "FORMAT")]
    pub to: TraceFormat,
    /// Divide inter-arrival times by X (e.g. 2, 0.5, 3/2); arrivals become relative to the first
    /// record. Requires a trace sorted by time (see --sort). `--speedup 1` only rebases.
    #[arg(long, value_name = "X")]
    pub speedup: Option<SpeedUp>,
    /// Keep only these devices (comma separated).
    #[arg(long, value_name = "D,D,…", value_delimiter = ',')]
    pub devices: Option<Vec<u32>>,
    /// Concatenate all (kept) devices into one logical data set on device 0, in device-number
    /// order (reads the input twice).
    #[arg(long)]
    pub concat: bool,
    /// Sort records by arrival time (stable) before the speed-up. Loads the whole trace.
    #[arg(long)]
    pub sort: bool,
    /// Split every request into requests of at most one N-KiB page, at multiples of N KiB,
    /// all at the request's arrival (the page stream of a buffer pool; docs/traces.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub split_kb: Option<u32>,
}

pub fn run(cmd: TraceCmd, quiet: bool) -> anyhow::Result<()> {
    match cmd {
        TraceCmd::Stats(args) => stats(&args, quiet),
        TraceCmd::Characterise(args) => characterise(&args, quiet),
        TraceCmd::Convert(args) => convert(&args, quiet),
        TraceCmd::Formats => formats(),
    }
}

// ---------------------------------------------------------------------------------------------
// Input

pub(crate) type Records = Box<dyn Iterator<Item = Result<TraceRecord, TraceError>>>;

/// A byte-progress bar over the input file, hidden when quiet or when stderr is not a terminal.
pub(crate) fn progress(len: u64, quiet: bool, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    if quiet || !io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::hidden());
        return pb;
    }
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .expect("a valid template")
    .progress_chars("=> ");
    pb.set_style(style);
    pb.set_message(what.to_string());
    pb
}

pub(crate) struct Opened {
    pub format: TraceFormat,
    pub compression: Compression,
    pub records: Records,
}

/// Opens `path`, decompresses it if needed, and detects its format unless given.
pub(crate) fn open_trace(
    path: &Path,
    format: Option<TraceFormat>,
    pb: &ProgressBar,
) -> Result<Opened> {
    const READ_BUF_BYTES: usize = 256 * 1024;
    let name = path.display().to_string();
    let file = File::open(path).with_context(|| name.clone())?;
    pb.set_length(file.metadata().map(|m| m.len()).unwrap_or(0));
    let input = BufReader::with_capacity(READ_BUF_BYTES, pb.wrap_read(file));
    let (compression, input): (Compression, Box<dyn BufRead>) =
        trace::decompress(input).with_context(|| name.clone())?;
    let (format, records): (TraceFormat, Records) = match format {
        Some(f) => (f, Box::new(trace::open(f, input))),
        None => {
            let (f, reader) = trace::detect_and_open(input).with_context(|| name.clone())?;
            (f, Box::new(reader))
        }
    };
    Ok(Opened {
        format,
        compression,
        records,
    })
}

/// Turns a trace error into one naming the file.
pub(crate) fn at(path: &Path) -> impl Fn(TraceError) -> anyhow::Error + '_ {
    move |e| anyhow::Error::new(e).context(path.display().to_string())
}

// ---------------------------------------------------------------------------------------------
// stats

fn stats(args: &StatsArgs, quiet: bool) -> Result<()> {
    let pb = progress(0, quiet, "reading");
    let opened = open_trace(&args.file, args.format, &pb)?;
    let mut builder = StatsBuilder::new();
    // The characterisation (reuse distances) costs memory per access: JSON only.
    let mut chars = args.json.then(CharacteriseBuilder::new);
    for r in opened.records {
        let r = r.map_err(at(&args.file))?;
        builder.push(&r);
        if let Some(c) = chars.as_mut() {
            c.push(&r);
        }
    }
    pb.finish_and_clear();
    let stats = builder.finish();
    let characterisation = chars.map(CharacteriseBuilder::finish);
    if stats.requests == 0 {
        let hint = if args.format.is_some() {
            " (is it in another format? without --format it is detected)"
        } else {
            ""
        };
        return Err(anyhow!(
            "{}: no requests read as {}{hint}",
            args.file.display(),
            opened.format
        ));
    }
    let compression = match opened.compression {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Bzip2 => "bzip2",
    };
    let mut out = io::stdout().lock();
    if args.json {
        let path = args.file.display().to_string();
        let report = StatsReport {
            path: &path,
            format: opened.format,
            compression,
            stats: &stats,
            characterisation: characterisation.as_ref().expect("characterised for --json"),
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        let table = stats_table(&args.file.display().to_string(), opened.format, &stats);
        out.write_all(table.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// `1234567` → `1,234,567`.
/// `trace characterise FILE [--json]`: the stats' model inputs and the characterisation.
fn characterise(args: &StatsArgs, quiet: bool) -> Result<()> {
    let (stats, c, _) = characterise_file(&args.file, args.format, quiet)?;
    let mut out = io::stdout().lock();
    if args.json {
        let v = serde_json::json!({
            "path": args.file.display().to_string(),
            "requests": stats.requests,
            "p_read_fraction": c.read_fraction,
            "seek_locality": stats.seek_locality,
            "size": stats.size,
            "mean_iops": stats.time.as_ref().and_then(|t| t.mean_iops),
            "interarrival": stats.interarrival,
            "characterisation": c,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        out.write_all(characterise_table(&args.file.display().to_string(), &stats, &c).as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// Reads `path` once into its stats and characterisation (and its detected format).
pub(crate) fn characterise_file(
    path: &Path,
    format: Option<TraceFormat>,
    quiet: bool,
) -> Result<(TraceStats, Characterisation, TraceFormat)> {
    let pb = progress(0, quiet, "reading");
    let opened = open_trace(path, format, &pb)?;
    let mut builder = StatsBuilder::new();
    let mut chars = CharacteriseBuilder::new();
    for r in opened.records {
        let r = r.map_err(at(path))?;
        builder.push(&r);
        chars.push(&r);
    }
    pb.finish_and_clear();
    let stats = builder.finish();
    if stats.requests == 0 {
        return Err(anyhow!(
            "{}: no requests read as {}",
            path.display(),
            opened.format
        ));
    }
    Ok((stats, chars.finish(), opened.format))
}

fn characterise_table(path: &str, s: &TraceStats, c: &Characterisation) -> String {
    let mut t = String::new();
    let mut row = |k: &str, v: String| t.push_str(&format!("{k:<34}{v}\n"));
    row("trace", path.to_string());
    row("requests", thousands(s.requests));
    row("p (reads / requests)", format!("{:.3}", c.read_fraction));
    row("seek locality L (table 4.2)", opt(s.seek_locality, 2));
    if let Some(z) = &s.size {
        row(
            "request size mean / p50 / max",
            format!(
                "{} / {} / {}",
                human_bytes(z.mean_bytes),
                human_bytes(z.p50_bytes as f64),
                human_bytes(z.max_bytes as f64)
            ),
        );
    }
    row(
        "arrival rate",
        opt(s.time.as_ref().and_then(|t| t.mean_iops), 1) + " IOPS",
    );
    row(
        "inter-arrival CV",
        opt(s.interarrival.as_ref().and_then(|i| i.cv), 2),
    );
    for b in &c.burstiness {
        row(
            &format!("burstiness, {} ms windows", b.window_ms),
            format!(
                "dispersion {:.2}, peak/mean {:.1}",
                b.dispersion, b.peak_to_mean
            ),
        );
    }
    row(
        "read after write (< 1 h)",
        format!("{:.1} % of requests", c.read_after_write_pct),
    );
    row("overwrites", format!("{:.1} % of writes", c.overwrite_pct));
    row(
        "working set (4 KiB blocks)",
        format!(
            "{} ({})",
            thousands(c.working_set_blocks),
            human_bytes(c.working_set_bytes as f64)
        ),
    );
    for frac in [0.01, 0.1, 0.5] {
        let blocks = (c.working_set_blocks as f64 * frac).max(1.0);
        row(
            &format!("LRU read hits, cache {:.0} % of set", frac * 100.0),
            format!("{:.1} %", c.read_hit_ratio(blocks) * 100.0),
        );
    }
    t
}

fn thousands(v: impl Into<u128>) -> String {
    let s = v.into().to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units, like the reference script: `512 B`, `7.5 KiB`, `1.1 GiB`.
fn human_bytes(b: f64) -> String {
    let mut v = b;
    for unit in ["B", "KiB", "MiB", "GiB", "TiB"] {
        if v.abs() < 1024.0 {
            return if unit == "B" {
                format!("{v:.0} B")
            } else {
                format!("{v:.1} {unit}")
            };
        }
        v /= 1024.0;
    }
    format!("{v:.1} PiB")
}

/// A time in ns as ms or s with 3 decimals.
fn human_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else {
        format!("{:.3} ms", ns / 1e6)
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.decimals$}"))
}

fn stats_table(path: &str, format: TraceFormat, s: &TraceStats) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        ("trace", format!("{path} ({format})")),
        (
            "requests",
            format!(
                "{} (reads {}, writes {})",
                thousands(s.requests),
                thousands(s.reads),
                thousands(s.writes)
            ),
        ),
    ];
    if s.requests > 0 {
        rows.push((
            "reads / writes",
            format!(
                "{:.1}% / {:.1}%  (bytes read {}, written {})",
                s.read_pct,
                100.0 - s.read_pct,
                human_bytes(s.read_bytes as f64),
                human_bytes(s.write_bytes as f64)
            ),
        ));
    }
    if let Some(t) = &s.time {
        let nonmono = if t.nonmonotonic_records > 0 {
            format!(
                "  [records earlier than their predecessor: {}]",
                thousands(t.nonmonotonic_records)
            )
        } else {
            String::new()
        };
        rows.push(("first arrival", human_ns(t.first_ns as f64)));
        rows.push((
            "time span",
            format!("{}{nonmono}", human_ns(t.span_ns as f64)),
        ));
        rows.push(("mean IOPS", opt(t.mean_iops, 1)));
    }
    if let Some(z) = &s.size {
        rows.push((
            "request size",
            format!(
                "min {}, p50 {}, mean {}, p90 {}, p99 {}, max {}",
                human_bytes(z.min_bytes as f64),
                human_bytes(z.p50_bytes as f64),
                human_bytes(z.mean_bytes),
                human_bytes(z.p90_bytes as f64),
                human_bytes(z.p99_bytes as f64),
                human_bytes(z.max_bytes as f64)
            ),
        ));
        let top: Vec<String> = z
            .top
            .iter()
            .map(|t| format!("{} {:.2}%", human_bytes(t.bytes as f64), t.pct))
            .collect();
        rows.push(("most common sizes", top.join(", ")));
        let hist: Vec<String> = z
            .histogram
            .iter()
            .map(|b| {
                format!(
                    "≤{} {:.1}%",
                    human_bytes(b.le_bytes as f64),
                    100.0 * b.count as f64 / s.requests as f64
                )
            })
            .collect();
        rows.push(("size histogram", hist.join(", ")));
    }
    if let Some(a) = &s.address {
        rows.push((
            "LBA (512-B sectors)",
            format!(
                "min {}, max {}, highest end {} ({})",
                thousands(a.lba_min),
                thousands(a.lba_max),
                thousands(a.end_max),
                human_bytes(a.end_max as f64 * 512.0)
            ),
        ));
    }
    if let Some(ia) = &s.interarrival {
        rows.push((
            "inter-arrival",
            format!(
                "mean {}, p50 {}, p90 {}, p99 {}, max {}, CV {}",
                human_ns(ia.mean_ns),
                human_ns(ia.p50_ns as f64),
                human_ns(ia.p90_ns as f64),
                human_ns(ia.p99_ns as f64),
                human_ns(ia.max_ns as f64),
                opt(ia.cv, 2)
            ),
        ));
    }
    if s.requests > 0 {
        rows.push((
            "sequential",
            format!(
                "{:.1}% start where the device's previous request ended",
                s.sequential_pct
            ),
        ));
        rows.push(("seek locality L", opt(s.seek_locality, 2)));
    }
    rows.push(("devices", thousands(s.device_count as u64)));
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (k, v) in &rows {
        out.push_str(&format!("{k:<width$} : {v}\n"));
    }
    if !s.devices.is_empty() {
        out.push_str(&device_table(s));
    }
    out
}

fn device_table(s: &TraceStats) -> String {
    const SHOWN_MAX: usize = 16;
    let header = [
        "device",
        "requests",
        "read %",
        "lba min",
        "lba max",
        "end max",
        "seq %",
        "mean seek",
        "L",
    ];
    let mut rows: Vec<[String; 9]> = Vec::new();
    for d in s.top_devices(SHOWN_MAX) {
        rows.push([
            d.device.to_string(),
            thousands(d.requests),
            format!("{:.1}", d.read_pct),
            thousands(d.lba_min),
            thousands(d.lba_max),
            thousands(d.end_max),
            format!("{:.1}", d.sequential_pct),
            opt(d.mean_seek_sectors, 0),
            opt(d.seek_locality, 2),
        ]);
    }
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::from("\n");
    let line = |cells: Vec<&str>| {
        let mut l = String::from(" ");
        for (c, w) in cells.iter().zip(widths) {
            l.push_str(&format!(" {c:>w$}"));
        }
        l.push('\n');
        l
    };
    out.push_str(&line(header.to_vec()));
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    if s.devices.len() > SHOWN_MAX {
        out.push_str(&format!(
            "  … {} more devices (busiest {SHOWN_MAX} shown; --json lists all)\n",
            thousands((s.devices.len() - SHOWN_MAX) as u64)
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// convert

fn convert(args: &ConvertArgs, quiet: bool) -> Result<()> {
    if !args.to.is_writable() {
        return Err(trace::writer::UnwritableFormat { format: args.to }.into());
    }
    let filter = args
        .devices
        .as_ref()
        .map(|d| DeviceSet::new(d.iter().copied()));
    let input = &args.input;
    let layout = if args.concat {
        let pb = progress(0, quiet, "pass 1/2: extents");
        let opened = open_trace(input, args.from, &pb)?;
        let records: Records = match &filter {
            Some(f) => Box::new(opened.records.devices(f.clone())),
            None => opened.records,
        };
        let extents = trace::device_extents(records).map_err(at(input))?;
        pb.finish_and_clear();
        let layout = trace::ConcatLayout::try_new(&extents, 0)
            .with_context(|| input.display().to_string())?;
        if !quiet {
            const LISTED_MAX: usize = 32;
            for &(device, base, extent) in layout.parts().iter().take(LISTED_MAX) {
                eprintln!(
                    "spindle: device {device}: {} sectors at logical sector {}",
                    thousands(extent),
                    thousands(base)
                );
            }
            if layout.parts().len() > LISTED_MAX {
                eprintln!(
                    "spindle: … {} more devices",
                    thousands((layout.parts().len() - LISTED_MAX) as u64)
                );
            }
            eprintln!(
                "spindle: logical data set: {} sectors",
                thousands(layout.total_sectors())
            );
        }
        Some(layout)
    } else {
        None
    };

    let pb = progress(
        0,
        quiet,
        if args.concat {
            "pass 2/2: converting"
        } else {
            "converting"
        },
    );
    let opened = open_trace(input, args.from, &pb)?;
    let mut records = opened.records;
    if let Some(f) = filter {
        records = Box::new(records.devices(f));
    }
    if let Some(layout) = layout {
        records = Box::new(records.concat(layout));
    }
    if args.sort {
        let mut all: Vec<TraceRecord> = Vec::new();
        for r in records {
            all.push(r.map_err(at(input))?);
        }
        all.sort_by_key(|r| r.arrival); // stable: equal times keep their file order
        records = Box::new(all.into_iter().map(Ok));
    }
    if let Some(factor) = args.speedup {
        records = Box::new(records.speed_up(factor));
    }
    if let Some(kb) = args.split_kb {
        records = Box::new(records.pages(kb * 2));
    }

    // The output is opened at the first record: an empty result writes nothing.
    let mut records = records.peekable();
    match records.peek() {
        Some(Err(_)) => {
            if let Some(Err(e)) = records.next() {
                return Err(at(input)(e));
            }
        }
        Some(Ok(_)) => {}
        None => {
            return Err(anyhow!(
                "{}: no records to write{} (nothing written to {})",
                input.display(),
                if args.devices.is_some() {
                    " on the devices kept by --devices"
                } else {
                    ""
                },
                args.output.display()
            ))
        }
    }
    const WRITE_BUF_BYTES: usize = 256 * 1024;
    let (output, sink) = Output::create(&args.output)?;
    let mut writer = TraceWriter::new(args.to, BufWriter::with_capacity(WRITE_BUF_BYTES, sink))?;
    let out_name = || args.output.display().to_string();
    for r in records {
        writer
            .write(&r.map_err(at(input))?)
            .with_context(out_name)?;
    }
    let written = writer.records();
    let sink = writer
        .finish()
        .with_context(out_name)?
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(out_name)?;
    output.commit(sink)?;
    pb.finish_and_clear();
    if !quiet {
        eprintln!(
            "spindle: wrote {} records ({} → {}) to {}",
            thousands(written),
            opened.format,
            args.to,
            args.output.display()
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// formats

fn formats() -> Result<()> {
    let mut out = io::stdout().lock();
    for f in TraceFormat::ALL {
        let rw = if f.is_writable() {
            "read/write"
        } else {
            "read"
        };
        writeln!(out, "{:<9} {:<10} {}", f.name(), rw, f.description())?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formatting() {
        assert_eq!(thousands(0u64), "0");
        assert_eq!(thousands(999u64), "999");
        assert_eq!(thousands(1_000u64), "1,000");
        assert_eq!(thousands(1_234_567u64), "1,234,567");
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(7680.0), "7.5 KiB");
        assert_eq!(human_ns(15_329_511.8), "15.330 ms");
        assert_eq!(human_ns(1_532_935_854_228.0), "1532.936 s");
    }
}
