//! The exposition of `/metrics`: the OpenMetrics text when the request's
//! `Accept` asks for it, the classic Prometheus text format (0.0.4)
//! otherwise.
//!
//! Every family (a target's, the listening recorder's, the server's) is
//! one row of [`FAMILIES`] with its [`Kind`], and its samples are written
//! by an exhaustive match on its enum: a family added without its samples
//! does not build, and the family test covers every row.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::super::http::Refusal;
use latscope_core::timerlat::Context;

use super::super::targets::{FleetStats, TargetView, ThreadView, TimerlatView};

/// The two text formats `/metrics` is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exposition {
    /// OpenMetrics 1.0.0: counter families named without `_total`,
    /// `# UNIT` lines, `# EOF` at the end.
    OpenMetrics,
    /// The classic Prometheus text format 0.0.4: every family named as its
    /// samples are, no units, no end marker.
    Text,
}

impl Exposition {
    /// The Content-Type of a response in this format.
    pub(super) fn content_type(self) -> &'static str {
        match self {
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Exposition::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// Its `format` label on `/metrics`.
    fn label(self) -> &'static str {
        match self {
            Exposition::OpenMetrics => "openmetrics",
            Exposition::Text => "text",
        }
    }

    /// The format an `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (version 1.0.0, 0.0.1 or none) with
    /// a quality above 0 and not below that of any text range (`text/plain`,
    /// `text/*`, `*/*`); the classic text otherwise, also without a header.
    pub(crate) fn negotiate(accept: &str) -> Exposition {
        let (mut om, mut text) = (0.0f64, 0.0f64);
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let (mut q, mut version_ok) = (1.0f64, true);
            for p in parts {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                match k.trim().to_ascii_lowercase().as_str() {
                    "q" => q = v.trim().parse().unwrap_or(0.0),
                    "version" => version_ok = matches!(v.trim(), "1.0.0" | "0.0.1"),
                    _ => {}
                }
            }
            match media.as_str() {
                "application/openmetrics-text" if version_ok => om = om.max(q),
                "text/plain" | "text/*" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if om > 0.0 && om >= text {
            Exposition::OpenMetrics
        } else {
            Exposition::Text
        }
    }
}

/// The `/metrics` server's own counters.
#[derive(Debug, Default)]
pub(crate) struct ServerStats {
    /// Scrapes answered, by format.
    served: [AtomicU64; 2],
    /// Connections closed without an answer, by [`Refusal`].
    refused: [AtomicU64; Refusal::ALL.len()],
}

impl ServerStats {
    pub(super) fn served(&self, f: Exposition) -> &AtomicU64 {
        match f {
            Exposition::OpenMetrics => &self.served[0],
            Exposition::Text => &self.served[1],
        }
    }

    pub(super) fn refused(&self, why: Refusal) -> &AtomicU64 {
        let i = Refusal::ALL.iter().position(|&w| w == why).unwrap_or(0);
        &self.refused[i]
    }
}

/// A family's OpenMetrics type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Summary,
}

impl Kind {
    /// Its word on a `# TYPE` line.
    const fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Summary => "summary",
        }
    }
}

