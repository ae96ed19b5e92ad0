//! Step 4 of a run: the final summary in cyclictest's formats, latscope's
//! notes, `--json`, and the exit status.
//!
//! Every output gets what was measured even if another one fails: a
//! failed `--histfile` or `--json` write, stream frames never delivered,
//! or (over TCP) frames sent but not acknowledged by the end, are said in
//! one line each and make the status [`EXIT_OUTPUT_LOST`] (unless the run
//! failed): the target cannot say that its output arrived whole.

use std::sync::atomic::Ordering;

use latscope_core::cyclictest::{
    self, EndText, JsonDoc, Options, Thread, TimerlatContextJson, TimerlatCpuJson, TraceTotals,
    Uname, WindowTotals,
};
use latscope_core::decimal::Fixed;
use latscope_core::rtla;
use latscope_core::timerlat::Context;
use latscope_core::wire::{bounded, Body, Bye, ByeReason, Encoder, Level, LogLine};

use super::setup::Setup;
use super::start::Ended;
use crate::config::{Config, RtlaText};
use crate::error::{Error, EXIT_FAILED, EXIT_OK, EXIT_OUTPUT_LOST};
use crate::link::Sink;
use crate::linux::clock::monotonic_ns;
use crate::linux::tracefs::{trace_out, TimerlatCpu};
use crate::linux::{procfs, write_all};
use crate::output::{self, Std};

/// Write the final outputs; the run's exit status (or the first error of a
/// measuring thread).
pub fn finish(cfg: &Config, s: &Setup, ended: &Ended) -> Result<i32, Error> {
    let loop_error = s.shared.iter().find_map(|t| t.take_error());
    let defects = s.control.defects.load(Ordering::SeqCst);
    let evidence_lost = ended
        .outcome
        .evidence
        .as_ref()
        .map_or(0, |e| e.counts.lost());
    let mut status = match (
        loop_error.is_some() || defects > 0,
        ended.outcome.frames_dropped + ended.outcome.frames_unacknowledged + evidence_lost,
    ) {
        (true, _) => EXIT_FAILED,
        (false, 0) => EXIT_OK,
        (false, _) => EXIT_OUTPUT_LOST,
    };
    let threads: Vec<Thread<'_>> = ended
        .outcome
        .views
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let tid = s.shared[i].tid.load(Ordering::SeqCst);
            let node = s.nodes.get(i).copied().unwrap_or(-1);
            v.thread(i, &ended.effective[i], tid, node)
        })
        .collect();
    let opts = Options {
        layout: s.layout,
        hist_us: cfg.hist_us,
        hist_all: cfg.hist_all,
        nsecs: cfg.nsecs,
        hist_shape: cfg.hist_shape,
    };
    // the goals' verdicts decide the status --json gives too
    let goal_lines = match &cfg.slo {
        Some(goals) => {
            let complete = loop_error.is_none() && defects == 0;
            let (lines, goal_status) =
                super::slo::verdicts(goals, &ended.outcome.views, complete, status);
            status = goal_status;
            lines
        }
        None => String::new(),
    };
    let mut failed = Vec::new();
    // cyclictest writes --json before the end-of-run text
    if let Some(path) = &cfg.json {
        if let Err(e) = write_json(cfg, s, ended, (&threads, &opts), status, path) {
            failed.push(e);
        }
    }
    let mut summary = summary(cfg, s, ended, &threads, &opts, &mut failed);
    status = timerlat_end(cfg, s, ended, &mut summary, status);
    summary.push_str(&goal_lines);
    let _ = s.console.human.write(summary.as_bytes());
    notes(cfg, s, ended, defects);
    for e in &failed {
        output::note(&format!("latscope: {e}"));
    }
    if !failed.is_empty() && status == EXIT_OK {
        status = EXIT_OUTPUT_LOST;
    }
    match loop_error {
        Some(e) => Err(e),
        None => Ok(status),
    }
}

