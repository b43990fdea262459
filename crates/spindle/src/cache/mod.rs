//! Write cache: the per-disk destage scheduler of a RAID-5 with a non-volatile write cache
//! (Varma & Jacobson, "Destage Algorithms for Disk Arrays with Non-volatile Caches", ISCA
//! '95). Pure policy: no clock, no I/O, no controller state; times are `Nanos`.
//!
//! A controller keeps one [`DestageQueue`] per disk beside the disk's host queue (paper
//! III.A: two queues per disk, host requests first and FCFS). It pushes every destage read
//! (old data or old parity) and destage write (new data or new parity) with its physical
//! target, and when a disk is idle *and its host queue is empty* it asks
//! [`DestageQueue::pick`], passing the write cache's occupancy ([`CacheLevel`]). The pick is a
//! [`DestageBatch`]: the chosen destage plus every queued destage of the same op on the same
//! track, to be done as one access (or consecutive accesses when not contiguous) — or `None`
//! when the policy declines (the non-work-conserving policies: high/low mark below the mark,
//! linear threshold above the threshold, regions with no qualifying work).
//!
//! Policies ([`DestagePolicy`], paper section II): FCFS, least-cost, high/low mark, linear
//! threshold, and the band/region approximation to linear threshold (II.E, appendix A).
//! The high/low mark's hysteresis is array-wide (occupancy is array-wide), so it lives in a
//! [`HighLowGate`] the controller owns and updates at every occupancy change; its state
//! reaches each queue's pick through [`CacheLevel`].
//!
//! Not here: the write cache itself (blocks, LRU, parity computation), overflow handling and
//! the controller's queues — see `docs/destage.md` for how a controller uses this module.

mod blocks;
mod destage;
mod regions;
mod threshold;

pub use blocks::{Absorbed, BlockAddr, Lru, ReadCache, WriteCache};
pub use destage::{
    CacheLevel, DestageBatch, DestageError, DestagePolicy, DestageQueue, DestageRequest,
    DestageStats,
};
pub use regions::{CostEstimate, RegionMap};
pub use threshold::{table_i, HighLowGate, LinearThreshold};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_regions;
