//! Power-aware disaster recovery: the secondary site with deferred, compacted application of
//! the forwarded log (the first paper of `003_…-power-aware-dr-and-track-alignment.txt`).
//!
//! The primary's updates arrive continuously ([`stream`]) into the log volume, which always
//! spins. The data volume — the experiment's drive and array — applies them in batches:
//! the applier cuts the log into windows of W bytes, **compacts** each (folding repeated
//! updates of a page into the last, sorting by address: [`window`]) and writes the window's
//! pages in ascending order, one request per run of consecutive pages, one request
//! outstanding, as a redo applier does. Between batches the data volume spins down; when to
//! wake is planned so that the worst-case recovery time (spin-up plus applying everything
//! outstanding) stays within the RTO ([`plan`]).
//!
//! [`run`] measures every window's application time on the data volume (one simulated run of
//! all windows back to back), plans the batches, prices the timeline with the drive's power
//! states, and compares it with the conventional secondary, which writes every update as it
//! arrives and never spins down (a second simulated run).

pub mod plan;
pub mod stream;
pub mod window;

use crate::engine::{Engine, HostRequest};
use crate::metrics::dr::{
    ClosedForm, DrEnergy, DrPlanReport, DrReport, Infeasibility, StreamReport, VolumeSeconds,
};
use crate::metrics::Report;
use crate::sim::{self, ReplayRequest, Window, Workload};
use crate::{Nanos, Op, Span};
use plan::{Draw, Penalties, State};
use stream::Stream;
use window::Windows;

/// What the secondary does with the stream.
#[derive(Clone, Debug)]
pub struct DrConfig {
    /// The compaction window W, bytes of log.
    pub window_bytes: u64,
    pub rto: Span,
    /// Longest write the applier issues, pages (a run of consecutive pages longer than this
    /// is split).
    pub max_write_pages: u32,
    /// Writes the applier keeps outstanding (one: a redo applier's).
    pub queue_depth: usize,
    /// The low-power state the data volume sleeps in, for the report.
    pub sleep_state: String,
}

/// The data volume's power: per-disk draw (the busy share is filled in by [`run`]) and the
/// penalties of the sleep state's transitions.
#[derive(Copy, Clone, Debug)]
pub struct VolumePower {
    pub draw: Draw,
    pub penalties: Penalties,
}

/// A window still filling is charged the application time of the smallest of its first
/// `STAGES`-ths (by log bytes) that holds what it has received.
pub const STAGES: usize = 8;

/// At most this many of the conventional secondary's writes are in its data volume at once.
const IMMEDIATE_QUEUE: usize = 256;

/// Why a DR secondary cannot run (an RTO it cannot keep is not an error: the report says
/// so in `dr.infeasible`).
#[derive(Debug, thiserror::Error)]
pub enum DrError {
    /// The stream or the data volume is unusable.
    #[error("{0}")]
    Input(String),
}

