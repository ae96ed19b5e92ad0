//! The non-RT sender thread: it reads the measuring threads' shared histograms
//! lock-free, drains their spike and `-v` queues, and turns what it finds
//! into the run's outputs while the run goes on:
//!
//! * `publish`: the frame stream, on the protocol's schedule;
//! * `live`: the live view (and the SIGUSR1 status);
//! * `attribution`: `--explain`;
//! * `verbose`: the `-v` lines;
//! * `probe`: `--self-check-probe`.
//!
//! At the end it hands its [`View`]s back to the main thread, which writes
//! the final summary.

mod attribution;
mod live;
#[cfg(feature = "proof")]
mod probe;
mod publish;
mod status;
mod tally;
mod verbose;
mod view;

use std::sync::atomic::Ordering;

use heapless::spsc::Consumer;
use latscope_core::cyclictest::{is_spike, SpikeTotals, TraceTotals};
use latscope_core::protocol::Room;
use latscope_core::tz::WallTime;
use latscope_core::wire::{Body, Bye, ByeReason, Hello, SpikeSample};

use crate::config::ThreadPlan;
use crate::link::Sink;
use crate::linux::clock::monotonic_ns;
use crate::linux::localtime::LocalZone;
use crate::linux::tracefs::{trace_out, TimerlatCpu, TraceOut, Tracer};
use crate::output::Console;
use crate::rt::{Control, Shared, VerboseSample};
use attribution::Attributor;
use live::Live;
use publish::Publisher;
pub use status::SnapshotAnswer;
use tally::Tally;
pub use view::View;

/// Live view refresh period.
const TICK_NS: i64 = 100_000_000;

/// The sender's period while spikes come (until a [`TICK_NS`] without
/// one): a marked spike freezes the trace until the sender has looked at
/// it, so it looks often.
const BUSY_TICK_NS: i64 = 2_000_000;

/// Spike samples taken from each thread's queue per tick: at most one
/// queue's worth, so that a tick ends however fast spikes come.
const SPIKES_PER_TICK: usize = crate::rt::SPIKE_QUEUE;

/// Output settings of the sender.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-N`.
    pub nsecs: bool,
    /// `-q`.
    pub quiet: bool,
    /// `-v`.
    pub verbose: bool,
    /// `--spike` threshold in ns (0 = off).
    pub spike_ns: u64,
    /// `--spike-nodes`: how many `--spike` samples are listed.
    pub spike_nodes: usize,
    /// Report interval.
    pub report_ns: i64,
    /// Where the human output goes.
    pub console: Console,
    /// Policy name for the live header.
    pub policy: &'static str,
    /// Make every forbidden request once under `--self-check`.
    #[cfg(feature = "proof")]
    pub self_check_probe: bool,
    /// `-M`: redraw the live view only when a maximum grew.
    pub refresh_on_max: bool,
    /// `-o`: with `-v`, one line per this many samples (the largest).
    pub oscope: u32,
    /// `-u`: write each `-v` line as it is formatted.
    pub unbuffered: bool,
    /// Whether the run writes `--json` or `--histfile` files at its end.
    pub files: bool,
}

/// Everything the sender thread gets.
pub struct Args<'a> {
    /// Per-thread shared state.
    pub shared: &'a [Shared],
    /// Per-thread views, allocated before measuring started.
    pub views: Vec<View>,
    /// The thread plan as it turned out.
    pub plans: Vec<ThreadPlan>,
    /// The NUMA node of each thread as cyclictest reports it.
    pub nodes: Vec<i32>,
    /// The local time zone (the bye's end time).
    pub zone: &'a LocalZone,
    /// Run control.
    pub control: &'a Control,
    /// Spike queues.
    pub spikes: Vec<Consumer<'a, SpikeSample>>,
    /// `-v` queues.
    pub verbose: Vec<Consumer<'a, VerboseSample>>,
    /// Output settings.
    pub opts: Options,
    /// The hello (degradations filled in).
    pub hello: Hello,
    /// Warnings to send after each hello.
    pub warnings: Vec<String>,
    /// The stream.
    pub sink: Option<Sink>,
    /// `--explain`: the trace instance (closed at the end).
    pub tracer: Option<Tracer>,
    /// `--trace-out`: the evidence writer (closed at the end).
    pub trace_out: Option<TraceOut>,
    /// `--explain` threshold in ns.
    pub explain_ns: u64,
    /// `--explain` without tracefs: the pinned CPUs whose `/proc/interrupts`
    /// and `/proc/softirqs` deltas explain spikes coarsely, per report.
    pub coarse_cpus: Vec<usize>,
    /// `--warmup` in ns: faults are counted from its end.
    pub warmup_ns: u64,
    /// Measuring start (monotonic ns).
    pub start_ns: i64,
    /// `-F`: the named pipe that hands out the status.
    pub fifo: Option<String>,
}

