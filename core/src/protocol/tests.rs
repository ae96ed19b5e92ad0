//! Shared histograms → [`Reporter`] → frames → [`Assembler`]: the same histograms and
//! statistics, on a clean link and through lost, repeated and reordered
//! frames as far as the protocol promises (see "Exactness" in the module
//! docs).

use std::boxed::Box;
use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::layout::Layout;
use crate::seqlock::{SharedHistogram, Snapshot};
use crate::wire::{Body, Bye, ByeReason, Decoder, ThreadStats, MAX_FRAME, MAX_SMALL_FRAME};

/// A small layout keeps the cases fast: 32 linear buckets, 64 in all.
const N: usize = 64;
const LINEAR: u32 = 32;
const SEC: i64 = 1_000_000_000;

/// What the target does between two reports.
#[derive(Debug, Clone)]
enum Step {
    /// Samples per thread (ns; negative = early), then a report.
    Report(Vec<Vec<i64>>),
    /// The link lost frames: the next report is a resync.
    Lost,
    /// A new connection: hello and every thread's state.
    Reconnect,
}

/// One sent frame and what it belongs to.
struct Sent {
    bytes: Vec<u8>,
    final_phase: bool,
}

/// The target side: shared histograms, logs and the truth of every epoch.
struct Target {
    /// Leaked: the writers borrow them while the target reports.
    recs: Vec<&'static SharedHistogram<N>>,
    logs: Vec<ThreadLog<N>>,
    rep: Reporter,
    /// Per report but the final one: whether it was lean (statistics only).
    lean: Vec<bool>,
    /// (thread, epoch) → the shared histogram's cumulative counts and statistics.
    truth: BTreeMap<(u16, u32), (Vec<u64>, ThreadStats)>,
    sent: Vec<Sent>,
    now: i64,
}

impl Target {
    /// A target of `threads` threads whose reports have a byte budget of
    /// `budget` bytes a second (0: none).
    fn new(threads: usize, budget: u32) -> Target {
        Target {
            recs: (0..threads)
                .map(|_| &*Box::leak(Box::new(SharedHistogram::new(LINEAR))))
                .collect(),
            logs: (0..threads)
                .map(|i| ThreadLog::new(i as u16, LINEAR))
                .collect(),
            rep: Reporter::new(0, SEC as u64).with_budget(budget),
            lean: Vec::new(),
            truth: BTreeMap::new(),
            sent: Vec::new(),
            now: 0,
        }
    }

    fn report_all(&mut self, final_phase: bool) {
        let mut sent_before = self.sent.len();
        let mut lean = true;
        for t in 0..self.recs.len() {
            let mut snap = Box::new(Snapshot::<N>::new());
            self.recs[t].snapshot(&mut snap, 4).unwrap();
            let extra = SideCounts {
                minflt: t as u64,
                majflt: 0,
                dropped: 1,
            };
            self.rep.report(
                &mut self.logs[t],
                &snap,
                extra,
                &mut collect(&mut self.sent, final_phase),
            );
            // one frame, the statistics, is a lean report's
            lean &= self.sent.len() == sent_before + 1;
            sent_before = self.sent.len();
            // the shared histogram's own counts: a lean report leaves the log's
            // histogram behind them
            let counts = snap.buckets.iter().map(|&c| u64::from(c)).collect();
            let stats = *self.logs[t].stats();
            self.truth
                .insert((t as u16, self.rep.epoch()), (counts, stats));
        }
        if !final_phase {
            self.lean.push(lean);
        }
    }

