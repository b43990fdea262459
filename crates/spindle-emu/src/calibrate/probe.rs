//! Timed requests and the rotation model they are read against: the clock, the
//! synchronized and asynchronous rotation measurement, and the two timing primitives every
//! later step uses (a sector's angle, and how long a read takes after the head last passed
//! its first sector).

use super::target::Target;
use super::{CalibError, Event};
use spindle::calib::rotation::{self, Estimate};
use spindle::calib::{median, wrap};
use std::time::{Duration, Instant};

/// The reference sector: every angle is relative to the end of LBA 0.
pub const REFERENCE_LBA: u64 = 0;
/// Back-to-back reads in the synchronized measurement.
pub const SYNC_READS: usize = 64;
/// Reads in one asynchronous phase anchor.
pub const ANCHOR_READS: usize = 16;
/// Eq. 3.1's alpha: the count's error stays under a fifth of a revolution.
const ALPHA: f64 = 0.2;

/// A target, a clock, and the rotation as measured so far.
pub struct Probe<'a> {
    pub target: Box<dyn Target>,
    epoch: Instant,
    pub est: Estimate,
    /// A completion instant of the reference sector (ns since `epoch`).
    pub anchor_ns: f64,
    /// Noise of the interval between two completions (what every timing difference below
    /// sees), and a bound on one completion's error (ns).
    pub sigma_ns: f64,
    pub gamma_ns: f64,
    pub reads: u64,
    pub writes: u64,
    /// The only LBAs a write may touch (`--scratch`; `None`: no write at all).
    pub scratch: Option<std::ops::Range<u64>>,
    /// Deviations of repeated timings from their median (ns), the latest [`NOISE_KEPT`]:
    /// the noise as the scan sees it now, which a refusal reports.
    devs: std::collections::VecDeque<f64>,
    pub events: &'a mut dyn FnMut(Event),
}

/// How many recent deviations [`Probe::noise_now`] is computed from.
const NOISE_KEPT: usize = 400;

impl<'a> Probe<'a> {
    pub fn new(target: Box<dyn Target>, events: &'a mut dyn FnMut(Event)) -> Probe<'a> {
        Probe::with_epoch(target, Instant::now(), events)
    }

    /// A probe whose times count from `epoch` (a driver's clock, shared by its disks).
    pub fn with_epoch(
        target: Box<dyn Target>,
        epoch: Instant,
        events: &'a mut dyn FnMut(Event),
    ) -> Probe<'a> {
        Probe {
            target,
            epoch,
            est: Estimate {
                period_ns: 0.0,
                delta_ns: f64::INFINITY,
            },
            anchor_ns: 0.0,
            sigma_ns: 0.0,
            gamma_ns: 0.0,
            reads: 0,
            writes: 0,
            scratch: None,
            devs: std::collections::VecDeque::new(),
            events,
        }
    }

    pub fn say(&mut self, line: String) {
        (self.events)(Event::Line(line));
    }

    pub fn period(&self) -> f64 {
        self.est.period_ns
    }

    /// Now, ns since the epoch (the instant a request is issued).
    pub fn now_ns(&self) -> f64 {
        self.epoch.elapsed().as_nanos() as f64
    }

    /// Reads and returns the answer instant, ns since the epoch.
    pub fn read(&mut self, lba: u64, sectors: u32) -> Result<f64, CalibError> {
        let at = self.target.read(lba, sectors)?;
        self.reads += 1;
        Ok(at.duration_since(self.epoch).as_nanos() as f64)
    }

    /// Writes `data` at `lba` — only inside the scratch range the caller allowed (a guard:
    /// the write step checks its LBAs first) — and returns the answer instant.
    pub fn write(&mut self, lba: u64, data: &[u8]) -> Result<f64, CalibError> {
        let n = (data.len() / self.target.sector_bytes() as usize) as u64;
        let ok = self
            .scratch
            .as_ref()
            .is_some_and(|s| lba >= s.start && lba + n <= s.end);
        if !ok {
            return Err(CalibError::Scratch(format!(
                "internal: a write of {n} sectors at LBA {lba} outside the scratch range {:?}",
                self.scratch
            )));
        }
        let at = self.target.write(lba, data)?;
        self.writes += 1;
        Ok(at.duration_since(self.epoch).as_nanos() as f64)
    }