/// A family's metadata lines: `name` is the family's OpenMetrics name; a
/// counter's classic name has `_total`.
fn meta(o: &mut String, x: Exposition, name: &str, kind: Kind, unit: Option<&str>, help: &str) {
    let total = if x == Exposition::Text && kind == Kind::Counter {
        "_total"
    } else {
        ""
    };
    let _ = writeln!(o, "# HELP {name}{total} {help}");
    let _ = writeln!(o, "# TYPE {name}{total} {}", kind.word());
    if let (Exposition::OpenMetrics, Some(unit)) = (x, unit) {
        let _ = writeln!(o, "# UNIT {name} {unit}");
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn secs(ns: u64) -> String {
    format!("{:e}", ns as f64 / 1e9)
}

/// The labels of a target's series: board name, run id, peer address and
/// host name. Board and run tell every run apart, also boards that share
/// a name.
fn labels(v: &TargetView) -> String {
    let board = if v.id.board.is_empty() {
        &v.name
    } else {
        &v.id.board
    };
    format!(
        "board=\"{}\",run=\"{}\",peer=\"{}\",host=\"{}\"",
        escape(board),
        escape(&v.id.run),
        escape(&v.id.peer),
        escape(&v.host)
    )
}

/// A family of series: a target's (one of the run's, or one per thread),
/// the listening recorder's, or the `/metrics` server's. Each variant is
/// made only in [`FAMILIES`] (so one missing there is dead code), and each
/// is matched exhaustively where its samples are written (so one without
/// samples does not build).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Series of one measuring thread.
    Thread(ThreadFamily),
    /// Series of one measuring thread's timerlat figures (protocol
    /// version 6): only for threads that have them, and the family only
    /// when one has.
    Timerlat(TimerlatFamily),
    /// Series of the run as a whole.
    Run(RunFamily),
    /// The listening recorder's own series.
    Recorder(RecorderFamily),
    /// The `/metrics` server's own series.
    Server(ServerFamily),
}

/// The listening recorder's families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecorderFamily {
    Connections,
    ConnectionsAccepted,
    ConnectionsRefused,
    RunsEnded,
    MemoryBytes,
    MemoryLimit,
    MemoryRefused,
    WriteErrors,
}

/// The `/metrics` server's families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerFamily {
    Scrapes,
    Refused,
}

/// The families with one series (or several) per measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ThreadFamily {
    Cycles,
    Latency,
    LatencyMax,
    MissedPeriods,
    PageFaults,
    DroppedRecords,
}

/// The families of a thread's timerlat figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimerlatFamily {
    Latency,
    LatencyMax,
    LostEntries,
    Periods,
    Paired,
    Inverted,
}

/// The families with one series (or several) per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunFamily {
    LinkFrames,
    LinkErrors,
    LinkBytesSkipped,
    Connected,
    Elapsed,
    Ended,
    Degraded,
}

/// One family's metadata.
struct FamilySpec {
    family: Family,
    name: &'static str,
    /// Its OpenMetrics type.
    kind: Kind,
    /// Its `# UNIT` line, if it has one.
    unit: Option<&'static str>,
    help: &'static str,
}

const fn thread(
    f: ThreadFamily,
    name: &'static str,
    kind: Kind,
    unit: Option<&'static str>,
    help: &'static str,
) -> FamilySpec {
    FamilySpec {
        family: Family::Thread(f),
        name,
        kind,
        unit,
        help,
    }
}

const fn timerlat(
    f: TimerlatFamily,
    name: &'static str,
    kind: Kind,
    unit: Option<&'static str>,
    help: &'static str,
) -> FamilySpec {
    FamilySpec {
        family: Family::Timerlat(f),
        name,
        kind,
        unit,
        help,
    }
}

const fn run(f: RunFamily, name: &'static str, kind: Kind, help: &'static str) -> FamilySpec {
    FamilySpec {
        family: Family::Run(f),
        name,
        kind,
        unit: None,
        help,
    }
}

const fn recorder(
    f: RecorderFamily,
    name: &'static str,
    kind: Kind,
    help: &'static str,
) -> FamilySpec {
    FamilySpec {
        family: Family::Recorder(f),
        name,
        kind,
        unit: None,
        help,
    }
}

const fn server(f: ServerFamily, name: &'static str, kind: Kind, help: &'static str) -> FamilySpec {
    FamilySpec {
        family: Family::Server(f),
        name,
        kind,
        unit: None,
        help,
    }
}

