//! The human-readable summary: run description, per-thread and all-CPU
//! table, rteval's spread figures, spikes, link health and warnings.

use std::fmt::Write;

use latscope_core::explain::{Attribution, CauseKind};
use latscope_core::wire::{
    Bye, ByeReason, Level, LinkStats, Platform, Policy, RunConfig, TargetInfo,
};

use crate::aggregate::Run;
use crate::summary::{
    avg_us, or_dash, summarize, timerlat_summaries, us, us_opt, Summary, QUANTILES,
    TIMERLAT_QUANTILES,
};

/// Spikes listed per thread.
const SPIKES_SHOWN: usize = 10;

/// How a run ended, in words.
pub(crate) fn ending(run: &Run) -> String {
    run.bye
        .as_ref()
        .map_or_else(|| "no bye (stream cut short)".into(), bye_text)
}

/// What a run's bye says, in words.
pub(crate) fn bye_text(b: &Bye) -> String {
    let why = match b.reason {
        ByeReason::Completed => "completed".to_string(),
        ByeReason::Signal(s) => format!("stopped by signal {s}"),
        ByeReason::Break { thread, latency_ns } => {
            format!("break threshold hit by T{thread} at {} µs", us(latency_ns))
        }
        ByeReason::Error => "stopped by an error".to_string(),
    };
    format!(
        "{why} after {:.2} s, {} cycles, max {} µs; frames the target could not send {}; self-check defects {}",
        b.elapsed_ns as f64 / 1e9,
        b.cycles,
        us(b.max_ns),
        b.frames_dropped,
        b.defects
    )
}

/// True if the target's kernel has no `/dev/cpu_dma_latency`, as the
/// hello says. A version-1 hello only says the device was not held; without
/// `--best-effort` on the command line a device that is there but refused
/// stops the run instead, so then it was missing.
fn dma_latency_device_missing(run: &Run) -> bool {
    let d = run.hello.config.degraded;
    let best_effort = run
        .hello
        .target
        .argv
        .split_whitespace()
        .any(|a| a == "--best-effort");
    d.no_dma_latency_device || (d.no_dma_latency && !best_effort)
}

/// The devices the target's kernel lacks (not degradations: nothing was
/// given up, there was nothing to hold).
pub(crate) fn missing_devices(run: &Run) -> Vec<&'static str> {
    let mut v = Vec::new();
    if dma_latency_device_missing(run) {
        v.push("/dev/cpu_dma_latency");
    }
    v
}

/// The run's degradations under `--best-effort`, in words (empty if none).
pub(crate) fn degraded(run: &Run) -> Vec<&'static str> {
    let d = run.hello.config.degraded;
    let mut v = Vec::new();
    if d.no_rt_policy {
        v.push("no real-time policy");
    }
    if d.no_mlock {
        v.push("memory not locked");
    }
    if d.no_dma_latency && !dma_latency_device_missing(run) {
        v.push("cpu_dma_latency not held");
    }
    if d.no_affinity {
        v.push("threads not pinned");
    }
    v
}

/// Link statistics in one line.
pub(crate) fn link_line(l: &LinkStats) -> String {
    format!(
        "{} frames, {} CRC errors, {} oversize, {} other-version, {} malformed, {} gaps ({} frames lost), {} restarts, {} bytes skipped of {}",
        l.frames,
        l.crc_errors,
        l.oversize,
        l.unknown_version,
        l.malformed,
        l.seq_gaps,
        l.frames_lost,
        l.restarts,
        l.bytes_skipped,
        l.bytes
    )
}

/// Whether the figures are exact, in words.
pub(crate) fn exactness(run: &Run) -> String {
    if run.exact_at_end() {
        "exact at the end (bye intact)".into()
    } else {
        match run.exact_epoch() {
            Some(e) => format!("histograms exact as of report {e}; later counts may be incomplete"),
            None => "histograms incomplete (no report was complete for every thread)".into(),
        }
    }
}

/// A target log line's level, in words.
pub(crate) fn level(l: Level) -> &'static str {
    match l {
        Level::Info => "info",
        Level::Warn => "warning",
        Level::Error => "error",
    }
}

fn policy(p: Policy, prio: u8) -> String {
    if p.is_rt() {
        format!("{}/{prio}", p.name())
    } else {
        p.name().to_string()
    }
}

/// `s` cut to `n` characters, with an ellipsis if it was longer (the JSON
/// formats keep it whole).
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n).collect();
        c.push('…');
        c
    }
}

