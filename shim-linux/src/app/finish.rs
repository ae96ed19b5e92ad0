//! Step 4 of a run: the final summary in cyclictest's formats, latscope's
//! notes, `--json`, and the exit status.

use std::sync::atomic::Ordering;

use latscope_core::wire::{bounded, Body, Bye, ByeReason, Encoder, Level, LogLine};

use super::setup::Setup;
use super::start::Ended;
use crate::config::Config;
use crate::error::{Error, EXIT_FAILED, EXIT_OK};
use crate::link::Sink;
use crate::linux::clock::{monotonic_ns, realtime_s};
use crate::linux::procfs;
use crate::output::text::{self, Row};
use crate::output::{json, Std};

/// Write the final outputs; the run's exit status (or the first error of a
/// measuring thread).
pub fn finish(cfg: &Config, s: &Setup, ended: &Ended) -> Result<i32, Error> {
    let loop_error = s.shared.iter().find_map(|t| t.take_error());
    let defects = s.control.defects.load(Ordering::SeqCst);
    let status = if loop_error.is_some() || defects > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    };
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
    let summary = summary(cfg, s, ended, &rows, &tids)?;
    s.console.human.write(summary.as_bytes());
    notes(cfg, s, ended, defects);
    if let Some(path) = &cfg.json {
        write_json(cfg, s, &rows, status, path)?;
    }
    match loop_error {
        Some(e) => Err(e),
        None => Ok(status),
    }
}

/// cyclictest's final text: the `T:` lines (unless a terminal shows them
/// already), latscope's `#` lines, the histogram (or `--histfile`), the
/// `--spike` lines and the `-b` lines.
fn summary(
    cfg: &Config,
    s: &Setup,
    ended: &Ended,
    rows: &[Row<'_>],
    tids: &[i32],
) -> Result<String, Error> {
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
    if cfg.hist_us > 0 {
        let mut h = String::with_capacity(cfg.hist_us as usize * (8 + 8 * rows.len()) + 1024);
        text::histogram(&mut h, rows, cfg.hist_us, cfg.hist_all);
        match &cfg.histfile {
            Some(path) => std::fs::write(path, h.as_bytes())
                .map_err(|e| Error::output(format!("--histfile {path}"), e))?,
            None => out.push_str(&h),
        }
    }
    let views = &ended.outcome.views;
    if cfg.spike_us > 0 {
        let mut all: Vec<_> = views
            .iter()
            .flat_map(|v| v.spikes.iter().copied())
            .collect();
        all.sort_by_key(|s| s.deadline_ns.saturating_add(s.latency_ns));
        // cyclictest lists the first --spike-nodes of all threads
        all.truncate(cfg.spike_nodes);
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
    Ok(out)
}

/// latscope's notes on standard error: self-check, degradations, frames
/// the stream could not deliver.
fn notes(cfg: &Config, s: &Setup, ended: &Ended, defects: u32) {
    if cfg.self_check {
        eprintln!(
            "# self-check: {defects} defect(s): process creation or exec {}",
            if defects == 0 {
                "never attempted"
            } else {
                "was attempted and refused"
            }
        );
    }
    let degraded: Vec<&str> = s
        .deg
        .warnings
        .iter()
        .filter_map(|w| w.strip_prefix("degraded: "))
        .collect();
    if !degraded.is_empty() {
        eprintln!("# degraded run: {}", degraded.join("; "));
    }
    for dev in &s.deg.missing_devices {
        eprintln!("# missing device: {dev} (not on this kernel)");
    }
    let dropped = ended.outcome.frames_dropped;
    if dropped > 0 {
        eprintln!("# stream: {dropped} frame(s) could not be delivered");
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
        wake: cfg.wake,
    };
    let text = json::document(&doc, rows);
    if path == "-" {
        Std::Out.write(text.as_bytes());
        Ok(())
    } else {
        std::fs::write(path, text.as_bytes())
            .map_err(|e| Error::output(format!("--json {path}"), e))
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
