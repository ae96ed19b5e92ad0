//! The non-RT sender thread: reads the measuring threads' records
//! lock-free, drains their spike queues, prints the live view, and writes
//! the frame stream.
//!
//! Stream protocol, per report interval k = 1, 2, ... and per thread: the
//! raw bucket delta `S_k - S_(k-1)` in [`HistDelta`] parts, then
//! [`ThreadStats`] of the same snapshot, then (every 5th report, at the start
//! of a connection and at the end) the full cumulative histogram of that
//! snapshot in [`SnapshotChunk`]s. A hello starts every connection and
//! repeats every 10 s; a [`Bye`] ends the run.

use std::sync::atomic::{AtomicU32, Ordering};

use heapless::spsc::Consumer;
use latscope_core::hist::Histogram;
use latscope_core::layout::DEFAULT_LINEAR_US;
use latscope_core::record::{Counters, Snapshot};
use latscope_core::spike::SpikeLog;
use latscope_core::wire::{
    bounded, Body, Bye, ByeReason, DeltaEntry, Encoder, Hello, HistDelta, Level, LogLine,
    SnapshotChunk, SnapshotEntry, SpikeRecord, ThreadStats, CHUNK_ENTRIES, DELTA_ENTRIES,
};

use crate::config::cpus::ThreadPlan;
use crate::link::{self as stream, Sink};
use crate::linux::clock::{monotonic_ns, timespec};
use crate::linux::procfs::{self, Faults};
use crate::output::text::{self as human, Row};
use crate::rt::{state, Control, Shared, VerboseSample, N};

/// Live view refresh period.
const TICK_NS: i64 = 100_000_000;
/// Hello repeat period.
const HELLO_NS: i64 = 10_000_000_000;
/// Full snapshot every this many reports.
const SNAPSHOT_EVERY: u32 = 5;
/// `--spike` lines kept for the end (cyclictest's default spike-nodes).
const SPIKE_NODES: usize = 1024;
/// Spikes explained per drain (each reads a CPU's trace buffer).
const EXPLAIN_PER_TICK: usize = 8;
/// Human output buffer; flushed before it would grow.
const HUMAN_BUF: usize = 16 * 1024;
/// Snapshot retries (the writer holds its section for a few dozen ns).
const TRIES: u32 = 100_000;

/// Output settings of the sender.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-N`.
    pub nsecs: bool,
    /// `-q`.
    pub quiet: bool,
    /// `-v`.
    pub verbose: bool,
    /// `-h` range.
    pub hist_us: u32,
    /// `--spike` threshold in ns (0 = off).
    pub spike_ns: u64,
    /// Report interval.
    pub report_ns: i64,
    /// Human output fd: 1 or 2.
    pub human_fd: i32,
    /// Redraw the live view in place (a terminal).
    pub tty: bool,
    /// Policy name for the live header.
    pub policy: &'static str,
    /// Make one forbidden request under `--self-check` to prove it is counted.
    pub self_check_probe: bool,
}

/// What the sender keeps about one measuring thread.
pub struct View {
    prev: Box<Snapshot<N>>,
    cur: Box<Snapshot<N>>,
    /// Cumulative histogram (u64), as of the last report.
    pub hist: Box<Histogram<N>>,
    /// Statistics as of the last report.
    pub counters: Counters,
    /// Faults since measuring started.
    pub faults: Faults,
    /// Spike records dropped by the measuring thread.
    pub dropped: u64,
    /// 1-based cycle numbers of the first `-h` overflows.
    pub overflow_cycles: Vec<u64>,
    /// `--spike` samples kept for the end.
    pub spikes: Vec<SpikeRecord>,
    /// All `--spike` samples seen.
    pub spikes_total: u64,
    /// The largest and first spikes.
    pub spike_log: SpikeLog<16>,
    stat_path: String,
    last_stats: ThreadStats,
}

impl View {
    /// Fresh view of thread `index`; lists are sized for what the run
    /// asked for (`-h` overflows, `--spike` lines), so nothing grows later.
    pub fn new(index: usize, hist_us: u32, spikes: bool) -> View {
        View {
            prev: Box::new(Snapshot::new()),
            cur: Box::new(Snapshot::new()),
            hist: Box::new(Histogram::new(DEFAULT_LINEAR_US)),
            counters: Counters::ZERO,
            faults: Faults::default(),
            dropped: 0,
            overflow_cycles: Vec::with_capacity(hist_us as usize),
            spikes: Vec::with_capacity(if spikes { SPIKE_NODES } else { 0 }),
            spikes_total: 0,
            spike_log: SpikeLog::new(),
            stat_path: String::new(),
            last_stats: ThreadStats {
                thread: index as u16,
                min: u64::MAX,
                ..ThreadStats::default()
            },
        }
    }

