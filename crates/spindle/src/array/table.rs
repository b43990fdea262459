//! The table of pending writes (the NVRAM table with delayed writes, the writes in flight
//! with foreground writes): one entry per piece.
//!
//! Entries live in a slab and keep their index (an [`EntryId`]) for life, so the operations
//! serving an entry and the creation-order queue reach it without a search; an ordered
//! index by piece serves the overlap searches (in piece order, which decides the order
//! entries are promoted in), behind a per-granule filter that mostly answers "none".

use super::coverage::Coverage;
use crate::engine::Slab;
use crate::layout::{Layout, Piece};
use std::collections::{BTreeMap, VecDeque};

/// A piece: (column, offset, sectors).
pub(super) type Key = (u32, u64, u32);

/// An entry's index in the table, stable while it lives.
pub(super) type EntryId = usize;

/// A pending write of one piece: which copies hold its newest acknowledged data, and the
/// operations still to run.
pub(super) struct Entry {
    pub key: Key,
    /// The newest write accepted for the piece.
    pub version: u64,
    /// The write that created the entry: an entry later made for the same piece is
    /// another one.
    pub created: u64,
    /// The newest write acknowledged (0: none yet; every copy holds the old data).
    pub acked: u64,
    /// Copies holding the acknowledged data: bit m·Dr + k for replica k on mirror m.
    pub fresh: u64,
    pub ops: Vec<usize>,
    pub promoted: bool,
    /// The entry's record in the NVRAM image (with data moves on).
    pub nvram_slot: Option<u32>,
}

pub(super) struct Table {
    entries: Slab<Entry>,
    by_key: BTreeMap<Key, EntryId>,
    /// Which granules of the data the entries touch: a read or write touching none
    /// overlaps no entry, without a search.
    cover: Coverage,
    /// Entries in creation order, for the NVRAM limit: (id, key, `created`). An entry that
    /// has gone leaves its element behind, skipped when reached: (key, `created`) names
    /// one entry ever, so a reused id is told apart.
    order: VecDeque<(EntryId, Key, u64)>,
    /// The longest piece seen (bounds how far before an offset an overlapping entry starts).
    longest_piece: u32,
}

impl Table {
    /// `used`: false for a layout with one copy of each sector (no entries ever).
    pub fn new(layout: &Layout, used: bool) -> Table {
        Table {
            entries: Slab::with_capacity(if used { 1024 } else { 0 }),
            by_key: BTreeMap::new(),
            cover: Coverage::new(layout, used),
            order: VecDeque::new(),
            longest_piece: 1,
        }
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// A piece of this many sectors may have an entry.
    pub fn note_piece(&mut self, sectors: u32) {
        self.longest_piece = self.longest_piece.max(sectors);
    }

    /// Adds entry `e` (no entry holds its piece); `ordered`: it counts against the NVRAM
    /// limit, in creation order.
    pub fn insert(&mut self, e: Entry, ordered: bool) -> EntryId {
        let (key, created) = (e.key, e.created);
        self.cover.add(&piece_of(key));
        let id = self.entries.insert(e);
        let before = self.by_key.insert(key, id);
        debug_assert!(before.is_none(), "one entry per piece");
        if ordered {
            self.order.push_back((id, key, created));
        }
        id
    }

    pub fn remove(&mut self, id: EntryId) -> Entry {
        let e = self.entries.remove(id);
        self.by_key.remove(&e.key);
        self.cover.remove(&piece_of(e.key));
        e
    }

    /// The entry of exactly this piece.
    pub fn find(&self, key: Key) -> Option<EntryId> {
        if !self.cover.any(key.0, key.1, key.2) {
            return None;
        }
        self.by_key.get(&key).copied()
    }

    /// The entries overlapping `len` sectors at `offset` of `column`, in piece order.
    pub fn overlapping(&self, column: u32, offset: u64, len: u32) -> Vec<EntryId> {
        if self.by_key.is_empty() || !self.cover.any(column, offset, len) {
            return Vec::new();
        }
        let lo = (
            column,
            offset.saturating_sub(u64::from(self.longest_piece)),
            0,
        );
        let end = offset + u64::from(len);
        self.by_key
            .range(lo..(column, end, 0))
            .filter(|(k, _)| k.1 + u64::from(k.2) > offset)
            .map(|(_, &id)| id)
            .collect()
    }

    /// Every entry, in piece order.
    pub fn iter(&self) -> impl Iterator<Item = (EntryId, &Entry)> {
        self.by_key.values().map(|&id| (id, &self.entries[id]))
    }

    /// The oldest entry still counted in creation order that is not promoted, taken off
    /// the order (with the gone or promoted ones before it).
    pub fn pop_oldest_unpromoted(&mut self) -> Option<EntryId> {
        while let Some((id, key, created)) = self.order.pop_front() {
            if self
                .entries
                .get(id)
                .is_some_and(|e| e.key == key && e.created == created && !e.promoted)
            {
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

pub(super) fn piece_of(key: Key) -> Piece {
    Piece {
        column: key.0,
        offset: key.1,
        sectors: key.2,
    }
}
