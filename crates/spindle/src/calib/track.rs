//! Head tracking at run time (dissertation 3.3.2): a calibrated [`Drive`] predicts when a
//! real drive will answer a request, from the platter's phase (anchored on the reference
//! sector) and the arm's place after the last completion; slack added to the seek absorbs
//! the calibration's small errors, and adapts to the rotation misses it observes.
//!
//! Sans-I/O: the driver issues requests and reads its clock, and tells the tracker.
//! Call order:
//! 1. [`Tracker::handle_anchor`] with the answer instant of a read of the reference sector
//!    (LBA 0; the median of a back-to-back burst, `spindle::calib::rotation::anchor`) —
//!    before the first prediction, and again whenever [`Tracker::poll_resync`] says so;
//!    [`Tracker::set_zone_offsets`] once, if the zones' first sectors were measured.
//! 2. [`Tracker::predict`] at the instant a request is issued (`&self`: a scheduler may ask
//!    for every candidate).
//! 3. [`Tracker::handle_completion`] with the issued request's prediction and its answer
//!    instant: the arm's new place, the rotation-miss verdict, slack and host-delay updates.
//!
//! The prediction is the same noiseless [`Drive::access`] the simulator and the schedulers
//! use (overhead, seek, rotational wait, transfer and switches), from a head state whose
//! phase is the anchor's, plus two terms the model itself has no notion of:
//! - **slack** (per seek-distance class, as the dissertation suggests): when the model's
//!   rotational wait is under the slack, the first sector is predicted missed — a
//!   revolution later. A miss (an answer a revolution later than predicted) grows the
//!   class's slack by a step; a prediction a revolution too late (*early*: the hit the slack
//!   did not expect) shrinks it by a step. Other hits leave it: a decay towards zero on hits
//!   near the line, tried first, held a positive slack (the calibrated minimum read times
//!   are minima, so most classes need one) under its balance, and gave 1.5-3 times more
//!   misses than early predictions (20/12, 18/11, 32/10 in runs of 2,000 on `cheetah9lp`).
//!   A class with no revolution error yet borrows the nearest tested class's slack.
//!   The slack may go negative: a
//!   class whose calibrated minimum read time is long (each is measured to a few percent)
//!   makes sectors the model would miss, and the sector then predicted a revolution sooner.
//!   The steps are symmetric, so the slack settles where misses and early predictions
//!   balance — the fewest revolution errors, which is what a prediction is judged by here;
//!   a scheduler that would rather lose a candidate than a revolution would weigh misses
//!   more.
//! - **host delay**: the host adds to each answer a delay that grows with how long the
//!   request was out (docs/calibrate.md, "Why angles": 2–6 % of the extra time on this
//!   virtual machine). Its constant and slope (`c + b·D`, `D` the model's service time with
//!   the slack's revolution) are
//!   fitted by least squares over the hits seen so far, the latest ~500 weighing most
//!   (those within a tenth of a revolution of the fit: an answer the host held up by
//!   milliseconds is not typical).
//!
//! Times are integer nanoseconds on the driver's clock; the fit's sums are `f64`
//! (statistics of measured times, as everywhere in [`crate::calib`]).

use crate::drive::{Access, Drive, HeadState, Transfer};
use crate::{Nanos, Span};

/// Seek-distance classes: same track, head switch, then `2 + log2(cylinders)`.
const CLASSES: usize = 40;

/// How the slack adapts and when to re-synchronise.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TrackConfig {
    /// Slack growth per observed miss (and shrink per prediction a revolution too late).
    pub slack_step: Span,
    /// Largest slack of any class.
    pub slack_max: Span,
    /// Re-anchor on the reference sector at least this often.
    pub resync_every: Span,
    /// Re-anchor after this many answers in a row off the prediction by a revolution.
    pub resync_after_misses: u32,
}

impl TrackConfig {
    /// Defaults scaled to the drive's revolution: a step of 1/200 revolution (30 µs at
    /// 10,000 rpm, near the emulator's and this host's timing noise), at most a tenth of a
    /// revolution, re-anchored every 2 s (the calibrated period is within nanoseconds, so
    /// 2 s drift by microseconds) or after 3 misses in a row.
    #[must_use]
    pub fn for_drive(drive: &Drive) -> TrackConfig {
        let p = drive.period().0;
        TrackConfig {
            slack_step: Span(p / 200),
            slack_max: Span(p / 10),
            resync_every: Span::from_ms(2_000),
            resync_after_misses: 3,
        }
    }
}

