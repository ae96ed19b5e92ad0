//! The kernel's timerlat histograms on the protocol's schedule (protocol
//! version 6): what a target in the timerlat mode sends of each measuring
//! thread's CPU beside the thread's own histogram, and how a receiver puts
//! them back together.
//!
//! Per thread the target's trace reader keeps three exact histograms, one
//! per [`Context`] (the timer's IRQ, the woken thread, its return to user
//! space), with their totals, and the pairing of the entries by sequence
//! number ([`Pairing`]). They travel as the thread's own histogram does
//! (see [`super`]): in every report but a lean one, per context the delta
//! since the last report with deltas ([`TimerlatDelta`] parts, at least one
//! per context, empty if nothing changed), then one [`TimerlatStats`]
//! (each context's count, sum, min, max and lost entries, the pairing
//! counts), then one [`TimerlatChunk`] of a rolling snapshot that walks the
//! IRQ histogram, then the thread's, then the return-to-user one, in
//! [`ROLL_BYTES`] of runs a report. After lost frames, at a new connection
//! and at the end, full snapshots of all three. A lean report sends the
//! statistics alone. Every frame is a small one
//! ([`crate::wire::MAX_SMALL_FRAME`]), and all are charged to the reports'
//! byte budget.
//!
//! A receiver ([`TimerlatAssembler`]) keeps each histogram as a lower bound
//! of the target's, exact when its total is its context's count of the
//! same report: the rules of [`super::Assembler`], which it runs for each.
//! A lost frame is healed within one rotation of the rolling snapshot
//! through the three histograms, at a resync, and at the end.
//!
//! The target's sender calls [`Reporter::timerlat`] once per thread and
//! report, after [`Reporter::report`] of the same thread, with the
//! reader's histograms and pairing as of then, and
//! [`Reporter::resend_timerlat`] after [`Reporter::resend`] on a new
//! connection.

use crate::error::Error;
use crate::hist::HistogramIn;
use crate::layout::Layout;
use crate::timerlat::{Context, Pairing};
use crate::wire::{
    Body, RunWriter, TimerlatChunk, TimerlatDelta, TimerlatFigures, TimerlatStats, RUN_BYTES,
};

use super::reporter::{snapshot_runs, ReportKind};
use super::{Assembler, BucketStore, FrameSink, Reporter, ROLL_BYTES};

/// What a [`Reporter`] keeps about one thread's timerlat histograms: the
/// three cumulative histograms as of the last report with deltas (the
/// next deltas are taken against them, and snapshots sent from them), the
/// statistics last sent, and where the rolling snapshot is.
///
/// Three times the layout's buckets of 8 bytes, in storage `B`: arrays
/// sized at compile time ([`TimerlatLog`], const-constructible) or memory
/// the caller sized by a run-time layout
/// ([`TimerlatLogIn::with_memory`]).
#[derive(Debug, Clone)]
pub struct TimerlatLogIn<B> {
    hists: [HistogramIn<B>; 3],
    stats: TimerlatStats,
    /// The rolling snapshot's next chunk: a context's index and a bucket.
    cursor: (usize, u16),
}

/// The log of timerlat histograms of `N` buckets, sized at compile time.
pub type TimerlatLog<const N: usize> = TimerlatLogIn<[u64; N]>;

/// The statistics of thread `index` before its first report.
const fn no_stats(index: u16) -> TimerlatStats {
    TimerlatStats {
        thread: index,
        epoch: 0,
        figures: [TimerlatFigures::EMPTY; 3],
        paired: 0,
        inverted: 0,
        unreadable_pages: 0,
        last_report: false,
    }
}

impl<const N: usize> TimerlatLogIn<[u64; N]> {
    /// The log of thread `index` before its first report, for histograms
    /// of `linear_us` linear buckets (see [`crate::layout`]).
    pub const fn new(index: u16, linear_us: u32) -> Self {
        TimerlatLogIn {
            hists: [
                HistogramIn::new(linear_us),
                HistogramIn::new(linear_us),
                HistogramIn::new(linear_us),
            ],
            stats: no_stats(index),
            cursor: (0, 0),
        }
    }
}

impl<B: AsRef<[u64]> + AsMut<[u64]>> TimerlatLogIn<B> {
    /// The log of thread `index` before its first report, for histograms
    /// of `layout`, in the caller's memory (one counter per bucket each,
    /// zeroed here).
    ///
    /// # Errors
    ///
    /// [`Error::BucketMemory`] unless each of `memory` is one counter per
    /// bucket of `layout`.
    pub fn with_memory(index: u16, layout: Layout, memory: [B; 3]) -> Result<Self, Error> {
        let [a, b, c] = memory;
        Ok(TimerlatLogIn {
            hists: [
                HistogramIn::with_counts(layout, a)?,
                HistogramIn::with_counts(layout, b)?,
                HistogramIn::with_counts(layout, c)?,
            ],
            stats: no_stats(index),
            cursor: (0, 0),
        })
    }

    /// The thread's index.
    pub const fn index(&self) -> u16 {
        self.stats.thread
    }