    pub fn burst(&mut self, n: usize) -> Result<Vec<f64>, CalibError> {
        // The first read positions the arm; its completion is not one revolution after
        // anything.
        self.read(REFERENCE_LBA, 1)?;
        (0..n).map(|_| self.read(REFERENCE_LBA, 1)).collect()
    }

    /// Synchronized measurement, then asynchronous iterations for `budget`.
    pub fn rotation(
        &mut self,
        budget: Duration,
        known: Option<Estimate>,
    ) -> Result<(), CalibError> {
        let c = self.burst(SYNC_READS)?;
        let fit = rotation::synchronized(&c).map_err(|e| CalibError::TooNoisy {
            target: self.target.describe(),
            msg: e.to_string(),
        })?;
        self.sigma_ns = fit.interval_sigma_ns;
        self.gamma_ns = fit.gamma_ns;
        self.anchor_ns = fit.anchor_ns;
        self.est = fit.estimate;
        self.say(format!(
            "rotation, synchronized ({SYNC_READS} reads of LBA {REFERENCE_LBA}): R(0) = {:.6} ms \
             ± {:.3} µs; interval noise sigma {:.1} µs, completion scatter {:.1} µs, bound gamma \
             {:.1} µs, {} delayed reads dropped",
            self.est.period_ns / 1e6,
            self.est.delta_ns / 1e3,
            fit.interval_sigma_ns / 1e3,
            fit.sigma_ns / 1e3,
            fit.gamma_ns / 1e3,
            fit.outliers
        ));
        self.check_noise()?;
        if let Some(k) = known {
            // Resuming: the period is kept, the phase (lost with the connection) is new.
            if (k.period_ns - self.est.period_ns).abs() > self.est.delta_ns + k.delta_ns {
                return Err(CalibError::Resume(format!(
                    "the saved rotation {:.6} ms disagrees with this run's {:.6} ms ± {:.3} µs",
                    k.period_ns / 1e6,
                    self.est.period_ns / 1e6,
                    self.est.delta_ns / 1e3
                )));
            }
            self.est = k;
            let (a, _) = rotation::anchor(&self.burst(ANCHOR_READS)?, k.period_ns);
            self.anchor_ns = a;
            self.say(format!(
                "rotation: kept the saved R = {:.6} ms ± {:.4} µs, new phase anchor",
                k.period_ns / 1e6,
                k.delta_ns / 1e3
            ));
            return Ok(());
        }
        let start = Instant::now();
        let first = self.anchor_ns;
        for k in 1.. {
            let rotations = rotation::next_rotations(self.est, ALPHA);
            let left = budget.saturating_sub(start.elapsed()).as_nanos() as f64;
            let wait = (rotations * self.est.period_ns).min(left);
            // Stop when the budget is spent — not when eq. 3.1 allows few revolutions: a
            // noisy synchronized fit (a loose R(0)) is exactly when refinement is needed, and
            // short iterations shrink the bound by their count each time (a run at load 9
            // skipped every iteration: R(0) ± 24 µs, off by 0.024 %).
            if left < 50.0 * self.est.period_ns || wait < 2.0 * self.est.period_ns {
                break;
            }
            std::thread::sleep(Duration::from_nanos(wait as u64));
            let (b, _) = rotation::anchor(&self.burst(ANCHOR_READS)?, self.est.period_ns);
            let (next, n) = rotation::refine(self.est, first, b, self.gamma_ns).map_err(|e| {
                CalibError::TooNoisy {
                    target: self.target.describe(),
                    msg: e.to_string(),
                }
            })?;
            self.est = next;
            self.anchor_ns = b;
            self.say(format!(
                "rotation, asynchronous iteration {k}: N = {n} revolutions (eq. 3.1 allowed \
                 {rotations:.0}), R({k}) = {:.6} ms ± {:.4} µs (eq. 3.2)",
                next.period_ns / 1e6,
                next.delta_ns / 1e3
            ));
        }
        Ok(())
    }

    /// A fresh phase anchor: the period's small error grows with every revolution since the
    /// last one, so every angle measurement starts with a short burst.
    pub fn reanchor(&mut self) -> Result<(), CalibError> {
        let (a, _) = rotation::anchor(&self.burst(ANCHOR_READS)?, self.est.period_ns);
        self.anchor_ns = a;
        Ok(())
    }

