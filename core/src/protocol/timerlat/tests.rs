//! A simulated timerlat target (a trace reader's three histograms and
//! pairing per thread, on a simulated clock) → [`Reporter::timerlat`] →
//! frames → [`TimerlatAssembler`]: the same histograms and figures on a
//! clean link, and through lost, repeated and reordered frames as far as
//! the protocol promises.

use std::boxed::Box;
use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::protocol::ArrayStore;
use crate::timerlat::Entry;
use crate::wire::{Decoder, Frame, MAX_FRAME, MAX_SMALL_FRAME};

/// A small layout keeps the cases fast: 32 linear buckets, 64 in all.
const N: usize = 64;
const LINEAR: u32 = 32;
const SEC: i64 = 1_000_000_000;

/// What the target's trace reader has of one thread's CPU: what
/// `TimerlatCpu` of the Linux target holds.
struct Cpu {
    hists: [HistogramIn<[u64; N]>; 3],
    pairing: Pairing,
    bad_pages: u64,
    /// The next period's sequence number.
    seq: u32,
    /// The last period's thread latency, for its return-to-user entry.
    pending_ret: Option<(u32, u64)>,
}

impl Cpu {
    fn new() -> Cpu {
        Cpu {
            hists: [
                HistogramIn::new(LINEAR),
                HistogramIn::new(LINEAR),
                HistogramIn::new(LINEAR),
            ],
            pairing: Pairing::new(),
            bad_pages: 0,
            seq: 1,
            pending_ret: None,
        }
    }

    /// One entry, as the reader takes it from a page.
    fn take(&mut self, seqnum: u32, context: Context, latency_ns: u64) {
        let e = Entry {
            seqnum,
            context,
            latency_ns,
            ts_ns: 0,
        };
        self.pairing.take(&e);
        self.hists[context.index()].add(latency_ns);
    }

    /// One period of IRQ latency `irq_ns` and thread latency `irq_ns +
    /// extra_ns` (the return to user space of the period before with it);
    /// `lost`: the trace lost this period's entries.
    fn period(&mut self, irq_ns: u64, extra_ns: u64, lost: bool) {
        let seq = self.seq;
        self.seq += 1;
        if lost {
            self.pending_ret = None;
            return;
        }
        self.take(seq, Context::Irq, irq_ns);
        let thread = irq_ns + extra_ns;
        self.take(seq, Context::Thread, thread);
        if let Some((s, t)) = self.pending_ret.replace((seq, thread)) {
            self.take(s, Context::UserRet, t + extra_ns / 2);
        }
    }
}

/// What the target does between two reports.
#[derive(Debug, Clone)]
enum Step {
    /// Periods per thread (IRQ latency, thread's extra, lost), then a
    /// report.
    Report(Vec<Vec<(u64, u64, bool)>>),
    /// The link lost frames: the next report is a resync.
    Lost,
    /// A new connection: every thread's state again.
    Reconnect,
}

/// One sent frame, and whether it belongs to the final report.
struct Sent {
    bytes: Vec<u8>,
    final_phase: bool,
}

fn collect(sent: &mut Vec<Sent>, final_phase: bool) -> impl FnMut(&[u8]) + '_ {
    move |b: &[u8]| {
        sent.push(Sent {
            bytes: b.to_vec(),
            final_phase,
        })
    }
}

/// (thread, epoch) → each context's cumulative counts, and the figures.
type Truth = BTreeMap<(u16, u32), ([Vec<u64>; 3], TimerlatStats)>;

struct Target {
    cpus: Vec<Cpu>,
    logs: Vec<TimerlatLog<N>>,
    rep: Reporter,
    truth: Truth,
    sent: Vec<Sent>,
    now: i64,
}

impl Target {
    fn new(threads: usize, budget: u32) -> Target {
        Target {
            cpus: (0..threads).map(|_| Cpu::new()).collect(),
            logs: (0..threads)
                .map(|i| TimerlatLog::new(i as u16, LINEAR))
                .collect(),
            rep: Reporter::new(0, SEC as u64).with_budget(budget),
            truth: BTreeMap::new(),
            sent: Vec::new(),
            now: 0,
        }
    }

