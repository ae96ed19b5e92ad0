//! The lifecycle of a listening recorder, with real processes on loopback:
//! probes and silent connections neither end it nor leave files; a run
//! that goes quiet times out and counts for `--exit-after`; SIGTERM closes
//! every recording with a final report and exit 0; ended runs' series
//! linger, then go; the connection cap and the allow-list refuse at once;
//! running out of descriptors does not make it spin.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rustix::process::Signal;

use latscope_testkit::fleet::{drain, Recorder};
use latscope_testkit::host::{host_report_json, recordings, spawn_target};
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;

const T: Duration = Duration::from_secs(10);

/// Whether the peer closes `s` (EOF or reset) within `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).expect("timeout");
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn probes_and_silent_connections_leave_no_file_and_do_not_end_the_recorder() {
    let dir = Scratch::new("fleet-probe");
    let out = dir.join("rec");
    let mut r = Recorder::start(&out, &["-q", "--exit-after", "1", "--hello-timeout", "1"]);
    // Two port-scan probes, one silent client, one that sends junk.
    for _ in 0..2 {
        drop(TcpStream::connect(&r.addr).expect("probe"));
    }
    let mut silent = TcpStream::connect(&r.addr).expect("silent");
    let mut junk = TcpStream::connect(&r.addr).expect("junk");
    junk.write_all(&[0x55; 300]).expect("junk bytes");
    assert!(
        closed_within(&mut silent, T),
        "a silent connection is closed"
    );
    assert!(closed_within(&mut junk, T), "a junk connection is closed");
    holds(T, "probes counted", || {
        r.metric("latscope_connections_refused_total{why=\"no_hello\"}") == Some(4.0)
    });
    assert!(recordings(&out).is_empty(), "{:?}", recordings(&out));
    let mut t = spawn_target("2", &dir.join("t.json"), &format!("tcp:{}", r.addr));
    assert!(t.wait(T).status.success());
    let res = r.proc.wait(T);
    assert_eq!(res.status.code(), Some(0), "one run ended with a bye");
    let recs = recordings(&out);
    assert_eq!(recs.len(), 1, "only the run has a recording: {recs:?}");
    let (_, code, err) = host_report_json(&recs[0]);
    assert_eq!(code, 0, "{err}");
    let lines = drain(&r.stderr, T).join("\n");
    assert!(lines.contains("no hello within 1 s"), "{lines}");
    assert!(
        lines.contains("runs: 1 ended with a bye, 0 timed out"),
        "{lines}"
    );
}

#[test]
fn a_quiet_run_times_out_and_counts_for_exit_after() {
    let dir = Scratch::new("fleet-idle");
    let out = dir.join("rec");
    let mut r = Recorder::start(&out, &["-q", "--exit-after", "1", "--idle-timeout", "1.5"]);
    let mut t = spawn_target("60", &dir.join("t.json"), &format!("tcp:{}", r.addr));
    holds(T, "the run streams", || {
        r.metric("latscope_cycles_total{").is_some_and(|c| c > 0.0)
    });
    // Stopped, the target keeps its connection open and sends nothing.
    let pid = rustix::process::Pid::from_raw(t.child().id() as i32).unwrap();
    rustix::process::kill_process(pid, Signal::STOP).unwrap();
    let res = r.proc.wait(T);
    rustix::process::kill_process(pid, Signal::CONT).unwrap();
    assert_eq!(res.status.code(), Some(1), "a timed-out run is incomplete");
    let lines = drain(&r.stderr, T).join("\n");
    assert!(lines.contains("timed out; recorded"), "{lines}");
    assert!(
        lines.contains("runs: 0 ended with a bye, 1 timed out"),
        "{lines}"
    );
    assert_eq!(recordings(&out).len(), 1);
}

