//! Shared by the integration tests: the SR-Array dissertation's table 4.1 and file openers
//! for experiments that use built-in drives and no timed traces.
#![allow(dead_code)] // each test file uses its own part

use spindle::config::TraceSpec;
use spindle::sim::Arrivals;

/// Table 4.1 of the dissertation (Seagate ST39133LWV): S, To and the write penalty in ms;
/// R from the measured 10,026 rpm (section 2.1.1).
pub const S: f64 = 9.2;
pub const TO: f64 = 2.7;
pub const TWO: f64 = 0.7;
pub const R: f64 = 60_000.0 / 10_026.0;

pub fn no_files(p: &str) -> Result<Vec<u8>, String> {
    Err(format!("{p}: tests use built-in drives only"))
}

pub fn no_trace(
    _: &TraceSpec,
    _: u32,
    _: u32,
    _: u64,
) -> Result<(Arrivals<'static>, Option<u64>), String> {
    Err("no timed traces here".into())
}
