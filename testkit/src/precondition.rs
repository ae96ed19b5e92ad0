//! What a test needs from the machine, and what happens when it is missing.
//!
//! A test that cannot run here (no root, no `strace`, no tracefs, no qemu,
//! no kernels) calls [`missing`] and returns:
//!
//! * under CI (`CI=true`, exactly; `.ci/run` exports it) the test **fails**,
//!   naming what is missing: CI installs everything, so a missing piece is a
//!   broken machine, never a pass;
//! * elsewhere it prints one line `skipped: <test>: <why>` and passes.
//!   libtest has no run-time skip, so the line is written to standard error
//!   past the harness's capture, where `cargo test` always shows it. A
//!   runner may still hide a passing test's output (cargo-nextest does), so
//!   when [`SKIP_LOG`] names a file the line is also appended to it;
//!   `scripts/test` sets it and counts the file's lines.
//!
//! [`require!`](crate::require) is the short form. A test that is switched
//! off on purpose (e.g. `LATSCOPE_BOARD_TESTS=0`) calls [`switched_off`],
//! which prints the same line but never fails.

use std::io::Write;
use std::path::Path;

/// The environment variable naming a file that every skip line is also
/// appended to (`scripts/test` sets it, and counts the lines).
pub const SKIP_LOG: &str = "LATSCOPE_SKIP_LOG";

/// Whether this runs under CI: the environment variable `CI` is exactly
/// `true`.
pub fn ci() -> bool {
    is_ci_value(std::env::var_os("CI").as_deref())
}

fn is_ci_value(v: Option<&std::ffi::OsStr>) -> bool {
    v.is_some_and(|v| v == "true")
}

/// A precondition of the running test is missing: under CI, fail naming
/// `what`; elsewhere print `skipped: <test>: <what>` (the caller returns).
#[track_caller]
pub fn missing(what: &str) {
    if ci() {
        panic!("CI=true and this test cannot run: {what}");
    }
    skipped_line(what);
}

/// The running test is switched off on purpose: print `skipped: <test>:
/// <why>`, also under CI (the caller returns).
pub fn switched_off(why: &str) {
    skipped_line(why);
}

fn skipped_line(why: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("<unnamed test>");
    let line = format!("skipped: {test}: {why}\n");
    // Straight to the stream: libtest captures print! and eprint!, not this.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        // One write to a file opened for appending: the lines of tests
        // running at once in other processes do not interleave.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .unwrap_or_else(|e| panic!("cannot count this skip in {log:?}: {e}"));
    }
}

/// Return from the calling test unless `cond` holds; see [`missing`].
///
/// ```ignore
/// require!(is_root(), "needs root (it drops privileges from root)");
/// require!(have("strace"), "strace is not installed");
/// ```
#[macro_export]
macro_rules! require {
    ($cond:expr, $what:expr) => {
        if !$cond {
            $crate::precondition::missing(&$what);
            return;
        }
    };
}

/// Whether this process runs as root (real-time settings, tracefs and
/// namespaces need it).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether `tool` is an executable file on `PATH`.
pub fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Where tracefs is mounted with trace instances, if it is.
pub fn tracefs() -> Option<&'static Path> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.join("instances").is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_exactly_true() {
        let v = |s: &str| is_ci_value(Some(std::ffi::OsStr::new(s)));
        assert!(v("true"));
        for other in ["1", "yes", "TRUE", "true ", ""] {
            assert!(!v(other), "{other:?}");
        }
        assert!(!is_ci_value(None));
    }

    /// Run only by [`missing_skips_or_fails`], in a child process.
    #[test]
    #[ignore = "run by missing_skips_or_fails with and without CI=true"]
    fn calls_missing() {
        missing("no such thing");
    }

    #[test]
    fn missing_skips_or_fails() {
        let dir = crate::Scratch::new("precondition");
        // The child's own skip log: this test's skip is not one of the run's.
        let log = dir.join("skips");
        let run = |ci: Option<&str>| {
            let _ = std::fs::remove_file(&log);
            let mut c = std::process::Command::new(std::env::current_exe().unwrap());
            c.args(["--ignored", "--exact", "precondition::tests::calls_missing"]);
            c.env(SKIP_LOG, &log);
            match ci {
                Some(v) => c.env("CI", v),
                None => c.env_remove("CI"),
            };
            let out = c.output().expect("run the test binary");
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            // the skip line on stderr; libtest reports a failure on stdout
            let output = text(&out.stderr) + &text(&out.stdout);
            (out.status.success(), output, logged)
        };
        let line = "skipped: precondition::tests::calls_missing: no such thing\n";
        for ci in [None, Some("1"), Some("yes")] {
            let (ok, err, logged) = run(ci);
            assert!(ok, "CI={ci:?}: {err}");
            assert_eq!(err.matches(line).count(), 1, "CI={ci:?}: {err}");
            assert_eq!(logged, line, "CI={ci:?}: the skip log");
        }
        let (ok, err, logged) = run(Some("true"));
        assert!(!ok, "under CI=true a missing precondition fails");
        assert!(err.contains("this test cannot run: no such thing"), "{err}");
        assert!(!err.contains("skipped:"), "{err}");
        assert_eq!(logged, "", "a failure is not a skip");
    }

    #[test]
    fn tools_on_path_are_found() {
        assert!(have("sh"), "sh is on every PATH");
        assert!(!have("latscope-no-such-tool"));
    }
}