/// The header lines describing a run.
pub(crate) fn header(out: &mut String, name: &str, run: &Run, link: &LinkStats) {
    if run.hello_lost {
        unknown_header(out, name, run, link);
        return;
    }
    let h = &run.hello;
    let t = &h.target;
    if t.platform == Platform::BareMetal {
        bare_metal_header(out, name, run);
        tail(out, run, link);
        return;
    }
    let _ = writeln!(
        out,
        "== {name}: latscope {} on {} ({}, kernel {}, {}{}), {} CPUs, run {:016x}",
        h.tool_version,
        t.hostname,
        t.arch,
        t.kernel,
        t.preempt_model,
        if t.preempt_rt { ", realtime" } else { "" },
        t.cpus,
        h.run_id
    );
    if !t.model.is_empty() {
        let _ = writeln!(out, "model:    {}", model_line(t));
    }
    config_line(out, &h.config);
    let _ = writeln!(out, "command:  {}", t.argv);
    let _ = writeln!(
        out,
        "system:   clocksource {}, sched_rt_runtime_us {}, cmdline {}",
        t.clocksource,
        t.rt_runtime_us,
        clip(&t.cmdline, 120)
    );
    mode_lines(out, run);
    tail(out, run, link);
}

/// The `config:` line: how the run measured.
fn config_line(out: &mut String, c: &RunConfig) {
    let _ = writeln!(
        out,
        "config:   {}, interval {} µs, distance {} µs, clock {}, mlock {}, dma latency {}, duration {}, report every {:.1} s",
        policy(c.policy, c.priority),
        us(c.interval_ns),
        us(c.distance_ns),
        match c.clock {
            latscope_core::wire::ClockKind::Monotonic => "monotonic",
            latscope_core::wire::ClockKind::Realtime => "realtime",
        },
        if c.mlock { "yes" } else { "no" },
        c.dma_latency_us
            .map(|v| format!("{v} µs"))
            .unwrap_or_else(|| "untouched".into()),
        if c.duration_ns > 0 {
            format!("{:.0} s", c.duration_ns as f64 / 1e9)
        } else {
            "none".into()
        },
        c.report_ns as f64 / 1e9
    );
}

/// The lines that say where the run did not measure as asked or as usual:
/// its wake mode, `--smi`, degradations, devices the kernel lacks, and a
/// tracefs latscope mounted.
fn mode_lines(out: &mut String, run: &Run) {
    if let Some(caveat) = run.hello.config.wake.caveat() {
        let _ = writeln!(out, "MODE:     {} ({caveat})", run.hello.config.wake.name());
    }
    if run.hello.config.smi {
        let _ = writeln!(
            out,
            "MODE:     --smi (one MSR read, a second system call, per cycle)"
        );
    }
    let d = degraded(run);
    if !d.is_empty() {
        let _ = writeln!(
            out,
            "DEGRADED: {} (--best-effort); figures do not show the system's real-time behaviour",
            d.join(", ")
        );
    }
    for dev in missing_devices(run) {
        let _ = writeln!(out, "missing:  {dev} (not on the target's kernel)");
    }
    if run.hello.config.tracefs_mounted {
        let _ = writeln!(
            out,
            "tracefs:  mounted by latscope at /sys/kernel/tracing (none was mounted; left in place)"
        );
    }
}

/// The model and the measuring clock: `mps2-an386 (Cortex-M4F, bare
/// metal), clock 25 MHz (40 ns)`; the parts the target did not say are
/// left out.
pub(crate) fn model_line(t: &TargetInfo) -> String {
    let mut parts = Vec::new();
    if !t.model.is_empty() {
        parts.push(t.model.to_string());
    }
    if t.clock_hz > 0 {
        let mut clock = format!("clock {}", rate(t.clock_hz));
        if t.clock_resolution_ns > 0 {
            let _ = write!(clock, " ({} ns)", t.clock_resolution_ns);
        }
        parts.push(clock);
    }
    parts.join(", ")
}

/// What runs the target, in a few words for one-line descriptions
/// (compare, plot titles): `kernel 6.1.0-rt`, or a bare-metal target's
/// [`model_line`].
pub(crate) fn system_words(t: &TargetInfo) -> String {
    match t.platform {
        Platform::Linux => format!("kernel {}", t.kernel),
        Platform::BareMetal => model_line(t),
    }
}

/// A clock rate in the largest unit that divides it: `25 MHz`, `1 GHz`,
/// `32768 Hz`.
fn rate(hz: u64) -> String {
    match hz {
        h if h % 1_000_000_000 == 0 => format!("{} GHz", h / 1_000_000_000),
        h if h % 1_000_000 == 0 => format!("{} MHz", h / 1_000_000),
        h if h % 1_000 == 0 => format!("{} kHz", h / 1_000),
        h => format!("{h} Hz"),
    }
}

