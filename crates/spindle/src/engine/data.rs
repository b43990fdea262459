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
//!    acknowledged bytes over copies that may be stale; for a replicated map log, its
//!    metadata written to copies the crash may have left behind), which the driver
//!    performs and makes durable before serving.
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
    /// A write of the XOR of `pieces` (parity arrays: new parity, a rebuilt unit).
    Xor(Vec<Piece>),
    /// A write of bytes kept in the NVRAM image from byte `offset` (a write cache's
    /// block).
    Nvram(u64),
    /// A read answered with the XOR of `pieces` instead of one disk's copy (parity arrays:
    /// a lost unit from the other disks of its stripe), into host request `id`'s buffer at
    /// the move's `lba`. `copies` is empty: nothing is read on `disk`.
    HostXor { id: u64, pieces: Vec<Piece> },
}

/// Part of an XOR: sectors `at .. at + sectors` of the result are XORed with `from`'s bytes
/// (the result starts as zeros). A driver reads every piece's source as it is when the move
/// is performed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub at: u32,
    pub sectors: u32,
    pub from: Source,
}

/// Where a piece's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Host write `id`'s bytes from array sector `lba`.
    Host { id: u64, lba: u64 },
    /// A disk's runs.
    Disk { disk: usize, runs: CopyRuns },
    /// The NVRAM image from byte `offset`.
    Nvram(u64),
}

/// Fills a buffer with a source's bytes (a driver's host buffers, disks and NVRAM image).
pub type SourceReader<'a> = dyn FnMut(&Source, &mut [u8]) -> Result<(), String> + 'a;

/// The XOR of `pieces` over `sectors` sectors, each source read through `read`; for drivers
/// and tests.
pub fn xor_pieces(
    pieces: &[Piece],
    sectors: u32,
    sector_bytes: u32,
    read: &mut SourceReader<'_>,
) -> Result<Vec<u8>, String> {
    let sb = sector_bytes as usize;
    let mut out = vec![0u8; sectors as usize * sb];
    let mut buf = Vec::new();
    for p in pieces {
        let (a, n) = (p.at as usize * sb, p.sectors as usize * sb);
        if a + n > out.len() {
            return Err(format!(
                "an XOR piece ends at sector {}, beyond {sectors}",
                p.at + p.sectors
            ));
        }
        buf.clear();
        buf.resize(n, 0);
        read(&p.from, &mut buf)?;
        for (o, b) in out[a..a + n].iter_mut().zip(&buf) {
            *o ^= b;
        }
    }
    Ok(out)
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
        let pieces_ok = |ps: &[Piece]| {
            ps.iter().all(|p| {
                p.at + p.sectors <= self.sectors
                    && match &p.from {
                        Source::Disk { runs, .. } => covers(runs) == u64::from(p.sectors),
                        _ => true,
                    }
            })
        };
        if let Bytes::HostXor { pieces, .. } = &self.bytes {
            return self.op == Op::Read && self.copies.is_empty() && pieces_ok(pieces);
        }
        let bytes_ok = match &self.bytes {
            Bytes::Host(_) => true,
            Bytes::Xor(pieces) => self.op == Op::Write && pieces_ok(pieces),
            Bytes::Nvram(_) => self.op == Op::Write,
            Bytes::HostXor { .. } => unreachable!("checked above"),
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
    pub bytes: NvramBytes,
}

/// What an NVRAM write stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NvramBytes {
    /// These bytes (the controller's own records).
    Literal(Vec<u8>),
    /// The XOR of `pieces` over `sectors` sectors (a write cache's copy of host data — one
    /// host piece — or its newly computed parity), read as the write is applied.
    Xor { sectors: u32, pieces: Vec<Piece> },
}

impl NvramWrite {
    pub fn literal(offset: u64, bytes: Vec<u8>) -> NvramWrite {
        NvramWrite {
            offset,
            bytes: NvramBytes::Literal(bytes),
        }
    }

    /// The literal bytes, for controllers that write only literals.
    pub fn as_literal(&self) -> Option<&[u8]> {
        match &self.bytes {
            NvramBytes::Literal(b) => Some(b),
            NvramBytes::Xor { .. } => None,
        }
    }
}

/// Why a controller could not recover from its NVRAM image and disks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("recovery: {0}")]
pub struct RecoverError(pub String);

/// Reads a disk's runs, in order, into a buffer (the driver's backing files).
pub type DiskReader<'a> = dyn FnMut(usize, &[Run], &mut [u8]) -> Result<(), String> + 'a;