/// Every family, in the order of the exposition: the targets', then the
/// recorder's (when it listens), then the server's (when it serves).
const FAMILIES: [FamilySpec; 29] = [
    thread(
        ThreadFamily::Cycles,
        "latscope_cycles",
        Kind::Counter,
        None,
        "Wake-ups measured.",
    ),
    thread(
        ThreadFamily::Latency,
        "latscope_latency_seconds",
        Kind::Summary,
        Some("seconds"),
        "Wake-up latency: count, sum and quantiles (bucket upper edges).",
    ),
    thread(
        ThreadFamily::LatencyMax,
        "latscope_latency_max_seconds",
        Kind::Gauge,
        Some("seconds"),
        "Largest latency, exact.",
    ),
    thread(
        ThreadFamily::MissedPeriods,
        "latscope_missed_periods",
        Kind::Counter,
        None,
        "Periods missed by late wake-ups.",
    ),
    thread(
        ThreadFamily::PageFaults,
        "latscope_page_faults",
        Kind::Counter,
        None,
        "Page faults of the measuring thread.",
    ),
    thread(
        ThreadFamily::DroppedRecords,
        "latscope_dropped_records",
        Kind::Counter,
        None,
        "Spike records the target could not queue.",
    ),
    timerlat(
        TimerlatFamily::Latency,
        "latscope_timerlat_latency_seconds",
        Kind::Summary,
        Some("seconds"),
        "The kernel's timerlat latency of every period on the thread's CPU, by context (irq: the timer's IRQ, thread: the woken thread, user-ret: its return to user space): count, sum and quantiles (bucket upper edges).",
    ),
    timerlat(
        TimerlatFamily::LatencyMax,
        "latscope_timerlat_latency_max_seconds",
        Kind::Gauge,
        Some("seconds"),
        "Largest timerlat latency by context, exact.",
    ),
    timerlat(
        TimerlatFamily::LostEntries,
        "latscope_timerlat_lost_entries",
        Kind::Counter,
        None,
        "Timerlat entries the target's trace lost, by context.",
    ),
    timerlat(
        TimerlatFamily::Periods,
        "latscope_timerlat_periods",
        Kind::Counter,
        None,
        "Timerlat periods of the thread's CPU, read or lost.",
    ),
    timerlat(
        TimerlatFamily::Paired,
        "latscope_timerlat_paired",
        Kind::Counter,
        None,
        "Timerlat periods whose IRQ and thread entries were both read.",
    ),
    timerlat(
        TimerlatFamily::Inverted,
        "latscope_timerlat_inverted",
        Kind::Counter,
        None,
        "Paired timerlat periods with the IRQ latency above the thread's: a defect.",
    ),
    run(
        RunFamily::LinkFrames,
        "latscope_link_frames",
        Kind::Counter,
        "Good frames received.",
    ),
    run(
        RunFamily::LinkErrors,
        "latscope_link_errors",
        Kind::Counter,
        "Frames rejected or lost on the link.",
    ),
    run(
        RunFamily::LinkBytesSkipped,
        "latscope_link_bytes_skipped",
        Kind::Counter,
        "Bytes not part of a good frame.",
    ),
    run(
        RunFamily::Connected,
        "latscope_connected",
        Kind::Gauge,
        "Whether the target's connection is open.",
    ),
    run(
        RunFamily::Elapsed,
        "latscope_elapsed_seconds",
        Kind::Gauge,
        "Run time of the target.",
    ),
    run(
        RunFamily::Ended,
        "latscope_ended",
        Kind::Gauge,
        "Whether the run has ended (its figures are final); shown until the linger passes.",
    ),
    run(
        RunFamily::Degraded,
        "latscope_degraded",
        Kind::Gauge,
        "Whether the run degraded its real-time settings (--best-effort).",
    ),
    recorder(
        RecorderFamily::Connections,
        "latscope_connections",
        Kind::Gauge,
        "Target connections open.",
    ),
    recorder(
        RecorderFamily::ConnectionsAccepted,
        "latscope_connections_accepted",
        Kind::Counter,
        "Target connections accepted.",
    ),
    recorder(
        RecorderFamily::ConnectionsRefused,
        "latscope_connections_refused",
        Kind::Counter,
        "Connections closed at once: over --max-connections (cap), outside --allow (allow), or without a hello in time (no_hello).",
    ),
    recorder(
        RecorderFamily::RunsEnded,
        "latscope_runs_ended",
        Kind::Counter,
        "Runs that ended: with a bye, timed out, or interrupted by the recorder stopping.",
    ),
    recorder(
        RecorderFamily::MemoryBytes,
        "latscope_recorder_memory_bytes",
        Kind::Gauge,
        "What the decoding of the runs in progress holds, of the recorder's memory budget.",
    ),
    recorder(
        RecorderFamily::MemoryLimit,
        "latscope_recorder_memory_limit_bytes",
        Kind::Gauge,
        "The recorder's memory budget for all connections.",
    ),
    recorder(
        RecorderFamily::MemoryRefused,
        "latscope_recorder_memory_refused",
        Kind::Counter,
        "Runs, threads or histogram pages refused because a connection's or the recorder's memory budget was used up.",
    ),
    recorder(
        RecorderFamily::WriteErrors,
        "latscope_recorder_write_errors",
        Kind::Counter,
        "Writes or syncs of a recording that failed (a full disk, EIO): nothing was acknowledged past them.",
    ),
    server(
        ServerFamily::Scrapes,
        "latscope_metrics_scrapes",
        Kind::Counter,
        "Requests for /metrics answered, by the format served (openmetrics, or the classic text).",
    ),
    server(
        ServerFamily::Refused,
        "latscope_metrics_refused",
        Kind::Counter,
        "Connections to the metrics server closed without an answer: outside --metrics-allow (allow), a request over 8 KiB (size), not complete within 2 s (deadline), the oldest of too many pending (crowded), or every worker busy (busy).",
    ),
];

