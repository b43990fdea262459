//! Latent sector errors of the eager-writing arrays (EW-Array, DDM): locations a disk can
//! no longer read, found only when a read meets one (docs/failures.md).
//!
//! As for the mirrored layouts (`crate::array::latent`), a fraction `rate` of each disk's
//! sectors is unreadable from the start, chosen by a seeded hash — here of (disk, block
//! location), the eager-writing unit: a 4 KiB location is bad with probability
//! 1 − (1 − rate)^sectors. In the EW-Array's vocabulary a bad location is a *stale*
//! replica that no write will ever refresh in place:
//!
//! - A **read** that meets one costs its disk time and returns nothing; the replica is
//!   marked unreadable (no longer fresh), and the read is issued again for the block's other
//!   fresh replicas (a mirror's copy; the map says where).
//! - The **repair** is a propagation: the block's latest data is eager-written to a free
//!   location of the unreadable replica's disk, from a fresh replica, through the delayed
//!   queue, the NVRAM propagation table and the map log, exactly as a delayed copy — so a
//!   crash during it is recovered like any propagation. A newer write of the block makes it
//!   obsolete as it would a propagation (counted `superseded`).
//! - The **bad location is retired**: when the map moves off it, it stays allocated in the
//!   free-space bitmap and is never written again. Free bad locations are retired when the
//!   array is built (and rebuilt from the map after a crash), so eager writes land only on
//!   good locations: only data placed before the run starts can meet an error, as a drive
//!   remaps a sector on write. The bitmap needs no new persistent state: bad locations are
//!   a function of the seed.
//! - A read with no readable replica left (every copy bad, or the survivor of a failed
//!   disk bad) is answered without the block's data and counted `unrecoverable` (data lost;
//!   here the count is of 4 KiB blocks).
//! - A DDM block whose home location is bad stays away from home (its move home would write
//!   a retired location).
//!
//! Not modelled, as for the mirrored layouts: errors met by a rebuild's reads (they copy the
//! survivor's bytes) and the drive's own retries before it reports an error.

use super::*;
use crate::array::latent::{mix, threshold};
use crate::engine::LatentCounters;

pub(super) struct EwLatent {
    /// A location is bad when its hash is below this.
    threshold: u64,
    seed: u64,
    /// Per disk: bad locations retired (allocated, mapped by no block).
    retired: Vec<u32>,
    counters: LatentCounters,
}

impl EwLatent {
    pub(super) fn new(
        rate: f64,
        block_sectors: u32,
        seed: u64,
        disks: usize,
    ) -> Result<Self, String> {
        Ok(EwLatent {
            threshold: threshold(rate, block_sectors)?,
            seed: seed ^ 0x6c61_7465_6e74,
            retired: vec![0; disks],
            counters: LatentCounters::default(),
        })
    }

    fn bad(&self, disk: usize, slot: BlockId) -> bool {
        mix(self.seed ^ mix(disk as u64) ^ u64::from(slot)) < self.threshold
    }
}

impl EwArray {
    /// Whether location `slot` of disk `d` is unreadable.
    pub(super) fn latent_bad(&self, d: usize, slot: BlockId) -> bool {
        self.latent.as_ref().is_some_and(|l| l.bad(d, slot))
    }

    /// Bad locations retired on disk `d` (test audits of the free space).
    #[cfg(test)]
    pub(super) fn retired_blocks(&self, d: usize) -> u32 {
        self.latent.as_ref().map_or(0, |l| l.retired[d])
    }

    pub(super) fn latent_counters(&self) -> Option<LatentCounters> {
        self.latent.as_ref().map(|l| l.counters)
    }

    /// Retires every free bad location (at the start, and after the free space is rebuilt
    /// from a recovered map); at the start (`check`) refuses a rate that leaves a disk less
    /// than half its free blocks for eager writing.
    pub(super) fn retire_bad_free(&mut self, check: bool) -> Result<(), String> {
        let Some(l) = self.latent.as_mut() else {
            return Ok(());
        };
        for (d, disk) in self.disks.iter_mut().enumerate() {
            let blocks = disk.free.blocks();
            let bad: Vec<(BlockId, u32)> = (0..blocks)
                .filter(|&s| l.bad(d, s))
                .map(|s| (s, 1))
                .collect();
            let free = disk.free.free_blocks();
            if check && bad.len() as u64 * 2 > u64::from(free) {
                return Err(format!(
                    "a latent sector error rate that makes {} of disk {d}'s {blocks} 4 KiB \
                     locations unreadable leaves too few of its {free} free locations for \
                     eager writing (at most half may be bad): lower the rate or raise Dd",
                    bad.len()
                ));
            }
            let free_bad: Vec<(BlockId, u32)> = bad
                .into_iter()
                .filter(|&(s, _)| disk.free.is_free(s))
                .collect();
            l.retired[d] = free_bad.len() as u32;
            disk.free.allocate_sorted(free_bad);
        }
        Ok(())
    }

