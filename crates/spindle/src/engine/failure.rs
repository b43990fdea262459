//! A disk failure, as every redundant controller takes it.

use super::{Action, Outbox};
use crate::Nanos;

/// Data one rebuild step copies (at most): the mirrored and eager-writing arrays'.
pub const REBUILD_STEP_BYTES: u64 = 256 * 1024;

/// Steps in flight at once: a step's read from a survivor overlaps the previous step's
/// write to the spare (they are on different disks), as a rebuild streams.
pub const REBUILD_STEPS_IN_FLIGHT: usize = 2;

/// A disk failure (experiment keys `array.failed_disk`, `array.fail_at_ms`,
/// `array.rebuild`, `array.rebuild_rate_mb_s`).
#[derive(Clone, Debug, PartialEq)]
pub struct FailureConfig {
    pub disk: usize,
    pub at: Nanos,
    /// Rebuild onto a spare; otherwise the array runs degraded to the end.
    pub rebuild: bool,
    /// The rebuild's pace, bytes of the spare per second; `None`: as fast as the disks
    /// allow (one step at a time).
    pub rate_bytes_per_s: Option<f64>,
}

impl FailureConfig {
    /// Virtual time one rebuild step of `step_bytes` of the spare takes at the configured
    /// pace; `None` without one.
    pub fn step_ns(&self, step_bytes: u64) -> Result<Option<u64>, String> {
        match self.rate_bytes_per_s {
            None => Ok(None),
            Some(r) if r.is_finite() && r >= 1e3 => {
                Ok(Some(((step_bytes as f64 / r) * 1e9).round().max(1.0) as u64))
            }
            Some(r) => Err(format!(
                "the rebuild rate must be at least 1000 bytes/s, got {r}"
            )),
        }
    }
}

/// When a paced rebuild that `began` may start the step beginning `issued` units into the
/// data, each step of `step` units taking `step_ns` at the configured rate.
pub fn rebuild_step_due(began: Nanos, step_ns: u64, issued: u64, step: u64) -> Nanos {
    assert!(step > 0, "a rebuild step moves data");
    let paced = u128::from(step_ns) * u128::from(issued) / u128::from(step);
    Nanos(
        began
            .0
            .saturating_add(u64::try_from(paced).unwrap_or(u64::MAX)),
    )
}

/// When a configured failure happens, as a controller sees it: before the failure, the
/// first event asks for a timer at the failure's instant.
#[derive(Clone, Debug)]
pub struct FailureClock {
    at: Nanos,
    failed_at: Option<Nanos>,
    wake_asked: bool,
}

impl FailureClock {
    pub fn new(at: Nanos) -> FailureClock {
        FailureClock {
            at,
            failed_at: None,
            wake_asked: false,
        }
    }

    /// When the disk failed; `None` before.
    pub fn failed_at(&self) -> Option<Nanos> {
        self.failed_at
    }

    /// Before any event at `now`: true exactly once, when the failure happens; until then
    /// a timer for it is asked of `out` (once).
    pub fn fails_now(&mut self, now: Nanos, out: &mut Outbox) -> bool {
        if self.failed_at.is_some() {
            return false;
        }
        if now < self.at {
            if !self.wake_asked {
                self.wake_asked = true;
                out.push(Action::Wake { at: self.at });
            }
            return false;
        }
        self.failed_at = Some(now);
        true
    }
}
