//! One measuring thread on the host: its histogram, assembled by core's
//! [`Assembler`] into a sparse [`PagedStore`], and what the reports show
//! beside it (the max over time, the spikes).

use latscope_core::layout::Layout;
use latscope_core::protocol::{Assembler, TimerlatAssembler};
use latscope_core::slo::{Exceedances, Goals};
use latscope_core::timerlat::Context;
use latscope_core::wire::{
    Aggregate, Body, HistDelta, SnapshotChunk, SpikeSample, ThreadInfo, ThreadStats, TimerlatStats,
};
use latscope_core::Error;
use std::sync::Arc;

use super::paged::PagedStore;
use super::series::MaxSeries;
use super::spikes::SpikeList;
use crate::budget::{Budget, Charge, THREAD_FIXED, TIMERLAT_FIXED};

/// Max-over-time points kept per thread.
pub const SERIES_POINTS: usize = 4096;
/// Largest spike records kept per thread.
pub(super) const SPIKES_KEPT: usize = 32;

/// What the host knows about one measuring thread.
#[derive(Debug)]
pub(crate) struct ThreadAgg {
    /// From the hello, if it described this thread.
    pub info: Option<ThreadInfo>,
    asm: Assembler<PagedStore>,
    /// Max latency per report interval, bounded.
    pub series: MaxSeries,
    /// Spike records of this thread, bounded.
    pub spikes: SpikeList,
    /// This thread's fixed parts and its spike lists' growth, charged to
    /// the run's budget.
    charge: Charge,
    /// Spike records the lists could not keep: the budget was used up.
    refused_spikes: u64,
    /// What the target's aggregates say of this thread's spikes.
    pub spike_account: SpikeAccount,
    /// Samples above each latency goal's limit, block by block (with
    /// `report --slo`).
    exceedances: Option<Box<Exceedances>>,
    /// The kernel's timerlat histograms of the thread's CPU (protocol
    /// version 6), from its first timerlat frame on.
    timerlat: Option<Box<TimerlatAssembler<PagedStore>>>,
    /// Timerlat frames not used: the budget refused their histograms.
    refused_timerlat: u64,
    /// Where the timerlat histograms' pages are charged.
    budget: Arc<Budget>,
}

/// A thread's [`Aggregate`] frames (protocol version 3): the latest one's
/// running totals, and what the received ones add up to, so that a lost
/// aggregate shows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SpikeAccount {
    /// The aggregate of the latest report (the highest epoch; of equal
    /// ones, the last), if any arrived.
    pub latest: Option<Aggregate>,
    /// Aggregate frames received.
    pub frames: u64,
    /// Samples above the threshold in the intervals received: less than
    /// the latest `spikes` if an aggregate was lost.
    pub above_received: u64,
    /// The largest spike of the intervals received: `(ns, cycle, deadline)`.
    pub worst: Option<(u64, u64, i64)>,
}

impl SpikeAccount {
    /// Account one aggregate frame.
    pub(crate) fn on_aggregate(&mut self, a: &Aggregate) {
        self.frames += 1;
        self.above_received = self.above_received.saturating_add(a.above);
        if a.above > 0 && self.worst.is_none_or(|(ns, _, _)| a.max_ns > ns) {
            self.worst = Some((a.max_ns, a.max_cycle, a.max_deadline_ns));
        }
        if self.latest.is_none_or(|l| a.epoch >= l.epoch) {
            self.latest = Some(*a);
        }
    }
}

impl ThreadAgg {
    /// An empty thread for a histogram of `layout`, keeping the first
    /// `overflow_keep` overflow cycle numbers and the `--spike` records
    /// over `spike_ns`, its memory charged to `budget`; fails on a layout
    /// no target can produce, and `Ok(None)` when the budget refuses the
    /// thread.
    pub(crate) fn new(
        layout: &Layout,
        info: Option<ThreadInfo>,
        overflow_keep: usize,
        spike_ns: u64,
        budget: &Arc<Budget>,
    ) -> Result<Option<Self>, Error> {
        let Some(charge) = Charge::take(budget, THREAD_FIXED) else {
            return Ok(None);
        };
        Ok(Some(ThreadAgg {
            info,
            asm: Assembler::new(*layout, PagedStore::new(Arc::clone(budget)))?,
            series: MaxSeries::new(SERIES_POINTS),
            spikes: SpikeList::new(SPIKES_KEPT, overflow_keep, spike_ns),
            charge,
            refused_spikes: 0,
            spike_account: SpikeAccount::default(),
            exceedances: None,
            timerlat: None,
            refused_timerlat: 0,
            budget: Arc::clone(budget),
        }))
    }

    /// The thread, counting the samples above the limits of `goals` if there are any.
    pub(crate) fn with_goals(self, goals: Option<&Goals>) -> Self {
        ThreadAgg {
            exceedances: goals.map(|g| Box::new(Exceedances::for_goals(g))),
            ..self
        }
    }

    /// The samples above the goals' limits, its last block closed, and
    /// whether it holds every sample of the histogram (no delta was
    /// missed or replaced by a snapshot).
    pub(crate) fn exceedances(&self) -> Option<(Exceedances, bool)> {
        let mut t = self.exceedances.as_deref()?.clone();
        t.end_block();
        let whole = t.samples() == self.asm.total();
        Some((t, whole))
    }

