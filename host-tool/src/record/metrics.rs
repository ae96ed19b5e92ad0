//! OpenMetrics text over a minimal HTTP/1.1 server, for a lab's Prometheus.
//!
//! A target's series come in families ([`FAMILIES`]), each written by an
//! exhaustive match on its enum: a family added without its samples does
//! not build.

#![deny(clippy::wildcard_enum_match_arm)]

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use std::sync::atomic::Ordering;

use super::targets::{FleetStats, TargetTable, TargetView, ThreadView};
use crate::error::{Error, Result};

/// The media type Prometheus asks for.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

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

/// The counters of a listening recorder.
fn fleet_families(o: &mut String, st: &FleetStats) {
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let _ = writeln!(o, "# TYPE latscope_connections gauge");
    let _ = writeln!(o, "# HELP latscope_connections Target connections open.");
    let _ = writeln!(o, "latscope_connections {}", get(&st.open));
    let _ = writeln!(o, "# TYPE latscope_connections_accepted counter");
    let _ = writeln!(
        o,
        "# HELP latscope_connections_accepted Target connections accepted."
    );
    let _ = writeln!(
        o,
        "latscope_connections_accepted_total {}",
        get(&st.accepted)
    );
    let _ = writeln!(o, "# TYPE latscope_connections_refused counter");
    let _ = writeln!(
        o,
        "# HELP latscope_connections_refused Connections closed at once: over --max-connections (cap), outside --allow (allow), or without a hello in time (no_hello)."
    );
    for (why, c) in [
        ("cap", &st.refused_cap),
        ("allow", &st.refused_allow),
        ("no_hello", &st.no_hello),
    ] {
        let _ = writeln!(
            o,
            "latscope_connections_refused_total{{why=\"{why}\"}} {}",
            get(c)
        );
    }
    let _ = writeln!(o, "# TYPE latscope_runs_ended counter");
    let _ = writeln!(
        o,
        "# HELP latscope_runs_ended Runs that ended: with a bye, timed out, or interrupted by the recorder stopping."
    );
    for (how, c) in [
        ("bye", &st.runs_bye),
        ("timeout", &st.runs_timed_out),
        ("interrupted", &st.runs_interrupted),
    ] {
        let _ = writeln!(o, "latscope_runs_ended_total{{how=\"{how}\"}} {}", get(c));
    }
    memory_families(o, st);
}

/// The recorder's memory budget.
fn memory_families(o: &mut String, st: &FleetStats) {
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    for (name, kind, help, series, value) in [
        (
            "latscope_recorder_memory_bytes",
            "gauge",
            "What the decoding of the runs in progress holds, of the recorder's memory budget.",
            "latscope_recorder_memory_bytes",
            get(&st.memory),
        ),
        (
            "latscope_recorder_memory_limit_bytes",
            "gauge",
            "The recorder's memory budget for all connections.",
            "latscope_recorder_memory_limit_bytes",
            crate::budget::GLOBAL_LIMIT as u64,
        ),
        (
            "latscope_recorder_memory_refused",
            "counter",
            "Runs, threads or histogram pages refused because a connection's or the recorder's memory budget was used up.",
            "latscope_recorder_memory_refused_total",
            get(&st.memory_refused),
        ),
        (
            "latscope_recorder_write_errors",
            "counter",
            "Writes or syncs of a recording that failed (a full disk, EIO): nothing was acknowledged past them.",
            "latscope_recorder_write_errors_total",
            get(&st.write_errors),
        ),
    ] {
        let _ = writeln!(o, "# TYPE {name} {kind}\n# HELP {name} {help}\n{series} {value}");
    }
}

/// A family of a target's series: one of the run's, or one per thread.
/// Each variant is made only in [`FAMILIES`] (so one missing there is dead
/// code), and each is matched exhaustively where its samples are written
/// (so one without samples does not build).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Series of one measuring thread.
    Thread(ThreadFamily),
    /// Series of the run as a whole.
    Run(RunFamily),
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
    kind: &'static str,
    /// Its `# UNIT` line, if it has one.
    unit: Option<&'static str>,
    help: &'static str,
}