    /// Refuses a target whose completion noise hides what the layout scan must see: a
    /// track switch must stand out of the noise by a wide margin.
    fn check_noise(&self) -> Result<(), CalibError> {
        let limit = self.est.period_ns / 100.0;
        if self.sigma_ns > limit {
            return Err(CalibError::TooNoisy {
                target: self.target.describe(),
                msg: format!(
                    "interval noise sigma {:.1} µs is over 1 % of a revolution ({:.1} µs \
                     of {:.4} ms): track switches and sector angles cannot be told from it",
                    self.sigma_ns / 1e3,
                    limit / 1e3,
                    self.est.period_ns / 1e6
                ),
            });
        }
        Ok(())
    }

    /// The timing noise the scan sees now: the robust sigma of the latest repeated reads'
    /// deviations from their medians (ns); the synchronized burst's until there are some.
    pub fn noise_now(&self) -> f64 {
        if self.devs.len() < 20 {
            return self.sigma_ns;
        }
        let v: Vec<f64> = self.devs.iter().copied().collect();
        // The deviations of one set from its own median: scaled to one timing's sigma.
        spindle::calib::mad_sigma(&v)
    }

    /// A refusal naming the quantity that could not be pinned down and the noise measured
    /// (at the start, and over the latest repeated reads).
    pub fn refuse(&self, quantity: &str, detail: String) -> CalibError {
        CalibError::TooNoisy {
            target: self.target.describe(),
            msg: format!(
                "{quantity}: {detail}; timing noise: interval sigma {:.1} µs at the start,                  {:.1} µs over the latest repeated reads (refused rather than write a wrong                  model)",
                self.sigma_ns / 1e3,
                self.noise_now() / 1e3
            ),
        }
    }

    fn note_spread(&mut self, xs: &[f64]) {
        if xs.len() < 3 {
            return;
        }
        let m = median(xs);
        for x in xs {
            if self.devs.len() == NOISE_KEPT {
                self.devs.pop_front();
            }
            self.devs.push_back(x - m);
        }
    }

    /// How far an answer's angle may stray before it counts as delayed by the host: well
    /// above the timing noise and the host's slow drifts, well below a delayed reply (ms).
    pub fn angle_tolerance(&self) -> f64 {
        (4.0 * self.sigma_ns).max(self.period() / 60.0)
    }

    /// The threshold above which a read's extra time is a track crossing, not noise: 6
    /// sigma, and never under a sixtieth of a revolution — the host's delay grows with how
    /// long a request was out (1.5-2 % of the difference, ~100 µs between a read of a sector
    /// and one of a track at 10,000 rpm), which no sigma of repeated identical reads shows
    /// (a quiet run, sigma 13 µs, took a zone's first track for zero-latency at 80 µs).
    pub fn crossing_threshold(&self) -> f64 {
        (6.0 * self.sigma_ns).max(self.period() / 60.0)
    }

    /// The end angle of `lba`'s sector after the reference sector's, ns of rotation
    /// (median of `reps` reads).
    pub fn end_angle(&mut self, lba: u64, reps: usize) -> Result<f64, CalibError> {
        let p = self.period();
        let mut v = Vec::with_capacity(reps);
        for _ in 0..reps {
            let c = self.read(lba, 1)?;
            v.push(wrap(c - self.anchor_ns, p));
        }
        // Angles near 0 and P are neighbours: centre on the densest before the median.
        let c0 = rotation::center(&v, p);
        let centred: Vec<f64> = v
            .iter()
            .map(|a| c0 + wrap(a - c0 + p / 2.0, p) - p / 2.0)
            .collect();
        Ok(wrap(median(&centred), p))
    }

