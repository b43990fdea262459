//! `spindle calibrate`: a drive model measured from request timing alone (dissertation
//! 3.3.1; the track-alignment paper's boundary scan), on an NBD export, a block device or
//! a file (DESIGN.md's third driver, "real: block devices + calibration").
//!
//! Steps, in order, each saved to the state file (`--resume`) when done:
//! 1. [`probe`]: rotation time — synchronized, then asynchronous refinement (eqs. 3.1–3.2);
//!    the completion noise, refused when too high ([`CalibError::TooNoisy`]).
//! 2. [`layout`]: tracks and zones (growing-request scan + bisection), surfaces and skews.
//! 3. [`seek`]: minimum read time versus cylinder distance.
//! 4. [`writes`] (only with `--allow-writes --scratch`): a write cache check first, then
//!    write overhead and settle, writing inside the scratch range alone.
//! 5. [`output`]: a drive file whose every value names how, when and how precisely it was
//!    measured.
//!
//! [`check`] (`--check DRIVE.toml`) runs a calibrated drive file's head tracking against the
//! target on a random read workload and reports its prediction error.
//!
//! Read-only unless the caller allows writes (`Options::scratch`): the target is then
//! opened read-only and no write is ever issued. Q = 1: one request at a time, timed by
//! `std::time::Instant` around it. The pure fitting is `spindle::calib`.

pub mod check;
pub mod layout;
pub mod output;
pub mod probe;
pub mod seek;
pub mod target;
pub mod writes;

use serde::{Deserialize, Serialize};
use spindle::calib::rotation::Estimate;
use std::path::PathBuf;
use std::time::Duration;

/// What the driver reports as it goes.
pub enum Event {
    /// A new step with this many units of progress (0: unknown).
    Stage(&'static str, u64),
    Step,
    Line(String),
}

#[derive(Debug, thiserror::Error)]
pub enum CalibError {
    #[error(transparent)]
    Target(#[from] target::TargetError),
    #[error("{target}: too noisy to calibrate: {msg}")]
    TooNoisy { target: String, msg: String },
    #[error(
        "{target}: zero-latency access detected: {msg}; the layout scan times reads that wait \
         for their first sector, which such a drive does not do, so it is not calibrated \
         (docs/calibrate.md, \"Not built yet\")"
    )]
    ZeroLatency { target: String, msg: String },
    #[error("{target}: too small to calibrate: {msg}")]
    TooSmall { target: String, msg: String },
    /// `--check`: the drive file does not describe the target.
    #[error("{target}: {msg}")]
    Mismatch { target: String, msg: String },
    /// `--scratch`: outside the target or too small for the cache check.
    #[error("--scratch: {0}")]
    Scratch(String),
    #[error("state file: {0}")]
    Resume(String),
}

/// How to calibrate.
#[derive(Clone, Debug)]
pub struct Options {
    /// Time for the asynchronous rotation refinement.
    pub rotation_budget: Duration,
    /// Stop after this many zones (a region of the target; `usize::MAX`: all).
    pub zones_max: usize,
    /// Skip the seek profile.
    pub no_seek: bool,
    /// Save progress here after each step, and resume from it if it exists.
    pub state: Option<PathBuf>,
    /// Time from a `SCHED_FIFO` thread, so the host's other work does not delay the
    /// timestamps (needs root or CAP_SYS_NICE; says so and goes on without).
    pub realtime: bool,
    /// `--allow-writes --scratch START..END`: the only LBAs written; `None`: nothing is
    /// written, the target is opened read-only.
    pub scratch: Option<std::ops::Range<u64>>,
}

/// Everything measured so far: the state file's contents.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Measured {
    pub target: String,
    pub sectors: u64,
    pub sector_bytes: u32,
    /// Rotation period and its bound (ns), completion noise and its bound (ns).
    pub period_ns: Option<f64>,
    pub period_delta_ns: f64,
    pub sigma_ns: f64,
    pub gamma_ns: f64,
    pub zones: Option<Vec<layout::Zone>>,
    pub surfaces: Option<u32>,
    pub skews_done: bool,
    pub seek: Option<Vec<seek::Point>>,
    /// Write timing (`--allow-writes`); `None`: not measured.
    #[serde(default)]
    pub writes: Option<writes::Writes>,
    /// Wall-clock start (UTC, RFC 3339) and the duration of each step (s).
    pub started: String,
    pub seconds: Vec<(String, f64)>,
    pub reads: u64,
    #[serde(default)]
    pub writes_issued: u64,
}

fn save(opts: &Options, m: &Measured) -> Result<(), CalibError> {
    let Some(path) = &opts.state else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(m).expect("state serialises");
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| CalibError::Resume(format!("{}: {e}", path.display())))
}