/// The exposition of all targets in format `x` (and, listening, the
/// recorder's own counters; serving, the server's), into `o`.
pub(crate) fn exposition(
    o: &mut String,
    x: Exposition,
    views: &[&TargetView],
    fleet: Option<&FleetStats>,
    server: Option<&ServerStats>,
) {
    o.clear();
    let run_labels: Vec<String> = views.iter().map(|v| labels(v)).collect();
    let thread_labels: Vec<Vec<String>> = views
        .iter()
        .zip(&run_labels)
        .map(|(v, tl)| {
            v.threads
                .iter()
                .map(|t| {
                    let cpu = t.cpu.map(|c| c.to_string()).unwrap_or_default();
                    format!("{tl},thread=\"{}\",cpu=\"{cpu}\"", t.index)
                })
                .collect()
        })
        .collect();
    for spec in &FAMILIES {
        let name = spec.name;
        match spec.family {
            Family::Run(f) => {
                meta(o, x, name, spec.kind, spec.unit, spec.help);
                for (v, tl) in views.iter().zip(&run_labels) {
                    run_family(o, f, name, tl, v);
                }
            }
            Family::Thread(f) => {
                meta(o, x, name, spec.kind, spec.unit, spec.help);
                for (v, tls) in views.iter().zip(&thread_labels) {
                    for (t, l) in v.threads.iter().zip(tls) {
                        thread_family(o, f, name, l, t);
                    }
                }
            }
            Family::Timerlat(f) => {
                let any = views
                    .iter()
                    .any(|v| v.threads.iter().any(|t| t.timerlat.is_some()));
                if any {
                    meta(o, x, name, spec.kind, spec.unit, spec.help);
                }
                for (v, tls) in views.iter().zip(&thread_labels) {
                    for (t, l) in v.threads.iter().zip(tls) {
                        if let Some(tv) = &t.timerlat {
                            timerlat_family(o, f, name, l, tv);
                        }
                    }
                }
            }
            Family::Recorder(f) => {
                if let Some(st) = fleet {
                    meta(o, x, name, spec.kind, spec.unit, spec.help);
                    recorder_family(o, f, name, st);
                }
            }
            Family::Server(f) => {
                if let Some(st) = server {
                    meta(o, x, name, spec.kind, spec.unit, spec.help);
                    server_family(o, f, name, st);
                }
            }
        }
    }
    if x == Exposition::OpenMetrics {
        o.push_str("# EOF\n");
    }
}

/// The series of run family `f` (named `name`), labelled `tl`.
fn run_family(o: &mut String, f: RunFamily, name: &str, tl: &str, v: &TargetView) {
    let l = &v.link;
    let _ = match f {
        RunFamily::LinkFrames => writeln!(o, "{name}_total{{{tl}}} {}", l.frames),
        RunFamily::LinkErrors => {
            for (kind, n) in [
                ("crc", l.crc_errors),
                ("oversize", l.oversize),
                ("version", l.unknown_version),
                ("malformed", l.malformed),
                ("lost", l.frames_lost),
            ] {
                let _ = writeln!(o, "{name}_total{{{tl},kind=\"{kind}\"}} {n}");
            }
            Ok(())
        }
        RunFamily::LinkBytesSkipped => writeln!(o, "{name}_total{{{tl}}} {}", l.bytes_skipped),
        RunFamily::Connected => writeln!(o, "{name}{{{tl}}} {}", u8::from(v.active)),
        RunFamily::Elapsed => writeln!(o, "{name}{{{tl}}} {}", secs(v.elapsed_ns)),
        RunFamily::Ended => writeln!(o, "{name}{{{tl}}} {}", u8::from(v.finished)),
        RunFamily::Degraded => writeln!(o, "{name}{{{tl}}} {}", u8::from(!v.degraded.is_empty())),
    };
}

