//! The figures of a flood run, from its recording: how often reports
//! came, how many spikes were sent, explained and dropped, the coverage,
//! and the shares of the explained time that were untraced (by reason)
//! and IRQ N's.
//!
//! Usage: `xtask tool flood-figures [--irq N] NAME=FILE...` (N defaults to 13, the
//! board's console UART). Prints one markdown table, a row per recording.
//!
//! * reports/s: statistics reports of thread 0 over the run's time, and
//!   the longest gap between two of them;
//! * spikes: the exact count of the last spike aggregates (protocol 3),
//!   else spike frames received plus the spike records the target
//!   counted as dropped; explained: attributions received; traced: of
//!   them, those whose largest line is not untraced; aggregated and
//!   dropped: the last aggregates' totals (dropped: the statistics'
//!   count before protocol 3); coverage: explained over spikes;
//! * explained late: attributions whose deadline is in the last half of
//!   the spikes' time span (explanations during the flood, not only at
//!   its start);
//! * untraced, paused, lost: shares of the explained time in the
//!   untraced lines (all reasons, then "trace paused" and "trace lost");
//! * irq N: share of the explained time of IRQ N's lines (handler and
//!   thread).
//!
//! Test helper, never part of the target program.

use std::process::ExitCode;

use latscope_core::explain::{CauseKind, Culprit, Untraced};
use latscope_core::wire::{Body, Decoder, MAX_FRAME};
use latscope_testkit::kept_runs::{self, KeptRuns};

/// What one recording held.
#[derive(Default)]
struct Figures {
    report_times_ns: Vec<u64>,
    spike_frames: u64,
    spike_deadlines: (Option<i64>, Option<i64>),
    explain_deadlines: Vec<u64>,
    dropped: u64,
    /// The exact spike count and the aggregated total, if the stream
    /// has aggregates.
    exact: Option<(u64, u64)>,
    traced: u64,
    explained_ns: u64,
    untraced_ns: u64,
    paused_ns: u64,
    lost_ns: u64,
    beyond_ns: u64,
    irq_ns: u64,
    other_frames: u64,
    /// Report intervals with a spike, per thread, and of them those whose
    /// largest spike (the aggregate's exact one) was explained.
    worsts: u64,
    worsts_explained: u64,
}

fn figures(bytes: &[u8], irq: u32) -> Figures {
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let mut f = Figures::default();
    let mut dropped = std::collections::BTreeMap::new();
    let mut aggregates = std::collections::BTreeMap::new();
    let mut peaks = Vec::new();
    let mut explained_cycles = std::collections::BTreeSet::new();
    for frame in dec.frames(bytes).flatten() {
        match frame.body {
            Body::Stats(s) => {
                if s.thread == 0 {
                    f.report_times_ns.push(s.elapsed_ns);
                }
                dropped.insert(s.thread, s.dropped);
            }
            Body::Spike(s) => {
                f.spike_frames += 1;
                let (lo, hi) = f.spike_deadlines;
                f.spike_deadlines = (
                    Some(lo.map_or(s.deadline_ns, |l| l.min(s.deadline_ns))),
                    Some(hi.map_or(s.deadline_ns, |h| h.max(s.deadline_ns))),
                );
            }
            Body::Aggregate(a) => {
                if a.above > 0 {
                    peaks.push((a.thread, a.max_cycle, a.epoch, a.max_ns, a.max_deadline_ns));
                }
                aggregates.insert(a.thread, a);
            }
            Body::Explain(a) => {
                explained_cycles.insert((a.cpu, a.cycle));
                f.explain_deadlines.push(a.deadline_ns);
                let top = a.causes.iter().max_by_key(|c| c.ns);
                f.traced += u64::from(top.is_some_and(|c| c.kind() != CauseKind::Untraced));
                f.explained_ns += a.latency_ns;
                for c in &a.causes {
                    match &c.culprit {
                        Culprit::Untraced(why) => {
                            f.untraced_ns += c.ns;
                            match why {
                                Untraced::Paused => f.paused_ns += c.ns,
                                Untraced::Lost { .. } | Untraced::LostUnknown => {
                                    f.lost_ns += c.ns;
                                }
                                Untraced::Beyond => f.beyond_ns += c.ns,
                                Untraced::Off => {}
                            }
                        }
                        Culprit::Irq { irq: n, .. } if *n == irq => f.irq_ns += c.ns,
                        _ => {}
                    }
                }
            }
            _ => f.other_frames += 1,
        }
    }
    f.worsts = peaks.len() as u64;
    // pinned threads: thread t measures CPU t in these runs (-a 0,1)
    f.worsts_explained = peaks
        .iter()
        .filter(|&&(t, c, ..)| explained_cycles.contains(&(u32::from(t), c)))
        .count() as u64;
    for &(t, c, epoch, ns, deadline) in &peaks {
        if !explained_cycles.contains(&(u32::from(t), c)) {
            eprintln!("interval {epoch} of thread {t}: worst {ns} ns at cycle {c} (deadline {deadline}) not explained");
        }
    }
    f.dropped = dropped.values().sum();
    if !aggregates.is_empty() {
        let sum = |g: fn(&latscope_core::wire::Aggregate) -> u64| aggregates.values().map(g).sum();
        f.dropped = sum(|a| a.spikes_dropped);
        f.exact = Some((sum(|a| a.spikes), sum(|a| a.spikes_aggregated)));
    }
    f
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "-".into();
    }
    format!("{:.1} %", 100.0 * part as f64 / whole as f64)
}

