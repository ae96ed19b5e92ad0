//! A sparse bucket store for the host: counts in pages of 64 buckets,
//! allocated when a bucket in them first gets a count (and kept: snapshots
//! clear and refill the same ranges over and over). A run's memory follows
//! the buckets its latencies actually fall in (a few pages per thread), not
//! its layout's length, while every access stays one index.

use latscope_core::protocol::BucketStore;
use latscope_core::Error;

/// Buckets per page.
const PAGE: usize = 64;

/// Bucket counts in pages allocated on demand.
#[derive(Debug, Clone, Default)]
pub struct PagedStore {
    pages: Vec<Option<Box<[u64; PAGE]>>>,
    len: usize,
}

impl PagedStore {
    /// Bytes held: the page table and the pages in use.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        let used = self.pages.iter().filter(|p| p.is_some()).count();
        self.pages.capacity() * std::mem::size_of::<Option<Box<[u64; PAGE]>>>()
            + used * std::mem::size_of::<[u64; PAGE]>()
    }

    /// The counts, one per bucket.
    pub fn dense(&self) -> Vec<u64> {
        let mut v = vec![0; self.len];
        for (i, c) in self.nonzero() {
            v[i] = c;
        }
        v
    }

    fn page_mut(&mut self, i: usize) -> Option<&mut [u64; PAGE]> {
        if i >= self.len {
            return None;
        }
        let slot = self.pages.get_mut(i / PAGE)?;
        Some(slot.get_or_insert_with(|| Box::new([0; PAGE])))
    }
}

impl BucketStore for PagedStore {
    fn reset(&mut self, len: usize) -> Result<(), Error> {
        self.pages.clear();
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