    /// The formatter's view of this thread.
    pub fn row<'a>(&'a self, index: usize, plan: &ThreadPlan, tid: i32) -> Row<'a> {
        Row {
            index,
            tid,
            priority: plan.priority,
            interval_us: plan.interval_us,
            counters: &self.counters,
            hist: &self.hist,
            overflow_cycles: &self.overflow_cycles,
            faults: self.faults,
            dropped: self.dropped,
        }
    }
}

/// Everything the sender thread gets.
pub struct Args<'a> {
    /// Per-thread shared state.
    pub shared: &'a [Box<Shared>],
    /// The thread plan.
    pub plans: &'a [ThreadPlan],
    /// Run control.
    pub control: &'a Control,
    /// Spike queues.
    pub spikes: Vec<Consumer<'a, SpikeRecord>>,
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
    pub tracer: Option<crate::linux::tracefs::Tracer>,
    /// `--explain` threshold in ns.
    pub explain_ns: u64,
    /// `--explain` without tracefs: the pinned CPUs whose `/proc/interrupts`
    /// and `/proc/softirqs` deltas explain spikes coarsely, per report.
    pub coarse_cpus: Vec<usize>,
    /// `--warmup` in ns: faults are counted from its end.
    pub warmup_ns: u64,
    /// Measuring start (monotonic ns).
    pub start_ns: i64,
    /// Self-check defects counted by the main thread.
    pub defects: &'a AtomicU32,
}

/// What the sender hands back at the end.
pub struct Outcome {
    /// Per-thread views.
    pub views: Vec<View>,
    /// The last report number.
    pub epoch: u32,
    /// Run time.
    pub elapsed_ns: u64,
    /// Frames not delivered.
    pub frames_dropped: u64,
    /// Why the run ended.
    pub reason: ByeReason,
}

/// Human output through a reused buffer and plain `write`s.
struct Human {
    fd: i32,
    buf: String,
}

impl Human {
    fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let fd = if self.fd == 2 {
            rustix::stdio::stderr()
        } else {
            rustix::stdio::stdout()
        };
        let _ = stream::write_all(fd, self.buf.as_bytes());
        self.buf.clear();
    }
}

struct Sender<'a> {
    a: Args<'a>,
    /// Fault baselines re-taken at the end of the warm-up.
    rebased: bool,
    /// Coarse attribution: counters at the last report.
    proc_prev: Option<crate::linux::interrupts::ProcInterrupts>,
    /// Coarse attribution: the largest spike of each thread this interval.
    worst: Vec<Option<SpikeRecord>>,
    enc: Encoder,
    views: Vec<View>,
    epoch: u32,
    human: Human,
    err: Human,
    live_drawn: bool,
}

/// The sender thread's body.
pub fn run(a: Args<'_>) -> Outcome {
    let _ = rustix::thread::set_name(c"latscope-send");
    let n = a.shared.len();
    let spikes = a.opts.spike_ns > 0;
    let mut views: Vec<View> = (0..n)
        .map(|i| View::new(i, a.opts.hist_us, spikes))
        .collect();
    for (i, v) in views.iter_mut().enumerate() {
        let tid = a.shared[i].tid.load(Ordering::SeqCst);
        v.stat_path = format!("/proc/self/task/{tid}/stat");
    }
    let human_fd = a.opts.human_fd;
    let mut s = Sender {
        rebased: a.warmup_ns == 0,
        proc_prev: if a.coarse_cpus.is_empty() {
            None
        } else {
            crate::linux::interrupts::ProcInterrupts::snapshot(&a.coarse_cpus).ok()
        },
        worst: vec![None; n],
        a,
        enc: Encoder::new(),
        views,
        epoch: 0,
        human: Human {
            fd: human_fd,
            buf: String::with_capacity(HUMAN_BUF),
        },
        err: Human {
            fd: 2,
            // status lines and notes, flushed every tick
            buf: String::with_capacity(4 * 1024),
        },
        live_drawn: false,
    };
    s.main_loop()
}

