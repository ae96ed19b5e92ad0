//! PID 1 mode, in a new PID and mount namespace: latscope mounts what it
//! needs, runs, syncs and "powers off" (in a PID namespace the kernel turns
//! the power-off into SIGINT for the namespace's init).

use std::os::unix::process::ExitStatusExt;

use latscope_core::wire::{Body, ByeReason};
use latscope_testkit::target::{decode_all, serial, tool};
use latscope_testkit::{have, is_root, require};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

#[test]
fn runs_as_pid_1_and_powers_off() {
    require!(is_root(), "PID and mount namespaces need root");
    require!(have("unshare"), "unshare is not installed");
    let _g = serial();
    let path = std::env::temp_dir().join(format!("latscope-pid1-{}.bin", std::process::id()));
    let dest = path.to_str().unwrap();
    let out = tool("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount",
            "--propagation",
            "private",
            BIN,
            "-D",
            "1s",
            "-i",
            "1000",
            "-t",
            "2",
            "-q",
            "--stream",
            dest,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // the tmpfs on /dev/shm is there for the snapshot file
    assert!(!stderr.contains("snapshot file"), "{stderr}");
    // killed by SIGINT (the namespace's power-off), or unshare reporting it as 130
    let powered_off = out.status.signal() == Some(2) || out.status.code() == Some(128 + 2);
    assert!(
        powered_off,
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("T:")).count(),
        2,
        "{stdout}"
    );
    // /proc was mounted for the namespace: the measuring threads are TIDs 2 and 3
    assert!(
        stdout.contains("(    2)") && stdout.contains("(    3)"),
        "{stdout}"
    );
    let frames = decode_all(&std::fs::read(&path).unwrap());
    let _ = std::fs::remove_file(&path);
    let Body::Bye(bye) = frames.last().unwrap().body else {
        panic!("bye last (synced before power-off)")
    };
    assert_eq!(bye.reason, ByeReason::Completed);
}