/// The header of a bare-metal target: its model and clock instead of a
/// kernel, and none of the lines only Linux has facts for (kernel,
/// preemption model, cmdline, clocksource, scheduling policy, mlock,
/// /dev/cpu_dma_latency).
fn bare_metal_header(out: &mut String, name: &str, run: &Run) {
    let h = &run.hello;
    let t = &h.target;
    let c = &h.config;
    let who = [t.hostname.as_str(), t.name.as_str()]
        .into_iter()
        .find(|s| !s.is_empty())
        .map(|s| format!(" on {s}"))
        .unwrap_or_default();
    let arch = if t.arch.is_empty() {
        String::new()
    } else {
        format!("{}, ", t.arch)
    };
    let _ = writeln!(
        out,
        "== {name}: latscope {}{who} ({arch}bare metal), {} CPUs, run {:016x}",
        h.tool_version, t.cpus, h.run_id
    );
    let _ = writeln!(out, "model:    {}", model_line(t));
    let _ = writeln!(
        out,
        "config:   interval {} µs, duration {}, report every {:.1} s",
        us(c.interval_ns),
        if c.duration_ns > 0 {
            format!("{:.0} s", c.duration_ns as f64 / 1e9)
        } else {
            "none".into()
        },
        c.report_ns as f64 / 1e9
    );
    if !t.argv.is_empty() {
        let _ = writeln!(out, "command:  {}", t.argv);
    }
}

/// The header of a run whose hello was never decoded: nothing about the
/// target or its settings is known, and nothing is made up.
fn unknown_header(out: &mut String, name: &str, run: &Run, link: &LinkStats) {
    let _ = writeln!(
        out,
        "== {name}: target unknown: the run's hello frame was never decoded (damaged or missing)"
    );
    let _ = writeln!(
        out,
        "config:   unknown (no hello); the default histogram layout is assumed"
    );
    tail(out, run, link);
}

/// The header lines after the target's: the end, the link, the data.
fn tail(out: &mut String, run: &Run, link: &LinkStats) {
    let _ = writeln!(out, "end:      {}", ending(run));
    let _ = writeln!(out, "link:     {}", link_line(link));
    let _ = writeln!(out, "data:     {}", exactness(run));
    let losses = super::completeness::losses(run, link);
    if !losses.is_empty() {
        let why: Vec<String> = losses
            .iter()
            .map(super::completeness::Loss::message)
            .collect();
        let _ = writeln!(out, "INCOMPLETE: {} (exit status 1)", why.join("; "));
    }
    for l in run.warnings() {
        let _ = writeln!(out, "target {}: {}", level(l.level), l.text);
    }
    if run.logs_total > run.logs.len() as u64 {
        let _ = writeln!(
            out,
            "({} more target log lines not kept)",
            run.logs_total - run.logs.len() as u64
        );
    }
}

/// The per-thread tables: latencies and quantiles, then the shape of the
/// distribution and the counts.
fn table(out: &mut String, rows: &[&Summary]) {
    let _ = write!(
        out,
        "\n{:<6} {:>4} {:>4} {:>12} {:>9} {:>9}",
        "thread", "CPU", "prio", "cycles", "min", "avg"
    );
    for (_, n) in QUANTILES {
        let _ = write!(out, " {n:>9}");
    }
    let _ = writeln!(out, " {:>10}  (µs)", "max");
    // the columns after `cycles`, for a thread without samples
    let stats_width = 30 + 10 * QUANTILES.len();
    for s in rows {
        if s.count == 0 {
            let _ = writeln!(
                out,
                "{:<6} {:>4} {:>4} {:>12} {:>stats_width$}",
                s.label,
                or_dash(s.cpu),
                or_dash(s.priority),
                s.cycles,
                "no samples"
            );
            continue;
        }
        let _ = write!(
            out,
            "{:<6} {:>4} {:>4} {:>12} {:>9} {:>9}",
            s.label,
            or_dash(s.cpu),
            or_dash(s.priority),
            s.cycles,
            us_opt(s.min_ns),
            avg_us(s.avg_ns),
        );
        for (_, v) in &s.quantiles {
            let _ = write!(out, " {:>9}", us_opt(*v));
        }
        let _ = writeln!(out, " {:>10}", us_opt(s.max_ns));
    }
    shape_table(out, rows);
}