/// cyclictest's end-of-run text: the `T:` lines (with `-q`, or when no
/// terminal shows them already, and not with `-h`), latscope's `#` lines,
/// the `--spike` lines, the histogram (or `--histfile`, whose failure goes
/// to `failed`) and the `-b` lines.
fn summary(
    cfg: &Config,
    s: &Setup,
    ended: &Ended,
    threads: &[Thread<'_>],
    opts: &Options,
    failed: &mut Vec<Error>,
) -> String {
    let views = &ended.outcome.views;
    let mut spikes: Vec<_> = views
        .iter()
        .flat_map(|v| v.spikes.iter().copied())
        .collect();
    cyclictest::sort_spikes(&mut spikes);
    // cyclictest lists the first --spike-nodes of all threads
    spikes.truncate(cfg.spike_nodes);
    let total = views.iter().map(|v| v.spikes_total).sum();
    let broke = match ended.outcome.reason {
        ByeReason::Break { thread, latency_ns } => Some((thread, latency_ns)),
        _ => None,
    };
    let to_file = cfg.histfile.is_some();
    let end = EndText {
        threads,
        opts: Options {
            hist_us: if to_file { 0 } else { opts.hist_us },
            ..*opts
        },
        // Without -q the live view's last refresh shows them already.
        status_lines: cfg.hist_us == 0 && !cfg.verbose && cfg.quiet,
        extras: !cfg.verbose,
        spikes: (cfg.spike_us > 0).then_some((spikes.as_slice(), total)),
        break_armed: cfg.break_us > 0,
        broke,
    };
    let rows = if to_file { 0 } else { cfg.hist_us as usize };
    let mut out = String::with_capacity(4096 + rows * (8 + 8 * threads.len()));
    // a String takes every write
    let _ = cyclictest::end_text(&mut out, &end);
    if let (Some(path), Some(fd)) = (&cfg.histfile, &s.files.histfile) {
        let mut h = String::with_capacity(1024 + cfg.hist_us as usize * (8 + 8 * threads.len()));
        let _ = cyclictest::histogram(&mut h, threads, opts);
        if let Err(e) = write_all(fd, h.as_bytes()) {
            failed.push(Error::output(format!("--histfile {path}"), e));
        }
    }
    out
}

/// latscope's notes on standard error: self-check, degradations, frames
/// the stream could not deliver, frames it sent that were not
/// acknowledged.
fn notes(cfg: &Config, s: &Setup, ended: &Ended, defects: u32) {
    if cfg.self_check {
        output::note(&format!(
            "# self-check: {defects} defect(s): process creation or exec {}",
            if defects == 0 {
                "never attempted"
            } else {
                "was attempted and refused"
            }
        ));
    }
    let degraded: Vec<&str> = s
        .deg
        .warnings
        .iter()
        .filter_map(|w| w.strip_prefix("degraded: "))
        .collect();
    if !degraded.is_empty() {
        output::note(&format!("# degraded run: {}", degraded.join("; ")));
    }
    for dev in &s.deg.missing_devices {
        output::note(&format!("# missing device: {dev} (not on this kernel)"));
    }
    if let Some(t) = ended.outcome.spikes.filter(|t| t.spikes > 0) {
        output::note(&format!(
            "# spikes: {}: {} sent, {} explained ({} % coverage), {} aggregated, {} dropped",
            t.spikes,
            t.sent,
            t.explained,
            Fixed(t.coverage_pct(), 1),
            t.aggregated,
            t.dropped
        ));
    }
    if let Some(t) = ended.outcome.trace {
        output::note(&trace_line(&t));
    }
    if let Some(e) = &ended.outcome.evidence {
        output::note(&evidence_lines(e));
    }
    let dropped = ended.outcome.frames_dropped;
    if dropped > 0 {
        let why = ended.outcome.loss_reason.as_deref().unwrap_or("unknown");
        output::note(&format!(
            "latscope: stream: {dropped} frame(s) never delivered: {why}"
        ));
    }
    let unacked = ended.outcome.frames_unacknowledged;
    if unacked > 0 {
        output::note(&format!(
            "latscope: stream: {unacked} frame(s) sent but not acknowledged; \
             the recorder's report says whether it stored them"
        ));
    }
}

/// The column of `context` of a CPU's rtla columns (empty without them).
fn rtla_column(t: &TimerlatCpu, context: Context) -> rtla::Column<'_> {
    t.rtla.as_ref().map_or(rtla::Column::EMPTY, |r| {
        let (buckets, stats) = &r.cols[context.index()];
        rtla::Column {
            buckets,
            stats: *stats,
        }
    })
}

