//! Measurement: latency histograms per class, the time breakdown, throughput, per-disk
//! utilisation and the deferred-work backlog over a measurement window, and the [`Report`]
//! they become.
//!
//! **Measured requests** are chosen by issue order (the dissertation measures the middle
//! 7,000 of 10,000 requests): indices `warmup..total − cooldown`.
//!
//! **The window** is a time interval: from the first measured request's arrival to the last
//! measured request's completion. Everything a report says about time is taken inside it:
//! a disk's busy time is clipped to it (utilisation ≤ 100 % by construction, whatever work
//! was deferred past it), throughput is the requests answered inside it per second of it
//! (the measured ones, and any warm-up or cool-down request answered inside), and the backlog
//! of deferred work (delayed copies, eager propagations, map log appends, …) is read at both
//! edges. Work that outlives the window is not counted: it shows as backlog, and a backlog
//! that grew over the window makes the configuration unsustainable at that load.
//!
//! **Timed arrivals** (open loop, traces): a request's latency runs from its own arrival
//! (the trace's time), so time waiting in the host for a free slot (`max_outstanding`) is
//! latency, reported as `host_wait` in the breakdown. The offered rate is measured from the
//! measured requests' arrivals, the achieved rate is the throughput, and the run is
//! saturated when it falls behind (see [`Collector::finish`]).

pub mod dr;
mod rebuild;
mod report;

pub use rebuild::RebuildWatch;
pub use report::{
    BacklogReport, BreakdownMs, CacheReport, DiskReport, DuringReport, EnergyReport,
    HostQueueReport, LatencyStats, LatentReport, PagedReport, RebuildReport, Report, SeriesPoint,
    StateSeconds, StoppedReport, WriteCacheReport,
};

use crate::drive::PowerTotals;
use crate::engine::{
    Backlog, Busy, CacheCounters, CauseShares, Completion, DiskCounters, LatentCounters,
    PagedStatus,
};
use crate::{Nanos, Op};
use hdrhistogram::Histogram;

/// Achieved below offered by more than this fraction: saturated (an unsaturated run of n
/// requests loses only about its last request's latency over its arrival span).
pub const SATURATION_SHORTFALL: f64 = 0.02;

/// A window edge: when, every disk's cumulative busy time, the backlog.
#[derive(Clone, Debug)]
pub struct Edge {
    pub at: Nanos,
    pub busy: Vec<Busy>,
    pub backlog: Backlog,
    /// The write cache's counters, for a controller with one.
    pub cache: Option<CacheCounters>,
    /// Every disk's power totals, for a drive with power data (empty: none).
    pub power: Vec<Option<PowerTotals>>,
    /// Latent sector errors so far, for a controller simulating them.
    pub latent: Option<LatentCounters>,
    /// The paged disk's page state.
    pub paged: Option<PagedStatus>,
}

/// Collects per-request measurements during a run. Call order, per event at time t:
/// [`Collector::reach`] before the array handles it, then [`Collector::on_complete`] for
/// each completion it yields; [`Collector::set_total`] once the request count is known.
pub struct Collector {
    warmup: u64,
    cooldown: u64,
    /// Measured requests, once the run's request count is known.
    measured_total: Option<u64>,
    timed: bool,
    all: Histogram<u64>,
    read: Histogram<u64>,
    write: Histogram<u64>,
    /// host wait, queue, overhead, seek, rotation, transfer, switches (ns, summed).
    sums: [u128; 7],
    sectors: u128,
    measured: u64,
    /// Completions of any request (warm-up and cool-down too) inside the window.
    answered_in_window: u64,
    /// The first measured request's arrival, known before the window opens.
    opens_at: Option<Nanos>,
    start: Option<Edge>,
    end: Option<Edge>,
    first_arrival: Option<Nanos>,
    last_arrival: Option<Nanos>,
    host_queue_start: u64,
    host_queue_end: u64,
    /// ∫ host queue length dt over the window (ns · requests).
    host_queue_area: u128,
    /// Measured requests arrived and not yet answered, and ∫ of their number dt up to
    /// `in_system_at` (ns · requests): the measured latencies' sum so far, the answered
    /// ones' whole and the rest's up to now — a lower bound on their final sum.
    in_system: u64,
    in_system_area: u128,
    in_system_at: Nanos,
}

