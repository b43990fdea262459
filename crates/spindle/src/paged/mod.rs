//! The paged disk with bad tenants (Koes & McWherter, "Improving Disk Performance under
//! Paging Workloads", `../shared/papers/002_*-paged-disk-bad-tenants.txt`, sections 3–5).
//!
//! - [`pages`]: one disk cut into track-aligned page slots, each page replicated evenly
//!   around its home track; the page map (where each page lives, what each slot holds).
//! - [`log`]: the page map's NVRAM log, log region, checkpoints and recovery (3.4).
//! - [`array`]: the controller: reads to the closest replica, writes as bad tenants under
//!   the head or as full replicated writes with deferred replicas (4).
//!
//! Not built yet (part 2): the cleaner that moves bad tenants home and restores
//! replication. Its work would be charged to [`crate::engine::Cause::Cleaning`]; the page
//! map already answers what it needs (which pages are tenants, which home replicas are
//! writable), and its copies would be deferred operations like the replica writes.

pub mod array;
pub mod log;
pub mod pages;

pub use array::{PagedArray, PagedConfig, PagedCounters};

#[cfg(test)]
mod tests;
