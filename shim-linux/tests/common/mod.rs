//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;

use latscope_core::wire::{Decoder, Frame, MAX_FRAME};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// RT tests disturb each other on 2 CPUs: run them one at a time even if
/// the harness runs tests in parallel.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// Take the serial lock (poison is fine: a failed test already reported).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether we run as root (RT tests need it; CI is root).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A command for a test tool or the binary under test. Tests start
/// processes (latscope itself, strace, prlimit, unshare) from this one
/// place; latscope never does (see the strace and self-check tests).
pub fn tool(program: &str) -> Command {
    Command::new(program)
}

/// Run latscope with `args`, capturing both streams.
pub fn run(args: &[&str]) -> Output {
    tool(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("latscope runs")
}

/// Start latscope with `args` and the privilege flags, its stdout to
/// null and its stderr piped.
pub fn spawn(args: &[&str]) -> Child {
    tool(BIN)
        .args(args)
        .args(privilege_flags())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("latscope starts")
}

/// Decode every frame of a byte stream; panics on any link error.
pub fn decode_all(bytes: &[u8]) -> Vec<Frame> {
    let mut d: Box<Decoder<MAX_FRAME>> = Box::new(Decoder::new());
    let mut frames = Vec::new();
    let mut rest = bytes;
    loop {
        let (got, r) = d.feed(rest);
        let none = got.is_none();
        match got {
            Some(Ok(f)) => frames.push(f),
            Some(Err(e)) => panic!("decode error {e:?} after {} frames", frames.len()),
            None => {}
        }
        if r.is_empty() && none {
            break;
        }
        rest = r;
    }
    assert!(d.stats().is_clean(), "link stats {:?}", d.stats());
    frames
}

/// Whether a tool is on PATH.
pub fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Under CI a missing tool is a failure with a clear message; elsewhere the
/// test is skipped (returns false).
pub fn require(tool: &str) -> bool {
    if have(tool) {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{tool} is required under CI=true but is not installed (the CI script installs it)");
    }
    eprintln!("skipping: {tool} not installed");
    false
}

/// Flags that make a run possible without root (degrading honestly).
pub fn privilege_flags() -> Vec<&'static str> {
    if is_root() {
        vec![]
    } else {
        vec!["--best-effort"]
    }
}
