//! Full rotation time from completion timestamps (dissertation 3.3.1, "Measuring Full
//! Rotational Time").
//!
//! 1. **Synchronized**: back-to-back reads of one reference sector complete one revolution
//!    apart; a line through their completion times gives a first period `R(0)` and the
//!    completion-time noise.
//! 2. **Asynchronous**: two phase anchors (short synchronized bursts) `N` revolutions apart
//!    give `R(k+1) = span / round(span / R(k))`, exact in the count as long as the count's
//!    error `N·Δ(k)` stays below `α·R(k)` (eq. 3.1: `N(k+1) = α·R(k)/Δ(k)`), and a bound
//!    `Δ(k+1) = γ/N(k+1)` (eq. 3.2) where `γ` bounds the anchors' timing error.
//!
//! All times are `f64` nanoseconds of the driver's clock.

use super::{mad_sigma, median, wrap};

/// A rotation period and the bound on its error, ns.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Estimate {
    pub period_ns: f64,
    pub delta_ns: f64,
}

/// What the synchronized burst gives.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SyncFit {
    pub estimate: Estimate,
    /// Completion time of revolution 0 on the fitted line (the reference sector's phase).
    pub anchor_ns: f64,
    /// Noise of one completion time (robust standard deviation of the line's residuals).
    pub sigma_ns: f64,
    /// Bound on one completion's timing error: the largest residual kept.
    pub gamma_ns: f64,
    /// Noise of the interval between two completions a revolution apart (robust standard
    /// deviation): what a timing difference sees, with the host's slow drifts cancelled.
    pub interval_sigma_ns: f64,
    /// Completions the fit rejected as delayed by the host (residual over 6 sigma).
    pub outliers: usize,
}

/// Why the rotation could not be measured.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RotationError {
    #[error("{got} completions are too few to fit a rotation (need {need})")]
    TooFew { got: usize, need: usize },
    #[error(
        "back-to-back reads of one sector do not complete once per revolution: only {agree} of \
         {total} intervals are within 3 % of their mode {median_ms:.4} ms; completion noise \
         sigma {sigma_us:.1} µs (from the intervals' spread; too high, or the target is not a \
         rotating disk)"
    )]
    NoPeriod {
        agree: usize,
        total: usize,
        median_ms: f64,
        sigma_us: f64,
    },
    #[error(
        "back-to-back reads of one sector complete every {period_ms:.4} ms (interval noise sigma \
         {sigma_us:.1} µs): no rotating disk turns in that time (a cache or a solid-state \
         device answers)"
    )]
    NotRotating { period_ms: f64, sigma_us: f64 },
    #[error(
        "the revolution count between anchors {span_ms:.3} ms apart is ambiguous: {rotations:.3} \
         revolutions of {period_ms:.5} ms is {off:.2} of a revolution from a whole number \
         (timing noise or rotation drift larger than the estimate's bound)"
    )]
    Ambiguous {
        span_ms: f64,
        rotations: f64,
        period_ms: f64,
        off: f64,
    },
}

/// Least-squares line `c = a + k·p` through `(k, c)`; returns `(a, p)`.
fn fit_line(pts: &[(f64, f64)]) -> (f64, f64) {
    assert!(pts.len() >= 2, "a line needs two points");
    let n = pts.len() as f64;
    let (sk, sc) = pts
        .iter()
        .fold((0.0, 0.0), |(a, b), &(k, c)| (a + k, b + c));
    let (mk, mc) = (sk / n, sc / n);
    let (mut num, mut den) = (0.0, 0.0);
    for &(k, c) in pts {
        num += (k - mk) * (c - mc);
        den += (k - mk) * (k - mk);
    }
    assert!(den > 0.0, "the points span more than one revolution");
    let p = num / den;
    (mc - p * mk, p)
}