/// The series of thread family `f` (named `name`) of one thread, labelled
/// `l`.
fn thread_family(o: &mut String, f: ThreadFamily, name: &str, l: &str, t: &ThreadView) {
    let _ = match f {
        ThreadFamily::Cycles => writeln!(o, "{name}_total{{{l}}} {}", t.cycles),
        ThreadFamily::Latency => {
            for (q, val) in [("0.99", t.p99_ns), ("0.999", t.p999_ns)] {
                if let Some(val) = val {
                    let _ = writeln!(o, "{name}{{{l},quantile=\"{q}\"}} {}", secs(val));
                }
            }
            let _ = writeln!(o, "{name}_sum{{{l}}} {}", secs(t.sum_ns));
            writeln!(o, "{name}_count{{{l}}} {}", t.count)
        }
        ThreadFamily::LatencyMax => writeln!(o, "{name}{{{l}}} {}", secs(t.max_ns)),
        ThreadFamily::MissedPeriods => writeln!(o, "{name}_total{{{l}}} {}", t.missed),
        ThreadFamily::PageFaults => {
            let _ = writeln!(o, "{name}_total{{{l},kind=\"minor\"}} {}", t.minflt);
            writeln!(o, "{name}_total{{{l},kind=\"major\"}} {}", t.majflt)
        }
        ThreadFamily::DroppedRecords => writeln!(o, "{name}_total{{{l}}} {}", t.dropped),
    };
}

/// The series of timerlat family `f` (named `name`) of one thread's
/// timerlat figures, labelled `l` (and by context where they have one).
fn timerlat_family(o: &mut String, f: TimerlatFamily, name: &str, l: &str, tv: &TimerlatView) {
    let contexts = Context::ALL.iter().zip(&tv.contexts);
    let _ = match f {
        TimerlatFamily::Latency => {
            for (c, cv) in contexts {
                let cl = format!("{l},context=\"{}\"", c.label());
                for (q, val) in [("0.99", cv.p99_ns), ("0.999", cv.p999_ns)] {
                    if let Some(val) = val {
                        let _ = writeln!(o, "{name}{{{cl},quantile=\"{q}\"}} {}", secs(val));
                    }
                }
                let _ = writeln!(o, "{name}_sum{{{cl}}} {}", secs(cv.sum_ns));
                let _ = writeln!(o, "{name}_count{{{cl}}} {}", cv.count);
            }
            Ok(())
        }
        TimerlatFamily::LatencyMax => {
            for (c, cv) in contexts {
                let _ = writeln!(
                    o,
                    "{name}{{{l},context=\"{}\"}} {}",
                    c.label(),
                    secs(cv.max_ns)
                );
            }
            Ok(())
        }
        TimerlatFamily::LostEntries => {
            for (c, cv) in contexts {
                let _ = writeln!(
                    o,
                    "{name}_total{{{l},context=\"{}\"}} {}",
                    c.label(),
                    cv.lost
                );
            }
            Ok(())
        }
        TimerlatFamily::Periods => writeln!(o, "{name}_total{{{l}}} {}", tv.periods),
        TimerlatFamily::Paired => writeln!(o, "{name}_total{{{l}}} {}", tv.paired),
        TimerlatFamily::Inverted => writeln!(o, "{name}_total{{{l}}} {}", tv.inverted),
    };
}

