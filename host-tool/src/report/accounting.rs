//! What became of each thread's spikes, from the target's aggregates
//! (protocol version 3): how many samples crossed the spike threshold,
//! how many of their records were sent, explained, aggregated and
//! dropped, and the coverage (explained over spikes). Runs without
//! aggregates (every recording of versions 1 and 2) show nothing here.

use std::fmt::Write;

use latscope_core::wire::Aggregate;
use serde_json::{json, Value};

use crate::aggregate::{Run, SpikeAccount};
use crate::summary::us;

/// One thread's account: its index, the latest aggregate, what the host
/// received.
struct Row<'a> {
    thread: usize,
    latest: Aggregate,
    account: &'a SpikeAccount,
    /// Spike records over the threshold the host received.
    received: u64,
}

fn rows(run: &Run) -> Vec<Row<'_>> {
    run.threads
        .iter()
        .enumerate()
        .filter_map(|(thread, t)| {
            Some(Row {
                thread,
                latest: t.spike_account.latest?,
                account: &t.spike_account,
                received: t.spikes.spike_total,
            })
        })
        .collect()
}

/// `explained` over `spikes` as a percentage, or `-` without spikes.
fn coverage(explained: u64, spikes: u64) -> String {
    if spikes == 0 {
        "-".into()
    } else {
        format!("{:.1}%", explained as f64 * 100.0 / spikes as f64)
    }
}

/// What does not add up in one thread's account, in words.
fn problems(r: &Row<'_>) -> Vec<String> {
    let a = &r.latest;
    let mut out = Vec::new();
    if !a.is_consistent() {
        out.push(format!(
            "the target's counts do not add up: {} spikes, {} sent + {} aggregated + {} dropped + {} queued, {} explained",
            a.spikes, a.spikes_sent, a.spikes_aggregated, a.spikes_dropped, a.queued, a.spikes_explained
        ));
    }
    if r.received < a.spikes_sent {
        out.push(format!(
            "{} of the {} spike records sent did not arrive (lost on the link)",
            a.spikes_sent - r.received,
            a.spikes_sent
        ));
    }
    if r.account.above_received < a.spikes {
        out.push(format!(
            "aggregates of {} spikes did not arrive (their intervals are only in the totals)",
            a.spikes - r.account.above_received
        ));
    }
    if !a.last_report || a.queued > 0 {
        out.push(format!(
            "as of report {}, not the final one ({} records still queued)",
            a.epoch, a.queued
        ));
    }
    out
}

/// The text section: a table and a line per problem; nothing for a run
/// without aggregates.
pub(crate) fn text(out: &mut String, run: &Run) {
    let rows = rows(run);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nspike accounting (samples above {} µs, counted by the target; coverage = explained / spikes):",
        us(run.hello.config.spike_ns)
    );
    let _ = writeln!(
        out,
        "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>12}",
        "thread",
        "spikes",
        "sent",
        "explained",
        "aggregated",
        "dropped",
        "queued",
        "coverage",
        "worst (µs)"
    );
    let line = |out: &mut String, label: &str, a: &Aggregate, worst: Option<u64>| {
        let _ = writeln!(
            out,
            "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>12}",
            label,
            a.spikes,
            a.spikes_sent,
            a.spikes_explained,
            a.spikes_aggregated,
            a.spikes_dropped,
            a.queued,
            coverage(a.spikes_explained, a.spikes),
            worst.map(us).unwrap_or_else(|| "-".into())
        );
    };
    let mut all = Aggregate::default();
    let mut worst_all: Option<u64> = None;
    for r in &rows {
        let worst = r.account.worst.map(|(ns, _, _)| ns);
        line(out, &format!("T{}", r.thread), &r.latest, worst);
        let a = &r.latest;
        all.spikes = all.spikes.saturating_add(a.spikes);
        all.spikes_sent = all.spikes_sent.saturating_add(a.spikes_sent);
        all.spikes_explained = all.spikes_explained.saturating_add(a.spikes_explained);
        all.spikes_aggregated = all.spikes_aggregated.saturating_add(a.spikes_aggregated);
        all.spikes_dropped = all.spikes_dropped.saturating_add(a.spikes_dropped);
        all.queued = all.queued.saturating_add(a.queued);
        worst_all = worst_all.max(worst);
    }
    if rows.len() > 1 {
        line(out, "all", &all, worst_all);
    }
    for r in &rows {
        for p in problems(r) {
            let _ = writeln!(out, "  T{}: {p}", r.thread);
        }
    }
}

/// The JSON of every thread's account, or `None` for a run without
/// aggregates (its JSON then has no `spike_account` key).
pub(crate) fn json(run: &Run) -> Option<Value> {
    let rows = rows(run);
    if rows.is_empty() {
        return None;
    }
    Some(Value::Array(
        rows.iter()
            .map(|r| {
                let a = &r.latest;
                json!({
                    "thread": r.thread,
                    "epoch": a.epoch,
                    "final": a.last_report,
                    "spikes": a.spikes,
                    "sent": a.spikes_sent,
                    "explained": a.spikes_explained,
                    "aggregated": a.spikes_aggregated,
                    "dropped": a.spikes_dropped,
                    "queued": a.queued,
                    "coverage": a.coverage(),
                    "consistent": a.is_consistent(),
                    "worst": r.account.worst.map(|(ns, cycle, deadline_ns)| json!({
                        "latency_ns": ns, "cycle": cycle, "deadline_ns": deadline_ns,
                    })),
                    "aggregates_received": r.account.frames,
                    "spike_records_received": r.received,
                    "problems": problems(r),
                })
            })
            .collect(),
    ))
}
