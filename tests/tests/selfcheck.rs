//! `--self-check` on the paths a real run takes, exit included: a full run
//! at the default real-time settings streaming over TCP into
//! `latscope-host record --listen`, a run ended by SIGTERM, one ended by
//! SIGINT, and one ended by a break threshold. Each must finish with zero
//! defects, exit status 0, and a stream whose hello says the self-check
//! was on and whose bye counts zero defects. The probe (one forbidden
//! clone) must reach the host as a defect and make both programs exit 1.
//!
//! `shim-linux/tests/run.rs` covers a plain `-l` run and the probe on
//! stdout; this file covers the stream, the signals and the host's side.
//! Needs root for the real-time settings; under CI=true it must be root.

use std::process::{Command, Stdio};
use std::time::Duration;

use latscope_core::wire::{Body, ByeReason, Frame};
use latscope_tests::host::{bins, decode_frames, host_report_json, Reaper, Scratch};

fn rt_or_skip() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "self-check tests need root under CI=true"
    );
    eprintln!("skipping: needs root");
    false
}

fn decode(bytes: &[u8]) -> Vec<Frame> {
    let (out, link) = decode_frames(bytes);
    assert_eq!(link.crc_errors, 0);
    out
}

/// The hello's self-check flag and the bye of a recording.
fn hello_and_bye(frames: &[Frame]) -> (bool, latscope_core::wire::Bye) {
    let hello = frames
        .iter()
        .find_map(|f| match &f.body {
            Body::Hello(h) => Some(h.config.self_check),
            _ => None,
        })
        .expect("hello");
    let bye = frames
        .iter()
        .rev()
        .find_map(|f| match &f.body {
            Body::Bye(b) => Some(*b),
            _ => None,
        })
        .expect("bye");
    (hello, bye)
}

const RT: &[&str] = &["-t", "2", "-a", "0,1", "-i", "500", "-d", "0", "-q"];

#[test]
fn full_run_over_tcp_with_self_check_has_no_defect() {
    if !rt_or_skip() {
        return;
    }
    let b = bins();
    let dir = Scratch::new("selfcheck-tcp");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let listen = format!("127.0.0.1:{port}");
    let mut h = Reaper::new(
        Command::new(&b.host)
            .args(["record", "-q", "--exit-after", "1", "--listen", &listen])
            .arg("--out-dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let mut t = Reaper::new(
        Command::new(&b.latscope)
            .args(RT)
            .args(["-D", "3", "--self-check", "--spike=500"])
            .arg(format!("--stream=tcp:{listen}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let out = t.wait(Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("self-check: 0 defect(s)"), "{err}");
    let hr = h.wait(Duration::from_secs(20));
    assert_eq!(
        hr.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&hr.stderr)
    );
    let rec: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    assert_eq!(rec.len(), 1, "{rec:?}");
    let (on, bye) = hello_and_bye(&decode(&std::fs::read(&rec[0]).unwrap()));
    assert!(on, "hello does not say the self-check was on");
    assert_eq!(bye.defects, 0);
    assert_eq!(bye.reason, ByeReason::Completed);
    let (doc, code, stderr) = host_report_json(&rec[0]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["runs"][0]["exact_at_end"], true);
}

fn ended_by_signal(sig: rustix::process::Signal, signo: u8) {
    let b = bins();
    let dir = Scratch::new("selfcheck-sig");
    let rec = dir.join("s.lsr");
    let mut t = Reaper::new(
        Command::new(&b.latscope)
            .args(RT)
            .args(["--self-check"])
            .arg(format!("--stream={}", rec.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let pid = rustix::process::Pid::from_raw(t.child().id() as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
    let out = t.wait(Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("self-check: 0 defect(s)"), "{err}");
    let (on, bye) = hello_and_bye(&decode(&std::fs::read(&rec).unwrap()));
    assert!(on);
    assert_eq!(bye.defects, 0);
    assert_eq!(bye.reason, ByeReason::Signal(signo));
}

#[test]
fn sigterm_exit_with_self_check_has_no_defect() {
    if rt_or_skip() {
        ended_by_signal(rustix::process::Signal::TERM, 15);
    }
}

#[test]
fn sigint_exit_with_self_check_has_no_defect() {
    if rt_or_skip() {
        ended_by_signal(rustix::process::Signal::INT, 2);
    }
}

#[test]
fn break_exit_with_self_check_has_no_defect() {
    if !rt_or_skip() {
        return;
    }
    let b = bins();
    let dir = Scratch::new("selfcheck-break");
    let rec = dir.join("b.lsr");
    // A 1 us break threshold stops at the first sample.
    let out = Command::new(&b.latscope)
        .args(RT)
        .args(["-b", "1", "-D", "10", "--self-check"])
        .arg(format!("--stream={}", rec.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("self-check: 0 defect(s)"), "{err}");
    let (on, bye) = hello_and_bye(&decode(&std::fs::read(&rec).unwrap()));
    assert!(on);
    assert_eq!(bye.defects, 0);
    assert!(
        matches!(bye.reason, ByeReason::Break { .. }),
        "{:?}",
        bye.reason
    );
}

#[test]
fn probe_defect_reaches_the_host_and_fails_both() {
    if !rt_or_skip() {
        return;
    }
    let b = bins();
    let dir = Scratch::new("selfcheck-probe");
    let rec = dir.join("p.lsr");
    let out = Command::new(&b.latscope)
        .args(RT)
        .args(["-l", "300", "--self-check-probe"])
        .arg(format!("--stream={}", rec.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refused with EPERM"), "{err}");
    let (_, bye) = hello_and_bye(&decode(&std::fs::read(&rec).unwrap()));
    assert_eq!(bye.defects, 1);
    let (doc, code, _) = host_report_json(&rec);
    assert_eq!(code, 1, "the host must fail a run with self-check defects");
    assert!(
        doc["runs"][0]["end"]
            .as_str()
            .unwrap_or("")
            .contains("self-check defects 1"),
        "{}",
        doc["runs"][0]["end"]
    );
}
