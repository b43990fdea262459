//! The report of one run: a serde struct, printed as a table for people and as JSON/CSV for
//! programs. Field meanings are documented in `docs/report.md`.

use crate::engine::{Backlog, CacheCounters, CauseShares};
use crate::Span;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::fmt::Write as _;

/// Latency statistics of one request class, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl LatencyStats {
    pub fn from_histogram(h: &Histogram<u64>) -> LatencyStats {
        if h.is_empty() {
            return LatencyStats::default();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        LatencyStats {
            count: h.len(),
            mean_ms: h.mean() / 1e6,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Latencies {
    pub all: LatencyStats,
    pub read: LatencyStats,
    pub write: LatencyStats,
}

/// Mean time per measured request spent in each phase (ms); they add up to the mean latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BreakdownMs {
    /// Waiting in the host for a free slot (`max_outstanding`) before the array saw it.
    pub host_wait: f64,
    pub queue: f64,
    pub overhead: f64,
    pub seek: f64,
    pub rotation: f64,
    pub transfer: f64,
    pub switches: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DiskReport {
    pub disk: usize,
    /// Fraction of the measurement window the disk was busy.
    pub utilization: f64,
    /// The same, split by why the disk was busy (the shares sum to `utilization`).
    pub utilization_by_cause: CauseShares,
    /// Operations the disk served during the whole run.
    pub ops: u64,
    /// Sweep direction reversals (LOOK, SCAN, C-LOOK), whole run.
    pub sweep_reversals: u64,
    /// Requests served per sweep (picks / reversals), whole run; null for non-sweeping policies.
    pub requests_per_sweep: Option<f64>,
    /// Picks forced by the age bound, whole run.
    pub aged_picks: u64,
    /// Delayed writes (replica propagations) served, whole run; included in `ops`.
    pub propagations: u64,
    /// Busy time appending the map log and its checkpoints (eager-writing arrays), whole run.
    pub map_logging_ms: f64,
    /// Energy over the window, J (a drive with power data; docs/power.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// The same, exact, in fJ (not printed).
    #[serde(skip)]
    pub energy_fj: Option<u128>,
    /// Seconds of the window in each power state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_s: Option<StateSeconds>,
    /// Spin-ups begun in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spin_ups: Option<u64>,
}

/// Seconds of a window in each power state; they sum to the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StateSeconds {
    /// An operation running (seeking, rotating, transferring for it).
    pub active: f64,
    /// Spinning, no operation.
    pub idle: f64,
    /// Spun down.
    pub standby: f64,
    /// Heads unloaded.
    pub unloaded: f64,
    /// Spinning at the low rpm.
    pub low_rpm: f64,
    /// In a transition between states (spin-down, spin-up, unload, load, rpm changes).
    pub transition: f64,
}

/// The array's energy over the window: every disk with power data.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EnergyReport {
    pub total_j: f64,
    /// Total energy over the window's length (W).
    pub mean_w: f64,
    /// Spin-ups of all disks begun in the window, and per day of it.
    pub spin_ups: u64,
    pub spin_ups_per_day: f64,
}

impl EnergyReport {
    /// The total of `disks` over a window of `window`; `None` when no disk has power data.
    pub fn of(disks: &[DiskReport], window: Span) -> Option<EnergyReport> {
        if disks.iter().all(|d| d.energy_fj.is_none()) {
            return None;
        }
        let fj: u128 = disks.iter().filter_map(|d| d.energy_fj).sum();
        let spin_ups: u64 = disks.iter().filter_map(|d| d.spin_ups).sum();
        let secs = window.0 as f64 / 1e9;
        let per = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        Some(EnergyReport {
            total_j: fj as f64 / 1e15,
            mean_w: per(fj as f64 / 1e15),
            spin_ups,
            spin_ups_per_day: per(spin_ups as f64) * 86_400.0,
        })
    }
}

/// One sample of a time series: the array at `t_s` seconds of virtual time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SeriesPoint {
    pub t_s: f64,
    /// Host requests accepted and not answered.
    pub outstanding: u64,
    /// Deferred disk operations pending, and NVRAM entries (write-cache blocks) kept.
    pub backlog_ops: u64,
    pub nvram_entries: u64,
    /// Controllers with a write cache: blocks occupied, over capacity, overflows so far.
    pub occupied_blocks: Option<u64>,
    pub occupancy: Option<f64>,
    pub overflows: Option<u64>,
}

