//! The receiving side: one thread's frames in, its exact histogram out
//! (see "Exactness" in [`super`]).

use crate::error::Error;
use crate::layout::{Layout, MAX_TARGET_BUCKETS};
use crate::wire::{Body, HistDelta, Runs, SnapshotChunk, ThreadStats, RUN_BYTES};

use super::BucketStore;

/// Delta parts of one report an assembler can tell apart.
const MAX_PARTS: usize = 1024;
// A pair of a delta takes at most 8 bytes (a 16-bit skip and a 32-bit
// count), so a legal layout's delta never needs more parts.
const _: () = assert!(MAX_TARGET_BUCKETS.div_ceil(RUN_BYTES / 8) <= MAX_PARTS);

/// One measuring thread's histogram, assembled from its delta parts,
/// snapshot chunks and statistics, kept in a [`BucketStore`].
///
/// Frames of other threads must not be given to it: the caller routes by
/// the frames' `thread`.
#[derive(Debug, Clone)]
pub struct Assembler<S> {
    layout: Layout,
    store: S,
    total: u64,
    epoch: Option<u32>,
    parts: [u64; MAX_PARTS / 64],
    chunked: bool,
    stats: Option<ThreadStats>,
    /// The epoch and count of the latest statistics.
    count: Option<(u32, u64)>,
    exact_epoch: Option<u32>,
    stale: u64,
    bad: u64,
}

impl<S: BucketStore> Assembler<S> {
    /// An empty histogram of `layout` in `store`. Fails on a layout no
    /// latscope target can produce ([`Layout::is_legal`]) or one the store
    /// cannot hold.
    ///
    /// # Errors
    ///
    /// [`Error::IllegalLayout`], or the store's error when it cannot hold the
    /// layout's buckets ([`BucketStore::reset`]).
    pub fn new(layout: Layout, mut store: S) -> Result<Self, Error> {
        if !layout.is_legal() {
            return Err(Error::IllegalLayout);
        }
        store.reset(layout.len())?;
        Ok(Assembler {
            layout,
            store,
            total: 0,
            epoch: None,
            parts: [0; MAX_PARTS / 64],
            chunked: false,
            stats: None,
            count: None,
            exact_epoch: None,
            stale: 0,
            bad: 0,
        })
    }

    /// The bucket layout.
    pub const fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The cumulative counts, as of [`Assembler::epoch`].
    pub const fn counts(&self) -> &S {
        &self.store
    }

    /// The sum of the counts.
    pub const fn total(&self) -> u64 {
        self.total
    }

    /// The report the counts belong to (`None`: nothing applied yet).
    pub const fn epoch(&self) -> Option<u32> {
        self.epoch
    }

    /// The latest statistics received.
    pub const fn stats(&self) -> Option<&ThreadStats> {
        self.stats.as_ref()
    }

    /// The latest epoch at which the histogram was verified exact.
    pub const fn exact_epoch(&self) -> Option<u32> {
        self.exact_epoch
    }

    /// Frames of an older epoch than the histogram's, and repeated delta
    /// parts: ignored.
    pub const fn stale(&self) -> u64 {
        self.stale
    }

    /// Frames naming buckets outside the layout or with malformed runs:
    /// ignored.
    #[cfg(test)]
    pub(crate) const fn bad(&self) -> u64 {
        self.bad
    }

    /// Whether the histogram is exact as of the latest statistics: same
    /// epoch, and its total is their count.
    pub fn exact_now(&self) -> bool {
        match (self.count, self.epoch) {
            (Some((epoch, count)), Some(e)) => epoch == e && count == self.total,
            _ => false,
        }
    }

    /// Apply a delta, statistics or snapshot chunk; `false` for any other
    /// body.
    pub fn apply(&mut self, body: &Body) -> bool {
        match body {
            Body::Delta(d) => self.on_delta(d),
            Body::Stats(s) => {
                self.on_stats(s);
            }
            Body::Chunk(c) => self.on_chunk(c),
            _ => return false,
        }
        true
    }

    /// Move to `epoch` if it is newer; `false` if it is older than the
    /// histogram's (the frame is stale).
    fn advance(&mut self, epoch: u32) -> bool {
        match self.epoch {
            Some(e) if epoch < e => false,
            Some(e) if epoch == e => true,
            _ => {
                self.epoch = Some(epoch);
                self.parts = [0; MAX_PARTS / 64];
                self.chunked = false;
                true
            }
        }
    }

