//! The array controller's caches of 4 KiB blocks (Varma & Jacobson, III.A): a volatile
//! read cache of clean copies, and a non-volatile write cache holding host data whose
//! parity is not yet computed (dirty), data and parity waiting to be destaged (pending),
//! and destaged blocks kept for reads until their room is needed (available). Both are
//! LRU. Blocks are named by where they live: (disk, block on that disk).

use crate::Nanos;
use std::collections::{BTreeMap, HashMap};

/// A block by its home: (disk, block number on the disk).
pub type BlockAddr = (u32, u64);

/// Least-recently-used order over keys: O(log n) touch, remove and eviction.
#[derive(Clone, Debug, Default)]
pub struct Lru {
    stamp: u64,
    by_key: HashMap<BlockAddr, u64>,
    order: BTreeMap<u64, BlockAddr>,
}

impl Lru {
    /// Makes `k` the most recently used (inserting it).
    pub fn touch(&mut self, k: BlockAddr) {
        self.stamp += 1;
        if let Some(old) = self.by_key.insert(k, self.stamp) {
            self.order.remove(&old);
        }
        self.order.insert(self.stamp, k);
    }

    pub fn remove(&mut self, k: BlockAddr) -> bool {
        match self.by_key.remove(&k) {
            Some(s) => {
                self.order.remove(&s);
                true
            }
            None => false,
        }
    }

    pub fn contains(&self, k: BlockAddr) -> bool {
        self.by_key.contains_key(&k)
    }

    pub fn pop_oldest(&mut self) -> Option<BlockAddr> {
        let (_, k) = self.order.pop_first()?;
        self.by_key.remove(&k);
        Some(k)
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// The volatile read cache: clean copies of disk blocks, LRU.
#[derive(Clone, Debug)]
pub struct ReadCache {
    capacity: usize,
    lru: Lru,
}

impl ReadCache {
    pub fn new(capacity_blocks: usize) -> ReadCache {
        ReadCache {
            capacity: capacity_blocks,
            lru: Lru::default(),
        }
    }

    /// A hit refreshes the block's recency.
    pub fn lookup(&mut self, k: BlockAddr) -> bool {
        if self.lru.contains(k) {
            self.lru.touch(k);
            true
        } else {
            false
        }
    }

    pub fn contains(&self, k: BlockAddr) -> bool {
        self.lru.contains(k)
    }

    /// Keeps a clean copy of `k`, evicting the least recently used beyond capacity.
    pub fn insert(&mut self, k: BlockAddr) {
        if self.capacity == 0 {
            return;
        }
        self.lru.touch(k);
        while self.lru.len() > self.capacity {
            self.lru.pop_oldest();
        }
    }

    /// Drops a copy that is no longer the disk's contents.
    pub fn invalidate(&mut self, k: BlockAddr) {
        self.lru.remove(k);
    }
}

/// The non-volatile write cache, in blocks.
#[derive(Clone, Debug)]
pub struct WriteCache {
    capacity: usize,
    reserve: usize,
    /// Host data whose parity is not yet computed (overwritten in place), with the time of
    /// its last write.
    dirty: HashMap<BlockAddr, Nanos>,
    /// Versions whose parity is computed (data) or newly computed parity, each waiting for
    /// its destage write: a block may have one here and a newer one dirty.
    pending: HashMap<BlockAddr, u32>,
    pending_total: usize,
    /// Destaged blocks still readable, LRU; their room is reused first.
    available: Lru,
    /// With [`WriteCache::track_evictions`]: available blocks given up for room since the
    /// last [`WriteCache::take_evicted`] (a controller keeping the blocks' bytes frees them).
    evicted: Option<Vec<BlockAddr>>,
}

/// What [`WriteCache::host_write`] did with a block.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Absorbed {
    /// A dirty block overwritten in place.
    InPlace,
    /// A new dirty block.
    New,
}

impl WriteCache {
    /// `capacity_blocks` blocks, `reserve` of them kept for newly computed parity.
    pub fn new(capacity_blocks: usize, reserve: usize) -> WriteCache {
        WriteCache {
            capacity: capacity_blocks,
            reserve,
            dirty: HashMap::new(),
            pending: HashMap::new(),
            pending_total: 0,
            available: Lru::default(),
            evicted: None,
        }
    }

    /// From now on, remember the available blocks trimmed for room.
    pub fn track_evictions(&mut self) {
        self.evicted.get_or_insert_with(Vec::new);
    }