/// The synchronized measurement: `completions` of back-to-back reads of one sector, ns.
pub fn synchronized(completions: &[f64]) -> Result<SyncFit, RotationError> {
    const NEED: usize = 8;
    if completions.len() < NEED {
        return Err(RotationError::TooFew {
            got: completions.len(),
            need: NEED,
        });
    }
    // The period is the densest cluster of intervals: a reply the host delayed makes one
    // interval long and the next short, and a loaded host delays many.
    let diffs: Vec<f64> = completions.windows(2).map(|w| w[1] - w[0]).collect();
    let near = |d: f64| diffs.iter().filter(|x| (*x - d).abs() < 0.03 * d).count();
    let mode = diffs
        .iter()
        .copied()
        .filter(|d| *d > 0.0)
        .max_by_key(|&d| near(d))
        .unwrap_or(0.0);
    let cluster: Vec<f64> = diffs
        .iter()
        .copied()
        .filter(|x| (x - mode).abs() < 0.03 * mode)
        .collect();
    let m = median(&cluster);
    let agree = cluster.len();
    if m.is_nan() || m <= 0.0 || agree * 5 < diffs.len() * 2 {
        return Err(RotationError::NoPeriod {
            agree,
            total: diffs.len(),
            median_ms: m / 1e6,
            sigma_us: mad_sigma(&diffs) / std::f64::consts::SQRT_2 / 1e3,
        });
    }
    // 1 ms to 100 ms a revolution: 600 to 60,000 rpm.
    if !(1e6..=1e8).contains(&m) {
        return Err(RotationError::NotRotating {
            period_ms: m / 1e6,
            sigma_us: mad_sigma(&cluster) / 1e3,
        });
    }
    let c0 = center(completions, m);
    let mut pts: Vec<(f64, f64)> = completions
        .iter()
        .map(|&c| (((c - c0) / m).round(), c - c0))
        .collect();
    let (a, p) = fit_line(&pts);
    let resid: Vec<f64> = pts.iter().map(|&(k, c)| c - a - k * p).collect();
    let sigma = mad_sigma(&resid).max(1.0);
    let before = pts.len();
    let mut i = 0;
    pts.retain(|_| {
        i += 1;
        resid[i - 1].abs() <= 6.0 * sigma
    });
    // The outliers dropped may leave too little: points less than a revolution apart give
    // no period (an error, not a panic: a noisy target can do this).
    let span = match (pts.first(), pts.last()) {
        (Some(f), Some(l)) if l.0 - f.0 >= 1.0 => l.0 - f.0,
        _ => {
            return Err(RotationError::NoPeriod {
                agree: pts.len(),
                total: diffs.len(),
                median_ms: m / 1e6,
                sigma_us: sigma / 1e3,
            })
        }
    };
    let (a, p) = fit_line(&pts);
    let gamma = pts
        .iter()
        .map(|&(k, c)| (c - a - k * p).abs())
        .fold(0.0, f64::max)
        .max(sigma);
    Ok(SyncFit {
        // Both ends of the span may be off by gamma.
        estimate: Estimate {
            period_ns: p,
            delta_ns: 2.0 * gamma / span,
        },
        anchor_ns: c0 + a,
        sigma_ns: sigma,
        gamma_ns: gamma,
        interval_sigma_ns: mad_sigma(&cluster).max(1.0),
        outliers: before - pts.len(),
    })
}

/// The completion in `times` with the most others at a whole number of periods (within
/// a fiftieth of a revolution) from it: a point of the true phase, not one the host
/// delayed.
#[must_use]
pub fn center(times: &[f64], period_ns: f64) -> f64 {
    assert!(!times.is_empty(), "a centre needs times");
    assert!(period_ns > 0.0, "a positive period");
    let off = |a: f64, b: f64| {
        let x = wrap(a - b, period_ns);
        x.min(period_ns - x)
    };
    let score = |c: f64| {
        times
            .iter()
            .filter(|&&t| off(t, c) < period_ns / 50.0)
            .count()
    };
    times
        .iter()
        .copied()
        .max_by_key(|&c| score(c))
        .expect("non-empty")
}

/// The phase anchor of a short synchronized burst, given the period: the median
/// completion time brought back to the burst's central revolution, and its robust sigma.
#[must_use]
pub fn anchor(completions: &[f64], period_ns: f64) -> (f64, f64) {
    assert!(!completions.is_empty(), "an anchor needs completions");
    assert!(period_ns > 0.0, "a positive period");
    let c0 = center(completions, period_ns);
    let resid: Vec<f64> = completions
        .iter()
        .map(|&c| {
            let k = ((c - c0) / period_ns).round();
            c - c0 - k * period_ns
        })
        .collect();
    (c0 + median(&resid), mad_sigma(&resid))
}

