//! `spindle calibrate TARGET --check DRIVE.toml`: a calibrated drive file's head tracking
//! (dissertation 3.3.2, `spindle::calib::track`) checked against the target it describes.
//! A random read workload, Q = 1: each request is predicted by the tracker at the instant
//! it is issued, and the answer's time compared with the prediction (table 3.2's
//! statistics, `spindle::calib::accuracy`).
//!
//! Steps: a synchronized burst on the reference sector (the drive file's rotation must
//! agree with the target's, else refused); each zone's first sector read against the
//! anchor (the angle the drive file cannot hold); then the workload, re-anchored on the
//! reference sector whenever the tracker asks (every 2 s, or after misses in a row). The
//! first `warmup` requests teach the tracker the host's delay and the slack and are not
//! counted.

use super::probe::{Probe, REFERENCE_LBA, SYNC_READS};
use super::{target, CalibError, Event};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use spindle::calib::accuracy::{accuracy, Accuracy};
use spindle::calib::rotation::{self, Estimate};
use spindle::calib::track::{TrackConfig, Tracker};
use spindle::calib::wrap;
use spindle::drive::{Chs, Drive, Transfer};
use spindle::{Nanos, Op};

/// How to check.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Requests counted in the statistics.
    pub requests: u64,
    /// Requests before them, not counted (the tracker learns the delay and slack).
    pub warmup: u64,
    /// Sectors per request.
    pub sectors: u32,
    pub seed: u64,
    pub realtime: bool,
}

/// What a check found.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub target: String,
    pub drive: String,
    /// The workload: uniform random reads of `sectors` over LBAs `0..region_sectors`.
    pub region_sectors: u64,
    pub sectors: u32,
    pub warmup: u64,
    pub seed: u64,
    pub accuracy: Accuracy,
    /// Rotation: the drive file's period, the target's (synchronized burst) and its noise.
    pub period_ms: f64,
    pub measured_period_ms: f64,
    pub interval_sigma_us: f64,
    /// Anchorings on the reference sector over the whole check (the first included).
    pub anchors: u64,
    /// Each zone's first sector, measured after the model's angle (µs).
    pub zone_offsets_us: Vec<f64>,
    /// Slack at the end, per seek-distance class with any (class name, µs).
    pub slack_us: Vec<(String, f64)>,
    /// The host's delay fitted by the tracker: constant (µs) and slope (share of service).
    pub delay_constant_us: f64,
    pub delay_slope: f64,
    pub seconds: f64,
}

/// What [`synchronize`] measured.
pub struct Synchronized {
    /// Anchored on the reference sector, zone offsets set, arm on LBA 0's track.
    pub tracker: Tracker,
    /// The target's period (synchronized burst) and its interval noise, ns.
    pub measured_period_ns: f64,
    pub sigma_ns: f64,
    /// Each zone's first sector after the model's angle, ns.
    pub zone_offsets_ns: Vec<i64>,
}

