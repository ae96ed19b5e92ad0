//! Publishing: a thread's record as frames, on the protocol's schedule.
//!
//! Per report interval k = 1, 2, ... and per thread: the raw bucket delta
//! `S_k - S_(k-1)` in [`HistDelta`] parts, then [`ThreadStats`] of the same
//! snapshot, then (every 5th report, after frames were lost, at the start
//! of a connection and at the end) the full cumulative histogram in
//! [`SnapshotChunk`]s. A hello starts the run and repeats every 10 s; a
//! TCP connection that resumes the run starts with a hello that takes no
//! sequence number (the host learns the run from it, then gets again every
//! frame it had not acknowledged); a [`Bye`] ends the run.
//!
//! [`Publisher`] is the only code of the target that builds these frames:
//! the sender hands it snapshots and statistics, never frames.

use latscope_core::hist::Histogram;
use latscope_core::record::Snapshot;
use latscope_core::wire::{
    bounded, Body, Bye, DeltaEntry, Encoder, Hello, HistDelta, Level, LogLine, SnapshotChunk,
    SnapshotEntry, ThreadStats, CHUNK_ENTRIES, DELTA_ENTRIES,
};

use crate::link::Sink;
use crate::rt::N;

/// Hello repeat period.
const HELLO_NS: i64 = 10_000_000_000;
/// Full snapshot every this many reports.
const SNAPSHOT_EVERY: u32 = 5;

/// The frame stream of a run and its schedule.
pub struct Publisher {
    enc: Encoder,
    sink: Option<Sink>,
    hello: Hello,
    /// Warnings sent after each connection's hello.
    warnings: Vec<String>,
    /// The current report number.
    epoch: u32,
    report_ns: i64,
    next_report: i64,
    next_hello: i64,
    /// Frames were lost in the last report: send the full histogram next.
    resync: bool,
}

impl Publisher {
    /// The stream to `sink` (none: nothing is sent) of a run that started
    /// measuring at `start_ns` and reports every `report_ns`.
    pub fn new(
        sink: Option<Sink>,
        hello: Hello,
        warnings: Vec<String>,
        start_ns: i64,
        report_ns: i64,
    ) -> Publisher {
        Publisher {
            enc: Encoder::new(),
            sink,
            hello,
            warnings,
            epoch: 0,
            report_ns,
            next_report: start_ns.saturating_add(report_ns),
            next_hello: start_ns.saturating_add(HELLO_NS),
            resync: false,
        }
    }

    /// Encode `body` as the next frame and send it (nothing without a
    /// stream; a frame that cannot be encoded counts as dropped).
    pub fn send(&mut self, body: Body) {
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        let seq = self.enc.next_seq();
        match self.enc.frame(body) {
            Ok(bytes) => sink.send(bytes, seq),
            Err(_) => sink.frames_dropped += 1,
        }
    }

    /// The current report number.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Frames not delivered so far.
    pub fn frames_dropped(&self) -> u64 {
        self.sink.as_ref().map_or(0, |s| s.frames_dropped)
    }

    /// Connect or flush the link. At the start send the hello and the
    /// warnings (a TCP connection that later resumes the run starts with
    /// the hello by itself). Return `true` at the start and on every new
    /// connection: the caller then sends every thread's
    /// [`Publisher::restart`].
    pub fn service_link(&mut self, now: i64, first: bool) -> bool {
        let Some(sink) = self.sink.as_mut() else {
            return false;
        };
        if first {
            sink.set_hello(&self.hello);
        }
        let new = sink.service(now, first);
        if first {
            self.next_hello = now.saturating_add(HELLO_NS);
            self.send(Body::Hello(self.hello.clone()));
            for w in self.warnings.clone() {
                self.send(Body::Log(LogLine {
                    level: Level::Warn,
                    text: bounded(&w),
                }));
            }
        }
        first || new
    }

    /// A thread's latest statistics and cumulative histogram, for a new
    /// connection.
    pub fn restart(&mut self, stats: ThreadStats, hist: &Histogram<N>) {
        self.send(Body::Stats(ThreadStats {
            epoch: self.epoch,
            ..stats
        }));
        self.chunks(stats.thread, hist);
    }

