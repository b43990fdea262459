//! Analytical models of disk arrays (SR-Array dissertation, chapter 2; EW-Array paper, 3 and
//! 6) and the configuration advisor's prediction of one candidate under one workload.
//!
//! Pure arithmetic on milliseconds (`f64`): these are models, not simulated time. The
//! vocabulary is the papers': S (full seek excluding the overhead), R (one rotation), To (the
//! overhead), Two (a write's extra settle), Ds / Dr / Dm / Dd, p (the fraction of requests
//! costing a read, eq. 2.25), L (seek locality, eq. 2.5), Q (outstanding requests).
//!
//! - [`sr_array`]: one disk, striping, rotational replication, SR-Arrays (eqs. 2.1–2.9,
//!   2.19–2.28);
//! - [`mirror`]: D-way mirrors, RAID-10, SR-Mirrors (eqs. 2.10–2.18, 2.29);
//! - [`queueing`]: LOOK/RLOOK/SATF with Q outstanding (eqs. 2.30–2.46), the closed network of
//!   `examples/sr_array/closed_network.py`, and an open (G/G/1 per disk) queue for a rate;
//! - [`ew`]: the eager-writing cost model of an EW-Array Dm × Ds × Dd;
//! - [`paged`]: the paged disk with bad tenants (r copies of each page on its track);
//! - [`optimal`]: the best Ds × Dr (× Dm) for D disks, p, L and Q (eqs. 2.20, 2.27, 2.43);
//! - [`predict`]: a candidate configuration's predicted latency and throughput.

pub mod advise;
pub mod ew;
pub mod mirror;
pub mod optimal;
pub mod paged;
pub mod predict;
pub mod queueing;
pub mod sr_array;

#[cfg(test)]
mod tests;

use crate::drive::Drive;
use crate::Op;

/// A disk as the chapter 2 models see it (ms).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DiskModel {
    /// S: the full seek less the overhead (a random seek averages S/3, eq. 2.1).
    pub s_ms: f64,
    /// R: one rotation.
    pub r_ms: f64,
    /// To: the fixed overhead of an access that changes track (controller + settle).
    pub to_ms: f64,
    /// Two: what a write adds to To (the ST39133LWV's 0.7 ms, table 4.1).
    pub two_ms: f64,
    /// The overhead of an access on the track under the head (no track switch): To less the
    /// seek curve's intercept. An eager write pays this, not To.
    pub to_local_ms: f64,
    /// Sectors on a mean track, for the eager-writing model's free blocks per track.
    pub sectors_per_track: f64,
    /// Capacity in bytes.
    pub capacity_bytes: f64,
}

impl DiskModel {
    /// The dissertation's ST39133LWV (table 4.1; R from the measured 10,026 rpm).
    pub const ST39133LWV: DiskModel = DiskModel {
        s_ms: 9.2,
        r_ms: 60_000.0 / 10_026.0,
        to_ms: 2.7,
        two_ms: 0.7,
        to_local_ms: 1.8,
        sectors_per_track: 303.0,
        capacity_bytes: 9.096e9,
    };

    /// The model of a simulated drive: R its period; To its read overhead plus the seek
    /// curve's intercept (the intercept paid by any access that moves the head); S
    /// chosen so that To + S/3 is the drive's mean random seek plus overhead (exact for a
    /// linear curve, eq. 2.1; for a measured curve it keeps eq. 2.2's mean right, not its
    /// shape).
    pub fn of(drive: &Drive) -> DiskModel {
        let curve = drive.seek_curve(Op::Read);
        // The curve extrapolated to distance 0 (a linear curve's intercept exactly).
        let intercept = if curve.max_distance() >= 2 {
            (2.0 * curve.time(1).as_ms_f64() - curve.time(2).as_ms_f64()).max(0.0)
        } else {
            0.0
        };
        let mean_seek = curve.mean_random().as_ms_f64();
        let over_r = drive.overhead(Op::Read).as_ms_f64();
        let over_w = drive.overhead(Op::Write).as_ms_f64();
        let g = drive.geometry();
        let tracks = f64::from(g.surfaces()) * f64::from(g.cylinders());
        let capacity = drive.capacity_sectors() as f64;
        DiskModel {
            s_ms: (3.0 * (mean_seek - intercept)).max(0.0),
            r_ms: drive.period().as_ms_f64(),
            to_ms: over_r + intercept,
            two_ms: (over_w - over_r).max(0.0),
            to_local_ms: over_r,
            sectors_per_track: capacity / tracks.max(1.0),
            capacity_bytes: capacity * f64::from(g.sector_bytes()),
        }
    }

    /// The media transfer of `bytes` on a mean track (ms): not in chapter 2's equations
    /// (one-sector reads); the advisor adds it for requests larger than a few sectors.
    pub fn transfer_ms(&self, bytes: f64) -> f64 {
        self.r_ms * (bytes / 512.0) / self.sectors_per_track.max(1.0)
    }
}