/// Head tracking's start on a target `drive` (named `drive_name`) describes: a
/// synchronized burst on the reference sector (the drive file's rotation must agree with
/// the target's, else refused), an anchor, and each zone's first sector read against it
/// (the angle a drive file cannot hold). Leaves the arm on LBA 0 and the tracker anchored.
pub fn synchronize(
    p: &mut Probe<'_>,
    drive: &Drive,
    drive_name: &str,
) -> Result<Synchronized, CalibError> {
    (p.events)(Event::Stage("rotation", 0));
    // The synchronized measurement only, never refused for its noise: the check reports
    // what tracking achieves on this host, however noisy.
    let fit = rotation::synchronized(&p.burst(SYNC_READS)?).map_err(|e| CalibError::TooNoisy {
        target: p.target.describe(),
        msg: e.to_string(),
    })?;
    p.est = fit.estimate;
    p.sigma_ns = fit.interval_sigma_ns;
    p.say(format!(
        "rotation, synchronized ({SYNC_READS} reads of LBA {REFERENCE_LBA}): {:.6} ms ± {:.3} \
         µs, interval noise sigma {:.1} µs",
        fit.estimate.period_ns / 1e6,
        fit.estimate.delta_ns / 1e3,
        fit.interval_sigma_ns / 1e3
    ));
    let period = drive.period().0 as f64;
    let measured = p.est.period_ns;
    // The synchronized burst's own bound, and never under its interval noise over the
    // burst (a drive file of another drive is off by far more: rpm differ by percents).
    let tol = 3.0 * p.est.delta_ns + p.sigma_ns / 8.0;
    if (measured - period).abs() > tol {
        return Err(CalibError::Mismatch {
            target: p.target.describe(),
            msg: format!(
                "it turns in {:.6} ms ± {:.3} µs (interval noise sigma {:.1} µs), the drive \
                 file {drive_name} says {:.6} ms: not this drive's calibration",
                measured / 1e6,
                p.est.delta_ns / 1e3,
                p.sigma_ns / 1e3,
                period / 1e6
            ),
        });
    }
    let sigma_ns = p.sigma_ns;
    p.est = Estimate {
        period_ns: period,
        delta_ns: p.est.delta_ns.min(1.0),
    };
    let mut tracker = Tracker::new(drive.clone(), TrackConfig::for_drive(drive));
    let ns = |x: f64| Nanos(x.max(0.0).round() as u64);
    p.reanchor()?;
    tracker.handle_anchor(ns(p.now_ns()), ns(p.anchor_ns));
    // Each zone's first sector against the model's angle for it.
    (p.events)(Event::Stage(
        "zone angles",
        drive.geometry().zone_count() as u64,
    ));
    let g = drive.geometry();
    let mut offsets = Vec::new();
    for i in 0..g.zone_count() {
        let (first, _, _) = g.zone_bounds(i);
        let chs = Chs {
            cylinder: first,
            head: 0,
            sector: 0,
        };
        let lba = g.chs_to_lba(chs).unwrap_or(0);
        // Zone 0 holds the reference sector: its angle is the anchor's by definition.
        if i == 0 || lba == REFERENCE_LBA {
            offsets.push(0);
            (p.events)(Event::Step);
            continue;
        }
        p.reanchor()?;
        // The angle from the reference sector's end to the zone's first sector's, both read
        // back to back (the host's delay cancels).
        let got = p.angle_gap(REFERENCE_LBA, lba, 15)?;
        let want = wrap(
            tracker.end_angle(lba) as f64 - tracker.end_angle(REFERENCE_LBA) as f64,
            period,
        );
        let d = wrap(got - want + period / 2.0, period) - period / 2.0;
        offsets.push(d.round() as i64);
        (p.events)(Event::Step);
    }
    p.say(format!(
        "zone first sectors after the model's angle (µs): [{}]",
        offsets
            .iter()
            .map(|o| format!("{:.1}", *o as f64 / 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    tracker.set_zone_offsets(offsets.clone());
    // The zone reads left the arm elsewhere: anchor again (it brings the arm to LBA 0).
    p.reanchor()?;
    tracker.handle_anchor(ns(p.now_ns()), ns(p.anchor_ns));
    Ok(Synchronized {
        tracker,
        measured_period_ns: measured,
        sigma_ns,
        zone_offsets_ns: offsets,
    })
}

/// A seek-distance class's name (`spindle::calib::track`).
pub fn class_name(i: usize) -> String {
    match i {
        0 => "same track".into(),
        1 => "head switch".into(),
        _ => {
            let lo = 1u64 << (i - 2);
            format!("{lo}-{} cylinders", 2 * lo - 1)
        }
    }
}

/// Runs the check of `drive` (named `drive_name`) against the target `name`.
pub fn check(
    name: &str,
    drive: Drive,
    drive_name: &str,
    opts: &CheckOptions,
    events: &mut dyn FnMut(Event),
) -> Result<CheckReport, CalibError> {
    assert!(opts.sectors > 0, "a request reads a sector");
    if opts.realtime {
        crate::driver::become_realtime("calibrate --check", 40);
    }
    let clock = std::time::Instant::now();
    let t = target::open(name, false)?;
    let region = drive.capacity_sectors().min(t.sectors());
    if region < u64::from(opts.sectors) * 2 || region < drive.capacity_sectors() {
        return Err(CalibError::Mismatch {
            target: t.describe(),
            msg: format!(
                "{} sectors, the drive file {drive_name} describes {}: not this drive's \
                 calibration",
                t.sectors(),
                drive.capacity_sectors()
            ),
        });
    }
    let mut p = Probe::new(t, events);
    let sync = synchronize(&mut p, &drive, drive_name)?;
    let (measured, sigma_ns, offsets) =
        (sync.measured_period_ns, sync.sigma_ns, sync.zone_offsets_ns);
    let period = drive.period().0 as f64;
    let mut tracker = sync.tracker;
    let ns = |x: f64| Nanos(x.max(0.0).round() as u64);
    let total = opts.warmup + opts.requests;
    (p.events)(Event::Stage("check", total));
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(opts.seed);
    let last = region - u64::from(opts.sectors);
    let mut pairs = Vec::with_capacity(opts.requests as usize);
    let (mut misses, mut early) = (0u64, 0u64);
    for i in 0..total {
        if tracker.poll_resync(ns(p.now_ns())) {
            p.reanchor()?;
            tracker.handle_anchor(ns(p.now_ns()), ns(p.anchor_ns));
        }
        let xfer = Transfer {
            op: Op::Read,
            lba: rng.gen_range(0..=last),
            sectors: opts.sectors,
        };
        let issued = ns(p.now_ns());
        let pred = tracker.predict(issued, xfer);
        let answered = ns(p.read(xfer.lba, xfer.sectors)?);
        let verdict = tracker.handle_completion(&pred, answered);
        if i >= opts.warmup {
            use spindle::calib::track::Verdict;
            misses += u64::from(verdict == Verdict::Miss);
            early += u64::from(verdict == Verdict::Early);
            pairs.push((answered.since(issued).0 as f64, pred.service.0 as f64));
        }
        (p.events)(Event::Step);
    }
    let acc = accuracy(&pairs, misses, early);
    let (c, b) = tracker.delay_coefficients();
    Ok(CheckReport {
        target: p.target.describe(),
        drive: drive_name.to_string(),
        region_sectors: region,
        sectors: opts.sectors,
        warmup: opts.warmup,
        seed: opts.seed,
        accuracy: acc,
        period_ms: period / 1e6,
        measured_period_ms: measured / 1e6,
        interval_sigma_us: sigma_ns / 1e3,
        anchors: tracker.counts().anchors,
        zone_offsets_us: offsets.iter().map(|o| *o as f64 / 1e3).collect(),
        slack_us: tracker
            .slack_ns()
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != 0)
            .map(|(i, s)| (class_name(i), *s as f64 / 1e3))
            .collect(),
        delay_constant_us: c / 1e3,
        delay_slope: b,
        seconds: clock.elapsed().as_secs_f64(),
    })
}