const fn thread(
    f: ThreadFamily,
    name: &'static str,
    kind: &'static str,
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

const fn run(
    f: RunFamily,
    name: &'static str,
    kind: &'static str,
    help: &'static str,
) -> FamilySpec {
    FamilySpec {
        family: Family::Run(f),
        name,
        kind,
        unit: None,
        help,
    }
}

/// The families of a target's series, in the order of the exposition.
const FAMILIES: [FamilySpec; 13] = [
    thread(
        ThreadFamily::Cycles,
        "latscope_cycles",
        "counter",
        None,
        "Wake-ups measured.",
    ),
    thread(
        ThreadFamily::Latency,
        "latscope_latency_seconds",
        "summary",
        Some("seconds"),
        "Wake-up latency: count, sum and quantiles (bucket upper edges).",
    ),
    thread(
        ThreadFamily::LatencyMax,
        "latscope_latency_max_seconds",
        "gauge",
        Some("seconds"),
        "Largest latency, exact.",
    ),
    thread(
        ThreadFamily::MissedPeriods,
        "latscope_missed_periods",
        "counter",
        None,
        "Periods missed by late wake-ups.",
    ),
    thread(
        ThreadFamily::PageFaults,
        "latscope_page_faults",
        "counter",
        None,
        "Page faults of the measuring thread.",
    ),
    thread(
        ThreadFamily::DroppedRecords,
        "latscope_dropped_records",
        "counter",
        None,
        "Spike records the target could not queue.",
    ),
    run(
        RunFamily::LinkFrames,
        "latscope_link_frames",
        "counter",
        "Good frames received.",
    ),
    run(
        RunFamily::LinkErrors,
        "latscope_link_errors",
        "counter",
        "Frames rejected or lost on the link.",
    ),
    run(
        RunFamily::LinkBytesSkipped,
        "latscope_link_bytes_skipped",
        "counter",
        "Bytes not part of a good frame.",
    ),
    run(
        RunFamily::Connected,
        "latscope_connected",
        "gauge",
        "Whether the target's connection is open.",
    ),
    run(
        RunFamily::Elapsed,
        "latscope_elapsed_seconds",
        "gauge",
        "Run time of the target.",
    ),
    run(
        RunFamily::Ended,
        "latscope_ended",
        "gauge",
        "Whether the run has ended (its figures are final); shown until the linger passes.",
    ),
    run(
        RunFamily::Degraded,
        "latscope_degraded",
        "gauge",
        "Whether the run degraded its real-time settings (--best-effort).",
    ),
];

/// The OpenMetrics exposition of all targets (and, listening, the
/// recorder's own counters), into `o`.
pub(crate) fn exposition(o: &mut String, views: &[&TargetView], fleet: Option<&FleetStats>) {
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
        let _ = writeln!(o, "# TYPE {name} {}", spec.kind);
        let _ = writeln!(o, "# HELP {name} {}", spec.help);
        if let Some(unit) = spec.unit {
            let _ = writeln!(o, "# UNIT {name} {unit}");
        }
        for ((v, tl), tls) in views.iter().zip(&run_labels).zip(&thread_labels) {
            match spec.family {
                Family::Run(f) => run_family(o, f, name, tl, v),
                Family::Thread(f) => {
                    for (t, l) in v.threads.iter().zip(tls) {
                        thread_family(o, f, name, l, t);
                    }
                }
            }
        }
    }
    if let Some(st) = fleet {
        fleet_families(o, st);
    }
    o.push_str("# EOF\n");
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

/// Answer one request; `body` is reused from request to request, so a
/// scrape of hundreds of runs does not churn the allocator.
fn answer(stream: TcpStream, targets: &TargetTable, body: &mut String) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(clone);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    // Skip the headers.
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let mut parts = request.split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("");
    let (status, ctype) = match (method, path) {
        ("GET", "/metrics") | ("GET", "/metrics/") => {
            let fleet = targets
                .listening
                .load(Ordering::Relaxed)
                .then_some(&targets.stats);
            targets.with_views(|views| exposition(body, views, fleet));
            ("200 OK", CONTENT_TYPE)
        }
        ("GET", "/") => {
            body.clear();
            body.push_str("latscope-host: metrics at /metrics\n");
            ("200 OK", "text/plain; charset=utf-8")
        }
        ("GET", _) => {
            body.clear();
            body.push_str("not found\n");
            ("404 Not Found", "text/plain")
        }
        _ => {
            body.clear();
            body.push_str("only GET\n");
            ("405 Method Not Allowed", "text/plain")
        }
    };
    let mut w = stream;
    let _ = write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = w.write_all(body.as_bytes());
    let _ = w.flush();
}

/// Serve the board's metrics on `addr` from a background thread, one
/// request at a time (each has 2 s to arrive and to be taken), with one
/// reused body buffer.
pub(crate) fn serve(addr: &str, targets: Arc<TargetTable>) -> Result<std::net::SocketAddr> {
    let listener = TcpListener::bind(addr).map_err(|source| Error::Bind {
        addr: addr.to_string(),
        source,
    })?;
    let local = listener.local_addr().map_err(|source| Error::Bind {
        addr: addr.to_string(),
        source,
    })?;
    thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            let mut body = String::new();
            let mut backoff = Duration::ZERO;
            loop {
                if let Some((stream, _)) = super::listen::accept(&listener, &mut backoff) {
                    answer(stream, &targets, &mut body);
                }
            }
        })
        .map_err(|source| Error::Bind {
            addr: addr.to_string(),
            source,
        })?;
    Ok(local)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::targets::{Identity, ThreadView};
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
    /// (run families) or each thread (thread families), at least one line
    /// under its header, each line its own name's.
    #[test]
    fn every_family_yields_its_samples() {
        let (views, st) = populated();
        let refs: Vec<&TargetView> = views.iter().collect();
        let mut o = String::new();
        exposition(&mut o, &refs, Some(&st));
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
                Family::Run(_) => views.len(),
            };
            let owners: std::collections::BTreeSet<&str> = samples
                .iter()
                .map(|l| l.split_once('}').map_or(*l, |(k, _)| k))
                .map(|k| k.split(",kind=").next().unwrap_or(k))
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
        exposition(&mut o, &[&a, &b], Some(&st));
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
        exposition(&mut o, &[&a], None);
        assert!(!o.contains("latscope_connections"), "{o}");
    }
}