/// The write and read caches over the measurement window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CacheReport {
    pub write: WriteCacheReport,
    /// Host reads accepted in the window answered from the caches without a disk access,
    /// over host reads accepted in it; null when there were none.
    pub read_hit_ratio: Option<f64>,
    /// Mean response time of the host reads answered in the window that needed the disks
    /// (the paper's read response time, fig. 8); null when there were none.
    pub disk_read_mean_ms: Option<f64>,
    /// Mean service time of the destage write accesses done in the window (a same-track
    /// batch is one access; queueing excluded): the paper's fig. 13 measure of how well
    /// the destage algorithm picks cheap destages; null when there were none.
    pub destage_write_mean_ms: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WriteCacheReport {
    pub capacity_blocks: u64,
    /// Time-weighted mean of occupied blocks (dirty, or waiting for destage) over capacity.
    pub occupancy_mean: f64,
    /// Host writes that found the cache full (and took the classic update) in the window.
    pub overflows: u64,
}

/// A run that gave up (`run.give_up_mean_ms`): the measured requests' mean latency was
/// already proven to exceed the limit, whatever the rest of the run would do.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StoppedReport {
    /// Virtual time of the stop.
    pub at_s: f64,
    /// The limit given.
    pub limit_ms: f64,
    /// The proof: the mean latency of all measured requests is at least this (their
    /// latencies so far, counted up to the stop, over their number).
    pub mean_ms_at_least: f64,
    /// Host requests not answered at the stop (in the array or waiting for a host slot),
    /// and requests not yet arrived.
    pub unanswered: u64,
    pub not_arrived: Option<u64>,
}

/// Latent sector errors over the window (`array.latent_error_rate`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatentReport {
    /// Disk reads that met an unreadable sector; each was served again by another copy.
    pub errors: u64,
    /// Host read parts with no readable copy left, answered without their data: data lost.
    pub unrecoverable: u64,
    /// Repair writes done (cause `rebuild`), and the sectors they rewrote.
    pub repairs: u64,
    pub repaired_sectors: u64,
    /// Repairs dropped because a newer write reached their sectors first.
    pub superseded: u64,
}

impl LatentReport {
    /// The window's counts, from the counters at its edges.
    pub fn new(start: &crate::engine::LatentCounters, end: &crate::engine::LatentCounters) -> Self {
        LatentReport {
            errors: end.errors - start.errors,
            unrecoverable: end.unrecoverable - start.unrecoverable,
            repairs: end.repairs - start.repairs,
            repaired_sectors: end.repaired_sectors - start.repaired_sectors,
            superseded: end.superseded - start.superseded,
        }
    }
}

/// A disk failure and its rebuild (whole run, not only the window: a rebuild outlasts
/// most windows).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RebuildReport {
    pub disk: usize,
    pub failed_at_s: f64,
    /// When the rebuild began; null if it never did (no rebuild configured).
    pub started_s: Option<f64>,
    /// When it finished; null if the run ended first.
    pub done_s: Option<f64>,
    pub stripes_done: u64,
    pub stripes_total: u64,
    /// Host requests that arrived while the rebuild ran (from its start to its end, or to
    /// the run's end), and their response times.
    pub during: DuringReport,
    /// Host requests that arrived before the failure, for comparison.
    pub before_failure: DuringReport,
}