    /// A delta part arrived: add its increments, once per part and epoch,
    /// unless a snapshot chunk of its epoch was applied already (which
    /// holds them).
    pub fn on_delta(&mut self, d: &HistDelta) {
        self.delta(d.epoch, d.part, d.start, &d.runs);
    }

    /// A delta part of report `epoch`, number `part`, with `runs` from
    /// bucket `start` (a [`HistDelta`]'s, or a timerlat histogram's).
    pub(crate) fn delta(&mut self, epoch: u32, part: u16, start: u16, runs: &Runs) {
        if !self.advance(epoch) || self.chunked {
            self.stale += 1;
            return;
        }
        let part = usize::from(part);
        let Some(word) = self.parts.get(part / 64).copied() else {
            self.bad += 1;
            return;
        };
        let bit = 1u64 << (part % 64);
        if word & bit != 0 {
            self.stale += 1;
            return;
        }
        // One pass: a malformed part (rare: it passed the CRC) is taken
        // back out.
        let len = self.layout.len();
        let mut added = 0usize;
        for p in runs.iter(start) {
            match p {
                Ok((b, n)) if usize::from(b) < len => {
                    self.store.add(usize::from(b), n);
                    self.total = self.total.wrapping_add(n);
                    added += 1;
                }
                _ => {
                    self.undo(start, runs, added);
                    self.bad += 1;
                    return;
                }
            }
        }
        if let Some(w) = self.parts.get_mut(part / 64) {
            *w |= bit;
        }
        self.verify();
    }

    /// Take the first `added` pairs of `runs` (from `start`) back out.
    fn undo(&mut self, start: u16, runs: &Runs, added: usize) {
        for (b, n) in runs.iter(start).flatten().take(added) {
            let i = usize::from(b);
            let old = self.store.get(i);
            self.store.set(i, old.saturating_sub(n));
            self.total = self.total.wrapping_sub(n);
        }
    }

    /// Cumulative statistics arrived; returns whether they are the newest.
    pub fn on_stats(&mut self, s: &ThreadStats) -> bool {
        let newer = self.on_count(s.epoch, s.count);
        if newer {
            self.stats = Some(*s);
        }
        newer
    }

    /// The count of report `epoch` arrived (of a [`ThreadStats`], or a
    /// timerlat histogram's); returns whether it is the newest.
    pub(crate) fn on_count(&mut self, epoch: u32, count: u64) -> bool {
        let newer = self.count.is_none_or(|(old, _)| epoch >= old);
        if newer {
            self.count = Some((epoch, count));
        }
        self.verify();
        newer
    }

    /// A snapshot chunk arrived: its range takes the target's cumulative
    /// counts (of the histogram's epoch, or a newer one it moves to).
    ///
    /// Malformed runs (a forged frame: a sender never makes them) stop the
    /// chunk where they start; the rest of its range stays cleared, so the
    /// histogram is still no more than the truth.
    pub fn on_chunk(&mut self, c: &SnapshotChunk) {
        self.chunk(c.epoch, c.start, c.end, &c.runs);
    }

    /// A snapshot chunk of report `epoch` for the buckets `start..end`,
    /// with `runs` (a [`SnapshotChunk`]'s, or a timerlat histogram's).
    pub(crate) fn chunk(&mut self, epoch: u32, start: u16, end: u16, runs: &Runs) {
        let len = self.layout.len();
        let from = start;
        let (start, end) = (usize::from(start), usize::from(end).min(len));
        if start > end {
            self.bad += 1;
            return;
        }
        if !self.advance(epoch) {
            self.stale += 1;
            return;
        }
        self.chunked = true;
        self.total = self.total.wrapping_sub(self.store.clear(start, end));
        for p in runs.iter(from) {
            match p {
                Ok((b, n)) if usize::from(b) < end => {
                    // the range was cleared: adding sets
                    self.store.add(usize::from(b), n);
                    self.total = self.total.wrapping_add(n);
                }
                _ => {
                    self.bad += 1;
                    break;
                }
            }
        }
        self.verify();
    }

    /// Compare the histogram with the statistics of its epoch.
    fn verify(&mut self) {
        if self.exact_now() {
            self.exact_epoch = self.epoch;
        }
    }
}
