//! The measurements as a spindle drive file: every value's `[provenance]` entry says it
//! was measured, when, how, and its uncertainty; what a read-only calibration cannot see
//! (write overhead and settle) says so.

use super::Measured;
use spindle::drive::{DriveSpec, LayoutSpec, NoiseSpec, SeekSpec, SkewUnit, ZoneSpec};
use std::collections::BTreeMap;

/// Now, as UTC `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (s / 86_400, s % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The drive file text, checked to load as a spindle drive.
pub fn drive_file(m: &Measured, id: &str) -> Result<String, String> {
    let period = m.period_ns.ok_or("the rotation was not measured")?;
    let zones = m.zones.as_ref().ok_or("the zones were not measured")?;
    let surfaces = m.surfaces.unwrap_or(1);
    let when = format!("measured {} by `spindle calibrate {}`", m.started, m.target);
    let mut prov = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        prov.insert(k.to_string(), format!("{when}: {v}"));
    };
    let rpm = 60e9 / period;
    put(
        "rpm",
        format!(
            "rotation {:.6} ms ± {:.4} µs (eqs. 3.1-3.2 bound; rpm ± {:.4}), interval noise \
             sigma {:.1} µs",
            period / 1e6,
            m.period_delta_ns / 1e3,
            rpm * m.period_delta_ns / period,
            m.sigma_ns / 1e3
        ),
    );
    put(
        "surfaces",
        match m.surfaces {
            Some(s) => {
                format!("{s}: spacing of the cylinder-switch crossings among zone 0's first tracks")
            }
            None => "not told apart (every crossing cost the same): 1 assumed".into(),
        },
    );
    let mut specs = Vec::new();
    let mut cyl = 0u32;
    for z in zones {
        let cyls =
            u32::try_from(z.tracks().div_ceil(u64::from(surfaces))).map_err(|e| e.to_string())?;
        let slots = u64::from(cyls) * u64::from(surfaces) * u64::from(z.spt);
        specs.push(ZoneSpec {
            first_cylinder: cyl,
            last_cylinder: cyl + cyls - 1,
            sectors_per_track: z.spt,
            track_skew: f64::from(z.track_skew),
            cylinder_skew: f64::from(z.cylinder_skew),
            skew_unit: SkewUnit::Sectors,
            spare_sectors_per_track: 0,
            spare_sectors_per_zone: slots - z.lbas,
        });
        cyl += cyls;
    }
    let sector_ns = |z: &super::layout::Zone| period / f64::from(z.spt);
    put(
        "zones",
        format!(
            "{} zones from LBA 0 to {} (growing-request scan, bisection over each zone's track \
             grid): LBA boundaries exact when the scan's crossings stand clear of the noise; \
             cylinder ranges are tracks / surfaces, and the zone's unmapped end (spares) is \
             spare_sectors_per_zone; first-sector angles after the reference sector (µs): [{}]",
            zones.len(),
            zones.last().map_or(0, |z| z.first_lba + z.lbas),
            zones
                .iter()
                .map(|z| format!("{:.1}", z.first_angle_ns / 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    put(
        "zones.track_skew",
        format!(
            "crossing penalty into track 1 of each zone in sectors (± 1 sector at sigma {:.1} µs); \
             penalties µs: [{}]",
            m.sigma_ns / 1e3,
            zones
                .iter()
                .map(|z| format!("{:.1}", z.head_penalty_ns / 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    put(
        "zones.cylinder_skew",
        format!(
            "crossing penalty into track `surfaces` of each zone in sectors (sector times µs: [{}])",
            zones
                .iter()
                .map(|z| format!("{:.3}", sector_ns(z) / 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let pts = m.seek.as_deref().unwrap_or(&[]);
    let base = pts
        .iter()
        .find(|p| p.cylinders == Some(0))
        .map(|p| p.min_read_ns);
    let overhead_ms = base.map_or(0.0, |b| b / 1e6);
    let head_switch_ms = match (base, pts.iter().find(|p| p.cylinders.is_none())) {
        (Some(b), Some(h)) => ((h.min_read_ns - b) / 1e6).max(0.0),
        _ => 0.0,
    };
    let mut table: Vec<(u32, f64)> = pts
        .iter()
        .filter_map(|p| match (p.cylinders, base) {
            (Some(d), Some(b)) if d > 0 => Some((d, ((p.min_read_ns - b) / 1e6).max(0.0))),
            _ => None,
        })
        .collect();
    table.dedup_by_key(|p| p.0);
    let seek = if table.is_empty() {
        SeekSpec::Linear {
            full_ms: 0.0,
            intercept_ms: 0.0,
        }
    } else {
        SeekSpec::Table {
            points: table,
            write_points: None,
        }
    };
    let fmt_pts = pts
        .iter()
        .map(|p| {
            format!(
                "{}: {:.3} ± {:.3} ms",
                p.cylinders.map_or("head".into(), |d| d.to_string()),
                p.min_read_ns / 1e6,
                p.resolution_ns / 1e6
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    match base {
        Some(_) => {
            put(
                "overhead_read_ms",
                format!(
                    "minimum read time to a sector on the same track (host round trip included: \
                     the drive as this host sees it); minimum read times by cylinder distance: \
                     {fmt_pts}"
                ),
            );
            put(
                "seek",
                "minimum read time at each distance less the same-track one; bisection over the \
                 angle to the target sector, ± the resolution above"
                    .into(),
            );
            put(
                "head_switch_ms",
                "minimum read time to the next head less the same-track one".into(),
            );
        }
        None => put("seek", "not measured (--no-seek): zero seek times".into()),
    }
    let (overhead_write_ms, write_settle_ms) = write_values(m, overhead_ms, &mut put);
    put(
        "zero_latency",
        "measured off: every growing read of the scan (up to a track and past it) after a pass \
         waited for its first sector — a zero-latency drive reads a run it lands inside at once \
         and is refused by the scan (docs/calibrate.md)"
            .into(),
    );
    let capacity: u64 = zones.iter().map(|z| z.lbas).sum();
    let spec =
        DriveSpec {
            id: id.to_string(),
            name: format!("calibrated {}", m.target),
            description: format!(
            "Measured from request timing alone by `spindle calibrate` ({} reads, started {}). \
             Covers LBAs 0..{capacity} of the target's {} sectors. {}",
            m.reads, m.started, m.sectors,
            match &m.writes {
                None => "Read-only: write timing and write cache are not measured.".to_string(),
                Some(w) if w.write_cache_suspected => format!(
                    "{} writes in LBAs {}..{}: a volatile write cache answered them, so write \
                     timing is not measured (write_cache_suspected).",
                    m.writes_issued, w.scratch.0, w.scratch.1
                ),
                Some(w) => format!(
                    "{} writes in LBAs {}..{} measured write overhead and settle.",
                    m.writes_issued, w.scratch.0, w.scratch.1
                ),
            }
        ),
            estimated: false,
            rpm,
            sector_bytes: m.sector_bytes,
            surfaces,
            cylinders: cyl,
            zones: specs,
            slips: vec![],
            seek,
            head_switch_ms,
            write_settle_ms,
            zero_latency: false,
            overhead_read_ms: overhead_ms,
            overhead_write_ms,
            noise: NoiseSpec::default(),
            layout: LayoutSpec::default(),
            cache: None,
            power: None,
            provenance: prov,
            sources: BTreeMap::new(),
        };
    let body = toml::to_string(&spec).map_err(|e| format!("serialising the drive file: {e}"))?;
    spindle::drive::parse_drive(&body)
        .map_err(|e| format!("the measured drive does not load: {e}"))?;
    Ok(format!(
        "# {}\n# Measured by `spindle calibrate`: every value's [provenance] says how, when and \
         how precisely.\n\n{body}",
        spec.name
    ))
}

/// The write overhead and settle (ms) and their provenance: measured (`--allow-writes`,
/// no write cache seen), else what is assumed and why.
fn write_values(
    m: &Measured,
    overhead_read_ms: f64,
    put: &mut dyn FnMut(&str, String),
) -> (f64, f64) {
    let Some(w) = &m.writes else {
        put(
            "overhead_write_ms",
            "not measured (read-only calibration; --allow-writes --scratch measures it): set to \
             the read overhead"
                .into(),
        );
        put(
            "write_settle_ms",
            "not measured (read-only calibration; --allow-writes --scratch measures it): 0".into(),
        );
        return (overhead_read_ms, 0.0);
    };
    let times = w.cache_times_ns.iter().map(|t| format!("{:.3}", t / 1e6));
    let check = format!(
        "write cache check in LBAs {}..{}: {} writes at scattered angles, each right after a \
         write, took [{}] ms; back-to-back rewrites of one sector completed every {:.3} ms; single writes after a \
         50 ms pause took {:.3} ms (p90)",
        w.scratch.0,
        w.scratch.1,
        w.cache_times_ns.len(),
        times.collect::<Vec<_>>().join(", "),
        w.rewrite_ns / 1e6,
        w.idle_p90_ns / 1e6
    );
    match (w.write_cache_suspected, &w.overhead, w.settle_ns()) {
        (false, Some((wr, rd, res)), Some((settle, bound))) => {
            let (wr, rd, res) = (*wr, *rd, *res);
            put(
                "write_cache_suspected",
                format!("false: measured ({check}: they spread over the revolution, and a rewrite waits one)"),
            );
            put(
                "overhead_write_ms",
                format!(
                    "minimum write time to a sector on the same track (host round trip \
                     included, as the read overhead), at LBA {}..: {:.3} ms ± {:.3} (median of \
                     three bisections over the angle to the sector; the same-track minimum \
                     read time there {:.3} ms)",
                    w.scratch.0,
                    wr / 1e6,
                    res / 1e6,
                    rd / 1e6
                ),
            );
            put(
                "write_settle_ms",
                format!(
                    "minimum write time less minimum read time at the same seek distance, less \
                     the same difference on the same track (the overheads'), the median over {} \
                     distances: {}; ± {:.3} ms (half the spread over distances, or the \
                     searches' if wider)",
                    w.settle.len(),
                    w.settle
                        .iter()
                        .map(|s| format!(
                            "{} cylinders {:.3} - {:.3} - ({:.3} - {:.3}) = {:.3} ms",
                            s.cylinders,
                            s.min_write_ns / 1e6,
                            s.min_read_ns / 1e6,
                            wr / 1e6,
                            rd / 1e6,
                            w.settle_at(s).unwrap_or(f64::NAN) / 1e6
                        ))
                        .collect::<Vec<_>>()
                        .join("; "),
                    bound / 1e6
                ),
            );
            (wr / 1e6, (settle / 1e6).max(0.0))
        }
        _ => {
            put(
                "write_cache_suspected",
                format!(
                    "true: {check}: faster than any revolution (1 ms) or the same whatever the \
                     angle — a volatile write cache, so write timing is NOT measured"
                ),
            );
            put(
                "overhead_write_ms",
                "not measured (a write cache answered the writes): set to the read overhead".into(),
            );
            put(
                "write_settle_ms",
                "not measured (a write cache answered the writes): 0".into(),
            );
            (overhead_read_ms, 0.0)
        }
    }
}
