//! Validation against real drives: replay a DiskSim *validate* trace (every request measured
//! on the real drive) closed-loop through the array and score the simulated service times
//! with DiskSim's demerit figure.
//!
//! # Method (DiskSim 4.0's `runvalid`)
//! 1. [`replay`]: one disk, FCFS, one request outstanding. Request 1 is issued at t = 0,
//!    request i+1 at (simulated completion of i) + think time of i ([`crate::sim::Workload::Replay`]).
//!    A request's simulated service time is its completion minus its issue.
//! 2. Both the measured times (trace field 5) and the simulated ones are binned in DiskSim's
//!    1750 buckets ([`demerit`]); each bucket row is a CDF point.
//! 3. The rms horizontal distance between the two CDFs over the percentiles 0.0001 … 1 is
//!    the figure ([`demerit::rms_ms`]), in ms; lower is better.
//!
//! # Brief overview
//! * [`trace`]: the streaming reader ([`ValidateReader`]) with line-numbered errors.
//! * [`demerit`]: buckets, CDFs, the rms, DiskSim's published CDF CSV, our CDF CSV.
//!
//! Pure: the caller opens files and hands over records; nothing here reads a clock.

pub mod demerit;
pub mod differential;
pub mod trace;

pub use demerit::{cdf_csv, rms_ms, Cdf, DemeritHistogram, DiskSimCdfs};
pub use trace::{BufferOutcome, ValidateReader, ValidateRecord, ValidateTraceError};

use crate::array::{Array, ArrayConfig};
use crate::drive::Drive;
use crate::sched::Policy;
use crate::sim::{self, ReplayRequests, SimError, Window, Workload};
use crate::{Op, Span};
use std::cell::Cell;
use std::sync::Arc;

/// Means of one request class (reads or writes), ms.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ClassMeans {
    pub requests: u64,
    pub measured_mean_ms: f64,
    pub simulated_mean_ms: f64,
}

/// The outcome of replaying one validate trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    pub requests: u64,
    /// Measured service times (trace field 5), binned as DiskSim bins them.
    pub measured: DemeritHistogram,
    /// Simulated service times (completion − issue).
    pub simulated: DemeritHistogram,
    pub measured_mean_ms: f64,
    pub simulated_mean_ms: f64,
    pub reads: ClassMeans,
    pub writes: ClassMeans,
    /// Mean over requests of |simulated − measured|, ms: a per-request figure the CDF
    /// comparison cannot see (it pairs percentiles, not requests).
    pub mean_abs_diff_ms: f64,
    /// DiskSim's demerit figure of simulated vs measured, ms.
    pub rms_ms: f64,
}

impl Validation {
    /// (simulated mean − measured mean) / measured mean, in %.
    pub fn mean_error_pct(&self) -> f64 {
        100.0 * (self.simulated_mean_ms - self.measured_mean_ms) / self.measured_mean_ms
    }

    pub fn measured_cdf(&self) -> Cdf {
        self.measured.cdf().expect("a validation has requests")
    }

    pub fn simulated_cdf(&self) -> Cdf {
        self.simulated.cdf().expect("a validation has requests")
    }

    /// The two CDFs as CSV (`edge_ms,measured_count,measured_cdf,simulated_count,simulated_cdf`).
    pub fn cdf_csv(&self) -> String {
        cdf_csv(&self.measured, &self.simulated)
    }
}

/// A replay that could not run to the end.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// A bad trace line (the message names it) or a request beyond the drive.
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("the trace holds no requests")]
    Empty,
}

/// The array a validation replays on: one disk, FCFS, no noise, rotational phase 0.
pub fn validation_array(drive: Arc<Drive>) -> Array {
    let cfg = ArrayConfig {
        random_phase: false,
        ..ArrayConfig::jbod(1, Policy::Fcfs, 1)
    };
    Array::new(drive, &cfg).expect("one JBOD disk is always a valid array")
}

