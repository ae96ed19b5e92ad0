//! TCP disconnects, harder than `stream_tcp.rs`'s single restart: the
//! listening host is killed twice (SIGKILL, then SIGTERM), and stays away
//! for 2 s the second time, so the target's reconnect backoff is exercised.
//! The target must keep measuring throughout (its cycle count is the full
//! run's), reconnect each time with a hello and a cumulative snapshot, and
//! the last connection's final report must be exact: equal to the target's
//! own `--json`. The earlier recordings are cut, decode, and are flagged
//! incomplete.

use std::path::{Path, PathBuf};
use std::time::Duration;

use latscope_testkit::host::{
    assert_cut_recording, assert_matches_target, first_run, host_report_json, listening_host,
    listening_host_anywhere, only_recording, read_json, spawn_target, wait_streaming,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::Scratch;

#[test]
fn target_survives_two_host_restarts_and_the_last_connection_is_exact() {
    let dir = Scratch::new("tcp-restart");
    let dirs: Vec<PathBuf> = (1..=3).map(|i| dir.join(format!("conn{i}"))).collect();
    // the first host's port, where the restarted ones listen too
    let (mut h1, listen) = listening_host_anywhere(&dirs[0]);
    let spawn_host = |out: &Path| listening_host(&listen, out);
    let json = dir.join("t.json");
    let secs = 9u64;
    let mut t = spawn_target(&secs.to_string(), &json, &format!("tcp:{listen}"));
    wait_streaming(&dirs[0]);
    // First: SIGKILL, restart at once.
    h1.child().kill().unwrap();
    let _ = h1.wait(Duration::from_secs(5));
    let mut h2 = spawn_host(&dirs[1]);
    wait_streaming(&dirs[1]);
    // Second: SIGTERM, nobody listens for 2 s (the scenario: a gap long
    // enough for the reconnect backoff to grow, not a wait).
    let pid = rustix::process::Pid::from_raw(h2.child().id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let _ = h2.wait(Duration::from_secs(5));
    std::thread::sleep(Duration::from_secs(2));
    let mut h3 = spawn_host(&dirs[2]);
    let tr = t.wait(Duration::from_secs(60));
    assert_run_ok(&tr);
    let r3 = h3.wait(Duration::from_secs(30));
    assert_eq!(r3.status.code(), Some(0), "last host");

    // The target kept measuring: its cycle count is the whole run's
    // (1 ms interval), whatever the link did.
    let target = read_json(&json);
    for th in ["0", "1"] {
        let cycles = target["thread"][th]["cycles"].as_u64().unwrap();
        let missed = target["thread"][th]["missed"].as_u64().unwrap_or(0);
        assert!(
            cycles + missed >= secs * 1000 * 95 / 100,
            "thread {th}: {cycles} cycles + {missed} missed in {secs} s"
        );
    }
    // Cut recordings decode and are flagged incomplete.
    for d in &dirs[..2] {
        assert_cut_recording(d);
    }
    // The last connection is exact at the end.
    let (d3, code3, stderr) = host_report_json(&only_recording(&dirs[2]));
    assert_eq!(code3, 0, "{stderr}");
    let run = first_run(&d3);
    assert_eq!(run["exact_at_end"], true);
    assert_matches_target(run, &target);
}