/// Host response times over an interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DuringReport {
    pub requests: u64,
    pub mean_ms: Option<f64>,
    pub read_mean_ms: Option<f64>,
    pub write_mean_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl CacheReport {
    /// The window from `start` to `end`, `window` long.
    pub fn new(start: &CacheCounters, end: &CacheCounters, window: crate::Span) -> CacheReport {
        let occupied = end.occupied_block_ns - start.occupied_block_ns;
        let reads = end.host_reads - start.host_reads;
        CacheReport {
            write: WriteCacheReport {
                capacity_blocks: end.capacity_blocks,
                occupancy_mean: if window.0 == 0 || end.capacity_blocks == 0 {
                    0.0
                } else {
                    occupied as f64 / window.0 as f64 / end.capacity_blocks as f64
                },
                overflows: end.overflows - start.overflows,
            },
            read_hit_ratio: (reads > 0)
                .then(|| (end.read_hits - start.read_hits) as f64 / reads as f64),
            disk_read_mean_ms: {
                let n = end.disk_reads - start.disk_reads;
                (n > 0).then(|| (end.disk_read_ns - start.disk_read_ns) as f64 / n as f64 / 1e6)
            },
            destage_write_mean_ms: {
                let n = end.destage_writes - start.destage_writes;
                (n > 0).then(|| {
                    (end.destage_write_ns - start.destage_write_ns) as f64 / n as f64 / 1e6
                })
            },
        }
    }
}

/// Deferred work pending at the window's end, and how much it changed over the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BacklogReport {
    pub ops: u64,
    pub bytes: u64,
    pub nvram_entries: u64,
    /// End minus start of the window (negative: the backlog shrank).
    pub growth: BacklogGrowth,
    /// The growth is beyond noise: see [`BacklogReport::new`].
    #[serde(skip)]
    pub grew: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BacklogGrowth {
    pub ops: i64,
    pub bytes: i64,
    pub nvram_entries: i64,
}

/// The paged disk over the window (docs/paged.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PagedReport {
    /// Pages living as bad tenants at the window's start and end (all disks).
    pub tenants_start: u64,
    pub tenants_end: u64,
    /// Pages at home with fewer than all their replicas at the window's end.
    pub thin_end: u64,
    /// Pages the cleaner moved home or re-replicated inside the window.
    pub cleaned: u64,
    /// Host requests accepted inside the window that were not whole pages.
    pub unaligned_requests: u64,
    /// The page size in bytes.
    pub page_bytes: u64,
}

/// Share of the measured requests by which the backlog of deferred operations may grow over
/// the window before the configuration is called unsustainable: a steady state's backlog
/// wanders by a few operations per disk (one in flight, a few queued), a transient one
/// (an NVRAM table still filling) by a sizeable share of the requests written.
pub const BACKLOG_GROWTH_SHARE: f64 = 0.01;
/// Deferred operations per disk the backlog may grow by as noise, whatever the run length.
pub const BACKLOG_GROWTH_PER_DISK: u64 = 2;

impl BacklogReport {
    pub fn new(start: Backlog, end: Backlog, measured: u64, disks: usize) -> BacklogReport {
        let d = |a: u64, b: u64| {
            i64::try_from(b).unwrap_or(i64::MAX) - i64::try_from(a).unwrap_or(i64::MAX)
        };
        let growth = BacklogGrowth {
            ops: d(start.ops, end.ops),
            bytes: d(start.bytes, end.bytes),
            nvram_entries: d(start.nvram_entries, end.nvram_entries),
        };
        let noise = (BACKLOG_GROWTH_SHARE * measured as f64)
            .max((BACKLOG_GROWTH_PER_DISK * disks as u64) as f64);
        BacklogReport {
            ops: end.ops,
            bytes: end.bytes,
            nvram_entries: end.nvram_entries,
            grew: growth.ops as f64 > noise,
            growth,
        }
    }
}