    fn run(&mut self, steps: &[Step]) {
        let recs = self.recs.clone();
        let mut writers: Vec<_> = recs.iter().map(|r| r.writer().unwrap()).collect();
        let hello = crate::wire::tests::hello();
        self.rep
            .hello(0, &hello, &mut collect(&mut self.sent, false));
        for step in steps {
            match step {
                Step::Report(samples) => {
                    for (w, s) in writers.iter_mut().zip(samples) {
                        for &ns in s {
                            w.publish(ns, u64::from(ns > 3_000_000));
                        }
                    }
                    self.now += SEC;
                    if self.rep.hello_due(self.now) {
                        self.rep
                            .hello(self.now, &hello, &mut collect(&mut self.sent, false));
                    }
                    self.rep.begin_report(self.now);
                    self.report_all(false);
                }
                Step::Lost => self.rep.lost(),
                Step::Reconnect => {
                    let mut out = collect(&mut self.sent, false);
                    self.rep.hello(self.now, &hello, &mut out);
                    for log in &self.logs {
                        self.rep.resend(log, &mut out);
                    }
                }
            }
        }
        self.now += SEC / 3;
        let epoch = self.rep.begin_final(self.now);
        self.report_all(true);
        let bye = Bye {
            reason: ByeReason::Completed,
            epoch,
            elapsed_ns: self.now as u64,
            threads: self.recs.len() as u16,
            cycles: 0,
            max_ns: 0,
            frames_dropped: 0,
            defects: 0,
            ended: None,
        };
        self.rep
            .send(Body::Bye(bye), &mut collect(&mut self.sent, true));
    }
}

/// A sink that appends frames to `sent`.
fn collect(sent: &mut Vec<Sent>, final_phase: bool) -> impl FnMut(&[u8]) + '_ {
    move |b: &[u8]| {
        sent.push(Sent {
            bytes: b.to_vec(),
            final_phase,
        })
    }
}

/// The receiving side: one assembler per thread.
struct Host {
    dec: Box<Decoder<MAX_FRAME>>,
    asm: Vec<Assembler<ArrayStore<N>>>,
}

