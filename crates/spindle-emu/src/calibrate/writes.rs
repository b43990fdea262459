//! Write timing (`--allow-writes --scratch START..END`): whether a volatile write cache
//! answers writes (hdubench's warning), the write overhead (the same-track minimum write
//! time, as the read overhead is measured) and the write settle (dissertation table 4.1's
//! `Two`: what a write needs after a seek beyond a read at the same distance). Every write
//! lands inside the scratch range ([`Probe::write`] refuses any other).

use super::layout::Zone;
use super::probe::Probe;
use super::seek::min_time;
use super::{CalibError, Event};
use serde::{Deserialize, Serialize};
use spindle::calib::median;
use std::ops::Range;

/// Writes in the cache check.
const CACHE_WRITES: u64 = 24;
/// Their spacing (sectors): a prime, so the targets fall at scattered angles of any track.
const CACHE_STEP: u64 = 37;
/// The smallest scratch range the cache check needs.
pub const SCRATCH_MIN: u64 = (CACHE_WRITES + 1) * CACHE_STEP + 1;
/// Under this, writes do not wait for their sector: no drive turns in under 1 ms (the
/// rotation step refuses those for reads). Back-to-back rewrites of one sector each wait a
/// whole revolution, and the waits of 24 writes at scattered angles spread (p90 − p10) over
/// ~80 % of one — unless a cache answers.
const CACHE_NS: f64 = 1e6;
/// Back-to-back rewrites of one sector in the cache check.
const REWRITES: usize = 16;
/// Writes after an idle pause in the cache check.
const IDLE_WRITES: u64 = 12;

/// One distance of the settle measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settle {
    pub cylinders: u32,
    pub min_read_ns: f64,
    pub min_write_ns: f64,
    /// Half the spread of the three searches of each, added (ns).
    pub resolution_ns: f64,
}

/// What the write step measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Writes {
    pub scratch: (u64, u64),
    /// A volatile write cache answers writes: no write timing is modelled from them.
    pub write_cache_suspected: bool,
    /// The cache check's write-after-write times (ns) and their p10 / median / p90.
    pub cache_times_ns: Vec<f64>,
    /// The median interval of back-to-back rewrites of one sector (ns).
    #[serde(default)]
    pub rewrite_ns: f64,
    /// The p90 of single writes after an idle pause, send to answer (ns).
    #[serde(default)]
    pub idle_p90_ns: f64,
    /// Same-track minimum write and read times in the scratch range, ± (ns).
    pub overhead: Option<(f64, f64, f64)>,
    pub settle: Vec<Settle>,
}

impl Writes {
    /// The settle at one distance: what a write after a seek needs beyond a read, less what
    /// it needs beyond a read without one (the overheads' difference) (ns).
    pub fn settle_at(&self, s: &Settle) -> Option<f64> {
        let (w0, r0, _) = self.overhead?;
        Some(s.min_write_ns - s.min_read_ns - (w0 - r0))
    }

    /// Write settle: the median over distances, and the bound (half the spread over
    /// distances, or the largest resolution if more, the overheads' added) (ns).
    pub fn settle_ns(&self) -> Option<(f64, f64)> {
        let (_, _, res0) = self.overhead?;
        if self.settle.is_empty() {
            return None;
        }
        let v: Vec<f64> = self
            .settle
            .iter()
            .filter_map(|s| self.settle_at(s))
            .collect();
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        let res = self
            .settle
            .iter()
            .map(|s| s.resolution_ns)
            .fold(0.0, f64::max);
        Some((median(&v), ((hi - lo) / 2.0).max(res + res0)))
    }
}

/// One sector of the pattern written (the scratch range is the caller's to lose).
pub fn pattern(sector_bytes: u32) -> Vec<u8> {
    b"spindle calibrate scratch write "
        .iter()
        .copied()
        .cycle()
        .take(sector_bytes as usize)
        .collect()
}

