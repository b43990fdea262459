//! Minimum read time versus cylinder distance (dissertation 3.3.1, "Measuring Minimum Read
//! Time"): read a sector, then at once a sector `θ` of a revolution further round on a track
//! `d` cylinders away; the smallest `θ` the second read makes without losing a revolution is
//! the minimum read time, found by bisection.

use super::layout::Zone;
use super::probe::Probe;
use super::{CalibError, Event};
use serde::{Deserialize, Serialize};
use spindle::calib::wrap;

/// One point of the profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Cylinders moved; `None` for a head switch within the cylinder.
    pub cylinders: Option<u32>,
    pub min_read_ns: f64,
    /// Half the width of the last bisection interval (ns).
    pub resolution_ns: f64,
}

/// Where cylinder `c`, head `h` starts, with the measured layout.
pub fn track_lba(zones: &[Zone], surfaces: u32, c: u32, h: u32) -> Option<(u64, &Zone)> {
    let mut first_cyl = 0u64;
    for z in zones {
        let cyls = z.tracks().div_ceil(u64::from(surfaces));
        if u64::from(c) < first_cyl + cyls {
            let track = (u64::from(c) - first_cyl) * u64::from(surfaces) + u64::from(h);
            let lba = z.first_lba + track * u64::from(z.spt);
            return (lba + u64::from(z.spt) <= z.first_lba + z.lbas).then_some((lba, z));
        }
        first_cyl += cyls;
    }
    None
}

/// Minimum read time from the start of track 0 to the track at `to` (whose zone is `z`).
fn min_read(p: &mut Probe, z0: &Zone, to: (u64, &Zone)) -> Result<(f64, f64), CalibError> {
    // From the middle of track 0, so that a same-track target lies ahead of it.
    min_time(p, z0.first_lba + u64::from(z0.spt) / 4, to, None)
}

/// Minimum time of a read (`write` `None`) or a write of `write`'s one sector, issued at
/// once after a read of sector `from`, to the track at `to`: the smallest angle past
/// `from`'s end that the access makes without losing a revolution, and the bisection's
/// half-width (ns). A write ends when its sector has passed under the head, as a read
/// does, so the same angle reads judge both (docs/calibrate.md, Writes).
pub(super) fn min_time(
    p: &mut Probe,
    from: u64,
    to: (u64, &Zone),
    write: Option<&[u8]>,
) -> Result<(f64, f64), CalibError> {
    let period = p.period();
    let (to_lba, z) = to;
    let sector = period / f64::from(z.spt);
    p.reanchor()?;
    let e_from = p.end_angle(from, 5)?;
    let e_first = p.end_angle(to_lba, 5)?;
    // The sector whose start is theta after `from`'s end, and its real theta.
    let trial = |p: &mut Probe, theta: f64| -> Result<Option<f64>, CalibError> {
        let turns = (theta / period).floor();
        let i = ((wrap(e_from + theta + sector - e_first, period)) / sector).round() as u64
            % u64::from(z.spt);
        let lba = to_lba + i;
        if lba == from {
            return Ok(None);
        }
        let real = wrap(e_first + i as f64 * sector - sector - e_from, period) + turns * period;
        // A twentieth of a revolution at least: the trial's read is out for less than a
        // revolution, the angle reads it is judged against for one, and the host's delay
        // grows with the time out (measured: every trial 0.2 ms early at 10,000 rpm, which
        // a 0.1 ms tolerance at a quiet moment refused as "late").
        let tol = p.angle_tolerance().max(period / 20.0);
        // A lost revolution keeps the gap a whole number of revolutions from the expected
        // one; a reply the host delayed does not: such a trial is repeated. (Relative, so
        // the host's slow drift in answer latency cancels.)
        let mut gs = Vec::new();
        for _ in 0..8 {
            let a = p.read(from, 1)?;
            let b = match write {
                Some(data) => p.write(lba, data)?,
                None => p.read(lba, 1)?,
            };
            let g = b - a - real - sector;
            let off = wrap(g, period).min(period - wrap(g, period));
            gs.push(format!("{:.0}", g / 1e3));
            if off > tol {
                continue;
            }
            let lost = (g / period).round();
            return Ok(Some(if lost <= 0.0 { real } else { -real }));
        }
        Err(CalibError::TooNoisy {
            target: p.target.describe(),
            msg: format!(
                "8 trials of a {} of LBA {lba} after LBA {from} all answered late (gaps off by \
                 [{}] µs; theta {:.0} µs)",
                if write.is_some() { "write" } else { "read" },
                gs.join(", "),
                theta / 1e3
            ),
        })
    };
    // A make proves the time is enough; a miss may be the host starting the request late,
    // so a miss counts only when a second trial misses too.
    let trial = |p: &mut Probe, theta: f64| -> Result<Option<f64>, CalibError> {
        match trial(p, theta)? {
            Some(r) if r < 0.0 => trial(p, theta),
            other => Ok(other),
        }
    };
    // Grow until a trial makes it, then bisect between the last miss and the make.
    let (mut miss, mut make) = (0.0, f64::NAN);
    let mut theta = period / 8.0;
    while make.is_nan() {
        match trial(p, theta)? {
            Some(r) if r >= 0.0 => make = r,
            Some(r) => miss = -r,
            None => {}
        }
        theta += period / 8.0;
        if theta > 8.0 * period {
            return Err(CalibError::TooNoisy {
                target: p.target.describe(),
                msg: "no read reached its sector within 8 revolutions".into(),
            });
        }
    }
    // Until one sector apart, or until the sector grid gives no angle strictly between.
    while make - miss > sector {
        match trial(p, (miss + make) / 2.0)? {
            Some(r) if r >= 0.0 && r < make => make = r,
            Some(r) if r < 0.0 && -r > miss => miss = -r,
            _ => break,
        }
    }
    Ok(((miss + make) / 2.0, (make - miss) / 2.0))
}

