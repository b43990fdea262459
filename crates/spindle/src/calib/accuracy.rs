//! Prediction-error statistics of head tracking, as the dissertation's table 3.2 gives
//! them: rotation misses, mean and standard deviation of the error, mean access time and
//! the demerit (Ruemmler and Wilkes: the root mean square of the horizontal distance
//! between the predicted and the measured service-time distributions) over it; with the
//! spread of |error| and the per-request relative error besides.
//!
//! Inputs are (measured, predicted) service times in ns, one pair per request; error is
//! measured − predicted (positive: the drive answered later than predicted).

use serde::{Deserialize, Serialize};

/// The statistics of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    pub requests: u64,
    /// Answers a revolution (or more) later than predicted, and a revolution sooner.
    pub misses: u64,
    pub early: u64,
    pub mean_error_us: f64,
    pub stdev_error_us: f64,
    pub mean_abs_error_us: f64,
    pub abs_error_p50_us: f64,
    pub abs_error_p90_us: f64,
    pub abs_error_p99_us: f64,
    pub abs_error_max_us: f64,
    /// Shares of requests whose |error| is within 100 and 200 µs (the dissertation's
    /// calibration bounds, 3.3.1).
    pub within_100us: f64,
    pub within_200us: f64,
    pub mean_service_us: f64,
    pub mean_predicted_us: f64,
    pub demerit_us: f64,
    /// Demerit over the mean measured service time (table 3.2: 1.9 %).
    pub demerit_share: f64,
    /// Mean and median over requests of |error| / measured service time.
    pub mean_abs_rel_error: f64,
    pub median_abs_rel_error: f64,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "a quantile of something");
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i]
}

/// The statistics of `pairs` (measured, predicted; ns) with the tracker's verdict counts.
#[must_use]
pub fn accuracy(pairs: &[(f64, f64)], misses: u64, early: u64) -> Accuracy {
    assert!(!pairs.is_empty(), "statistics of at least one request");
    let n = pairs.len() as f64;
    let err: Vec<f64> = pairs.iter().map(|(m, p)| m - p).collect();
    let mean = err.iter().sum::<f64>() / n;
    let var = err.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / n;
    let mut abs: Vec<f64> = err.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let mut rel: Vec<f64> = pairs.iter().map(|(m, p)| (m - p).abs() / m).collect();
    rel.sort_by(f64::total_cmp);
    let mut measured: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let mut predicted: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    measured.sort_by(f64::total_cmp);
    predicted.sort_by(f64::total_cmp);
    // Equal sample counts: the horizontal distance between the two CDFs at each quantile
    // is the difference of the order statistics.
    let demerit = (measured
        .iter()
        .zip(&predicted)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let mean_service = measured.iter().sum::<f64>() / n;
    let share = |lim: f64| abs.iter().filter(|&&e| e <= lim).count() as f64 / n;
    Accuracy {
        requests: pairs.len() as u64,
        misses,
        early,
        mean_error_us: mean / 1e3,
        stdev_error_us: var.sqrt() / 1e3,
        mean_abs_error_us: abs.iter().sum::<f64>() / n / 1e3,
        abs_error_p50_us: quantile(&abs, 0.5) / 1e3,
        abs_error_p90_us: quantile(&abs, 0.9) / 1e3,
        abs_error_p99_us: quantile(&abs, 0.99) / 1e3,
        abs_error_max_us: abs[abs.len() - 1] / 1e3,
        within_100us: share(100e3),
        within_200us: share(200e3),
        mean_service_us: mean_service / 1e3,
        mean_predicted_us: predicted.iter().sum::<f64>() / n / 1e3,
        demerit_us: demerit / 1e3,
        demerit_share: demerit / mean_service,
        mean_abs_rel_error: rel.iter().sum::<f64>() / n,
        median_abs_rel_error: quantile(&rel, 0.5),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_known_set() {
        // Three exact, one a revolution (6 ms) late.
        let pairs = [
            (8e6, 8e6),
            (5e6, 5e6),
            (10e6, 10e6),
            (13e6, 7e6), // predicted 7 ms, answered a revolution later
        ];
        let a = accuracy(&pairs, 1, 0);
        assert_eq!(a.requests, 4);
        assert!((a.mean_error_us - 1500.0).abs() < 1e-9);
        assert!((a.within_100us - 0.75).abs() < 1e-12);
        assert!((a.mean_service_us - 9000.0).abs() < 1e-9);
        assert!((a.mean_abs_rel_error - (6.0 / 13.0) / 4.0).abs() < 1e-12);
        // Sorted measured 5, 8, 10, 13; predicted 5, 7, 8, 10: distances 0, 1, 2, 3 ms.
        let d = ((0.0 + 1.0 + 4.0 + 9.0) / 4.0f64).sqrt() * 1e3;
        assert!((a.demerit_us - d).abs() < 1e-6, "{}", a.demerit_us);
        assert!((a.demerit_share - d / 9000.0).abs() < 1e-12);
    }
}
