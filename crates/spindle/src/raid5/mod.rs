//! Parity arrays: RAID-5 (rotated parity) and RAID-4 (a dedicated parity disk), after
//! Varma & Jacobson, "Destage Algorithms for Disk Arrays with Non-volatile Caches" (ISCA'95).
//! [`layout`] places data and parity; [`Raid5Array`] is the controller.

mod array;
pub mod layout;

pub use array::{
    block_sectors, CacheConfig, FailureConfig, Raid5Array, Raid5Config, UpdateCounts, UpdateKind,
    BLOCK_BYTES,
};
pub use layout::{ParityLayout, ParityRotation};
