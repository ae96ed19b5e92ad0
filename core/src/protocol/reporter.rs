//! The sending side: measuring threads' shared histograms in, frames out, on the
//! schedule documented in [`super`].

use crate::error::Error;
use crate::hist::HistogramIn;
use crate::layout::Layout;
use crate::seqlock::{Counters, SnapshotIn};
use crate::wire::{
    Body, Encoder, Hello, HistDelta, RunWriter, Runs, SnapshotChunk, ThreadStats, RUN_BYTES,
};

use super::FrameSink;

/// A hello is resent this often (ns).
pub const HELLO_EVERY_NS: u64 = 10_000_000_000;

/// The longest a report waits for its byte budget
/// ([`Reporter::with_budget`]) past its due time (ns). Only the reports'
/// own frames (and hellos and log lines) are charged to that budget, never
/// spikes or explanations, so it is the reports' own size that can delay
/// them: with 1 s reports one goes out at least every 3 s.
pub const MAX_BUDGET_WAIT_NS: u64 = 2_000_000_000;

/// The longest the histograms go without a delta while the report bytes
/// sent are not paid for (ns): a report that finds them unpaid for is
/// lean ([`Reporter::with_budget`]) unless the last report with deltas
/// began this long ago or more.
pub const MAX_LEAN_NS: u64 = 10_000_000_000;

/// The byte budget of the reports on a serial line of `baud` (8N1: 10 bits
/// a byte): 7 % of the line, so that with the final report's full
/// snapshots (up to about 15 kB for 4 threads with wide histograms) a run
/// of a minute stays within 10 % of it.
pub const fn line_budget(baud: u32) -> u32 {
    baud / 10 * 7 / 100
}

/// The share of a serial line of `baud` (8N1) that spike samples and
/// explanations may use ([`Reporter::with_spike_share`]): 25 % of it, in
/// bytes per second. With the reports' 7 % and the share's burst
/// ([`SPIKE_AHEAD_NS`]) no second carries more than half of the line.
pub const fn spike_share(baud: u32) -> u32 {
    baud / 10 * 25 / 100
}

/// The share of a serial line of `baud` (8N1) that a spike's evidence may
/// use ([`Reporter::with_evidence_share`]): 5 % of it, in bytes per
/// second, taken out of the spikes' share ([`spike_share`]), never added
/// to it.
pub const fn evidence_share(baud: u32) -> u32 {
    baud / 10 * 5 / 100
}

/// How far ahead of the clock the evidence share may be spent (ns).
pub const EVIDENCE_AHEAD_NS: i64 = 100_000_000;

/// How far ahead of the clock the spike share may be spent (ns of the
/// share): after a quiet stretch, this much can go at once.
pub const SPIKE_AHEAD_NS: i64 = 500_000_000;

/// The part of [`SPIKE_AHEAD_NS`] kept for the worst spikes (a spike worse
/// than any sent in the interval, and its explanation): ordinary spike
/// samples leave it unspent.
pub const SPIKE_RESERVE_NS: i64 = 250_000_000;

/// What the spike share has room for now ([`Reporter::spike_room`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Room {
    /// Nothing: the share is spent.
    Nothing,
    /// Only the worst: the reserve is left.
    Worst,
    /// Any spike sample or explanation.
    Any,
}

/// Whether `body` is charged to the spike share rather than the reports'
/// budget.
const fn spike_class(body: &Body) -> bool {
    matches!(body, Body::Spike(_) | Body::Explain(_))
}

/// Whether `body` is charged to the evidence share (and the spikes').
const fn evidence_class(body: &Body) -> bool {
    matches!(body, Body::EvidenceHead(_) | Body::EvidencePart(_))
}

/// `until` moved on by the time `len` bytes take at `budget` bytes per
/// second (0: no budget, no time).
const fn paid(until: i64, budget: u32, len: usize) -> i64 {
    if budget == 0 {
        return until;
    }
    let ns = (len as u64).saturating_mul(1_000_000_000) / budget as u64;
    until.saturating_add(if ns > i64::MAX as u64 {
        i64::MAX
    } else {
        ns as i64
    })
}

/// The highest bucket whose count differs between `prev` and `cur`.
fn highest_change(prev: &[u32], cur: &[u32]) -> Option<usize> {
    cur.iter().zip(prev).rposition(|(c, p)| c != p)
}

