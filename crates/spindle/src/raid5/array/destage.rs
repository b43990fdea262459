//! The write-cache side of the parity controller (Varma & Jacobson, III.A): host writes
//! absorbed into the write cache, read hits, and destage rounds.
//!
//! A stripe with dirty blocks gets a **destage round**, which holds the stripe like a classic
//! update does. The round reads what its dirty blocks' parity needs and neither cache holds
//! — old data and old parity, into the read cache — as destage reads; then, when every needed
//! block is there, it computes the new parity of each row into the write cache (the data
//! blocks' parity is now computed: a re-write takes a second block from then on) and queues
//! the data and parity as destage writes; when they are written the blocks become available.
//! A row whose blocks are not all in the caches by then (a block dirtied after the round
//! began, or a copy the read cache dropped) waits for the next round. New parity needs free
//! write-cache blocks: host writes leave `parity_reserve` of them, and a round that finds
//! none waits for destages to free some. Destage reads and writes go to the disks' destage
//! queues, served only when a disk has no host work, when and in the order the destage
//! policy chooses; the high/low gate and the idle disks whose pick declined are told of every
//! change of occupancy.

use super::{Kind, Raid5Array, Round, StripeWork, UnitPiece};
use crate::cache::{BlockAddr, DestageRequest};
use crate::engine::CacheCounters;
use crate::sched::DiskRequest;
use crate::{Nanos, Op};
use std::collections::{BTreeMap, HashSet};

/// Contiguous blocks of `blocks` (sorted, distinct) as (first, count) runs.
fn runs_of(blocks: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for b in blocks {
        match runs.last_mut() {
            Some((first, n)) if *first + *n == b => *n += 1,
            _ => runs.push((b, 1)),
        }
    }
    runs
}

impl Raid5Array {
    fn bs(&self) -> u64 {
        u64::from(self.block_sectors)
    }

    fn data_addr(&self, key: (u32, u64), unit: u32, row: u32) -> BlockAddr {
        let disk = self.layout.data_disk(key.0, key.1, unit);
        (
            disk as u32,
            self.layout.stripe_lba(key.1) / self.bs() + u64::from(row),
        )
    }

    fn parity_addr(&self, key: (u32, u64), row: u32) -> BlockAddr {
        let disk = self.layout.parity_disk(key.0, key.1);
        (
            disk as u32,
            self.layout.stripe_lba(key.1) / self.bs() + u64::from(row),
        )
    }

    /// The blocks of `sectors` at `lba` of `disk`.
    fn blocks(&self, disk: usize, lba: u64, sectors: u32) -> impl Iterator<Item = BlockAddr> {
        let bs = self.bs();
        let (first, last) = (lba / bs, (lba + u64::from(sectors) - 1) / bs);
        (first..=last).map(move |b| (disk as u32, b))
    }

    /// The parts of a host read neither cache holds, as whole-block runs to read. On a
    /// `lost` disk (failed, not rebuilt) read-cache copies are not used: with data moves
    /// on their bytes would come from the failed disk.
    pub(super) fn read_misses(
        &mut self,
        disk: usize,
        lba: u64,
        sectors: u32,
        lost: bool,
    ) -> Vec<(u64, u32)> {
        let bs = self.bs();
        let blocks: Vec<BlockAddr> = self.blocks(disk, lba, sectors).collect();
        let c = self.cache.as_mut().expect("a cache");
        let missing = blocks
            .into_iter()
            .filter(|&k| !c.write.holds(k) && (lost || !c.read.lookup(k)))
            .map(|k| k.1);
        runs_of(missing)
            .into_iter()
            .map(|(b, n)| (b * bs, (n * bs) as u32))
            .collect()
    }

    /// A host read brought these blocks from disk: the read cache keeps those the write
    /// cache has nothing newer of.
    pub(super) fn read_into_cache(&mut self, disk: usize, lba: u64, sectors: u32) {
        if self.cache.is_none() {
            return;
        }
        let blocks: Vec<BlockAddr> = self.blocks(disk, lba, sectors).collect();
        let c = self.cache.as_mut().expect("a cache");
        for k in blocks {
            if !c.write.has_newer(k) {
                c.read.insert(k);
            }
        }
    }