/// The series of the listening recorder's family `f` (named `name`).
fn recorder_family(o: &mut String, f: RecorderFamily, name: &str, st: &FleetStats) {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let _ = match f {
        RecorderFamily::Connections => writeln!(o, "{name} {}", get(&st.open)),
        RecorderFamily::ConnectionsAccepted => writeln!(o, "{name}_total {}", get(&st.accepted)),
        RecorderFamily::ConnectionsRefused => {
            for (why, c) in [
                ("cap", &st.refused_cap),
                ("allow", &st.refused_allow),
                ("no_hello", &st.no_hello),
            ] {
                let _ = writeln!(o, "{name}_total{{why=\"{why}\"}} {}", get(c));
            }
            Ok(())
        }
        RecorderFamily::RunsEnded => {
            for (how, c) in [
                ("bye", &st.runs_bye),
                ("timeout", &st.runs_timed_out),
                ("interrupted", &st.runs_interrupted),
            ] {
                let _ = writeln!(o, "{name}_total{{how=\"{how}\"}} {}", get(c));
            }
            Ok(())
        }
        RecorderFamily::MemoryBytes => writeln!(o, "{name} {}", get(&st.memory)),
        RecorderFamily::MemoryLimit => {
            writeln!(o, "{name} {}", crate::budget::GLOBAL_LIMIT as u64)
        }
        RecorderFamily::MemoryRefused => writeln!(o, "{name}_total {}", get(&st.memory_refused)),
        RecorderFamily::WriteErrors => writeln!(o, "{name}_total {}", get(&st.write_errors)),
    };
}

