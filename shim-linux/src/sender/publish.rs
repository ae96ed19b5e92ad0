//! Publishing: the run's frame stream, through core's
//! [`Reporter`](latscope_core::protocol::Reporter), which owns the
//! protocol's schedule (documented in `latscope_core::protocol`): per report
//! and thread the delta, the statistics and a rolling snapshot chunk; full
//! snapshots at a new connection, after lost frames and at the end; a hello
//! at the start and every 10 s; the bye. A TCP connection that resumes the
//! run starts with a hello that takes no sequence number (the host learns
//! the run from it, then gets again every frame it had not acknowledged).
//!
//! [`Publisher`] adds what only the target knows: the link, the hello and
//! the warnings of the start, and when frames were lost.

use latscope_core::protocol::{FrameSink, Reporter, Room, SideCounts};
use latscope_core::wire::{bounded, Body, Bye, Hello, Level, LogLine, MAX_SMALL_FRAME};
use latscope_core::Error as CoreError;

use crate::link::Sink;
use crate::rt::{Log, Snap};

/// The frame stream of a run.
pub struct Publisher {
    rep: Reporter,
    sink: Option<Sink>,
    hello: Hello,
    /// Warnings sent after each connection's hello.
    warnings: Vec<String>,
    /// Frames not delivered as of the last report.
    dropped_at_report: u64,
}

/// The link as the reporter's sink (nothing is sent without a stream).
struct Out<'a>(&'a mut Option<Sink>);

impl FrameSink for Out<'_> {
    fn frame(&mut self, seq: u32, bytes: &[u8]) {
        if let Some(s) = self.0.as_mut() {
            s.send(bytes, seq);
        }
    }

    fn failed(&mut self, _error: CoreError) {
        if let Some(s) = self.0.as_mut() {
            s.frames_dropped += 1;
        }
    }
}

impl Publisher {
    /// The stream to `sink` (none: nothing is sent) of a run that started
    /// measuring at `start_ns` and reports every `report_ns`, or less often
    /// where the link has a byte budget and wide histograms use it up.
    pub fn new(
        sink: Option<Sink>,
        hello: Hello,
        warnings: Vec<String>,
        start_ns: i64,
        report_ns: i64,
    ) -> Publisher {
        let budget = sink.as_ref().map_or(0, Sink::byte_budget);
        let share = sink.as_ref().map_or(0, Sink::spike_share);
        let evidence = sink.as_ref().map_or(0, Sink::evidence_share);
        Publisher {
            rep: Reporter::new(start_ns, report_ns.max(1) as u64)
                .with_budget(budget)
                .with_spike_share(share)
                .with_evidence_share(evidence),
            sink,
            hello,
            warnings,
            dropped_at_report: 0,
        }
    }

    /// Encode `body` as the next frame and send it.
    pub fn send(&mut self, body: Body) {
        self.rep.send(body, &mut Out(&mut self.sink));
    }

    /// What the line has room for at `now` in the way of spike samples and
    /// explanations: the reporter's spike share, and the pacer, which must
    /// not make a spike frame wait (nothing without a stream that works).
    pub fn spike_room(&mut self, now: i64) -> Room {
        let Some(sink) = self.sink.as_mut().filter(|s| !s.broken()) else {
            return Room::Nothing;
        };
        if !sink.spike_fits(now, MAX_SMALL_FRAME) {
            return Room::Nothing;
        }
        self.rep.spike_room(now)
    }

    /// Whether a part of a spike's evidence may go at `now`: the
    /// reporter's evidence share (out of the spikes'), and the link's room
    /// for it (nothing without a stream that works).
    pub fn evidence_room(&mut self, now: i64) -> bool {
        let Some(sink) = self.sink.as_mut().filter(|s| !s.broken()) else {
            return false;
        };
        sink.evidence_fits(now) && self.rep.evidence_room(now)
    }

    /// The current report number.
    pub fn epoch(&self) -> u32 {
        self.rep.epoch()
    }

    /// Frames not delivered so far.
    pub fn frames_dropped(&self) -> u64 {
        self.sink.as_ref().map_or(0, |s| s.frames_dropped)
    }

    /// Over TCP, at the end: frames sent but not acknowledged.
    pub fn frames_unacknowledged(&self) -> u64 {
        self.sink.as_ref().map_or(0, |s| s.frames_unacknowledged)
    }

    /// Why frames were not delivered, if any were not.
    pub fn loss_reason(&self) -> Option<String> {
        self.sink
            .as_ref()
            .filter(|s| s.frames_dropped > 0)
            .map(Sink::loss_reason)
    }

    /// Whether the run has a stream at all.
    pub fn has_stream(&self) -> bool {
        self.sink.is_some()
    }

    /// Whether the run has a stream that can still deliver.
    pub fn link_works(&self) -> bool {
        self.sink.as_ref().is_some_and(|s| !s.broken())
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
            self.rep.hello(now, &self.hello, &mut Out(&mut self.sink));
            for w in &self.warnings {
                let line = LogLine {
                    level: Level::Warn,
                    text: bounded(w),
                };
                self.rep.send(Body::Log(line), &mut Out(&mut self.sink));
            }
        }
        first || new
    }

    /// A thread's latest statistics and cumulative histogram, for a new
    /// connection.
    pub fn restart(&mut self, log: &Log) {
        self.rep.resend(log, &mut Out(&mut self.sink));
    }

    /// Repeat the hello if it is due.
    pub fn hello_if_due(&mut self, now: i64) {
        if self.rep.hello_due(now) {
            self.rep.hello(now, &self.hello, &mut Out(&mut self.sink));
        }
    }

    /// When the next report or hello is due.
    pub fn next_due(&self) -> i64 {
        self.rep.next_due()
    }

    /// If a report is due at `now`, start it (with full snapshots if frames
    /// were lost since the last one) and return `true`.
    pub fn report_due(&mut self, now: i64) -> bool {
        if !self.rep.report_due(now) {
            return false;
        }
        self.note_losses();
        self.rep.begin_report(now);
        true
    }

    /// Start the final report (full snapshots, `last_report`).
    pub fn last_report(&mut self, now: i64) {
        self.note_losses();
        self.rep.begin_final(now);
    }

    fn note_losses(&mut self) {
        let dropped = self.frames_dropped();
        if dropped != self.dropped_at_report {
            self.rep.lost();
            self.dropped_at_report = dropped;
        }
    }

    /// One thread's part of the current report: `cur` is a fresh snapshot
    /// of its shared histogram, `extra` its faults and dropped spike samples.
    pub fn thread(&mut self, log: &mut Log, cur: &Snap, extra: SideCounts) {
        self.rep.report(log, cur, extra, &mut Out(&mut self.sink));
    }

    /// The end of the stream: up to 1 s for the host to acknowledge what
    /// was sent (so the count of lost frames is final), the bye with that
    /// count, then up to 2 s for the bye's acknowledgement (reconnecting
    /// and sending again meanwhile). Frames sent and still not
    /// acknowledged then are counted apart from the lost ones.
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
