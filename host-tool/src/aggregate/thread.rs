//! One measuring thread's state on the host: its histogram, the epoch it is
//! exact as of, its latest statistics, and the assembly of delta parts and
//! snapshot chunks.
//!
//! The histogram only ever receives true counts: delta parts (increments)
//! and complete snapshots (cumulative values). So it is always a lower bound
//! of the target's histogram at the same epoch, and it is exact exactly when
//! its total equals the `count` of that epoch's [`ThreadStats`]. That check
//! decides exactness; a lost delta part or report makes the sum fall short
//! until the next complete snapshot epoch replaces the histogram.

use latscope_core::layout::Layout;
use latscope_core::wire::{HistDelta, SnapshotChunk, ThreadInfo, ThreadStats};

use super::series::MaxSeries;
use super::spikes::SpikeList;

/// Parts of one report's delta, collected until the report is complete.
#[derive(Debug, Default)]
struct DeltaAsm {
    epoch: u32,
    parts: u16,
    got: Vec<bool>,
    entries: Vec<(u16, u32)>,
    active: bool,
}

/// Chunks of one snapshot epoch, collected into a cumulative vector that
/// exists only while a snapshot is being collected (a listening recorder
/// holds hundreds of runs).
#[derive(Debug)]
struct SnapAsm {
    epoch: u32,
    total: u16,
    got: Vec<bool>,
    counts: Vec<u64>,
    active: bool,
}

/// What the host knows about one measuring thread.
#[derive(Debug)]
pub struct ThreadAgg {
    /// From the hello, if it described this thread.
    pub info: Option<ThreadInfo>,
    /// Cumulative bucket counts as of [`ThreadAgg::hist_epoch`].
    pub hist: Vec<u64>,
    hist_total: u64,
    /// The report the histogram reflects (`None`: nothing applied yet).
    pub hist_epoch: Option<u32>,
    /// Whether the histogram was verified exact at `hist_epoch`.
    pub exact: bool,
    /// The latest epoch at which the histogram was verified exact.
    pub exact_epoch: Option<u32>,
    /// The latest statistics received.
    pub stats: Option<ThreadStats>,
    /// Max latency per report interval, bounded.
    pub series: MaxSeries,
    /// Spike records of this thread, bounded.
    pub spikes: SpikeList,
    /// Delta parts for reports at or before the applied epoch (ignored).
    pub stale_parts: u64,
    /// Entries naming buckets outside the layout (ignored).
    pub bad_entries: u64,
    delta: DeltaAsm,
    snap: SnapAsm,
}

impl ThreadAgg {
    /// An empty thread for a histogram of `layout`.
    pub fn new(layout: &Layout, info: Option<ThreadInfo>, overflow_keep: usize) -> Self {
        ThreadAgg {
            info,
            hist: vec![0; layout.len()],
            hist_total: 0,
            hist_epoch: None,
            exact: false,
            exact_epoch: None,
            stats: None,
            series: MaxSeries::new(4096),
            spikes: SpikeList::new(32, overflow_keep),
            stale_parts: 0,
            bad_entries: 0,
            delta: DeltaAsm::default(),
            snap: SnapAsm {
                epoch: 0,
                total: 0,
                got: Vec::new(),
                counts: Vec::new(),
                active: false,
            },
        }
    }

    /// Sum of the histogram's counts.
    pub fn hist_total(&self) -> u64 {
        self.hist_total
    }

    fn applied(&self, epoch: u32) -> bool {
        self.hist_epoch.is_some_and(|e| epoch <= e)
    }

    /// A delta part arrived.
    pub fn on_delta(&mut self, d: &HistDelta) {
        if self.snap.active && self.snap.epoch < d.epoch {
            // The snapshot's own statistics were lost; its counts are still
            // the cumulative truth as of its epoch.
            self.try_adopt_snapshot(true);
        }
        if self.applied(d.epoch) {
            self.stale_parts += 1;
            return;
        }
        if self.delta.active && self.delta.epoch != d.epoch {
            self.finish_delta();
        }
        if !self.delta.active {
            self.delta.active = true;
            self.delta.epoch = d.epoch;
            self.delta.parts = d.parts.max(1);
            self.delta.got.clear();
            self.delta.got.resize(usize::from(self.delta.parts), false);
            self.delta.entries.clear();
        }
        match self.delta.got.get_mut(usize::from(d.part)) {
            Some(g) if !*g => *g = true,
            // A duplicate or out-of-range part: nothing to add.
            _ => return,
        }
        self.delta
            .entries
            .extend(d.entries.iter().map(|e| (e.bucket, e.count)));
        if self.delta.got.iter().all(|&g| g) {
            self.finish_delta();
        }
    }

