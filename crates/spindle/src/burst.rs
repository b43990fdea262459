//! Burst tolerance (Varma & Jacobson, ISCA '95, IV.A item 4 and fig. 11): the shortest
//! burst that overflows the write cache. The array is brought to a steady state at the
//! process-group workload's background rate; then every group's rate is multiplied by the
//! burst factor (the paper: 3) until the write cache overflows; the burst's length is the
//! time from its start to the first overflow.
//!
//! The paper turns the burst off at the overflow and repeats the cycle in one run; here each
//! cycle is its own run with its own seed (the experiment's seed + cycle), which samples the
//! same steady state independently. The overflow is found in the run's time series, so a
//! length is known to within the sampling interval (`resolution`).

use crate::config::{ConfigError, Experiment, OpenTrace, ReadFile, WorkloadKind};
use serde::Serialize;

/// How to measure.
#[derive(Copy, Clone, Debug)]
pub struct BurstSpec {
    /// Seconds of background load before the burst.
    pub start_s: f64,
    /// The longest burst tried: a cycle with no overflow by then is censored.
    pub horizon_s: f64,
    pub cycles: u32,
    /// The time series' sampling interval (ms): the lengths' resolution.
    pub resolution_ms: f64,
}

impl Default for BurstSpec {
    fn default() -> BurstSpec {
        BurstSpec {
            start_s: 30.0,
            horizon_s: 60.0,
            cycles: 5,
            resolution_ms: 10.0,
        }
    }
}

/// One configuration's burst lengths.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BurstRow {
    pub label: String,
    /// Per cycle: seconds from the burst's start to the first overflow, or null when the
    /// cache did not overflow within the horizon.
    pub lengths_s: Vec<Option<f64>>,
    /// Mean over the cycles that overflowed; null when none did.
    pub mean_s: Option<f64>,
    /// Cycles that overflowed before the burst (the background load alone overflows).
    pub overflowed_before: u32,
}

/// Runs the burst-tolerance measurement of experiment `text` (with `sets`) for each of its
/// configurations.
pub fn burst_tolerance(
    text: &str,
    origin: &str,
    sets: &[String],
    spec: BurstSpec,
    read_file: ReadFile<'_>,
    open_trace: OpenTrace<'_>,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<Vec<BurstRow>, ConfigError> {
    let exp = Experiment::parse(text, origin, sets)?;
    if exp.spec.workload.kind != WorkloadKind::Groups {
        return Err(exp.error(
            "workload.kind",
            "burst tolerance needs the process-group workload (kind = \"groups\")",
        ));
    }
    let rate = exp
        .spec
        .workload
        .rate_iops
        .ok_or_else(|| exp.error("workload.rate_iops", "the background rate is needed"))?;
    let factor = exp
        .spec
        .workload
        .groups
        .as_ref()
        .and_then(|g| g.burst_factor)
        .unwrap_or(3.0);
    if exp
        .spec
        .workload
        .groups
        .as_ref()
        .is_some_and(|g| g.burst_period_s.is_some())
    {
        return Err(exp.error(
            "workload.groups.burst_period_s",
            "burst tolerance injects one burst per cycle: remove the periodic bursts",
        ));
    }
    if spec.cycles == 0 {
        return Err(exp.error("run", "burst tolerance needs at least one cycle"));
    }
    for (key, v, min) in [
        ("burst start", spec.start_s, 0.0),
        ("burst horizon", spec.horizon_s, 0.0),
        ("resolution", spec.resolution_ms, 0.0),
    ] {
        if !(v.is_finite() && v > min) {
            return Err(exp.error("run", format!("the {key} must be > 0, got {v}")));
        }
    }
    // Enough requests to cover the background and the longest burst (plus 5 % for the
    // arrival process's spread).
    let requests = ((rate * spec.start_s + rate * factor * spec.horizon_s) * 1.05).ceil() as u64;
    let mut rows: Vec<BurstRow> = Vec::new();
    for cycle in 0..spec.cycles {
        progress(cycle, spec.cycles);
        let mut s = sets.to_vec();
        s.extend([
            format!("seed={}", exp.spec.seed + u64::from(cycle)),
            format!("workload.groups.burst_start_s={}", spec.start_s),
            format!("workload.groups.burst_length_s={}", spec.horizon_s * 2.0),
            format!("run.series_ms={}", spec.resolution_ms),
            format!("run.requests={requests}"),
            "run.warmup_requests=0".to_string(),
            "run.cooldown_requests=0".to_string(),
        ]);
        let report = Experiment::parse(text, origin, &s)?.run(
            read_file,
            open_trace,
            &mut |_, _, _, _| {},
        )?;
        for (i, r) in report.rows().enumerate() {
            if rows.len() <= i {
                rows.push(BurstRow {
                    label: r.label.clone(),
                    lengths_s: Vec::new(),
                    mean_s: None,
                    overflowed_before: 0,
                });
            }
            let overflows_at = |t: f64| {
                r.series
                    .iter()
                    .take_while(|p| p.t_s <= t)
                    .last()
                    .and_then(|p| p.overflows)
                    .unwrap_or(0)
            };
            if r.series.iter().all(|p| p.overflows.is_none()) {
                return Err(exp.error(
                    "array",
                    format!("{}: burst tolerance needs a write cache", r.label),
                ));
            }
            let before = overflows_at(spec.start_s);
            if before > 0 {
                rows[i].overflowed_before += 1;
            }
            let first = r
                .series
                .iter()
                .filter(|p| p.t_s > spec.start_s && p.t_s <= spec.start_s + spec.horizon_s)
                .find(|p| p.overflows.unwrap_or(0) > before)
                .map(|p| p.t_s - spec.start_s);
            rows[i].lengths_s.push(first);
        }
    }
    for r in &mut rows {
        let got: Vec<f64> = r.lengths_s.iter().flatten().copied().collect();
        r.mean_s = (!got.is_empty()).then(|| got.iter().sum::<f64>() / got.len() as f64);
    }
    Ok(rows)
}