    /// Each piece's blocks: (stripe, data unit, row in the unit).
    fn write_blocks(
        &self,
        stripes: &[((u32, u64), Vec<UnitPiece>)],
    ) -> Vec<((u32, u64), u32, u32)> {
        let bs = self.bs();
        let mut out = Vec::new();
        for (key, pieces) in stripes {
            for p in pieces {
                let first = u64::from(p.offset) / bs;
                let last = (u64::from(p.offset) + u64::from(p.sectors) - 1) / bs;
                out.extend((first..=last).map(|r| (*key, p.unit, r as u32)));
            }
        }
        out
    }

    /// The array address of row `row` of data unit `unit` of stripe `key`.
    fn block_logical(&self, key: (u32, u64), unit: u32, row: u32) -> u64 {
        self.layout
            .logical(key.0, key.1, unit, row * self.block_sectors)
    }

    /// Puts host write `id` into the write cache, if it fits with the parity reserve kept.
    pub(super) fn absorb(
        &mut self,
        now: Nanos,
        id: u64,
        stripes: &[((u32, u64), Vec<UnitPiece>)],
    ) -> bool {
        let blocks = self.write_blocks(stripes);
        let addrs: Vec<BlockAddr> = blocks
            .iter()
            .map(|&(key, unit, row)| self.data_addr(key, unit, row))
            .collect();
        {
            let c = self.cache.as_ref().expect("a cache");
            let new = addrs.iter().filter(|&&k| !c.write.is_dirty(k)).count();
            if !c.write.has_room_for_host(new) {
                return false;
            }
        }
        self.note_occupancy(now);
        for (&(key, unit, row), &k) in blocks.iter().zip(&addrs) {
            let c = self.cache.as_mut().expect("a cache");
            let in_place = c.write.host_write(k, now) == crate::cache::Absorbed::InPlace;
            c.read.invalidate(k);
            c.dirty.entry(key).or_default().insert((unit, row));
            c.counters.host_write_blocks += 1;
            let lba = self.block_logical(key, unit, row);
            self.nv_absorb(k, id, lba, in_place);
        }
        self.occupancy_changed();
        for (key, _) in stripes {
            self.want_round(now, *key);
        }
        true
    }

    /// Host write `id` found the write cache full: it takes the classic update; a block of
    /// it dirty in the cache is overwritten there too, so the cache never holds older data
    /// than the disk.
    pub(super) fn overflow(
        &mut self,
        now: Nanos,
        id: u64,
        stripes: &[((u32, u64), Vec<UnitPiece>)],
    ) {
        let blocks = self.write_blocks(stripes);
        let c = self.cache.as_mut().expect("a cache");
        c.counters.overflows += 1;
        c.counters.host_write_blocks += blocks.len() as u64;
        for (key, unit, row) in blocks {
            let k = self.data_addr(key, unit, row);
            let c = self.cache.as_mut().expect("a cache");
            if c.write.is_dirty(k) {
                c.write.host_write(k, now);
                let lba = self.block_logical(key, unit, row);
                self.nv_absorb(k, id, lba, true);
            }
        }
    }

    pub(super) fn count_disk_write(&mut self, sectors: u32) {
        let bs = self.bs();
        if let Some(c) = self.cache.as_mut() {
            c.counters.disk_write_blocks += u64::from(sectors).div_ceil(bs);
        }
    }

    /// A classic update wrote these runs: cached clean copies of them are stale.
    pub(super) fn invalidate_written(&mut self, written: &[(usize, u64, u32)]) {
        for &(disk, lba, sectors) in written {
            let blocks: Vec<BlockAddr> = self.blocks(disk, lba, sectors).collect();
            for k in blocks {
                let c = self.cache.as_mut().expect("a cache");
                c.read.invalidate(k);
                c.write.invalidate_available(k);
                self.nv_invalidate(k);
            }
        }
    }

    /// Occupancy is about to change at `now`: the time-weighted occupancy so far is kept.
    fn note_occupancy(&mut self, now: Nanos) {
        let c = self.cache.as_mut().expect("a cache");
        let dt = now.since(c.changed_at).0;
        c.counters.occupied_block_ns += u128::from(dt) * c.write.occupied() as u128;
        c.changed_at = now;
    }

