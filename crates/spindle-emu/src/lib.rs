//! spindle's real-time emulator (DESIGN.md, "emu"): the same sans-I/O array core as the
//! simulator, driven by the wall clock and moving real bytes between a host and one backing
//! file per physical disk.
//!
//! - [`backing`]: the sparse disk files of a data directory.
//! - [`driver`]: the clock thread that runs the core in real time and performs its data
//!   moves; [`driver::Handle`] submits host commands.

pub mod backing;
pub mod driver;

pub use backing::{BackingStore, StoreShape};
pub use driver::{EmuError, Emulator, Handle, Reply, Request, Stats};
