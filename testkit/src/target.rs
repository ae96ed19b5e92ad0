//! Running the target program from a test, and reading its stream.
//!
//! Tests start processes (latscope itself, strace, prlimit, unshare) from
//! here; latscope never does (see the strace and self-check tests).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

use latscope_core::wire::{DecodeError, Decoder, Frame, LinkStats, MAX_FRAME};

use crate::precondition::is_root;

/// The `latscope` binary a test runs.
#[derive(Debug, Clone)]
pub struct Target {
    path: PathBuf,
}

/// The `latscope` binary cargo built for the calling integration test of
/// the `latscope` package (`CARGO_BIN_EXE_latscope`).
#[macro_export]
macro_rules! this_target {
    () => {
        $crate::target::Target::at(env!("CARGO_BIN_EXE_latscope"))
    };
}

impl Target {
    /// The binary at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Target {
        Target { path: path.into() }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A command running it with `args`, stdin from /dev/null.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.path);
        c.args(args).stdin(Stdio::null());
        c
    }

    /// Run it with `args` to its end, capturing both streams.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("latscope runs")
    }

    /// Start it with `args` and the [`privilege_flags`], its stdout to
    /// null and its stderr piped.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .args(privilege_flags())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("latscope starts")
    }
}

/// Flags that make a run possible without root (degrading honestly).
pub fn privilege_flags() -> Vec<&'static str> {
    if is_root() {
        vec![]
    } else {
        vec!["--best-effort"]
    }
}

/// A command for a test tool (strace, prlimit, unshare, setpriv).
pub fn tool(program: &str) -> Command {
    Command::new(program)
}

/// RT tests disturb each other on 2 CPUs: run them one at a time even if
/// the harness runs tests in parallel. Poison is fine: a failed test
/// already reported.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Decode every frame of a byte stream; panics on any link error.
pub fn decode_all(bytes: &[u8]) -> Vec<Frame> {
    let (frames, errors, stats) = decode_lenient(bytes);
    if let Some(e) = errors.first() {
        panic!("decode error {e:?} among {} frames", frames.len());
    }
    assert!(stats.is_clean(), "link stats {stats:?}");
    frames
}

/// Every whole frame of a byte stream that passes its check, the
/// rejections, and the link statistics (a stream still being written may
/// end inside a frame).
pub fn decode_lenient(bytes: &[u8]) -> (Vec<Frame>, Vec<DecodeError>, LinkStats) {
    let mut d: Box<Decoder<MAX_FRAME>> = Box::new(Decoder::new());
    let (mut frames, mut errors) = (Vec::new(), Vec::new());
    for f in d.frames(bytes) {
        match f {
            Ok(f) => frames.push(f),
            Err(e) => errors.push(e),
        }
    }
    (frames, errors, *d.stats())
}