/// The cache check: needs no layout, so it runs first (a drive that answers writes from a
/// cache usually answers reads from one too, and the read steps may then refuse it).
pub fn cache_check(p: &mut Probe, scratch: &Range<u64>) -> Result<Writes, CalibError> {
    let data = pattern(p.target.sector_bytes());
    let a = scratch.start;
    let mut t = Vec::new();
    for k in 1..=CACHE_WRITES {
        let s = p.write(a, &data)?;
        let e = p.write(a + k * CACHE_STEP, &data)?;
        t.push(e - s);
    }
    let mut v = t.clone();
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    let spread = q(0.9) - q(0.1);
    // A cache with one write segment destages before taking a write elsewhere, so the
    // scattered writes may still wait for their sectors (the emulator's write-back
    // `ibm36z15` did: 1.2-4.4 ms); rewriting one sector hits the segment.
    let mut c = Vec::with_capacity(REWRITES + 1);
    for _ in 0..=REWRITES {
        c.push(p.write(a, &data)?);
    }
    let gaps: Vec<f64> = c.windows(2).map(|w| w[1] - w[0]).collect();
    let rewrite = median(&gaps);
    // A write after an idle pause: a write-back cache has destaged the last one and takes
    // it at once; back-to-back writes may each wait for the previous one's destage (the
    // emulator's write-back `ibm36z15` made every rewrite wait a revolution). Send to
    // answer, at scattered LBAs; p90, so that a few lucky angles of an uncached drive
    // cannot pass (each is under 1 ms with probability under 1/4 at 15,000 rpm).
    let mut idle = Vec::with_capacity(IDLE_WRITES as usize);
    for k in 1..=IDLE_WRITES {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let sent = p.now_ns();
        idle.push(p.write(a + k * CACHE_STEP, &data)? - sent);
    }
    idle.sort_by(f64::total_cmp);
    let idle_p90 = idle[(idle.len() * 9 / 10).min(idle.len() - 1)];
    let suspected = spread < CACHE_NS || rewrite < CACHE_NS || idle_p90 < CACHE_NS;
    p.say(format!(
        "write cache check: {CACHE_WRITES} writes at scattered angles after a write took p10 / \
         median / p90 {:.3} / {:.3} / {:.3} ms; {REWRITES} back-to-back rewrites of LBA {a} \
         completed every {:.3} ms (median); {IDLE_WRITES} writes after a 50 ms pause took \
         {:.3} ms (p90)",
        q(0.1) / 1e6,
        q(0.5) / 1e6,
        q(0.9) / 1e6,
        rewrite / 1e6,
        idle_p90 / 1e6
    ));
    if suspected {
        p.say(format!(
            "WARNING: a volatile write cache seems to answer writes: {} — a write that waits \
             for its sector takes up to a revolution, and no disk turns in 1 ms. Write timing \
             is not measured, and the drive file marks it so (write_cache_suspected). Turn \
             the cache off (hdparm -W 0 / sdparm --clear WCE) to measure it.",
            match (rewrite < CACHE_NS, idle_p90 < CACHE_NS) {
                (true, _) => format!(
                    "rewrites of one sector answered every {:.3} ms",
                    rewrite / 1e6
                ),
                (_, true) => format!(
                    "writes after a pause answered within {:.3} ms (p90) whatever their angle",
                    idle_p90 / 1e6
                ),
                _ => format!(
                    "writes took {:.3}-{:.3} ms whatever their sector's angle",
                    q(0.1) / 1e6,
                    q(0.9) / 1e6
                ),
            }
        ));
    }
    Ok(Writes {
        scratch: (scratch.start, scratch.end),
        write_cache_suspected: suspected,
        cache_times_ns: t,
        rewrite_ns: rewrite,
        idle_p90_ns: idle_p90,
        ..Writes::default()
    })
}

/// The zone and first whole track inside the scratch range, the cylinder distances that
/// fit in it (1, 4, 16), or why it is too small.
fn plan<'z>(
    zones: &'z [Zone],
    surfaces: u32,
    scratch: &Range<u64>,
) -> Result<(&'z Zone, u64, Vec<u32>), String> {
    let z = zones
        .iter()
        .find(|z| scratch.start >= z.first_lba && scratch.start < z.first_lba + z.lbas)
        .ok_or_else(|| {
            format!(
                "it starts outside the calibrated zones (LBAs 0..{}): calibrate more zones \
                 (--zones) or move it",
                zones.last().map_or(0, |z| z.first_lba + z.lbas)
            )
        })?;
    let spt = u64::from(z.spt);
    let t0 = z.first_lba + (scratch.start - z.first_lba).div_ceil(spt) * spt;
    let end = scratch.end.min(z.first_lba + z.lbas);
    let cyl = u64::from(surfaces) * spt;
    let dists: Vec<u32> = [1u32, 4, 16]
        .into_iter()
        .filter(|&d| t0 + u64::from(d) * cyl + spt <= end)
        .collect();
    if t0 + spt > end || dists.is_empty() {
        return Err(format!(
            "write settle needs a track and another one cylinder on, in one zone: at least \
             {} sectors from LBA {t0} (zone of {} sectors per track, {surfaces} surfaces), the \
             range holds {} there",
            cyl + spt,
            z.spt,
            end.saturating_sub(t0)
        ));
    }
    Ok((z, t0, dists))
}