/// What the tracker expects of one request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    pub issued: Nanos,
    pub xfer: Transfer,
    /// The model's noiseless access from `issued` (no slack, no host delay).
    pub access: Access,
    /// The model's wait for the first sector after the seek.
    pub first_wait: Span,
    /// Slack class and the slack applied (ns, may be negative).
    pub class: usize,
    pub slack_ns: i64,
    /// Revolutions the slack added to the model's wait: 1 (a first sector due within the
    /// slack after the seek is taken as missed), -1 (one just passed is taken as made, for a
    /// negative slack), or 0.
    pub slack_revolutions: i64,
    /// The host-delay term added (ns, may be negative).
    pub delay_ns: i64,
    /// Predicted answer less `issued`.
    pub service: Span,
}

impl Prediction {
    /// Predicted answer instant.
    #[must_use]
    pub fn answer(&self) -> Nanos {
        self.issued + self.service
    }
}

/// How an answer compared with its prediction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within half a revolution of the prediction.
    Hit,
    /// A whole revolution (or more) later: the drive missed the sector the model made.
    Miss,
    /// A revolution sooner: the slack predicted a miss the drive did not have.
    Early,
}

/// Running least squares of the host's delay `y = c + b·x` (ns) over hits.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct DelayFit {
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl DelayFit {
    /// Hits before the slope is trusted (a constant alone before that).
    const SLOPE_MIN: f64 = 30.0;

    /// Each hit's weight decays by this much per later hit (a memory of ~500 hits, a few
    /// seconds): the host's delay moves with its load.
    const FORGET: f64 = 1.0 - 1.0 / 500.0;

    fn add(&mut self, x: f64, y: f64) {
        for v in [
            &mut self.n,
            &mut self.sx,
            &mut self.sy,
            &mut self.sxx,
            &mut self.sxy,
        ] {
            *v *= Self::FORGET;
        }
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// (c, b): the constant and the slope per ns of service.
    fn coefficients(&self) -> (f64, f64) {
        if self.n < 1.0 {
            return (0.0, 0.0);
        }
        let var = self.sxx - self.sx * self.sx / self.n;
        // A slope needs spread in x: at least a quarter-revolution's worth among the hits.
        if self.n < Self::SLOPE_MIN || var <= self.n * 1e10 {
            return (self.sy / self.n, 0.0);
        }
        let b = (self.sxy - self.sx * self.sy / self.n) / var;
        ((self.sy - b * self.sx) / self.n, b)
    }
}

/// Counts a driver reports (plain numbers behind `&self`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TrackCounts {
    pub completions: u64,
    pub hits: u64,
    pub misses: u64,
    pub early: u64,
    pub anchors: u64,
}

/// The run-time head tracker of one drive.
#[derive(Clone, Debug)]
pub struct Tracker {
    drive: Drive,
    cfg: TrackConfig,
    /// Platter phase: the model's angle at instant `t` is `(t + phase_ns) mod period`.
    phase_ns: Option<u64>,
    anchored_at: Nanos,
    /// Per geometry zone: how far its sectors' measured angles run ahead of the model's.
    zone_offsets_ns: Vec<i64>,
    cylinder: u32,
    head: u32,
    slack_ns: [i64; CLASSES],
    /// Classes that have had a revolution error (their slack is their own).
    tested: [bool; CLASSES],
    delay: DelayFit,
    misses_in_row: u32,
    counts: TrackCounts,
}

impl Tracker {
    /// A tracker for `drive` (a calibrated drive file), arm at cylinder 0, head 0 (the
    /// reference sector's track: the anchor burst leaves it there).
    #[must_use]
    pub fn new(drive: Drive, cfg: TrackConfig) -> Tracker {
        assert!(cfg.slack_step.0 > 0, "a slack step is positive");
        assert!(
            cfg.slack_max < drive.period(),
            "slack stays under a revolution"
        );
        let zones = drive.geometry().zone_count();
        Tracker {
            drive,
            cfg,
            phase_ns: None,
            anchored_at: Nanos::ZERO,
            zone_offsets_ns: vec![0; zones],
            cylinder: 0,
            head: 0,
            slack_ns: [0; CLASSES],
            tested: [false; CLASSES],
            delay: DelayFit::default(),
            misses_in_row: 0,
            counts: TrackCounts::default(),
        }
    }