    /// The angle from the end of `from`'s sector to the end of `to`'s, ns in `[0, P)`:
    /// each sector read back to back `reps` times after one read that brings the head
    /// there (dropped). Every kept read waits the same revolution less the host's round
    /// trip, so whatever the host adds to an answer — which grows with how long the request
    /// was out — is the same for both sectors and cancels; a duration (a crossing less a
    /// whole-track read) carries it instead (docs/calibrate.md).
    pub fn angle_gap(&mut self, from: u64, to: u64, reps: usize) -> Result<f64, CalibError> {
        let p = self.period();
        let one = |me: &mut Self, lba: u64| -> Result<Vec<f64>, CalibError> {
            me.read(lba, 1)?;
            (0..reps)
                .map(|_| me.read(lba, 1).map(|c| wrap(c - me.anchor_ns, p)))
                .collect()
        };
        let a = one(self, from)?;
        let b = one(self, to)?;
        let centred = |v: &[f64]| {
            let c0 = rotation::center(v, p);
            let c: Vec<f64> = v
                .iter()
                .map(|x| c0 + wrap(x - c0 + p / 2.0, p) - p / 2.0)
                .collect();
            c
        };
        let (ca, cb) = (centred(&a), centred(&b));
        self.note_spread(&ca);
        self.note_spread(&cb);
        Ok(wrap(median(&cb) - median(&ca), p))
    }

    /// The time of `sectors` sectors from `lba`, read just after reading `lba` alone: a
    /// revolution after its first sector passed plus the transfer, plus whatever crossing a
    /// track costs. One read of one sector then one of `sectors`, `reps` times; a repetition
    /// is dropped when either answer's angle strays from the others' (the host delayed
    /// it), and the median of the rest is returned.
    pub fn after_pass(&mut self, lba: u64, sectors: u32, reps: usize) -> Result<f64, CalibError> {
        assert!(reps >= 1, "at least one repetition");
        let p = self.period();
        let tol = self.angle_tolerance();
        let off = |x: f64, c: f64| {
            let d = wrap(x - c, p);
            d.min(p - d)
        };
        let mut pairs = Vec::with_capacity(reps);
        let mut kept = Vec::new();
        // A repetition more each time too few agree, up to three times the asked-for; after
        // a pause (a burst of host load passes), three times more.
        let mut paused = false;
        while pairs.len() < 3 * reps || (!paused && kept.is_empty()) {
            if pairs.len() == 3 * reps {
                std::thread::sleep(Duration::from_millis(500));
                pairs.clear();
                paused = true;
            }
            let a = self.read(lba, 1)?;
            let b = self.read(lba, sectors)?;
            pairs.push((a, b));
            if pairs.len() < reps {
                continue;
            }
            let ca = rotation::center(&pairs.iter().map(|x| x.0).collect::<Vec<_>>(), p);
            let cb = rotation::center(&pairs.iter().map(|x| x.1).collect::<Vec<_>>(), p);
            kept = pairs
                .iter()
                .filter(|&&(a, b)| off(a, ca) < tol && off(b, cb) < tol)
                .map(|&(a, b)| b - a)
                .collect();
            if kept.len() * 2 > reps || (reps == 1 && !kept.is_empty()) {
                break;
            }
        }
        if kept.is_empty() {
            return Err(self.refuse(
                &format!("a read of {sectors} sectors at LBA {lba} after a pass"),
                format!(
                    "{} repetitions (twice) never answered at a consistent angle (within {:.0} \
                     µs)",
                    pairs.len(),
                    tol / 1e3
                ),
            ));
        }
        self.note_spread(&kept);
        Ok(median(&kept))
    }

    /// `after_pass` less its in-track expectation `P + (sectors − 1)·sector_ns`: about 0
    /// inside a track, a crossing's penalty otherwise.
    pub fn excess(&mut self, lba: u64, sectors: u32, sector_ns: f64) -> Result<f64, CalibError> {
        let expect = self.period() + f64::from(sectors - 1) * sector_ns;
        self.excess_from(lba, sectors, expect)
    }

    /// `after_pass` less `expect` (the same read's time inside one track). A crossing is
    /// confirmed by a second median (the smaller one is returned): a burst of delayed
    /// replies can fake one, never hide the time a crossing really costs twice.
    pub fn excess_from(&mut self, lba: u64, sectors: u32, expect: f64) -> Result<f64, CalibError> {
        let ex = self.after_pass(lba, sectors, 5)? - expect;
        if ex <= self.crossing_threshold() {
            return Ok(ex);
        }
        Ok(ex.min(self.after_pass(lba, sectors, 5)? - expect))
    }
}