fn histogram() -> Histogram<u64> {
    // 1 ns .. ~1 hour at 3 significant digits: 0.1 % resolution on every percentile.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

impl Collector {
    /// `total`: the run's request count when known; `timed`: arrivals come at their own
    /// times (open loop, trace), so offered rate and saturation are measured.
    pub fn new(warmup: u64, total: Option<u64>, cooldown: u64, timed: bool) -> Collector {
        let mut c = Collector {
            warmup,
            cooldown,
            measured_total: None,
            timed,
            all: histogram(),
            read: histogram(),
            write: histogram(),
            sums: [0; 7],
            sectors: 0,
            measured: 0,
            answered_in_window: 0,
            opens_at: None,
            start: None,
            end: None,
            first_arrival: None,
            last_arrival: None,
            host_queue_start: 0,
            host_queue_end: 0,
            host_queue_area: 0,
            in_system: 0,
            in_system_area: 0,
            in_system_at: Nanos::ZERO,
        };
        if let Some(t) = total {
            c.set_total(t);
        }
        c
    }

    /// The run issues `total` requests in all (call once known; again is harmless).
    pub fn set_total(&mut self, total: u64) {
        self.measured_total = Some(
            total
                .saturating_sub(self.cooldown)
                .saturating_sub(self.warmup),
        );
    }

    pub fn is_measured(&self, index: u64) -> bool {
        index >= self.warmup && self.measured_total.is_none_or(|m| index - self.warmup < m)
    }

    /// Request `index` arrives (at the host) at `at`; call in issue order.
    pub fn on_arrival(&mut self, index: u64, at: Nanos) {
        if index == self.warmup {
            self.opens_at = Some(at);
        }
        if self.is_measured(index) {
            self.advance_in_system(at);
            self.in_system += 1;
        }
    }

    fn advance_in_system(&mut self, to: Nanos) {
        let to = to.max(self.in_system_at);
        self.in_system_area +=
            u128::from(self.in_system) * u128::from(to.since(self.in_system_at).0);
        self.in_system_at = to;
    }

    /// A lower bound at `now` on the mean latency the measured requests will have: every
    /// latency so far counted up to `now` (answered ones in full), over all measured
    /// requests. None while their number is unknown.
    pub fn mean_latency_at_least(&self, now: Nanos) -> Option<f64> {
        let total = self.measured_total.filter(|&n| n > 0)?;
        let pending =
            u128::from(self.in_system) * u128::from(now.saturating_since(self.in_system_at).0);
        Some((self.in_system_area + pending) as f64 / total as f64)
    }

    /// The run stops at `at` before every request is answered (`Window::give_up`): the
    /// window closes there, with `edge(at)`.
    pub fn stop(&mut self, at: Nanos, edge: impl FnOnce(Nanos) -> Edge) {
        if self.start.is_some() && self.end.is_none() {
            self.end = Some(edge(at));
        }
    }

    /// The driver is about to handle an event at `t`: opens the window if its start is due,
    /// with `edge(at)` read before any event later than `at` is handled.
    pub fn reach(&mut self, t: Nanos, edge: impl FnOnce(Nanos) -> Edge) {
        if self.start.is_none() {
            if let Some(at) = self.opens_at.filter(|&at| at <= t) {
                if self.measured_total != Some(0) {
                    self.start = Some(edge(at));
                }
            }
        }
    }

    /// Records completion `c` of a request that arrived at the host at `arrived` (`c.arrival`
    /// is when it was issued to the array: later if it waited for a free slot). If it is the
    /// last measured one, the window closes at `c.done` with `edge(c.done)`.
    pub fn on_complete(
        &mut self,
        c: &Completion,
        arrived: Nanos,
        edge: impl FnOnce(Nanos) -> Edge,
    ) {
        let issued = c.arrival;
        assert!(arrived <= issued, "a request is issued after it arrives");
        self.count_host_wait(arrived, issued);
        if self.start.is_some() && self.end.is_none() && !self.is_measured(c.id) {
            self.answered_in_window += 1;
        }
        if !self.is_measured(c.id) {
            return;
        }
        self.advance_in_system(c.done);
        self.in_system -= 1;
        assert!(
            self.start.is_some(),
            "a measured request completes inside the window"
        );
        let latency = c.done.since(arrived);
        let ns = latency.0.max(1);
        self.all.saturating_record(ns);
        match c.op {
            Op::Read => self.read.saturating_record(ns),
            Op::Write => self.write.saturating_record(ns),
        }
        let b = c.breakdown;
        let host_wait = issued.since(arrived);
        for (s, v) in self.sums.iter_mut().zip([
            host_wait, b.queue, b.overhead, b.seek, b.rotation, b.transfer, b.switches,
        ]) {
            *s += u128::from(v.0);
        }
        self.sectors += u128::from(c.sectors);
        self.first_arrival = Some(self.first_arrival.map_or(arrived, |f| f.min(arrived)));
        self.last_arrival = Some(self.last_arrival.map_or(arrived, |l| l.max(arrived)));
        self.measured += 1;
        self.answered_in_window += 1;
        if Some(self.measured) == self.measured_total {
            self.end = Some(edge(c.done));
        }
    }

    /// Host-queue bookkeeping for a request that waited in the host over `[arrived, issued)`.
    fn count_host_wait(&mut self, arrived: Nanos, issued: Nanos) {
        let Some(s) = self.start.as_ref().map(|e| e.at) else {
            return; // it left the host before the window opened
        };
        let e = self.end.as_ref().map(|e| e.at);
        if arrived <= s && issued > s {
            self.host_queue_start += 1;
        }
        if let Some(e) = e {
            if arrived <= e && issued > e {
                self.host_queue_end += 1;
            }
        }
        let from = arrived.max(s);
        let to = e.map_or(issued, |e| issued.min(e));
        if to > from {
            self.host_queue_area += u128::from(to.since(from).0);
        }
    }

    /// Closes the measurement (a window that never closed — no measured request — is
    /// empty) and builds the report. `drained_s`: how long deferred work ran after the last
    /// host completion, when the run drained it.
    pub fn finish(
        self,
        counters: Vec<DiskCounters>,
        sector_bytes: u32,
        total_issued: u64,
        drained_s: Option<f64>,
    ) -> Report {
        let n_disks = counters.len();
        let empty = |at| Edge {
            at,
            busy: vec![Busy::default(); n_disks],
            backlog: Backlog::default(),
            cache: None,
            power: Vec::new(),
            latent: None,
            paged: None,
        };
        let (start, end) = match (self.start, self.end) {
            (Some(s), Some(e)) => (s, e),
            // Opened but never closed (cannot happen once every request is answered): empty.
            (Some(s), None) => (s.clone(), s),
            _ => (empty(Nanos::ZERO), empty(Nanos::ZERO)),
        };
        let window = end.at.saturating_since(start.at);
        let secs = window.0 as f64 / 1e9;
        let n = self.measured.max(1) as f64;
        let mean_ms = |sum: u128| sum as f64 / n / 1e6;
        let disks = counters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let by_cause = end.busy[i].since(&start.busy[i]);
                let busy = by_cause.total().0;
                assert!(
                    busy <= window.0,
                    "disk {i} busy {busy} ns in a window of {} ns",
                    window.0
                );
                DiskReport {
                    disk: i,
                    utilization: if window.0 == 0 {
                        0.0
                    } else {
                        busy as f64 / window.0 as f64
                    },
                    ops: c.ops,
                    sweep_reversals: c.sched.reversals,
                    requests_per_sweep: if c.sched.reversals == 0 {
                        None
                    } else {
                        Some(c.sched.picks as f64 / c.sched.reversals as f64)
                    },
                    utilization_by_cause: CauseShares::of(&by_cause, window),
                    aged_picks: c.sched.aged_picks,
                    propagations: c.propagations,
                    map_logging_ms: c.map_logging.as_ms_f64(),
                    ..energy_of(start.power.get(i), end.power.get(i), busy, window)
                }
            })
            .collect::<Vec<DiskReport>>();
        let energy = EnergyReport::of(&disks, window);
        // Every request answered inside the window counts, measured or not: counting only
        // the measured ones would charge the window for the tail in which the last measured
        // stragglers finish among cool-down requests.
        let throughput_iops = if secs > 0.0 {
            self.answered_in_window as f64 / secs
        } else {
            0.0
        };
        let backlog = BacklogReport::new(start.backlog, end.backlog, self.measured, n_disks);
        let (offered_iops, achieved_iops, host_queue) = if self.timed {
            let offered = match (self.first_arrival, self.last_arrival) {
                (Some(f), Some(l)) if l > f && self.measured >= 2 => {
                    Some((self.measured - 1) as f64 / (l.since(f).0 as f64 / 1e9))
                }
                _ => None,
            };
            let mean = if window.0 == 0 {
                0.0
            } else {
                self.host_queue_area as f64 / window.0 as f64
            };
            let q = HostQueueReport {
                start: self.host_queue_start,
                end: self.host_queue_end,
                mean,
            };
            (offered, Some(throughput_iops), Some(q))
        } else {
            (None, None, None)
        };
        let behind = matches!((offered_iops, achieved_iops),
            (Some(o), Some(a)) if a < o * (1.0 - SATURATION_SHORTFALL));
        let queue_grew = host_queue
            .as_ref()
            .is_some_and(|q| q.end.saturating_sub(q.start) as f64 > q.mean && q.end > q.start);
        Report {
            requests: self.measured,
            requests_issued: total_issued,
            window_s: secs,
            throughput_iops,
            throughput_mb_s: if secs > 0.0 {
                (self.sectors as f64 * f64::from(sector_bytes)) / 1e6 / secs
            } else {
                0.0
            },
            offered_iops,
            achieved_iops,
            saturated: behind || queue_grew,
            sustainable: !backlog.grew,
            backlog,
            host_queue,
            drain_s: drained_s,
            latency: report::Latencies {
                all: LatencyStats::from_histogram(&self.all),
                read: LatencyStats::from_histogram(&self.read),
                write: LatencyStats::from_histogram(&self.write),
            },
            breakdown_ms: BreakdownMs {
                host_wait: mean_ms(self.sums[0]),
                queue: mean_ms(self.sums[1]),
                overhead: mean_ms(self.sums[2]),
                seek: mean_ms(self.sums[3]),
                rotation: mean_ms(self.sums[4]),
                transfer: mean_ms(self.sums[5]),
                switches: mean_ms(self.sums[6]),
            },
            disks,
            energy,
            paged: match (&start.paged, &end.paged) {
                (Some(s), Some(e)) => Some(PagedReport {
                    tenants_start: s.tenants,
                    tenants_end: e.tenants,
                    thin_end: e.thin,
                    cleaned: e.cleaned - s.cleaned,
                    unaligned_requests: e.unaligned - s.unaligned,
                    page_bytes: e.page_bytes,
                }),
                _ => None,
            },
            cache: match (&start.cache, &end.cache) {
                (Some(s), Some(e)) => Some(CacheReport::new(s, e, window)),
                _ => None,
            },
            disk_writes_per_host_write: match (&start.cache, &end.cache) {
                (Some(s), Some(e)) => {
                    let host = e.host_write_blocks - s.host_write_blocks;
                    Some(
                        (host > 0).then(|| {
                            (e.disk_write_blocks - s.disk_write_blocks) as f64 / host as f64
                        }),
                    )
                }
                _ => None,
            },
            latent: match (&start.latent, &end.latent) {
                (Some(s), Some(e)) => Some(LatentReport::new(s, e)),
                _ => None,
            },
            ..Report::default()
        }
    }
}

