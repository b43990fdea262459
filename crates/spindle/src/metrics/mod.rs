//! Measurement: latency histograms per class, the time breakdown, throughput and per-disk
//! utilisation over a measurement window, and the [`Report`] they become.
//!
//! The window excludes warm-up and cool-down by issue order (the dissertation measures the
//! middle 7,000 of 10,000 requests): requests issued with index in `warmup..total-cooldown`
//! are measured. The window in time runs from the first measured request's arrival to the
//! first cool-down request's arrival (or the last completion when there is no cool-down);
//! throughput and utilisation are taken over that interval.

mod report;

pub use report::{BreakdownMs, DiskReport, LatencyStats, Report};

use crate::array::{Completion, DiskCounters};
use crate::{Nanos, Op, Span};
use hdrhistogram::Histogram;

/// Collects per-request measurements during a run.
pub struct Collector {
    warmup: u64,
    /// First index of the cool-down, if known.
    cooldown_from: Option<u64>,
    all: Histogram<u64>,
    read: Histogram<u64>,
    write: Histogram<u64>,
    sums: [u128; 6],
    sectors: u128,
    measured: u64,
    window_start: Option<(Nanos, Vec<Span>)>,
    window_end: Option<(Nanos, Vec<Span>)>,
    completions_in_window: u64,
    last_done: Nanos,
}

fn histogram() -> Histogram<u64> {
    // 1 ns .. ~1 hour at 3 significant digits: 0.1 % resolution on every percentile.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

impl Collector {
    pub fn new(warmup: u64, total: Option<u64>, cooldown: u64) -> Collector {
        Collector {
            warmup,
            cooldown_from: total.map(|t| t.saturating_sub(cooldown)),
            all: histogram(),
            read: histogram(),
            write: histogram(),
            sums: [0; 6],
            sectors: 0,
            measured: 0,
            window_start: None,
            window_end: None,
            completions_in_window: 0,
            last_done: Nanos::ZERO,
        }
    }

    /// Call when host request `index` is issued at `now`, with a snapshot function of
    /// cumulative busy time per disk (called only at the two window edges).
    pub fn on_issue(&mut self, index: u64, now: Nanos, busy: impl FnOnce() -> Vec<Span>) {
        if index == self.warmup && self.window_start.is_none() {
            self.window_start = Some((now, busy()));
        } else if Some(index) == self.cooldown_from
            && self.window_end.is_none()
            && self.window_start.is_some()
        {
            self.window_end = Some((now, busy()));
        }
    }

    pub fn is_measured(&self, index: u64) -> bool {
        index >= self.warmup && self.cooldown_from.is_none_or(|c| index < c)
    }

    pub fn on_complete(&mut self, c: &Completion) {
        self.last_done = self.last_done.max(c.done);
        if let Some((start, _)) = &self.window_start {
            let before_end = self
                .window_end
                .as_ref()
                .is_none_or(|(end, _)| c.done <= *end);
            if c.done >= *start && before_end {
                self.completions_in_window += 1;
            }
        }
        if !self.is_measured(c.id) {
            return;
        }
        let ns = c.latency().0.max(1);
        self.all.saturating_record(ns);
        match c.op {
            Op::Read => self.read.saturating_record(ns),
            Op::Write => self.write.saturating_record(ns),
        }
        let b = c.breakdown;
        for (s, v) in self.sums.iter_mut().zip([
            b.queue, b.overhead, b.seek, b.rotation, b.transfer, b.switches,
        ]) {
            *s += u128::from(v.0);
        }
        self.sectors += u128::from(c.sectors);
        self.measured += 1;
    }

    /// Closes the window (if the cool-down never began, at the last completion) and builds
    /// the report. `busy` gives cumulative busy time per disk at the end of the run.
    pub fn finish(
        mut self,
        end_busy: Vec<Span>,
        counters: Vec<DiskCounters>,
        sector_bytes: u32,
        total_issued: u64,
    ) -> Report {
        let (start, start_busy) = self
            .window_start
            .take()
            .unwrap_or((Nanos::ZERO, vec![Span::ZERO; end_busy.len()]));
        let (end, end_busy) = self.window_end.take().unwrap_or((self.last_done, end_busy));
        let window = end.saturating_since(start);
        let secs = window.0 as f64 / 1e9;
        let n = self.measured.max(1) as f64;
        let mean_ms = |sum: u128| sum as f64 / n / 1e6;
        let disks = counters
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let busy = end_busy[i].0.saturating_sub(start_busy[i].0);
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
                    aged_picks: c.sched.aged_picks,
                    propagations: c.propagations,
                    map_logging_ms: c.map_logging.as_ms_f64(),
                }
            })
            .collect();
        Report {
            requests: self.measured,
            requests_issued: total_issued,
            window_ms: window.as_ms_f64(),
            throughput_iops: if secs > 0.0 {
                self.completions_in_window as f64 / secs
            } else {
                0.0
            },
            throughput_mb_s: if secs > 0.0 {
                (self.sectors as f64 * f64::from(sector_bytes)) / 1e6 / secs
            } else {
                0.0
            },
            latency: report::Latencies {
                all: LatencyStats::from_histogram(&self.all),
                read: LatencyStats::from_histogram(&self.read),
                write: LatencyStats::from_histogram(&self.write),
            },
            breakdown_ms: BreakdownMs {
                queue: mean_ms(self.sums[0]),
                overhead: mean_ms(self.sums[1]),
                seek: mean_ms(self.sums[2]),
                rotation: mean_ms(self.sums[3]),
                transfer: mean_ms(self.sums[4]),
                switches: mean_ms(self.sums[5]),
            },
            disks,
            ..Report::default()
        }
    }
}
