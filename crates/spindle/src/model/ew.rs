//! The eager-writing cost model of an EW-Array Dm × Ds × Dd (EW-Array paper, sections 3 and
//! 6), ms. The paper gives no closed form: its section 3 measures how each dimension buys
//! latency (fig. 1: dilution for writes, mirrors for the rotational part of reads, striping
//! for seeks) and section 6 configures arrays from those measurements. This module writes the
//! same three effects as equations in the dissertation's terms:
//!
//! - an eager write goes to the free block closest to the head. On a track of `b` blocks with
//!   a share 1 − 1/Dd free, about k = b (1 − 1/Dd) free blocks lie at random angles, so the
//!   nearest is a rotational wait of R/(k + 1) away (eq. 2.10); with no seek, the access pays
//!   the local overhead (To less the track switch) plus Two;
//! - a read goes to the copy (of Dm) with the least rotational wait, on a band of 1/Ds of the
//!   disk: eq. 2.14 with S → S/Ds, S/(3 Ds L) + R/(Dm + 1) + To;
//! - every write is written Dm times (one copy before the answer with `sync_copies = 1`, the
//!   rest propagated): Dm eager writes of disk work.
//!
//! What it leaves out (measured against the simulator in `tests.rs`, documented in
//! docs/advise.md): a closest free block on another track (a track switch instead of a
//! rotational wait; fig. 1(a)'s rise of the rotational part from Dd 1.25 to 1.5), the map
//! log's appends, and reads of data whose propagation has not finished.

use super::sr_array::mean_seek_ms;
use super::DiskModel;

/// Free blocks of `block_bytes` on a track of a band diluted by `dd` (Dd = 1/utilisation).
pub fn free_blocks_per_track(d: &DiskModel, dd: f64, block_bytes: f64) -> f64 {
    assert!(dd >= 1.0, "dilution Dd must be at least 1, got {dd}");
    let blocks = d.sectors_per_track * 512.0 / block_bytes.max(512.0);
    blocks * (1.0 - 1.0 / dd)
}

/// One eager write (one copy): the local overhead, Two, and a rotational wait of R/(k + 1)
/// to the nearest of k free blocks on the track; with no free block at all (Dd = 1) it is an
/// ordinary write in place, S/(3 Ds L) + R/2 + To + Two.
pub fn eager_write_ms(d: &DiskModel, ds: f64, dd: f64, block_bytes: f64, l: f64) -> f64 {
    let k = free_blocks_per_track(d, dd, block_bytes);
    if k < 1.0 {
        return mean_seek_ms(d, l) / ds + d.r_ms / 2.0 + d.to_ms + d.two_ms;
    }
    d.to_local_ms + d.two_ms + d.r_ms / (k + 1.0)
}

/// A read on a Dm × Ds × Dd EW-Array: S/(3 Ds L) + R/(Dm + 1) + To (eq. 2.14 on the band).
pub fn read_ms(d: &DiskModel, dm: u32, ds: f64, l: f64) -> f64 {
    mean_seek_ms(d, l) / ds + d.r_ms / f64::from(dm + 1) + d.to_ms
}

/// Disk time per host request (ms of one disk's work): a read once, a write Dm eager writes.
pub fn work_per_request_ms(
    d: &DiskModel,
    dm: u32,
    ds: f64,
    dd: f64,
    read_fraction: f64,
    block_bytes: f64,
    l: f64,
) -> f64 {
    read_fraction * read_ms(d, dm, ds, l)
        + (1.0 - read_fraction) * f64::from(dm) * eager_write_ms(d, ds, dd, block_bytes, l)
}
