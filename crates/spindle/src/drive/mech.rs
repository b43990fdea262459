//! Mechanics: the access-time function and the positioning-time predictor.
//!
//! [`Drive::access`] answers "if this operation starts at `now` with the head here, when does
//! it end and why": command overhead, seek (or head switch), rotational wait, media transfer
//! with head and cylinder switches inside the request. [`Drive::position_time`] is the O(1)
//! predictor schedulers use; `access` is built on the very same function, so prediction and
//! completion agree exactly when noise is off.
//!
//! Rotation: the platter angle at time `t` is `(t + phase_ns) mod period_ns`; a sector whose
//! rotational index is `i` of `spt` passes under the head at angle `period_ns · i / spt`.

use super::cache_spec::CacheSpec;
use super::geometry::{Chs, Geometry};
use super::power::{PowerClock, PowerModel, PowerPolicy};
use super::seek::SeekCurve;
use super::spec::DriveSpec;
use super::DriveError;
use crate::{Nanos, Op, Span};
use rand::Rng;
use rand_distr::{Distribution, Normal};

/// Where the arm is, and how this disk's platter is turned relative to virtual time zero.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HeadState {
    pub cylinder: u32,
    pub head: u32,
    /// The spindle's rotational phase: constant per disk, in `0..period_ns`.
    pub phase_ns: u64,
}

/// A request's first sector, located once when the request is queued.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub chs: Chs,
    /// Angle of the sector's start, as a time offset within one revolution.
    pub angle_ns: u64,
}

/// What an access moves: `sectors` sectors from `lba`, read or written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub op: Op,
    pub lba: u64,
    pub sectors: u32,
}

/// A run of consecutive LBAs: one piece of a multi-run access (the rotational replicas of
/// a write, or a replica that wraps around its track).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub lba: u64,
    pub sectors: u32,
}

/// The full breakdown of one disk access.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    pub overhead: Span,
    pub seek: Span,
    pub rotation: Span,
    pub transfer: Span,
    /// Head and cylinder switches between tracks inside the request.
    pub switches: Span,
    pub end: Nanos,
    pub end_cylinder: u32,
    pub end_head: u32,
}

impl Access {
    pub fn service(&self) -> Span {
        self.overhead + self.seek + self.rotation + self.transfer + self.switches
    }
}

/// A validated drive: geometry plus integer-nanosecond mechanics.
#[derive(Clone, Debug)]
pub struct Drive {
    pub id: String,
    pub name: String,
    pub estimated: bool,
    geometry: Geometry,
    seek_read: SeekCurve,
    seek_write: SeekCurve,
    period_ns: u64,
    /// DiskSim's rotation period in picoseconds (`rotatetime`, truncated as
    /// `dm_mech_g1_loadparams` does) for a DiskSim layout: sector times derive from it.
    rotatetime_ps: Option<u64>,
    head_switch: Span,
    /// Added to every non-zero write positioning time; negative for some drives (DiskSim's
    /// "Add. write settling delay"), never making a positioning time negative.
    write_settle_ns: i64,
    overhead_read: Span,
    overhead_write: Span,
    /// Zero-latency access ([`DriveSpec::zero_latency`]): each track's part of an access
    /// starts at whichever of its sectors first comes under the head.
    zero_latency: bool,
    seek_noise: Option<Normal<f64>>,
    rotation_noise: Option<Normal<f64>>,
    cache: Option<Box<CacheSpec>>,
    /// Power states (`[power]`), and the experiment's spin-down policy for every disk.
    power: Option<(PowerModel, PowerPolicy)>,
}

fn ms(key: &str, v: f64) -> Result<Span, DriveError> {
    if v.is_finite() && (0.0..=10_000.0).contains(&v) {
        Ok(Span::from_ms_f64(v))
    } else {
        Err(DriveError::Invalid {
            key: key.into(),
            msg: format!("must be a time within 0..10000 ms, got {v}"),
        })
    }
}

/// The signed write settle in ns, checked against the shortest non-zero write positioning
/// (a one-cylinder write seek, or a head switch).
fn signed_settle(spec: &DriveSpec) -> Result<i64, DriveError> {
    let v = spec.write_settle_ms;
    if !(v.is_finite() && (-10_000.0..=10_000.0).contains(&v)) {
        return Err(DriveError::Invalid {
            key: "write_settle_ms".into(),
            msg: format!("must be a time within -10000..10000 ms, got {v}"),
        });
    }
    let settle = (v * 1e6).round() as i64;
    if settle < 0 {
        let curve = SeekCurve::compile(&spec.seek, spec.cylinders, true)?;
        let one = if curve.max_distance() >= 1 {
            curve.time(1).0
        } else {
            u64::MAX
        };
        let switch = Span::from_ms_f64(spec.head_switch_ms.max(0.0)).0;
        let shortest = [one, switch]
            .into_iter()
            .filter(|&t| t > 0)
            .min()
            .unwrap_or(u64::MAX);
        let shortest = shortest.min(i64::MAX as u64) as i64;
        if shortest + settle < 0 {
            return Err(DriveError::Invalid {
                key: "write_settle_ms".into(),
                msg: format!(
                    "{v} ms would make the shortest write positioning ({} ms) negative",
                    shortest as f64 / 1e6
                ),
            });
        }
    }
    Ok(settle)
}