/// Bytes of runs in a thread's rolling snapshot chunk per report. At the
/// default 1 s report this is what keeps a receiver's histograms
/// recoverable after a loss; see the link budget in `docs/protocol.md`.
pub const ROLL_BYTES: usize = 48;

/// A thread's figures that its shared histogram does not hold: the target measures
/// them elsewhere (0 where they do not exist, as on bare metal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SideCounts {
    /// Minor page faults since measuring started.
    pub minflt: u64,
    /// Major page faults since measuring started.
    pub majflt: u64,
    /// Spike samples the measuring thread could not queue.
    pub dropped: u64,
}

/// What a [`Reporter`] keeps about one measuring thread: the raw counters
/// of the last report (deltas are taken against them), the cumulative
/// histogram and statistics as of that report (for snapshots, and for the
/// caller's own output), and where the rolling snapshot is.
///
/// As many buckets as the thread's shared histogram, about 12 B per bucket: the
/// previous counters in storage `P` and the histogram in `H`, arrays sized
/// at compile time ([`ThreadLog`], const-constructible) or memory the
/// caller sized by a run-time layout ([`ThreadLogIn::with_memory`]).
#[derive(Debug, Clone)]
pub struct ThreadLogIn<P, H> {
    prev: P,
    hist: HistogramIn<H>,
    counters: Counters,
    stats: ThreadStats,
    cursor: u16,
}

/// The log of a shared histogram of `N` buckets, sized at compile time.
pub type ThreadLog<const N: usize> = ThreadLogIn<[u32; N], [u64; N]>;

/// The statistics of thread `index` before its first report.
const fn no_stats(index: u16) -> ThreadStats {
    ThreadStats {
        thread: index,
        epoch: 0,
        elapsed_ns: 0,
        cycles: 0,
        count: 0,
        sum: 0,
        min: u64::MAX,
        max: 0,
        interval_max: 0,
        last: 0,
        missed: 0,
        early: 0,
        minflt: 0,
        majflt: 0,
        dropped: 0,
        last_report: false,
    }
}

impl<const N: usize> ThreadLogIn<[u32; N], [u64; N]> {
    /// The log of thread `index` before its first report, for a shared histogram of
    /// `linear_us` linear buckets.
    pub const fn new(index: u16, linear_us: u32) -> Self {
        ThreadLogIn {
            prev: [0; N],
            hist: HistogramIn::new(linear_us),
            counters: Counters::ZERO,
            stats: no_stats(index),
            cursor: 0,
        }
    }
}

impl<P, H> ThreadLogIn<P, H>
where
    P: AsRef<[u32]> + AsMut<[u32]>,
    H: AsRef<[u64]> + AsMut<[u64]>,
{
    /// The log of thread `index` before its first report, for a shared histogram of
    /// `layout`, in the caller's memory (one counter per bucket each,
    /// zeroed here); fails on any other length.
    ///
    /// # Errors
    ///
    /// [`Error::BucketMemory`] if `prev` is not one counter per bucket of
    /// `layout`.
    pub fn with_memory(index: u16, layout: Layout, mut prev: P, hist: H) -> Result<Self, Error> {
        if prev.as_ref().len() != layout.len() {
            return Err(Error::BucketMemory);
        }
        prev.as_mut().fill(0);
        Ok(ThreadLogIn {
            prev,
            hist: HistogramIn::with_counts(layout, hist)?,
            counters: Counters::ZERO,
            stats: no_stats(index),
            cursor: 0,
        })
    }

    /// The thread's index.
    pub const fn index(&self) -> u16 {
        self.stats.thread
    }

    /// The cumulative histogram as of the last report.
    pub const fn hist(&self) -> &HistogramIn<H> {
        &self.hist
    }

    /// Its number of buckets.
    fn buckets(&self) -> usize {
        self.prev.as_ref().len()
    }

    /// The shared histogram's counters as of the last report.
    pub const fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The statistics sent at the last report.
    pub const fn stats(&self) -> &ThreadStats {
        &self.stats
    }
}

/// What the current report sends of each thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReportKind {
    /// Its delta, its statistics and the next chunk of the rolling
    /// snapshot.
    Rolling,
    /// Its statistics alone: the report started before the report bytes
    /// sent so far were paid for, less than [`MAX_LEAN_NS`] after the last
    /// report with deltas (see [`Reporter::with_budget`]).
    Lean,
    /// Its delta, its statistics and a full snapshot: frames were lost
    /// ([`Reporter::lost`]).
    Full,
    /// The final report: as [`ReportKind::Full`], its statistics marked
    /// `last_report`.
    Final,
}