    #[must_use]
    pub fn drive(&self) -> &Drive {
        &self.drive
    }

    /// Where the arm is (after the last answer or anchor) and the platter phase of the
    /// last anchor (the model's angle at instant `t` is `(t + phase_ns) mod period`), once
    /// anchored.
    #[must_use]
    pub fn head_state(&self) -> Option<HeadState> {
        Some(HeadState {
            cylinder: self.cylinder,
            head: self.head,
            phase_ns: self.phase_ns?,
        })
    }

    #[must_use]
    pub fn counts(&self) -> TrackCounts {
        self.counts
    }

    /// The slack of each seek-distance class (same track, head switch, 1, 2–3, 4–7, …
    /// cylinders), ns, as the next prediction of that class would use it.
    #[must_use]
    pub fn slack_ns(&self) -> Vec<i64> {
        (0..CLASSES).map(|c| self.class_slack(c)).collect()
    }

    /// The host-delay fit: constant (ns) and slope (ns per ns of service).
    #[must_use]
    pub fn delay_coefficients(&self) -> (f64, f64) {
        self.delay.coefficients()
    }

    /// The model's angle (ns into the revolution) at which `lba`'s sector ends: what a
    /// read of it alone answers at, in the anchor's frame.
    #[must_use]
    pub fn end_angle(&self, lba: u64) -> u64 {
        let t = self.drive.locate(lba);
        let p = self.drive.period().0;
        // The sector's end exactly as the access loop times it (a nanosecond off would turn
        // a zero wait into a revolution).
        let (idx, spt) = self.drive.geometry().angle_index(t.chs);
        let (idx, spt) = (u64::from(idx), u64::from(spt));
        (t.angle_ns + p * (idx + 1) / spt - p * idx / spt) % p
    }

    /// A re-synchronisation: `answered` is the answer instant of the reference sector
    /// (LBA 0) read back to back, so the model's end angle of LBA 0 is there then. Leaves
    /// the arm on LBA 0's track.
    pub fn handle_anchor(&mut self, now: Nanos, answered: Nanos) {
        assert!(now >= self.anchored_at, "time went backwards: {now:?}");
        let p = self.drive.period().0;
        let end0 = self.end_angle(0);
        self.phase_ns = Some((end0 + p - answered.0 % p) % p);
        self.anchored_at = now;
        let chs = self.drive.locate(0).chs;
        (self.cylinder, self.head) = (chs.cylinder, chs.head);
        self.misses_in_row = 0;
        self.counts.anchors += 1;
    }

    /// Measured angle offsets of each zone's sectors after the model's (ns, within half a
    /// revolution; the driver reads each zone's first sector against the anchor). A real
    /// drive's zones start at angles its drive file cannot hold; the emulator's at 0.
    pub fn set_zone_offsets(&mut self, offsets_ns: Vec<i64>) {
        assert_eq!(
            offsets_ns.len(),
            self.zone_offsets_ns.len(),
            "one offset per zone"
        );
        let half = (self.drive.period().0 / 2) as i64;
        assert!(
            offsets_ns.iter().all(|o| o.abs() <= half),
            "offsets within half a revolution"
        );
        self.zone_offsets_ns = offsets_ns;
    }

    /// Whether the driver should re-anchor before the next request.
    #[must_use]
    pub fn poll_resync(&self, now: Nanos) -> bool {
        self.phase_ns.is_none()
            || now.saturating_since(self.anchored_at) >= self.cfg.resync_every
            || self.misses_in_row >= self.cfg.resync_after_misses
    }

    fn zone_index(&self, cylinder: u32) -> usize {
        let g = self.drive.geometry();
        (0..g.zone_count())
            .find(|&i| cylinder <= g.zone_bounds(i).1)
            .unwrap_or(g.zone_count() - 1)
    }

