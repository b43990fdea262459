//! The paged disk with bad tenants (Koes & McWherter, "Improving Disk Performance under
//! Paging Workloads", `../shared/papers/002_*-paged-disk-bad-tenants.txt`, sections 3–5).
//!
//! - [`pages`]: one disk cut into track-aligned page slots, each page replicated evenly
//!   around its home track; the page map (where each page lives, what each slot holds).
//! - [`log`]: the page map's NVRAM log, log region, checkpoints and recovery (3.4).
//! - [`array`]: the controller: reads to the closest replica, writes as bad tenants under
//!   the head or as full replicated writes with deferred replicas (4).
//!
//! - the cleaner (`array/cleaner.rs`): moves bad tenants home and restores replication,
//!   charged to [`crate::engine::Cause::Cleaning`], under one of four policies
//!   ([`CleanerPolicy`]).

pub mod array;
pub mod log;
pub mod pages;

pub use array::{CleanerPolicy, PagedArray, PagedConfig, PagedCounters};

#[cfg(test)]
mod cleaner_tests;
#[cfg(test)]
mod tests;