    /// The map moved off location `slot` of disk `d`: if it is bad it is retired, not
    /// freed. Returns whether it was.
    pub(super) fn retire_if_bad(&mut self, d: usize, slot: BlockId) -> bool {
        let Some(l) = self.latent.as_mut() else {
            return false;
        };
        if !l.bad(d, slot) {
            return false;
        }
        l.retired[d] += 1;
        true
    }

    /// A host read's block has no readable replica: answered without its data.
    pub(super) fn block_lost(&mut self) {
        if let Some(l) = self.latent.as_mut() {
            l.counters.unrecoverable += 1;
        }
    }

    /// Whether a read of `blocks` locations from `slot` on disk `d` meets a bad one.
    pub(super) fn read_meets_latent_error(&self, d: usize, slot: BlockId, blocks: u32) -> bool {
        self.latent
            .as_ref()
            .is_some_and(|l| (slot..slot + blocks).any(|s| l.bad(d, s)))
    }

    /// Read `id` on disk `d` met a bad location: each bad block's replica becomes stale and
    /// is repaired by a propagation; the read is issued again for the blocks that have a
    /// readable replica left, the others are lost; then this part is done.
    pub(super) fn latent_read_failed(&mut self, now: Nanos, d: usize, id: usize, access: &Access) {
        let op = self.op(id);
        let (block, blocks, slot) = (op.block, op.blocks, op.slot.expect("a host read"));
        let m = d as u32 / self.n;
        let a = op
            .locs
            .iter()
            .find(|&&(r, _)| r == m)
            .expect("the read's copy")
            .1;
        self.unpin(d, a, blocks);
        self.latent
            .as_mut()
            .expect("latent errors are on")
            .counters
            .errors += 1;
        let mut lost = 0u64;
        let mut again: Vec<(u32, u32)> = Vec::new();
        for b in block..block + blocks {
            let loc = a + (b - block);
            // A write may have moved the replica while the read ran: the bad location is
            // then retired when freed, and the replica's new copy may serve the retry.
            let moved = self.map.map().get(b, m) != loc;
            let others = self.readable(b) & if moved { !0 } else { !(1u64 << m) };
            if self.latent_bad(d, loc) {
                if others == 0 {
                    lost += 1;
                    continue;
                }
                if !moved {
                    self.mark_unreadable(now, b, m);
                }
            }
            match again.last_mut() {
                Some((s, n)) if *s + *n == b => *n += 1,
                _ => again.push((b, 1)),
            }
        }
        self.latent
            .as_mut()
            .expect("latent errors are on")
            .counters
            .unrecoverable += lost;
        for (b, n) in again {
            self.accept_read(now, slot, b, n);
        }
        self.enforce_nvram_limit();
        self.part_done(now, id, access);
    }

    /// Replica `m` of block `b` is unreadable: no longer fresh, and if it was, its latest
    /// data is propagated to a new location (the repair). A stale replica already has a
    /// write or propagation coming, which moves it off the bad location too.
    fn mark_unreadable(&mut self, now: Nanos, b: u32, m: u32) {
        if self.lost(b) & (1 << m) != 0 {
            return;
        }
        let fresh = self.fresh(b) & (1 << m) != 0;
        let st = self.state(b);
        st.bad |= 1 << m;
        if !fresh {
            return;
        }
        let version = st.acked;
        self.queue_propagation(now, b, 1, version, m);
        let p = *self
            .state(b)
            .props
            .as_slice()
            .last()
            .expect("the repair just queued");
        self.op_mut(p).repair = true;
    }

    /// A repair propagation wrote its copy (`updated`: the map moved to it) or was made
    /// obsolete by a newer write.
    pub(super) fn repair_ended(&mut self, blocks: u32, updated: bool) {
        let bs = self.block_sectors;
        let c = &mut self
            .latent
            .as_mut()
            .expect("repairs need latent errors")
            .counters;
        if updated {
            c.repairs += 1;
            c.repaired_sectors += u64::from(blocks * bs);
        } else {
            c.superseded += 1;
        }
    }
}
