//! The bytes behind disk operations, for drivers that move real data (the emulator).
//!
//! Data never enters the core (DESIGN.md): when a driver turns data moves on
//! ([`crate::engine::Engine::enable_data_moves`]), every disk operation the controller starts
//! is also described as a [`DataMove`] — which disk, which physical runs, and where the bytes
//! come from or go to — polled with [`crate::engine::Engine::poll_data`]. A driver performs
//! the moves in the order they are polled, before it acts on later completions: a read's
//! move is polled when the read starts, so the bytes it returns are those of the copy the
//! controller chose, which holds the last acknowledged data.
//!
//! # NVRAM and recovery
//!
//! A controller that answers the host before every copy is written keeps what a crash
//! must not lose in NVRAM (the SR-Mirror family: its table of pending delayed writes,
//! dissertation 3.4.2; the EW-Array: the map updates not yet in the map log, paper 5.2).
//! With data moves on, every change to that NVRAM is an [`NvramWrite`] into a byte image,
//! polled with [`crate::engine::Engine::poll_nvram`]. The contract with a driver:
//!
//! 1. Apply each NVRAM write to a persistent image (a file) in the order polled: after
//!    every input, drain the NVRAM writes first, then the data moves, before acting on the
//!    next action (so an answer to the host is never sent before the NVRAM it depends on is
//!    kept). A controller therefore emits an NVRAM write that must follow a data move only
//!    on a later input (e.g. the move's completion). Offsets may lie beyond the image's
//!    end: the image grows, zero-filled.
//! 2. After a crash, build a fresh controller and, before its first event, call
//!    [`crate::engine::Engine::recover`] with the image and a reader of the disks. It
//!    rebuilds the volatile state and returns repair moves (copies of the newest
//!    acknowledged bytes over copies that may be stale), which the driver performs and
//!    makes durable before serving.
//! 3. Then replace the image, atomically, by the NVRAM writes polled after `recover`
//!    applied to an empty image (the controller re-emits whatever it still needs).

use crate::drive::Run;
use crate::Op;

/// One copy of a piece on a disk: its runs in byte order (a rotational replica may wrap
/// around its track and be two runs).
pub type CopyRuns = Vec<Run>;

/// Where a data move's bytes come from (a write) or go to (a read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bytes {
    /// A host request: a write's bytes, or a read's buffer. The move's `lba` places the
    /// bytes within the request.
    Host(u64),
    /// A background copy: a disk and copy holding the newest acknowledged bytes.
    Copy { disk: usize, runs: CopyRuns },
    /// Controller metadata (the EW map log's appends and checkpoints): exactly `sectors`
    /// sectors of bytes.
    Meta(Vec<u8>),
}

/// The bytes one disk operation moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataMove {
    pub disk: usize,
    pub op: Op,
    /// The array-logical sectors whose bytes move (0 for metadata).
    pub lba: u64,
    pub sectors: u32,
    pub bytes: Bytes,
    /// On `disk`: the one copy read, or every copy written (each holds the same bytes).
    pub copies: Vec<CopyRuns>,
}

impl DataMove {
    /// Checks the shape every driver relies on: each copy covers exactly `sectors`; reads
    /// go to a host request from one copy; metadata has the bytes of `sectors`.
    pub fn is_consistent(&self, sector_bytes: u32) -> bool {
        let covers = |c: &CopyRuns| c.iter().map(|r| u64::from(r.sectors)).sum::<u64>();
        let want = u64::from(self.sectors);
        let bytes_ok = match &self.bytes {
            Bytes::Host(_) => true,
            Bytes::Copy { runs, .. } => covers(runs) == want && self.op == Op::Write,
            Bytes::Meta(b) => {
                b.len() as u64 == want * u64::from(sector_bytes) && self.op == Op::Write
            }
        };
        !self.copies.is_empty()
            && self.copies.iter().all(|c| covers(c) == want)
            && (self.op == Op::Write || self.copies.len() == 1)
            && bytes_ok
    }
}

/// A change to the controller's NVRAM image: `bytes` at byte `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvramWrite {
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Why a controller could not recover from its NVRAM image and disks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("recovery: {0}")]
pub struct RecoverError(pub String);

/// Reads a disk's runs, in order, into a buffer (the driver's backing files).
pub type DiskReader<'a> = dyn FnMut(usize, &[Run], &mut [u8]) -> Result<(), String> + 'a;