    /// Account one spike record. Its lists grow in steps, each charged to
    /// the budget first; a step the budget refuses leaves the record out
    /// of the full lists (it is still counted).
    pub(crate) fn spike(&mut self, r: &SpikeSample) {
        let step = self.spikes.growth(r);
        let room = step == 0 || self.charge.grow(step);
        if !room {
            self.refused_spikes += 1;
        }
        self.spikes.push(r, room);
    }

    /// Counts this thread's histogram could not keep (the stream's memory
    /// budget refused their page), and spike records its lists could not.
    pub(crate) fn refused(&self) -> u64 {
        let timerlat = self.timerlat.as_deref().map_or(0, |t| {
            Context::ALL
                .iter()
                .map(|&c| t.hist(c).counts().refused())
                .sum()
        });
        self.asm.counts().refused() + self.refused_spikes + timerlat + self.refused_timerlat
    }

    /// The cumulative bucket counts as of the last report applied, one
    /// per bucket.
    pub(crate) fn hist(&self) -> Vec<u64> {
        self.asm.counts().dense()
    }

    /// Sum of the histogram's counts.
    pub(crate) fn hist_total(&self) -> u64 {
        self.asm.total()
    }

    /// The report the histogram reflects (`None`: nothing applied yet).
    #[cfg(test)]
    pub(crate) fn hist_epoch(&self) -> Option<u32> {
        self.asm.epoch()
    }

    /// The latest epoch at which the histogram was verified exact.
    pub(crate) fn exact_epoch(&self) -> Option<u32> {
        self.asm.exact_epoch()
    }

    /// The latest statistics received.
    pub(crate) fn stats(&self) -> Option<ThreadStats> {
        self.asm.stats().copied()
    }

    /// Frames older than the histogram, or repeated: ignored.
    #[cfg(test)]
    pub(crate) fn stale_parts(&self) -> u64 {
        self.asm.stale()
    }

    /// A delta part arrived.
    pub(crate) fn on_delta(&mut self, d: &HistDelta) {
        let before = self.asm.total();
        self.asm.on_delta(d);
        if let Some(t) = self.exceedances.as_deref_mut() {
            // a part the assembler took changes its total; a repeated,
            // stale or malformed one does not
            if self.asm.total() != before {
                let layout = *self.asm.layout();
                for (b, n) in d.runs.iter(d.start).flatten() {
                    t.add(d.epoch, &layout, usize::from(b), n);
                }
            }
        }
    }

    /// Cumulative statistics arrived.
    pub(crate) fn on_stats(&mut self, s: &ThreadStats) {
        if self.asm.on_stats(s) {
            self.series
                .push(s.epoch, s.elapsed_ns, s.interval_max, s.count);
        }
    }

    /// A snapshot chunk arrived.
    pub(crate) fn on_chunk(&mut self, c: &SnapshotChunk) {
        self.asm.on_chunk(c);
    }

    /// Whether the histogram is exact as of the latest statistics.
    pub(crate) fn exact_now(&self) -> bool {
        self.asm.exact_now()
    }

    /// A timerlat frame arrived (its delta, statistics or chunk). The
    /// first one makes the three histograms, charged to the budget first;
    /// a frame the budget has no room for is counted, not used.
    pub(crate) fn on_timerlat(&mut self, layout: &Layout, body: &Body) {
        if self.timerlat.is_none() {
            if !self.charge.grow(TIMERLAT_FIXED) {
                self.refused_timerlat += 1;
                return;
            }
            let store = || PagedStore::new(Arc::clone(&self.budget));
            match TimerlatAssembler::new(*layout, [store(), store(), store()]) {
                Ok(t) => self.timerlat = Some(Box::new(t)),
                // cannot happen: the run's layout is legal
                Err(_) => {
                    self.refused_timerlat += 1;
                    return;
                }
            }
        }
        if let Some(t) = self.timerlat.as_deref_mut() {
            t.apply(body);
        }
    }

    /// Whether any timerlat frame of the thread was used.
    pub(crate) fn has_timerlat(&self) -> bool {
        self.timerlat.is_some()
    }

    /// Whether the timerlat histogram of `context` is exact as of the
    /// latest figures.
    pub(crate) fn timerlat_exact_now(&self, context: Context) -> bool {
        self.timerlat
            .as_deref()
            .is_some_and(|t| t.hist(context).exact_now())
    }

    /// The latest epoch as of which all three timerlat histograms were
    /// verified exact.
    pub(crate) fn timerlat_exact_epoch(&self) -> Option<u32> {
        self.timerlat.as_deref().and_then(|t| t.exact_epoch())
    }

    /// The latest timerlat figures, if any came.
    pub(crate) fn timerlat_stats(&self) -> Option<TimerlatStats> {
        self.timerlat.as_deref().and_then(|t| t.stats().copied())
    }

    /// The cumulative counts of the timerlat histogram of `context`, one
    /// per bucket (empty if none came).
    pub(crate) fn timerlat_hist(&self, context: Context) -> Vec<u64> {
        self.timerlat
            .as_deref()
            .map(|t| t.hist(context).counts().dense())
            .unwrap_or_default()
    }

    /// Whether the timerlat histograms are exact as of their final
    /// figures: `required` (a run of the timerlat mode) with none, or with
    /// some not exact or not final, is not.
    pub(crate) fn timerlat_exact_at_end(&self, required: bool) -> bool {
        match self.timerlat.as_deref() {
            Some(t) => t.exact_now() && t.stats().is_some_and(|s| s.last_report),
            None => !required,
        }
    }
}
