//! spindle's real-time emulator (DESIGN.md, "emu"): the same sans-I/O array core as the
//! simulator, driven by the wall clock and moving real bytes between a host and one backing
//! file per physical disk, served to real clients (qemu, libnbd tools, fio, nbdfuse) over
//! NBD.
//!
//! - [`backing`]: the sparse disk files of a data directory.
//! - [`driver`]: the clock thread that runs the core in real time and performs its data
//!   moves; [`driver::Handle`] submits host commands.
//! - [`nbd`]: the NBD server; it does not depend on the core — [`export`] implements its
//!   [`nbd::Backend`] on a [`driver::Handle`].
//! - [`record`]: `--record FILE`, the host requests served as a DiskSim trace.
//! - [`real`]: the same core running real disks (block devices, files, NBD exports) that a
//!   calibrated drive file describes, each followed by a head tracker.
//! - [`serve`]: `spindle serve`, all of the above behind a socket.

pub mod backing;
pub mod calibrate;
pub mod driver;
pub mod export;
#[doc(hidden)]
pub mod fuzzing;
mod io;
pub mod nbd;
pub mod nvram;
pub mod real;
pub mod record;
pub mod serve;

pub use backing::{BackingStore, StoreShape};
pub use driver::{EmuError, Emulator, Handle, Reply, Request, Stats};
