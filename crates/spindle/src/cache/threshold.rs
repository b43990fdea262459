//! Occupancy thresholds: the high/low mark's hysteresis gate (paper II.C), the ideal linear
//! threshold (II.D) and the stepped threshold of the band/region approximation (II.E,
//! Table I). Occupancy is the write cache's instantaneous fill, a fraction in `[0, 1]`.

use crate::Span;
use serde::{Deserialize, Serialize};

/// Asserts that `occupancy` is a fraction; a value outside `[0, 1]` is a controller bug.
pub(crate) fn check_occupancy(occupancy: f64) {
    assert!(
        occupancy.is_finite(),
        "occupancy must be finite, got {occupancy}"
    );
    assert!(
        (0.0..=1.0).contains(&occupancy),
        "occupancy must be within [0, 1], got {occupancy}"
    );
}

/// The high/low mark's on/off state, array-wide: destages are "turned on when [the cache
/// occupancy] increases over a high mark" and "disabled when the cache occupancy drops
/// below a low mark" (II.C); between the marks the state does not change (hysteresis).
///
/// The controller owns one gate for the whole array (occupancy is array-wide), calls
/// [`HighLowGate::observe`] at every occupancy change — so a rise over the high mark between
/// two picks is not missed — and passes [`HighLowGate::level`] to every disk's pick.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct HighLowGate {
    high: f64,
    low: f64,
    on: bool,
    occupancy: f64,
}

impl HighLowGate {
    /// The paper's marks: high 70 %, low 30 % of the cache capacity.
    pub const HIGH_DEFAULT: f64 = 0.7;
    pub const LOW_DEFAULT: f64 = 0.3;

    /// A gate that is off, at an empty cache. Panics unless `0 <= low <= high <= 1`.
    pub fn new(high: f64, low: f64) -> HighLowGate {
        assert!(
            (0.0..=1.0).contains(&high),
            "high mark must be within [0, 1], got {high}"
        );
        assert!(
            (0.0..=high).contains(&low),
            "low mark must be within [0, high = {high}], got {low}"
        );
        HighLowGate {
            high,
            low,
            on: false,
            occupancy: 0.0,
        }
    }

    /// Records the occupancy after a change and returns whether destaging is on.
    pub fn observe(&mut self, occupancy: f64) -> bool {
        check_occupancy(occupancy);
        if occupancy > self.high {
            self.on = true;
        } else if occupancy < self.low {
            self.on = false;
        }
        self.occupancy = occupancy;
        assert!(!(self.on && occupancy < self.low), "on below the low mark");
        self.on
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    pub fn occupancy(&self) -> f64 {
        self.occupancy
    }

    /// The level a pick needs: the last observed occupancy and the gate's state.
    pub fn level(&self) -> super::CacheLevel {
        super::CacheLevel {
            occupancy: self.occupancy,
            high_low_on: self.on,
        }
    }
}

impl Default for HighLowGate {
    fn default() -> HighLowGate {
        HighLowGate::new(HighLowGate::HIGH_DEFAULT, HighLowGate::LOW_DEFAULT)
    }
}

/// The ideal linear threshold (II.D): the largest destage cost (predicted positioning time)
/// allowed at occupancy `w` is `period · (at_empty_revs + (at_full_revs − at_empty_revs)·w)`.
///
/// The paper gives no slope for the ideal algorithm. The default is read off Table I, which
/// allows 1 region time (1/3 revolution with 3 regions per band) at the lowest step and 8
/// (8/3 revolutions) at the highest: 1/3 revolution at an empty cache, 8/3 at a full one.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearThreshold {
    pub at_empty_revs: f64,
    pub at_full_revs: f64,
}

impl Default for LinearThreshold {
    fn default() -> LinearThreshold {
        LinearThreshold {
            at_empty_revs: 1.0 / 3.0,
            at_full_revs: 8.0 / 3.0,
        }
    }
}

impl LinearThreshold {
    /// The largest cost allowed at `occupancy` on a drive turning once per `period`.
    pub fn threshold(&self, period: Span, occupancy: f64) -> Span {
        check_occupancy(occupancy);
        let revs = self.at_empty_revs + (self.at_full_revs - self.at_empty_revs) * occupancy;
        assert!(revs >= 0.0, "a threshold is never negative, got {revs}");
        Span((period.0 as f64 * revs).round() as u64)
    }
}

/// Table I: the stepped threshold, as (upper end of the occupancy range, largest destage
/// cost in region times). Step k (1..=8) covers occupancies in `[(k−1)/8, k/8)` and allows
/// k region times — for 3 regions per band, k/3 of a revolution.
pub fn table_i() -> Vec<(f64, u32)> {
    (1..=8u32).map(|k| (f64::from(k) / 8.0, k)).collect()
}

/// The stepped threshold `Th(w)`: the cost of the first step whose range (`[previous upper
/// end, upper end)`) holds `occupancy`; the last step covers everything above it.
pub(crate) fn stepped(steps: &[(f64, u32)], occupancy: f64) -> u32 {
    check_occupancy(occupancy);
    assert!(!steps.is_empty(), "a stepped threshold has steps");
    steps
        .iter()
        .find(|(upper, _)| occupancy < *upper)
        .unwrap_or(&steps[steps.len() - 1])
        .1
}

/// Checks a stepped threshold: upper ends increasing within (0, 1], costs non-decreasing.
pub(crate) fn check_steps(steps: &[(f64, u32)]) -> Result<(), String> {
    if steps.is_empty() {
        return Err("needs at least one step".into());
    }
    let mut prev = (0.0, 0u32);
    for (i, &(upper, cost)) in steps.iter().enumerate() {
        if !(upper.is_finite() && upper > prev.0 && upper <= 1.0) {
            return Err(format!(
                "step {i}: occupancy upper end must be within ({}, 1], got {upper}",
                prev.0
            ));
        }
        if cost < prev.1 {
            return Err(format!(
                "step {i}: cost must not fall with occupancy ({} before), got {cost}",
                prev.1
            ));
        }
        prev = (upper, cost);
    }
    Ok(())
}