/// `--timerlat`'s end of a run: invoked as `rtla`, rtla's text on standard
/// output; each CPU's lines in `summary`; and the run's `status` with the
/// timerlat entries' verdict: entries the trace lost are measurement lost,
/// an IRQ latency above its thread's is a pairing the kernel rules out.
fn timerlat_end(
    cfg: &Config,
    s: &Setup,
    ended: &Ended,
    summary: &mut String,
    mut status: i32,
) -> i32 {
    let timerlat = &ended.outcome.timerlat;
    if let Some(text) = &cfg.rtla {
        let secs = ended.outcome.ended.unix_s.saturating_sub(s.started.unix_s);
        let out = rtla_text(text, timerlat, u64::try_from(secs).unwrap_or(0));
        // a failed standard output is counted there
        let _ = Std::Out.write(out.as_bytes());
    }
    for (cpu, t) in timerlat {
        summary.push_str(&timerlat_lines(*cpu, t));
        for (i, _) in s
            .plans
            .iter()
            .enumerate()
            .filter(|(_, p)| p.cpu == Some(*cpu))
        {
            let n = s.shared[i].unrecorded.load(Ordering::Relaxed);
            summary.push_str(&format!(
                "# timerlat T: {i} CPU {cpu}: {n} read(s) before the trace gave the kernel's \
                 grid, not recorded\n"
            ));
        }
    }
    if timerlat.iter().any(|(_, t)| t.pairing.inverted > 0) {
        status = EXIT_FAILED;
    } else if status == EXIT_OK
        && timerlat
            .iter()
            .any(|(_, t)| t.pairing.tally.iter().any(|c| c.lost > 0) || t.bad_pages > 0)
    {
        status = EXIT_OUTPUT_LOST;
    }
    status
}

/// Invoked as `rtla`: rtla 6.12's histogram text of the traced CPUs, in
/// ascending order, over `secs` seconds.
fn rtla_text(text: &RtlaText, timerlat: &[(usize, TimerlatCpu)], secs: u64) -> String {
    let mut sorted: Vec<&(usize, TimerlatCpu)> = timerlat.iter().collect();
    sorted.sort_by_key(|(cpu, _)| *cpu);
    let cpus: Vec<rtla::Cpu<'_>> = sorted
        .iter()
        .map(|(cpu, t)| rtla::Cpu {
            cpu: u32::try_from(*cpu).unwrap_or(u32::MAX),
            irq: rtla_column(t, Context::Irq),
            thread: rtla_column(t, Context::Thread),
            user: rtla_column(t, Context::UserRet),
        })
        .collect();
    let hist = rtla::Hist {
        cpus: &cpus,
        entries: text.shape.entries,
        bucket_size: text.shape.bucket_size,
        duration_s: secs,
    };
    let mut out = String::with_capacity(256 + text.shape.entries * (8 + 30 * cpus.len()));
    // a String takes every write
    let _ = rtla::histogram(&mut out, &hist, &text.options);
    out
}

/// The summary's lines on `--timerlat` of CPU `cpu`: its periods and how
/// they paired, then each context's latencies (µs) and the entries the
/// trace lost.
fn timerlat_lines(cpu: usize, t: &TimerlatCpu) -> String {
    let p = &t.pairing;
    let mut s = format!(
        "# timerlat CPU {cpu}: {} periods; {} paired IRQ and thread entries, {} with the IRQ \
         latency above the thread's; {} page(s) unreadable\n",
        p.periods(),
        p.paired,
        p.inverted,
        t.bad_pages
    );
    let us = |ns: u64| Fixed(ns as f64 / 1e3, 1);
    for c in Context::ALL {
        let h = t.hist(c).totals();
        let avg = h.sum.checked_div(h.count).unwrap_or(0);
        s.push_str(&format!(
            "# timerlat CPU {cpu} {:<8} count {} min {} avg {} max {} us; {} lost\n",
            c.label(),
            h.count,
            us(h.min().unwrap_or(0)),
            us(avg),
            us(h.max),
            p.tally[c.index()].lost
        ));
    }
    s
}

/// `--json`'s figures of one CPU of `--timerlat`.
fn timerlat_json(cpu: usize, t: &TimerlatCpu) -> TimerlatCpuJson<'_> {
    let ctx = |c: Context| {
        let h = t.hist(c);
        TimerlatContextJson {
            totals: *h.totals(),
            lost: t.pairing.tally[c.index()].lost,
            layout: *h.layout(),
            counts: h.counts(),
        }
    };
    TimerlatCpuJson {
        cpu: u32::try_from(cpu).unwrap_or(u32::MAX),
        periods: t.pairing.periods(),
        paired: t.pairing.paired,
        inverted: t.pairing.inverted,
        contexts: Context::ALL.map(ctx),
    }
}

/// The summary's line on the continuous trace of `--explain`.
fn trace_line(t: &TraceTotals) -> String {
    format!(
        "# trace: {} KiB kernel buffer and {} KiB history per CPU; {} events recorded, {} lost \
         by the kernel; {} pages read, {} dropped from the history; reader {} ms CPU; \
         wake-ups of {}; {} tracefs write(s) and {} read(s) failed",
        t.buffer_kb,
        t.history_kb,
        t.events,
        t.events_lost,
        t.pages_read,
        t.pages_dropped,
        Fixed(t.reader_cpu_ns as f64 / 1e6, 1),
        t.wakeups.name(),
        t.writes_failed,
        t.reads_failed
    )
}