    /// Apply the collected parts of the pending report, complete or not.
    fn finish_delta(&mut self) {
        if !self.delta.active {
            return;
        }
        self.delta.active = false;
        let epoch = self.delta.epoch;
        if self.applied(epoch) {
            return;
        }
        let follows = match self.hist_epoch {
            Some(e) => e.checked_add(1) == Some(epoch),
            None => epoch <= 1,
        };
        let complete = self.delta.got.iter().all(|&g| g);
        for &(bucket, count) in &self.delta.entries {
            match self.hist.get_mut(usize::from(bucket)) {
                Some(c) => {
                    *c = c.saturating_add(u64::from(count));
                    self.hist_total = self.hist_total.saturating_add(u64::from(count));
                }
                None => self.bad_entries += 1,
            }
        }
        self.exact = self.exact && follows && complete;
        if self.hist_epoch.is_none() && follows && complete {
            self.exact = true;
        }
        self.hist_epoch = Some(epoch);
        self.verify();
    }

    /// Cumulative statistics arrived.
    pub fn on_stats(&mut self, s: &ThreadStats) {
        if self.delta.active && self.delta.epoch <= s.epoch {
            self.finish_delta();
        }
        let newer = self.stats.is_none_or(|old| s.epoch >= old.epoch);
        if newer {
            self.stats = Some(*s);
            self.series.push(s.epoch, s.elapsed_ns, s.interval_max);
        }
        self.try_adopt_snapshot(false);
        self.verify();
    }

    /// A snapshot chunk arrived.
    pub fn on_chunk(&mut self, c: &SnapshotChunk) {
        if self.snap.active && self.snap.epoch != c.epoch {
            self.snap.active = false;
        }
        if !self.snap.active {
            if self.hist_epoch.is_some_and(|e| c.epoch < e) && self.exact {
                // Older than an exact histogram: nothing to gain.
                self.stale_parts += 1;
                return;
            }
            self.snap.active = true;
            self.snap.epoch = c.epoch;
            self.snap.total = c.total.max(1);
            self.snap.got.clear();
            self.snap.got.resize(usize::from(self.snap.total), false);
            self.snap.counts.clear();
            self.snap.counts.resize(self.hist.len(), 0);
        }
        match self.snap.got.get_mut(usize::from(c.index)) {
            Some(g) if !*g => *g = true,
            _ => return,
        }
        for e in &c.entries {
            match self.snap.counts.get_mut(usize::from(e.bucket)) {
                Some(x) => *x = e.count,
                None => self.bad_entries += 1,
            }
        }
        self.try_adopt_snapshot(false);
    }

    /// Replace the histogram with a complete snapshot whose epoch's
    /// statistics have arrived (or, with `force`, whose statistics were lost).
    fn try_adopt_snapshot(&mut self, force: bool) {
        if !self.snap.active || !self.snap.got.iter().all(|&g| g) {
            return;
        }
        let epoch = self.snap.epoch;
        if !force && self.stats.is_none_or(|s| s.epoch != epoch) {
            return;
        }
        if self.delta.active && self.delta.epoch <= epoch {
            self.delta.active = false;
        }
        self.snap.active = false;
        let counts = std::mem::take(&mut self.snap.counts);
        if self.hist_epoch.is_some_and(|e| e > epoch) {
            return;
        }
        self.hist.copy_from_slice(&counts);
        self.hist_total = self.hist.iter().fold(0u64, |a, &c| a.saturating_add(c));
        self.hist_epoch = Some(epoch);
        self.exact = true;
        self.verify();
    }

    /// Compare the histogram with the statistics of the same epoch.
    fn verify(&mut self) {
        let (Some(s), Some(e)) = (self.stats, self.hist_epoch) else {
            return;
        };
        if s.epoch != e {
            return;
        }
        self.exact = self.hist_total == s.count;
        if self.exact {
            self.exact_epoch = Some(e);
        }
    }

    /// End of input: apply whatever delta parts are still pending.
    pub fn finish(&mut self) {
        self.finish_delta();
    }

    /// Whether the histogram is exact as of the latest statistics.
    pub fn exact_now(&self) -> bool {
        match (self.stats, self.hist_epoch) {
            (Some(s), Some(e)) => self.exact && s.epoch == e,
            _ => false,
        }
    }
}