impl Host {
    fn new(threads: usize) -> Host {
        let layout = Layout::new(LINEAR, N);
        Host {
            dec: Box::new(Decoder::new()),
            asm: (0..threads)
                .map(|_| Assembler::new(layout, ArrayStore::new()).unwrap())
                .collect(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for f in self.dec.frames(bytes) {
            let f = f.expect("a clean frame");
            let t = match &f.body {
                Body::Delta(d) => d.thread,
                Body::Stats(s) => s.thread,
                Body::Chunk(c) => c.thread,
                _ => continue,
            };
            assert!(self.asm[usize::from(t)].apply(&f.body));
        }
    }

    /// The claims that hold after any frame: a lower bound of the truth of
    /// its epoch, and equal to it whenever it says it is exact.
    fn check(&self, truth: &BTreeMap<(u16, u32), (Vec<u64>, ThreadStats)>) {
        for (t, a) in self.asm.iter().enumerate() {
            let Some(e) = a.epoch() else { continue };
            // epoch 0 is the state before the first report: empty
            let (want, _) = truth
                .get(&(t as u16, e))
                .cloned()
                .unwrap_or((std::vec![0; N], ThreadStats::default()));
            let got = a.counts().counts();
            assert!(
                got.iter().zip(&want).all(|(g, w)| g <= w),
                "T{t}@{e}: {got:?} above {want:?}"
            );
            if a.exact_now() {
                assert_eq!(got, &want[..], "T{t}@{e} claims exact");
            }
        }
    }
}

fn samples() -> impl Strategy<Value = Vec<i64>> {
    proptest::collection::vec(
        prop_oneof![
            8 => 0i64..40_000,
            2 => 40_000i64..5_000_000,
            1 => -5_000i64..0,
            1 => 5_000_000i64..80_000_000_000,
        ],
        0..60,
    )
}

fn steps(threads: usize) -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(
        prop_oneof![
            10 => proptest::collection::vec(samples(), threads).prop_map(Step::Report),
            1 => Just(Step::Lost),
            1 => Just(Step::Reconnect),
        ],
        1..25,
    )
}

/// Threads, steps and the reports' byte budget: none, or one so small
/// that many reports are lean.
fn case() -> impl Strategy<Value = (usize, Vec<Step>, u32)> {
    (1usize..=3).prop_flat_map(|t| (Just(t), steps(t), prop_oneof![Just(0u32), 60u32..400]))
}

/// What the line does to each frame before the final phase.
#[derive(Debug, Clone, Copy)]
enum Fate {
    Deliver,
    Drop,
    Repeat,
    SwapWithNext,
}

fn fates() -> impl Strategy<Value = Vec<Fate>> {
    proptest::collection::vec(
        prop_oneof![
            12 => Just(Fate::Deliver),
            2 => Just(Fate::Drop),
            1 => Just(Fate::Repeat),
            1 => Just(Fate::SwapWithNext),
        ],
        0..400,
    )
}

proptest! {
    #![proptest_config(crate::proptest_cases::config(256))]

    /// A clean link: after every report each thread's histogram and
    /// statistics are the shared histogram's, exactly, and every frame but the hello
    /// is a small frame.
    #[test]
    fn clean_link_is_exact_after_every_report((threads, steps, budget) in case()) {
        let mut target = Target::new(threads, budget);
        target.run(&steps);
        let mut host = Host::new(threads);
        for s in &target.sent {
            let hello = matches!(
                Decoder::<MAX_FRAME>::new().frames(&s.bytes).next(),
                Some(Ok(crate::wire::Frame { body: Body::Hello(_), .. }))
            );
            prop_assert!(hello || s.bytes.len() <= MAX_SMALL_FRAME);
            host.feed(&s.bytes);
            host.check(&target.truth);
        }
        let final_epoch = target.rep.epoch();
        for (t, a) in host.asm.iter().enumerate() {
            let (want, stats) = &target.truth[&(t as u16, final_epoch)];
            prop_assert!(a.exact_now());
            prop_assert_eq!(a.counts().counts(), &want[..]);
            prop_assert_eq!(a.stats(), Some(stats));
            prop_assert!(stats.last_report);
            prop_assert_eq!(a.exact_epoch(), Some(final_epoch));
        }
    }

    /// A bad line before the end: never a wrong histogram called exact,
    /// never above the truth; and when the final report arrives whole, the
    /// end is exact.
    #[test]
    fn lossy_line_never_lies_and_the_final_report_heals(
        (threads, steps, budget) in case(),
        fates in fates(),
    ) {
        let mut target = Target::new(threads, budget);
        target.run(&steps);
        let mut host = Host::new(threads);
        let mut fate = fates.iter().copied().chain(core::iter::repeat(Fate::Deliver));
        let sent = &target.sent;
        let mut i = 0;
        while i < sent.len() {
            let f = if sent[i].final_phase { Fate::Deliver } else { fate.next().unwrap() };
            match f {
                Fate::Deliver => host.feed(&sent[i].bytes),
                Fate::Drop => {}
                Fate::Repeat => {
                    host.feed(&sent[i].bytes);
                    host.check(&target.truth);
                    host.feed(&sent[i].bytes);
                }
                Fate::SwapWithNext if i + 1 < sent.len() && !sent[i + 1].final_phase => {
                    host.feed(&sent[i + 1].bytes);
                    host.check(&target.truth);
                    host.feed(&sent[i].bytes);
                    i += 1;
                }
                Fate::SwapWithNext => host.feed(&sent[i].bytes),
            }
            host.check(&target.truth);
            i += 1;
        }
        let final_epoch = target.rep.epoch();
        for (t, a) in host.asm.iter().enumerate() {
            let (want, stats) = &target.truth[&(t as u16, final_epoch)];
            prop_assert!(a.exact_now(), "T{} not exact at the end", t);
            prop_assert_eq!(a.counts().counts(), &want[..]);
            prop_assert_eq!(a.stats(), Some(stats));
        }
    }
}

/// The budgets [`case`] draws make lean reports, at both ends of their
/// range, but the histograms still go at least every [`MAX_LEAN_NS`] (they
/// do not freeze, even where the statistics alone outgrow the budget), and
/// such a run still ends exact on a clean link.
#[test]
fn a_budgeted_run_makes_lean_reports_and_ends_exact() {
    let samples: Vec<i64> = (0..40).map(|k| k * 997 % 40_000).collect();
    let steps = std::vec![Step::Report(std::vec![samples; 2]); 20];
    for budget in [60, 399] {
        let mut target = Target::new(2, budget);
        target.run(&steps);
        assert!(
            target.lean.contains(&true),
            "budget {budget}: no lean report"
        );
        // reports every second: at most this many lean in a row
        let most = (MAX_LEAN_NS / SEC as u64) as usize - 1;
        let longest = target
            .lean
            .split(|&lean| !lean)
            .map(<[bool]>::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest <= most,
            "budget {budget}: {longest} lean reports in a row: {:?}",
            target.lean
        );
        assert!(
            target.lean.contains(&false),
            "budget {budget}: no report with deltas"
        );
        let mut host = Host::new(2);
        for s in &target.sent {
            host.feed(&s.bytes);
            host.check(&target.truth);
        }
        assert!(host.asm.iter().all(|a| a.exact_now()), "budget {budget}");
    }
}

/// After a lost delta part the rolling snapshot makes the histogram exact
/// again within one rotation, long before the end.
#[test]
fn rolling_snapshot_heals_a_lost_delta_within_a_rotation() {
    let wide: Vec<i64> = (0..N as i64).map(|b| b * 1_000 + 500).collect();
    let mut steps = std::vec![Step::Report(std::vec![wide.clone()])];
    for _ in 0..30 {
        steps.push(Step::Report(std::vec![std::vec![5_500, 6_500]]));
    }
    let mut target = Target::new(1, 0);
    target.run(&steps);
    let mut host = Host::new(1);
    let mut exact_again = None;
    let mut dropped = false;
    for s in &target.sent {
        let f = crate::wire::Decoder::<MAX_FRAME>::new()
            .frames(&s.bytes)
            .next()
            .unwrap()
            .unwrap();
        if !dropped && matches!(&f.body, Body::Delta(d) if d.epoch == 2) {
            dropped = true;
            continue;
        }
        host.feed(&s.bytes);
        host.check(&target.truth);
        let a = &host.asm[0];
        if let (Body::Stats(st), true) = (&f.body, dropped) {
            if st.epoch > 2 && a.exact_now() && exact_again.is_none() {
                exact_again = Some(st.epoch);
            }
            if st.epoch == 2 {
                assert!(!a.exact_now(), "a lost delta went unnoticed");
            }
        }
    }
    let healed = exact_again.expect("exact again before the end");
    // 64 buckets in chunks of 48 bytes: a rotation is a few reports
    assert!(healed <= 8, "healed only at report {healed}");
}

#[test]
fn reports_follow_the_schedule() {
    let mut r = Reporter::new(1_000, SEC as u64);
    assert_eq!(r.next_due(), 1_000 + SEC);
    assert!(!r.report_due(SEC) && r.report_due(SEC + 1_000));
    assert_eq!(r.begin_report(SEC + 1_000), 1);
    // a caller that fell behind by three intervals is not asked to catch up
    assert_eq!(r.begin_report(5 * SEC), 2);
    assert_eq!(r.next_due(), 6 * SEC);
    assert!(!r.hello_due(10 * SEC) && r.hello_due(10 * SEC + 1_000));
    let mut n = 0;
    r.hello(11 * SEC, &crate::wire::tests::hello(), &mut |_: &[u8]| {
        n += 1
    });
    assert_eq!(n, 1);
    assert!(!r.hello_due(20 * SEC) && r.hello_due(21 * SEC));
    assert_eq!(r.begin_final(22 * SEC), 3);
}

/// Sends log lines through `r` until at least `bytes` went out; returns
/// how many did.
fn send_bytes(r: &mut Reporter, bytes: usize) -> usize {
    let mut sent = 0;
    while sent < bytes {
        let line = crate::wire::LogLine {
            level: crate::wire::Level::Info,
            text: crate::wire::bounded("forty bytes of log text, give or take."),
        };
        r.send(Body::Log(line), &mut |b: &[u8]| sent += b.len());
    }
    sent
}

/// Nanoseconds `bytes` take at `rate` bytes per second.
fn at_rate(bytes: usize, rate: u64) -> i64 {
    (bytes as u64 * SEC as u64 / rate) as i64
}

#[test]
fn a_byte_budget_spaces_reports_out() {
    let mut r = Reporter::new(0, SEC as u64).with_budget(1_000);
    // 2.5 kB at the start are paid for after 2.5 s: the report due at 1 s waits
    let paid = at_rate(send_bytes(&mut r, 2_500), 1_000);
    assert!(paid >= 5 * SEC / 2);
    assert_eq!(r.next_due(), paid);
    assert!(!r.report_due(SEC) && !r.report_due(paid - 1) && r.report_due(paid));
    r.begin_report(paid);
    // nothing sent since: the next one an interval later
    assert_eq!(r.next_due(), paid + SEC);
    // ten idle seconds are not saved up for a burst after them
    let later = paid + 11 * SEC;
    assert!(r.report_due(later));
    r.begin_report(later);
    let paid = later + at_rate(send_bytes(&mut r, 1_500), 1_000);
    assert!(paid > later + SEC);
    assert!(!r.report_due(paid - 1) && r.report_due(paid));
    // a report waits at most MAX_BUDGET_WAIT_NS past its time (the hello
    // due since 10 s is what next_due names first)
    send_bytes(&mut r, 20_000);
    let limit = later + SEC + MAX_BUDGET_WAIT_NS as i64;
    assert_eq!(r.next_due(), 10 * SEC);
    assert!(!r.report_due(limit - 1) && r.report_due(limit));
    // the final report never waits
    assert_eq!(r.begin_final(limit - 1), 3);
}

#[test]
fn without_a_budget_reports_keep_their_time() {
    let mut r = Reporter::new(0, SEC as u64);
    send_bytes(&mut r, 20_000);
    assert_eq!(r.next_due(), SEC);
    assert!(r.report_due(SEC));
}

#[test]
fn the_line_budget_is_7_percent_of_the_line() {
    // 115200 baud, 10 bits a byte: 11,520 B/s, of which 7 %
    assert_eq!(line_budget(115_200), 806);
}

#[test]
fn a_resync_sends_full_snapshots_once() {
    let rec: Box<SharedHistogram<N>> = Box::new(SharedHistogram::new(LINEAR));
    let mut w = rec.writer().unwrap();
    for b in 0..N as i64 {
        w.publish(b * 1_000, 0);
    }
    let mut log = Box::new(ThreadLog::<N>::new(0, LINEAR));
    let mut r = Reporter::new(0, SEC as u64);
    let mut snap = Box::new(Snapshot::<N>::new());
    let mut chunks = |r: &mut Reporter, log: &mut ThreadLog<N>, now| {
        rec.snapshot(&mut snap, 4).unwrap();
        r.begin_report(now);
        let mut ranges = Vec::new();
        r.report(log, &snap, SideCounts::default(), &mut |b: &[u8]| {
            let f = Decoder::<MAX_FRAME>::new()
                .frames(b)
                .next()
                .unwrap()
                .unwrap();
            if let Body::Chunk(c) = f.body {
                ranges.push((c.start, c.end));
            }
        });
        ranges
    };
    let rolling = chunks(&mut r, &mut log, SEC);
    assert_eq!(rolling.len(), 1);
    assert_eq!(rolling[0].0, 0);
    r.lost();
    let full = chunks(&mut r, &mut log, 2 * SEC);
    assert_eq!(full.first().map(|c| c.0), Some(0));
    assert_eq!(full.last().map(|c| c.1), Some(N as u16));
    assert!(full.windows(2).all(|w| w[0].1 == w[1].0), "{full:?}");
    // and back to rolling, where the last one stopped
    let next = chunks(&mut r, &mut log, 3 * SEC);
    assert_eq!(next, [(rolling[0].1, next[0].1)]);
}

#[test]
fn malformed_or_foreign_frames_change_nothing_they_cannot_say() {
    use crate::layout::{MAX_LINEAR_US, MAX_TARGET_BUCKETS};
    use crate::wire::{HistDelta, RunWriter, Runs, SnapshotChunk};
    let layout = Layout::new(LINEAR, N);
    let mut a = Assembler::new(layout, ArrayStore::<N>::new()).unwrap();
    let mut w = RunWriter::new(3, 224);
    assert!(w.push(3, 5) && w.push(4, 7));
    let good = HistDelta {
        thread: 0,
        epoch: 1,
        part: 0,
        start: 3,
        runs: w.finish(),
    };
    // the same pairs, then one cut short: nothing of it stays
    let mut bytes = good.runs.as_bytes().to_vec();
    bytes.push(0x81);
    let bad = HistDelta {
        runs: Runs::from_bytes(&bytes).unwrap(),
        ..good.clone()
    };
    a.on_delta(&bad);
    assert_eq!((a.total(), a.bad()), (0, 1));
    // the part was not taken: the good one still counts, once
    a.on_delta(&good);
    a.on_delta(&good);
    assert_eq!((a.total(), a.stale()), (12, 1));
    assert_eq!(a.counts().counts()[3..5], [5, 7]);
    // a bucket past the layout
    let far = HistDelta {
        part: 1,
        start: N as u16,
        runs: {
            let mut w = RunWriter::new(N as u16, 224);
            assert!(w.push(N as u16, 1));
            w.finish()
        },
        ..good.clone()
    };
    a.on_delta(&far);
    assert_eq!((a.total(), a.bad()), (12, 2));
    // a chunk whose range is backwards
    let back = SnapshotChunk {
        thread: 0,
        epoch: 1,
        start: 9,
        end: 4,
        runs: Runs::new(),
    };
    a.on_chunk(&back);
    assert_eq!((a.total(), a.bad()), (12, 3));
    // layouts no target produces, and stores too small, are refused
    let wide = Layout::new(MAX_LINEAR_US + 1, MAX_TARGET_BUCKETS);
    assert!(Assembler::new(wide, ArrayStore::<N>::new()).is_err());
    assert!(Assembler::new(Layout::new(LINEAR, N + 1), ArrayStore::<N>::new()).is_err());
}

/// A thread log in caller memory sized by a run-time layout (`-h 20000`,
/// the cap) sends what the assembler turns back into the shared histogram's exact
/// histogram, 1 µs rows to 20,000 µs included; memory of another length
/// is refused. (Not under loom: the shared histogram's atomics are then loom's.)
#[cfg(not(loom))]
#[test]
fn a_run_time_layout_in_caller_memory_reassembles_exactly() {
    use crate::layout::{MAX_LINEAR_US, MAX_TARGET_BUCKETS};
    use crate::seqlock::{SharedHistogramIn, SnapshotIn};
    use core::sync::atomic::AtomicU32;
    let layout = Layout::for_hist_us(MAX_LINEAR_US).unwrap();
    let n = layout.len();
    let mem: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let rec = SharedHistogramIn::with_buckets(layout, mem.into_boxed_slice()).unwrap();
    let mut log = ThreadLogIn::with_memory(
        0,
        layout,
        std::vec![7u32; n].into_boxed_slice(),
        std::vec![7u64; n].into_boxed_slice(),
    )
    .unwrap();
    let mut asm = Assembler::new(layout, ArrayStore::<MAX_TARGET_BUCKETS>::new()).unwrap();
    let mut snap = SnapshotIn::with_buckets(std::vec![0u32; n].into_boxed_slice());
    let mut rep = Reporter::new(0, SEC as u64);
    let mut w = rec.writer().unwrap();
    let rounds: [&[i64]; 3] = [
        &[0, 999_999, 1_000_000, 3_499_999],
        &[19_999_999, 19_999_999, 20_000_000],
        &[12_345_678, 70_000_000_000],
    ];
    for (i, ns) in rounds.iter().enumerate() {
        for &x in *ns {
            w.publish(x, 0);
        }
        rec.snapshot(&mut snap, 4).unwrap();
        let now = (i as i64 + 1) * SEC;
        if i + 1 == rounds.len() {
            rep.begin_final(now);
        } else {
            rep.begin_report(now);
        }
        rep.report(&mut log, &snap, SideCounts::default(), &mut |b: &[u8]| {
            for f in Decoder::<MAX_FRAME>::new().frames(b) {
                assert!(asm.apply(&f.unwrap().body));
            }
        });
    }
    let want: Vec<u64> = snap.buckets.iter().map(|&c| u64::from(c)).collect();
    assert_eq!(log.hist().counts(), &want[..]);
    assert!(asm.exact_now());
    assert_eq!(asm.counts().counts(), &want[..]);
    for us in [0, 999, 1000, 3499, 12_345, 19_999, 20_000] {
        assert!(want[us] > 0, "{us} us");
    }
    assert_eq!(want[19_999], 2, "two in the last 1 us row");
    let short = ThreadLogIn::with_memory(0, layout, std::vec![0u32; n - 1], std::vec![0u64; n]);
    assert!(matches!(short, Err(crate::Error::BucketMemory)));
}
