//! The exit discipline on the panic path: a panic on any thread demotes
//! every registered measuring thread to `SCHED_OTHER` and unlocks memory
//! before the process ends. The panic runs in a child process (this test
//! binary, run again for its ignored half), because it locks memory and
//! installs the hook for good.

use std::process::Command;

use latscope::testing::{panic_beside_a_real_time_thread, AfterPanic};
use latscope_testkit::{is_root, require};

#[test]
#[ignore = "run by a_panic_demotes_every_measuring_thread_and_unlocks in a child process"]
fn panics_beside_a_real_time_thread() {
    require!(is_root(), "needs root (SCHED_FIFO, locked memory)");
    let after = panic_beside_a_real_time_thread();
    let want = AfterPanic {
        demoted: true,
        locked_kib: 0,
    };
    assert_eq!(
        after, want,
        "the hook demotes the thread and unlocks memory"
    );
}

#[test]
fn a_panic_demotes_every_measuring_thread_and_unlocks() {
    require!(is_root(), "needs root (SCHED_FIFO, locked memory)");
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--ignored", "--exact", "--test-threads=1"])
        .arg("panics_beside_a_real_time_thread")
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}