/// Checks a `[cache]` section: counts and sizes positive, every time finite and >= 0.
fn validate_cache(c: CacheSpec) -> Result<CacheSpec, DriveError> {
    let bad = |key: &str, msg: String| {
        Err(DriveError::Invalid {
            key: format!("cache.{key}"),
            msg,
        })
    };
    if c.segments == 0 {
        return bad("segments", "must be >= 1, got 0".into());
    }
    if c.segment_sectors == 0 {
        return bad("segment_sectors", "must be >= 1, got 0".into());
    }
    if c.enable_caching > 2 || c.continuous_read > 4 || c.fast_write_level > 2 {
        return bad("enable_caching", format!("modes out of range: enable_caching {} (0-2), continuous_read {} (0-4), fast_write_level {} (0-2)", c.enable_caching, c.continuous_read, c.fast_write_level));
    }
    let times = [
        ("read_hit_after_read_ms", c.read_hit_after_read_ms),
        ("read_hit_after_write_ms", c.read_hit_after_write_ms),
        ("read_miss_after_read_ms", c.read_miss_after_read_ms),
        ("read_miss_after_write_ms", c.read_miss_after_write_ms),
        ("write_hit_after_read_ms", c.write_hit_after_read_ms),
        ("write_hit_after_write_ms", c.write_hit_after_write_ms),
        ("write_miss_after_read_ms", c.write_miss_after_read_ms),
        ("write_miss_after_write_ms", c.write_miss_after_write_ms),
        ("read_completion_ms", c.read_completion_ms),
        ("write_completion_ms", c.write_completion_ms),
        ("data_preparation_ms", c.data_preparation_ms),
        ("first_reselect_ms", c.first_reselect_ms),
        ("other_reselect_ms", c.other_reselect_ms),
        ("write_disconnect_ms", c.write_disconnect_ms),
        ("bus_sector_ms", c.bus_sector_ms),
        ("minimum_seek_ms", c.minimum_seek_ms),
        ("per_request_ms", c.per_request_ms),
    ];
    for (k, v) in times {
        if !(v.is_finite() && (0.0..=10_000.0).contains(&v)) {
            return bad(k, format!("must be a time within 0..10000 ms, got {v}"));
        }
    }
    Ok(c)
}

impl Drive {
    pub fn from_spec(spec: &DriveSpec) -> Result<Drive, DriveError> {
        if !(spec.rpm.is_finite() && spec.rpm >= 100.0 && spec.rpm <= 100_000.0) {
            return Err(DriveError::Invalid {
                key: "rpm".into(),
                msg: format!("must be within 100..100000, got {}", spec.rpm),
            });
        }
        let geometry = Geometry::new(spec)?;
        if spec.zero_latency && (geometry.is_disksim() || spec.cache.is_some()) {
            return Err(DriveError::Invalid {
                key: "zero_latency".into(),
                msg: "is modelled for drives with spindle's own layout and no [cache]; a \
                      DiskSim drive's zero-latency access is its [cache] \
                      immediate_buffer_read/immediate_buffer_write"
                    .into(),
            });
        }
        let noise =
            |key: &str, sigma: f64, scale: f64| -> Result<Option<Normal<f64>>, DriveError> {
                if !(sigma.is_finite() && sigma >= 0.0) {
                    return Err(DriveError::Invalid {
                        key: key.into(),
                        msg: format!("must be >= 0, got {sigma}"),
                    });
                }
                Ok((sigma > 0.0).then(|| Normal::new(0.0, sigma * scale).expect("sigma checked")))
            };
        Ok(Drive {
            id: spec.id.clone(),
            name: spec.name.clone(),
            estimated: spec.estimated,
            seek_read: SeekCurve::compile(&spec.seek, spec.cylinders, false)?,
            seek_write: SeekCurve::compile(&spec.seek, spec.cylinders, true)?,
            period_ns: (60e9 / spec.rpm).round() as u64,
            rotatetime_ps: geometry
                .is_disksim()
                .then(|| (1000.0 / (spec.rpm / 60.0) * 1e9) as u64),
            head_switch: ms("head_switch_ms", spec.head_switch_ms)?,
            write_settle_ns: signed_settle(spec)?,
            overhead_read: ms("overhead_read_ms", spec.overhead_read_ms)?,
            overhead_write: ms("overhead_write_ms", spec.overhead_write_ms)?,
            zero_latency: spec.zero_latency,
            seek_noise: noise("noise.seek_rel_sigma", spec.noise.seek_rel_sigma, 1.0)?,
            rotation_noise: noise("noise.rotation_sigma_ms", spec.noise.rotation_sigma_ms, 1e6)?,
            geometry,
            cache: spec
                .cache
                .clone()
                .map(validate_cache)
                .transpose()?
                .map(Box::new),
            power: match &spec.power {
                None => None,
                Some(p) => Some((
                    PowerModel::from_spec(p).map_err(|e| DriveError::Invalid {
                        key: format!("power.{}", e.key),
                        msg: e.msg,
                    })?,
                    PowerPolicy::Never,
                )),
            },
        })
    }

