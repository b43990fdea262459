//! spindle: a sans-I/O disk-array engine.
//!
//! The core never reads a clock, sleeps, spawns a thread or touches a file or socket: time
//! comes in as an argument and work goes out as values (see `DESIGN.md`). Drivers — the
//! virtual-time simulator in [`sim`], later the real-time emulator — own the clock.

pub mod array;
pub mod burst;
pub mod cache;
pub mod calib;
pub mod config;
pub mod dr;
pub mod drive;
pub mod engine;
pub mod ew;
#[doc(hidden)]
pub mod fuzzing;
pub mod layout;
pub mod metrics;
pub mod model;
pub mod paged;
pub mod raid5;
pub mod sched;
pub mod sim;
pub mod sweep;
pub mod testing;
pub mod time;
pub mod track_align;
pub mod validate;
pub mod workload;

pub use time::{Nanos, Span};

/// The direction of a host or disk operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

impl Op {
    pub fn is_read(self) -> bool {
        matches!(self, Op::Read)
    }
}
