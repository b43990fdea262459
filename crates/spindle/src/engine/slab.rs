//! A slab: values stored by index, freed indices reused (last freed first), so a
//! controller's operations and host requests are numbered without allocating per event.

use std::ops::{Index, IndexMut};

#[derive(Clone, Debug)]
pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Slab<T> {
        Slab::with_capacity(0)
    }
}

impl<T> Slab<T> {
    pub fn with_capacity(n: usize) -> Slab<T> {
        Slab {
            items: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
        }
    }

    /// Stores `value` and returns its index.
    pub fn insert(&mut self, value: T) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.items[i] = Some(value);
                i
            }
            None => {
                self.items.push(Some(value));
                self.items.len() - 1
            }
        }
    }

    /// Takes the value at `i` out; its index is reused.
    pub fn remove(&mut self, i: usize) -> T {
        let v = self.items[i].take().expect("a live slab entry");
        self.free.push(i);
        v
    }

    /// Asks the CPU to bring in entry `i` (any index: a hint never faults), so a miss on it
    /// overlaps other work; no effect on results.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(slot) = self.items.get(i) {
            super::prefetch(slot);
        }
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.items.get_mut(i).and_then(Option::as_mut)
    }

    /// Live values.
    pub fn len(&self) -> usize {
        self.items.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Live values in index order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten()
    }

    /// Live values with their indices, in index order.
    pub fn iter_indexed(&self) -> impl Iterator<Item = (usize, &T)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i, v)))
    }
}

impl<T> Index<usize> for Slab<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.items[i].as_ref().expect("a live slab entry")
    }
}

impl<T> IndexMut<usize> for Slab<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.items[i].as_mut().expect("a live slab entry")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_indices_are_reused_last_freed_first() {
        let mut s = Slab::default();
        let (a, b, c) = (s.insert('a'), s.insert('b'), s.insert('c'));
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(s.remove(b), 'b');
        assert_eq!(s.remove(a), 'a');
        assert_eq!(s.len(), 1);
        assert_eq!(s.insert('d'), a);
        assert_eq!(s.insert('e'), b);
        assert_eq!(s.iter().collect::<String>(), "dec");
        assert!(s.get(7).is_none());
    }
}
