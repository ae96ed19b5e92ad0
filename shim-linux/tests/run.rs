//! Whole runs of the binary: signals end a run cleanly with a complete
//! stream, SIGUSR1 reports status, the self-check counts defects, -b stops.

use std::process::Stdio;
use std::time::Duration;

use latscope_core::wire::{Body, ByeReason};
use latscope_testkit::host::{stderr_lines, wait_for_line};
use latscope_testkit::target::{decode_all, privilege_flags, serial, tool};
use latscope_testkit::this_target;
use latscope_testkit::wait::{frame_in, poll};
use rustix::process::{kill_process, Pid, Signal};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn wait_for(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    poll(limit, || child.try_wait().expect("try_wait")).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("latscope did not end within {limit:?}")
    })
}

fn signal_ends_run_cleanly(sig: Signal, signo: u8) {
    let _g = serial();
    let path =
        std::env::temp_dir().join(format!("latscope-sig-{}-{signo}.bin", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let dest = path.to_str().unwrap().to_string();
    let mut args = vec!["-t", "2", "-D", "60s", "-q", "--stream", &dest];
    args.extend(privilege_flags());
    let mut child = tool(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // report 2 (the statistics at the start of the stream are report 0):
    // signals are handled, and a run of some length is there to end
    frame_in(
        &path,
        Duration::from_secs(10),
        "report 2",
        |f| matches!(f.body, Body::Stats(s) if s.epoch >= 2),
    );
    let lines = stderr_lines(&mut child);
    let pid = Pid::from_child(&child);
    kill_process(pid, Signal::USR1).unwrap();
    wait_for_line(&lines, "current status", Duration::from_secs(5));
    kill_process(pid, sig).unwrap();
    let status = wait_for(&mut child, Duration::from_secs(10));
    let out = child.wait_with_output().unwrap();
    let stderr: Vec<String> = lines.try_iter().collect();
    assert!(status.success(), "{stderr:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("T:")).count(),
        2,
        "{stdout}"
    );
    let frames = decode_all(&std::fs::read(&path).unwrap());
    let _ = std::fs::remove_file(&path);
    let Body::Bye(bye) = frames.last().unwrap().body else {
        panic!("no bye at the end");
    };
    assert_eq!(bye.reason, ByeReason::Signal(signo));
    let finals: Vec<_> = frames
        .iter()
        .filter_map(|f| match &f.body {
            Body::Stats(s) if s.last_report => Some(*s),
            _ => None,
        })
        .collect();
    assert_eq!(finals.len(), 2);
    assert_eq!(finals.iter().map(|s| s.cycles).sum::<u64>(), bye.cycles);
    assert!(bye.cycles > 1000);
}

#[test]
fn sigint_ends_run_cleanly_with_complete_stream() {
    signal_ends_run_cleanly(Signal::INT, 2);
}

#[test]
fn sigterm_ends_run_cleanly_with_complete_stream() {
    signal_ends_run_cleanly(Signal::TERM, 15);
}

#[test]
fn self_check_full_run_has_no_defect() {
    let _g = serial();
    let mut args = vec!["-t", "2", "-l", "500", "-q", "--self-check"];
    args.extend(privilege_flags());
    let out = this_target!().run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("self-check: 0 defect(s)"), "{err}");
}

/// The probe, in a `proof` build (a workspace test build has the feature).
#[cfg(feature = "proof")]
#[test]
fn self_check_probe_requests_are_refused_and_counted() {
    let _g = serial();
    let mut args = vec!["-l", "300", "-q", "--self-check-probe", "--stream", "-"];
    args.extend(privilege_flags());
    let out = this_target!().run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // every process-creation and exec request, refused and counted
    let refused: &[&str] = if cfg!(target_arch = "aarch64") {
        &["clone (new process)", "execve", "execveat"]
    } else {
        &["clone (new process)", "fork", "vfork", "execve", "execveat"]
    };
    for name in refused {
        assert!(err.contains(&format!("attempted {name}")), "{name}: {err}");
        assert!(
            err.contains(&format!("probe: {name} refused (Operation not permitted")),
            "{name}: {err}"
        );
    }
    // clone3 hides its flags from the filter: refused outright, not counted
    assert!(
        err.contains("probe: clone3 refused (Function not implemented"),
        "{err}"
    );
    assert!(!err.contains("NOT refused"), "{err}");
    let frames = decode_all(&out.stdout);
    let Body::Bye(bye) = frames.last().unwrap().body else {
        panic!("no bye");
    };
    assert_eq!(bye.defects as usize, refused.len());
}

/// Without the `proof` feature (as it ships), the proof scripts' options
/// are unknown: a usage error before anything runs.
#[cfg(not(feature = "proof"))]
#[test]
fn proof_options_are_unknown_as_it_ships() {
    for opt in ["--self-check-probe", "--no-exit-demote", "--ballast-mib=1"] {
        let out = this_target!().run(&["-l", "10", "-q", opt]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opt}: {err}");
        assert!(err.contains("unknown option"), "{opt}: {err}");
    }
}

#[test]
fn break_stops_and_prints_cyclictest_lines() {
    let _g = serial();
    // -b 1: the first sample above 1 µs stops the run
    let mut args = vec!["-t", "2", "-b", "1", "-l", "100000", "-q"];
    args.extend(privilege_flags());
    let out = this_target!().run(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("# Thread Ids:"), "{text}");
    assert!(text.contains("# Break thread: "), "{text}");
    assert!(text.contains("# Break value: "), "{text}");
}

#[test]
fn histogram_text_has_every_row() {
    let _g = serial();
    let hist = std::env::temp_dir().join(format!("latscope-hist-{}.txt", std::process::id()));
    let hf = format!("--histfile={}", hist.display());
    let mut args = vec!["-t", "2", "-l", "300", "-q", "-H", "40", &hf];
    args.extend(privilege_flags());
    let out = this_target!().run(&args);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&hist).unwrap();
    let _ = std::fs::remove_file(&hist);
    let rows: Vec<&str> = text.lines().skip(1).take(40).collect();
    for (i, r) in rows.iter().enumerate() {
        assert!(r.starts_with(&format!("{i:06} ")), "row {i}: {r}");
        assert_eq!(r.split('\t').count(), 3, "two threads and the sum: {r}");
    }
    for key in [
        "# Total:",
        "# Min Latencies:",
        "# Avg Latencies:",
        "# Max Latencies:",
        "# Histogram Overflows:",
        "# Histogram Overflow at cycle number:",
        "# Thread 0:",
        "# Thread 1:",
    ] {
        assert!(text.contains(key), "{key}");
    }
}