    /// Occupancy changed: the high/low gate sees it, and idle disks whose destage pick
    /// declined ask again.
    fn occupancy_changed(&mut self) {
        let c = self.cache.as_mut().expect("a cache");
        c.gate.observe(c.write.occupancy());
        for d in std::mem::take(&mut c.declined) {
            if self.disks[d].busy.is_none() {
                self.out.mark_for_dispatch(d);
            }
        }
    }

    /// The write cache's counters up to `t`.
    pub(super) fn cache_counters(&self, t: Nanos) -> Option<CacheCounters> {
        let c = self.cache.as_ref()?;
        let mut counters = c.counters;
        counters.occupied_block_ns +=
            u128::from(t.saturating_since(c.changed_at).0) * c.write.occupied() as u128;
        counters.occupied_blocks = c.write.occupied() as u64;
        Some(counters)
    }

    /// Stripe `key` has dirty blocks: a round is queued for it unless one is already.
    fn want_round(&mut self, now: Nanos, key: (u32, u64)) {
        let c = self.cache.as_mut().expect("a cache");
        if !c.rounds_queued.insert(key) {
            return;
        }
        let r = c.rounds.insert(Round {
            key,
            left: 0,
            promoted: false,
            fetched: HashSet::new(),
        });
        self.enqueue_stripe_work(now, key, StripeWork::Round(r));
    }

    /// Whether a clean copy of `k` (the disk's contents) is in either cache, or fetched
    /// for round `r`.
    fn clean_present(&self, k: BlockAddr, r: usize) -> bool {
        let c = self.cache.as_ref().expect("a cache");
        c.read.contains(k) || c.write.holds_clean(k) || c.rounds[r].fetched.contains(&k)
    }

    /// Stripe `key`'s dirty blocks by row: the data units dirty in each.
    fn dirty_rows(&self, key: (u32, u64)) -> BTreeMap<u32, Vec<u32>> {
        let mut by_row: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &(unit, row) in &self.cache.as_ref().expect("a cache").dirty[&key] {
            by_row.entry(row).or_default().push(unit);
        }
        by_row
    }

    /// The clean (on-disk) blocks the new parity of `row` needs, its dirty data `units`
    /// given: their old data and the old parity (read-modify-write). With disk `lost`
    /// failed and not yet rebuilt: nothing when it holds the parity (there is none to
    /// update); when it holds a dirty unit, every other unit the round does not write
    /// (the parity becomes the XOR of the row's new data).
    fn row_needs(
        &self,
        key: (u32, u64),
        row: u32,
        units: &[u32],
        lost: Option<usize>,
    ) -> Vec<BlockAddr> {
        let p = self.parity_addr(key, row);
        match lost {
            Some(x) if p.0 as usize == x => Vec::new(),
            Some(x)
                if units
                    .iter()
                    .any(|&u| self.data_addr(key, u, row).0 as usize == x) =>
            {
                (0..self.layout.width() - 1)
                    .filter(|u| !units.contains(u))
                    .map(|u| self.data_addr(key, u, row))
                    .collect()
            }
            _ => units
                .iter()
                .map(|&u| self.data_addr(key, u, row))
                .chain(std::iter::once(p))
                .collect(),
        }
    }

    /// The round holds its stripe: read the old data and parity its dirty blocks need.
    pub(super) fn start_round(&mut self, now: Nanos, r: usize) {
        let key = self.cache.as_ref().expect("a cache").rounds[r].key;
        let lost = self.lost_disk(key);
        let mut missing: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        let mut needed = Vec::new();
        for (row, units) in self.dirty_rows(key) {
            needed.extend(self.row_needs(key, row, &units, lost));
        }
        for k in needed {
            if !self.clean_present(k, r) {
                missing.entry(k.0).or_default().push(k.1);
            }
        }
        let per_disk = missing
            .into_iter()
            .map(|(disk, blocks)| (disk, blocks.into_iter().map(|b| (b, now)).collect()));
        let left = self.queue_destage_runs(now, Kind::DestageRead(r), per_disk);
        self.cache.as_mut().expect("a cache").rounds[r].left = left;
        if left == 0 {
            self.compute_round(now, r);
        }
    }