    fn report_all(&mut self, final_phase: bool) {
        for (t, cpu) in self.cpus.iter().enumerate() {
            let log = &mut self.logs[t];
            let out = &mut collect(&mut self.sent, final_phase);
            let r = self
                .rep
                .timerlat(log, &cpu.hists, &cpu.pairing, cpu.bad_pages, out);
            assert_eq!(r, Ok(()));
            let counts = cpu.hists.each_ref().map(|h| h.counts().to_vec());
            self.truth
                .insert((t as u16, self.rep.epoch()), (counts, *log.stats()));
        }
    }

    fn run(&mut self, steps: &[Step]) {
        for step in steps {
            match step {
                Step::Report(periods) => {
                    for (cpu, ps) in self.cpus.iter_mut().zip(periods) {
                        for &(irq, extra, lost) in ps {
                            cpu.period(irq, extra, lost);
                        }
                    }
                    self.now += SEC;
                    self.rep.begin_report(self.now);
                    self.report_all(false);
                }
                Step::Lost => self.rep.lost(),
                Step::Reconnect => {
                    let mut out = collect(&mut self.sent, false);
                    for log in &self.logs {
                        self.rep.resend_timerlat(log, &mut out);
                    }
                }
            }
        }
        self.now += SEC / 3;
        self.rep.begin_final(self.now);
        self.report_all(true);
    }
}

struct Host {
    dec: Box<Decoder<MAX_FRAME>>,
    asm: Vec<TimerlatAssembler<ArrayStore<N>>>,
}

impl Host {
    fn new(threads: usize) -> Host {
        let layout = Layout::new(LINEAR, N);
        let stores = || [ArrayStore::new(), ArrayStore::new(), ArrayStore::new()];
        Host {
            dec: Box::new(Decoder::new()),
            asm: (0..threads)
                .map(|_| TimerlatAssembler::new(layout, stores()).unwrap())
                .collect(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for f in self.dec.frames(bytes) {
            let f = f.expect("a clean frame");
            let t = match &f.body {
                Body::TimerlatDelta(d) => d.thread,
                Body::TimerlatStats(s) => s.thread,
                Body::TimerlatChunk(c) => c.thread,
                b => panic!("not a timerlat frame: {b:?}"),
            };
            assert!(self.asm[usize::from(t)].apply(&f.body));
        }
    }

    /// After any frame: each histogram a lower bound of the truth of its
    /// epoch, and equal to it whenever the thread's three say they are
    /// exact.
    fn check(&self, truth: &Truth) {
        for (t, a) in self.asm.iter().enumerate() {
            for c in Context::ALL {
                let h = a.hist(c);
                let Some(e) = h.epoch() else { continue };
                let want = truth
                    .get(&(t as u16, e))
                    .map_or_else(|| std::vec![0; N], |(w, _)| w[c.index()].clone());
                let got = h.counts().counts();
                assert!(
                    got.iter().zip(&want).all(|(g, w)| g <= w),
                    "T{t} {c:?}@{e}: {got:?} above {want:?}"
                );
                if h.exact_now() {
                    assert_eq!(got, &want[..], "T{t} {c:?}@{e} claims exact");
                }
            }
        }
    }

    /// At the end: every histogram and figure the target's, exactly.
    fn exact_at_end(&self, target: &Target) {
        let epoch = target.rep.epoch();
        for (t, a) in self.asm.iter().enumerate() {
            let (want, stats) = &target.truth[&(t as u16, epoch)];
            assert!(a.exact_now(), "T{t}");
            assert_eq!(a.exact_epoch(), Some(epoch));
            for c in Context::ALL {
                assert_eq!(a.hist(c).counts().counts(), &want[c.index()][..]);
            }
            assert_eq!(a.stats(), Some(stats));
            assert!(stats.last_report);
        }
    }
}

/// Periods of one report interval: mostly a few µs, some up to the log
/// part, some lost.
fn periods() -> impl Strategy<Value = Vec<(u64, u64, bool)>> {
    proptest::collection::vec(
        (
            prop_oneof![8 => 1_000u64..30_000, 1 => 30_000u64..80_000_000_000],
            prop_oneof![8 => 0u64..20_000, 1 => 20_000u64..5_000_000],
            proptest::bool::weighted(0.05),
        ),
        0..50,
    )
}

fn steps(threads: usize) -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(
        prop_oneof![
            10 => proptest::collection::vec(periods(), threads).prop_map(Step::Report),
            1 => Just(Step::Lost),
            1 => Just(Step::Reconnect),
        ],
        1..25,
    )
}

fn case() -> impl Strategy<Value = (usize, Vec<Step>, u32)> {
    (1usize..=3).prop_flat_map(|t| (Just(t), steps(t), prop_oneof![Just(0u32), 60u32..400]))
}

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