/// Write overhead and settle, measured in the scratch range.
pub fn measure(
    p: &mut Probe,
    w: &mut Writes,
    zones: &[Zone],
    surfaces: u32,
) -> Result<(), CalibError> {
    let scratch = w.scratch.0..w.scratch.1;
    let (z, t0, dists) = plan(zones, surfaces, &scratch).map_err(|msg| CalibError::TooSmall {
        target: p.target.describe(),
        msg: format!("scratch range {}..{}: {msg}", scratch.start, scratch.end),
    })?;
    let data = pattern(p.target.sector_bytes());
    let spt = u64::from(z.spt);
    let from = t0 + spt / 4;
    // The median of three searches (each access has the drive's own seek scatter), and half
    // their spread or the bisection's step, whichever is wider.
    let three = |p: &mut Probe, to: u64, write: bool| -> Result<(f64, f64), CalibError> {
        let d = write.then_some(&data[..]);
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(min_time(p, from, (to, z), d).or_else(|_| min_time(p, from, (to, z), d))?);
        }
        let mut v: Vec<f64> = runs.iter().map(|r| r.0).collect();
        v.sort_by(f64::total_cmp);
        Ok((v[1], ((v[2] - v[0]) / 2.0).max(runs[0].1)))
    };
    (p.events)(Event::Stage("write timing", 2 + 2 * dists.len() as u64));
    let (wr0, wres) = three(p, t0, true)?;
    (p.events)(Event::Step);
    let (rd, rres) = three(p, t0, false)?;
    (p.events)(Event::Step);
    w.overhead = Some((wr0, rd, wres.max(rres)));
    p.say(format!(
        "write overhead (same-track minimum write time at LBA {t0}): {:.3} ms ± {:.3}; the \
         same-track minimum read time there {:.3} ms ± {:.3}",
        wr0 / 1e6,
        wres / 1e6,
        rd / 1e6,
        rres / 1e6
    ));
    for d in dists {
        let to = t0 + u64::from(d) * u64::from(surfaces) * spt;
        let (r, rr) = three(p, to, false)?;
        (p.events)(Event::Step);
        let (wt, wr) = three(p, to, true)?;
        (p.events)(Event::Step);
        p.say(format!(
            "write settle, {d} cylinders: minimum write {:.3} ms, read {:.3} ms; less the \
             overheads' difference {:.3} ms: {:.3} ms ± {:.3}",
            wt / 1e6,
            r / 1e6,
            (wr0 - rd) / 1e6,
            (wt - r - (wr0 - rd)) / 1e6,
            (rr + wr + wres.max(rres)) / 1e6
        ));
        w.settle.push(Settle {
            cylinders: d,
            min_read_ns: r,
            min_write_ns: wt,
            resolution_ns: rr + wr,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(first_lba: u64, lbas: u64, spt: u32) -> Zone {
        Zone {
            first_lba,
            lbas,
            spt,
            partial: 0,
            track_skew: 0,
            cylinder_skew: 0,
            head_penalty_ns: 0.0,
            cylinder_penalty_ns: 0.0,
            first_angle_ns: 0.0,
        }
    }

    #[test]
    fn settle_cancels_the_overheads_difference() {
        let s = |cylinders, r: f64, w: f64| Settle {
            cylinders,
            min_read_ns: r,
            min_write_ns: w,
            resolution_ns: 10.0,
        };
        // Overheads 0.3 / 0.9 ms; seeks 1.0, 1.5, 2.0 ms; settle 0.45, 0.5, 0.6 ms.
        let w = Writes {
            overhead: Some((900e3, 300e3, 5.0)),
            settle: vec![s(1, 1.3e6, 2.35e6), s(4, 1.8e6, 2.9e6), s(16, 2.3e6, 3.5e6)],
            ..Writes::default()
        };
        let (settle, bound) = w.settle_ns().unwrap();
        assert!((settle - 0.5e6).abs() < 1e-6, "{settle}");
        assert!((bound - 0.075e6).abs() < 1e-6, "{bound}");
        assert!(Writes::default().settle_ns().is_none());
    }

    #[test]
    fn plan_finds_whole_tracks_and_refuses_small_ranges() {
        let zones = [zone(0, 10_000, 100), zone(10_000, 20_000, 80)];
        // 2 surfaces: a cylinder is 200 sectors in zone 0.
        let (z, t0, d) = plan(&zones, 2, &(150..10_000)).unwrap();
        assert_eq!((z.spt, t0), (100, 200));
        assert_eq!(d, vec![1, 4, 16]);
        let (_, t0, d) = plan(&zones, 2, &(150..1_200)).unwrap();
        assert_eq!((t0, d), (200, vec![1, 4]));
        let e = plan(&zones, 2, &(150..450)).unwrap_err();
        assert!(e.contains("at least 300 sectors"), "{e}");
        let e = plan(&zones, 2, &(40_000..50_000)).unwrap_err();
        assert!(e.contains("outside the calibrated zones"), "{e}");
    }
}
