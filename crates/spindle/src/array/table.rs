//! The table of pending writes (the NVRAM table with delayed writes, the writes in flight
//! with foreground writes): one entry per piece.
//!
//! Entries live in a slab and keep their index (an [`EntryId`]) for life, so the operations
//! serving an entry and the creation-order queue reach it without a search; a
//! [`PieceIndex`] serves the overlap searches, whose answers come in piece order (the order
//! entries are promoted in).

use super::piece_index::PieceIndex;
use crate::engine::Slab;
use crate::ew::small::InlineVec;
use crate::layout::Layout;
use std::collections::VecDeque;

/// A piece: (column, offset, sectors).
pub(super) type Key = (u32, u64, u32);

/// An entry's operations still to run: a first write and a propagation per mirror, or a
/// write per mirror, kept inline (no allocation, no second cache line to reach).
pub(super) type Ops = InlineVec<usize, 4>;

/// An entry's index in the table, stable while it lives.
pub(super) type EntryId = usize;

/// A pending write of one piece: which copies hold its newest acknowledged data, and the
/// operations still to run.
pub(super) struct Entry {
    pub key: Key,
    /// The newest write accepted for the piece.
    pub version: u64,
    /// The newest write acknowledged (0: none yet; every copy holds the old data).
    pub acked: u64,
    /// Copies holding the acknowledged data: bit m·Dr + k for replica k on mirror m.
    pub fresh: u64,
    pub ops: Ops,
    pub promoted: bool,
    /// The entry's record in the NVRAM image (with data moves on).
    pub nvram_slot: Option<u32>,
}

pub(super) struct Table {
    entries: Slab<Entry>,
    index: PieceIndex,
    /// Entries in creation order, for the NVRAM limit: (id, serial number of the
    /// insertion). An entry that has gone or been promoted leaves its element behind,
    /// skipped when reached.
    order: VecDeque<(EntryId, u64)>,
    /// Per id, the serial number of the entry there if it is in `order` and not promoted,
    /// else 0: what skipping an element reads, a small array that stays in cache rather
    /// than the entry itself.
    waiting: Vec<u64>,
    serial: u64,
    /// Per column, entries inserted so far: while it stays put, the entries overlapping
    /// a piece of the column can only have become fewer.
    inserts: Vec<u64>,
}

impl Table {
    /// `used`: false for a layout with one copy of each sector (no entries ever).
    pub fn new(layout: &Layout, used: bool) -> Table {
        Table {
            entries: Slab::with_capacity(if used { 1024 } else { 0 }),
            index: PieceIndex::new(layout, used),
            order: VecDeque::new(),
            waiting: Vec::new(),
            serial: 0,
            inserts: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds entry `e` (no entry holds its piece); `ordered`: it counts against the NVRAM
    /// limit, in creation order.
    pub fn insert(&mut self, e: Entry, ordered: bool) -> EntryId {
        let (key, promoted) = (e.key, e.promoted);
        debug_assert!(self.find(key).is_none(), "one entry per piece");
        let id = self.entries.insert(e);
        self.index.insert(key, id);
        let column = key.0 as usize;
        if self.inserts.len() <= column {
            self.inserts.resize(column + 1, 0);
        }
        self.inserts[column] += 1;
        if ordered {
            self.serial += 1;
            self.order.push_back((id, self.serial));
            if self.waiting.len() <= id {
                self.waiting.resize(id + 1, 0);
            }
            self.waiting[id] = if promoted { 0 } else { self.serial };
        }
        id
    }

    pub fn remove(&mut self, id: EntryId) -> Entry {
        let e = self.entries.remove(id);
        self.index.remove(e.key, id);
        if let Some(w) = self.waiting.get_mut(id) {
            *w = 0;
        }
        e
    }

    /// Marks entry `id` promoted (its delayed writes moved to the foreground).
    pub fn mark_promoted(&mut self, id: EntryId) {
        self.entries[id].promoted = true;
        if let Some(w) = self.waiting.get_mut(id) {
            *w = 0;
        }
    }

    /// Entries inserted so far for pieces of `column` (see `inserts`).
    pub fn inserts_in(&self, column: u32) -> u64 {
        self.inserts.get(column as usize).copied().unwrap_or(0)
    }

    /// The entry of exactly this piece.
    pub fn find(&self, key: Key) -> Option<EntryId> {
        if self.is_empty() {
            return None;
        }
        self.index.find(key)
    }

    /// The entries overlapping `len` sectors at `offset` of `column`, in piece order.
    pub fn overlapping(&self, column: u32, offset: u64, len: u32) -> Vec<EntryId> {
        if self.is_empty() || !self.index.any(column, offset, len) {
            return Vec::new();
        }
        self.index.overlapping(column, offset, len)
    }

    /// Every entry, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// Every entry, in piece order (a sort: for rare events, not per request).
    pub fn iter(&self) -> impl Iterator<Item = (EntryId, &Entry)> {
        let mut all: Vec<(EntryId, &Entry)> = self.entries.iter_indexed().collect();
        all.sort_unstable_by_key(|(_, e)| e.key);
        all.into_iter()
    }

    /// The oldest entry still counted in creation order that is not promoted, taken off
    /// the order (with the gone or promoted ones before it).
    pub fn pop_oldest_unpromoted(&mut self) -> Option<EntryId> {
        while let Some((id, serial)) = self.order.pop_front() {
            if self.waiting[id] == serial {
                debug_assert!(!self.entries[id].promoted);
                return Some(id);
            }
        }
        None
    }
}

impl std::ops::Index<EntryId> for Table {
    type Output = Entry;
    fn index(&self, id: EntryId) -> &Entry {
        &self.entries[id]
    }
}

impl std::ops::IndexMut<EntryId> for Table {
    fn index_mut(&mut self, id: EntryId) -> &mut Entry {
        &mut self.entries[id]
    }
}