    /// Repeat the hello if it is due.
    pub fn hello_if_due(&mut self, now: i64) {
        if now >= self.next_hello {
            self.send(Body::Hello(self.hello.clone()));
            self.next_hello = now.saturating_add(HELLO_NS);
        }
    }

    /// When the next report is due.
    pub fn next_report(&self) -> i64 {
        self.next_report
    }

    /// If a report is due at `now`: start it (the epoch advances) and
    /// return whether it carries the full histograms.
    pub fn report_due(&mut self, now: i64) -> Option<bool> {
        if now < self.next_report {
            return None;
        }
        self.epoch += 1;
        Some(self.epoch.is_multiple_of(SNAPSHOT_EVERY) || self.resync)
    }

    /// The report that `report_due` started is sent; `dropped_before` is
    /// [`Publisher::frames_dropped`] before it.
    pub fn report_done(&mut self, now: i64, dropped_before: u64) {
        self.resync = self.frames_dropped() != dropped_before;
        self.next_report = self.next_report.saturating_add(self.report_ns);
        if self.next_report <= now {
            self.next_report = now.saturating_add(self.report_ns);
        }
    }

    /// Start the last report (always with the full histograms).
    pub fn last_report(&mut self) {
        self.epoch += 1;
    }

    /// One thread's part of a report: the delta from `prev` to `cur`, its
    /// statistics, and with `full` its cumulative histogram `hist`.
    pub fn thread(
        &mut self,
        prev: &Snapshot<N>,
        cur: &Snapshot<N>,
        hist: &Histogram<N>,
        stats: ThreadStats,
        full: bool,
    ) {
        self.delta(stats.thread, prev, cur);
        self.send(Body::Stats(stats));
        if full {
            self.chunks(stats.thread, hist);
        }
    }

    /// The buckets that changed, in parts sent as they fill (no allocation).
    fn delta(&mut self, thread: u16, prev: &Snapshot<N>, cur: &Snapshot<N>) {
        let changes = cur
            .buckets
            .iter()
            .zip(prev.buckets.iter())
            .map(|(c, p)| c.wrapping_sub(*p))
            .enumerate()
            .filter(|&(_, d)| d != 0);
        let parts = changes.clone().count().div_ceil(DELTA_ENTRIES).max(1);
        let mut delta = HistDelta {
            thread,
            epoch: self.epoch,
            part: 0,
            parts: parts as u16,
            entries: heapless::Vec::new(),
        };
        for (i, count) in changes {
            if delta.entries.is_full() {
                self.send(Body::Delta(delta.clone()));
                delta.entries.clear();
                delta.part += 1;
            }
            let _ = delta.entries.push(DeltaEntry {
                bucket: i as u16,
                count,
            });
        }
        self.send(Body::Delta(delta));
    }

    /// The cumulative histogram in chunks.
    fn chunks(&mut self, thread: u16, hist: &Histogram<N>) {
        let entries = hist
            .counts()
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, c)| c > 0);
        let total = entries.clone().count().div_ceil(CHUNK_ENTRIES).max(1) as u16;
        let mut chunk = SnapshotChunk {
            thread,
            epoch: self.epoch,
            index: 0,
            total,
            entries: heapless::Vec::new(),
        };
        for (i, count) in entries {
            if chunk.entries.is_full() {
                self.send(Body::Chunk(chunk.clone()));
                chunk.entries.clear();
                chunk.index += 1;
            }
            let _ = chunk.entries.push(SnapshotEntry {
                bucket: i as u16,
                count,
            });
        }
        self.send(Body::Chunk(chunk));
    }

    /// The end of the stream: up to 1 s for the host to acknowledge what
    /// was sent (so the count of lost frames is final), the bye with that
    /// count, then up to 2 s for the bye's acknowledgement.
    pub fn bye(&mut self, now: i64, bye: Bye) {
        let mut frames_dropped = self.frames_dropped();
        if let Some(sink) = self.sink.as_mut() {
            sink.service(now, false);
            sink.settle(now, 1_000_000_000);
            frames_dropped = sink.frames_dropped;
        }
        self.send(Body::Bye(Bye {
            frames_dropped,
            ..bye
        }));
        if let Some(sink) = self.sink.as_mut() {
            sink.finish(crate::linux::clock::monotonic_ns(), 2_000_000_000);
        }
    }
}
