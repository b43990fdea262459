//! Latent sector errors of the mirrored and rotationally replicated layouts: sectors a disk
//! can no longer read, found only when a read meets one.
//!
//! A fraction `rate` of each disk's sectors is unreadable from the start — which ones is a
//! seeded hash of (disk, sector), so a run is deterministic and a sector stays bad until
//! something writes it (a drive remaps a sector on write). A read that meets one costs its
//! disk time, returns nothing, and is served again by the piece's other fresh copies (a
//! mirror, or another rotational replica on the same disk: an SR-Array's Dr > 1 survives
//! latent errors though not a disk failure); once a copy is read, the bad copies are
//! *repaired*: each is rewritten from the copy read, as rebuild work (cause `rebuild`).
//! A read with no readable copy left is answered without its data and counted
//! `unrecoverable` (data lost).
//!
//! A repair is not ordered with host writes by the NVRAM table, so it starts only when it
//! writes the piece's latest data: no write of the piece is pending anywhere (no table
//! entry, no write queued or running), so every copy holds the last acknowledged data, and
//! no write reached the repaired sectors since the repair was queued. Otherwise it is
//! *superseded* and dropped before it starts. A write that arrives while it runs is newer:
//! on the repaired disk it runs after it; elsewhere the copies it leaves stale are not
//! fresh in the table until its propagation writes them.

use super::{bits, Array, DiskOp, Kind};
use crate::drive::Run;
use crate::engine::{Bytes, LatentCounters};
use crate::layout::Piece;
use crate::Nanos;
use std::collections::{HashMap, HashSet};

/// A repair write queued or running: where it copies from, and what it writes.
struct Repair {
    source: (usize, Vec<Run>),
    /// The copies involved (bits `m·Dr + k`): read from, and written.
    source_bit: u64,
    target_bits: u64,
    disk: usize,
    target: Vec<Run>,
    superseded: bool,
}

pub(super) struct Latent {
    /// A sector is bad when its hash is below this (`rate` · 2^64).
    threshold: u64,
    seed: u64,
    /// Bad sectors written since the start (disk, sector): readable again.
    rewritten: HashSet<(usize, u64)>,
    /// Reads retried after meeting a bad sector: the copies that failed (bits `m·Dr + k`).
    retries: HashMap<usize, u64>,
    repairs: HashMap<usize, Repair>,
    counters: LatentCounters,
}

impl Latent {
    /// `rate`: the fraction of sectors unreadable, in (0, 1].
    pub(super) fn new(rate: f64, seed: u64) -> Result<Latent, String> {
        Ok(Latent {
            threshold: threshold(rate, 1)?,
            seed,
            rewritten: HashSet::new(),
            retries: HashMap::new(),
            repairs: HashMap::new(),
            counters: LatentCounters::default(),
        })
    }

    fn is_bad(&self, disk: usize, sector: u64) -> bool {
        mix(self.seed ^ mix(disk as u64) ^ sector) < self.threshold
            && !self.rewritten.contains(&(disk, sector))
    }

    /// Whether reading `runs` on `disk` meets an unreadable sector.
    pub(super) fn unreadable(&self, disk: usize, runs: &[Run]) -> bool {
        sectors(runs).any(|s| self.is_bad(disk, s))
    }

    /// A write of `runs` on `disk` finished: its bad sectors are readable again, and a
    /// repair of them still waiting would write older data.
    fn wrote(&mut self, disk: usize, runs: &[Run]) {
        for s in sectors(runs) {
            if mix(self.seed ^ mix(disk as u64) ^ s) < self.threshold {
                self.rewritten.insert((disk, s));
            }
        }
        for r in self.repairs.values_mut() {
            if r.disk == disk && r.target.iter().any(|t| runs.iter().any(|w| meet(t, w))) {
                r.superseded = true;
            }
        }
    }

    pub(super) fn counters(&self) -> LatentCounters {
        self.counters
    }
}