/// The protocol's sending state machine: sequence numbers, report epochs,
/// when hellos and reports are due, and which snapshot each report
/// carries. It never allocates; its frames go to a [`FrameSink`] as they
/// are made. Const-constructible.
///
/// A caller's loop, once per tick (see `examples/bare_metal.rs`):
///
/// 1. on a new connection: [`Reporter::hello`], any warnings through
///    [`Reporter::send`], then [`Reporter::resend`] for every thread;
/// 2. [`Reporter::hello_due`] → [`Reporter::hello`];
/// 3. [`Reporter::report_due`] → [`Reporter::begin_report`], then per
///    thread a fresh [`crate::seqlock::Snapshot`] of its shared histogram into [`Reporter::report`];
/// 4. spikes, explanations and log lines through [`Reporter::send`];
/// 5. frames the link could not deliver → [`Reporter::lost`];
/// 6. at the end: [`Reporter::begin_final`], [`Reporter::report`] for
///    every thread, then a [`crate::wire::Bye`] through [`Reporter::send`].
pub struct Reporter {
    enc: Encoder,
    start_ns: i64,
    report_ns: i64,
    next_report: i64,
    next_hello: i64,
    epoch: u32,
    elapsed_ns: u64,
    /// What the current report sends.
    kind: ReportKind,
    /// When the last report with deltas began.
    histograms_at: i64,
    /// Frames were lost since the current report began: the next one is
    /// [`ReportKind::Full`].
    resync: bool,
    /// Bytes per second the stream may average (0: no budget).
    budget: u32,
    /// When the report frames sent so far are paid for at `budget` bytes
    /// per second: no report starts before.
    paid_until: i64,
    /// Bytes per second spikes and explanations may average (0: no limit).
    spike_share: u32,
    /// When the spike frames sent so far are paid for at `spike_share`.
    spike_paid_until: i64,
    /// Bytes per second a spike's evidence may average (0: no limit).
    evidence_share: u32,
    /// When the evidence frames sent so far are paid for at
    /// `evidence_share`.
    evidence_paid_until: i64,
}

impl Reporter {
    /// A reporter for a run that started measuring at `start_ns` and
    /// reports every `report_ns` (at least 1 ns).
    pub const fn new(start_ns: i64, report_ns: u64) -> Reporter {
        let report_ns = if report_ns == 0 || report_ns > i64::MAX as u64 {
            1
        } else {
            report_ns as i64
        };
        Reporter {
            enc: Encoder::new(),
            start_ns,
            report_ns,
            next_report: start_ns.saturating_add(report_ns),
            next_hello: start_ns.saturating_add(HELLO_EVERY_NS as i64),
            epoch: 0,
            elapsed_ns: 0,
            kind: ReportKind::Rolling,
            histograms_at: start_ns,
            resync: false,
            budget: 0,
            paid_until: start_ns,
            spike_share: 0,
            spike_paid_until: start_ns,
            evidence_share: 0,
            evidence_paid_until: start_ns,
        }
    }

    /// The same reporter with a byte budget for its reports: their frames,
    /// hellos and log lines average at most `bytes_per_s` (spikes and
    /// explanations have their own share, [`Reporter::with_spike_share`]).
    /// A report whose time has come waits until the bytes sent before it
    /// are paid for, so wide histograms, whose deltas are large, are
    /// reported less often rather than filling a slow line. It waits at
    /// most [`MAX_BUDGET_WAIT_NS`]; one that goes then, still unpaid for,
    /// is *lean*: statistics only, no delta and no snapshot chunk, and the
    /// next report's delta covers every interval since the last one. So
    /// the statistics keep their schedule and the histograms their budget.
    /// The histograms go at least every [`MAX_LEAN_NS`]: where the
    /// statistics alone outgrow the budget (many threads on a slow line),
    /// they are still sent then rather than frozen until the end. Time
    /// unused is not saved up. The final report never waits, and is never
    /// lean. 0: no budget.
    pub const fn with_budget(mut self, bytes_per_s: u32) -> Reporter {
        self.budget = bytes_per_s;
        self
    }