/// A disk's energy over a window with `busy_ns` of operations, from its power totals at the
/// window's edges (all `None` without power data): the energy fields of its report.
fn energy_of(
    start: Option<&Option<PowerTotals>>,
    end: Option<&Option<PowerTotals>>,
    busy_ns: u64,
    window: crate::Span,
) -> DiskReport {
    let (Some(Some(s)), Some(Some(e))) = (start, end) else {
        return DiskReport::default();
    };
    let d = e.since(s);
    let secs = |ns: u64| ns as f64 / 1e9;
    let idle = d.idle_ns(busy_ns, window.0);
    let low: u64 = d.low_ns.iter().sum();
    assert!(
        busy_ns + low + d.transition_ns <= window.0,
        "disk states {} ns in a window of {} ns",
        busy_ns + low + d.transition_ns,
        window.0
    );
    DiskReport {
        energy_fj: Some(d.energy_fj(busy_ns, window.0)),
        energy_j: Some(d.energy_fj(busy_ns, window.0) as f64 / 1e15),
        state_s: Some(StateSeconds {
            active: secs(busy_ns),
            idle: secs(idle),
            standby: secs(d.low_ns[0]),
            unloaded: secs(d.low_ns[1]),
            low_rpm: secs(d.low_ns[2]),
            transition: secs(d.transition_ns),
        }),
        spin_ups: Some(d.spin_ups),
        ..DiskReport::default()
    }
}
