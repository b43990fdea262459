//! Block-trace readers, writers, statistics and transforms.
//!
//! Readers stream: they take any `BufRead`, hold one line at a time and yield
//! [`TraceRecord`]s; a malformed line is a [`TraceError`] naming its line number.
//! Addresses and sizes are in 512-byte sectors whatever the format's own unit.

use crate::{Nanos, Op};

/// One traced host request, normalised: arrival time, device, 512-byte sector address and count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    pub arrival: Nanos,
    pub device: u32,
    pub lba: u64,
    pub sectors: u32,
    pub op: Op,
}
