//! Tracks, zones, surfaces and skews from timing alone: the track-alignment paper's
//! growing-request scan (a read that runs onto the next track pays the switch and skew),
//! sped up by doubling then bisection, and zone boundaries by bisection over a zone's
//! track grid.

use super::probe::Probe;
use super::{CalibError, Event};
use serde::{Deserialize, Serialize};
use spindle::calib::skew;

/// One track found by the growing scan.
#[derive(Copy, Clone, Debug)]
pub struct Track {
    pub len: u32,
    /// Time per sector, from the longest in-track read.
    pub sector_ns: f64,
}

/// A zone: a run of whole tracks of `spt` LBAs, then maybe a shorter last track (its end
/// taken by spares).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    pub first_lba: u64,
    pub lbas: u64,
    pub spt: u32,
    /// LBAs of the zone's short last track (0: none).
    pub partial: u32,
    /// Skews in sectors (head switch, cylinder switch) and the penalties they come from (ns).
    pub track_skew: u32,
    pub cylinder_skew: u32,
    pub head_penalty_ns: f64,
    pub cylinder_penalty_ns: f64,
    /// Angle of the zone's first sector's start after the reference sector's start (ns).
    pub first_angle_ns: f64,
}

impl Zone {
    pub fn tracks(&self) -> u64 {
        self.lbas.div_ceil(u64::from(self.spt))
    }
}

/// The growing-request scan from `start` (the first LBA of a track): the track's length.
pub fn track_at(p: &mut Probe, start: u64) -> Result<Track, CalibError> {
    let cap = p.target.sectors();
    let period = p.period();
    let thr = p.crossing_threshold();
    let room = |n: u64| u32::try_from(n.min(cap - start)).unwrap_or(u32::MAX);
    // Doubling: each length is checked against the sector time the previous one gave.
    let (mut lo, mut slope) = (1u32, f64::NAN);
    let mut hi = None;
    let mut n = 2u32;
    while n <= room(1 << 16) && hi.is_none() {
        let mut d = p.after_pass(start, n, 5)?;
        if !slope.is_nan() && d - period - f64::from(n - 1) * slope > thr {
            // Confirmed, as in `Probe::excess`.
            d = d.min(p.after_pass(start, n, 5)?);
        }
        let t = (d - period) / f64::from(n - 1);
        if slope.is_nan() {
            // Two sectors: a sector time above a twentieth of a revolution is a crossing
            // (no zone has under 20 sectors per track).
            if t > period / 20.0 {
                hi = Some(2);
            } else {
                (lo, slope) = (2, t);
            }
        } else {
            let ex = d - period - f64::from(n - 1) * slope;
            if ex > thr {
                hi = Some(n);
            } else {
                (lo, slope) = (n, t);
            }
        }
        n = n.saturating_mul(2);
    }
    let Some(mut hi) = hi else {
        return Ok(Track {
            len: room(1 << 16),
            sector_ns: slope,
        });
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let ex = p.excess(start, mid, slope)?;
        if ex > thr {
            hi = mid;
        } else {
            lo = mid;
            if mid > 8 {
                slope += ex / f64::from(mid - 1);
            }
        }
    }
    Ok(Track {
        len: lo,
        sector_ns: slope,
    })
}

/// Whether `lba` starts a whole track of `spt` sectors in the zone whose sector time is
/// `period / spt`: a read of the track after a pass takes exactly a revolution and the
/// track's transfer.
fn whole_track(p: &mut Probe, lba: u64, spt: u32) -> Result<bool, CalibError> {
    if lba + u64::from(spt) > p.target.sectors() {
        return Ok(false);
    }
    let ex = p.excess(lba, spt, p.period() / f64::from(spt))?;
    Ok(ex.abs() < p.crossing_threshold())
}

/// The zones from LBA `from` until the end of the target or `zones_max` zones.
pub fn zones(p: &mut Probe, from: u64, zones_max: usize) -> Result<Vec<Zone>, CalibError> {
    let cap = p.target.sectors();
    let mut out: Vec<Zone> = Vec::new();
    let mut s = from;
    while s < cap && out.len() <= zones_max {
        // A track's length must agree with its sector time (a revolution holds `len`
        // sectors), or match a second scan for a zone's short last track; a burst of host
        // noise gets up to three scans.
        let period = p.period();
        let whole_of = |tr: &Track| {
            let spt_est = period / tr.sector_ns;
            tr.len >= 20 && (f64::from(tr.len) - spt_est).abs() <= 1.5 + 0.005 * spt_est
        };
        let mut tr = track_at(p, s)?;
        let mut whole = whole_of(&tr);
        for _ in 0..2 {
            if whole {
                break;
            }
            let again = track_at(p, s)?;
            whole = whole_of(&again);
            if !whole && again.len == tr.len {
                break;
            }
            tr = again;
        }
        let spt_est = p.period() / tr.sector_ns;
        // A zone's last track cut short by its spares keeps the zone's sector time: a few
        // sectors short of a whole track of it is that, not a new zone.
        let short_of_last = out.last().is_some_and(|z| {
            z.partial == 0
                && tr.len < z.spt
                && (spt_est - f64::from(z.spt)).abs() <= 1.5 + 0.005 * spt_est
                && (spt_est - f64::from(z.spt)).abs() < (spt_est - f64::from(tr.len)).abs() + 0.5
        });
        if !whole || short_of_last {
            match out.last_mut() {
                // A zone's last track, shortened by its spares.
                Some(z) if z.partial == 0 && tr.len < z.spt => {
                    z.partial = tr.len;
                    z.lbas += u64::from(tr.len);
                    s += u64::from(tr.len);
                    continue;
                }
                _ => {
                    return Err(CalibError::TooNoisy {
                        target: p.target.describe(),
                        msg: format!(
                            "the track at LBA {s} reads as {} sectors but its sector time says \
                             {spt_est:.1}: track switches are not clear of the noise",
                            tr.len
                        ),
                    })
                }
            }
        }
        if out.len() == zones_max {
            break;
        }
        let spt = tr.len;
        // Galloping then bisection over the zone's track grid.
        let (mut good, mut bad) = (0u64, None);
        let mut k = 1u64;
        let tracks_left = (cap - s) / u64::from(spt);
        while bad.is_none() {
            if k >= tracks_left {
                if whole_track(p, s + (tracks_left - 1) * u64::from(spt), spt)? {
                    good = tracks_left - 1;
                    bad = Some(tracks_left);
                } else {
                    bad = Some(tracks_left - 1);
                }
                break;
            }
            if whole_track(p, s + k * u64::from(spt), spt)? {
                good = k;
                k *= 2;
            } else {
                bad = Some(k);
            }
            (p.events)(Event::Step);
        }
        let mut bad = bad.expect("set");
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if whole_track(p, s + mid * u64::from(spt), spt)? {
                good = mid;
            } else {
                bad = mid;
            }
            (p.events)(Event::Step);
        }
        let lbas = (good + 1) * u64::from(spt);
        p.say(format!(
            "zone {}: LBA {s}.., {spt} sectors per track, {} whole tracks",
            out.len(),
            good + 1
        ));
        out.push(Zone {
            first_lba: s,
            lbas,
            spt,
            partial: 0,
            track_skew: 0,
            cylinder_skew: 0,
            head_penalty_ns: 0.0,
            cylinder_penalty_ns: 0.0,
            first_angle_ns: 0.0,
        });
        s += lbas;
    }
    Ok(out)
}