    /// The available blocks trimmed since the last call.
    pub fn take_evicted(&mut self) -> Vec<BlockAddr> {
        self.evicted
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// A version of `k` whose parity is computed waits for its destage write.
    pub fn is_pending(&self, k: BlockAddr) -> bool {
        self.pending.contains_key(&k)
    }

    /// A clean copy of `k` is held (destaged and still readable).
    pub fn is_available(&self, k: BlockAddr) -> bool {
        self.available.contains(k)
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Blocks holding data newer than the disks (dirty and pending).
    pub fn occupied(&self) -> usize {
        self.dirty.len() + self.pending_total
    }

    /// Occupied blocks over capacity, 0 … 1.
    pub fn occupancy(&self) -> f64 {
        if self.capacity == 0 {
            1.0
        } else {
            self.occupied() as f64 / self.capacity as f64
        }
    }

    /// Whether a host write needing `new` fresh blocks fits, keeping the parity reserve.
    pub fn has_room_for_host(&self, new: usize) -> bool {
        self.occupied() + new + self.reserve <= self.capacity
    }

    /// Room for `n` more pending blocks (newly computed parity may use the reserve).
    pub fn free(&self) -> usize {
        self.capacity.saturating_sub(self.occupied())
    }

    pub fn is_dirty(&self, k: BlockAddr) -> bool {
        self.dirty.contains_key(&k)
    }

    /// The block's newest version is in the cache (a read hit).
    pub fn holds(&self, k: BlockAddr) -> bool {
        self.dirty.contains_key(&k) || self.pending.contains_key(&k) || self.available.contains(k)
    }

    /// A version newer than the disk's is here (dirty or waiting for its destage).
    pub fn has_newer(&self, k: BlockAddr) -> bool {
        self.dirty.contains_key(&k) || self.pending.contains_key(&k)
    }

    /// A clean copy (destaged, the disk's contents) is here: usable as old data or parity.
    pub fn holds_clean(&self, k: BlockAddr) -> bool {
        self.available.contains(k)
    }

    /// A host write of block `k` at `now` (call only with room, see
    /// [`WriteCache::has_room_for_host`]).
    pub fn host_write(&mut self, k: BlockAddr, now: Nanos) -> Absorbed {
        if let Some(t) = self.dirty.get_mut(&k) {
            *t = now;
            return Absorbed::InPlace;
        }
        // An available copy is older data: the new version supersedes it.
        self.available.remove(k);
        self.dirty.insert(k, now);
        self.trim();
        Absorbed::New
    }

    /// The dirty block `k`'s parity is computed: it waits for its destage write.
    pub fn computed(&mut self, k: BlockAddr) -> Nanos {
        let t = self.dirty.remove(&k).expect("a dirty block");
        self.add_pending(k);
        t
    }

    /// Newly computed parity `k` is kept until destaged.
    pub fn add_parity(&mut self, k: BlockAddr) {
        self.available.remove(k);
        self.add_pending(k);
        self.trim();
    }

    fn add_pending(&mut self, k: BlockAddr) {
        *self.pending.entry(k).or_insert(0) += 1;
        self.pending_total += 1;
    }

    /// A pending version of `k` reached the disk: the block becomes available (unless a
    /// newer version is dirty or pending).
    pub fn destaged(&mut self, k: BlockAddr) {
        let n = self.pending.get_mut(&k).expect("a pending block");
        *n -= 1;
        self.pending_total -= 1;
        if *n == 0 {
            self.pending.remove(&k);
            if !self.dirty.contains_key(&k) {
                self.available.touch(k);
                self.trim();
            }
        }
    }

    /// A write that bypassed the cache made `k`'s available copy stale.
    pub fn invalidate_available(&mut self, k: BlockAddr) {
        self.available.remove(k);
    }

    /// Available blocks give up their room, least recently used first.
    fn trim(&mut self) {
        while self.occupied() + self.available.len() > self.capacity {
            match self.available.pop_oldest() {
                Some(k) => {
                    if let Some(e) = self.evicted.as_mut() {
                        e.push(k);
                    }
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_before_parity_are_absorbed_and_after_it_take_a_second_block() {
        let mut c = WriteCache::new(8, 3);
        assert_eq!(c.host_write((0, 1), Nanos(1)), Absorbed::New);
        assert_eq!(c.host_write((0, 1), Nanos(2)), Absorbed::InPlace);
        assert_eq!(c.occupied(), 1);
        c.computed((0, 1));
        assert_eq!(c.host_write((0, 1), Nanos(3)), Absorbed::New);
        assert_eq!(c.occupied(), 2, "two versions of one block");
        c.destaged((0, 1));
        assert!(!c.holds_clean((0, 1)), "the newer version is dirty");
        assert_eq!(c.occupied(), 1);
    }

    #[test]
    fn the_parity_reserve_refuses_host_writes_but_not_parity() {
        let mut c = WriteCache::new(5, 3);
        assert!(c.has_room_for_host(2));
        c.host_write((0, 1), Nanos(0));
        c.host_write((0, 2), Nanos(0));
        assert!(!c.has_room_for_host(1), "3 blocks kept for parity");
        c.add_parity((4, 1));
        assert_eq!(c.free(), 2);
        assert!((c.occupancy() - 0.6).abs() < 1e-12);
    }

    #[test]
    fn available_blocks_are_reused_least_recently_used_first() {
        let mut c = WriteCache::new(3, 0);
        for b in 0..3 {
            c.host_write((0, b), Nanos(b));
            c.computed((0, b));
            c.destaged((0, b));
        }
        assert!((0..3).all(|b| c.holds_clean((0, b))));
        c.host_write((1, 9), Nanos(5));
        assert!(!c.holds((0, 0)), "the oldest available block gave its room");
        assert!(c.holds((0, 1)) && c.holds((0, 2)));
    }

    #[test]
    fn the_read_cache_evicts_the_least_recently_used() {
        let mut r = ReadCache::new(2);
        r.insert((0, 1));
        r.insert((0, 2));
        assert!(r.lookup((0, 1)));
        r.insert((0, 3));
        assert!(r.contains((0, 1)) && !r.contains((0, 2)) && r.contains((0, 3)));
    }
}
