//! The line's shares on the simulated clock: under a spike rate that
//! saturates a 115200-baud line, reports keep their schedule, spikes and
//! explanations keep to their share, and the worst spikes still find room.

use std::boxed::Box;
use std::vec::Vec;

use super::*;
use crate::explain::{Attribution, Culprit, PrioClass, Softirq, Task, Untraced};
use crate::layout::Layout;
use crate::seqlock::{SharedHistogram, Snapshot};
use crate::wire::bounded;
use crate::wire::{Body, SpikeFlags, SpikeSample};
use crate::wire::{Decoder, MAX_FRAME, MAX_SMALL_FRAME};

const N: usize = 256;
const LINEAR: u32 = 128;
const SEC: i64 = 1_000_000_000;
const MS: i64 = 1_000_000;
const BAUD: u32 = 115_200;

/// A spike sample of thread 0 at `now`.
fn spike(now: i64, latency_ns: i64) -> Body {
    Body::Spike(SpikeSample {
        thread: 0,
        cycle: (now / MS) as u64,
        deadline_ns: now,
        latency_ns,
        missed: 0,
        flags: SpikeFlags {
            spike: true,
            overflow: false,
            brk: false,
        },
    })
}

/// An explanation of a few lines, as the trace gives them.
fn explanation(now: i64, latency_ns: u64) -> Body {
    let mut a = Attribution::new(0, (now / MS) as u64, now as u64, latency_ns);
    let burster = Task {
        pid: 4242,
        comm: bounded("burster"),
        prio: PrioClass::from_kernel(9),
    };
    a.add(Culprit::Task(burster), 3, latency_ns / 2);
    let (name, thread) = (bounded("uart-pl011"), None);
    a.add(
        Culprit::Irq {
            irq: 13,
            name,
            thread,
        },
        2,
        latency_ns / 4,
    );
    a.add(Culprit::Softirq(Softirq::NetRx), 1, latency_ns / 8);
    a.add(Culprit::Untraced(Untraced::Off), 0, latency_ns / 8);
    Body::Explain(a)
}

/// What a storm run on the simulated clock sent.
struct Storm {
    /// When each report began.
    reports: Vec<i64>,
    /// Bytes of the reports' frames but the final report's, and how many
    /// reports were lean
    /// (statistics only: one frame per thread).
    report_bytes: usize,
    lean: usize,
    /// Whether a host's assembler of each thread was exact after every
    /// report that was not lean, and at the end.
    exact: bool,
    /// (time, bytes) of every spike sample and explanation sent.
    spike_bytes: Vec<(i64, usize)>,
    /// Spike samples offered and sent, worst ones offered and sent.
    offered: u64,
    sent: u64,
    worst_offered: u64,
    worst_sent: u64,
}

/// `secs` seconds of a storm: a flagged sample every millisecond on each
/// of `threads` threads, whose latencies spread over `spread` buckets (wide
/// histograms make large deltas), the spike share asked before each.
/// Every 100th sample is the interval's new worst, sent with its
/// explanation when the share has room for the worst.
fn storm(threads: usize, spread: i64, secs: i64) -> Storm {
    storm_at(BAUD, threads, spread, secs)
}