impl Sender<'_> {
    fn main_loop(&mut self) -> Outcome {
        let start = self.a.start_ns;
        let mut next_report = start.saturating_add(self.a.opts.report_ns);
        let mut next_hello = start.saturating_add(HELLO_NS);
        let mut first = true;
        let mut resync = false;
        if self.a.opts.verbose {
            self.verbose_header();
        }
        loop {
            let now = monotonic_ns();
            if self.service_link(now, first) {
                next_hello = now.saturating_add(HELLO_NS);
            }
            if first && self.a.opts.self_check_probe {
                self.probe();
            }
            first = false;
            self.drain();
            if self
                .a
                .control
                .status_requested
                .swap(false, Ordering::SeqCst)
            {
                self.status_to_stderr();
            }
            if !self.rebased && now >= start.saturating_add(self.a.warmup_ns as i64) {
                self.rebase_faults();
            }
            let all_done =
                self.a.control.finished.load(Ordering::SeqCst) as usize >= self.a.shared.len();
            if all_done {
                break;
            }
            if now >= next_hello {
                self.send_hello();
                next_hello = now.saturating_add(HELLO_NS);
            }
            if now >= next_report {
                self.epoch += 1;
                let full = self.epoch.is_multiple_of(SNAPSHOT_EVERY) || resync;
                let dropped_before = self.dropped();
                self.report(now, false, full);
                resync = self.dropped() != dropped_before;
                next_report = next_report.saturating_add(self.a.opts.report_ns);
                if next_report <= now {
                    next_report = now.saturating_add(self.a.opts.report_ns);
                }
                if !self.a.opts.tty && !self.a.opts.quiet && !self.a.opts.verbose {
                    self.plain_lines();
                }
            }
            if self.a.opts.tty && !self.a.opts.quiet && !self.a.opts.verbose {
                self.redraw();
            }
            self.human.flush();
            self.err.flush();
            let wake = (now + TICK_NS).min(next_report);
            let wait = wake
                .saturating_sub(monotonic_ns())
                .clamp(1_000_000, TICK_NS);
            let _ = rustix::event::poll(&mut [], Some(&timespec(wait)));
        }
        // The end: last spikes, final report with the full snapshot, bye.
        self.drain();
        // the measuring threads (and their markers) are gone: remove the
        // trace instance
        if let Some(t) = self.a.tracer.take() {
            let _ = t.close();
        }
        self.epoch += 1;
        let now = monotonic_ns();
        self.report(now, true, true);
        let reason = self.reason();
        let elapsed_ns = now.saturating_sub(start).max(0) as u64;
        let cycles = self.views.iter().map(|v| v.counters.cycles).sum();
        let max_ns = self
            .views
            .iter()
            .map(|v| v.counters.totals.max)
            .max()
            .unwrap_or(0);
        let mut frames_dropped = self.dropped();
        if let Some(sink) = self.a.sink.as_mut() {
            sink.service(now, false);
            frames_dropped = sink.frames_dropped;
        }
        let bye = Bye {
            reason,
            epoch: self.epoch,
            elapsed_ns,
            threads: self.views.len() as u16,
            cycles,
            max_ns,
            frames_dropped,
            defects: self.a.defects.load(Ordering::SeqCst),
        };
        self.send(Body::Bye(bye));
        if let Some(sink) = self.a.sink.as_mut() {
            sink.finish(monotonic_ns(), 2_000_000_000);
        }
        if self.a.opts.tty && self.live_drawn {
            self.redraw();
        }
        self.human.flush();
        self.err.flush();
        Outcome {
            views: std::mem::take(&mut self.views),
            epoch: self.epoch,
            elapsed_ns,
            frames_dropped: self.dropped(),
            reason,
        }
    }

    /// At the end of `--warmup`: count faults from here on.
    fn rebase_faults(&mut self) {
        self.rebased = true;
        for (t, v) in self.views.iter().enumerate() {
            if let Some(f) = procfs::thread_faults(&v.stat_path) {
                if let Ok(mut g) = self.a.shared[t].faults_at_start.lock() {
                    *g = f;
                }
            }
        }
    }

    fn dropped(&self) -> u64 {
        self.a.sink.as_ref().map_or(0, |s| s.frames_dropped)
    }

    fn reason(&self) -> ByeReason {
        let c = self.a.control;
        let bt = c.break_thread.load(Ordering::SeqCst);
        if bt > 0 {
            return ByeReason::Break {
                thread: (bt - 1) as u16,
                latency_ns: c.break_ns.load(Ordering::SeqCst),
            };
        }
        if self
            .a
            .shared
            .iter()
            .any(|s| s.error.lock().map(|g| g.is_some()).unwrap_or(true))
        {
            return ByeReason::Error;
        }
        match c.signal.load(Ordering::SeqCst) {
            0 => ByeReason::Completed,
            sig => ByeReason::Signal(sig.min(255) as u8),
        }
    }

    /// Encode and send one frame (nothing without a stream).
    fn send(&mut self, body: Body) {
        emit(&mut self.enc, &mut self.a.sink, body);
    }

    fn send_hello(&mut self) {
        let hello = self.a.hello.clone();
        self.send(Body::Hello(hello));
    }

    /// Connect/flush; on a new connection send hello, warnings and the
    /// latest full snapshot. Returns whether a connection started.
    fn service_link(&mut self, now: i64, first: bool) -> bool {
        let new = match self.a.sink.as_mut() {
            Some(sink) => sink.service(now, first),
            None => false,
        };
        if new {
            self.send_hello();
            for w in self.a.warnings.clone() {
                self.send(Body::Log(LogLine {
                    level: Level::Warn,
                    text: bounded(&w),
                }));
            }
            for t in 0..self.views.len() {
                let stats = self.views[t].last_stats;
                self.send(Body::Stats(ThreadStats {
                    epoch: self.epoch,
                    ..stats
                }));
                self.send_chunks(t);
            }
        }
        new
    }

    /// Drain the spike and `-v` queues.
    fn drain(&mut self) {
        let mut explained = 0;
        let mut skipped = false;
        for t in 0..self.a.spikes.len() {
            while let Some(r) = self.a.spikes[t].dequeue() {
                let v = &mut self.views[t];
                if r.flags.overflow && v.overflow_cycles.len() < v.overflow_cycles.capacity() {
                    v.overflow_cycles.push(r.cycle + 1);
                }
                let ns = r.latency_ns.max(0) as u64;
                if self.a.opts.spike_ns > 0 && ns > self.a.opts.spike_ns {
                    v.spikes_total += 1;
                    if v.spikes.len() < SPIKE_NODES {
                        v.spikes.push(r);
                    }
                }
                if r.flags.spike {
                    v.spike_log.add(r);
                }
                self.send(Body::Spike(r));
                if self.proc_prev.is_some() && r.flags.spike && ns >= self.a.explain_ns {
                    let w = &mut self.worst[t];
                    if w.is_none_or(|w| w.latency_ns < r.latency_ns) {
                        *w = Some(r);
                    }
                }
                let cpu = self.a.plans[t].cpu;
                if let Some(tracer) = self.a.tracer.as_mut() {
                    if r.flags.spike && ns >= self.a.explain_ns {
                        if explained < EXPLAIN_PER_TICK {
                            explained += 1;
                            let deadline = r.deadline_ns.max(0) as u64;
                            let a = match cpu {
                                Some(cpu) => tracer.explain(cpu, deadline, deadline + ns, r.cycle),
                                None => {
                                    let tid = self.a.shared[t].tid.load(Ordering::SeqCst);
                                    let tid = u32::try_from(tid).unwrap_or(0);
                                    tracer.explain_unpinned(tid, deadline, deadline + ns, r.cycle)
                                }
                            };
                            emit(&mut self.enc, &mut self.a.sink, Body::Explain(a));
                        } else {
                            skipped = true;
                        }
                    }
                }
            }
        }
        if skipped {
            if let Some(tracer) = self.a.tracer.as_mut() {
                tracer.resume();
            }
        }
        let nsecs = self.a.opts.nsecs;
        for t in 0..self.a.verbose.len() {
            while let Some((cycle, lat)) = self.a.verbose[t].dequeue() {
                human::verbose_line(&mut self.human.buf, t, cycle, lat, nsecs);
                if self.human.buf.len() > HUMAN_BUF - 256 {
                    self.human.flush();
                }
            }
        }
    }

    /// Without tracefs: explain each thread's largest spike of the interval
    /// by the interrupt and softirq counts its CPU took meanwhile (coarse).
    fn coarse_explain(&mut self) {
        let Some(prev) = self.proc_prev.as_ref() else {
            return;
        };
        let Ok(now) = crate::linux::interrupts::ProcInterrupts::snapshot(&self.a.coarse_cpus)
        else {
            return;
        };
        for t in 0..self.worst.len() {
            let (Some(r), Some(cpu)) = (self.worst[t].take(), self.a.plans[t].cpu) else {
                continue;
            };
            let a = prev.delta(
                &now,
                cpu,
                r.cycle,
                r.deadline_ns.max(0) as u64,
                r.latency_ns.max(0) as u64,
            );
            emit(&mut self.enc, &mut self.a.sink, Body::Explain(a));
        }
        self.proc_prev = Some(now);
    }

    /// One report: per thread delta, stats, and optionally the snapshot.
    fn report(&mut self, now: i64, last: bool, full: bool) {
        self.coarse_explain();
        let elapsed = now.saturating_sub(self.a.start_ns).max(0) as u64;
        for t in 0..self.views.len() {
            let shared = &self.a.shared[t];
            let v = &mut self.views[t];
            if shared.rec.snapshot(&mut v.cur, TRIES).is_err() {
                // The writer never holds its section that long; keep the
                // previous figures rather than publish a torn copy.
                continue;
            }
            if let Some(f) = procfs::thread_faults(&v.stat_path) {
                let base = shared
                    .faults_at_start
                    .lock()
                    .map(|g| *g)
                    .unwrap_or_default();
                // Before measuring starts the baseline is 0: report 0.
                if shared.state.load(Ordering::SeqCst) >= state::MEASURING {
                    v.faults = Faults {
                        minflt: f.minflt.saturating_sub(base.minflt),
                        majflt: f.majflt.saturating_sub(base.majflt),
                    };
                }
            }
            v.dropped = shared.dropped.load(Ordering::Relaxed);
            let layout = *v.hist.layout();
            let c = v.cur.counters;
            // delta parts, sent as they fill (no allocation)
            let nonzero = v
                .cur
                .buckets
                .iter()
                .zip(v.prev.buckets.iter())
                .filter(|(c, p)| c.wrapping_sub(**p) != 0)
                .count();
            let parts = nonzero.div_ceil(DELTA_ENTRIES).max(1);
            let mut delta = HistDelta {
                thread: t as u16,
                epoch: self.epoch,
                part: 0,
                parts: parts as u16,
                entries: heapless::Vec::new(),
            };
            let mut interval_top: Option<usize> = None;
            for (i, (cb, pb)) in v.cur.buckets.iter().zip(v.prev.buckets.iter()).enumerate() {
                let d = cb.wrapping_sub(*pb);
                if d == 0 {
                    continue;
                }
                interval_top = Some(i);
                if delta.entries.is_full() {
                    let next_part = delta.part + 1;
                    emit(&mut self.enc, &mut self.a.sink, Body::Delta(delta.clone()));
                    delta.entries.clear();
                    delta.part = next_part;
                }
                let _ = delta.entries.push(DeltaEntry {
                    bucket: i as u16,
                    count: d,
                });
            }
            emit(&mut self.enc, &mut self.a.sink, Body::Delta(delta));
            let interval_max = interval_top
                .map(|i| layout.upper_ns(i).unwrap_or(c.totals.max).min(c.totals.max))
                .unwrap_or(0);
            v.hist.absorb_raw(&v.prev.buckets, &v.cur.buckets);
            v.hist.set_totals(c.totals);
            v.counters = c;
            std::mem::swap(&mut v.prev, &mut v.cur);
            let stats = ThreadStats {
                thread: t as u16,
                epoch: self.epoch,
                elapsed_ns: elapsed,
                cycles: c.cycles,
                count: c.totals.count,
                sum: c.totals.sum,
                min: c.totals.min,
                max: c.totals.max,
                interval_max,
                last: c.last,
                missed: c.missed,
                early: c.early,
                minflt: v.faults.minflt,
                majflt: v.faults.majflt,
                dropped: v.dropped,
                last_report: last,
            };
            v.last_stats = stats;
            emit(&mut self.enc, &mut self.a.sink, Body::Stats(stats));
            if full {
                self.send_chunks(t);
            }
        }
    }

    /// The cumulative histogram of thread `t` as of the last report.
    fn send_chunks(&mut self, t: usize) {
        let nonzero = self.views[t]
            .hist
            .counts()
            .iter()
            .filter(|&&c| c > 0)
            .count();
        let total = nonzero.div_ceil(CHUNK_ENTRIES).max(1) as u16;
        let mut chunk = SnapshotChunk {
            thread: t as u16,
            epoch: self.epoch,
            index: 0,
            total,
            entries: heapless::Vec::new(),
        };
        for (i, &c) in self.views[t].hist.counts().iter().enumerate() {
            if c == 0 {
                continue;
            }
            if chunk.entries.is_full() {
                let next = chunk.index + 1;
                emit(&mut self.enc, &mut self.a.sink, Body::Chunk(chunk.clone()));
                chunk.entries.clear();
                chunk.index = next;
            }
            let _ = chunk.entries.push(SnapshotEntry {
                bucket: i as u16,
                count: c,
            });
        }
        emit(&mut self.enc, &mut self.a.sink, Body::Chunk(chunk));
    }

    fn tid(&self, t: usize) -> i32 {
        self.a.shared[t].tid.load(Ordering::SeqCst)
    }

    /// Fresh counters of every thread for the live view.
    fn live_counters(&mut self) {
        for t in 0..self.views.len() {
            let v = &mut self.views[t];
            if self.a.shared[t].rec.snapshot(&mut v.cur, TRIES).is_ok() {
                v.counters = v.cur.counters;
            }
        }
    }

    fn plain_lines(&mut self) {
        for t in 0..self.views.len() {
            let tid = self.tid(t);
            let row = self.views[t].row(t, &self.a.plans[t], tid);
            human::thread_line(&mut self.human.buf, &row, self.a.opts.nsecs);
            self.human.buf.push('\n');
        }
    }

    fn redraw(&mut self) {
        self.live_counters();
        if self.live_drawn {
            use std::fmt::Write;
            let _ = write!(self.human.buf, "\x1b[{}A", self.views.len() + 2);
        }
        let mut la = [0u8; 128];
        let load = procfs::read_into("/proc/loadavg", &mut la)
            .map(|s| {
                let end = s
                    .char_indices()
                    .filter(|(_, c)| *c == ' ')
                    .nth(3)
                    .map_or(s.len(), |(i, _)| i);
                s[..end].trim_end()
            })
            .unwrap_or("");
        human::header(&mut self.human.buf, self.a.opts.policy, load);
        self.plain_lines();
        self.live_drawn = true;
    }

    fn status_to_stderr(&mut self) {
        self.live_counters();
        self.err
            .buf
            .push_str("#---------------------------\n# latscope current status:\n");
        for t in 0..self.views.len() {
            let tid = self.tid(t);
            let row = self.views[t].row(t, &self.a.plans[t], tid);
            human::thread_line(&mut self.err.buf, &row, self.a.opts.nsecs);
            self.err.buf.push('\n');
        }
        self.err.buf.push_str("#---------------------------\n");
    }

    fn verbose_header(&mut self) {
        use std::fmt::Write;
        let cpus = crate::config::cpus::available().len();
        let _ = write!(self.human.buf, "Max CPUs = {cpus}\nOnline CPUs = {cpus}\n");
        for (i, p) in self.a.plans.iter().enumerate() {
            let _ = writeln!(self.human.buf, "Thread {i} Interval: {}", p.interval_us);
        }
    }

    /// `--self-check-probe`: every forbidden process-creation request once.
    fn probe(&mut self) {
        for (name, result) in crate::linux::sys::probe_process_creation() {
            let text = match result {
                Err(e) => format!("self-check probe: {name} refused ({e})"),
                Ok(()) => format!("self-check probe: {name} was NOT refused"),
            };
            self.err.buf.push_str("# ");
            self.err.buf.push_str(&text);
            self.err.buf.push('\n');
            self.send(Body::Log(LogLine {
                level: Level::Warn,
                text: bounded(&text),
            }));
        }
    }
}

/// Encode `body` as the next frame and send it (nothing without a stream).
fn emit(enc: &mut Encoder, sink: &mut Option<Sink>, body: Body) {
    let Some(sink) = sink.as_mut() else {
        return;
    };
    match enc.frame(body) {
        Ok(bytes) => sink.send(bytes),
        Err(_) => sink.frames_dropped += 1,
    }
}
