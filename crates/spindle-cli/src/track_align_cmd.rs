//! `spindle track-align [DRIVE]… [--requests N] [--seed S] [--write] [--json]`: the disk
//! efficiency of track-sized accesses aligned and unaligned, on every built-in drive (or the
//! drives named), as each drive file says and with zero-latency access; with `--raid 0|5
//! --disks N`, whole-stripe bandwidth against the stripe unit instead (docs/track_aligned.md).

use anyhow::Context;
use clap::Args;
use spindle::config::resolve_drive;
use spindle::drive::{library, Drive};
use spindle::track_align::{stripe_bandwidth, track_efficiency, StripeUnit, TrackEfficiency};
use spindle::Op;
use std::fmt::Write as _;
use std::io::Write;

#[derive(Args)]
pub struct TrackAlignArgs {
    /// Built-in drive ids or drive files (absent: every built-in drive).
    drives: Vec<String>,
    /// Random requests per measurement.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    requests: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Requests lie in this fraction of each disk from the outer edge (shorter seeks).
    #[arg(long, default_value_t = 1.0)]
    span: f64,
    /// Writes instead of reads.
    #[arg(long)]
    write: bool,
    /// Whole-stripe bandwidth of a RAID-0 (`0`) or RAID-5 (`5`) against the stripe unit.
    #[arg(long, value_parser = ["0", "5"])]
    raid: Option<String>,
    /// Disks of the `--raid` array.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=64))]
    disks: u32,
    /// Fixed stripe units (KiB) compared with a one-track unit under `--raid`.
    #[arg(long, value_delimiter = ',', default_value = "4,16,64,128,256,1024")]
    units_kib: Vec<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One drive: as its file says, and with zero latency (when the model allows it).
#[derive(serde::Serialize)]
struct Row {
    drive: String,
    name: String,
    zero_latency_in_file: bool,
    outer_track_kib: f64,
    as_file: TrackEfficiency,
    zero_latency: Option<TrackEfficiency>,
}

fn drives(args: &TrackAlignArgs) -> anyhow::Result<Vec<Drive>> {
    let read_file = |p: &str| std::fs::read(p).map_err(|e| format!("{p}: {e}"));
    let ids: Vec<String> = match args.drives.is_empty() {
        true => library::builtin_ids().map(String::from).collect(),
        false => args.drives.clone(),
    };
    ids.iter()
        .map(|id| {
            resolve_drive(id, &read_file)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("drive {id}"))
        })
        .collect()
}