/// [`storm`] on a line of `baud`.
fn storm_at(baud: u32, threads: usize, spread: i64, secs: i64) -> Storm {
    let recs: Vec<&'static SharedHistogram<N>> = (0..threads)
        .map(|_| &*Box::leak(Box::new(SharedHistogram::new(LINEAR))))
        .collect();
    let mut writers: Vec<_> = recs.iter().map(|r| r.writer().unwrap()).collect();
    let mut logs: Vec<Box<ThreadLog<N>>> = (0..threads)
        .map(|i| Box::new(ThreadLog::new(i as u16, LINEAR)))
        .collect();
    let mut rep = Reporter::new(0, SEC as u64)
        .with_budget(line_budget(baud))
        .with_spike_share(spike_share(baud));
    let mut hosts: Vec<Assembler<ArrayStore<N>>> = (0..threads)
        .map(|_| Assembler::new(Layout::new(LINEAR, N), ArrayStore::new()).unwrap())
        .collect();
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let mut out = Storm {
        reports: Vec::new(),
        report_bytes: 0,
        lean: 0,
        exact: true,
        spike_bytes: Vec::new(),
        offered: 0,
        sent: 0,
        worst_offered: 0,
        worst_sent: 0,
    };
    let mut snap = Box::new(Snapshot::<N>::new());
    let mut now = 0;
    let mut k = 0i64;
    while now < secs * SEC {
        now += MS;
        k += 1;
        for (t, w) in writers.iter_mut().enumerate() {
            let lat = 20_000 + ((k * 7 + t as i64 * 13) % spread) * 1_000;
            w.publish(lat, 0);
        }
        let worst = k % 100 == 0;
        let room = rep.spike_room(now);
        out.offered += 1;
        out.worst_offered += u64::from(worst);
        let fits = match room {
            Room::Any => true,
            Room::Worst => worst,
            Room::Nothing => false,
        };
        if fits {
            let mut n = 0;
            rep.send(spike(now, 500_000), &mut |b: &[u8]| n += b.len());
            if worst {
                rep.send(explanation(now, 500_000), &mut |b: &[u8]| n += b.len());
            }
            out.spike_bytes.push((now, n));
            out.sent += 1;
            out.worst_sent += u64::from(worst);
        }
        let last = now >= secs * SEC;
        if last || (now % (10 * MS) == 0 && rep.report_due(now)) {
            if last {
                rep.begin_final(now);
            } else {
                rep.begin_report(now);
                out.reports.push(now);
            }
            let mut frames = 0;
            for ((rec, log), host) in recs.iter().zip(logs.iter_mut()).zip(&mut hosts) {
                rec.snapshot(&mut snap, 4).unwrap();
                rep.report(log, &snap, SideCounts::default(), &mut |b: &[u8]| {
                    frames += 1;
                    if !last {
                        out.report_bytes += b.len();
                    }
                    for f in dec.frames(b) {
                        assert!(host.apply(&f.expect("a clean frame").body));
                    }
                });
            }
            let lean = frames == threads;
            out.lean += usize::from(lean && !last);
            if !lean {
                out.exact &= hosts.iter().all(|h| h.exact_now());
            }
        }
    }
    out
}

/// The longest gap between reports, the start included.
fn longest_gap(reports: &[i64]) -> i64 {
    let mut prev = 0;
    let mut worst = 0;
    for &r in reports {
        worst = worst.max(r - prev);
        prev = r;
    }
    worst
}

/// The most spike bytes in any window `[t, t + 1 s)`.
fn worst_second(sent: &[(i64, usize)]) -> usize {
    let mut worst = 0;
    let mut from = 0;
    let mut sum = 0;
    for &(t, n) in sent {
        sum += n;
        while sent[from].0 <= t - SEC {
            sum -= sent[from].1;
            from += 1;
        }
        worst = worst.max(sum);
    }
    worst
}

#[test]
fn narrow_reports_keep_their_second_under_a_saturating_spike_rate() {
    let s = storm(2, 8, 20);
    // 1,000 spike samples a second are far more than the share carries
    assert!(s.sent < s.offered / 4, "{} of {}", s.sent, s.offered);
    // every report on time: the spikes are not charged to the reports
    let gap = longest_gap(&s.reports);
    assert!(gap <= SEC + 10 * MS, "a report waited: gap {gap} ns");
    assert!(s.reports.len() >= 19, "{} reports", s.reports.len());
}

#[test]
fn wide_reports_still_go_out_every_3_s() {
    // 4 threads whose samples change 200 buckets each every second: more
    // than the reports' 7 % carries every second
    let s = storm(4, 200, 30);
    let gap = longest_gap(&s.reports);
    assert!(gap > SEC + 10 * MS, "the budget never held a report back");
    assert!(gap <= 3 * SEC, "gap {gap} ns");
}

/// The reports' bytes of a 4-thread storm of `secs` on a line of `baud`
/// average within the reports' budget, but for the last report's, which
/// nothing after it pays for.
fn assert_within_budget(s: &Storm, baud: u32, secs: i64) {
    let budget = line_budget(baud) as usize * secs as usize;
    let one_report = 4 * 4 * MAX_SMALL_FRAME;
    assert!(
        s.report_bytes <= budget + one_report,
        "{} B in {secs} s, budget {budget} B ({} reports, {} lean)",
        s.report_bytes,
        s.reports.len(),
        s.lean
    );
}

#[test]
fn reports_too_wide_for_3_s_are_lean_and_keep_to_the_budget() {
    // 4 threads whose samples change 200 buckets each, on a 38400-baud
    // line: even every 3 s their deltas are more than the budget carries
    let secs = 60;
    let baud = 38_400;
    let s = storm_at(baud, 4, 200, secs);
    assert!(longest_gap(&s.reports) <= 3 * SEC, "a report was late");
    assert_within_budget(&s, baud, secs);
    assert!(s.lean > 0, "no lean report");
    assert!(s.lean < s.reports.len(), "only lean reports");
    // and a host's histograms are exact after every report with deltas
    assert!(s.exact, "a report with deltas left a histogram short");
}

