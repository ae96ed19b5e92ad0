//! `--deepest-idle-state` on this machine's own cpuidle states: the
//! measured CPU's deeper states are disabled while the run measures and
//! written back when it ends, and after a SIGKILL the next start writes
//! them back. (A fake sysfs covers the rest, beside the code.)

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use latscope_testkit::target::{serial, tool};
use latscope_testkit::wait::within;
use latscope_testkit::{is_root, require};
use rustix::process::{kill_process, Pid, Signal};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// `disable` of CPU 0's idle states, in order.
fn cpu0_states() -> Vec<String> {
    (0..)
        .map(|k| {
            PathBuf::from(format!(
                "/sys/devices/system/cpu/cpu0/cpuidle/state{k}/disable"
            ))
        })
        .take_while(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap().trim().to_string())
        .collect()
}

/// A run on CPU 0 that allows state 0 only, for `secs`.
fn start(secs: &str) -> Child {
    tool(BIN)
        .args([
            "-t",
            "1",
            "-a",
            "0",
            "-q",
            "-D",
            secs,
            "--deepest-idle-state",
            "0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What CPU 0's states are while a run limits them: state 0 as it was,
/// every deeper one disabled.
fn limited(before: &[String]) -> Vec<String> {
    let mut want = vec!["1".to_string(); before.len()];
    want[0] = before[0].clone();
    want
}

#[test]
fn deeper_idle_states_are_disabled_while_measuring_and_written_back_after() {
    require!(is_root(), "writing cpuidle's disable files needs root");
    let before = cpu0_states();
    require!(
        before.len() >= 2,
        "CPU 0 has fewer than 2 cpuidle states (no cpuidle driver)"
    );
    require!(
        before.iter().all(|v| v == "0"),
        format!("CPU 0's idle states are not all enabled to begin with: {before:?}")
    );
    let _g = serial();
    let child = start("3");
    let want = limited(&before);
    let during = within(Duration::from_secs(5), || cpu0_states() == want);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(during, "CPU 0's states never became {want:?}");
    assert_eq!(cpu0_states(), before, "written back at exit");
    assert!(
        stdout.contains(&format!(
            "# idle states deeper than 0 disabled on CPUs 0 ({} of them)",
            before.len() - 1
        )),
        "{stdout}"
    );
    assert!(
        stderr.contains("not setting cpu_dma_latency, --deepest-idle-state is set instead"),
        "{stderr}"
    );
}

#[test]
fn a_killed_runs_idle_states_are_written_back_at_the_next_start() {
    require!(is_root(), "writing cpuidle's disable files needs root");
    let before = cpu0_states();
    require!(
        before.len() >= 2,
        "CPU 0 has fewer than 2 cpuidle states (no cpuidle driver)"
    );
    let _g = serial();
    let mut child = start("30");
    let pid = child.id();
    let want = limited(&before);
    let limited_now = within(Duration::from_secs(5), || cpu0_states() == want);
    kill_process(Pid::from_child(&child), Signal::KILL).unwrap();
    let _ = child.wait();
    let _ = std::fs::remove_file(format!("/dev/shm/cyclictest{pid}"));
    assert!(limited_now, "CPU 0's states never became {want:?}");
    let saved = format!("/dev/shm/latscope-cpuidle{pid}");
    assert!(
        std::path::Path::new(&saved).exists(),
        "the killed run's saved values are gone"
    );
    assert_eq!(cpu0_states(), want, "a SIGKILL leaves them limited");
    // the next start, whatever it measures, writes them back
    let out = tool(BIN)
        .args(["-t", "1", "-l", "10", "-q"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(cpu0_states(), before, "not written back: {stderr}");
    assert!(
        stderr.contains("its limit on the idle states of CPUs 0 (written back)"),
        "{stderr}"
    );
    assert!(!std::path::Path::new(&saved).exists());
}

#[test]
fn a_deeper_state_than_the_kernel_knows_or_below_minus_one_is_a_usage_error() {
    for bad in ["-2", "10"] {
        let out = tool(BIN)
            .args(["-l", "1", "--deepest-idle-state", bad])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{bad}: {stderr}");
        assert!(stderr.contains("--deepest-idle-state"), "{bad}: {stderr}");
    }
}
