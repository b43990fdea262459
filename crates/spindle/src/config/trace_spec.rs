//! The checks of `[workload.trace]` that need no file, each error naming its key: the core
//! makes them before the trace is opened, the CLI's opener uses the parsed values.

use super::TraceSpec;
use crate::workload::trace::{SpeedUp, TraceFormat};

impl TraceSpec {
    /// `speedup` as the replay's exact factor; `Err` names the key and the reason.
    pub fn speedup_factor(&self) -> Result<SpeedUp, (&'static str, String)> {
        let key = "workload.trace.speedup";
        if !(self.speedup.is_finite() && self.speedup > 0.0) {
            return Err((key, format!("must be > 0, got {}", self.speedup)));
        }
        format!("{}", self.speedup).parse().map_err(|_| {
            (
                key,
                format!(
                    "{:?} is not a usable factor (a decimal with at most 9 decimals below 2^64)",
                    self.speedup
                ),
            )
        })
    }

    /// The time window `[start, end)` in ns from the first arrival (`None`: no window);
    /// `Err` names the key and the reason.
    pub fn window_ns(&self) -> Result<Option<(u64, u64)>, (&'static str, String)> {
        if self.start_s.is_none() && self.end_s.is_none() {
            return Ok(None);
        }
        let ns = |key: &'static str, s: Option<f64>, default: u64| match s {
            None => Ok(default),
            // Past 2^64 ns (584 years) `as` saturates: no trace is that long.
            Some(v) if v.is_finite() && v >= 0.0 => Ok((v * 1e9).round() as u64),
            Some(v) => Err((key, format!("must be a number of seconds >= 0, got {v}"))),
        };
        let start = ns("workload.trace.start_s", self.start_s, 0)?;
        let end = ns("workload.trace.end_s", self.end_s, u64::MAX)?;
        if let (Some(a), Some(b)) = (self.start_s, self.end_s) {
            if a >= b {
                return Err((
                    "workload.trace.end_s",
                    format!("must be after workload.trace.start_s ({a} s), got {b} s"),
                ));
            }
        }
        Ok(Some((start, end)))
    }

    /// `format` parsed; `None`: detect it from the content.
    pub fn trace_format(&self) -> Result<Option<TraceFormat>, (&'static str, String)> {
        self.format
            .as_deref()
            .map(|f| {
                f.parse()
                    .map_err(|e| ("workload.trace.format", format!("{e}")))
            })
            .transpose()
    }

    /// `split_kb` as 512-byte trace sectors (`None`: no split); `Err` names the key.
    pub fn split_sectors(&self) -> Result<Option<u32>, (&'static str, String)> {
        match self.split_kb {
            None => Ok(None),
            Some(kb @ 1..=1_048_576) => Ok(Some(kb * 2)),
            Some(kb) => Err((
                "workload.trace.split_kb",
                format!("must be within 1..=1048576 KiB, got {kb}"),
            )),
        }
    }

    /// Every check of the spec that needs no file: speed-up, window, split, format.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        self.speedup_factor()?;
        self.split_sectors()?;
        self.window_ns()?;
        self.trace_format()?;
        Ok(())
    }
}
