//! `spindle drives list|show NAME|import FILE.parv`: the built-in drive library, and DiskSim
//! 4.0 models turned into drive files.

use anyhow::Context;
use clap::Subcommand;
use spindle::drive::{builtin_drive, library, DriveSpec};
use spindle::Op;
use std::fmt::Write as _;
use std::io::Write;

#[derive(Subcommand)]
pub enum DrivesCmd {
    /// One line per built-in drive.
    List,
    /// Every parameter of one drive, with its source.
    Show {
        /// A drive id from `spindle drives list`, or the path of a drive file.
        name: String,
    },
    /// Convert a DiskSim 4.0 model (`.parv` and the files it sources) into a drive file, with
    /// the DiskSim file and parameter of every value in [provenance].
    Import {
        /// The DiskSim `.parv` file.
        file: std::path::PathBuf,
        /// Write the drive file here (atomically) instead of to stdout.
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
    },
}

pub fn run(cmd: DrivesCmd) -> anyhow::Result<()> {
    let mut out = String::new();
    match cmd {
        DrivesCmd::Import { file, output } => {
            out = import(&file)?;
            if let Some(path) = output {
                return crate::output::write_atomically(&path, out.as_bytes());
            }
        }
        DrivesCmd::List => {
            let _ = writeln!(
                out,
                "{:<12} {:<44} {:>6} {:>9} {:>6} {:>4} {:>8} {:>5} {:>8} {:>8}  notes",
                "id",
                "name",
                "rpm",
                "capacity",
                "sector",
                "surf",
                "cyls",
                "zones",
                "avg seek",
                "R/2"
            );
            for id in library::builtin_ids() {
                let d = builtin_drive(id).with_context(|| format!("built-in drive {id}"))?;
                let g = d.geometry();
                let spec: DriveSpec =
                    toml::from_str(library::builtin_spec(id).expect("listed id"))?;
                let _ =
                    writeln!(
                    out,
                    "{:<12} {:<44} {:>6} {:>7.1}GB {:>6} {:>4} {:>8} {:>5} {:>6.2}ms {:>6.2}ms  {}",
                    id,
                    truncate(&d.name, 44),
                    spec.rpm,
                    g.capacity_bytes() as f64 / 1e9,
                    g.sector_bytes(),
                    g.surfaces(),
                    g.cylinders(),
                    g.zone_count(),
                    d.seek_curve(Op::Read).mean_random().as_ms_f64(),
                    d.period().as_ms_f64() / 2.0,
                    if d.estimated { "contains estimates" } else { "" }
                );
            }
        }
        DrivesCmd::Show { name } => {
            // A path to a drive file (`spindle calibrate -o`, `drives import -o`), else an id.
            let (d, spec) = if std::path::Path::new(&name).is_file() {
                let text = std::fs::read_to_string(&name).with_context(|| name.clone())?;
                let d = spindle::drive::parse_drive(&text).with_context(|| name.clone())?;
                (
                    d,
                    toml::from_str::<DriveSpec>(&text).with_context(|| name.clone())?,
                )
            } else {
                let d = builtin_drive(&name)?;
                let text = library::builtin_spec(&name).expect("built-in drive exists");
                (d, toml::from_str(text)?)
            };
            let g = d.geometry();
            let _ = writeln!(out, "{} ({})", spec.name, spec.id);
            if !spec.description.is_empty() {
                let _ = writeln!(out, "{}\n", spec.description.trim());
            }
            let _ = writeln!(
                out,
                "capacity        {} sectors of {} B = {:.3} GB",
                g.capacity_sectors(),
                g.sector_bytes(),
                g.capacity_bytes() as f64 / 1e9
            );
            let _ = writeln!(
                out,
                "rotation        {} rpm, {:.4} ms per revolution",
                spec.rpm,
                d.period().as_ms_f64()
            );
            let _ = writeln!(out, "surfaces        {}", g.surfaces());
            let _ = writeln!(out, "cylinders       {}", g.cylinders());
            let _ = writeln!(out, "seek            {:?}", spec.seek);
            let c = d.seek_curve(Op::Read);
            let _ = writeln!(
                out,
                "                1 cyl {:.3} ms, mean random {:.3} ms, 1/3 stroke {:.3} ms, full {:.3} ms",
                c.time(1.min(c.max_distance())).as_ms_f64(),
                c.mean_random().as_ms_f64(),
                c.time(c.max_distance() / 3).as_ms_f64(),
                c.time(c.max_distance()).as_ms_f64()
            );
            let _ = writeln!(out, "head switch     {} ms", spec.head_switch_ms);
            let _ = writeln!(out, "write settle    {} ms", spec.write_settle_ms);
            let _ = writeln!(
                out,
                "overhead        read {} ms, write {} ms",
                spec.overhead_read_ms, spec.overhead_write_ms
            );
            match d.power_model() {
                None => {
                    let _ = writeln!(out, "power           no power data");
                }
                Some(m) => {
                    let w = |uw: u64| uw as f64 / 1e6;
                    let _ = write!(
                        out,
                        "power           active {} W, idle {} W",
                        w(m.active_uw),
                        w(m.idle_uw)
                    );
                    for s in spindle::drive::LowPower::ALL {
                        if let Some(l) = m.state(s) {
                            let _ = write!(
                                out,
                                "; {} {} W (down {} s {} J, up {} s {} J)",
                                s.name(),
                                w(l.power_uw),
                                l.down.time.0 as f64 / 1e9,
                                l.down.energy_fj as f64 / 1e15,
                                l.up.time.0 as f64 / 1e9,
                                l.up.energy_fj as f64 / 1e15
                            );
                        }
                    }
                    let _ = writeln!(out);
                }
            }
            let _ = writeln!(out, "zones           {}", g.zone_count());
            for (i, z) in spec.zones.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "  {:>2}: cylinders {:>7}..{:<7} {:>5} sectors/track, skew {} / {} {:?}, spares {}/track {}/zone",
                    i, z.first_cylinder, z.last_cylinder, z.sectors_per_track, z.track_skew, z.cylinder_skew, z.skew_unit, z.spare_sectors_per_track, z.spare_sectors_per_zone
                );
            }
            if !spec.provenance.is_empty() {
                let _ = writeln!(out, "\nsources of the values:");
                for (k, v) in &spec.provenance {
                    let _ = writeln!(out, "  {k:<22} {v}");
                }
            }
            if !spec.sources.is_empty() {
                let _ = writeln!(out, "\ncitations:");
                for (k, v) in &spec.sources {
                    let _ = writeln!(out, "  {k:<14} {v}");
                }
            }
        }
    }
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(())
}

/// The drive file text for a DiskSim `.parv`, checked to load as a drive.
fn import(file: &std::path::Path) -> anyhow::Result<String> {
    let path = file
        .to_str()
        .with_context(|| format!("{}: the path is not UTF-8", file.display()))?;
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let spec = spindle::drive::disksim::import_parv(path, &read)?;
    let body = toml::to_string(&spec).context("serialising the drive file")?;
    spindle::drive::parse_drive(&body)
        .with_context(|| format!("{path}: the imported drive does not validate"))?;
    Ok(format!(
        "# {}\n# Imported by `spindle drives import {path}`; every value is cited in [provenance].\n\n{body}",
        spec.name
    ))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}
