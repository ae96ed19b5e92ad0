//! A stream from a newer protocol version, on every input path of the host.
//! `corruption.rs` checks `report FILE`; this covers `report -` (stdin),
//! `record` from stdin, `record --listen` over TCP, the next version and
//! 255, and a stream that switches to the next version after a valid hello
//! (a target upgraded behind a recorder). Each gets one clear line naming the version, exit
//! status 1, and never a panic.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use latscope_core::wire::{Body, Frame, PROTOCOL_VERSION};
use latscope_testkit::host::{
    bins, decode_frames, encode_frames, listening_host_anywhere, record_file, recordings,
    stderr_lines, wait_for_line,
};
use latscope_testkit::Scratch;

/// The first protocol version this build does not know.
const NEXT: u8 = PROTOCOL_VERSION + 1;

/// A real short recording's frames.
fn real_frames(dir: &Scratch) -> Vec<Frame> {
    let bytes = record_file(
        ["-t", "2", "-i", "1000", "-l", "300", "-q", "--best-effort"],
        &dir.join("now.lsr"),
    );
    let (out, _) = decode_frames(&bytes);
    assert!(out.len() > 5);
    out
}

fn assert_clear(what: &str, code: Option<i32>, stderr: &[u8], v: u8) {
    let err = String::from_utf8_lossy(stderr);
    assert_eq!(code, Some(1), "{what}: exit status; stderr: {err}");
    // One line says it (`record` may also say where it recorded).
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains(": recorded "))
        .collect();
    assert_eq!(lines.len(), 1, "{what}: not one line: {err}");
    assert!(
        lines[0].contains(&format!("version {v}")),
        "{what}: does not name version {v}: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
}

fn host_with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut c = Command::new(bins().host)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input).unwrap();
    c.wait_with_output().unwrap()
}

#[test]
fn newer_versions_on_stdin_get_one_clear_line() {
    let dir = Scratch::new("newer-stdin");
    let frames = real_frames(&dir);
    for v in [NEXT, 255] {
        let s = encode_frames(&frames, v, 0);
        let o = host_with_stdin(&["report", "-"], &s);
        assert_clear(&format!("report - v{v}"), o.status.code(), &o.stderr, v);
        assert!(o.stdout.is_empty(), "report - v{v}: wrote a report");
        let out = dir.join(format!("rec-v{v}.lsr"));
        let o = host_with_stdin(&["record", "-q", "-o", &out.display().to_string(), "-"], &s);
        assert_clear(&format!("record - v{v}"), o.status.code(), &o.stderr, v);
    }
}

#[test]
fn version_switch_after_a_valid_hello_keeps_what_decoded() {
    let dir = Scratch::new("newer-switch");
    let frames = real_frames(&dir);
    assert!(matches!(frames[0].body, Body::Hello(_)));
    // This version up to the middle, then the next.
    let mid = frames.len() / 2;
    let s = encode_frames(&frames, NEXT, mid);
    let p = dir.join("switch.lsr");
    std::fs::write(&p, &s).unwrap();
    let o = Command::new(bins().host)
        .args(["report", "--format", "json"])
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("version {NEXT}")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // What decoded before the switch is kept and reported.
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("no JSON report of the first part ({e}); stderr: {err}"));
    assert_eq!(doc["link"]["frames"].as_u64(), Some(mid as u64));
    assert_eq!(
        doc["link"]["unknown_version"].as_u64(),
        Some((frames.len() - mid) as u64)
    );
}

#[test]
fn newer_version_over_tcp_gets_one_clear_line() {
    let dir = Scratch::new("newer-tcp");
    let frames = real_frames(&dir);
    let (mut h, listen) = listening_host_anywhere(&dir.join("out"));
    let mut conn = None;
    for _ in 0..50 {
        if let Ok(c) = std::net::TcpStream::connect(&listen) {
            conn = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut c = conn.expect("connect to the host");
    c.write_all(&encode_frames(&frames, NEXT, 0)).unwrap();
    drop(c);
    // No run started, so nothing ends for --exit-after: the recorder says
    // what it saw and goes on until it is stopped.
    let rx = stderr_lines(h.child());
    let line = wait_for_line(&rx, &format!("version {NEXT}"), Duration::from_secs(20));
    let pid = rustix::process::Pid::from_raw(h.child().id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let o = h.wait(Duration::from_secs(20));
    assert_eq!(
        o.status.code(),
        Some(0),
        "SIGTERM ends the recorder cleanly"
    );
    assert!(
        line.contains("upgrade latscope-host"),
        "no clear line: {line}"
    );
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(
        !rest
            .iter()
            .any(|l| l.contains(&format!("version {NEXT}")) || l.contains("panicked")),
        "one line per connection: {rest:?}"
    );
    assert!(recordings(&dir.join("out")).is_empty(), "nothing recorded");
}