/// Eq. 3.1: how many revolutions the next iteration may let pass so that the count's error
/// stays below `alpha` of a revolution.
#[must_use]
pub fn next_rotations(est: Estimate, alpha: f64) -> f64 {
    assert!(est.delta_ns > 0.0, "a bound is positive");
    assert!(alpha > 0.0 && alpha < 0.5, "alpha must be within (0, 0.5)");
    alpha * est.period_ns / est.delta_ns
}

/// One asynchronous iteration: anchors `a` and `b` (ns), each off by at most `gamma_ns`.
/// Returns the new estimate (eq. 3.2) and the whole revolutions counted.
pub fn refine(
    est: Estimate,
    a: f64,
    b: f64,
    gamma_ns: f64,
) -> Result<(Estimate, u64), RotationError> {
    assert!(b > a, "anchors in order");
    let span = b - a;
    let rotations = span / est.period_ns;
    let n = rotations.round();
    let off = (rotations - n).abs();
    // The count is safe while the predicted error (n·Δ plus both anchors' noise) is well
    // inside half a revolution; past 0.35 a neighbour count is as likely.
    if n < 1.0 || off > 0.35 {
        return Err(RotationError::Ambiguous {
            span_ms: span / 1e6,
            rotations,
            period_ms: est.period_ns / 1e6,
            off,
        });
    }
    let new = Estimate {
        period_ns: span / n,
        delta_ns: (2.0 * gamma_ns / n).min(est.delta_ns),
    };
    Ok((new, n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Completions of a sector at `phase + k·period` with uniform noise of ±`noise`.
    fn burst(r: &mut rand_pcg::Pcg64Mcg, start_k: u64, n: usize, noise: f64) -> Vec<f64> {
        const P: f64 = 5_973_121.0;
        (0..n as u64)
            .map(|i| 1e6 + (start_k + i) as f64 * P + r.gen_range(-noise..noise))
            .collect()
    }

    #[test]
    fn synchronized_then_asynchronous_converges_within_its_bound() {
        const P: f64 = 5_973_121.0;
        let mut r = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut c = burst(&mut r, 0, 64, 20_000.0);
        c[10] += 3e6; // a request the host delayed
        let fit = synchronized(&c).unwrap();
        assert_eq!(fit.outliers, 1);
        assert!((fit.estimate.period_ns - P).abs() <= fit.estimate.delta_ns);
        let mut est = fit.estimate;
        let mut k = 64u64;
        for _ in 0..4 {
            k += next_rotations(est, 0.2) as u64;
            let (b, _) = anchor(&burst(&mut r, k, 8, 20_000.0), est.period_ns);
            let (next, n) = refine(est, fit.anchor_ns, b, fit.gamma_ns).unwrap();
            // Anchors sit on a burst's densest completion, not necessarily its first.
            assert_eq!(n as f64, ((b - fit.anchor_ns) / P).round());
            assert!(n >= k - 64 && n <= k + 8, "{n} revolutions, burst at {k}");
            assert!((next.period_ns - P).abs() <= next.delta_ns, "{next:?}");
            est = next;
        }
        assert!(est.delta_ns < 1.0, "{est:?}");
    }

    #[test]
    fn noise_of_a_revolution_is_refused() {
        let mut r = rand_pcg::Pcg64Mcg::seed_from_u64(2);
        let c = burst(&mut r, 0, 64, 4e6);
        assert!(matches!(
            synchronized(&c),
            Err(RotationError::NoPeriod { .. })
        ));
        let est = Estimate {
            period_ns: 5_973_121.0 * 1.002,
            delta_ns: 10.0,
        };
        let e = refine(est, 0.0, 5_973_121.0 * 250.0, 100.0).unwrap_err();
        assert!(matches!(e, RotationError::Ambiguous { .. }), "{e}");
    }
}