    /// The same reporter with a share of the line for spike samples and
    /// explanations: [`Reporter::spike_room`] says whether one may go, and
    /// what they cost never delays a report. 0: no limit.
    pub const fn with_spike_share(mut self, bytes_per_s: u32) -> Reporter {
        self.spike_share = bytes_per_s;
        self
    }

    /// The same reporter with a share of the line for a spike's evidence
    /// ([`Reporter::evidence_room`]): its frames are charged to it and to
    /// the spike share too, so that the line carries no more than before,
    /// and go only while the spike share has room for ordinary spikes:
    /// the worst spikes' reserve stays theirs. A sender that offers its
    /// evidence before its ordinary spikes gets the whole share under a
    /// storm of spikes, which then have the rest. 0: no limit of its own.
    pub const fn with_evidence_share(mut self, bytes_per_s: u32) -> Reporter {
        self.evidence_share = bytes_per_s;
        self
    }

    /// Whether a part of a spike's evidence may go at `now`: its share is
    /// spent less than [`EVIDENCE_AHEAD_NS`] ahead, and the spike share
    /// has room for any spike ([`Room::Any`]).
    pub fn evidence_room(&mut self, now: i64) -> bool {
        if self.spike_room(now) != Room::Any {
            return false;
        }
        if self.evidence_share == 0 {
            return true;
        }
        self.evidence_paid_until = self.evidence_paid_until.max(now);
        self.evidence_paid_until.saturating_sub(now) < EVIDENCE_AHEAD_NS
    }

    /// What the spike share has room for at `now`: a spike sample or
    /// explanation may go while the share is spent less than
    /// [`SPIKE_AHEAD_NS`] ahead of `now`, an ordinary one only while
    /// [`SPIKE_RESERVE_NS`] of that is left. The caller asks before each
    /// spike frame it sends; one that does not fit is the caller's to
    /// count. Time unused is not saved up.
    pub fn spike_room(&mut self, now: i64) -> Room {
        if self.spike_share == 0 {
            return Room::Any;
        }
        self.spike_paid_until = self.spike_paid_until.max(now);
        let ahead = self.spike_paid_until.saturating_sub(now);
        if ahead < SPIKE_AHEAD_NS - SPIKE_RESERVE_NS {
            Room::Any
        } else if ahead < SPIKE_AHEAD_NS {
            Room::Worst
        } else {
            Room::Nothing
        }
    }

    /// The current report number (0 before the first report).
    pub const fn epoch(&self) -> u32 {
        self.epoch
    }

    /// What the current report sends of each thread.
    pub(super) const fn kind(&self) -> ReportKind {
        self.kind
    }

    /// The sequence number of the next frame.
    pub const fn next_seq(&self) -> u32 {
        self.enc.next_seq()
    }

    /// When the next hello or report is due (ns, the caller's clock).
    pub const fn next_due(&self) -> i64 {
        let report = self.report_at();
        if report < self.next_hello {
            report
        } else {
            self.next_hello
        }
    }

    /// When the next report may start: its due time, or later while the
    /// bytes sent are not paid for.
    const fn report_at(&self) -> i64 {
        let limit = self.next_report.saturating_add(MAX_BUDGET_WAIT_NS as i64);
        if self.paid_until <= self.next_report {
            self.next_report
        } else if self.paid_until < limit {
            self.paid_until
        } else {
            limit
        }
    }

    /// Whether a hello is due at `now`.
    pub const fn hello_due(&self, now: i64) -> bool {
        now >= self.next_hello
    }

    /// Whether a report is due at `now`.
    pub const fn report_due(&self, now: i64) -> bool {
        now >= self.report_at()
    }

    /// Encode `body` as the next frame into `out`. A spike sample or an
    /// explanation is charged to the spike share, a part of a spike's
    /// evidence to the evidence share and the spike share, any other frame
    /// to the reports' budget.
    pub fn send<S: FrameSink + ?Sized>(&mut self, body: Body, out: &mut S) {
        let seq = self.enc.next_seq();
        let spike = spike_class(&body);
        let evidence = evidence_class(&body);
        match self.enc.frame(body) {
            Ok(bytes) => {
                if evidence {
                    self.evidence_paid_until =
                        paid(self.evidence_paid_until, self.evidence_share, bytes.len());
                }
                if spike || evidence {
                    self.spike_paid_until =
                        paid(self.spike_paid_until, self.spike_share, bytes.len());
                } else {
                    self.paid_until = paid(self.paid_until, self.budget, bytes.len());
                }
                out.frame(seq, bytes);
            }
            Err(e) => out.failed(e),
        }
    }

