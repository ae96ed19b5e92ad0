//! The field's fork and exit failure modes, checked by mechanism rather
//! than by timing (the timings are figures from `bench/fork-repro` and
//! `bench/exit-stall`, not tests: a shared 2-CPU machine is too noisy for
//! latency thresholds).
//!
//! - fork: a fork loop in a sibling thread makes the RT thread of the same
//!   process take copy-on-write page faults after every fork; the same loop
//!   in a separate process does not touch it (`fork_repro`).
//! - exit: `--ballast-mib N` really locks N MiB; by default latscope demotes
//!   and unlocks before it exits, while the `--no-exit-demote` control exits
//!   at its real-time policy holding its locked memory (strace); a run
//!   that fails after set-up demotes and unlocks too.
//!
//! Needs root, and strace for the exit test.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use latscope_testkit::host::{bins, proof_bin, Reaper};
use latscope_testkit::{have, is_root, require};

/// `fork_repro MODE 2` -> its `minflt` (faults of the RT thread).
fn rt_thread_faults(mode: &str) -> (i64, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_fork_repro"))
        .args([mode, "2"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(
        o.status.success(),
        "{mode}: {line} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let f = line
        .split_whitespace()
        .skip_while(|w| *w != "minflt")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no minflt in {line:?}"));
    (f, line)
}

#[test]
fn only_an_in_process_fork_faults_the_rt_thread() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    let (inproc, l1) = rt_thread_faults("inproc");
    let (separate, l2) = rt_thread_faults("separate");
    let (none, l3) = rt_thread_faults("none");
    eprintln!("{l1}\n{l2}\n{l3}");
    // A stray first-touch fault or two is not the mechanism; hundreds are.
    assert!(none <= 5, "{l3}");
    assert!(
        separate <= 5,
        "a separate process's forks faulted the RT thread: {l2}"
    );
    assert!(
        inproc >= 100 && inproc >= 20 * (separate + 1),
        "an in-process fork loop should fault the RT thread (COW): {l1}"
    );
}

fn vmlck_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmLck:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn ballast_is_locked_while_running() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    let mut t = Reaper::new(
        Command::new(proof_bin())
            .args(["--ballast-mib", "64", "-t", "1", "-a", "0", "-i", "1000"])
            .args(["-D", "3", "-q", "--policy", "rr"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = t.child().id();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut peak = 0;
    while Instant::now() < deadline {
        peak = peak.max(vmlck_kib(pid));
        if peak >= 64 * 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(peak >= 64 * 1024, "VmLck {peak} kB < 64 MiB");
    assert!(t.wait(Duration::from_secs(20)).status.success());
}

/// strace of a short ballast run: the main thread's calls after the
/// measuring threads ended.
fn exit_trace(extra: &[&str]) -> String {
    let dir = latscope_testkit::Scratch::new("exit-trace");
    let out = dir.join("trace");
    let st = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=sched_setattr,munlockall,exit_group,exit",
        ])
        .arg("-o")
        .arg(&out)
        .arg(proof_bin())
        .args(["--ballast-mib", "16", "-t", "1", "-a", "0", "-i", "1000"])
        .args(["-l", "200", "-q", "--policy", "rr"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::read_to_string(&out).unwrap()
}

#[test]
fn exit_demotes_and_unlocks_by_default_and_not_with_the_control_flag() {
    require!(is_root(), "needs root (real-time policy and locked memory)");
    require!(have("strace"), "strace is not installed");
    let demote = exit_trace(&[]);
    let pid_of_main = |t: &str| {
        t.lines()
            .find(|l| l.contains("exit_group("))
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no exit_group: {t}"))
    };
    let main = pid_of_main(&demote);
    let main_calls: Vec<&str> = demote.lines().filter(|l| l.starts_with(&main)).collect();
    let unlock = main_calls
        .iter()
        .position(|l| l.contains("munlockall()"))
        .unwrap_or_else(|| panic!("default exit does not munlockall: {main_calls:#?}"));
    assert!(
        main_calls[..unlock]
            .iter()
            .any(|l| l.contains("sched_setattr") && l.contains("SCHED_OTHER")),
        "default exit: no demotion before munlockall: {main_calls:#?}"
    );

    let naive = exit_trace(&["--no-exit-demote"]);
    let main = pid_of_main(&naive);
    let main_calls: Vec<&str> = naive.lines().filter(|l| l.starts_with(&main)).collect();
    assert!(
        !main_calls.iter().any(|l| l.contains("munlockall()")),
        "--no-exit-demote must exit holding its locked memory: {main_calls:#?}"
    );
    let last_attr = main_calls
        .iter()
        .rev()
        .find(|l| l.contains("sched_setattr"))
        .unwrap_or_else(|| panic!("--no-exit-demote: main thread never takes RT: {main_calls:#?}"));
    assert!(
        last_attr.contains("SCHED_RR"),
        "--no-exit-demote: main thread exits at {last_attr}"
    );
}

/// A run that fails after set-up leaves as a completed one does: the main
/// thread demotes itself and unlocks memory before it exits. The failure:
/// a pinned SCHED_DEADLINE thread, which the kernel refuses (without an
/// exclusive cpuset) once memory is locked.
#[test]
fn a_run_that_fails_after_set_up_still_demotes_and_unlocks() {
    require!(is_root(), "needs root (locked memory)");
    require!(have("strace"), "strace is not installed");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    require!(
        cpus >= 2,
        "a pinned SCHED_DEADLINE thread is refused only beside other CPUs"
    );
    let dir = latscope_testkit::Scratch::new("exit-failed");
    let out = dir.join("trace");
    let o = Command::new("strace")
        .args(["-f", "-qq", "-e"])
        .arg("trace=mlockall,munlockall,sched_setattr,exit_group")
        .arg("-o")
        .arg(&out)
        .arg(bins().latscope)
        .args([
            "-t", "1", "-a", "0", "--policy", "deadline", "-l", "100", "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "the run must fail: {err}");
    assert!(err.contains("SCHED_DEADLINE"), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let main = text
        .lines()
        .find(|l| l.contains("exit_group("))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no exit_group: {text}"));
    let calls: Vec<&str> = text.lines().filter(|l| l.starts_with(main)).collect();
    let at = |what: &str| calls.iter().position(|l| l.contains(what));
    let locked = at("mlockall(").unwrap_or_else(|| panic!("never locked: {calls:#?}"));
    let unlocked = at("munlockall()")
        .unwrap_or_else(|| panic!("a failed run exits holding locked memory: {calls:#?}"));
    assert!(
        calls[locked..unlocked]
            .iter()
            .any(|l| l.contains("sched_setattr(0") && l.contains("SCHED_OTHER")),
        "a failed run: no demotion before munlockall: {calls:#?}"
    );
    assert!(at("exit_group(") > Some(unlocked), "{calls:#?}");
}
