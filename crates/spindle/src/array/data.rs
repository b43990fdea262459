//! The bytes behind disk operations, for drivers that move real data (the emulator).
//!
//! Data never enters the core (DESIGN.md): when a driver turns data moves on
//! ([`crate::array::Engine::enable_data_moves`]), every disk operation the controller starts
//! is also described as a [`DataMove`] — which disk, which physical runs, and where the bytes
//! come from or go to — polled with [`crate::array::Engine::poll_data`]. A driver performs
//! the moves in the order they are polled, before it acts on later completions: a read's
//! move is polled when the read starts, so the bytes it returns are those of the copy the
//! controller chose, which holds the last acknowledged data.

use crate::drive::Run;
use crate::Op;

/// One copy of a piece on a disk: its runs in byte order (a rotational replica may wrap
/// around its track and be two runs).
pub type CopyRuns = Vec<Run>;

/// The bytes one disk operation moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataMove {
    pub disk: usize,
    pub op: Op,
    /// The array-logical sectors whose bytes move.
    pub lba: u64,
    pub sectors: u32,
    /// The host request the bytes come from (a write) or go to (a read); `None` for a
    /// background copy.
    pub host: Option<u64>,
    /// On `disk`: the one copy read, or every copy written (each holds the same bytes).
    pub copies: Vec<CopyRuns>,
    /// A background copy's source: a disk and copy holding the newest acknowledged bytes.
    pub source: Option<(usize, CopyRuns)>,
}

impl DataMove {
    /// Checks the shape every driver relies on: each copy covers exactly `sectors`.
    pub fn is_consistent(&self) -> bool {
        let covers = |c: &CopyRuns| c.iter().map(|r| u64::from(r.sectors)).sum::<u64>();
        let want = u64::from(self.sectors);
        !self.copies.is_empty()
            && self.copies.iter().all(|c| covers(c) == want)
            && self.source.as_ref().is_none_or(|(_, c)| covers(c) == want)
            && (self.op == Op::Write || self.copies.len() == 1)
            && (self.host.is_some() != self.source.is_some())
    }
}