/// Crossing penalty into track `j` of `z`: a track's worth of sectors read from the middle
/// of track `j − 1`, less the same read of one whole track (`base`, from
/// [`in_track`]) — not less the computed transfer, since a long answer may leave the
/// server later than a short one.
fn crossing(p: &mut Probe, z: &Zone, j: u64, base: f64) -> Result<f64, CalibError> {
    let spt = u64::from(z.spt);
    let lba = z.first_lba + j * spt - spt / 2;
    Ok(p.after_pass(lba, z.spt, 5)? - base)
}

/// A whole track of `z` read after a pass: the baseline of [`crossing`].
fn in_track(p: &mut Probe, z: &Zone) -> Result<f64, CalibError> {
    p.after_pass(z.first_lba, z.spt, 7)
}

/// Surfaces from the first zone's crossings, then each zone's skews.
pub fn skews(p: &mut Probe, zones: &mut [Zone]) -> Result<Option<u32>, CalibError> {
    let z0 = zones.first().expect("a zone").clone();
    let j_max = (z0.lbas / u64::from(z0.spt)).saturating_sub(1).min(48);
    let mut cross = Vec::new();
    let base0 = in_track(p, &z0)?;
    for j in 1..=j_max {
        cross.push((j, crossing(p, &z0, j, base0)?));
        (p.events)(Event::Step);
    }
    let fit = if cross.is_empty() {
        None
    } else {
        Some(skew::surfaces(&cross, p.crossing_threshold()))
    };
    let surfaces = fit.as_ref().and_then(|f| f.surfaces);
    if let Some(f) = &fit {
        p.say(format!(
            "surfaces: {} (from {} crossings: head switch {:.1} µs, cylinder switch {:.1} µs, \
             spread {:.1} µs)",
            surfaces.map_or("not told apart".into(), |s| s.to_string()),
            cross.len(),
            f.head_penalty_ns / 1e3,
            f.cylinder_penalty_ns / 1e3,
            f.spread_ns / 1e3
        ));
    }
    let s = u64::from(surfaces.unwrap_or(1));
    let period = p.period();
    for z in zones.iter_mut() {
        let whole = z.lbas / u64::from(z.spt);
        let base = in_track(p, z)?;
        // The mean over eight crossings of each kind: one sector is 20-40 µs, about the
        // timing noise of one.
        let mean_of = |p: &mut Probe, js: Vec<u64>| -> Result<Option<f64>, CalibError> {
            let js: Vec<u64> = js.into_iter().filter(|&j| j >= 1 && j < whole).collect();
            if js.is_empty() {
                return Ok(None);
            }
            let mut sum = 0.0;
            for &j in &js {
                sum += crossing(p, z, j, base)?;
            }
            Ok(Some(sum / js.len() as f64))
        };
        let head = match s > 1 {
            true => mean_of(p, (1..).filter(|j| j % s != 0).take(8).collect())?,
            false => None,
        };
        let cyl = mean_of(p, (1..=8).map(|k| k * s).collect())?;
        let sector_ns = period / f64::from(z.spt);
        let sk = |v: f64| skew::skew_sectors(v, period, sector_ns, z.spt);
        if let Some(h) = head {
            z.head_penalty_ns = h;
            z.track_skew = sk(h);
        }
        if let Some(c) = cyl {
            z.cylinder_penalty_ns = c;
            z.cylinder_skew = sk(c);
            if s == 1 {
                z.head_penalty_ns = c;
                z.track_skew = z.cylinder_skew;
            }
        }
        // The zone's first sector: its end angle less one sector, against the reference
        // sector's (LBA 0, first of zone 0) end angle less one of zone 0's sectors.
        p.reanchor()?;
        let end = p.end_angle(z.first_lba, 5)?;
        let ref_sector = period / f64::from(zones_first_spt(&z0));
        z.first_angle_ns = spindle::calib::wrap(end - sector_ns + ref_sector, period);
        (p.events)(Event::Step);
    }
    Ok(surfaces)
}

fn zones_first_spt(z0: &Zone) -> u32 {
    z0.spt
}