pub fn run(args: TrackAlignArgs) -> anyhow::Result<()> {
    let op = if args.write { Op::Write } else { Op::Read };
    if !(args.span > 0.0 && args.span <= 1.0) {
        anyhow::bail!("--span: must be within (0, 1], got {}", args.span);
    }
    let drives = drives(&args)?;
    let out = match args.raid.as_deref() {
        Some(level) => raid(&args, &drives, level == "5", op)?,
        None => efficiency(&args, &drives, op)?,
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}

fn efficiency(args: &TrackAlignArgs, drives: &[Drive], op: Op) -> anyhow::Result<String> {
    let rows: Vec<Row> = drives
        .iter()
        .map(|d| {
            let outer = spindle::track_align::track_bounds(d, 0).1;
            Row {
                drive: d.id.clone(),
                name: d.name.clone(),
                zero_latency_in_file: d.zero_latency(),
                outer_track_kib: outer as f64 * f64::from(d.geometry().sector_bytes()) / 1024.0,
                as_file: track_efficiency(d, op, args.span, args.requests, args.seed),
                zero_latency: d
                    .with_zero_latency(true)
                    .ok()
                    .map(|z| track_efficiency(&z, op, args.span, args.requests, args.seed)),
            }
        })
        .collect();
    if args.json {
        return Ok(serde_json::to_string_pretty(&rows)? + "\n");
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "track-sized {} ({} random requests over {:.0} % of each disk, seed {}): efficiency = \
         media transfer / service time",
        if op == Op::Read { "reads" } else { "writes" },
        args.requests,
        args.span * 100.0,
        args.seed
    );
    let _ = writeln!(
        out,
        "{:<12} {:>3} {:>9} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6} {:>8}",
        "drive",
        "zl",
        "track KiB",
        "unaligned",
        "aligned",
        "ratio",
        "zl unal.",
        "zl align",
        "ratio",
        "zl rot"
    );
    for r in &rows {
        let (zu, za, zr, zrot) = match &r.zero_latency {
            Some(z) => (
                format!("{:.3}", z.unaligned.efficiency()),
                format!("{:.3}", z.aligned.efficiency()),
                format!("{:.2}", z.ratio()),
                format!("{:.3}ms", z.aligned.rotation_ms()),
            ),
            None => ("n/a".into(), "n/a".into(), "n/a".into(), "n/a".into()),
        };
        let _ = writeln!(
            out,
            "{:<12} {:>3} {:>9.1} | {:>9.3} {:>9.3} {:>6.2} | {:>9} {:>9} {:>6} {:>8}",
            r.drive,
            if r.zero_latency_in_file { "yes" } else { "no" },
            r.outer_track_kib,
            r.as_file.unaligned.efficiency(),
            r.as_file.aligned.efficiency(),
            r.as_file.ratio(),
            zu,
            za,
            zr,
            zrot
        );
    }
    Ok(out)
}

fn raid(args: &TrackAlignArgs, drives: &[Drive], parity: bool, op: Op) -> anyhow::Result<String> {
    let mut json = Vec::new();
    let mut out = String::new();
    let level = if parity { "RAID-5" } else { "RAID-0" };
    for d in drives {
        let sector = d.geometry().sector_bytes();
        let mut units = vec![StripeUnit::Track, StripeUnit::UnalignedTrack];
        for &k in &args.units_kib {
            let bytes = u64::from(k) * 1024;
            if k == 0 || !bytes.is_multiple_of(u64::from(sector)) {
                anyhow::bail!(
                    "--units-kib: {k} KiB is not a positive multiple of the {sector}-byte sector"
                );
            }
            units.push(StripeUnit::Sectors(
                u32::try_from(bytes / u64::from(sector)).context("--units-kib: too large")?,
            ));
        }
        let zl = d.with_zero_latency(true).ok();
        let _ = writeln!(
            out,
            "{} {level} of {} disks, whole-stripe {} ({} random stripes, seed {})",
            d.id,
            args.disks,
            if op == Op::Read { "reads" } else { "writes" },
            args.requests,
            args.seed
        );
        let _ = writeln!(
            out,
            "{:>12} {:>9} {:>10} {:>10} {:>10} {:>10}",
            "stripe unit", "unit KiB", "MB/s", "rot ms", "zl MB/s", "zl rot ms"
        );
        for unit in units {
            let b = stripe_bandwidth(d, args.disks, parity, unit, op, args.requests, args.seed)
                .map_err(anyhow::Error::msg)?;
            let z = match &zl {
                Some(z) => Some(
                    stripe_bandwidth(z, args.disks, parity, unit, op, args.requests, args.seed)
                        .map_err(anyhow::Error::msg)?,
                ),
                None => None,
            };
            let name = match unit {
                StripeUnit::Track => "one track".to_string(),
                StripeUnit::UnalignedTrack => "track, unal.".to_string(),
                StripeUnit::Sectors(n) => {
                    format!("{} KiB", u64::from(n) * u64::from(sector) / 1024)
                }
            };
            let (zm, zr) = match &z {
                Some(z) => (format!("{:.1}", z.mb_s), format!("{:.3}", z.rotation_ms)),
                None => ("n/a".into(), "n/a".into()),
            };
            let _ = writeln!(
                out,
                "{:>12} {:>9.1} {:>10.1} {:>10.3} {:>10} {:>10}",
                name, b.unit_kib, b.mb_s, b.rotation_ms, zm, zr
            );
            json.push(serde_json::json!({
                "drive": d.id, "level": level, "disks": args.disks,
                "as_file": b, "zero_latency": z,
            }));
        }
        out.push('\n');
    }
    if args.json {
        return Ok(serde_json::to_string_pretty(&json)? + "\n");
    }
    Ok(out)
}
