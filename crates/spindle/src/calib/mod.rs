//! Calibration algorithms (dissertation 3.3.1): pure functions fed request completion
//! timestamps; the driver that issues the requests and reads the clock is
//! `spindle_emu::calibrate`.
//!
//! Times here are `f64` nanoseconds measured by a driver's clock: calibration fits real,
//! noisy timestamps, and never feeds them back into the core's integer-nanosecond time.
//!
//! - [`rotation`]: full rotation time, synchronized then asynchronous refinement (eqs.
//!   3.1–3.2), and the rotational phase of a reference sector.
//! - [`skew`]: surfaces and skews from the penalties of crossing track boundaries.
//! - [`track`]: head tracking at run time (3.3.2): predictions from a calibrated drive,
//!   slack adapted to rotation misses, the host's answer delay; [`accuracy`]: their error
//!   statistics (table 3.2).
//! - robust statistics shared by both ([`median`], [`mad_sigma`]).

pub mod accuracy;
pub mod rotation;
pub mod skew;
pub mod track;

/// Median of `xs` (`NaN` for none).
#[must_use]
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n % 2 {
        1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A standard deviation estimated from the median absolute deviation (1.4826 · MAD): the
/// spread of the typical sample, not dragged up by the rare request the host delayed.
#[must_use]
pub fn mad_sigma(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&dev)
}

/// `x` reduced into `[0, p)`.
#[must_use]
pub fn wrap(x: f64, p: f64) -> f64 {
    assert!(p > 0.0, "period must be positive, got {p}");
    let r = x.rem_euclid(p);
    if r >= p {
        0.0
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_mad() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // One wild sample does not move the robust sigma.
        let s = mad_sigma(&[10.0, 11.0, 9.0, 10.0, 1e9]);
        assert!(s < 2.0, "{s}");
        assert_eq!(wrap(-1.0, 10.0), 9.0);
        assert_eq!(wrap(25.0, 10.0), 5.0);
    }
}
