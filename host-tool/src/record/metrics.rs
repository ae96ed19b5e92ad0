//! OpenMetrics text over a minimal HTTP/1.1 server, for a lab's Prometheus.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use std::sync::atomic::Ordering;

use super::board::{Board, FleetStats, TargetView, ThreadView};
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
    ] {
        let _ = writeln!(o, "# TYPE {name} {kind}\n# HELP {name} {help}\n{series} {value}");
    }
}

/// The families of a target's series: name, type, help.
const FAMILIES: [(&str, &str, &str); 13] = [
    ("latscope_cycles", "counter", "Wake-ups measured."),
    (
        "latscope_latency_seconds",
        "summary",
        "Wake-up latency: count, sum and quantiles (bucket upper edges).",
    ),
    (
        "latscope_latency_max_seconds",
        "gauge",
        "Largest latency, exact.",
    ),
    (
        "latscope_missed_periods",
        "counter",
        "Periods missed by late wake-ups.",
    ),
    (
        "latscope_page_faults",
        "counter",
        "Page faults of the measuring thread.",
    ),
    (
        "latscope_dropped_records",
        "counter",
        "Spike records the target could not queue.",
    ),
    ("latscope_link_frames", "counter", "Good frames received."),
    (
        "latscope_link_errors",
        "counter",
        "Frames rejected or lost on the link.",
    ),
    (
        "latscope_link_bytes_skipped",
        "counter",
        "Bytes not part of a good frame.",
    ),
    (
        "latscope_connected",
        "gauge",
        "Whether the target's connection is open.",
    ),
    (
        "latscope_elapsed_seconds",
        "gauge",
        "Run time of the target.",
    ),
    (
        "latscope_ended",
        "gauge",
        "Whether the run has ended (its figures are final); shown until the linger passes.",
    ),
    (
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
    for (name, kind, help) in FAMILIES {
        let _ = writeln!(o, "# TYPE {name} {kind}");
        let _ = writeln!(o, "# HELP {name} {help}");
        if kind == "summary" || name == "latscope_latency_max_seconds" {
            let _ = writeln!(o, "# UNIT {name} seconds");
        }
        for ((v, tl), tls) in views.iter().zip(&run_labels).zip(&thread_labels) {
            if !run_family(o, name, tl, v) {
                for (t, l) in v.threads.iter().zip(tls) {
                    thread_family(o, name, l, t);
                }
            }
        }
    }
    if let Some(st) = fleet {
        fleet_families(o, st);
    }
    o.push_str("# EOF\n");
}

/// The series of family `name` that belong to a run (not to a thread);
/// whether `name` is such a family.
fn run_family(o: &mut String, name: &str, tl: &str, v: &TargetView) -> bool {
    let l = &v.link;
    let _ = match name {
        "latscope_link_frames" => writeln!(o, "{name}_total{{{tl}}} {}", l.frames),
        "latscope_link_errors" => {
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
        "latscope_link_bytes_skipped" => writeln!(o, "{name}_total{{{tl}}} {}", l.bytes_skipped),
        "latscope_connected" => writeln!(o, "{name}{{{tl}}} {}", u8::from(v.active)),
        "latscope_elapsed_seconds" => writeln!(o, "{name}{{{tl}}} {}", secs(v.elapsed_ns)),
        "latscope_ended" => writeln!(o, "{name}{{{tl}}} {}", u8::from(v.finished)),
        "latscope_degraded" => writeln!(o, "{name}{{{tl}}} {}", u8::from(!v.degraded.is_empty())),
        _ => return false,
    };
    true
}

/// The series of family `name` of one thread, labelled `l`.
fn thread_family(o: &mut String, name: &str, l: &str, t: &ThreadView) {
    let _ = match name {
        "latscope_cycles" => writeln!(o, "{name}_total{{{l}}} {}", t.cycles),
        "latscope_latency_seconds" => {
            for (q, val) in [("0.99", t.p99_ns), ("0.999", t.p999_ns)] {
                if let Some(val) = val {
                    let _ = writeln!(o, "{name}{{{l},quantile=\"{q}\"}} {}", secs(val));
                }
            }
            let _ = writeln!(o, "{name}_sum{{{l}}} {}", secs(t.sum_ns));
            writeln!(o, "{name}_count{{{l}}} {}", t.count)
        }
        "latscope_latency_max_seconds" => writeln!(o, "{name}{{{l}}} {}", secs(t.max_ns)),
        "latscope_missed_periods" => writeln!(o, "{name}_total{{{l}}} {}", t.missed),
        "latscope_page_faults" => {
            let _ = writeln!(o, "{name}_total{{{l},kind=\"minor\"}} {}", t.minflt);
            writeln!(o, "{name}_total{{{l},kind=\"major\"}} {}", t.majflt)
        }
        "latscope_dropped_records" => writeln!(o, "{name}_total{{{l}}} {}", t.dropped),
        _ => Ok(()),
    };
}

/// Answer one request; `body` is reused from request to request, so a
/// scrape of hundreds of runs does not churn the allocator.
fn answer(stream: TcpStream, board: &Board, body: &mut String) {
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
            let fleet = board
                .listening
                .load(Ordering::Relaxed)
                .then_some(&board.stats);
            board.with_views(|views| exposition(body, views, fleet));
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
pub(crate) fn serve(addr: &str, board: Arc<Board>) -> Result<std::net::SocketAddr> {
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
                    answer(stream, &board, &mut body);
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
    use crate::record::board::{Identity, ThreadView};

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