    /// The cumulative histogram of `context` as of the last report with
    /// deltas.
    pub fn hist(&self, context: Context) -> &HistogramIn<B> {
        &self.hists[context.index()]
    }

    /// The statistics sent at the last report.
    pub const fn stats(&self) -> &TimerlatStats {
        &self.stats
    }

    /// The histograms' layout.
    fn layout(&self) -> &Layout {
        self.hists[0].layout()
    }
}

impl Reporter {
    /// Report one thread's timerlat histograms in the current report
    /// (protocol version 6): `hists` are the trace reader's histograms of
    /// the thread's CPU, in [`Context::ALL`]'s order, `pairing` its
    /// pairing of the entries, `unreadable_pages` the pages whose entries
    /// did not decode to the end, all as of now. Sends per context the
    /// delta parts since the last report with deltas, then the
    /// [`TimerlatStats`], then the rolling snapshot's chunk (or, after lost
    /// frames and in the final report, full snapshots), and moves `log` to
    /// this report; a lean report sends the statistics alone (see
    /// [`Reporter::with_budget`]). Call it after [`Reporter::report`] of
    /// the same thread.
    ///
    /// The histograms only grow: a bucket below the log's (a caller's
    /// mistake) sends no delta, and the receiver's histogram then never
    /// reaches its count, so it is never called exact.
    ///
    /// # Errors
    ///
    /// [`Error::LayoutMismatch`] if a histogram's layout is not the log's;
    /// nothing is sent then.
    pub fn timerlat<B, C, S>(
        &mut self,
        log: &mut TimerlatLogIn<B>,
        hists: &[HistogramIn<C>; 3],
        pairing: &Pairing,
        unreadable_pages: u64,
        out: &mut S,
    ) -> Result<(), Error>
    where
        B: AsRef<[u64]> + AsMut<[u64]>,
        C: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        if hists.iter().any(|h| h.layout() != log.layout()) {
            return Err(Error::LayoutMismatch);
        }
        let kind = self.kind();
        if kind != ReportKind::Lean {
            for c in Context::ALL {
                let i = c.index();
                self.timerlat_delta(
                    log.index(),
                    c,
                    log.hists[i].counts(),
                    hists[i].counts(),
                    out,
                );
                // the log moves on by the delta sent: to `cur`, but where
                // a bucket of `cur` is below the log's
                let (cur, prev) = (&hists[i], &mut log.hists[i]);
                for (p, &n) in prev.counts_mut().iter_mut().zip(cur.counts()) {
                    *p = (*p).max(n);
                }
                prev.set_totals(*cur.totals());
            }
        }
        let figures = |c: Context| {
            let t = hists[c.index()].totals();
            TimerlatFigures {
                count: t.count,
                sum: t.sum,
                min: t.min,
                max: t.max,
                lost: pairing.tally[c.index()].lost,
            }
        };
        log.stats = TimerlatStats {
            thread: log.index(),
            epoch: self.epoch(),
            figures: Context::ALL.map(figures),
            paired: pairing.paired,
            inverted: pairing.inverted,
            unreadable_pages,
            last_report: kind == ReportKind::Final,
        };
        self.send(Body::TimerlatStats(log.stats), out);
        match kind {
            ReportKind::Full | ReportKind::Final => self.timerlat_snapshot(log, out),
            ReportKind::Rolling => {
                let (i, from) = log.cursor;
                let c = Context::ALL[i % 3];
                let end = self.timerlat_chunk(log, c, from, ROLL_BYTES, out);
                log.cursor = if end >= log.layout().len() {
                    ((i + 1) % 3, 0)
                } else {
                    (i, end as u16)
                };
            }
            ReportKind::Lean => {}
        }
        Ok(())
    }

    /// For a new connection: the thread's latest timerlat statistics and a
    /// full snapshot of its three histograms, as of the current report.
    /// Call it after [`Reporter::resend`] of the same thread.
    pub fn resend_timerlat<B, S>(&mut self, log: &TimerlatLogIn<B>, out: &mut S)
    where
        B: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        let stats = TimerlatStats {
            epoch: self.epoch(),
            ..log.stats
        };
        self.send(Body::TimerlatStats(stats), out);
        self.timerlat_snapshot(log, out);
    }

    /// The buckets of `cur` above `prev` as [`TimerlatDelta`] parts of
    /// `context` (at least one).
    fn timerlat_delta<S: FrameSink + ?Sized>(
        &mut self,
        thread: u16,
        context: Context,
        prev: &[u64],
        cur: &[u64],
        out: &mut S,
    ) {
        let mut part = 0u16;
        let mut w: Option<RunWriter> = None;
        for (i, (&c, &p)) in cur.iter().zip(prev).enumerate() {
            let d = c.saturating_sub(p);
            if d == 0 {
                continue;
            }
            let b = i as u16;
            let writer = w.get_or_insert_with(|| RunWriter::new(b, RUN_BYTES));
            if !writer.push(b, d) {
                let full = core::mem::replace(writer, RunWriter::new(b, RUN_BYTES));
                self.send_timerlat_part(thread, context, part, full, out);
                part = part.wrapping_add(1);
                // cannot fail: one pair always fits an empty writer
                let _ = writer.push(b, d);
            }
        }
        let last = w.unwrap_or_else(|| RunWriter::new(0, RUN_BYTES));
        self.send_timerlat_part(thread, context, part, last, out);
    }

    fn send_timerlat_part<S: FrameSink + ?Sized>(
        &mut self,
        thread: u16,
        context: Context,
        part: u16,
        w: RunWriter,
        out: &mut S,
    ) {
        let d = TimerlatDelta {
            thread,
            epoch: self.epoch(),
            context,
            part,
            start: w.start(),
            runs: w.finish(),
        };
        self.send(Body::TimerlatDelta(d), out);
    }

    /// Chunks of `log`'s three histograms, each from bucket 0 to its end.
    fn timerlat_snapshot<B, S>(&mut self, log: &TimerlatLogIn<B>, out: &mut S)
    where
        B: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        for c in Context::ALL {
            let mut from = 0;
            loop {
                let end = self.timerlat_chunk(log, c, from, RUN_BYTES, out);
                if end >= log.layout().len() {
                    break;
                }
                from = end as u16;
            }
        }
    }

    /// One [`TimerlatChunk`] of `log`'s histogram of `context` from bucket
    /// `from`, with at most `budget` bytes of runs; returns the end of the
    /// range it covers.
    fn timerlat_chunk<B, S>(
        &mut self,
        log: &TimerlatLogIn<B>,
        context: Context,
        from: u16,
        budget: usize,
        out: &mut S,
    ) -> usize
    where
        B: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        let (runs, end) = snapshot_runs(log.hist(context).counts(), from, budget);
        let c = TimerlatChunk {
            thread: log.index(),
            epoch: self.epoch(),
            context,
            start: from,
            end: end.min(usize::from(u16::MAX)) as u16,
            runs,
        };
        self.send(Body::TimerlatChunk(c), out);
        end
    }
}