/// Requests waiting in the host (arrived, not yet issued to the array for want of a free
/// slot) at the window's edges and on average over it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostQueueReport {
    pub start: u64,
    pub end: u64,
    pub mean: f64,
}

/// The report of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    pub label: String,
    pub drive: String,
    pub disks_count: usize,
    pub layout: String,
    pub scheduler: String,
    pub workload: String,
    pub seed: u64,
    /// Measured requests (issued inside the window).
    pub requests: u64,
    pub requests_issued: u64,
    /// The measurement window: first measured arrival to last measured completion.
    pub window_s: f64,
    /// Requests answered inside the window per second of it.
    pub throughput_iops: f64,
    pub throughput_mb_s: f64,
    /// Timed arrivals (open loop, trace): the rate the measured requests arrived at; null
    /// for closed loops.
    pub offered_iops: Option<f64>,
    /// Timed arrivals: the rate the array answered them at (the throughput); null for closed
    /// loops.
    pub achieved_iops: Option<f64>,
    /// The array fell behind its arrivals (always false for closed loops).
    pub saturated: bool,
    /// The backlog of deferred work did not grow over the window.
    pub sustainable: bool,
    pub backlog: BacklogReport,
    /// Timed arrivals: the host queue (requests not yet admitted to the array).
    pub host_queue: Option<HostQueueReport>,
    /// With `run.drain`: seconds of deferred work after the last host completion.
    pub drain_s: Option<f64>,
    pub latency: Latencies,
    pub breakdown_ms: BreakdownMs,
    pub disks: Vec<DiskReport>,
    /// Energy over the window, for a drive with power data (docs/power.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyReport>,
    /// Eager-writing arrays: the share of all disks' busy time (whole run) spent on map
    /// logging (the EW-Array paper's "overhead due to the maintenance of the map", 5.2.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_logging_share: Option<f64>,
    /// Eager-writing arrays: how long rebuilding the logical-to-physical map would take
    /// after a crash at the end of the run (reading the map log region, replaying NVRAM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_recovery_ms: Option<f64>,
    /// The paged disk: bad tenants at the window's edges and pages cleaned inside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paged: Option<PagedReport>,
    /// Controllers with a write cache (parity arrays): the caches over the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheReport>,
    /// Controllers with a write cache: blocks written to disk (data and parity) per block
    /// the host wrote, over the window; null when the host wrote nothing in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_writes_per_host_write: Option<Option<f64>>,
    /// A disk failed and was rebuilt onto a spare: seconds from the rebuild's start to its
    /// end; null while it had not finished when the run ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuild_s: Option<Option<f64>>,
    /// A disk failure (`array.failed_disk`): when, the rebuild's progress, and the host's
    /// response time while it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<RebuildReport>,
    /// Latent sector errors met, repaired and unrecoverable over the window
    /// (`array.latent_error_rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latent: Option<LatentReport>,
    /// The run gave up before every request was answered (`run.give_up_mean_ms`): the
    /// figures above cover the requests answered by then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StoppedReport>,
    /// A disaster-recovery secondary (`workload.kind = "dr"`): the deferred application's
    /// plan, recovery time and energy against the conventional secondary (docs/dr.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dr: Option<Box<super::dr::DrReport>>,
    /// The array's state sampled over virtual time (`run.series_ms`); written by
    /// `spindle run --series FILE`, not part of the JSON report.
    #[serde(skip)]
    pub series: Vec<SeriesPoint>,
    /// Further configurations of the same experiment (`[[compare]]`), each a full report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compare: Vec<Report>,
}

impl Report {
    /// This report and its comparisons, in order.
    pub fn rows(&self) -> impl Iterator<Item = &Report> {
        std::iter::once(self).chain(self.compare.iter())
    }

    pub fn mean_utilization(&self) -> f64 {
        if self.disks.is_empty() {
            return 0.0;
        }
        self.disks.iter().map(|d| d.utilization).sum::<f64>() / self.disks.len() as f64
    }

