//! Eager-writing arrays (EW-Array, Doubly Distorted Mirror): the EW-Array paper, sections
//! 2–6 (`../shared/papers/000_*-ew-array.txt`).
//!
//! - [`free_space`]: each disk's eager-writing region cut into 4 KB blocks, and the index
//!   answering "which free block does the head reach soonest".
//! - [`map_log`]: the logical-to-physical map's persistence (5.2): NVRAM, the map log
//!   region, incremental checkpoints in M portions, and recovery.
//! - [`sched`]: the eager-writing schedulers of one disk (section 4).
//! - [`array`]: the array controller (4.5), and the Doubly Distorted Mirror.

pub mod array;
pub mod free_space;
pub mod map_log;
pub mod sched;
pub(crate) mod small;

pub use array::{EwArray, EwConfig, EwShape, FreeLayout};
pub use sched::EwPolicy;