/// The profile: same track, head switch, and distances 1, 2, 4, … up to the last cylinder
/// the layout covers.
pub fn profile(p: &mut Probe, zones: &[Zone], surfaces: u32) -> Result<Vec<Point>, CalibError> {
    let z0 = zones[0].clone();
    let cyls: u64 = zones
        .iter()
        .map(|z| z.tracks().div_ceil(u64::from(surfaces)))
        .sum();
    let mut targets: Vec<(Option<u32>, u32, u32)> = vec![(Some(0), 0, 0)];
    if surfaces > 1 {
        targets.push((None, 0, 1));
    }
    let mut d = 1u64;
    while d < cyls {
        targets.push((Some(d as u32), d as u32, 0));
        d *= 2;
    }
    // The full stroke, less the last cylinder (its zone's spares may leave it short).
    let full = u32::try_from(cyls.saturating_sub(2)).unwrap_or(u32::MAX);
    if targets.last().is_some_and(|t| t.1 < full) {
        targets.push((Some(full), full, 0));
    }
    let mut out = Vec::new();
    for (cylinders, c, h) in targets {
        let Some(to) = track_lba(zones, surfaces, c, h) else {
            continue;
        };
        // Three searches, the median: each seek has the drive's own scatter too.
        // A search that met only delayed answers is started again, angles re-measured.
        let search = |p: &mut Probe| min_read(p, &z0, to).or_else(|_| min_read(p, &z0, to));
        let runs = [search(p)?, search(p)?, search(p)?];
        let mut v: Vec<f64> = runs.iter().map(|r| r.0).collect();
        v.sort_by(f64::total_cmp);
        let min_read_ns = v[1];
        let resolution_ns = ((v[2] - v[0]) / 2.0).max(runs[0].1);
        p.say(format!(
            "minimum read time, {}: {:.3} ms ± {:.3}",
            match cylinders {
                None => "head switch".to_string(),
                Some(0) => "same track".to_string(),
                Some(d) => format!("{d} cylinders"),
            },
            min_read_ns / 1e6,
            resolution_ns / 1e6
        ));
        out.push(Point {
            cylinders,
            min_read_ns,
            resolution_ns,
        });
        (p.events)(Event::Step);
    }
    Ok(out)
}