    /// A table for people: one row per configuration.
    pub fn to_table(&self) -> String {
        let mut s = String::new();
        let first = self;
        let _ = writeln!(
            s,
            "drive {} · workload {} · seed {}",
            first.drive, first.workload, first.seed
        );
        let _ = writeln!(
            s,
            "{:<22} {:<18} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} | {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
            "configuration", "layout", "sched", "IOPS", "mean ms", "p50", "p95", "p99", "max", "util",
            "host", "queue", "ovh", "seek", "rot", "xfer"
        );
        for r in self.rows() {
            let l = &r.latency.all;
            let b = &r.breakdown_ms;
            let _ = writeln!(
                s,
                "{:<22} {:<18} {:>7} {:>9.1} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>5.1}% | {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3}{}",
                truncate(&r.label, 22),
                truncate(r.layout.split(' ').take(2).collect::<Vec<_>>().join(" ").as_str(), 18),
                r.scheduler,
                r.throughput_iops,
                l.mean_ms,
                l.p50_ms,
                l.p95_ms,
                l.p99_ms,
                l.max_ms,
                100.0 * r.mean_utilization(),
                b.host_wait,
                b.queue,
                b.overhead,
                b.seek,
                b.rotation,
                b.transfer + b.switches,
                r.flags(),
            );
        }
        let _ = writeln!(
            s,
            "(latency in ms over {} measured requests per row; breakdown = mean ms per request; \
             host = waiting for a host slot)",
            first.requests
        );
        for r in self.rows() {
            if let Some(e) = &r.energy {
                let _ = writeln!(
                    s,
                    "energy {:<22} {:>12.1} J  mean {:>8.2} W  {} spin-ups ({:.1}/day)",
                    truncate(&r.label, 22),
                    e.total_j,
                    e.mean_w,
                    e.spin_ups,
                    e.spin_ups_per_day
                );
            }
        }
        if self.rows().any(|r| r.saturated || !r.sustainable) {
            let _ = writeln!(
                s,
                "(SATURATED: the array fell behind its arrivals; BACKLOG GROWS: deferred work \
                 grew over the window, not sustainable at this load — docs/report.md)"
            );
        }
        if let Some(dr) = &self.dr {
            s.push_str(&dr.summary());
        }
        s
    }

    /// The row's warnings, with a leading space (empty when there are none).
    pub fn flags(&self) -> String {
        let mut f = String::new();
        if self.saturated {
            f.push_str(" SATURATED");
        }
        if let Some(r) = &self.rebuild {
            f.push_str(match r.done_s {
                Some(_) => " REBUILT",
                None => " DEGRADED",
            });
        }
        if !self.sustainable {
            f.push_str(" BACKLOG GROWS");
        }
        if self.latent.as_ref().is_some_and(|l| l.unrecoverable > 0) {
            f.push_str(" DATA LOST");
        }
        if self.stopped.is_some() {
            f.push_str(" STOPPED");
        }
        if self.dr.as_ref().is_some_and(|d| d.infeasible.is_some()) {
            f.push_str(" INFEASIBLE");
        }
        f
    }