#[test]
fn reports_too_wide_for_6_s_still_keep_to_the_budget() {
    // on a 19200-baud line the same deltas take longer than a lean report
    // and the next one's wait (6 s) to pay for: lean reports come in a
    // row, and the histograms still go every 10 s
    let secs = 60;
    let baud = 19_200;
    let s = storm_at(baud, 4, 200, secs);
    assert_within_budget(&s, baud, secs);
    assert!(s.lean < s.reports.len(), "only lean reports");
    assert!(s.exact, "a report with deltas left a histogram short");
}

#[test]
fn spikes_keep_to_their_share_and_the_worst_find_room() {
    let secs = 20;
    let s = storm(1, 8, secs);
    let share = spike_share(BAUD) as usize;
    // in 64 bits: the product overflows a 32-bit usize (armv7, Cortex-M)
    let ahead = (share as u64 * SPIKE_AHEAD_NS as u64 / SEC as u64) as usize;
    // no second carries more than the share and its burst (one frame over)
    let worst = worst_second(&s.spike_bytes);
    assert!(worst <= share + ahead + 300, "{worst} B in a second");
    // with the reports' 7 % that is within what the line's pacer lets
    // through (45 %), so the pacer never makes a report wait behind spikes
    assert!(
        worst + line_budget(BAUD) as usize <= (BAUD / 10 * PACED_PERCENT / 100) as usize,
        "{worst} B of spikes in a second"
    );
    // and the share is used: the storm saturates it
    let total: usize = s.spike_bytes.iter().map(|&(_, n)| n).sum();
    let per_s = total / secs as usize;
    assert!(per_s >= share * 9 / 10 && per_s <= share + ahead / secs as usize);
    // ordinary spike samples use it up to the reserve: every worst one went
    assert_eq!(s.worst_sent, s.worst_offered);
}

#[test]
fn without_a_share_every_spike_fits() {
    let mut r = Reporter::new(0, SEC as u64);
    for k in 0..10_000 {
        assert_eq!(r.spike_room(k * MS), Room::Any);
        r.send(spike(k * MS, 1), &mut |_: &[u8]| {});
    }
}

/// Under a storm of spikes and a spike's evidence always waiting, the
/// evidence keeps to its share, the spikes and the evidence together to
/// the spikes' share and its burst (so the busiest second is what it was
/// without evidence), and every worst spike still finds room.
#[test]
fn evidence_takes_its_share_out_of_the_spikes_and_never_their_reserve() {
    let mut r = Reporter::new(0, SEC as u64)
        .with_budget(line_budget(BAUD))
        .with_spike_share(spike_share(BAUD))
        .with_evidence_share(evidence_share(BAUD));
    let file = std::vec![0x5au8; 1 << 20];
    let mut parts = parts(&file, 0, 1);
    let (mut evidence, mut spikes) = (Vec::new(), Vec::new());
    let (mut worst_offered, mut worst_sent) = (0, 0);
    let secs = 20;
    for k in 0..secs * 1000 {
        let now = k * MS;
        // a spike every ms, a worst one every 100 ms
        let worst = k % 100 == 0;
        worst_offered += usize::from(worst);
        // the sender offers evidence first: its own share bounds it
        while r.evidence_room(now) {
            let Some(p) = parts.next() else { break };
            r.send(Body::EvidencePart(p), &mut |b: &[u8]| {
                evidence.push((now, b.len()));
            });
        }
        let room = r.spike_room(now);
        if room == Room::Any || (worst && room == Room::Worst) {
            worst_sent += usize::from(worst);
            r.send(spike(now, 1), &mut |b: &[u8]| spikes.push((now, b.len())));
        }
    }
    let share = evidence_share(BAUD) as usize;
    let ahead = (share as u64 * EVIDENCE_AHEAD_NS as u64 / SEC as u64) as usize;
    let part = 600;
    let worst_evidence = worst_second(&evidence);
    assert!(
        worst_evidence <= share + ahead + part,
        "{worst_evidence} B of evidence in a second"
    );
    let total: usize = evidence.iter().map(|&(_, n)| n).sum();
    assert!(
        total / secs as usize >= share * 8 / 10,
        "the share is used: {total} B"
    );
    // spikes and evidence together: the spikes' share and its burst
    let mut both = spikes.clone();
    both.extend(&evidence);
    both.sort();
    let spike_share = spike_share(BAUD) as usize;
    let spike_ahead = (spike_share as u64 * SPIKE_AHEAD_NS as u64 / SEC as u64) as usize;
    let worst = worst_second(&both);
    assert!(
        worst <= spike_share + spike_ahead + part,
        "{worst} B in a second"
    );
    assert_eq!(worst_sent, worst_offered, "a worst spike found no room");
}