fn row(name: &str, f: &Figures) -> String {
    let secs = f.report_times_ns.last().copied().unwrap_or(0) as f64 / 1e9;
    let rate = if secs > 0.0 {
        format!("{:.2}", f.report_times_ns.len() as f64 / secs)
    } else {
        "-".into()
    };
    let gap = f
        .report_times_ns
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .max()
        .map_or("-".into(), |g| format!("{:.1} s", g as f64 / 1e9));
    let spikes = f.exact.map_or(f.spike_frames + f.dropped, |(n, _)| n);
    let aggregated = f.exact.map_or("-".into(), |(_, a)| a.to_string());
    let late = match f.spike_deadlines {
        (Some(lo), Some(hi)) => {
            let mid = lo + (hi - lo) / 2;
            let n = f
                .explain_deadlines
                .iter()
                .filter(|&&d| i64::try_from(d).is_ok_and(|d| d >= mid))
                .count();
            n.to_string()
        }
        _ => "-".into(),
    };
    format!(
        "| {name} | {rate} | {gap} | {spikes} | {} | {} | {} | {aggregated} | {} | {} | {late} | {}/{} | {} | {} | {} | {} | {} |",
        f.spike_frames,
        f.explain_deadlines.len(),
        f.traced,
        f.dropped,
        pct(f.explain_deadlines.len() as u64, spikes),
        f.worsts_explained,
        f.worsts,
        pct(f.untraced_ns, f.explained_ns),
        pct(f.paused_ns, f.explained_ns),
        pct(f.lost_ns, f.explained_ns),
        pct(f.beyond_ns, f.explained_ns),
        pct(f.irq_ns, f.explained_ns),
    )
}

/// `cargo xtask tool flood-figures ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let KeptRuns { irq, runs } = match kept_runs::parse("xtask tool flood-figures", "FILE", args) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "| run | reports/s | longest report gap | spikes | spike frames | explained | traced | aggregated | dropped | coverage | explained in the 2nd half | interval worsts explained | untraced | of it paused | of it lost | of it beyond the history | irq {irq} |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, file) in runs {
        match std::fs::read(&file) {
            Ok(bytes) => println!("{}", row(&name, &figures(&bytes, irq))),
            Err(e) => {
                eprintln!("xtask tool flood-figures: {file}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