#[test]
fn sigterm_closes_every_recording_with_a_final_report_and_exit_0() {
    let dir = Scratch::new("fleet-term");
    let out = dir.join("rec");
    let mut r = Recorder::start(&out, &[]);
    let mut targets: Vec<_> = (0..2)
        .map(|i| {
            spawn_target(
                "60",
                &dir.join(format!("t{i}.json")),
                &format!("tcp:{}", r.addr),
            )
        })
        .collect();
    holds(T, "both runs stream", || {
        r.metrics().matches("latscope_cycles_total{").count() == 4
    });
    r.signal(Signal::TERM);
    let res = r.proc.wait(T);
    assert_eq!(res.status.code(), Some(0), "SIGTERM ends cleanly");
    let report = String::from_utf8_lossy(&res.stdout);
    assert_eq!(
        report.matches("\n== ").count() + usize::from(report.starts_with("== ")),
        2,
        "{report}"
    );
    let lines = drain(&r.stderr, T).join("\n");
    assert!(
        lines.contains("0 ended with a bye, 0 timed out, 2 interrupted"),
        "{lines}"
    );
    let recs = recordings(&out);
    assert_eq!(recs.len(), 2, "one recording per run: {recs:?}");
    for rec in recs {
        let (doc, _, _) = host_report_json(&rec);
        assert!(doc["link"]["frames"].as_u64().unwrap() > 0);
        assert_eq!(doc["link"]["crc_errors"], 0, "{}", rec.display());
        assert_eq!(doc["link"]["truncated_bytes"], 0, "{}", rec.display());
    }
    for t in &mut targets {
        t.child().kill().unwrap();
    }
}

#[test]
fn ended_runs_linger_on_metrics_then_go() {
    let dir = Scratch::new("fleet-linger");
    let r = Recorder::start(&dir.join("rec"), &["-q", "--linger", "2"]);
    let mut t = spawn_target("2", &dir.join("t.json"), &format!("tcp:{}", r.addr));
    assert!(t.wait(T).status.success());
    holds(T, "the final figures", || {
        r.metric("latscope_ended{") == Some(1.0)
    });
    let shown = Instant::now();
    holds(T, "the series expire", || {
        !r.metrics().contains("latscope_ended{")
    });
    assert!(
        shown.elapsed() >= Duration::from_millis(1000),
        "lingered {:?}",
        shown.elapsed()
    );
    assert_eq!(
        r.metric("latscope_runs_ended_total{how=\"bye\"}"),
        Some(1.0)
    );
}

#[test]
fn the_connection_cap_and_the_allow_list_refuse_at_once() {
    let dir = Scratch::new("fleet-cap");
    let r = Recorder::start(&dir.join("a"), &["-q", "--max-connections", "1"]);
    let _held = TcpStream::connect(&r.addr).expect("first");
    holds(T, "one open", || {
        r.metric("latscope_connections ") == Some(1.0)
    });
    let mut second = TcpStream::connect(&r.addr).expect("second");
    assert!(closed_within(&mut second, Duration::from_secs(2)));
    assert_eq!(
        r.metric("latscope_connections_refused_total{why=\"cap\"}"),
        Some(1.0)
    );
    let r2 = Recorder::start(&dir.join("b"), &["-q", "--allow", "10.0.0.0/8"]);
    let mut outsider = TcpStream::connect(&r2.addr).expect("outsider");
    assert!(closed_within(&mut outsider, Duration::from_secs(2)));
    assert_eq!(
        r2.metric("latscope_connections_refused_total{why=\"allow\"}"),
        Some(1.0)
    );
}

/// CPU time (user + system, clock ticks) of a process.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = stat.rsplit_once(") ").map(|x| x.1).unwrap_or("");
    let f: Vec<u64> = rest.split(' ').filter_map(|x| x.parse().ok()).collect();
    // fields 14 and 15 of stat, counted after the command name
    f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0)
}

#[test]
fn out_of_descriptors_the_recorder_backs_off_and_recovers() {
    let dir = Scratch::new("fleet-fds");
    let mut r = Recorder::start(&dir.join("rec"), &["-q"]);
    let pid = r.proc.child().id();
    let lim = rustix::process::Rlimit {
        current: Some(24),
        maximum: Some(24),
    };
    rustix::process::prlimit(
        rustix::process::Pid::from_raw(pid as i32),
        rustix::process::Resource::Nofile,
        lim,
    )
    .expect("prlimit");
    let held: Vec<TcpStream> = (0..40)
        .filter_map(|_| TcpStream::connect(&r.addr).ok())
        .collect();
    holds(T, "the back-off is reported", || {
        r.stderr.try_iter().any(|l| l.contains("cannot accept"))
    });
    let c0 = cpu_ticks(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let used = (cpu_ticks(pid) - c0) as f64 / 100.0 / t0.elapsed().as_secs_f64();
    // Spinning on accept would use a whole core.
    assert!(used < 0.5, "recorder used {:.0} % of a core", used * 100.0);
    drop(held);
    holds(T, "metrics answer again", || {
        r.metrics().contains("# TYPE latscope_connections gauge")
    });
    let _ = r.proc.child().kill();
}
