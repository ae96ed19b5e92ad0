//! A sparse bucket store for the host: counts in pages of 64 buckets,
//! allocated when a bucket in them first gets a count (and kept: snapshots
//! clear and refill the same ranges over and over). A run's memory follows
//! the buckets its latencies actually fall in (a few pages per thread), not
//! its layout's length, while every access stays one index.
//!
//! Every page is charged to the stream's [`Budget`] before it is
//! allocated; a page the budget refuses is not allocated, and the counts
//! that would have gone into it are counted as refused instead.

use std::sync::Arc;

use latscope_core::protocol::BucketStore;
use latscope_core::Error;

use crate::budget::{Budget, PAGE, PAGE_BYTES};

/// Bucket counts in pages allocated on demand.
#[derive(Debug)]
pub(super) struct PagedStore {
    pages: Vec<Option<Box<[u64; PAGE]>>>,
    len: usize,
    budget: Arc<Budget>,
    /// Counts not kept because the budget refused their page.
    refused: u64,
}

impl Default for PagedStore {
    /// A store with a budget of its own, as large as one stream's.
    fn default() -> Self {
        PagedStore::new(Budget::stream())
    }
}

impl PagedStore {
    /// An empty store whose pages are charged to `budget`.
    pub(super) fn new(budget: Arc<Budget>) -> Self {
        PagedStore {
            pages: Vec::new(),
            len: 0,
            budget,
            refused: 0,
        }
    }

    /// Bytes held: the page table and the pages in use.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.pages.capacity() * std::mem::size_of::<Option<Box<[u64; PAGE]>>>()
            + self.used_pages() * std::mem::size_of::<[u64; PAGE]>()
    }

    fn used_pages(&self) -> usize {
        self.pages.iter().filter(|p| p.is_some()).count()
    }

    /// Counts that were not kept because the stream's memory budget
    /// refused their page.
    pub(super) fn refused(&self) -> u64 {
        self.refused
    }

    /// The counts, one per bucket.
    pub(super) fn dense(&self) -> Vec<u64> {
        let mut v = vec![0; self.len];
        for (i, c) in self.nonzero() {
            v[i] = c;
        }
        v
    }

    /// Bucket `i`'s page, allocated (and charged) if it is not yet;
    /// `None` past the end or when the budget refuses the page.
    fn page_mut(&mut self, i: usize) -> Option<&mut [u64; PAGE]> {
        if i >= self.len {
            return None;
        }
        let slot = self.pages.get_mut(i / PAGE)?;
        if slot.is_none() {
            if !self.budget.charge(PAGE_BYTES) {
                self.refused += 1;
                return None;
            }
            *slot = Some(Box::new([0; PAGE]));
        }
        slot.as_deref_mut()
    }

    /// Drop every page and give its charge back.
    fn free_pages(&mut self) {
        self.budget.release(self.used_pages() * PAGE_BYTES);
        self.pages.clear();
    }
}

impl Drop for PagedStore {
    fn drop(&mut self) {
        self.free_pages();
    }
}

impl BucketStore for PagedStore {
    fn reset(&mut self, len: usize) -> Result<(), Error> {
        self.free_pages();
        self.pages.resize(len.div_ceil(PAGE), None);
        self.pages.shrink_to_fit();
        self.len = len;
        Ok(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> u64 {
        match self.pages.get(i / PAGE) {
            Some(Some(p)) if i < self.len => p[i % PAGE],
            _ => 0,
        }
    }

    fn add(&mut self, i: usize, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(p) = self.page_mut(i) {
            let c = &mut p[i % PAGE];
            *c = c.saturating_add(n);
        }
    }

    fn set(&mut self, i: usize, n: u64) -> u64 {
        if n == 0 && self.get(i) == 0 {
            return 0;
        }
        match self.page_mut(i) {
            Some(p) => std::mem::replace(&mut p[i % PAGE], n),
            None => 0,
        }
    }

    fn clear(&mut self, from: usize, to: usize) -> u64 {
        let to = to.min(self.len);
        let mut removed = 0u64;
        let mut i = from;
        while i < to {
            let (page, lo) = (i / PAGE, i % PAGE);
            let hi = (to - page * PAGE).min(PAGE);
            if let Some(Some(p)) = self.pages.get_mut(page) {
                for c in &mut p[lo..hi] {
                    removed = removed.wrapping_add(std::mem::take(c));
                }
            }
            i = page * PAGE + hi;
        }
        removed
    }

    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.pages
            .iter()
            .enumerate()
            .filter_map(|(k, p)| p.as_ref().map(|p| (k, p)))
            .flat_map(|(k, p)| {
                p.iter()
                    .enumerate()
                    .filter(|(_, &c)| c != 0)
                    .map(move |(j, &c)| (k * PAGE + j, c))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_core::protocol::ArrayStore;

    /// The same operations on a paged and an array store agree.
    #[test]
    fn agrees_with_a_fixed_array() {
        let mut p = PagedStore::default();
        let mut a = ArrayStore::<300>::new();
        p.reset(300).unwrap();
        a.reset(300).unwrap();
        let mut x = 0x9E37_79B9u64;
        for step in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % 310) as usize;
            match step % 4 {
                0 | 1 => {
                    p.add(i, x % 5);
                    a.add(i, x % 5);
                }
                2 => assert_eq!(p.set(i, x % 3), a.set(i, x % 3)),
                _ => {
                    let to = i + (x >> 20) as usize % 150;
                    assert_eq!(p.clear(i, to), a.clear(i, to));
                }
            }
            assert_eq!(p.get(i), a.get(i));
        }
        assert_eq!(p.dense(), a.counts());
        assert!(p.nonzero().eq(a.nonzero()));
    }

    #[test]
    fn memory_follows_the_buckets_used() {
        let mut p = PagedStore::default();
        p.reset(21_482).unwrap();
        let empty = p.bytes();
        assert!(empty < 4_000, "{empty}");
        for i in 10..60 {
            p.add(i, 3);
        }
        p.add(5_000, 1);
        assert_eq!(p.bytes(), empty + 2 * PAGE * 8);
        // cleared and refilled: no new pages
        p.clear(0, 21_482);
        p.add(40, 1);
        assert_eq!(p.bytes(), empty + 2 * PAGE * 8);
        p.reset(21_482).unwrap();
        assert_eq!(p.bytes(), empty);
    }
}