/// The deferred secondary on `stream`: the report of the application run (every window
/// back to back) with [`DrReport`] in `dr`, and the conventional secondary's report.
/// `volume` builds the data volume afresh (it is built twice).
pub fn run(
    stream: &Stream,
    cfg: &DrConfig,
    volume: &mut dyn FnMut() -> Result<Box<dyn Engine>, String>,
    power: VolumePower,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<(Report, Report), DrError> {
    if stream.records.is_empty() {
        return Err(DrError::Input("the update stream has no records".into()));
    }
    let engine = volume().map_err(DrError::Input)?;
    let sector_bytes = engine.sector_bytes();
    if !stream.page_bytes.is_multiple_of(sector_bytes) {
        return Err(DrError::Input(format!(
            "pages of {} bytes are not whole sectors of {sector_bytes} bytes",
            stream.page_bytes
        )));
    }
    let spp = u64::from(stream.page_bytes / sector_bytes);
    let need = stream.data_pages.saturating_mul(spp);
    if need > engine.capacity_sectors() {
        return Err(DrError::Input(format!(
            "the stream updates {} pages of {} bytes ({:.1} MB), more than the data volume's {:.1} MB",
            stream.data_pages,
            stream.page_bytes,
            stream.data_pages as f64 * f64::from(stream.page_bytes) / 1e6,
            (engine.capacity_sectors() * u64::from(sector_bytes)) as f64 / 1e6
        )));
    }
    let windows = Windows::cut(stream, cfg.window_bytes);
    // The application run: every window's compacted writes, back to back; then every
    // window's first eighths, each compacted alone (the charge of a window still filling).
    let to_requests = |pages: &[u64], out: &mut Vec<ReplayRequest>| -> usize {
        let runs = window::runs(pages, cfg.max_write_pages);
        let n = runs.len();
        out.extend(runs.into_iter().map(|(p, n)| ReplayRequest {
            op: Op::Write,
            lba: p * spp,
            sectors: u32::try_from(u64::from(n) * spp).expect("a write fits u32 sectors"),
            think: Span::ZERO,
        }));
        n
    };
    let mut groups = Vec::with_capacity(windows.len() * STAGES);
    let mut requests: Vec<ReplayRequest> = Vec::new();
    let (mut updates, mut folded) = (0u64, 0u64);
    for k in 0..windows.len() {
        let pages = windows.compacted(stream, k);
        updates += windows.updates(stream, k) as u64;
        folded += pages.len() as u64;
        groups.push(to_requests(&pages, &mut requests));
    }
    let stage_bounds: Vec<Vec<usize>> = (0..windows.len())
        .map(|k| windows.stage_ends(stream, k, STAGES))
        .collect();
    for (k, ends) in stage_bounds.iter().enumerate() {
        for &e in &ends[..STAGES - 1] {
            let pages = windows.compacted_prefix(stream, k, e);
            groups.push(to_requests(&pages, &mut requests));
        }
    }
    let count = requests.len() as u64;
    let mut done: Vec<Nanos> = vec![Nanos::ZERO; requests.len()];
    let mut service = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("valid histogram bounds");
    // Issued in order, `queue_depth` at a time, the next as soon as one completes.
    let issued = requests.into_iter().enumerate().map(|(i, r)| {
        Ok(HostRequest {
            id: i as u64,
            op: r.op,
            lba: r.lba,
            sectors: r.sectors,
            arrival: Nanos::ZERO,
        })
    });
    let apply_report = sim::run_observed(
        engine,
        Workload::Timed {
            arrivals: Box::new(issued),
            requests: Some(count),
            max_outstanding: Some(cfg.queue_depth),
        },
        Window::default(),
        progress,
        &mut |c| {
            done[c.id as usize] = c.done;
            service.saturating_record(c.latency().0.max(1));
        },
    )
    .map_err(|e| DrError::Input(e.to_string()))?;
    // The run issues the whole backlog at 0, so its latencies from arrival and its offered
    // rate are artefacts: the row reports the applier's writes from issue to completion.
    let mut apply_report = apply_report;
    let stats = crate::metrics::LatencyStats::from_histogram(&service);
    apply_report.latency.all = stats.clone();
    apply_report.latency.write = stats;
    apply_report.breakdown_ms.host_wait = 0.0;
    apply_report.offered_iops = None;
    apply_report.achieved_iops = None;
    apply_report.host_queue = None;
    apply_report.saturated = false;
    // A group's time: from the previous groups' last completion to its own (with more than
    // one write outstanding its writes overlap the previous group's last ones, and may
    // complete out of order).
    let mut times = Vec::with_capacity(groups.len());
    let (mut at, mut prev) = (0usize, Nanos::ZERO);
    for &n in &groups {
        let end = done[at..at + n]
            .iter()
            .copied()
            .max()
            .unwrap_or(prev)
            .max(prev);
        at += n;
        times.push(Span(end.0 - prev.0));
        prev = end;
    }
    let (cost, prefix_times) = times.split_at(windows.len());
    // The filling window's charge: stage s of window k (from when its log passes s - 1
    // eighths) costs what its first s eighths cost; charges never fall within a window.
    let mut filling: Vec<(Nanos, Span)> = Vec::with_capacity(windows.len() * STAGES);
    for k in 0..windows.len() {
        let opened = if k == 0 {
            Nanos::ZERO
        } else {
            windows.complete_at[k - 1]
        };
        let mut charge = Span::ZERO;
        for s in 0..STAGES {
            let t = if s == 0 {
                opened
            } else {
                match windows.stage_start(stream, k, stage_bounds[k][s - 1]) {
                    Some(t) => t.max(opened),
                    None => break,
                }
            };
            let c = if s + 1 == STAGES {
                cost[k]
            } else {
                prefix_times[k * (STAGES - 1) + s]
            };
            charge = charge.max(c);
            filling.push((t, charge));
        }
    }
    if let Some(&last) = windows.complete_at.last() {
        if windows.complete_at.len() == windows.len() {
            filling.push((last, Span::ZERO));
        }
    }
    let end = stream.duration();
    let busy: Vec<f64> = apply_report.disks.iter().map(|d| d.utilization).collect();
    let planned = plan::plan(
        &windows.complete_at,
        &filling,
        cost,
        end,
        cfg.rto,
        power.penalties,
        &power.draw,
    );

    // The conventional secondary: every update written as it arrives.
    let spp32 = u32::try_from(spp).expect("a page fits u32 sectors");
    let mut id = 0u64;
    let arrivals = stream
        .records
        .iter()
        .flat_map(move |r| stream.updates(r).iter().map(move |&p| (r.at, p)));
    let arrivals = arrivals.map(move |(at, p)| {
        id += 1;
        Ok(HostRequest {
            id: id - 1,
            op: Op::Write,
            lba: p * spp,
            sectors: spp32,
            arrival: at,
        })
    });
    let immediate = sim::run(
        volume().map_err(DrError::Input)?,
        Workload::Timed {
            arrivals: Box::new(arrivals),
            requests: Some(stream.pages.len() as u64),
            // Beyond this the secondary has long fallen behind (the report says SATURATED);
            // the rest wait in the host, so a scheduler's queue stays short.
            max_outstanding: Some(IMMEDIATE_QUEUE),
        },
        Window::default(),
        &mut |_, _| {},
    )
    .map_err(|e| DrError::Input(e.to_string()))?;
    let immediate_mean_w = immediate.energy.as_ref().map_or(0.0, |e| e.mean_w);

    let secs = |x: u64| x as f64 / 1e9;
    let duration_s = secs(end.0);
    let mb = |b: f64| b / 1e6;
    let rgen = stream.log_bytes() as f64 / duration_s;
    let complete = windows.complete_at.len();
    let applied_s: f64 = cost[..complete].iter().map(|a| secs(a.0)).sum();
    let rapl = if complete > 0 && applied_s > 0.0 {
        (complete as u64 * cfg.window_bytes) as f64 / applied_s
    } else {
        f64::INFINITY
    };
    let t = secs(cfg.rto.0.saturating_sub(power.penalties.spin_up.0));
    let closed_form = (rapl.is_finite() && rapl > rgen && t > 0.0).then(|| ClosedForm {
        batch_interval_s: rapl * rapl * t / ((rapl - rgen) * rgen),
        apply_s: rapl * t / (rapl - rgen),
    });
    let mut report = apply_report;
    let (plan, infeasible) = match planned {
        Ok(tl) => {
            let plan = plan_report(
                &tl,
                &mut report,
                &busy,
                &power,
                cfg,
                immediate_mean_w,
                &immediate,
            );
            (Some(plan), None)
        }
        Err(e) => {
            // No timeline to price: the application run's own energy would mislead.
            report.energy = None;
            for d in &mut report.disks {
                (d.energy_j, d.energy_fj, d.state_s, d.spin_ups) = (None, None, None, None);
            }
            let key = match e {
                plan::Infeasible::WindowTooSlow { .. } => "workload.dr.window_mb",
                _ => "workload.dr.rto_s",
            };
            let why = Infeasibility {
                key: key.to_string(),
                reason: e.to_string(),
            };
            (None, Some(why))
        }
    };
    let dr = DrReport {
        stream: StreamReport {
            label: stream.label.clone(),
            records: stream.records.len() as u64,
            page_updates: stream.pages.len() as u64,
            log_mb: mb(stream.log_bytes() as f64),
            duration_s,
            rgen_mb_s: mb(rgen),
            data_pages: stream.data_pages,
            page_bytes: stream.page_bytes,
        },
        window_mb: mb(cfg.window_bytes as f64),
        windows: windows.len() as u64,
        rto_s: secs(cfg.rto.0),
        sleep_state: cfg.sleep_state.clone(),
        folded_share: if updates == 0 {
            0.0
        } else {
            1.0 - folded as f64 / updates as f64
        },
        rapl_mb_s: mb(rapl),
        acceleration: rapl / rgen,
        closed_form,
        immediate_mean_w,
        immediate_utilization: immediate.mean_utilization(),
        immediate_saturated: immediate.saturated,
        plan,
        infeasible,
    };
    report.dr = Some(Box::new(dr));
    Ok((report, immediate))
}

/// The plan's report, and the deferred volume's energy over the stream written into the
/// application run's `report` (its disks' and its total), disk by disk from the timeline.
fn plan_report(
    tl: &plan::Timeline,
    report: &mut Report,
    busy: &[f64],
    power: &VolumePower,
    cfg: &DrConfig,
    immediate_mean_w: f64,
    immediate: &Report,
) -> DrPlanReport {
    let end = tl.end;
    let state = |s: State| plan::state_ns(&tl.phases, s);
    let applying = state(State::Applying);
    let mut deferred_fj = 0u128;
    let s = |ns: u64| ns as f64 / 1e9;
    for (d, &u) in report.disks.iter_mut().zip(busy) {
        let draw = Draw {
            busy_share: u,
            ..power.draw
        };
        let fj = plan::energy_fj(&tl.phases, &power.penalties, &draw);
        deferred_fj += fj;
        let active = ((applying as f64 * u).round() as u64).min(applying);
        let sleeping = s(state(State::Sleeping));
        let asleep = |name: &str| {
            if cfg.sleep_state == name {
                sleeping
            } else {
                0.0
            }
        };
        d.energy_fj = Some(fj);
        d.energy_j = Some(fj as f64 / 1e15);
        d.spin_ups = Some(tl.spin_ups);
        d.state_s = Some(crate::metrics::StateSeconds {
            active: s(active),
            idle: s(state(State::Idle) + applying - active),
            standby: asleep("standby"),
            unloaded: asleep("unloaded"),
            low_rpm: asleep("low_rpm"),
            transition: s(state(State::SpinningUp) + state(State::SpinningDown)),
        });
    }
    report.energy = crate::metrics::EnergyReport::of(&report.disks, Span(end.0));
    let duration_s = s(end.0);
    let deferred_j = deferred_fj as f64 / 1e15;
    let deferred_mean_w = deferred_j / duration_s;
    let starts: Vec<f64> = tl
        .batches
        .iter()
        .filter(|b| b.spin_up_s.is_some())
        .map(|b| b.apply_from_s)
        .collect();
    DrPlanReport {
        batches: tl.batches.len() as u64,
        mean_batch_interval_s: (starts.len() > 1)
            .then(|| (starts[starts.len() - 1] - starts[0]) / (starts.len() - 1) as f64),
        mean_apply_s: (!tl.batches.is_empty()).then(|| {
            tl.batches
                .iter()
                .map(|b| b.apply_until_s - b.apply_from_s)
                .sum::<f64>()
                / tl.batches.len() as f64
        }),
        spin_ups: tl.spin_ups,
        spin_ups_per_day: tl.spin_ups as f64 * 86_400.0 / duration_s,
        worst_recovery_s: s(tl.worst_recovery.0),
        worst_recovery_at_s: s(tl.worst_at.0),
        state_s: VolumeSeconds {
            idle: s(state(State::Idle)),
            applying: s(applying),
            spinning_down: s(state(State::SpinningDown)),
            sleeping: s(state(State::Sleeping)),
            spinning_up: s(state(State::SpinningUp)),
        },
        energy: DrEnergy {
            deferred_j,
            deferred_mean_w,
            immediate_j: immediate.energy.as_ref().map_or(0.0, |e| e.total_j),
            immediate_mean_w,
            saving: 1.0 - deferred_mean_w / immediate_mean_w,
        },
        batch_list: tl.batches.clone(),
    }
}
