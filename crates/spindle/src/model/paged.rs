//! The paged disk with bad tenants (Koes & McWherter, sections 3–5; docs/paged.md), ms: N
//! disks with the pages striped over them, each page with r copies evenly spaced on its home
//! track. The paper measures rather than derives; the same three effects the EW-Array model
//! writes as equations ([`super::ew`]) describe it:
//!
//! - a read goes to the copy the head reaches first, on a band of r / N of the disk for one
//!   disk's worth of data: eq. 2.14 with Dm → r and Ds → N / r (at least 1);
//! - a write with bad tenants goes to the slot nearest the head on the track under it among
//!   those it may take — unallocated slots and the non-home copies of other pages, a share
//!   1 − 1/r of the track — so the eager write's R/(k + 1) with Dd → r: one disk operation,
//!   no seek (r = 1 leaves no such slot: a write in place);
//! - each disk serves its queue first come first served: no scheduling gain from a queue.
//!
//! What it leaves out (docs/advise.md): a page written as a bad tenant has one copy until
//! the cleaner restores its replicas, so reads of recently written pages wait longer; the
//! full replicated writes when the track under the head has no slot; the page map's log.

use super::{ew, DiskModel};

/// The band of each disk the data covers, as the EW model's Ds: N / r, at least 1.
pub fn band_ds(disks: u32, replicas: u32) -> f64 {
    (f64::from(disks) / f64::from(replicas.max(1))).max(1.0)
}

/// A read: the nearest of r copies on a band of r / N of the disk.
pub fn read_ms(d: &DiskModel, disks: u32, replicas: u32, l: f64) -> f64 {
    ew::read_ms(d, replicas, band_ds(disks, replicas), l)
}

/// A write with bad tenants: the nearest allowed slot of `page_bytes` on the current track.
pub fn write_ms(d: &DiskModel, disks: u32, replicas: u32, page_bytes: f64, l: f64) -> f64 {
    ew::eager_write_ms(
        d,
        band_ds(disks, replicas),
        f64::from(replicas.max(1)),
        page_bytes,
        l,
    )
}