    /// Queues round work of `kind` on each disk's blocks (sorted, distinct, each with its
    /// last host access), one destage per run of contiguous blocks; returns how many.
    fn queue_destage_runs(
        &mut self,
        now: Nanos,
        kind: Kind,
        per_disk: impl IntoIterator<Item = (u32, Vec<(u64, Nanos)>)>,
    ) -> u32 {
        let bs = self.bs();
        let mut queued = 0;
        for (disk, blocks) in per_disk {
            let last: BTreeMap<u64, Nanos> = blocks.into_iter().collect();
            for (b, n) in runs_of(last.keys().copied()) {
                let latest = (b..b + n).map(|x| last[&x]).max().expect("a block");
                let sectors = (n * bs) as u32;
                self.queue_destage(now, kind, disk as usize, b * bs, sectors, latest);
                queued += 1;
            }
        }
        queued
    }

    fn queue_destage(
        &mut self,
        now: Nanos,
        kind: Kind,
        disk: usize,
        lba: u64,
        sectors: u32,
        last_access: Nanos,
    ) {
        let (round, op) = match kind {
            Kind::DestageRead(r) => (r, Op::Read),
            Kind::DestageWrite(r) => (r, Op::Write),
            _ => unreachable!("destage work belongs to a round"),
        };
        if self.cache.as_ref().expect("a cache").rounds[round].promoted {
            // A host write waits for this round: its work is host work.
            self.queue_op(now, kind, None, disk, op, lba, sectors);
            return;
        }
        self.seq += 1;
        let id = self.ops.insert(super::DiskOp {
            kind,
            slot: None,
            disk,
            op,
            lba,
            sectors,
        });
        let target = self.drive.locate(lba);
        let d = &mut self.disks[disk];
        d.destage
            .as_mut()
            .expect("a destage queue per disk")
            .push(DestageRequest {
                id: id as u64,
                op,
                lba,
                sectors,
                target,
                queued_at: now,
                last_access,
                seq: self.seq,
            });
        if d.busy.is_none() {
            self.out.mark_for_dispatch(disk);
        }
    }

    /// Round `r`'s queued destage work moves to the host queues, and so does the rest of
    /// it (a host write waits for its stripe).
    pub(super) fn promote_round(&mut self, now: Nanos, r: usize) {
        let _ = now;
        let c = self.cache.as_mut().expect("a cache");
        if std::mem::replace(&mut c.rounds[r].promoted, true) {
            return;
        }
        let mine: Vec<(usize, usize)> = self
            .ops
            .iter_indexed()
            .filter(
                |(_, o)| matches!(o.kind, Kind::DestageRead(x) | Kind::DestageWrite(x) if x == r),
            )
            .map(|(id, o)| (id, o.disk))
            .collect();
        for (id, disk) in mine {
            let d = &mut self.disks[disk];
            // Not in the destage queue: it is running.
            let Some(q) = d
                .destage
                .as_mut()
                .expect("a destage queue")
                .remove(id as u64)
            else {
                continue;
            };
            d.queue.push(DiskRequest::single(
                q.id,
                q.op,
                (q.lba, q.sectors),
                q.target,
                q.queued_at,
                q.seq,
            ));
            if d.busy.is_none() {
                self.out.mark_for_dispatch(disk);
            }
        }
    }

    pub(super) fn destage_read_done(
        &mut self,
        now: Nanos,
        r: usize,
        disk: usize,
        op: &super::DiskOp,
    ) {
        let blocks: Vec<BlockAddr> = self.blocks(disk, op.lba, op.sectors).collect();
        let c = self.cache.as_mut().expect("a cache");
        for k in blocks {
            c.read.insert(k);
            c.rounds[r].fetched.insert(k);
        }
        c.rounds[r].left -= 1;
        if c.rounds[r].left == 0 {
            self.compute_round(now, r);
        }
    }