    /// A clean link: every frame small, the histograms exact after every
    /// report but a lean one, and at the end.
    #[test]
    fn clean_link_is_exact_after_every_report((threads, steps, budget) in case()) {
        let mut target = Target::new(threads, budget);
        target.run(&steps);
        let mut host = Host::new(threads);
        for s in &target.sent {
            prop_assert!(s.bytes.len() <= MAX_SMALL_FRAME);
            host.feed(&s.bytes);
            host.check(&target.truth);
        }
        host.exact_at_end(&target);
    }

    /// A bad line before the end: never above the truth, never a wrong
    /// histogram called exact; the final report heals everything.
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
        host.exact_at_end(&target);
    }
}

/// The frames of each report, decoded.
fn bodies(sent: &[Sent]) -> Vec<Body> {
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    sent.iter()
        .flat_map(|s| dec.frames(&s.bytes).collect::<Vec<_>>())
        .map(|f: Result<Frame, _>| f.unwrap().body)
        .collect()
}

/// A steady CPU: the same few µs every period.
fn steady(reports: usize) -> Vec<Step> {
    let p: Vec<(u64, u64, bool)> = (0..200)
        .map(|i| (2_000 + (i % 7) * 1_000, 5_000 + (i % 11) * 1_000, false))
        .collect();
    (0..reports)
        .map(|_| Step::Report(std::vec![p.clone()]))
        .collect()
}

/// A rolling report: three delta parts, one per context, the statistics,
/// then one chunk; the figures are the reader's: each context's totals,
/// the trace's lost entries, the pairing's counts, the pages.
#[test]
fn a_report_is_three_deltas_the_figures_and_one_chunk() {
    let mut target = Target::new(1, 0);
    let mut steps = steady(1);
    let Step::Report(p) = &mut steps[0] else {
        unreachable!()
    };
    p[0][10].2 = true; // a lost period
    target.cpus[0].bad_pages = 2;
    target.run(&steps);
    let got = bodies(&target.sent[..5]);
    let contexts: Vec<Context> = got
        .iter()
        .filter_map(|b| match b {
            Body::TimerlatDelta(d) => Some(d.context),
            _ => None,
        })
        .collect();
    assert_eq!(contexts, Context::ALL);
    assert!(matches!(got[3], Body::TimerlatStats(_)), "{got:?}");
    assert!(matches!(got[4], Body::TimerlatChunk(_)), "{got:?}");
    let Body::TimerlatStats(s) = got[3] else {
        unreachable!()
    };
    let cpu = &target.cpus[0];
    for c in Context::ALL {
        let (f, t) = (s.figures(c), cpu.hists[c.index()].totals());
        assert_eq!(
            (f.count, f.sum, f.min, f.max),
            (t.count, t.sum, t.min, t.max)
        );
        assert_eq!(f.lost, cpu.pairing.tally[c.index()].lost);
    }
    // the lost period: its IRQ and thread entries, its return to user
    // space and the one of the period before it (which pairs with nothing)
    assert_eq!(
        s.figures.map(|f| (f.count, f.lost)),
        [(199, 1), (199, 1), (197, 2)]
    );
    assert_eq!((s.periods(), s.paired, s.inverted), (200, 199, 0));
    assert_eq!((s.unreadable_pages, s.lost()), (2, 4));
    assert!(!s.last_report);
}