    /// Seek-distance class of a move from the arm's place to cylinder `c`, head `h`.
    fn class(&self, c: u32, h: u32) -> usize {
        let d = self.cylinder.abs_diff(c);
        match d {
            0 if h == self.head => 0,
            0 => 1,
            _ => (2 + d.ilog2() as usize).min(CLASSES - 1),
        }
    }

    /// The slack of a class: its own once it has had a revolution error, until then the
    /// nearest such class's (neighbouring distances need alike slack — the seek noise and
    /// the calibration's error both grow with the distance — and eight or so classes each
    /// learning from zero made a run's first ~20 misses).
    fn class_slack(&self, class: usize) -> i64 {
        if self.tested[class] {
            return self.slack_ns[class];
        }
        (0..CLASSES)
            .filter(|&c| self.tested[c])
            .min_by_key(|&c| (c.abs_diff(class), c))
            .map_or(0, |c| self.slack_ns[c])
    }

    /// What the drive will do with `xfer` issued at `now`.
    #[must_use]
    pub fn predict(&self, now: Nanos, xfer: Transfer) -> Prediction {
        let phase = self.phase_ns.expect("handle_anchor before predict");
        assert!(now >= self.anchored_at, "time went backwards: {now:?}");
        assert!(xfer.sectors > 0, "a request moves a sector");
        let p = self.drive.period().0;
        let target = self.drive.locate(xfer.lba);
        // A zone whose sectors sit `off` later than the model's is the model's zone on a
        // platter turned `off` less.
        let off = self.zone_offsets_ns[self.zone_index(target.chs.cylinder)];
        let head = HeadState {
            cylinder: self.cylinder,
            head: self.head,
            phase_ns: (i128::from(phase) - i128::from(off)).rem_euclid(i128::from(p)) as u64,
        };
        let access = self
            .drive
            .access::<rand_pcg::Pcg64Mcg>(now, &head, xfer, None, None);
        let class = self.class(target.chs.cylinder, target.chs.head);
        let slack_ns = self.class_slack(class);
        // Slack added to the seek: a first sector due sooner after the seek than the slack
        // is taken as missed; with a negative slack, one passed less than |slack| before the
        // seek's end is taken as made.
        // The wait for the first sector (`access.rotation` also holds the waits after track
        // switches inside the request), timed as the access times it.
        let first_wait = self.drive.rotational_wait(
            now + access.overhead + access.seek,
            head.phase_ns,
            target.angle_ns,
        );
        let rot = i64::try_from(first_wait.0).expect("a wait under a revolution");
        let pi = i64::try_from(p).expect("a period fits i64");
        let slack_revolutions = match rot {
            r if r < slack_ns => 1,
            r if r >= pi + slack_ns => -1,
            _ => 0,
        };
        let model = Span(
            access
                .service()
                .0
                .checked_add_signed(slack_revolutions * pi)
                .expect("a negative slack only takes back a revolution the model waited"),
        );
        let (c, b) = self.delay.coefficients();
        let delay_ns = (c + b * model.0 as f64).round() as i64;
        let service = Span(model.0.saturating_add_signed(delay_ns));
        Prediction {
            issued: now,
            xfer,
            access,
            first_wait,
            class,
            slack_ns,
            slack_revolutions,
            delay_ns,
            service,
        }
    }

