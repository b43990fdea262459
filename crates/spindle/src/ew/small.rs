//! Small containers for the eager-writing controller's per-block bookkeeping, which is
//! created and dropped once per written block: a vector that keeps its first few items
//! inline (no allocation for the usual one or two), and a hash map keyed by integers with a
//! fixed (seeded by nothing) hash, for lookups by block or location.
//!
//! The maps are never iterated (STYLE.md, determinism): they answer lookups only, so the
//! hash order cannot reach a result.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash of integer keys (the rustc "Fx" hash): one multiply per word.
#[derive(Default, Clone, Copy)]
pub struct IntHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl IntHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        // The table uses the top bits for its control bytes and the low ones for the
        // bucket: fold the high half down so both see the key.
        self.hash ^ (self.hash >> 32)
    }
}

/// A hash map for integer keys; never iterated by the core.
pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;
/// A hash set for integer keys; never iterated by the core.
pub type IntSet<K> = HashSet<K, BuildHasherDefault<IntHasher>>;

/// A vector of `Copy` items whose first `N` live inline.
#[derive(Clone)]
pub struct InlineVec<T: Copy + Default, const N: usize> {
    len: usize,
    inline: [T; N],
    /// All items once there are more than `N` (the inline ones are then unused).
    heap: Vec<T>,
}

impl<T: Copy + Default, const N: usize> InlineVec<T, N> {
    pub fn new() -> Self {
        InlineVec {
            len: 0,
            inline: [T::default(); N],
            heap: Vec::new(),
        }
    }

    /// `len` copies of `value`.
    pub fn filled(value: T, len: usize) -> Self {
        let mut v = Self::new();
        if len <= N {
            v.inline[..len].fill(value);
        } else {
            v.heap = vec![value; len];
        }
        v.len = len;
        v
    }

    pub fn as_slice(&self) -> &[T] {
        if self.len <= N {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if self.len <= N {
            &mut self.inline[..self.len]
        } else {
            &mut self.heap
        }
    }

    /// One item.
    pub fn one(x: T) -> Self {
        let mut v = Self::new();
        v.push(x);
        v
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, x: T) {
        if self.len < N {
            self.inline[self.len] = x;
        } else {
            if self.len == N {
                self.heap.clear();
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(x);
        }
        self.len += 1;
        debug_assert!(self.len <= N || self.heap.len() == self.len);
    }

    /// Keeps the items `keep` accepts, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        if self.len <= N {
            let mut k = 0;
            for i in 0..self.len {
                let x = self.inline[i];
                if keep(&x) {
                    self.inline[k] = x;
                    k += 1;
                }
            }
            self.len = k;
            return;
        }
        self.heap.retain(|x| keep(x));
        self.len = self.heap.len();
        if self.len <= N {
            self.inline[..self.len].copy_from_slice(&self.heap);
            self.heap.clear();
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.as_mut_slice().iter_mut()
    }
}

impl<T: Copy + Default, const N: usize> Default for InlineVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default, const N: usize> std::ops::Index<usize> for InlineVec<T, N> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.as_slice()[i]
    }
}

impl<T: Copy + Default, const N: usize> std::ops::IndexMut<usize> for InlineVec<T, N> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.as_mut_slice()[i]
    }
}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for InlineVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_vec_matches_vec() {
        let mut v: InlineVec<u32, 2> = InlineVec::new();
        let mut r: Vec<u32> = Vec::new();
        for i in 0..7u32 {
            v.push(i);
            r.push(i);
            assert_eq!(v.as_slice(), &r[..]);
        }
        v.retain(|&x| x % 3 == 0);
        r.retain(|&x| x % 3 == 0);
        assert_eq!(v.as_slice(), &r[..]);
        v.retain(|&x| x == 3);
        r.retain(|&x| x == 3);
        assert_eq!(v.as_slice(), &r[..]);
        v.push(9);
        v.push(10);
        r.push(9);
        r.push(10);
        assert_eq!(v.as_slice(), &r[..]);
        for x in v.iter_mut() {
            *x += 1;
        }
        assert_eq!(v.as_slice(), &[4, 10, 11]);
        let f: InlineVec<u64, 2> = InlineVec::filled(5, 3);
        assert_eq!(f.as_slice(), &[5, 5, 5]);
        assert!(!f.is_empty());
    }

    #[test]
    fn int_map_finds_keys() {
        let mut m: IntMap<(usize, u32), u32> = IntMap::default();
        for d in 0..40usize {
            for s in 0..100u32 {
                m.insert((d, s * 7), s);
            }
        }
        assert_eq!(m.len(), 4000);
        assert_eq!(m.get(&(39, 693)), Some(&99));
        assert_eq!(m.get(&(39, 694)), None);
    }
}