/// Files listed by name in the summary; `--json` lists them all.
const EVIDENCE_LISTED: usize = 10;

/// The summary's lines on `--trace-out`: what was written and what not,
/// by reason, then the files (the first [`EVIDENCE_LISTED`]).
fn evidence_lines(e: &trace_out::Totals) -> String {
    let c = e.counts;
    let mut s = if e.dir.is_empty() {
        format!("# trace-out: {} window(s) over the limit", c.limit)
    } else {
        format!(
            "# trace-out: {} window(s) written to {} ({} bytes); {} not written: {} over the \
             limit, {} with the writer's queue full, {} with the disk full, {} failed",
            c.written,
            e.dir,
            c.bytes,
            c.not_written(),
            c.limit,
            c.queue_full,
            c.disk_full,
            c.failed
        )
    };
    if c.streamed + c.not_streamed > 0 {
        s += &format!(
            "; {} streamed whole, {} not (the line's outbox full, or the run ended first)",
            c.streamed, c.not_streamed
        );
    }
    for w in e.files.iter().take(EVIDENCE_LISTED) {
        s += &format!(
            "\n# trace-out: T:{} cycle {} {} us: {}",
            w.thread,
            w.cycle,
            w.latency_ns / 1000,
            w.name
        );
    }
    if e.files.len() > EVIDENCE_LISTED {
        s += &format!(
            "\n# trace-out: {} more file(s), listed in --json",
            e.files.len() - EVIDENCE_LISTED
        );
    }
    s
}

/// `--json PATH` (`-`: standard output).
fn write_json(
    cfg: &Config,
    s: &Setup,
    ended: &Ended,
    (threads, opts): (&[Thread<'_>], &Options),
    status: i32,
    path: &str,
) -> Result<(), Error> {
    let u = procfs::uname();
    let files = ended.outcome.evidence.as_ref().map(|e| {
        let names: Vec<&str> = e.files.iter().map(|w| w.name.as_str()).collect();
        (e, names)
    });
    let timerlat: Vec<TimerlatCpuJson<'_>> = ended
        .outcome
        .timerlat
        .iter()
        .map(|(cpu, t)| timerlat_json(*cpu, t))
        .collect();
    let doc = JsonDoc {
        cmdline: &cfg.cmdline,
        tool_version: env!("CARGO_PKG_VERSION"),
        start: s.started,
        end: ended.outcome.ended,
        return_code: status,
        uname: Uname {
            sysname: &u.sysname,
            nodename: &u.nodename,
            release: &u.release,
            version: &u.version,
            machine: &u.machine,
        },
        realtime: procfs::is_realtime(),
        wake: s.settings.wake,
        timerlat: &timerlat,
        spikes: ended.outcome.spikes,
        trace: ended.outcome.trace,
        windows: files.as_ref().map(|(e, names)| WindowTotals {
            dir: &e.dir,
            counts: e.counts,
            files: names,
        }),
    };
    let mut text = String::with_capacity(4096 + cfg.hist_us as usize * 24 * threads.len());
    // a String takes every write
    let _ = cyclictest::json(&mut text, &doc, threads, opts);
    let what = || format!("--json {path}");
    match (path, &s.files.json) {
        // a failed standard output is counted there
        ("-", _) => {
            let _ = Std::Out.write(text.as_bytes());
            Ok(())
        }
        (_, Some(fd)) => write_all(fd, text.as_bytes()).map_err(|e| Error::output(what(), e)),
        (_, None) => Err(Error::output(what(), "the file was not opened")),
    }
}

/// Without measuring threads, tell the stream why the run ended.
pub fn error_stream(sink: &mut Sink, e: &Error) {
    let mut enc = Encoder::new();
    let mut send = |b: Body| {
        let seq = enc.next_seq();
        if let Ok(bytes) = enc.frame(b) {
            sink.send(bytes, seq);
        }
    };
    send(Body::Log(LogLine {
        level: Level::Error,
        text: bounded(&e.to_string()),
    }));
    send(Body::Bye(Bye {
        reason: ByeReason::Error,
        epoch: 0,
        elapsed_ns: 0,
        threads: 0,
        cycles: 0,
        max_ns: 0,
        frames_dropped: 0,
        defects: 0,
        ended: None,
    }));
    sink.finish(monotonic_ns(), 1_000_000_000);
}
