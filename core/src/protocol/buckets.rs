//! Where an [`super::Assembler`] keeps a histogram's counts.
//!
//! The assembler needs little from its storage: read, add to and set one
//! bucket, clear a range, and walk the non-empty buckets. So the storage
//! is the caller's choice: [`ArrayStore`], a fixed array sized at compile
//! time for bare-metal receivers, or (on a host) a sparse store whose
//! memory follows the buckets a run actually uses.

use crate::error::Error;

/// One histogram's bucket counts, all zero until set.
pub trait BucketStore {
    /// Make the store `len` buckets long, all zero. Fails if it cannot
    /// hold that many.
    ///
    /// # Errors
    ///
    /// [`Error::BucketMemory`] if the store cannot hold `len` buckets.
    fn reset(&mut self, len: usize) -> Result<(), Error>;

    /// The number of buckets.
    fn len(&self) -> usize;

    /// Whether the store has no buckets.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The count of bucket `i` (0 past the end).
    fn get(&self, i: usize) -> u64;

    /// Add `n` to bucket `i` (saturating); nothing past the end.
    fn add(&mut self, i: usize, n: u64);

    /// Set bucket `i` to `n` and return what it held; nothing past the end.
    fn set(&mut self, i: usize, n: u64) -> u64;

    /// Set the buckets `from..to` to 0 and return what they held in all
    /// (wrapping).
    fn clear(&mut self, from: usize, to: usize) -> u64;

    /// The non-empty buckets in increasing order, with their counts.
    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_;
}

/// A fixed array of `N` counters: no allocation, `8 × N` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayStore<const N: usize> {
    counts: [u64; N],
    len: usize,
}

impl<const N: usize> ArrayStore<N> {
    /// An empty store that can hold up to `N` buckets.
    pub const fn new() -> Self {
        ArrayStore {
            counts: [0; N],
            len: 0,
        }
    }

    /// The counts, one per bucket.
    pub fn counts(&self) -> &[u64] {
        self.counts.get(..self.len).unwrap_or(&[])
    }
}

impl<const N: usize> Default for ArrayStore<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> BucketStore for ArrayStore<N> {
    fn reset(&mut self, len: usize) -> Result<(), Error> {
        if len > N {
            return Err(Error::IllegalLayout);
        }
        self.counts = [0; N];
        self.len = len;
        Ok(())
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> u64 {
        self.counts().get(i).copied().unwrap_or(0)
    }

    fn add(&mut self, i: usize, n: u64) {
        if let Some(c) = self.counts.get_mut(..self.len).and_then(|s| s.get_mut(i)) {
            *c = c.saturating_add(n);
        }
    }

    fn set(&mut self, i: usize, n: u64) -> u64 {
        match self.counts.get_mut(..self.len).and_then(|s| s.get_mut(i)) {
            Some(c) => core::mem::replace(c, n),
            None => 0,
        }
    }

    fn clear(&mut self, from: usize, to: usize) -> u64 {
        let to = to.min(self.len);
        let mut removed = 0u64;
        if let Some(range) = self.counts.get_mut(from.min(to)..to) {
            for c in range {
                removed = removed.wrapping_add(core::mem::take(c));
            }
        }
        removed
    }

    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts()
            .iter()
            .enumerate()
            .filter(|(_, c)| **c != 0)
            .map(|(i, c)| (i, *c))
    }
}
