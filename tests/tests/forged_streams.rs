//! Forged streams, made with the core's encoder, against the real host
//! binary: a file asking for more than a stream's memory budget is
//! reported with what was kept and exit 1; forged TCP peers fill their own
//! connections' budgets, not the recorder's, so a real run recorded
//! meanwhile is whole, and the forged runs' memory is given back when they
//! time out.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use rustix::process::Signal;

use latscope_core::layout::{Layout, MAX_LINEAR_US, MAX_TARGET_BUCKETS};
use latscope_core::wire::MAX_THREADS;
use latscope_host::budget::STREAM_LIMIT;
use latscope_host::synth::{Synth, SynthConfig};
use latscope_testkit::fleet::{drain, Recorder};
use latscope_testkit::forge::ForgedRun;
use latscope_testkit::host::{host, host_report_json, recordings};
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;

const T: Duration = Duration::from_secs(20);

/// `runs` runs of 64 threads with the widest legal layout and a bucket in
/// every page of the host's store: 17 MiB each to keep, in 50 KB.
fn forged(base: u64, runs: u64, bye: bool) -> Vec<u8> {
    let widest = Layout::new(MAX_LINEAR_US, MAX_TARGET_BUCKETS);
    let mut out = Vec::new();
    for r in 0..runs {
        ForgedRun {
            stride: 64,
            bye,
            ..ForgedRun::full(base + r, MAX_THREADS as u16, widest)
        }
        .write(&mut out);
    }
    out
}

#[test]
fn a_forged_file_is_reported_within_its_budget_with_exit_1() {
    let dir = Scratch::new("forged-file");
    let file = dir.join("forged.lsr");
    std::fs::write(&file, forged(0xF0_0000, 8, true)).expect("write");
    let out = host(&["report", &file.display().to_string()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("run(s) not kept") && text.contains("memory budget"),
        "{text}"
    );
    // the runs kept are reported in full
    assert!(
        text.contains("run 0000000000f00000") && text.contains("run 0000000000f00001"),
        "{text}"
    );
}

#[test]
fn forged_peers_fill_their_own_budgets_and_give_them_back() {
    let dir = Scratch::new("forged-peers");
    let out = dir.join("rec");
    let mut r = Recorder::start(&out, &["-q", "--idle-timeout", "2"]);
    // Two forged peers whose runs have no bye: they stay until they time
    // out. Each asks for more than its connection's budget.
    let mut peers = Vec::new();
    for base in [0xA0_0000u64, 0xB0_0000] {
        let mut s = TcpStream::connect(&r.addr).expect("connect");
        // the recorder may close the connection before it is all sent
        let _ = s.write_all(&forged(base, 4, false));
        peers.push(s);
    }
    holds(T, "the budgets refuse", || {
        r.metric("latscope_recorder_memory_refused_total")
            .is_some_and(|v| v > 0.0)
    });
    let held = r.metric("latscope_recorder_memory_bytes").unwrap_or(0.0);
    assert!(
        held > 0.0 && held <= 2.0 * STREAM_LIMIT as f64,
        "held {held} bytes for 2 connections of {STREAM_LIMIT}"
    );
    // A real run meanwhile is recorded whole.
    let mut synth = Synth::new(SynthConfig::default());
    let good_id = format!("{:016x}", synth.hello().run_id);
    let mut good = Vec::new();
    synth.run(&mut |b| good.extend_from_slice(b));
    TcpStream::connect(&r.addr)
        .and_then(|mut s| s.write_all(&good))
        .expect("send the good run");
    holds(T, "the good run ends with its bye", || {
        r.metric("latscope_runs_ended_total{how=\"bye\"}") == Some(1.0)
    });
    drop(peers);
    holds(T, "the forged runs' memory is given back", || {
        r.metric("latscope_recorder_memory_bytes") == Some(0.0)
    });
    r.signal(Signal::TERM);
    let res = r.proc.wait(T);
    let err = drain(&r.stderr, Duration::from_secs(2)).join("\n");
    assert_eq!(res.status.code(), Some(0), "{err}");
    assert!(err.contains("memory budget"), "{err}");
    let rec = recordings(&out)
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&good_id))
        .expect("the good run's recording");
    let (doc, code, stderr) = host_report_json(&rec);
    assert_eq!(code, 0, "the good run is whole: {stderr}");
    assert_eq!(doc["runs"][0]["exact_at_end"], true, "{stderr}");
}
