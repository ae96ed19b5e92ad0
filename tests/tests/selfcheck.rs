//! `--self-check` on the paths a real run takes, exit included: a full run
//! at the default real-time settings streaming over TCP into
//! `latscope-host record --listen`, a run ended by SIGTERM, one ended by
//! SIGINT, and one ended by a break threshold. Each must finish with zero
//! defects, exit status 0, and a stream whose hello says the self-check
//! was on and whose bye counts zero defects. The probe (every forbidden
//! process-creation and exec request once) must reach the host as defects
//! and make both programs exit 1.
//!
//! `shim-linux/tests/run.rs` covers a plain `-l` run and the probe on
//! stdout; this file covers the stream, the signals and the host's side.
//! Needs root for the real-time settings.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use latscope_core::wire::{Body, Bye, ByeReason, Frame};
use latscope_testkit::host::{
    bins, decode_frames, host_report_json, listening_host_anywhere, only_recording, proof_bin,
    Reaper,
};
use latscope_testkit::wait::frame_in;
use latscope_testkit::Scratch;
use latscope_testkit::{is_root, require};

fn decode(bytes: &[u8]) -> Vec<Frame> {
    let (out, link) = decode_frames(bytes);
    assert_eq!(link.crc_errors, 0);
    out
}

/// The hello's self-check flag and the bye of a recording.
fn hello_and_bye(frames: &[Frame]) -> (bool, Bye) {
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

/// The target exited 0 and said it found no defect, and its recording
/// `rec` says the self-check was on and counts zero defects. The bye.
fn assert_no_defect(out: &Output, rec: &Path) -> Bye {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("self-check: 0 defect(s)"), "{err}");
    let (on, bye) = hello_and_bye(&decode(&std::fs::read(rec).unwrap()));
    assert!(on, "hello does not say the self-check was on");
    assert_eq!(bye.defects, 0);
    bye
}

const RT: &[&str] = &["-t", "2", "-a", "0,1", "-i", "500", "-d", "0", "-q"];

/// The target at the real-time settings [`RT`] and `extra`, streaming to
/// `stream`.
fn rt_target(extra: &[&str], stream: &str) -> Command {
    // the probe is one of the proof scripts' options: a `proof` build has it
    let bin = if extra.contains(&"--self-check-probe") {
        proof_bin()
    } else {
        bins().latscope
    };
    let mut c = Command::new(bin);
    c.args(RT).args(extra).arg(format!("--stream={stream}"));
    c
}

/// [`rt_target`] started, its stderr kept for the self-check's line.
fn spawn_rt_target(extra: &[&str], stream: &str) -> Reaper {
    Reaper::new(
        rt_target(extra, stream)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn full_run_over_tcp_with_self_check_has_no_defect() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    let dir = Scratch::new("selfcheck-tcp");
    let (mut h, listen) = listening_host_anywhere(dir.path());
    let mut t = spawn_rt_target(
        &["-D", "3", "--self-check", "--spike=500"],
        &format!("tcp:{listen}"),
    );
    let out = t.wait(Duration::from_secs(30));
    let hr = h.wait(Duration::from_secs(20));
    assert_eq!(
        hr.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&hr.stderr)
    );
    let rec = only_recording(dir.path());
    let bye = assert_no_defect(&out, &rec);
    assert_eq!(bye.reason, ByeReason::Completed);
    let (doc, code, stderr) = host_report_json(&rec);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["runs"][0]["exact_at_end"], true);
}

fn ended_by_signal(sig: rustix::process::Signal, signo: u8) {
    let dir = Scratch::new("selfcheck-sig");
    let rec = dir.join("s.lsr");
    let mut t = spawn_rt_target(&["--self-check"], &rec.display().to_string());
    // signals are handled once the threads stream their first report
    frame_in(
        &rec,
        Duration::from_secs(10),
        "report 1",
        |f| matches!(f.body, Body::Stats(s) if s.epoch >= 1),
    );
    let pid = rustix::process::Pid::from_raw(t.child().id() as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
    let out = t.wait(Duration::from_secs(20));
    let bye = assert_no_defect(&out, &rec);
    assert_eq!(bye.reason, ByeReason::Signal(signo));
}

#[test]
fn sigterm_exit_with_self_check_has_no_defect() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    ended_by_signal(rustix::process::Signal::TERM, 15);
}

#[test]
fn sigint_exit_with_self_check_has_no_defect() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    ended_by_signal(rustix::process::Signal::INT, 2);
}

#[test]
fn break_exit_with_self_check_has_no_defect() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    let dir = Scratch::new("selfcheck-break");
    let rec = dir.join("b.lsr");
    // A 1 us break threshold stops at the first sample.
    let out = rt_target(
        &["-b", "1", "-D", "10", "--self-check"],
        &rec.display().to_string(),
    )
    .output()
    .unwrap();
    let bye = assert_no_defect(&out, &rec);
    assert!(
        matches!(bye.reason, ByeReason::Break { .. }),
        "{:?}",
        bye.reason
    );
}

#[test]
fn probe_defect_reaches_the_host_and_fails_both() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    let dir = Scratch::new("selfcheck-probe");
    let rec = dir.join("p.lsr");
    let out = rt_target(
        &["-l", "300", "--self-check-probe"],
        &rec.display().to_string(),
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let refused = err.matches("refused with EPERM").count();
    // clone, execve and execveat everywhere; fork and vfork where they exist
    let expected = if cfg!(target_arch = "aarch64") { 3 } else { 5 };
    assert_eq!(refused, expected, "{err}");
    let (_, bye) = hello_and_bye(&decode(&std::fs::read(&rec).unwrap()));
    assert_eq!(bye.defects as usize, expected);
    let (doc, code, _) = host_report_json(&rec);
    assert_eq!(code, 1, "the host must fail a run with self-check defects");
    assert!(
        doc["runs"][0]["end"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("self-check defects {expected}")),
        "{}",
        doc["runs"][0]["end"]
    );
}