    /// The drive's power states, if its file gives them.
    pub fn power_model(&self) -> Option<&PowerModel> {
        self.power.as_ref().map(|(m, _)| m)
    }

    /// The spin-down policy every disk of this drive follows (`never` without power data).
    pub fn power_policy(&self) -> PowerPolicy {
        self.power.as_ref().map_or(PowerPolicy::Never, |(_, p)| *p)
    }

    /// The same drive with its disks following `policy`. Errors (as text) when the drive
    /// has no power data and the policy is not `never`, or lacks the policy's state.
    pub fn with_power_policy(&self, policy: PowerPolicy) -> Result<Drive, String> {
        let state = match policy {
            PowerPolicy::Never => None,
            PowerPolicy::Explicit => Some(None),
            PowerPolicy::Timeout { state, .. } | PowerPolicy::Adaptive { state, .. } => {
                Some(Some(state))
            }
        };
        let mut d = self.clone();
        match (&mut d.power, state) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(format!(
                    "drive {} has no power data ([power] in its drive file)",
                    self.id
                ))
            }
            (Some((m, _)), Some(Some(s))) if m.state(s).is_none() => {
                return Err(format!("drive {} has no {} state", self.id, s.name()))
            }
            (Some((_, p)), _) => *p = policy,
        }
        Ok(d)
    }

    /// A fresh power clock for one disk (idle at time zero), when the drive has power data.
    pub fn power_clock(&self) -> Option<PowerClock> {
        self.power.as_ref().map(|(m, p)| PowerClock::new(*m, *p))
    }

    /// The drive controller's command overhead before a media access (a cache miss after a
    /// read, the common case): part of what a scheduler must predict, though not part of
    /// [`Drive::access`] (the controller adds it).
    #[inline]
    pub fn command_overhead(&self, op: Op) -> Span {
        match (&self.cache, op) {
            (None, _) => Span::ZERO,
            (Some(c), Op::Read) => Span::from_ms_f64(c.read_miss_after_read_ms),
            (Some(c), Op::Write) if c.fast_write_level >= 1 => {
                Span::from_ms_f64(c.write_hit_after_read_ms)
            }
            (Some(c), Op::Write) => Span::from_ms_f64(c.write_miss_after_read_ms),
        }
    }

    /// The on-disk buffer, if the drive file describes one.
    /// The same drive with its on-disk buffer turned off: every request is a media access
    /// with the drive's own overheads.
    pub fn without_cache(&self) -> Drive {
        Drive {
            cache: None,
            ..self.clone()
        }
    }

    pub fn cache(&self) -> Option<&CacheSpec> {
        self.cache.as_deref()
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// One revolution.
    pub fn period(&self) -> Span {
        Span(self.period_ns)
    }

    pub fn seek_curve(&self, op: Op) -> &SeekCurve {
        match op {
            Op::Read => &self.seek_read,
            Op::Write => &self.seek_write,
        }
    }

    pub fn overhead(&self, op: Op) -> Span {
        match op {
            Op::Read => self.overhead_read,
            Op::Write => self.overhead_write,
        }
    }

    pub fn head_switch(&self) -> Span {
        self.head_switch
    }

    /// Whether the drive reads and writes a track's sectors in the order they come under
    /// the head (zero-latency access).
    pub fn zero_latency(&self) -> bool {
        self.zero_latency
    }

    /// The same drive with zero-latency access turned on or off (`spindle track-align`
    /// compares both on every drive). Errors as [`Drive::from_spec`] does for a DiskSim
    /// layout or an on-disk buffer.
    pub fn with_zero_latency(&self, on: bool) -> Result<Drive, DriveError> {
        if on && (self.geometry.is_disksim() || self.cache.is_some()) {
            return Err(DriveError::Invalid {
                key: "zero_latency".into(),
                msg: "is modelled for drives with spindle's own layout and no [cache]".into(),
            });
        }
        Ok(Drive {
            zero_latency: on,
            ..self.clone()
        })
    }

    /// Zero-latency timing of the `run` sectors from rotational index `idx` of `spt` on the
    /// track the head is over, `wait` before the first of them comes under it: `None` when
    /// the head is not inside the run's arc (the access then waits for its first sector as
    /// usual). Otherwise the sector `j` (1 ≤ j < run) whose start comes first, and the wait
    /// for it; the run then takes `span(run)` of transfer plus the gap of the track it does
    /// not want (`period - span(run)`, zero for a whole track) to come back to sector 0.
    #[inline]
    fn zero_latency_start(&self, wait: Span, idx: u64, spt: u64, run: u64) -> Option<(u64, Span)> {
        let p = u128::from(self.period_ns);
        if wait.0 == 0 || run < 2 {
            return None;
        }
        // How far past the run's first sector the head is.
        let x = u128::from(self.period_ns - wait.0);
        let base = p * u128::from(idx) / u128::from(spt);
        let span = |j: u64| p * (u128::from(idx) + u128::from(j)) / u128::from(spt) - base;
        if x >= span(run) {
            return None;
        }
        // The first sector boundary at or after the head: floor(p·(idx+j)/spt) >= x + base.
        let j = ((x + base) * u128::from(spt)).div_ceil(p) - u128::from(idx);
        let j = u64::try_from(j).expect("j <= run");
        debug_assert!(j >= 1 && span(j) >= x && span(j - 1) < x);
        if j >= run {
            return None;
        }
        let to_boundary = u64::try_from(span(j) - x).expect("under a sector");
        Some((j, Span(to_boundary)))
    }

    pub fn capacity_sectors(&self) -> u64 {
        self.geometry.capacity_sectors()
    }

    /// [`crate::engine::Engine::prefetch`] for the drive's layout: touches what locating
    /// `lba` will read.
    #[inline]
    pub fn prefetch(&self, lba: u64) {
        self.geometry.prefetch(lba);
    }

    /// Locates an LBA's first sector (done once per request, when it is queued).
    #[inline]
    pub fn locate(&self, lba: u64) -> Target {
        let (chs, _, (idx, spt), ticks) = self.geometry.locate_exact(lba);
        self.target(chs, idx, spt, ticks)
    }

    /// The [`Target`] of physical sector `chs`, whose rotational index is `idx` of `spt`:
    /// the one place [`Drive::locate`] and the access loop ([`Drive::locate_run`]) turn a
    /// position into the angle the head waits for.
    #[inline]
    fn target(&self, chs: Chs, idx: u32, spt: u32, ticks: Option<u32>) -> Target {
        let angle_ns = match ticks {
            // A DiskSim layout: the sector's exact start angle (`dm_pbn_skew`), which skews
            // in revolutions put between sector boundaries; DiskSim's rotational latency
            // waits for that angle (`dm_latency_g1`).
            Some(ticks) => ((u128::from(self.period_ns) * u128::from(ticks)) >> 32) as u64,
            None => self.period_ns * u64::from(idx) / u64::from(spt),
        };
        Target { chs, angle_ns }
    }

    /// [`Drive::locate`], with the LBAs from `lba` on in consecutive sectors of its track
    /// ([`Geometry::run_on_track`]) and its rotational index and sectors per track
    /// ([`Geometry::angle_index`]).
    #[inline]
    fn locate_run(&self, lba: u64) -> (Target, u32, u64, u64) {
        let (chs, run, (idx, spt), ticks) = self.geometry.locate_exact(lba);
        let target = self.target(chs, idx, spt, ticks);
        (target, run, u64::from(idx), u64::from(spt))
    }

    /// Arm movement from `from` to `to`: the seek curve (at least a head switch when heads
    /// differ), or a head switch alone within a cylinder; writes add the settle time.
    #[inline]
    pub fn seek_span(&self, from_cylinder: u32, from_head: u32, to: Chs, op: Op) -> Span {
        let d = from_cylinder.abs_diff(to.cylinder);
        let mut t = self.seek_curve(op).time(d);
        if from_head != to.head && t < self.head_switch {
            t = self.head_switch;
        }
        if op == Op::Write && t > Span::ZERO {
            t = Span(
                t.0.checked_add_signed(self.write_settle_ns)
                    .expect("validated: settle never makes a positioning time negative"),
            );
        }
        t
    }

    /// A DiskSim layout's time for one sector to pass under the head on `cylinder`, in
    /// picoseconds: DiskSim's media transfer steps one `dm_xfertime(1)` per sector
    /// (`disk_buffer_sector_done`), and `dm_rottime_g1` converts the sector's width to time
    /// as `((width << 20) >> 32) · rotatetime >> 20`, dropping the width's low 12 bits (a
    /// sector of a 299-sector track at 5,400 rpm takes 37.151 µs, not 37.161). `None` for
    /// spindle's own layouts (a sector is `period / spt`).
    #[inline]
    pub fn sector_ps(&self, cylinder: u32) -> Option<u64> {
        let ps = self.rotatetime_ps?;
        let width = self.geometry.g1_sector_width(cylinder)?;
        Some((u64::from(width >> 12) * ps) >> 20)
    }

    /// How long the media transfer takes to come back to a sector of `lba`'s track it has
    /// passed. DiskSim's sector loop (`disk_buffer_sector_done`) steps through the track's
    /// LBNs, wrapping from the last to the first, one sector time ([`Drive::sector_ps`])
    /// each: spare and slipped sectors take no time, so its turn is the track's LBNs times
    /// the sector time, a little short of a revolution. A revolution for spindle's own
    /// layouts.
    pub fn media_cycle(&self, lba: u64) -> Span {
        let chs = self.geometry.locate(lba).0;
        match (
            self.sector_ps(chs.cylinder),
            self.geometry.g1_track_lbns(lba),
        ) {
            (Some(ps), Some(m)) => Span(m * ps / 1000),
            _ => Span(self.period_ns),
        }
    }

    /// DiskSim's sector loop on `lba`'s track ([`Drive::media_cycle`]): how many LBNs it
    /// steps through in a turn, and the time of one step in picoseconds (for spindle's own
    /// layouts, the sectors per track and a revolution's share of each).
    pub fn media_step(&self, lba: u64) -> (u64, u64) {
        let chs = self.geometry.locate(lba).0;
        match (
            self.sector_ps(chs.cylinder),
            self.geometry.g1_track_lbns(lba),
        ) {
            (Some(ps), Some(m)) => (m.max(1), ps),
            _ => {
                let spt = u64::from(self.geometry.sectors_per_track(chs.cylinder)).max(1);
                (spt, self.period_ns * 1000 / spt)
            }
        }
    }

    /// Wait from instant `at` until the sector at `angle_ns` comes under the head.
    #[inline]
    pub fn rotational_wait(&self, at: Nanos, phase_ns: u64, angle_ns: u64) -> Span {
        let p = self.period_ns;
        // `x mod p` for an `x` that is almost always below `2p` (a phase and an angle are
        // within the revolution): a subtraction instead of a division, the same value.
        let wrap = |x: u64| match x {
            _ if x < p => x,
            _ if x - p < p => x - p,
            _ => x % p,
        };
        let now_angle = wrap(at.0 % p + phase_ns);
        Span(wrap(angle_ns + p - now_angle))
    }

    /// Predicted positioning time (overhead + seek + rotational wait) of an operation
    /// started at `now`: the O(1) cost SATF compares.
    #[inline]
    pub fn position_time(&self, now: Nanos, head: &HeadState, op: Op, target: &Target) -> Span {
        let before_seek = self.overhead(op) + self.command_overhead(op);
        let seek = self.seek_span(head.cylinder, head.head, target.chs, op);
        let rot = self.rotational_wait(now + before_seek + seek, head.phase_ns, target.angle_ns);
        before_seek + seek + rot
    }

    /// The whole access of `xfer`, started at `now` with the arm at
    /// `head`. `via_cylinder` makes the arm travel there first (SCAN's sweep to the edge).
    /// With `rng`, seeks and rotational waits get the drive's seeded noise.
    pub fn access<R: Rng>(
        &self,
        now: Nanos,
        head: &HeadState,
        xfer: Transfer,
        via_cylinder: Option<u32>,
        rng: Option<&mut R>,
    ) -> Access {
        let run = Run {
            lba: xfer.lba,
            sectors: xfer.sectors,
        };
        self.access_runs(now, head, xfer.op, &[run], via_cylinder, rng)
    }

    /// [`Drive::access`], also pushing onto `sector_times` when each sector of `xfer` comes
    /// under the head and when it has passed, in LBA order: sectors after a track switch
    /// are later by the switch and the wait for the new track's first sector, which a
    /// buffer moving each sector as soon as it is read or due must see (DiskSim's
    /// sector-by-sector events).
    pub fn access_with_sector_times<R: Rng>(
        &self,
        now: Nanos,
        head: &HeadState,
        xfer: Transfer,
        rng: Option<&mut R>,
        sector_times: &mut Vec<(Nanos, Nanos)>,
    ) -> Access {
        let run = Run {
            lba: xfer.lba,
            sectors: xfer.sectors,
        };
        self.timed_access(now, head, xfer.op, &[run], None, rng, Some(sector_times))
    }

    /// One command moving several runs in order: after each run the arm switches to the
    /// next run's track and waits for its first sector, as it does between the tracks of
    /// one run. Only the first positioning gets the seeded noise.
    pub fn access_runs<R: Rng>(
        &self,
        now: Nanos,
        head: &HeadState,
        op: Op,
        runs: &[Run],
        via_cylinder: Option<u32>,
        rng: Option<&mut R>,
    ) -> Access {
        self.timed_access(now, head, op, runs, via_cylinder, rng, None)
    }

    /// How many of the `sectors` from `lba` a noiseless access of `op` started at `now`
    /// with the arm at `head` has moved by `t`: the largest `k` with
    /// `access(now, head, first k sectors).end <= t` (0 for none). One walk over the tracks
    /// the access crosses, where a search over `k` would time an access at every step (the
    /// read-ahead's progress is asked on every command that meets one). Not for a
    /// zero-latency drive (validated to have no on-disk buffer, so no read-ahead).
    pub fn sectors_moved_by(
        &self,
        now: Nanos,
        head: &HeadState,
        op: Op,
        (lba, sectors): (u64, u32),
        t: Nanos,
    ) -> u64 {
        assert!(
            !self.zero_latency,
            "the read-ahead's progress is not modelled for zero-latency drives (they have no buffer)"
        );
        if sectors == 0 {
            return 0;
        }
        let (first, mut on_track, mut idx, mut spt) = self.locate_run(lba);
        let mut at_time =
            now + self.overhead(op) + self.seek_span(head.cylinder, head.head, first.chs, op);
        at_time += self.rotational_wait(at_time, head.phase_ns, first.angle_ns);
        let (mut lba, mut left, mut at) = (lba, sectors, first);
        let mut done = 0u64;
        loop {
            if at_time > t {
                return done;
            }
            let run = on_track.min(left);
            // The sectors of this run whose transfer ends by `t`: the largest `j <= run`
            // with `span(j) <= t - at_time` (`span` as in the access loop).
            let d = u128::from(t.0 - at_time.0);
            let sector_ps = self.sector_ps(at.chs.cylinder);
            let fit = match sector_ps {
                // floor(j·ps / 1000) <= d  ⇔  j·ps < (d + 1)·1000
                Some(ps) => ((d + 1) * 1000 - 1) / u128::from(ps.max(1)),
                // floor(P·(idx + j) / spt) − floor(P·idx / spt) <= d
                None => {
                    let (p, spt) = (u128::from(self.period_ns), u128::from(spt));
                    let base = p * u128::from(idx) / spt;
                    (((d + base + 1) * spt - 1) / p.max(1)).saturating_sub(u128::from(idx))
                }
            };
            let j = u64::try_from(fit.min(u128::from(run))).expect("at most a run");
            done += j;
            if j < u64::from(run) {
                return done;
            }
            at_time += match sector_ps {
                Some(ps) => Span(u64::from(run) * ps / 1000),
                None => {
                    Span(self.period_ns * (idx + u64::from(run)) / spt - self.period_ns * idx / spt)
                }
            };
            left -= run;
            lba += u64::from(run);
            if left == 0 {
                return done;
            }
            let (cyl, hd) = (at.chs.cylinder, at.chs.head);
            (at, on_track, idx, spt) = self.locate_run(lba);
            at_time += self.seek_span(cyl, hd, at.chs, op);
            at_time += self.rotational_wait(at_time, head.phase_ns, at.angle_ns);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn timed_access<R: Rng>(
        &self,
        now: Nanos,
        head: &HeadState,
        op: Op,
        runs: &[Run],
        via_cylinder: Option<u32>,
        mut rng: Option<&mut R>,
        mut sector_times: Option<&mut Vec<(Nanos, Nanos)>>,
    ) -> Access {
        assert!(!runs.is_empty(), "an access moves at least one run");
        for r in runs {
            assert!(r.sectors > 0, "an access moves at least one sector");
            assert!(
                r.lba + u64::from(r.sectors) <= self.capacity_sectors(),
                "access beyond capacity"
            );
        }
        let Run { lba, sectors } = runs[0];
        let mut a = Access {
            overhead: self.overhead(op),
            ..Access::default()
        };
        let (first, mut on_track, mut idx, mut spt) = self.locate_run(lba);
        let (mut cyl, mut hd) = (head.cylinder, head.head);
        if let Some(via) = via_cylinder {
            a.seek += self.seek_curve(op).time(cyl.abs_diff(via));
            cyl = via;
        }
        a.seek += self.seek_span(cyl, hd, first.chs, op);
        if let (Some(r), Some(n)) = (rng.as_deref_mut(), self.seek_noise) {
            let scaled = a.seek.0 as f64 * (1.0 + n.sample(r)).max(0.0);
            a.seek = Span(scaled.round() as u64);
        }
        let mut t = now + a.overhead + a.seek;
        a.rotation = self.rotational_wait(t, head.phase_ns, first.angle_ns);
        if let (Some(r), Some(n)) = (rng, self.rotation_noise) {
            let jittered = a.rotation.0 as f64 + n.sample(r);
            a.rotation = Span(jittered.max(0.0).round() as u64);
        }
        t += a.rotation;
        // The rotational wait just paid for the current track's first sector.
        let mut wait = a.rotation;
        let (mut lba, mut left, mut at) = (lba, sectors, first);
        let mut rest = runs[1..].iter();
        loop {
            let run = on_track.min(left);
            let sector_ps = self.sector_ps(at.chs.cylinder);
            let span = |j: u64| match sector_ps {
                Some(ps) => Span(j * ps / 1000),
                None => Span(self.period_ns * (idx + j) / spt - self.period_ns * idx / spt),
            };
            let xfer = span(u64::from(run));
            let zero_latency = match self.zero_latency {
                true => self.zero_latency_start(wait, idx, spt, u64::from(run)),
                false => None,
            };
            if let Some((j, to_boundary)) = zero_latency {
                // Zero-latency access: the head is inside the run's arc; it moves sectors
                // j.. as they come, passes the part of the track the run does not want, then
                // moves sectors ..j: a revolution after sector j's start.
                let period = Span(self.period_ns);
                let landed = Nanos(t.0 - wait.0);
                let start_j = landed + to_boundary;
                a.rotation = a.rotation - wait + to_boundary + (period - xfer);
                if let Some(times) = sector_times.as_deref_mut() {
                    times.extend((0..u64::from(run)).map(|i| {
                        let start = match i >= j {
                            true => start_j + (span(i) - span(j)),
                            false => start_j + (period - span(j)) + span(i),
                        };
                        (start, start + (span(i + 1) - span(i)))
                    }));
                }
                a.transfer += xfer;
                t = start_j + period;
            } else {
                if let Some(times) = sector_times.as_deref_mut() {
                    times.extend((1..=u64::from(run)).map(|j| (t + span(j - 1), t + span(j))));
                }
                a.transfer += xfer;
                t += xfer;
            }
            (cyl, hd) = (at.chs.cylinder, at.chs.head);
            left -= run;
            lba += u64::from(run);
            if left == 0 {
                let Some(next) = rest.next() else {
                    break;
                };
                (lba, left) = (next.lba, next.sectors);
            }
            (at, on_track, idx, spt) = self.locate_run(lba);
            let switch = self.seek_span(cyl, hd, at.chs, op);
            a.switches += switch;
            t += switch;
            wait = self.rotational_wait(t, head.phase_ns, at.angle_ns);
            a.rotation += wait;
            t += wait;
        }
        a.end = t;
        a.end_cylinder = cyl;
        a.end_head = hd;
        assert_eq!(
            a.end,
            now + a.service(),
            "breakdown must add up to the service time"
        );
        a
    }
}

/// Checks [`Drive::sectors_moved_by`] against its definition (a search over the accesses
/// of every prefix) at random starts, lengths and instants around each sector's end.
#[cfg(test)]
pub(crate) fn check_sectors_moved_by(d: &Drive, seed: u64) {
    use rand::SeedableRng;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let cap = d.capacity_sectors();
    let geo = d.geometry();
    for _ in 0..40 {
        let lba = rng.gen_range(0..cap);
        let sectors = rng.gen_range(1..=600u64).min(cap - lba) as u32;
        let start = geo.lba_to_chs(rng.gen_range(0..cap));
        let head = HeadState {
            cylinder: start.cylinder,
            head: start.head,
            phase_ns: rng.gen_range(0..d.period().0),
        };
        let now = Nanos(rng.gen_range(0..1_000_000_000));
        let op = if rng.gen_bool(0.5) {
            Op::Read
        } else {
            Op::Write
        };
        let end = |k: u32| {
            let x = Transfer {
                op,
                lba,
                sectors: k,
            };
            d.access(now, &head, x, None, None::<&mut rand_pcg::Pcg64Mcg>)
                .end
        };
        let k = rng.gen_range(1..=sectors);
        let e = end(k);
        for t in [
            now,
            Nanos(e.0 - 1),
            e,
            Nanos(e.0 + 1),
            end(sectors),
            Nanos(u64::MAX / 4),
        ] {
            let expected = (1..=sectors).filter(|&j| end(j) <= t).count() as u64;
            assert_eq!(
                d.sectors_moved_by(now, &head, op, (lba, sectors), t),
                expected,
                "lba {lba}, {sectors} sectors, {op:?}, t {t:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::test_spec;
    use super::super::spec::*;
    use super::*;
    use rand_pcg::Pcg64Mcg;

    fn spec() -> DriveSpec {
        let mut s = test_spec(2, 1000, 100);
        s.zones[0].track_skew = 10.0;
        s.zones[0].cylinder_skew = 20.0;
        s.head_switch_ms = 0.5;
        s.write_settle_ms = 0.7;
        s.overhead_read_ms = 1.0;
        s.overhead_write_ms = 1.0;
        s
    }

    /// Cylinder 0, head 0, the platter's phase at virtual time zero.
    const AT_ORIGIN: HeadState = HeadState {
        cylinder: 0,
        head: 0,
        phase_ns: 0,
    };

    fn no_rng() -> Option<&'static mut Pcg64Mcg> {
        None
    }

    #[test]
    fn rotational_wait_is_always_shorter_than_one_rotation() {
        let d = Drive::from_spec(&spec()).unwrap();
        let period = d.period().0;
        for t in (0..3 * period).step_by(7_919) {
            for angle in [0, 1, period / 3, period - 1] {
                let w = d.rotational_wait(Nanos(t), 12_345, angle);
                assert!(w.0 < period, "wait {w:?} at t={t}");
            }
        }
    }

    #[test]
    fn access_on_one_track_is_overhead_seek_rotation_transfer() {
        let d = Drive::from_spec(&spec()).unwrap();
        let head = AT_ORIGIN;
        // LBA 1000 is cylinder 5, head 0 (200 sectors per cylinder), sector 0.
        let a = d.access(
            Nanos(0),
            &head,
            Transfer {
                op: Op::Read,
                lba: 1000,
                sectors: 8,
            },
            None,
            no_rng(),
        );
        assert_eq!(a.overhead, Span::from_ms(1));
        assert_eq!(a.seek, Span::from_ms_f64(9.99 * 5.0 / 999.0));
        assert_eq!(a.switches, Span::ZERO);
        // 8 of 100 sectors at 6 ms per revolution.
        assert_eq!(a.transfer, Span(6_000_000 * 8 / 100));
        assert!(a.rotation < d.period());
        assert_eq!((a.end_cylinder, a.end_head), (5, 0));
    }

    #[test]
    fn crossing_a_track_boundary_pays_the_head_switch() {
        let d = Drive::from_spec(&spec()).unwrap();
        let head = AT_ORIGIN;
        // Sectors 95..105 of cylinder 0: 5 on head 0, 5 on head 1.
        let a = d.access(
            Nanos(0),
            &head,
            Transfer {
                op: Op::Read,
                lba: 95,
                sectors: 10,
            },
            None,
            no_rng(),
        );
        assert_eq!(a.switches, Span::from_ms_f64(0.5));
        assert_eq!((a.end_cylinder, a.end_head), (0, 1));
        // Crossing to the next cylinder pays a one-cylinder seek (here 0.01 ms) raised to
        // the head switch, since the head changes too.
        let b = d.access(
            Nanos(0),
            &head,
            Transfer {
                op: Op::Read,
                lba: 195,
                sectors: 10,
            },
            None,
            no_rng(),
        );
        assert_eq!(b.switches, Span::from_ms_f64(0.5));
        assert_eq!((b.end_cylinder, b.end_head), (1, 0));
        // The track skew (10 sectors = 0.6 ms) covers a 0.5 ms switch: after the switch the
        // head waits only the remainder, 0.1 ms, not a revolution.
        assert_eq!(
            a.rotation - d.rotational_wait(Nanos(0) + a.overhead, 0, d.locate(95).angle_ns),
            Span(100_000)
        );
    }

    #[test]
    fn each_sector_has_passed_the_head_at_its_own_instant_across_a_track_switch() {
        let d = Drive::from_spec(&spec()).unwrap();
        let head = AT_ORIGIN;
        let x = Transfer {
            op: Op::Read,
            lba: 95,
            sectors: 10,
        };
        let mut times = Vec::new();
        let a = d.access_with_sector_times(Nanos(0), &head, x, no_rng(), &mut times);
        assert_eq!(a, d.access(Nanos(0), &head, x, None, no_rng()));
        // 10,000 rpm and 100 sectors per track: a sector passes in 60 µs.
        let sector = Span(60_000);
        for (begin, end) in &times {
            assert_eq!(end.since(*begin), sector);
        }
        let ends: Vec<Nanos> = times.iter().map(|t| t.1).collect();
        assert_eq!(ends.len(), 10);
        assert_eq!(ends[9], a.end);
        // Head 0's five sectors follow the first positioning one sector apart; head 1's
        // five come after the 0.5 ms switch and the 0.1 ms left of the 10-sector skew — not
        // spread evenly over the transfer.
        let first_wait = a.rotation - Span(100_000);
        assert_eq!(
            ends[0],
            Nanos(0) + a.overhead + a.seek + first_wait + sector
        );
        for k in (1..5).chain(6..10) {
            assert_eq!(ends[k].since(ends[k - 1]), sector, "sector {k}");
        }
        assert_eq!(ends[5].since(ends[4]), Span::from_ms_f64(0.6) + sector);
    }

    #[test]
    fn sectors_moved_by_is_the_longest_prefix_done() {
        for id in crate::drive::library::builtin_ids() {
            // The read-ahead's progress is asked of drives with an on-disk buffer, which
            // never have zero-latency access.
            let d = crate::drive::builtin_drive(id).unwrap();
            let d = d.with_zero_latency(false).unwrap();
            check_sectors_moved_by(&d, 7);
        }
        check_sectors_moved_by(&Drive::from_spec(&spec()).unwrap(), 8);
    }

    #[test]
    fn writes_pay_the_settle_time_after_a_seek() {
        let d = Drive::from_spec(&spec()).unwrap();
        let r = d.seek_span(0, 0, d.locate(1000).chs, Op::Read);
        let w = d.seek_span(0, 0, d.locate(1000).chs, Op::Write);
        assert_eq!(w, r + Span::from_ms_f64(0.7));
    }

    #[test]
    fn predictor_equals_access_positioning_without_noise() {
        let d = Drive::from_spec(&spec()).unwrap();
        let head = HeadState {
            cylinder: 300,
            head: 1,
            phase_ns: 777,
        };
        for lba in [0u64, 17, 5_000, 150_001, 199_990] {
            for op in [Op::Read, Op::Write] {
                let now = Nanos(123_456_789);
                let a = d.access(
                    now,
                    &head,
                    Transfer {
                        op,
                        lba,
                        sectors: 1,
                    },
                    None,
                    no_rng(),
                );
                let p = d.position_time(now, &head, op, &d.locate(lba));
                assert_eq!(p, a.overhead + a.seek + a.rotation, "lba {lba} {op:?}");
            }
        }
    }

    #[test]
    fn noise_is_seeded_and_changes_timing() {
        let mut s = spec();
        s.noise = NoiseSpec {
            seek_rel_sigma: 0.05,
            rotation_sigma_ms: 0.05,
        };
        let d = Drive::from_spec(&s).unwrap();
        let head = AT_ORIGIN;
        let run = |seed| {
            let mut rng = Pcg64Mcg::new(seed);
            (0..50)
                .map(|i| {
                    d.access(
                        Nanos(i * 1_000_000),
                        &head,
                        Transfer {
                            op: Op::Read,
                            lba: i * 3_001,
                            sectors: 1,
                        },
                        None,
                        Some(&mut rng),
                    )
                    .end
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn zero_rpm_is_rejected_naming_the_key() {
        let mut s = spec();
        s.rpm = 0.0;
        let err = Drive::from_spec(&s).unwrap_err().to_string();
        assert!(err.starts_with("rpm:"), "{err}");
    }
}
