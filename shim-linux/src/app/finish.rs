//! Step 4 of a run: the final summary in cyclictest's formats, latscope's
//! notes, `--json`, and the exit status.
//!
//! Every output gets what was measured even if another one fails: a
//! failed `--histfile` or `--json` write, or stream frames never
//! delivered, are said in one line each and make the status
//! [`EXIT_OUTPUT_LOST`] (unless the run failed).

use std::sync::atomic::Ordering;

use latscope_core::wire::{bounded, Body, Bye, ByeReason, Encoder, Level, LogLine};

use super::setup::Setup;
use super::start::Ended;
use crate::config::Config;
use crate::error::{Error, EXIT_FAILED, EXIT_OK, EXIT_OUTPUT_LOST};
use crate::link::Sink;
use crate::linux::clock::{monotonic_ns, realtime_s};
use crate::linux::{procfs, write_all};
use crate::output::text::{self, Row};
use crate::output::{self, json, Std};

/// Write the final outputs; the run's exit status (or the first error of a
/// measuring thread).
pub fn finish(cfg: &Config, s: &Setup, ended: &Ended) -> Result<i32, Error> {
    let loop_error = s.shared.iter().find_map(|t| t.take_error());
    let defects = s.control.defects.load(Ordering::SeqCst);
    let tids: Vec<i32> = s
        .shared
        .iter()
        .map(|t| t.tid.load(Ordering::SeqCst))
        .collect();
    let rows: Vec<Row<'_>> = ended
        .outcome
        .views
        .iter()
        .enumerate()
        .map(|(i, v)| v.row(i, &ended.effective[i], tids[i]))
        .collect();
    let mut failed = Vec::new();
    if let (Some(path), Some(fd)) = (&cfg.histfile, &s.files.histfile) {
        let h = histogram(cfg, &rows);
        if let Err(e) = write_all(fd, h.as_bytes()) {
            failed.push(Error::output(format!("--histfile {path}"), e));
        }
    }
    let summary = summary(cfg, s, ended, &rows, &tids);
    let _ = s.console.human.write(summary.as_bytes());
    notes(cfg, s, ended, defects);
    let lost = ended.outcome.frames_dropped > 0 || !failed.is_empty();
    let mut status = match (loop_error.is_some() || defects > 0, lost) {
        (true, _) => EXIT_FAILED,
        (false, true) => EXIT_OUTPUT_LOST,
        (false, false) => EXIT_OK,
    };
    if let Some(path) = &cfg.json {
        if let Err(e) = write_json(cfg, s, &rows, status, path) {
            failed.push(e);
        }
    }
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

/// The `-h`/`-H` histogram text.
fn histogram(cfg: &Config, rows: &[Row<'_>]) -> String {
    let mut h = String::with_capacity(cfg.hist_us as usize * (8 + 8 * rows.len()) + 1024);
    text::histogram(&mut h, rows, cfg.hist_us, cfg.hist_all);
    h
}

/// cyclictest's final text: the `T:` lines (unless a terminal shows them
/// already), latscope's `#` lines, the histogram (unless `--histfile`),
/// the `--spike` lines and the `-b` lines.
fn summary(cfg: &Config, s: &Setup, ended: &Ended, rows: &[Row<'_>], tids: &[i32]) -> String {
    let mut out = String::with_capacity(64 * 1024);
    if cfg.hist_us == 0 && !cfg.verbose && (cfg.quiet || !s.console.tty) {
        for r in rows {
            text::thread_line(&mut out, r, cfg.nsecs);
            out.push('\n');
        }
    }
    if !cfg.verbose {
        for r in rows {
            text::extra_line(&mut out, r);
        }
    }
    if cfg.hist_us > 0 && cfg.histfile.is_none() {
        out.push_str(&histogram(cfg, rows));
    }
    let views = &ended.outcome.views;
    if cfg.spike_us > 0 {
        let mut all: Vec<_> = views
            .iter()
            .flat_map(|v| v.spikes.iter().copied())
            .collect();
        all.sort_by_key(|s| s.deadline_ns.saturating_add(s.latency_ns));
        let total = views.iter().map(|v| v.spikes_total).sum();
        text::spikes(&mut out, &all, total, cfg.nsecs);
    }
    if let ByeReason::Break { thread, latency_ns } = ended.outcome.reason {
        let v = if cfg.nsecs {
            latency_ns
        } else {
            latency_ns / 1000
        };
        let bt = tids.get(thread as usize).copied().unwrap_or(0);
        text::break_lines(&mut out, tids, bt, v);
    }
    out
}

/// latscope's notes on standard error: self-check, degradations, frames
/// the stream could not deliver.
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
    let dropped = ended.outcome.frames_dropped;
    if dropped > 0 {
        let why = ended.outcome.loss_reason.as_deref().unwrap_or("unknown");
        output::note(&format!(
            "latscope: stream: {dropped} frame(s) never delivered: {why}"
        ));
    }
}

/// `--json PATH` (`-`: standard output).
fn write_json(
    cfg: &Config,
    s: &Setup,
    rows: &[Row<'_>],
    status: i32,
    path: &str,
) -> Result<(), Error> {
    let u = procfs::uname();
    let cpus: Vec<i64> = s
        .plans
        .iter()
        .zip(s.shared.iter())
        .map(|(p, t)| match p.cpu {
            Some(c) if !t.no_affinity.load(Ordering::SeqCst) => c as i64,
            _ => -1,
        })
        .collect();
    let doc = json::Doc {
        cmdline: &cfg.cmdline,
        start_s: s.start_s,
        end_s: realtime_s(),
        return_code: status,
        uname: &u,
        realtime: procfs::is_realtime(),
        nsecs: cfg.nsecs,
        hist_us: cfg.hist_us,
        cpus: &cpus,
    };
    let text = json::document(&doc, rows);
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
    }));
    sink.finish(monotonic_ns(), 1_000_000_000);
}