/// What the sender hands back at the end.
pub struct Outcome {
    /// Per-thread views.
    pub views: Vec<View>,
    /// Frames not delivered.
    pub frames_dropped: u64,
    /// Why they were not.
    pub loss_reason: Option<String>,
    /// Over TCP: frames sent but not acknowledged by the end (the host's
    /// recording says whether it stored them).
    pub frames_unacknowledged: u64,
    /// Why the run ended.
    pub reason: ByeReason,
    /// When it ended (the bye's, and `--json`'s `end_time`).
    pub ended: WallTime,
    /// What became of the spikes, where the run flagged them (`--spike`,
    /// `--explain`) and streamed.
    pub spikes: Option<SpikeTotals>,
    /// What the continuous trace of `--explain` did.
    pub trace: Option<TraceTotals>,
    /// What `--trace-out` wrote.
    pub evidence: Option<trace_out::Totals>,
    /// `--timerlat`: each traced CPU's timerlat entries.
    pub timerlat: Vec<(usize, TimerlatCpu)>,
}

struct Sender<'a> {
    shared: &'a [Shared],
    plans: Vec<ThreadPlan>,
    nodes: Vec<i32>,
    zone: &'a LocalZone,
    control: &'a Control,
    spikes: Vec<Consumer<'a, SpikeSample>>,
    verbose: Vec<Consumer<'a, VerboseSample>>,
    opts: Options,
    start_ns: i64,
    warmup_ns: u64,
    publish: Publisher,
    attrib: Attributor,
    live: Live,
    views: Vec<View>,
    /// Fault baselines re-taken at the end of the warm-up.
    rebased: bool,
    /// SIGUSR2 and `-F`.
    status: status::StatusFiles,
    /// `-o`: per thread, the window's samples so far and its largest.
    oscope: Vec<verbose::Window>,
    /// `-M`: the largest maximum shown so far.
    shown_max: Option<u64>,
    /// Per thread, what became of its spikes.
    tallies: Vec<Tally>,
    /// Whether the run flags spikes (`--spike`, `--explain`).
    flags_spikes: bool,
}

/// The sender thread's body.
pub fn run(a: Args<'_>) -> Outcome {
    let _ = rustix::thread::set_name(c"latscope-send");
    let n = a.shared.len();
    let flags_spikes = a.opts.spike_ns > 0 || a.explain_ns > 0;
    let mut s = Sender {
        shared: a.shared,
        plans: a.plans,
        nodes: a.nodes,
        zone: a.zone,
        control: a.control,
        spikes: a.spikes,
        verbose: a.verbose,
        live: Live::new(&a.opts),
        publish: Publisher::new(a.sink, a.hello, a.warnings, a.start_ns, a.opts.report_ns),
        attrib: Attributor::new(a.tracer, a.explain_ns, a.coarse_cpus, n, a.trace_out),
        opts: a.opts,
        start_ns: a.start_ns,
        warmup_ns: a.warmup_ns,
        views: a.views,
        rebased: a.warmup_ns == 0,
        status: status::StatusFiles::new(a.fifo),
        oscope: vec![verbose::Window::default(); n],
        shown_max: None,
        tallies: vec![Tally::new(); n],
        flags_spikes,
    };
    s.main_loop();
    s.finish()
}

