//! Virtual time: `Nanos` (an instant) and `Span` (a duration), both integer nanoseconds.
//!
//! No floating-point time is kept anywhere in the core; conversions from milliseconds in
//! configuration files happen once, at load, through [`Span::from_ms_f64`].

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of virtual time in nanoseconds since the start of the run.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Nanos(pub u64);

/// A duration in nanoseconds.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Span(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// The span from `earlier` to `self`; panics if `earlier` is later (a driver bug).
    #[inline]
    pub fn since(self, earlier: Nanos) -> Span {
        assert!(
            self >= earlier,
            "time went backwards: {self:?} < {earlier:?}"
        );
        Span(self.0 - earlier.0)
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub fn saturating_since(self, earlier: Nanos) -> Span {
        Span(self.0.saturating_sub(earlier.0))
    }

    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl Span {
    pub const ZERO: Span = Span(0);

    /// Converts milliseconds (as written in drive files) to a span, rounding to the nearest ns.
    /// Negative or non-finite inputs are a caller bug: configuration validation rejects them.
    pub fn from_ms_f64(ms: f64) -> Span {
        assert!(
            ms.is_finite() && ms >= 0.0,
            "span must be finite and >= 0, got {ms} ms"
        );
        Span((ms * 1e6).round() as u64)
    }

    pub fn from_us(us: u64) -> Span {
        Span(us * 1_000)
    }

    pub fn from_ms(ms: u64) -> Span {
        Span(ms * 1_000_000)
    }

    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// `self − other`, or zero when `other` is longer.
    pub fn saturating_sub(self, other: Span) -> Span {
        Span(self.0.saturating_sub(other.0))
    }
}

impl std::ops::Mul<u64> for Span {
    type Output = Span;
    #[inline]
    fn mul(self, k: u64) -> Span {
        Span(self.0 * k)
    }
}

impl Add<Span> for Nanos {
    type Output = Nanos;
    #[inline]
    fn add(self, rhs: Span) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl AddAssign<Span> for Nanos {
    #[inline]
    fn add_assign(&mut self, rhs: Span) {
        self.0 += rhs.0;
    }
}

impl Add for Span {
    type Output = Span;
    #[inline]
    fn add(self, rhs: Span) -> Span {
        Span(self.0 + rhs.0)
    }
}

impl AddAssign for Span {
    #[inline]
    fn add_assign(&mut self, rhs: Span) {
        self.0 += rhs.0;
    }
}

impl Sub for Span {
    type Output = Span;
    #[inline]
    fn sub(self, rhs: Span) -> Span {
        assert!(self >= rhs, "negative span: {self:?} - {rhs:?}");
        Span(self.0 - rhs.0)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.as_ms_f64())
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:.3} ms", self.as_ms_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_round_trip_is_exact_to_the_nanosecond() {
        assert_eq!(Span::from_ms_f64(2.7), Span(2_700_000));
        assert_eq!(Span::from_ms_f64(0.0000004), Span(0));
        assert_eq!(Span::from_ms_f64(0.0000006), Span(1));
    }

    #[test]
    #[should_panic(expected = "time went backwards")]
    fn since_rejects_reversed_instants() {
        let _ = Nanos(5).since(Nanos(6));
    }
}