/// The series of the `/metrics` server's family `f` (named `name`).
fn server_family(o: &mut String, f: ServerFamily, name: &str, st: &ServerStats) {
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    match f {
        ServerFamily::Scrapes => {
            for x in [Exposition::OpenMetrics, Exposition::Text] {
                let _ = writeln!(
                    o,
                    "{name}_total{{format=\"{}\"}} {}",
                    x.label(),
                    get(st.served(x))
                );
            }
        }
        ServerFamily::Refused => {
            for why in Refusal::ALL {
                let _ = writeln!(
                    o,
                    "{name}_total{{why=\"{}\"}} {}",
                    why.label(),
                    get(st.refused(why))
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::targets::{Identity, ThreadView, TimerlatContextView};
    use latscope_core::wire::LinkStats;

    fn view(board: &str, run: &str) -> TargetView {
        TargetView {
            name: "rec.lsr".into(),
            id: Identity {
                board: board.into(),
                run: run.into(),
                peer: "10.0.0.7".into(),
            },
            host: "vm".into(),
            active: true,
            threads: vec![ThreadView {
                index: 0,
                cpu: Some(1),
                count: 5,
                max_ns: 1_500,
                p99_ns: Some(1_000),
                ..ThreadView::default()
            }],
            ..TargetView::default()
        }
    }

    /// Two runs, every figure set and distinct, two threads each, and the
    /// counters of a listening recorder.
    fn populated() -> (Vec<TargetView>, FleetStats) {
        let mut views = vec![view("a", "0a"), view("b", "0b")];
        for (k, v) in views.iter_mut().enumerate() {
            let k = k as u64 * 100;
            v.finished = k > 0;
            v.elapsed_ns = 7_000_000_000 + k;
            v.degraded = vec!["policy"];
            v.link = LinkStats {
                frames: 11 + k,
                crc_errors: 12 + k,
                oversize: 13 + k,
                unknown_version: 14 + k,
                malformed: 15 + k,
                frames_lost: 16 + k,
                bytes_skipped: 17 + k,
                ..LinkStats::default()
            };
            let second = ThreadView {
                index: 1,
                cpu: None,
                cycles: 21 + k,
                count: 22 + k,
                sum_ns: 23_000 + k,
                p99_ns: Some(24_000 + k),
                p999_ns: Some(25_000 + k),
                max_ns: 26_000 + k,
                missed: 27 + k,
                minflt: 28 + k,
                majflt: 29 + k,
                dropped: 30 + k,
                timerlat: Some(TimerlatView {
                    contexts: [31, 32, 33].map(|n| TimerlatContextView {
                        count: n + k,
                        sum_ns: 1_000 * (n + k),
                        p99_ns: Some(900 + k),
                        p999_ns: Some(950 + k),
                        max_ns: 990 + k,
                        lost: n,
                    }),
                    periods: 34 + k,
                    paired: 35 + k,
                    inverted: 36 + k,
                }),
                ..ThreadView::default()
            };
            v.threads.push(second);
        }
        let st = FleetStats::default();
        for c in [
            &st.open,
            &st.accepted,
            &st.refused_cap,
            &st.runs_bye,
            &st.memory,
        ] {
            FleetStats::bump(c);
        }
        (views, st)
    }

    /// Every family of [`FAMILIES`] writes its own samples: for each run
    /// (run families), each thread (thread families), or each of its label
    /// values (the recorder's and the server's), at least one line under
    /// its header, each line its own name's.
    #[test]
    fn every_family_yields_its_samples() {
        let (views, st) = populated();
        let refs: Vec<&TargetView> = views.iter().collect();
        let server = ServerStats::default();
        let mut o = String::new();
        exposition(
            &mut o,
            Exposition::OpenMetrics,
            &refs,
            Some(&st),
            Some(&server),
        );
        let mut blocks = o.split("# TYPE ").skip(1);
        for spec in &FAMILIES {
            let block = blocks
                .next()
                .unwrap_or_else(|| panic!("{}: no header", spec.name));
            assert!(
                block.starts_with(&format!("{} ", spec.name)),
                "{}: {block}",
                spec.name
            );
            let samples: Vec<&str> = block
                .lines()
                .filter(|l| !l.starts_with('#'))
                .skip(1)
                .collect();
            let per = match spec.family {
                Family::Thread(_) => views.iter().map(|v| v.threads.len()).sum(),
                // only the second thread of each has timerlat figures
                Family::Timerlat(_) => views.len(),
                Family::Run(_) => views.len(),
                Family::Recorder(
                    RecorderFamily::ConnectionsRefused | RecorderFamily::RunsEnded,
                ) => 3,
                Family::Recorder(_) => 1,
                Family::Server(ServerFamily::Scrapes) => 2,
                Family::Server(ServerFamily::Refused) => Refusal::ALL.len(),
            };
            let owners: std::collections::BTreeSet<&str> = samples
                .iter()
                .map(|l| l.split_once('}').map_or(*l, |(k, _)| k))
                .map(|k| k.split(",kind=").next().unwrap_or(k))
                .map(|k| k.split(",context=").next().unwrap_or(k))
                .map(|k| k.split(",quantile=").next().unwrap_or(k))
                .map(|k| k.split_once('{').map_or(k, |(_, labels)| labels))
                .collect();
            assert_eq!(
                owners.len(),
                per,
                "{}: one series set each:\n{block}",
                spec.name
            );
            for l in &samples {
                assert!(l.starts_with(spec.name), "{}: {l}", spec.name);
            }
        }
        assert_eq!(blocks.next(), None, "a family not in FAMILIES:\n{o}");
    }

    #[test]
    fn boards_sharing_a_name_stay_apart_by_run_and_labels_are_escaped() {
        let (a, b) = (
            view("lab\"7", "00000000000000aa"),
            view("lab\"7", "00000000000000bb"),
        );
        let st = FleetStats::default();
        FleetStats::bump(&st.runs_timed_out);
        let mut o = String::new();
        exposition(&mut o, Exposition::OpenMetrics, &[&a, &b], Some(&st), None);
        for run in ["aa", "bb"] {
            let want = format!(
                "latscope_latency_max_seconds{{board=\"lab\\\"7\",run=\"00000000000000{run}\",\
                 peer=\"10.0.0.7\",host=\"vm\",thread=\"0\",cpu=\"1\"}} 1.5e-6\n"
            );
            assert!(o.contains(&want), "{want} in\n{o}");
        }
        assert!(
            o.contains("latscope_runs_ended_total{how=\"timeout\"} 1\n"),
            "{o}"
        );
        assert!(o.contains("latscope_latency_seconds_count{board="), "{o}");
        assert!(o.ends_with("# EOF\n"));
        // Without a listening recorder there are no fleet counters.
        exposition(&mut o, Exposition::OpenMetrics, &[&a], None, None);
        assert!(!o.contains("latscope_connections"), "{o}");
    }

    /// Runs without timerlat figures have no timerlat families at all
    /// (their exposition is as before version 6); a thread with them has
    /// its series by context.
    #[test]
    fn timerlat_families_only_where_a_thread_has_them() {
        let plain = view("a", "0a");
        let mut o = String::new();
        exposition(&mut o, Exposition::OpenMetrics, &[&plain], None, None);
        assert!(!o.contains("timerlat"), "{o}");
        let (views, _) = populated();
        exposition(&mut o, Exposition::Text, &[&views[0]], None, None);
        for want in [
            "# TYPE latscope_timerlat_lost_entries_total counter\n",
            "latscope_timerlat_latency_seconds_count{board=\"a\",run=\"0a\",peer=\"10.0.0.7\",\
             host=\"vm\",thread=\"1\",cpu=\"\",context=\"user-ret\"} 33\n",
            "latscope_timerlat_latency_seconds{board=\"a\",run=\"0a\",peer=\"10.0.0.7\",\
             host=\"vm\",thread=\"1\",cpu=\"\",context=\"irq\",quantile=\"0.999\"} 9.5e-7\n",
            "latscope_timerlat_inverted_total{board=\"a\",run=\"0a\",peer=\"10.0.0.7\",\
             host=\"vm\",thread=\"1\",cpu=\"\"} 36\n",
        ] {
            assert!(o.contains(want), "{want} in\n{o}");
        }
        // thread 0 has none
        assert!(!o.contains("timerlat_periods_total{board=\"a\",run=\"0a\",peer=\"10.0.0.7\",host=\"vm\",thread=\"0\""));
    }

    #[test]
    fn accept_headers_choose_the_format() {
        use Exposition::{OpenMetrics, Text};
        // Prometheus 2.x and 3.x, then others
        for (accept, want) in [
            (
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                 version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                OpenMetrics,
            ),
            (
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
                 encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,\
                 text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
                OpenMetrics,
            ),
            ("application/openmetrics-text", OpenMetrics),
            ("Application/OpenMetrics-Text; Version=1.0.0", OpenMetrics),
            ("", Text),
            ("*/*", Text),
            ("text/plain;version=0.0.4", Text),
            ("application/openmetrics-text;q=0", Text),
            ("application/openmetrics-text;version=2.0.0", Text),
            ("text/plain,application/openmetrics-text;q=0.5", Text),
            ("application/json", Text),
        ] {
            assert_eq!(Exposition::negotiate(accept), want, "{accept}");
        }
    }

    /// The classic text names a counter's family as its samples, has no
    /// units and no end marker; OpenMetrics has them. Both name every
    /// sample the same.
    #[test]
    fn the_two_formats_differ_only_in_their_metadata() {
        let (views, st) = populated();
        let refs: Vec<&TargetView> = views.iter().collect();
        let server = ServerStats::default();
        let (mut om, mut text) = (String::new(), String::new());
        exposition(
            &mut om,
            Exposition::OpenMetrics,
            &refs,
            Some(&st),
            Some(&server),
        );
        exposition(&mut text, Exposition::Text, &refs, Some(&st), Some(&server));
        assert!(om.contains("# TYPE latscope_cycles counter\n"), "{om}");
        assert!(om.contains("# UNIT latscope_latency_seconds seconds\n"));
        assert!(om.ends_with("# EOF\n"));
        assert!(
            text.contains("# TYPE latscope_cycles_total counter\n"),
            "{text}"
        );
        assert!(text.contains("# HELP latscope_metrics_refused_total "));
        assert!(
            !text.contains("# UNIT") && !text.contains("# EOF"),
            "{text}"
        );
        let samples = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| !l.starts_with('#'))
                .map(String::from)
                .collect()
        };
        assert_eq!(samples(&om), samples(&text));
        // every sample's family is declared, in the classic text by its
        // own name (or its summary's)
        let declared: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        for l in samples(&text) {
            let name = l.split(['{', ' ']).next().unwrap_or("");
            let base = name
                .strip_suffix("_sum")
                .or_else(|| name.strip_suffix("_count"))
                .unwrap_or(name);
            assert!(
                declared.contains(name) || declared.contains(base),
                "{name} undeclared"
            );
        }
    }
}