/// The hash threshold below which a unit of `sectors` sectors is bad when a fraction
/// `rate` of sectors is: 1 − (1 − rate)^sectors of 2^64 (the eager-writing arrays hash
/// whole 4 KiB blocks).
pub(crate) fn threshold(rate: f64, sectors: u32) -> Result<u64, String> {
    if !(rate.is_finite() && rate > 0.0 && rate <= 1.0) {
        return Err(format!(
            "the latent sector error rate is a fraction of sectors in (0, 1], got {rate}"
        ));
    }
    let p = -(f64::from(sectors) * (-rate).ln_1p()).exp_m1();
    Ok((p * 2f64.powi(64)).min(u64::MAX as f64) as u64)
}

/// splitmix64's finaliser: a fixed, well-mixed hash of `x`.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn sectors(runs: &[Run]) -> impl Iterator<Item = u64> + '_ {
    runs.iter()
        .flat_map(|r| r.lba..r.lba + u64::from(r.sectors))
}

fn meet(a: &Run, b: &Run) -> bool {
    a.lba < b.lba + u64::from(b.sectors) && b.lba < a.lba + u64::from(a.sectors)
}

impl Array {
    /// The runs of `piece`'s replicas `replicas` (bit k: replica k) on one disk.
    fn replica_runs(&self, piece: &Piece, replicas: u8) -> Vec<Run> {
        let band = self.layout.band();
        let all = band.piece(piece.offset, piece.sectors);
        let mut out = Vec::new();
        for k in bits(u64::from(replicas)) {
            let rr = all.replica(k as u32);
            out.push(rr.first);
            out.extend(rr.wrap);
        }
        out
    }

    /// Whether the read starting on `disk` over `runs` meets a latent sector error.
    pub(super) fn read_meets_latent_error(&self, disk: usize, runs: &[Run]) -> bool {
        self.latent
            .as_ref()
            .is_some_and(|l| l.unreadable(disk, runs))
    }

    /// A write of replicas `replicas` of `piece` finished on `disk`.
    pub(super) fn latent_wrote(&mut self, disk: usize, piece: &Piece, replicas: u8) {
        if self.latent.is_none() {
            return;
        }
        let runs = self.replica_runs(piece, replicas);
        if let Some(l) = self.latent.as_mut() {
            l.wrote(disk, &runs);
        }
    }

    /// A read (`op`, id `id`) of replicas `replicas` on `disk` met an unreadable sector: it
    /// is served again by the copies left, or answered without data when none is. Returns
    /// whether the host part is answered now.
    pub(super) fn latent_read_failed(
        &mut self,
        now: Nanos,
        disk: usize,
        id: usize,
        op: DiskOp,
        replicas: u8,
    ) -> bool {
        let dr = self.layout.replicas();
        let m = (disk - self.layout.disks_of(op.piece.column).start) as u32;
        let l = self.latent.as_mut().expect("latent errors are on");
        l.counters.errors += 1;
        let failed = l.retries.remove(&id).unwrap_or(0) | (u64::from(replicas) << (m * dr));
        let left = op.copies & !failed;
        // As a new read would: a failed disk's copies only while the data lives there alone.
        let lost = self.lost_copies(&op.piece);
        let left = if left & !lost != 0 {
            left & !lost
        } else {
            left
        };
        let l = self.latent.as_mut().expect("latent errors are on");
        if left == 0 {
            l.counters.unrecoverable += 1;
            return true;
        }
        // The retry is the same part of the host request: it is not counted again.
        let slot = op.slot;
        let retry = DiskOp {
            copies: left,
            holders: 0,
            queued_at: now,
            slot: None,
            ..op
        };
        let nid = self.new_op(retry);
        self.ops[nid].slot = slot;
        self.latent
            .as_mut()
            .expect("latent errors are on")
            .retries
            .insert(nid, failed);
        self.dispatch_any(now, nid);
        false
    }