/// Replays `records` on `drive` (see the module docs) and scores the result. `count` is the
/// number of records when known (for `progress(done, total)`).
pub fn replay<I>(
    drive: Arc<Drive>,
    records: I,
    count: Option<u64>,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Validation, ValidateError>
where
    I: Iterator<Item = Result<ValidateRecord, ValidateTraceError>>,
{
    replay_observed(drive, records, count, progress, &mut |_, _| {})
}

#[derive(Default)]
struct Sums {
    n: u64,
    measured_ms: f64,
    simulated_ns: u128,
}

impl Sums {
    fn add(&mut self, measured_ms: f64, simulated: Span) {
        self.n += 1;
        self.measured_ms += measured_ms;
        self.simulated_ns += u128::from(simulated.0);
    }

    fn means(&self) -> ClassMeans {
        let n = self.n.max(1) as f64;
        ClassMeans {
            requests: self.n,
            measured_mean_ms: self.measured_ms / n,
            simulated_mean_ms: self.simulated_ns as f64 / n / 1e6,
        }
    }
}

/// [`replay`], also handing each request and its simulated service time to `on_request`,
/// in trace order.
pub fn replay_observed<I>(
    drive: Arc<Drive>,
    records: I,
    count: Option<u64>,
    progress: &mut dyn FnMut(u64, Option<u64>),
    on_request: &mut dyn FnMut(&ValidateRecord, Span),
) -> Result<Validation, ValidateError>
where
    I: Iterator<Item = Result<ValidateRecord, ValidateTraceError>>,
{
    let sector_bytes = drive.geometry().sector_bytes();
    let array = validation_array(drive);
    // One request is outstanding at a time: the record being served waits here.
    let pending: Cell<Option<ValidateRecord>> = Cell::new(None);
    let requests: ReplayRequests<'_> = Box::new(records.map(|r| {
        let r = r.map_err(|e| e.to_string())?;
        assert!(pending.get().is_none(), "one request outstanding");
        pending.set(Some(r));
        Ok(r.replay_request(sector_bytes))
    }));
    let mut measured = DemeritHistogram::new();
    let mut simulated = DemeritHistogram::new();
    let (mut all, mut reads, mut writes) = (Sums::default(), Sums::default(), Sums::default());
    let mut abs_diff_ms = 0.0f64;
    sim::run_observed(
        array,
        Workload::Replay { requests, count },
        Window::default(),
        progress,
        &mut |c| {
            let r = pending
                .take()
                .expect("a completion answers the pending record");
            assert_eq!(r.op, c.op, "the completion answers the pending record");
            let service = c.latency();
            measured.add_ms_f64(r.measured_ms());
            simulated.add_span(service);
            all.add(r.measured_ms(), service);
            match r.op {
                Op::Read => reads.add(r.measured_ms(), service),
                Op::Write => writes.add(r.measured_ms(), service),
            }
            abs_diff_ms += (service.as_ms_f64() - r.measured_ms()).abs();
            on_request(&r, service);
        },
    )?;
    assert!(pending.get().is_none(), "every record was answered");
    if all.n == 0 {
        return Err(ValidateError::Empty);
    }
    assert_eq!(measured.total(), simulated.total());
    let rms = rms_ms(
        &simulated.cdf().expect("requests were counted"),
        &measured.cdf().expect("requests were counted"),
    );
    let means = all.means();
    Ok(Validation {
        requests: all.n,
        measured,
        simulated,
        measured_mean_ms: means.measured_mean_ms,
        simulated_mean_ms: means.simulated_mean_ms,
        reads: reads.means(),
        writes: writes.means(),
        mean_abs_diff_ms: abs_diff_ms / all.n as f64,
        rms_ms: rms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::builtin_drive;

    fn drive() -> Arc<Drive> {
        Arc::new(builtin_drive("cheetah9lp").expect("built-in drive"))
    }

    #[test]
    fn each_request_is_issued_its_think_time_after_the_previous_completes() {
        let text = "R Hit 1000 8 5000 2000\nW Hit 900000 8 6000 0\nR Hit 5 1 4000 1000\n";
        let mut seen = Vec::new();
        let v = replay_observed(
            drive(),
            ValidateReader::new(text.as_bytes()),
            Some(3),
            &mut |_, _| {},
            &mut |r, s| seen.push((r.lbn, s)),
        )
        .unwrap();
        assert_eq!(v.requests, 3);
        assert_eq!(
            seen.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1000, 900000, 5]
        );
        assert!(seen.iter().all(|&(_, s)| s > Span::ZERO));
        assert_eq!(v.reads.requests + v.writes.requests, 3);
        assert!((v.measured_mean_ms - 5.0).abs() < 1e-12);
        // The same replay again gives the very same result.
        let again = replay(
            drive(),
            ValidateReader::new(text.as_bytes()),
            None,
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(v, again);
    }

    #[test]
    fn replay_workload_issues_think_time_after_each_completion() {
        let thinks = [Span(2_000_000), Span(0), Span(7), Span(1_000_000)];
        let reqs: Vec<_> = thinks
            .iter()
            .enumerate()
            .map(|(i, &think)| {
                Ok(sim::ReplayRequest {
                    op: if i % 2 == 0 { Op::Read } else { Op::Write },
                    lba: 1000 * i as u64,
                    sectors: 8,
                    think,
                })
            })
            .collect();
        let mut done = Vec::new();
        let report = sim::run_observed(
            validation_array(drive()),
            Workload::Replay {
                requests: Box::new(reqs.into_iter()),
                count: Some(4),
            },
            Window::default(),
            &mut |_, _| {},
            &mut |c| done.push(*c),
        )
        .unwrap();
        assert_eq!(report.requests, 4);
        assert_eq!(done[0].arrival, crate::Nanos::ZERO);
        for i in 0..3 {
            assert_eq!(done[i].id, i as u64);
            assert_eq!(done[i + 1].arrival, done[i].done + thinks[i]);
        }
    }

    #[test]
    fn a_bad_line_stops_the_replay_naming_the_line() {
        let text = "R Hit 1000 8 5000 2000\nR Hit x 8 5000 2000\n";
        let err = replay(
            drive(),
            ValidateReader::new(text.as_bytes()),
            None,
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("line 2: field 3 (lbn)"), "{err}");
    }

    #[test]
    fn an_empty_trace_is_an_error() {
        let err = replay(
            drive(),
            ValidateReader::new(&b"\n"[..]),
            None,
            &mut |_, _| {},
        );
        assert!(matches!(err, Err(ValidateError::Empty)));
    }
}