/// The second table: each thread's distribution shape and its counts.
fn shape_table(out: &mut String, rows: &[&Summary]) {
    let _ = writeln!(
        out,
        "\n{:<6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6}",
        "thread",
        "median",
        "mode",
        "MAD",
        "stddev",
        "missed",
        "early",
        "minflt",
        "majflt",
        "dropped",
        "spikes",
        "exact"
    );
    for s in rows {
        let figures = if s.count == 0 {
            format!("{:>39}", "no samples")
        } else {
            format!(
                "{:>9} {:>9} {:>9.1} {:>9.1}",
                us_opt(s.median_ns),
                us_opt(s.mode_ns),
                s.mad_ns / 1000.0,
                s.stddev_ns / 1000.0
            )
        };
        let _ = writeln!(
            out,
            "{:<6} {figures} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6}",
            s.label,
            s.missed,
            s.early,
            s.minflt,
            s.majflt,
            s.dropped,
            s.spikes,
            if s.exact { "yes" } else { "no" }
        );
    }
}

/// The full text report of one run.
pub(crate) fn render(out: &mut String, name: &str, run: &Run, link: &LinkStats) {
    header(out, name, run, link);
    let (per, all) = summarize(run);
    let mut rows: Vec<&Summary> = per.iter().collect();
    rows.push(&all);
    table(out, &rows);
    timerlat(out, run);
    super::accounting::text(out, run);
    spikes(out, run);
    explained(out, run);
    out.push('\n');
}

/// The kernel's timerlat figures of each thread's CPU (protocol version
/// 6), if the run has them: per context its count, latencies and lost
/// entries, then per thread how the periods' entries paired.
pub(crate) fn timerlat(out: &mut String, run: &Run) {
    let rows = timerlat_summaries(run);
    if rows.is_empty() {
        if run.timerlat_mode() {
            let _ = writeln!(
                out,
                "\ntimerlat: no figures of the kernel's timerlat tracer arrived"
            );
        }
        return;
    }
    let _ = writeln!(
        out,
        "\ntimerlat (the kernel's latencies of every period: the timer's IRQ, the woken thread, its return to user space):"
    );
    let _ = write!(
        out,
        "{:<6} {:>4}  {:<9} {:>12} {:>9} {:>9}",
        "thread", "CPU", "context", "count", "min", "avg"
    );
    for (_, n) in TIMERLAT_QUANTILES {
        let _ = write!(out, " {n:>9}");
    }
    let _ = writeln!(out, " {:>10} {:>8} {:>6}  (µs)", "max", "lost", "exact");
    for t in &rows {
        for c in &t.contexts {
            let _ = write!(
                out,
                "{:<6} {:>4}  {:<9} {:>12}",
                t.label,
                or_dash(t.cpu),
                c.context,
                c.count
            );
            if c.count == 0 {
                let width = 20 + 10 * TIMERLAT_QUANTILES.len() + 11;
                let _ = write!(out, " {:>width$}", "no samples");
            } else {
                let _ = write!(out, " {:>9} {:>9}", us_opt(c.min_ns), avg_us(c.avg_ns));
                for (_, v) in &c.quantiles {
                    let _ = write!(out, " {:>9}", us_opt(*v));
                }
                let _ = write!(out, " {:>10}", us_opt(c.max_ns));
            }
            let _ = writeln!(
                out,
                " {:>8} {:>6}",
                c.lost,
                if c.exact { "yes" } else { "no" }
            );
        }
    }
    for t in &rows {
        let _ = writeln!(
            out,
            "{}: {} periods; {} paired IRQ and thread entries, {} with the IRQ latency above the thread's; {} entries lost, {} page(s) unreadable{}",
            t.label,
            t.periods,
            t.paired,
            t.inverted,
            t.lost,
            t.unreadable_pages,
            if t.last_report {
                String::new()
            } else {
                format!(" (as of report {}, not the final one)", t.epoch)
            }
        );
    }
}

/// The largest spike records of every thread, largest first.
pub(crate) fn spikes(out: &mut String, run: &Run) {
    let any = run.threads.iter().any(|t| !t.spikes.largest.is_empty());
    if any {
        let _ = writeln!(
            out,
            "\nspikes (largest first, up to {SPIKES_SHOWN} per thread):"
        );
        for (i, t) in run.threads.iter().enumerate() {
            for r in t.spikes.largest.iter().take(SPIKES_SHOWN) {
                let cpu = t
                    .info
                    .and_then(|i| i.cpu)
                    .map(|c| format!("CPU{c}"))
                    .unwrap_or_else(|| "CPU?".into());
                let _ = writeln!(
                    out,
                    "  spike {:>10} µs  T{i} {cpu}  cycle {}  @ {:.6} s{}{}",
                    us(r.latency_ns.max(0) as u64),
                    r.cycle,
                    r.deadline_ns as f64 / 1e9,
                    if r.missed > 0 {
                        format!("  missed {}", r.missed)
                    } else {
                        String::new()
                    },
                    if r.flags.brk { "  (break)" } else { "" }
                );
            }
            if t.spikes.total > t.spikes.largest.len() as u64 {
                let _ = writeln!(out, "  T{i}: {} spike records in all", t.spikes.total);
            }
        }
    }
}