    /// Computes the new parity of every row whose blocks are all in the caches, as far as
    /// write-cache room allows, and queues the destage writes. With a disk lost in the
    /// stripe, nothing is written to it: its dirty blocks are folded into the parity, and
    /// a lost parity is not computed (cached copies of it are stale from now).
    fn compute_round(&mut self, now: Nanos, r: usize) {
        let key = self.cache.as_ref().expect("a cache").rounds[r].key;
        let lost = self.lost_disk(key);
        let parity_lost = |row: u32| lost == Some(self.parity_addr(key, row).0 as usize);
        let ready: Vec<(u32, Vec<u32>)> = self
            .dirty_rows(key)
            .into_iter()
            .filter(|(row, units)| {
                self.row_needs(key, *row, units, lost)
                    .into_iter()
                    .all(|k| self.clean_present(k, r))
            })
            .collect();
        // Rows whose parity is computed take a write-cache block each.
        let mut room = self.cache.as_ref().expect("a cache").write.free();
        let mut take = 0;
        for (row, _) in &ready {
            if !parity_lost(*row) {
                if room == 0 {
                    break;
                }
                room -= 1;
            }
            take += 1;
        }
        if take == 0 {
            if ready.is_empty() {
                self.end_round(now, r);
            } else {
                self.cache
                    .as_mut()
                    .expect("a cache")
                    .waiting_room
                    .push_back(r);
            }
            return;
        }
        self.note_occupancy(now);
        // Per disk, the blocks to write and their last host write (LRU recency).
        let mut writes: BTreeMap<u32, BTreeMap<u64, Nanos>> = BTreeMap::new();
        for (row, units) in &ready[..take] {
            let mut new = Vec::with_capacity(units.len());
            for &u in units {
                let k = self.data_addr(key, u, *row);
                let c = self.cache.as_mut().expect("a cache");
                let t = c.write.computed(k);
                c.read.invalidate(k);
                c.dirty
                    .get_mut(&key)
                    .expect("dirty blocks")
                    .remove(&(u, *row));
                self.nv_computed(k);
                new.push(k);
                if lost != Some(k.0 as usize) {
                    writes.entry(k.0).or_default().insert(k.1, t);
                }
            }
            let p = self.parity_addr(key, *row);
            let old = self.row_needs(key, *row, units, lost);
            let c = self.cache.as_mut().expect("a cache");
            c.read.invalidate(p);
            if lost == Some(p.0 as usize) {
                c.write.invalidate_available(p);
                self.nv_invalidate(p);
            } else {
                c.write.add_parity(p);
                self.nv_parity(p, &old, &new);
                writes.entry(p.0).or_default().insert(p.1, now);
            }
            // A block of the lost disk: its new contents are in the parity, nothing to write.
            for k in new.into_iter().filter(|k| lost == Some(k.0 as usize)) {
                self.cache.as_mut().expect("a cache").write.destaged(k);
                self.nv_destaged(k);
            }
        }
        self.occupancy_changed();
        let per_disk = writes
            .into_iter()
            .map(|(disk, blocks)| (disk, blocks.into_iter().collect()));
        let left = self.queue_destage_runs(now, Kind::DestageWrite(r), per_disk);
        self.cache.as_mut().expect("a cache").rounds[r].left = left;
        debug_assert!(left > 0, "a computed row writes data or parity");
    }

    pub(super) fn destage_write_done(
        &mut self,
        now: Nanos,
        r: usize,
        disk: usize,
        op: &super::DiskOp,
    ) {
        let blocks: Vec<BlockAddr> = self.blocks(disk, op.lba, op.sectors).collect();
        self.count_disk_write(op.sectors);
        self.note_occupancy(now);
        for k in blocks {
            self.cache.as_mut().expect("a cache").write.destaged(k);
            self.nv_destaged(k);
        }
        let c = self.cache.as_mut().expect("a cache");
        c.rounds[r].left -= 1;
        let round_done = c.rounds[r].left == 0;
        self.occupancy_changed();
        if round_done {
            self.end_round(now, r);
        }
        // Room freed: rounds waiting for it compute now.
        let waiting = std::mem::take(&mut self.cache.as_mut().expect("a cache").waiting_room);
        for w in waiting {
            self.compute_round(now, w);
        }
    }

    /// The round releases its stripe; dirty blocks left (written meanwhile, or not ready)
    /// get the next round.
    fn end_round(&mut self, now: Nanos, r: usize) {
        let c = self.cache.as_mut().expect("a cache");
        let Round { key, .. } = c.rounds.remove(r);
        c.rounds_queued.remove(&key);
        let more = c.dirty.get(&key).is_some_and(|d| !d.is_empty());
        if more {
            self.want_round(now, key);
        } else {
            c.dirty.remove(&key);
        }
        self.release_stripe(now, key);
    }
}
