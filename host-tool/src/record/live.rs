//! The live view: a table per target redrawn about once a second on a
//! terminal, or plain lines (one per thread and new report) otherwise.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use super::targets::{TargetView, ThreadView};
use crate::report::text::bye_text;
use crate::summary::{avg_us, or_dash, us, us_opt};

fn bar(elapsed_ns: u64, duration_ns: u64) -> String {
    const W: usize = 30;
    if duration_ns == 0 {
        return format!("{:.0} s elapsed (no set duration)", elapsed_ns as f64 / 1e9);
    }
    let frac = (elapsed_ns as f64 / duration_ns as f64).clamp(0.0, 1.0);
    let filled = (frac * W as f64).round() as usize;
    format!(
        "[{}{}] {:.0}/{:.0} s {:3.0}%",
        "#".repeat(filled),
        "-".repeat(W - filled),
        elapsed_ns as f64 / 1e9,
        duration_ns as f64 / 1e9,
        frac * 100.0
    )
}

fn link(v: &TargetView) -> String {
    let l = &v.link;
    let errs = l.crc_errors + l.oversize + l.malformed + l.unknown_version;
    let health = if errs == 0 && l.frames_lost == 0 {
        "ok"
    } else {
        "LOSSY"
    };
    format!(
        "link {health}: {} frames, {} CRC errors, {} lost, {} bytes skipped",
        l.frames, l.crc_errors, l.frames_lost, l.bytes_skipped
    )
}

/// The table of all targets, as lines.
pub(crate) fn table(views: &[TargetView]) -> String {
    let mut out = String::new();
    for v in views {
        let state = match (&v.bye, v.active) {
            (Some(b), _) => format!("ended: {}", bye_text(b)),
            (None, true) => "streaming".into(),
            (None, false) => "connection closed".into(),
        };
        let _ = writeln!(
            out,
            "{} ({}) {} | {}",
            if v.host.is_empty() { "?" } else { &v.host },
            v.name,
            bar(v.elapsed_ns, v.duration_ns),
            state
        );
        if !v.degraded.is_empty() {
            let _ = writeln!(out, "  DEGRADED: {} (--best-effort)", v.degraded.join(", "));
        }
        if !v.missing.is_empty() {
            let _ = writeln!(
                out,
                "  missing: {} (not on the target's kernel)",
                v.missing.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "  {:<4} {:>4} {:<9} {:>11} {:>8} {:>8} {:>8} {:>8} {:>10} {:>7} {:>7} {:>7}",
            "T",
            "CPU",
            "sched",
            "cycles",
            "min",
            "avg",
            "p99",
            "p99.9",
            "max",
            "missed",
            "faults",
            "dropped"
        );
        for t in &v.threads {
            let _ = writeln!(
                out,
                "  {:<4} {:>4} {:<9} {:>11} {:>8} {:>8} {:>8} {:>8} {:>10} {:>7} {:>7} {:>7}",
                t.index,
                or_dash(t.cpu),
                t.sched,
                t.cycles,
                us_opt(t.min_ns),
                avg_us(t.avg_ns),
                us_opt(t.p99_ns),
                us_opt(t.p999_ns),
                us(t.max_ns),
                t.missed,
                t.minflt + t.majflt,
                t.dropped
            );
        }
        let _ = writeln!(out, "  {}  (latencies in µs)", link(v));
        for w in v.warnings.iter().take(3) {
            let _ = writeln!(out, "  warning: {w}");
        }
    }
    out
}

/// One plain line for a thread.
pub(crate) fn line(v: &TargetView, t: &ThreadView) -> String {
    format!(
        "{} T{} cpu {} {} report {} cycles {} min {} avg {} p99 {} p99.9 {} max {} missed {} minflt {} majflt {} dropped {} | {}",
        if v.host.is_empty() { &v.name } else { &v.host },
        t.index,
        or_dash(t.cpu),
        t.sched,
        t.epoch,
        t.cycles,
        us_opt(t.min_ns),
        avg_us(t.avg_ns),
        us_opt(t.p99_ns),
        us_opt(t.p999_ns),
        us(t.max_ns),
        t.missed,
        t.minflt,
        t.majflt,
        t.dropped,
        link(v)
    )
}

/// Draws successive states of the board.
pub(crate) struct Live {
    tty: bool,
    drawn_lines: usize,
    seen: HashMap<(String, u16), u32>,
}

impl Live {
    /// A live view redrawing on a terminal (`tty`) or printing lines.
    pub(crate) fn new(tty: bool) -> Self {
        Live {
            tty,
            drawn_lines: 0,
            seen: HashMap::new(),
        }
    }

    /// Show the current views.
    pub(crate) fn draw(&mut self, views: &[TargetView], out: &mut dyn Write) {
        if self.tty {
            let text = table(views);
            let mut s = String::new();
            if self.drawn_lines > 0 {
                let _ = write!(s, "\x1b[{}A\x1b[J", self.drawn_lines);
            }
            s.push_str(&text);
            self.drawn_lines = text.lines().count();
            let _ = out.write_all(s.as_bytes());
        } else {
            for v in views {
                for t in &v.threads {
                    let key = (v.name.clone(), t.index);
                    if self.seen.get(&key) == Some(&t.epoch) {
                        continue;
                    }
                    self.seen.insert(key, t.epoch);
                    let _ = writeln!(out, "{}", line(v, t));
                }
            }
        }
        let _ = out.flush();
    }
}