/// Explained spikes: one line per spike, one per cause, and the run's
/// per-cause totals.
pub(crate) fn explained(out: &mut String, run: &Run) {
    let e = &run.explained;
    if e.total == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\nexplained spikes ({} in all, largest first, up to {}):",
        e.total,
        e.largest.len()
    );
    for a in &e.largest {
        attribution(out, a);
        let window = run
            .evidence
            .listed()
            .iter()
            .find(|l| l.head.cycle == a.cycle && l.head.cpu == a.cpu);
        if let Some(l) = window {
            let _ = writeln!(
                out,
                "      evidence: {}{}",
                l.name(),
                if l.complete { "" } else { " (incomplete)" }
            );
        }
    }
    evidence(out, run);
    let ranked = e.ranked();
    if let Some(top) = ranked.first() {
        let _ = writeln!(
            out,
            "causes over all explained spikes (most time first; top: {}):",
            top.label
        );
        for t in ranked.iter().take(12) {
            let _ = writeln!(
                out,
                "  {:<48} {:>12} µs  ×{:<6} in {} spikes",
                t.label,
                us(t.ns),
                t.count,
                t.spikes
            );
        }
    }
}

/// The spikes' evidence the stream carried (version 4), if any: how many
/// windows came whole, cut short or refused, and where a recorder wrote
/// them.
fn evidence(out: &mut String, run: &Run) {
    let ev = &run.evidence;
    let listed = ev.listed();
    if listed.is_empty() && ev.refused == 0 && ev.stray_parts == 0 {
        return;
    }
    let whole = listed.iter().filter(|l| l.complete).count();
    let _ = writeln!(
        out,
        "evidence in the stream: {whole} window(s) whole, {} not ({} refused: too large, too \
         many at once or over the memory budget; {} stray part(s); {} more not listed); a \
         recorder writes the whole ones beside the recording, in RECORDING.evidence/",
        listed.len() - whole,
        ev.refused,
        ev.stray_parts,
        ev.unlisted
    );
}

/// One explained spike as the reports print it: the `  spike N µs  CPUc
/// cycle k  @ t s` line, then a line per cause. `report` prints the
/// largest of a run's; `explain` the one of a trace.dat's window.
pub(crate) fn attribution(out: &mut String, a: &Attribution) {
    let _ = writeln!(
        out,
        "  spike {} µs  CPU{}  cycle {}  @ {:.6} s{}{}",
        us(a.latency_ns),
        a.cpu,
        a.cycle,
        a.deadline_ns as f64 / 1e9,
        if a.partial { "  (trace partial)" } else { "" },
        if a.coarse {
            "  (coarse: /proc/interrupts and /proc/softirqs counts over the report interval)"
        } else {
            ""
        }
    );
    for c in &a.causes {
        // Time the trace did not record or lost: a line of its own.
        if let Some(gap) = crate::aggregate::gap_line(c) {
            let _ = writeln!(out, "      {gap}");
            continue;
        }
        let label = crate::aggregate::cause_label(c);
        let count = if c.count > 1
            || matches!(
                c.kind(),
                CauseKind::Irq | CauseKind::Softirq | CauseKind::Vector
            ) {
            format!("  ×{}", c.count)
        } else {
            String::new()
        };
        if a.coarse {
            let _ = writeln!(out, "      {label}{count}");
        } else {
            let _ = writeln!(out, "      {label}{count}  {} µs", us(c.ns));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::session::Session;
    use crate::synth::{Synth, SynthConfig};

    /// A run whose threads took no samples shows "no samples", never
    /// quantiles, a mode or deviations of nothing.
    #[test]
    fn threads_without_samples_say_so() {
        let (bytes, _) = Synth::bytes(SynthConfig {
            samples_per_report: 0,
            ..SynthConfig::default()
        });
        let mut s = Session::new("empty");
        s.feed(&bytes);
        s.finish();
        let run = s.agg.runs.first().expect("a run");
        let mut out = String::new();
        super::render(&mut out, "empty", run, &s.link());
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("T0 ") || l.starts_with("all "))
            .collect();
        assert_eq!(rows.len(), 4, "{out}");
        for r in rows {
            assert!(r.contains("no samples"), "{r}\n{out}");
            assert!(!r.contains("NaN") && !r.contains(" 0.0 "), "{r}");
        }
    }
}