    /// One line per row that is saturated or unsustainable, for stderr.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        for r in self.rows() {
            if r.saturated {
                let rate = match (r.offered_iops, r.achieved_iops) {
                    (Some(o), Some(a)) => format!(": offered {o:.1} IOPS, achieved {a:.1}"),
                    _ => String::new(),
                };
                let q = r.host_queue.as_ref().map_or(String::new(), |q| {
                    format!(
                        ", host queue {} -> {} requests (mean {:.1})",
                        q.start, q.end, q.mean
                    )
                });
                w.push(format!(
                    "warning: {}: saturated{rate}{q}; latencies grow with the run's length",
                    r.label
                ));
            }
            if !r.sustainable {
                let g = &r.backlog.growth;
                w.push(format!(
                    "warning: {}: deferred work grew by {} operations ({} bytes, {} NVRAM \
                     entries) over the {:.3} s window: not sustainable at this load",
                    r.label, g.ops, g.bytes, g.nvram_entries, r.window_s
                ));
            }
            if let Some(x) = &r.stopped {
                w.push(format!(
                    "warning: {}: stopped at {:.3} s: the mean latency is already at least {:.1} ms \
                     (limit {} ms, run.give_up_mean_ms); {} requests unanswered{}; the figures \
                     cover the requests answered by then",
                    r.label,
                    x.at_s,
                    x.mean_ms_at_least,
                    x.limit_ms,
                    x.unanswered,
                    x.not_arrived
                        .map_or(String::new(), |n| format!(", {n} not yet arrived"))
                ));
            }
            if let Some(p) = r.paged.as_ref().filter(|p| p.unaligned_requests > 0) {
                w.push(format!(
                    "warning: {}: {} host requests were not whole {}-byte pages: every page they \
                     touch is its own disk command (align the workload to the page: \
                     workload.alignment_bytes and size_bytes, or workload.trace.split_kb)",
                    r.label, p.unaligned_requests, p.page_bytes
                ));
            }
            if let Some(l) = r.latent.as_ref().filter(|l| l.unrecoverable > 0) {
                w.push(format!(
                    "warning: {}: {} host reads met a latent sector error on every copy left and were \
                     answered without their data (data lost); {} errors met, {} repaired",
                    r.label, l.unrecoverable, l.errors, l.repairs
                ));
            }
        }
        w
    }

    /// CSV: a header and one line per configuration.
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "label,drive,disks,layout,scheduler,workload,seed,requests,throughput_iops,throughput_mb_s,\
             mean_ms,p50_ms,p95_ms,p99_ms,p999_ms,max_ms,read_mean_ms,write_mean_ms,\
             queue_ms,overhead_ms,seek_ms,rotation_ms,transfer_ms,switches_ms,mean_utilization,\
             window_s,offered_iops,achieved_iops,saturated,sustainable,backlog_ops,backlog_bytes,\
             backlog_nvram_entries,host_wait_ms",
        );
        // Drives with power data: the window's energy (docs/power.md).
        let energy = self.rows().any(|r| r.energy.is_some());
        if energy {
            s.push_str(",energy_j,mean_w,spin_ups");
        }
        s.push('\n');
        for r in self.rows() {
            let (l, b) = (&r.latency.all, &r.breakdown_ms);
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{:.3},{:.3},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{},{},{},{},{},{},{},{:.6}",
                csv_field(&r.label),
                csv_field(&r.drive),
                r.disks_count,
                csv_field(&r.layout),
                r.scheduler,
                csv_field(&r.workload),
                r.seed,
                r.requests,
                r.throughput_iops,
                r.throughput_mb_s,
                l.mean_ms,
                l.p50_ms,
                l.p95_ms,
                l.p99_ms,
                l.p999_ms,
                l.max_ms,
                r.latency.read.mean_ms,
                r.latency.write.mean_ms,
                b.queue,
                b.overhead,
                b.seek,
                b.rotation,
                b.transfer,
                b.switches,
                r.mean_utilization(),
                r.window_s,
                opt3(r.offered_iops),
                opt3(r.achieved_iops),
                r.saturated,
                r.sustainable,
                r.backlog.ops,
                r.backlog.bytes,
                r.backlog.nvram_entries,
                b.host_wait,
            );
            if energy {
                s.pop(); // the newline
                let _ = match &r.energy {
                    Some(e) => writeln!(s, ",{:.3},{:.6},{}", e.total_j, e.mean_w, e.spin_ups),
                    None => writeln!(s, ",,,"),
                };
            }
        }
        s
    }
}

/// An optional number for CSV: three decimals, or empty.
fn opt3(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.3}"))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(std::iter::once('…')).collect()
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