/// One delta frame lost: the receiver's histogram falls short of its
/// count (not exact, never above), and the rolling snapshot makes it
/// exact again within one rotation through the three histograms.
#[test]
fn a_lost_delta_heals_within_one_rotation() {
    let mut target = Target::new(1, 0);
    target.run(&steady(20));
    let mut host = Host::new(1);
    let mut dropped = false;
    // (epoch of each frame's report, whether the host is exact after it)
    let mut exact_after = Vec::new();
    for s in &target.sent {
        let body = bodies(core::slice::from_ref(s)).remove(0);
        let epoch = match &body {
            Body::TimerlatDelta(d) => d.epoch,
            Body::TimerlatStats(s) => s.epoch,
            Body::TimerlatChunk(c) => c.epoch,
            _ => unreachable!(),
        };
        if !dropped
            && epoch == 3
            && matches!(&body, Body::TimerlatDelta(d) if d.context == Context::Thread)
        {
            dropped = true;
            continue;
        }
        host.feed(&s.bytes);
        host.check(&target.truth);
        if matches!(body, Body::TimerlatChunk(_)) {
            exact_after.push((epoch, host.asm[0].exact_now()));
        }
    }
    assert!(dropped);
    let broken: Vec<u32> = exact_after
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(e, _)| *e)
        .collect();
    // from the loss until the rotation's thread chunk covers the buckets
    // (the IRQ histogram's chunk, then the thread's): a few reports, not
    // the rest of the run
    assert!(broken.first() == Some(&3), "{exact_after:?}");
    assert!(broken.len() <= 3, "{exact_after:?}");
    assert!(exact_after.iter().rev().take(10).all(|(_, ok)| *ok));
    host.exact_at_end(&target);
}

/// After the link lost frames, the next report carries full snapshots of
/// the three histograms, and a receiver that joins then is exact at once.
#[test]
fn a_resync_sends_full_snapshots() {
    let mut target = Target::new(1, 0);
    let mut steps = steady(3);
    steps.insert(2, Step::Lost);
    target.run(&steps);
    let per_report: Vec<Vec<Body>> = {
        let all = bodies(&target.sent);
        let mut v: Vec<Vec<Body>> = Vec::new();
        for b in all {
            if matches!(&b, Body::TimerlatDelta(d) if d.context == Context::Irq && d.part == 0) {
                v.push(Vec::new());
            }
            v.last_mut().unwrap().push(b);
        }
        v
    };
    let chunks = |r: &[Body]| {
        r.iter()
            .filter_map(|b| match b {
                Body::TimerlatChunk(c) => Some(c.context),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(chunks(&per_report[1]).len(), 1, "a rolling chunk");
    // the third report (after the loss) and the final one: every context
    // from bucket 0 to the end
    for r in [&per_report[2], &per_report[3]] {
        assert_eq!(chunks(r), Context::ALL, "{r:?}");
    }
    // a host that saw nothing before the resync report is exact after it
    let mut host = Host::new(1);
    for b in &per_report[2] {
        assert!(host.asm[0].apply(b));
    }
    assert!(host.asm[0].exact_now());
}

/// Histograms of another layout than the log's send nothing.
#[test]
fn a_layout_mismatch_sends_nothing() {
    let mut rep = Reporter::new(0, SEC as u64);
    rep.begin_report(SEC);
    let mut log = Box::new(TimerlatLog::<N>::new(0, LINEAR));
    let other: [HistogramIn<[u64; N]>; 3] = [
        HistogramIn::new(LINEAR / 2),
        HistogramIn::new(LINEAR / 2),
        HistogramIn::new(LINEAR / 2),
    ];
    let mut frames = 0;
    let r = rep.timerlat(&mut log, &other, &Pairing::new(), 0, &mut |_: &[u8]| {
        frames += 1
    });
    assert_eq!((r, frames), (Err(Error::LayoutMismatch), 0));
}

/// A log in memory sized by a run-time layout takes only that layout's
/// length.
#[test]
fn a_log_in_the_callers_memory_is_checked() {
    let layout = Layout::new(LINEAR, N);
    let ok = TimerlatLogIn::with_memory(3, layout, [[7u64; N], [7; N], [7; N]]).unwrap();
    assert_eq!(ok.index(), 3);
    assert!(ok.hist(Context::UserRet).counts().iter().all(|&c| c == 0));
    let short: [&mut [u64]; 3] = [&mut [0; N], &mut [0; N], &mut [0; N - 1]];
    assert!(TimerlatLogIn::with_memory(0, layout, short).is_err());
}
