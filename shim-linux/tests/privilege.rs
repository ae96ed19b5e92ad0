//! Missing privileges: uid 0 without capabilities and with zero RT and
//! memlock limits. Either one clear line naming the missing privilege and
//! the flags that run without it (exit status 3), or with --best-effort a
//! degraded run that says so in the output and the stream.

mod common;

use common::*;
use latscope_core::wire::{Body, Level};

fn unprivileged(args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "--memlock=0",
        "--rtprio=0",
        "setpriv",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
        BIN,
    ];
    all.extend_from_slice(args);
    tool("prlimit").args(&all).output().unwrap()
}

#[test]
fn missing_privilege_is_one_clear_line_or_an_honest_degradation() {
    if !is_root() {
        eprintln!("skipping: drops privileges from root");
        return;
    }
    if !require("setpriv") || !require("prlimit") {
        return;
    }
    let _g = serial();
    let out = unprivileged(&["-l", "100", "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let line = err.lines().find(|l| l.starts_with("latscope: ")).unwrap();
    assert!(
        line.contains("mlockall") && line.contains("--no-mlock"),
        "{line}"
    );

    let out = unprivileged(&["-l", "100", "-q", "--no-mlock"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let line = err.lines().find(|l| l.starts_with("latscope: ")).unwrap();
    assert!(
        line.contains("SCHED_FIFO") && line.contains("--policy other"),
        "{line}"
    );

    let out = unprivileged(&["-l", "100", "-q", "--best-effort", "--stream", "-"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("# degraded run:"), "{err}");
    let frames = decode_all(&out.stdout);
    let Body::Hello(h) = &frames[0].body else {
        panic!("hello first")
    };
    assert!(h.config.degraded.no_rt_policy && h.config.degraded.no_mlock);
    assert!(!h.config.mlock);
    assert!(frames
        .iter()
        .any(|f| matches!(&f.body, Body::Log(l) if l.level == Level::Warn)));

    // a non-RT policy needs no privilege and gets 1 ns timer slack
    let out = unprivileged(&[
        "-l",
        "100",
        "-q",
        "--policy",
        "other",
        "--no-mlock",
        "--stream",
        "-",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = decode_all(&out.stdout);
    let Body::Hello(h) = &frames[0].body else {
        panic!("hello first")
    };
    assert_eq!(h.config.timer_slack_ns, 1);
}
