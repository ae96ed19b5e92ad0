//! One measuring thread on the host: its histogram, assembled by core's
//! [`Assembler`] into a sparse [`PagedStore`], and what the reports show
//! beside it (the max over time, the spikes).

use latscope_core::layout::Layout;
use latscope_core::protocol::Assembler;
use latscope_core::wire::{HistDelta, SnapshotChunk, ThreadInfo, ThreadStats};
use latscope_core::Error;

use super::series::MaxSeries;
use super::spikes::SpikeList;
use super::store::PagedStore;

/// What the host knows about one measuring thread.
#[derive(Debug)]
pub struct ThreadAgg {
    /// From the hello, if it described this thread.
    pub info: Option<ThreadInfo>,
    asm: Assembler<PagedStore>,
    /// Max latency per report interval, bounded.
    pub series: MaxSeries,
    /// Spike records of this thread, bounded.
    pub spikes: SpikeList,
}

impl ThreadAgg {
    /// An empty thread for a histogram of `layout`, keeping the first
    /// `overflow_keep` overflow cycle numbers and the `--spike` records
    /// over `spike_ns`; fails on a layout no target can produce.
    pub fn new(
        layout: &Layout,
        info: Option<ThreadInfo>,
        overflow_keep: usize,
        spike_ns: u64,
    ) -> Result<Self, Error> {
        Ok(ThreadAgg {
            info,
            asm: Assembler::new(*layout, PagedStore::default())?,
            series: MaxSeries::new(4096),
            spikes: SpikeList::new(32, overflow_keep, spike_ns),
        })
    }

    /// The cumulative bucket counts as of the last report applied, one
    /// per bucket.
    pub fn hist(&self) -> Vec<u64> {
        self.asm.counts().dense()
    }

    /// Sum of the histogram's counts.
    pub fn hist_total(&self) -> u64 {
        self.asm.total()
    }

    /// The report the histogram reflects (`None`: nothing applied yet).
    #[cfg(test)]
    pub fn hist_epoch(&self) -> Option<u32> {
        self.asm.epoch()
    }

    /// The latest epoch at which the histogram was verified exact.
    pub fn exact_epoch(&self) -> Option<u32> {
        self.asm.exact_epoch()
    }

    /// The latest statistics received.
    pub fn stats(&self) -> Option<ThreadStats> {
        self.asm.stats().copied()
    }

    /// Frames older than the histogram, or repeated: ignored.
    #[cfg(test)]
    pub fn stale_parts(&self) -> u64 {
        self.asm.stale()
    }

    /// A delta part arrived.
    pub fn on_delta(&mut self, d: &HistDelta) {
        self.asm.on_delta(d);
    }

    /// Cumulative statistics arrived.
    pub fn on_stats(&mut self, s: &ThreadStats) {
        if self.asm.on_stats(s) {
            self.series.push(s.epoch, s.elapsed_ns, s.interval_max);
        }
    }

    /// A snapshot chunk arrived.
    pub fn on_chunk(&mut self, c: &SnapshotChunk) {
        self.asm.on_chunk(c);
    }

    /// Whether the histogram is exact as of the latest statistics.
    pub fn exact_now(&self) -> bool {
        self.asm.exact_now()
    }
}