fn load(opts: &Options, target: &str) -> Result<Option<Measured>, CalibError> {
    let Some(path) = &opts.state else {
        return Ok(None);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CalibError::Resume(format!("{}: {e}", path.display()))),
    };
    let m: Measured = serde_json::from_str(&text)
        .map_err(|e| CalibError::Resume(format!("{}: {e}", path.display())))?;
    if m.target != target {
        return Err(CalibError::Resume(format!(
            "{} holds a calibration of {}, not {target}",
            path.display(),
            m.target
        )));
    }
    Ok(Some(m))
}

/// Runs every step not already in the state file and returns the measurements.
pub fn calibrate(
    name: &str,
    opts: &Options,
    events: &mut dyn FnMut(Event),
) -> Result<Measured, CalibError> {
    if opts.realtime {
        crate::driver::become_realtime("calibrate", 40);
    }
    let t = target::open(name, opts.scratch.is_some())?;
    let mut m = load(opts, name)?.unwrap_or_else(|| Measured {
        target: name.to_string(),
        started: output::utc_now(),
        ..Measured::default()
    });
    m.sectors = t.sectors();
    m.sector_bytes = t.sector_bytes();
    // A few tracks of the largest drives, so the scan has whole tracks to find.
    const SECTORS_MIN: u64 = 16_384;
    if m.sectors < SECTORS_MIN {
        return Err(CalibError::TooSmall {
            target: t.describe(),
            msg: format!(
                "{} sectors; the scan needs at least {SECTORS_MIN} (several whole tracks)",
                m.sectors
            ),
        });
    }
    if let Some(s) = &opts.scratch {
        if s.start >= s.end || s.end > m.sectors {
            return Err(CalibError::Scratch(format!(
                "{}..{} is not a range inside the target's {} sectors",
                s.start, s.end, m.sectors
            )));
        }
        if s.end - s.start < writes::SCRATCH_MIN {
            return Err(CalibError::Scratch(format!(
                "{}..{} holds {} sectors, too small to measure: the write cache check alone \
                 needs {} (write settle needs two cylinders of a zone more)",
                s.start,
                s.end,
                s.end - s.start,
                writes::SCRATCH_MIN
            )));
        }
        if m.writes
            .as_ref()
            .is_some_and(|w| w.scratch != (s.start, s.end))
        {
            return Err(CalibError::Resume(
                "the state file's write step used another --scratch range".into(),
            ));
        }
    }
    let mut p = probe::Probe::new(t, events);
    p.scratch = opts.scratch.clone();
    if let (Some(s), None) = (&opts.scratch, &m.writes) {
        (p.events)(Event::Stage("write cache", 0));
        m.writes = Some(writes::cache_check(&mut p, s)?);
        save(opts, &m)?;
    }
    let clock = std::time::Instant::now();
    let lap = |m: &mut Measured, what: &str, since: &mut std::time::Instant| {
        m.seconds.push((what.into(), since.elapsed().as_secs_f64()));
        *since = std::time::Instant::now();
    };
    let mut since = clock;
    (p.events)(Event::Stage("rotation", 0));
    let known = m.period_ns.map(|period_ns| Estimate {
        period_ns,
        delta_ns: m.period_delta_ns,
    });
    p.rotation(opts.rotation_budget, known)?;
    m.period_ns = Some(p.est.period_ns);
    m.period_delta_ns = p.est.delta_ns;
    m.sigma_ns = p.sigma_ns;
    m.gamma_ns = p.gamma_ns;
    lap(&mut m, "rotation", &mut since);
    save(opts, &m)?;
    if m.zones.is_none() {
        (p.events)(Event::Stage("zones", 0));
        let zones = layout::zones(&mut p, 0, opts.zones_max)?;
        if zones.is_empty() {
            return Err(CalibError::TooSmall {
                target: p.target.describe(),
                msg: "no whole track found".into(),
            });
        }
        m.zones = Some(zones);
        lap(&mut m, "zones", &mut since);
        save(opts, &m)?;
    }
    if !m.skews_done {
        let zones = m.zones.as_mut().expect("zones measured");
        (p.events)(Event::Stage("skews", 48 + 32 * zones.len() as u64));
        m.surfaces = layout::skews(&mut p, zones)?;
        m.skews_done = true;
        lap(&mut m, "skews", &mut since);
        save(opts, &m)?;
    }
    if m.seek.is_none() && !opts.no_seek {
        (p.events)(Event::Stage("seek profile", 0));
        let zones = m.zones.as_ref().expect("zones measured");
        m.seek = Some(seek::profile(&mut p, zones, m.surfaces.unwrap_or(1))?);
        lap(&mut m, "seek profile", &mut since);
        save(opts, &m)?;
    }
    if let Some(mut w) = m.writes.take() {
        let todo = !w.write_cache_suspected && w.overhead.is_none();
        if todo {
            let zones = m.zones.as_ref().expect("zones measured");
            writes::measure(&mut p, &mut w, zones, m.surfaces.unwrap_or(1))?;
        }
        m.writes = Some(w);
        if todo {
            lap(&mut m, "write timing", &mut since);
            save(opts, &m)?;
        }
    }
    m.reads += p.reads;
    m.writes_issued += p.writes;
    save(opts, &m)?;
    Ok(m)
}