impl Sender<'_> {
    /// Until every measuring thread has returned: keep the link up, drain
    /// the queues, report on schedule, redraw the live view.
    fn main_loop(&mut self) {
        let mut first = true;
        let mut last_spike = i64::MIN;
        let mut next_redraw = i64::MIN;
        if self.opts.verbose {
            self.verbose_header();
        }
        loop {
            // before the requests are looked at: a ring after this wakes
            // the sleep at the end at once
            let bell = self.control.doorbell.rings();
            let now = monotonic_ns();
            if self.publish.service_link(now, first) {
                self.restart_stream();
            }
            #[cfg(feature = "proof")]
            if first && self.opts.self_check_probe {
                self.probe();
            }
            first = false;
            if self.drain(now, SPIKES_PER_TICK) {
                last_spike = now;
            }
            if self.control.status_requested.swap(false, Ordering::SeqCst) {
                self.status_to_stderr();
            }
            self.offer_fifo();
            if !self.rebased && now >= self.start_ns.saturating_add(self.warmup_ns as i64) {
                self.rebase_faults();
            }
            if self.control.all_finished(self.shared.len()) {
                break;
            }
            self.publish.hello_if_due(now);
            self.report_if_due(now);
            // On a terminal and into a file or pipe alike, as cyclictest
            // does: a reader of the file finds cyclictest's bytes. At every
            // wake of the loop, but at most twice a tick while a storm makes
            // it turn every 2 ms (half a tick: a wake for a report comes
            // early, and must not skip the redraw of its tick).
            if self.live_view() && now >= next_redraw && self.show_now() {
                self.redraw();
                next_redraw = now + TICK_NS / 2;
            }
            self.live.flush();
            if self.nowhere_to_write() {
                // as SIGPIPE would, but through the run's own end
                self.control.stop.store(true, Ordering::SeqCst);
            }
            let tick = if now.saturating_sub(last_spike) < TICK_NS {
                BUSY_TICK_NS
            } else {
                TICK_NS
            };
            let wake = (now + tick).min(self.publish.next_due());
            let wait = wake
                .saturating_sub(monotonic_ns())
                .clamp(1_000_000, TICK_NS);
            self.control.doorbell.sleep(bell, wait);
        }
    }

    /// Whether every output of the run is gone: the human output failed
    /// (e.g. a closed pipe), and there is no stream that still works and
    /// no file to write at the end. Measuring on would help nobody.
    fn nowhere_to_write(&self) -> bool {
        self.opts.console.human.lost().is_some() && !self.publish.link_works() && !self.opts.files
    }

    /// Whether the human output shows the live view (not `-q`, not `-v`).
    fn live_view(&self) -> bool {
        !self.opts.quiet && !self.opts.verbose
    }

    /// Whether to show the live view now: always, or with `-M` only when
    /// some thread's maximum grew since it was last shown (the first time
    /// too), as cyclictest's refresh-on-max.
    fn show_now(&mut self) -> bool {
        if !self.opts.refresh_on_max {
            return true;
        }
        self.live_counters();
        // in the unit shown, as cyclictest compares its maxima
        let unit = if self.opts.nsecs { 1 } else { 1000 };
        let max = self
            .views
            .iter()
            .map(|v| v.counters.totals.max / unit)
            .max()
            .unwrap_or(0);
        let grew = self.shown_max.is_none_or(|m| max > m);
        if grew {
            self.shown_max = Some(max);
        }
        grew
    }

    /// A new connection: every thread's latest statistics and histogram.
    fn restart_stream(&mut self) {
        for v in &self.views {
            self.publish.restart(&v.log);
        }
    }

    fn report_if_due(&mut self, now: i64) {
        if !self.publish.report_due(now) {
            return;
        }
        // every spike sample of the interval taken first, its worst among them
        self.drain(now, usize::MAX);
        self.report(false);
    }

    /// The end: last spikes, final report with the full snapshot, bye.
    fn finish(mut self) -> Outcome {
        // the measuring threads are done: their queues only empty now
        self.drain(monotonic_ns(), usize::MAX);
        let now = monotonic_ns();
        self.publish.last_report(now);
        // the final interval's worst is explained too (a last read of the
        // trace), then the trace goes
        self.report(true);
        // what the share has room for now of the last windows; the rest is
        // counted as not streamed
        self.publish_evidence(monotonic_ns());
        self.attrib.close();
        let reason = self.reason();
        let ended = self.zone.now();
        let bye = Bye {
            reason,
            epoch: self.publish.epoch(),
            elapsed_ns: now.saturating_sub(self.start_ns).max(0) as u64,
            threads: self.views.len() as u16,
            cycles: self.views.iter().map(|v| v.counters.cycles).sum(),
            max_ns: self
                .views
                .iter()
                .map(|v| v.counters.totals.max)
                .max()
                .unwrap_or(0),
            frames_dropped: 0,
            defects: self.control.defects.load(Ordering::SeqCst),
            ended: Some(ended),
        };
        self.publish.bye(now, bye);
        // The last figures, as cyclictest's last refresh shows them (at
        // least once, however short the run).
        if self.live_view() {
            self.redraw();
        }
        self.live.flush();
        Outcome {
            spikes: (self.flags_spikes && self.publish.has_stream()).then(|| self.spike_totals()),
            trace: self.attrib.totals(),
            evidence: self.attrib.out_totals(),
            timerlat: self.attrib.take_timerlat(),
            frames_dropped: self.publish.frames_dropped(),
            loss_reason: self.publish.loss_reason(),
            frames_unacknowledged: self.publish.frames_unacknowledged(),
            views: self.views,
            reason,
            ended,
        }
    }

    /// What became of the spikes of every thread so far.
    fn spike_totals(&self) -> SpikeTotals {
        let mut sum = SpikeTotals::default();
        for (t, s) in self.tallies.iter().zip(self.shared) {
            let (dropped, spikes) = s.spikes.totals();
            sum.spikes += spikes;
            sum.dropped += dropped;
            sum.sent += t.total.sent;
            sum.explained += t.total.explained;
            sum.aggregated += t.total.aggregated;
        }
        sum
    }

    /// At the end of `--warmup`: count faults from here on.
    fn rebase_faults(&mut self) {
        self.rebased = true;
        for (v, s) in self.views.iter().zip(self.shared) {
            if let Some(f) = crate::linux::procfs::thread_faults(&v.stat_path) {
                if let Ok(mut g) = s.faults_at_start.lock() {
                    *g = f;
                }
            }
        }
    }

    fn reason(&self) -> ByeReason {
        let c = self.control;
        let bt = c.break_thread.load(Ordering::SeqCst);
        if bt > 0 {
            return ByeReason::Break {
                thread: (bt - 1) as u16,
                latency_ns: c.break_ns.load(Ordering::SeqCst),
            };
        }
        if self.shared.iter().any(|s| s.failed()) {
            return ByeReason::Error;
        }
        match c.signal.load(Ordering::SeqCst) {
            0 => ByeReason::Completed,
            sig => ByeReason::Signal(sig.min(255) as u8),
        }
    }

    /// Take up to `limit` spike samples from each spike queue (publishing,
    /// explaining or counting each flagged sample), then the `-v` queues.
    /// Whether any spike sample came.
    fn drain(&mut self, now: i64, limit: usize) -> bool {
        // evidence before ordinary spikes: its share is its own
        self.publish_evidence(now);
        let mut any = false;
        for t in 0..self.spikes.len() {
            for _ in 0..limit {
                let Some(r) = self.spikes[t].dequeue() else {
                    break;
                };
                any = true;
                self.keep_for_summary(t, &r);
                self.attrib.note(t, &r);
                if r.flags.spike && self.tallies[t].take_awaited(&r) {
                    // not this interval's: not among its spike samples seen
                    self.publish_late_worst(t, &r);
                    continue;
                }
                if r.flags.spike {
                    self.tallies[t].seen(&r);
                }
                self.publish_spike(now, t, &r);
                // a pass of many spikes on a slow line takes its time
                // (each frame waits for the line): the evidence's share
                // goes on between them, not only once a pass
                self.publish_evidence(monotonic_ns());
            }
        }
        self.attrib.drained();
        self.drain_verbose();
        any
    }

    /// The evidence being streamed, a part at a time, while the line's
    /// evidence share has room (`--trace-out-stream`).
    fn publish_evidence(&mut self, now: i64) {
        while self.attrib.evidence_waits() && self.publish.evidence_room(now) {
            match self.attrib.next_evidence_frame() {
                Some(body) => self.publish.send(body),
                None => break,
            }
        }
    }

    /// One flagged sample of thread `t` onto the line, as far as the
    /// line's spike share has room: any spike sample while it has plenty, else
    /// only one worse than any sent this interval; with it its explanation
    /// while the share had plenty and the drain may still read a trace
    /// window, or if it is worse than any explained this interval. A break
    /// sample always goes. A spike not sent is counted (aggregated).
    fn publish_spike(&mut self, now: i64, t: usize, r: &SpikeSample) {
        let tally = &mut self.tallies[t];
        let room = self.publish.spike_room(now);
        let send = r.flags.brk
            || match room {
                Room::Any => true,
                Room::Worst => tally.worst_yet(r.latency_ns),
                Room::Nothing => false,
            };
        if !send {
            if r.flags.spike {
                tally.aggregated();
            }
            return;
        }
        self.publish.send(Body::Spike(*r));
        if !r.flags.spike {
            return;
        }
        tally.sent(r);
        // the room as the spike sample found it: a spike sent is explained with
        // it, rather than its share going to more spike samples nobody explains;
        // an ordinary one only if the trace may still hold its window
        let explain = match self.attrib.can_explain(r) {
            None => false,
            Some(ordinary) => {
                (ordinary && room == Room::Any && self.attrib.may_hold(r, self.plans[t].cpu))
                    || tally.worst_unexplained(r.latency_ns)
            }
        };
        if !explain {
            return;
        }
        let tid = self.shared[t].tid.load(Ordering::SeqCst);
        if let Some(a) = self.attrib.explain(t, r, self.plans[t].cpu, tid) {
            tally.explained(r);
            self.publish.send(Body::Explain(a));
        }
    }

    /// The spike sample of an earlier interval's largest spike, which came
    /// after that interval's report: sent and explained whatever the
    /// line's room, as the report would have.
    fn publish_late_worst(&mut self, t: usize, r: &SpikeSample) {
        self.publish.send(Body::Spike(*r));
        let tid = self.shared[t].tid.load(Ordering::SeqCst);
        let a = self
            .attrib
            .can_explain(r)
            .and_then(|_| self.attrib.explain(t, r, self.plans[t].cpu, tid));
        match a {
            Some(a) => {
                self.tallies[t].sent_and_explained_late();
                self.publish.send(Body::Explain(a));
            }
            None => self.tallies[t].sent_late(),
        }
    }

    /// What the final summary lists: the cycle numbers (from 0, as
    /// cyclictest) of the first `-h` overflows, and the `--spike` lines.
    fn keep_for_summary(&mut self, t: usize, r: &SpikeSample) {
        let v = &mut self.views[t];
        if r.flags.overflow && v.overflow_cycles.len() < v.overflow_cycles.capacity() {
            v.overflow_cycles.push(r.cycle);
        }
        if is_spike(r, self.opts.spike_ns) {
            v.spikes_total += 1;
            if v.spikes.len() < self.opts.spike_nodes {
                v.spikes.push(*r);
            }
        }
    }

    /// One report (`last`: the final one): the coarse attributions, then
    /// per thread its delta, statistics and snapshot chunk(s), as the
    /// publisher's schedule says, and where spikes are flagged the
    /// aggregate of what became of them.
    fn report(&mut self, last: bool) {
        let publish = &mut self.publish;
        self.attrib
            .coarse(&self.plans, |a| publish.send(Body::Explain(a)));
        let epoch = self.publish.epoch();
        let views = self.views.iter_mut().zip(self.shared);
        for (t, (v, shared)) in views.enumerate() {
            if v.snapshot(shared) {
                v.update_losses(shared);
                let extra = v.extra();
                self.publish.thread(&mut v.log, &v.cur, extra);
                v.counters = *v.log.counters();
                v.count_exceedances(epoch);
            }
            if self.flags_spikes {
                let (dropped, spikes) = shared.spikes.totals();
                let exact = tally::Exact {
                    spikes,
                    dropped,
                    peak: shared.spikes.take_peak(v.counters.cycles),
                };
                // the interval's largest is explained, even if the line
                // had no room for its spike sample when it came
                let tally = &mut self.tallies[t];
                // one still queued is explained when it comes
                tally.await_peak(exact.peak);
                if let Some((r, sent)) = tally.peak_unexplained(exact.peak) {
                    let tid = shared.tid.load(Ordering::SeqCst);
                    let a = self
                        .attrib
                        .can_explain(&r)
                        .and_then(|_| self.attrib.explain(t, &r, self.plans[t].cpu, tid));
                    if let Some(a) = a {
                        if !sent {
                            self.publish.send(Body::Spike(r));
                            tally.sent_after_all(&r);
                        }
                        tally.explained(&r);
                        self.publish.send(Body::Explain(a));
                    }
                }
                // the interval's worst evidence goes to --trace-out
                self.attrib.report(t);
                let a = self.tallies[t].aggregate(t as u16, epoch, exact, last);
                self.publish.send(Body::Aggregate(a));
            }
        }
    }
}