/// One thread's timerlat histograms on the receiving side (protocol
/// version 6): an [`Assembler`] per context, fed the context's deltas,
/// chunks and count, and the latest [`TimerlatStats`].
///
/// Frames of other threads must not be given to it: the caller routes by
/// the frames' `thread`.
#[derive(Debug, Clone)]
pub struct TimerlatAssembler<S> {
    hists: [Assembler<S>; 3],
    stats: Option<TimerlatStats>,
}

impl<S: BucketStore> TimerlatAssembler<S> {
    /// Three empty histograms of `layout` in `stores`, in
    /// [`Context::ALL`]'s order.
    ///
    /// # Errors
    ///
    /// As [`Assembler::new`]: [`Error::IllegalLayout`], or a store's error.
    pub fn new(layout: Layout, stores: [S; 3]) -> Result<Self, Error> {
        let [a, b, c] = stores;
        Ok(TimerlatAssembler {
            hists: [
                Assembler::new(layout, a)?,
                Assembler::new(layout, b)?,
                Assembler::new(layout, c)?,
            ],
            stats: None,
        })
    }

    /// The histogram of `context`.
    pub fn hist(&self, context: Context) -> &Assembler<S> {
        &self.hists[context.index()]
    }

    /// The latest statistics received (the newest report's).
    pub const fn stats(&self) -> Option<&TimerlatStats> {
        self.stats.as_ref()
    }

    /// Apply a timerlat delta, statistics or snapshot chunk; `false` for
    /// any other body.
    pub fn apply(&mut self, body: &Body) -> bool {
        match body {
            Body::TimerlatDelta(d) => {
                self.hists[d.context.index()].delta(d.epoch, d.part, d.start, &d.runs);
            }
            Body::TimerlatChunk(c) => {
                self.hists[c.context.index()].chunk(c.epoch, c.start, c.end, &c.runs);
            }
            Body::TimerlatStats(s) => {
                if self.stats.is_none_or(|old| s.epoch >= old.epoch) {
                    self.stats = Some(*s);
                }
                for c in Context::ALL {
                    self.hists[c.index()].on_count(s.epoch, s.figures(c).count);
                }
            }
            _ => return false,
        }
        true
    }

    /// Whether all three histograms are exact as of the latest statistics.
    pub fn exact_now(&self) -> bool {
        self.hists.iter().all(Assembler::exact_now)
    }

    /// The latest epoch as of which all three histograms were verified
    /// exact (the earliest of their latest).
    pub fn exact_epoch(&self) -> Option<u32> {
        self.hists
            .iter()
            .map(Assembler::exact_epoch)
            .try_fold(u32::MAX, |acc, e| e.map(|e| acc.min(e)))
    }

    /// Frames older than a histogram's epoch, and repeated delta parts:
    /// ignored.
    pub fn stale(&self) -> u64 {
        self.hists.iter().map(Assembler::stale).sum()
    }
}

#[cfg(test)]
mod tests;