    /// The answer to `pred`'s request came at `answered`: the arm is where the access
    /// ended, the verdict adapts the slack, and a hit's residual feeds the delay fit.
    pub fn handle_completion(&mut self, pred: &Prediction, answered: Nanos) -> Verdict {
        assert!(answered >= pred.issued, "an answer after its request");
        let p = self.drive.period().0 as f64;
        self.cylinder = pred.access.end_cylinder;
        self.head = pred.access.end_head;
        let err = answered.0 as f64 - pred.answer().0 as f64;
        let revs = (err / p).round();
        let verdict = match revs {
            r if r >= 1.0 => Verdict::Miss,
            r if r <= -1.0 => Verdict::Early,
            _ => Verdict::Hit,
        };
        let step = i64::try_from(self.cfg.slack_step.0).expect("fits");
        let max = i64::try_from(self.cfg.slack_max.0).expect("fits");
        if matches!(verdict, Verdict::Miss | Verdict::Early) && !self.tested[pred.class] {
            // A class's first revolution error moves the slack it borrowed.
            self.slack_ns[pred.class] = pred.slack_ns;
            self.tested[pred.class] = true;
        }
        let s = &mut self.slack_ns[pred.class];
        self.counts.completions += 1;
        match verdict {
            Verdict::Miss => {
                *s = (*s + step).min(max);
                self.counts.misses += 1;
                self.misses_in_row += 1;
            }
            Verdict::Early => {
                *s = (*s - step).max(-max);
                self.counts.early += 1;
                self.misses_in_row += 1;
            }
            Verdict::Hit => {
                self.counts.hits += 1;
                self.misses_in_row = 0;
                // The host's delay: what the model (with its slack revolution) left out.
                let model = pred.access.service().0 as f64 + pred.slack_revolutions as f64 * p;
                let measured = answered.since(pred.issued).0 as f64;
                // Only answers near the fit teach it: one the host held up by
                // milliseconds (a wake-up lost under load) is not its typical delay.
                let (c, b) = self.delay.coefficients();
                if (measured - model - (c + b * model)).abs() < p / 10.0 {
                    self.delay.add(model, measured - model);
                }
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::builtin_drive;
    use crate::Op;
    use rand::{Rng, SeedableRng};

    /// The "real" drive: the same model, its platter at `phase`, answers late by
    /// `delay(service)` — the tracker must learn both.
    struct Fake {
        drive: Drive,
        head: HeadState,
    }

    impl Fake {
        fn serve(&mut self, now: Nanos, xfer: Transfer, extra_seek_ns: i64) -> Nanos {
            // A seek longer (or shorter) than the model's: the drive's noise, or a
            // calibration off. Started that much later, it ends the same.
            let start = Nanos(now.0.checked_add_signed(extra_seek_ns).unwrap());
            let a = self
                .drive
                .access::<rand_pcg::Pcg64Mcg>(start, &self.head, xfer, None, None);
            self.head.cylinder = a.end_cylinder;
            self.head.head = a.end_head;
            a.end
        }
    }

    fn reads(drive: &Drive, n: usize, seed: u64) -> Vec<Transfer> {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let cap = drive.capacity_sectors() - 8;
        (0..n)
            .map(|_| Transfer {
                op: Op::Read,
                lba: rng.gen_range(0..cap),
                sectors: 8,
            })
            .collect()
    }

    /// With the drive's own model, anchored on its reference sector, every prediction is
    /// exact: the tracker adds nothing the model does not have.
    #[test]
    fn exact_on_the_model_itself() {
        let drive = builtin_drive("cheetah9lp").unwrap();
        let p = drive.period().0;
        let mut fake = Fake {
            drive: drive.clone(),
            head: HeadState {
                cylinder: 0,
                head: 0,
                phase_ns: 1_234_567 % p,
            },
        };
        let mut t = Tracker::new(drive.clone(), TrackConfig::for_drive(&drive));
        // The reference burst: LBA 0 read back to back; its answer is its sector's end.
        let mut now = Nanos(10_000_000);
        let x0 = Transfer {
            op: Op::Read,
            lba: 0,
            sectors: 1,
        };
        now = fake.serve(now, x0, 0);
        now = fake.serve(now, x0, 0);
        t.handle_anchor(now, now);
        for x in reads(&drive, 500, 1) {
            let pred = t.predict(now, x);
            let done = fake.serve(now, x, 0);
            assert_eq!(pred.answer(), done, "{x:?}");
            assert_eq!(t.handle_completion(&pred, done), Verdict::Hit);
            now = done;
        }
        assert_eq!(t.counts().misses, 0);
        assert!(t.slack_ns().iter().all(|s| *s == 0));
    }

    /// A drive whose seeks run 100 µs longer than the model's misses the sectors the model
    /// makes with under 100 µs to spare; the slack grows on those misses until they stop,
    /// and the host's delay (here 40 µs + 3 % of the service) is learnt by the fit.
    #[test]
    fn slack_grows_on_misses_and_the_delay_is_learnt() {
        let drive = builtin_drive("cheetah9lp").unwrap();
        let p = drive.period().0;
        let mut fake = Fake {
            drive: drive.clone(),
            head: HeadState {
                cylinder: 0,
                head: 0,
                phase_ns: 777_777 % p,
            },
        };
        let mut t = Tracker::new(drive.clone(), TrackConfig::for_drive(&drive));
        let mut now = Nanos(5_000_000);
        let x0 = Transfer {
            op: Op::Read,
            lba: 0,
            sectors: 1,
        };
        now = fake.serve(now, x0, 0);
        now = fake.serve(now, x0, 0);
        // The anchor's own read was out a revolution: its delay is 40 µs + 3 % of that.
        let delay = |service: u64| 40_000 + service * 3 / 100;
        t.handle_anchor(now, now + Span(delay(p)));
        let late = 100_000;
        let (mut late_misses, mut errs) = (0u64, Vec::new());
        for (i, x) in reads(&drive, 4000, 2).into_iter().enumerate() {
            let pred = t.predict(now, x);
            let end = fake.serve(now, x, late);
            let answered = end + Span(delay(end.0 - now.0));
            let v = t.handle_completion(&pred, answered);
            if i >= 2000 {
                late_misses += u64::from(v != Verdict::Hit);
                errs.push((answered.0 as f64 - pred.answer().0 as f64).abs());
            }
            now = answered;
        }
        // Every class the workload uses most has slack at least the 100 µs it needs, less
        // a step (the decay probes just under it).
        let step = (p / 200) as i64;
        let busiest = (2..CLASSES).max_by_key(|&c| t.slack_ns()[c]).unwrap();
        assert!(
            t.slack_ns()[busiest] + step >= 100_000,
            "slack {:?}",
            t.slack_ns()
        );
        // Misses in the second half: none expected once the slack covers the 100 µs (the
        // bound allows the slack's last steps).
        assert!(late_misses < 40, "{late_misses} misses of 2000");
        // The fit: slope 3 %, and hits predicted within a few µs (the delay's rounding).
        let (_, b) = t.delay_coefficients();
        assert!((b - 0.03).abs() < 0.002, "slope {b}");
        errs.sort_by(f64::total_cmp);
        let median = errs[errs.len() / 2];
        assert!(median < 5_000.0, "median |error| {median} ns");
    }

    /// A drive whose seeks are 150 µs shorter than the calibrated minimum read times makes
    /// sectors the model says it misses: the slack goes negative, and the early predictions
    /// stop.
    #[test]
    fn a_negative_slack_for_seeks_shorter_than_calibrated() {
        let drive = builtin_drive("cheetah9lp").unwrap();
        let p = drive.period().0;
        let mut fake = Fake {
            drive: drive.clone(),
            head: HeadState {
                cylinder: 0,
                head: 0,
                phase_ns: 4_444_444 % p,
            },
        };
        let mut t = Tracker::new(drive.clone(), TrackConfig::for_drive(&drive));
        let x0 = Transfer {
            op: Op::Read,
            lba: 0,
            sectors: 1,
        };
        let mut now = fake.serve(Nanos(5_000_000), x0, 0);
        now = fake.serve(now, x0, 0);
        t.handle_anchor(now, now);
        let mut wrong = 0;
        for (i, x) in reads(&drive, 4000, 3).into_iter().enumerate() {
            let pred = t.predict(now, x);
            let end = fake.serve(now, x, -150_000);
            let v = t.handle_completion(&pred, end);
            if i >= 2000 {
                wrong += u64::from(v != Verdict::Hit);
            }
            now = end;
        }
        let busiest = (2..CLASSES).min_by_key(|&c| t.slack_ns()[c]).unwrap();
        assert!(
            t.slack_ns()[busiest] <= -150_000 + (p / 200) as i64,
            "slack {:?}",
            t.slack_ns()
        );
        // Without the negative slack, 150 µs of every revolution (2.5 %) would be early.
        assert!(wrong < 20, "{wrong} revolution errors of 2000");
    }

    #[test]
    fn resync_is_due_after_misses_and_time() {
        let drive = builtin_drive("cheetah9lp").unwrap();
        let cfg = TrackConfig::for_drive(&drive);
        let mut t = Tracker::new(drive, cfg);
        assert!(t.poll_resync(Nanos(0)), "never anchored");
        t.handle_anchor(Nanos(1_000), Nanos(1_000));
        assert!(!t.poll_resync(Nanos(2_000)));
        assert!(t.poll_resync(Nanos(1_000) + cfg.resync_every));
    }
}