    /// Send `hello`; the next one is due [`HELLO_EVERY_NS`] after `now`.
    pub fn hello<S: FrameSink + ?Sized>(&mut self, now: i64, hello: &Hello, out: &mut S) {
        self.send(Body::Hello(hello.clone()), out);
        self.next_hello = now.saturating_add(HELLO_EVERY_NS as i64);
    }

    /// Frames were not delivered: the next report carries full snapshots.
    pub fn lost(&mut self) {
        self.resync = true;
    }

    /// Start report `epoch + 1` at `now` (its figures' `elapsed_ns` is
    /// measured from the start); returns its number. The next one is due a
    /// report interval later, or an interval after `now` if the caller
    /// fell that far behind.
    pub fn begin_report(&mut self, now: i64) -> u32 {
        let kind = if self.resync {
            ReportKind::Full
        } else {
            ReportKind::Rolling
        };
        self.begin(now, kind);
        self.next_report = self.next_report.saturating_add(self.report_ns);
        if self.next_report <= now {
            self.next_report = now.saturating_add(self.report_ns);
        }
        self.epoch
    }

    /// Start the final report: statistics marked `last_report` and a full
    /// snapshot of every thread. Returns its number (the bye's epoch).
    pub fn begin_final(&mut self, now: i64) -> u32 {
        self.begin(now, ReportKind::Final);
        self.epoch
    }

    /// Start a report of `kind`, which a rolling one turns lean while the
    /// bytes sent so far are unpaid for and its histograms not stale.
    fn begin(&mut self, now: i64, kind: ReportKind) {
        let stale = now.saturating_sub(self.histograms_at) >= MAX_LEAN_NS as i64;
        self.kind = match kind {
            ReportKind::Rolling if !stale && self.paid_until > now => ReportKind::Lean,
            other => other,
        };
        if self.kind != ReportKind::Lean {
            self.histograms_at = now;
        }
        // time unused is not saved up
        self.paid_until = self.paid_until.max(now);
        self.epoch = self.epoch.wrapping_add(1);
        self.elapsed_ns = now.saturating_sub(self.start_ns).max(0) as u64;
        self.resync = false;
    }

    /// Report one thread in the current report: `cur` is a fresh snapshot
    /// of its shared histogram, `extra` the figures it does not hold. Sends
    /// its delta parts, its statistics and its snapshot chunk(s), and
    /// moves `log` to this report. In a lean report (see
    /// [`Reporter::with_budget`]) it sends the statistics alone, and the
    /// histogram of `log` stays as of the report before.
    pub fn report<P, H, C, S>(
        &mut self,
        log: &mut ThreadLogIn<P, H>,
        cur: &SnapshotIn<C>,
        extra: SideCounts,
        out: &mut S,
    ) where
        P: AsRef<[u32]> + AsMut<[u32]>,
        H: AsRef<[u64]> + AsMut<[u64]>,
        C: AsRef<[u32]>,
        S: FrameSink + ?Sized,
    {
        let cur_buckets = cur.buckets.as_ref();
        let c = cur.counters;
        let top = if self.kind == ReportKind::Lean {
            highest_change(log.prev.as_ref(), cur_buckets)
        } else {
            let top = self.send_delta(log, cur_buckets, out);
            log.hist.absorb_raw(log.prev.as_ref(), cur_buckets);
            log.hist.set_totals(c.totals);
            let prev = log.prev.as_mut();
            let n = prev.len().min(cur_buckets.len());
            prev[..n].copy_from_slice(&cur_buckets[..n]);
            top
        };
        log.counters = c;
        let layout = *log.hist.layout();
        let max = c.totals.max;
        log.stats = ThreadStats {
            thread: log.stats.thread,
            epoch: self.epoch,
            elapsed_ns: self.elapsed_ns,
            cycles: c.cycles,
            count: c.totals.count,
            sum: c.totals.sum,
            min: c.totals.min,
            max,
            interval_max: top.map_or(0, |i| layout.upper_ns(i).unwrap_or(max).min(max)),
            last: c.last,
            missed: c.missed,
            early: c.early,
            minflt: extra.minflt,
            majflt: extra.majflt,
            dropped: extra.dropped,
            last_report: self.kind == ReportKind::Final,
        };
        self.send(Body::Stats(log.stats), out);
        match self.kind {
            ReportKind::Full | ReportKind::Final => self.full_snapshot(log, out),
            ReportKind::Rolling => {
                let end = self.chunk(log, log.cursor, ROLL_BYTES, out);
                log.cursor = if end >= log.buckets() { 0 } else { end as u16 };
            }
            ReportKind::Lean => {}
        }
    }