    /// A read (`op`, id `id`) of replicas `replicas` on `disk` succeeded: if it was a retry,
    /// the copies that failed are rewritten from this one.
    pub(super) fn latent_read_done(
        &mut self,
        now: Nanos,
        disk: usize,
        id: usize,
        op: &DiskOp,
        replicas: u8,
    ) {
        let Some(failed) = self.latent.as_mut().and_then(|l| l.retries.remove(&id)) else {
            return;
        };
        let dr = self.layout.replicas();
        let first = self.layout.disks_of(op.piece.column).start;
        let source = (disk, self.replica_runs(&op.piece, replicas));
        let source_bit = u64::from(replicas) << ((disk - first) as u32 * dr);
        let lost = self.lost_copies(&op.piece);
        for m in 0..self.layout.mirrors() {
            let mask = ((failed & !lost) >> (m * dr)) & ((1u64 << dr) - 1);
            if mask == 0 {
                continue;
            }
            let target_disk = first + m as usize;
            let target = self.replica_runs(&op.piece, mask as u8);
            let rid = self.queue_rebuild_op(now, Kind::Repair, op.piece, mask << (m * dr), m);
            self.latent
                .as_mut()
                .expect("latent errors are on")
                .repairs
                .insert(
                    rid,
                    Repair {
                        source: source.clone(),
                        source_bit,
                        target_bits: mask << (m * dr),
                        disk: target_disk,
                        target,
                        superseded: false,
                    },
                );
        }
    }

    /// Whether a write of `piece`'s column data is pending anywhere: a table entry (copies
    /// still to propagate) or a write operation queued or running on any disk.
    fn write_pending_over(&self, piece: &Piece) -> bool {
        !self
            .overlapping(piece.column, piece.offset, piece.sectors)
            .is_empty()
            || self.ops.iter().any(|op| {
                matches!(op.kind, Kind::FirstWrite | Kind::WriteAll | Kind::Propagate)
                    && op.piece.column == piece.column
                    && super::overlaps(&op.piece, piece)
            })
    }

    /// A repair picked to start: `false` if it would not write the piece's latest data —
    /// a write reached its sectors since it was queued, or a write of the piece is still
    /// pending (then the copies differ, and the one read may be older than the one to
    /// repair). It is then dropped, and the disk picks again; a sector left bad is met
    /// again by a later read.
    pub(super) fn repair_still_needed(&mut self, id: usize) -> bool {
        let piece = self.ops[id].piece;
        // A copy on a failed disk (or on its spare, not yet rebuilt there) is neither read
        // nor worth writing.
        let lost = self.lost_copies(&piece);
        let pending = self.write_pending_over(&piece)
            || self.latent.as_ref().is_some_and(|l| {
                l.repairs
                    .get(&id)
                    .is_some_and(|r| (r.source_bit | r.target_bits) & lost != 0)
            });
        let l = self.latent.as_mut().expect("repairs need latent errors");
        let superseded = pending || l.repairs.get(&id).is_some_and(|r| r.superseded);
        if superseded {
            l.repairs.remove(&id);
            l.counters.superseded += 1;
            self.ops.remove(id);
        }
        !superseded
    }

    /// What a repair copies: the copy its read was served by.
    pub(super) fn repair_source(&self, id: usize) -> Bytes {
        let r = &self.latent.as_ref().expect("latent errors are on").repairs[&id];
        Bytes::Copy {
            disk: r.source.0,
            runs: r.source.1.clone(),
        }
    }

    /// A repair write finished.
    pub(super) fn repair_done(&mut self, id: usize) -> (usize, Vec<Run>) {
        let l = self.latent.as_mut().expect("latent errors are on");
        let r = l.repairs.remove(&id).expect("a repair under way");
        l.counters.repairs += 1;
        l.counters.repaired_sectors += r.target.iter().map(|t| u64::from(t.sectors)).sum::<u64>();
        r.source
    }

    pub(super) fn latent_counters(&self) -> Option<LatentCounters> {
        self.latent.as_ref().map(Latent::counters)
    }
}