    /// For a new connection: the thread's latest statistics and a full
    /// snapshot, both as of the current report.
    pub fn resend<P, H, S>(&mut self, log: &ThreadLogIn<P, H>, out: &mut S)
    where
        P: AsRef<[u32]> + AsMut<[u32]>,
        H: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        let stats = ThreadStats {
            epoch: self.epoch,
            ..log.stats
        };
        self.send(Body::Stats(stats), out);
        self.full_snapshot(log, out);
    }

    /// Send the changed buckets of `cur` against `log.prev` in as many
    /// parts as needed (at least one); returns the highest changed bucket.
    fn send_delta<P, H, S>(
        &mut self,
        log: &ThreadLogIn<P, H>,
        cur: &[u32],
        out: &mut S,
    ) -> Option<usize>
    where
        P: AsRef<[u32]> + AsMut<[u32]>,
        H: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        let thread = log.stats.thread;
        let mut part = 0u16;
        let mut w = RunWriter::new(0, RUN_BYTES);
        let mut top = None;
        for (i, (c, p)) in cur.iter().zip(log.prev.as_ref()).enumerate() {
            let d = u64::from(c.wrapping_sub(*p));
            if d == 0 {
                continue;
            }
            let b = i as u16;
            if top.is_none() {
                w = RunWriter::new(b, RUN_BYTES);
            }
            top = Some(i);
            if !w.push(b, d) {
                let full = core::mem::replace(&mut w, RunWriter::new(b, RUN_BYTES));
                self.send_part(thread, part, full, out);
                part = part.wrapping_add(1);
                // cannot fail: one pair always fits an empty writer
                let _ = w.push(b, d);
            }
        }
        self.send_part(thread, part, w, out);
        top
    }

    fn send_part<S: FrameSink + ?Sized>(
        &mut self,
        thread: u16,
        part: u16,
        w: RunWriter,
        out: &mut S,
    ) {
        let start = w.start();
        let d = HistDelta {
            thread,
            epoch: self.epoch,
            part,
            start,
            runs: w.finish(),
        };
        self.send(Body::Delta(d), out);
    }

    /// Chunks of `log`'s histogram from bucket 0 to the end.
    fn full_snapshot<P, H, S>(&mut self, log: &ThreadLogIn<P, H>, out: &mut S)
    where
        P: AsRef<[u32]> + AsMut<[u32]>,
        H: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        let mut from = 0;
        loop {
            let end = self.chunk(log, from, RUN_BYTES, out);
            if end >= log.buckets() {
                break;
            }
            from = end as u16;
        }
    }

    /// One snapshot chunk of `log`'s histogram from bucket `from`, with at
    /// most `budget` bytes of runs; returns the end of the range it covers
    /// (past `from`: one pair always fits).
    fn chunk<P, H, S>(
        &mut self,
        log: &ThreadLogIn<P, H>,
        from: u16,
        budget: usize,
        out: &mut S,
    ) -> usize
    where
        P: AsRef<[u32]> + AsMut<[u32]>,
        H: AsRef<[u64]> + AsMut<[u64]>,
        S: FrameSink + ?Sized,
    {
        let (runs, end) = snapshot_runs(log.hist.counts(), from, budget);
        let c = SnapshotChunk {
            thread: log.stats.thread,
            epoch: self.epoch,
            start: from,
            end: end.min(usize::from(u16::MAX)) as u16,
            runs,
        };
        self.send(Body::Chunk(c), out);
        end
    }
}

/// The runs of a snapshot chunk of `counts` from bucket `from`, with at
/// most `budget` bytes of runs, and the end of the range they cover (past
/// `from`: one pair always fits; `counts.len()` when they reach the end).
pub(super) fn snapshot_runs(counts: &[u64], from: u16, budget: usize) -> (Runs, usize) {
    let mut w = RunWriter::new(from, budget);
    let mut end = counts.len();
    for (i, &c) in counts.iter().enumerate().skip(usize::from(from)) {
        if c != 0 && !w.push(i as u16, c) {
            end = i;
            break;
        }
    }
    (w.finish(), end)
}
