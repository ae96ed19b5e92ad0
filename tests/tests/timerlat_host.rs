//! `--timerlat` on a kernel without the timerlat tracer (this machine's):
//! one line and exit status 1, or with `--best-effort` a run with
//! `clock_nanosleep` whose report says so; and the mode's refusals, each
//! in one line naming what to drop. The board tests run the mode itself
//! (`board.rs`).

use std::process::{Command, Output, Stdio};

use latscope_testkit::host::bins;
use latscope_testkit::{is_root, missing};

/// Whether this kernel lists the timerlat tracer (`None`: no tracefs to
/// ask).
fn kernel_has_timerlat() -> Option<bool> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .find_map(|d| std::fs::read_to_string(format!("{d}/available_tracers")).ok())
        .map(|t| t.split_whitespace().any(|w| w == "timerlat"))
}

fn latscope(args: &[&str]) -> Output {
    Command::new(bins().latscope)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("latscope runs")
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The kernel without timerlat, as root (tracefs is root's).
fn precondition() -> bool {
    if !is_root() {
        missing("root, to read tracefs");
        return false;
    }
    match kernel_has_timerlat() {
        Some(false) => true,
        Some(true) => {
            missing(
                "a kernel without the timerlat tracer (this one has it; the board test runs it)",
            );
            false
        }
        None => {
            missing("a mounted tracefs");
            false
        }
    }
}

#[test]
fn without_the_tracer_one_line_and_exit_1() {
    if !precondition() {
        return;
    }
    let o = latscope(&["--timerlat", "-t", "1", "-a", "0", "-D", "1", "-q"]);
    let err = lines(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err:?}");
    assert_eq!(
        err,
        ["latscope: --timerlat: this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)"]
    );
    // nothing measured, nothing printed
    assert!(o.stdout.is_empty(), "{:?}", lines(&o.stdout));
}

#[test]
fn best_effort_measures_with_clock_nanosleep_and_says_so() {
    if !precondition() {
        return;
    }
    let o = latscope(&[
        "--timerlat",
        "--best-effort",
        "-t",
        "1",
        "-a",
        "0",
        "-l",
        "300",
        "-q",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let said = "--timerlat: this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER); \
                measured with clock_nanosleep instead (--best-effort)";
    // at the start, and in the end-of-run report
    assert!(
        err.contains(&format!("latscope: degraded: {said}")),
        "{err}"
    );
    assert!(err.contains(&format!("# degraded run: {said}")), "{err}");
    assert!(out.contains("C:    300"), "{out}");
    assert!(!out.contains("# timerlat"), "{out}");
}

#[test]
fn the_modes_refusals_name_what_to_drop() {
    for (args, says) in [
        (&["-t", "1"][..], "needs -a (or -S)"),
        (
            &["-a", "0", "-i", "50"],
            "-i 50: the kernel's timerlat period is 100 us to 1000000 us",
        ),
        (&["-a", "0", "-i", "2000000"], "-i 2000000"),
        (
            &["-a", "0,1", "-t", "2", "-d", "100"],
            "-d 100: the kernel's timerlat period is one for all threads",
        ),
        (&["-a", "0", "-r"], "drop -r, -s and -x"),
        (&["-a", "0", "-x"], "drop -r, -s and -x"),
        (&["-a", "0", "-A", "10"], "drop -A and --secaligned"),
        (&["-a", "0", "--stream", "-"], "drop --stream"),
    ] {
        let mut all = vec!["--timerlat", "-D", "1"];
        all.extend(args);
        let o = latscope(&all);
        let err = lines(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err:?}");
        assert_eq!(err.len(), 1, "{all:?}: {err:?}");
        assert!(
            err[0].starts_with("latscope: --timerlat: ") && err[0].contains(says),
            "{all:?}: {err:?}"
        );
    }
}

/// latscope under the name `rtla` (a link in a scratch directory), run
/// with `args`.
fn as_rtla(dir: &latscope_testkit::Scratch, args: &[&str]) -> Output {
    let link = dir.join("rtla");
    if !link.exists() {
        std::os::unix::fs::symlink(bins().latscope, &link).expect("link latscope as rtla");
    }
    Command::new(&link)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("latscope runs as rtla")
}

#[test]
fn as_rtla_without_the_tracer_it_fails_and_prints_no_text() {
    if !precondition() {
        return;
    }
    let dir = latscope_testkit::Scratch::new("as-rtla");
    // rteval 3.10's list, and its form without an interval (an empty word)
    for interval in ["-p100", ""] {
        let o = as_rtla(
            &dir,
            &[
                "timerlat",
                "hist",
                interval,
                "-P",
                "f:95",
                "-u",
                "-c0",
                "-E3500",
                "--no-summary",
                "--no-aa",
                "--dma-latency=0",
            ],
        );
        let err = lines(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{interval:?}: {err:?}");
        assert_eq!(
            err,
            ["latscope: --timerlat: this kernel has no timerlat tracer (CONFIG_TIMERLAT_TRACER)"]
        );
        assert!(o.stdout.is_empty(), "{:?}", lines(&o.stdout));
    }
}

#[test]
fn as_rtla_what_it_cannot_honour_is_refused_by_name() {
    let dir = latscope_testkit::Scratch::new("as-rtla-refused");
    for (args, says) in [
        (
            &["timerlat", "top"][..],
            "latscope: rtla timerlat top is not supported",
        ),
        (
            &["timerlat", "hist", "-k"],
            "latscope: -k/--kernel-threads is not supported",
        ),
        (
            &["timerlat", "hist", "-T", "100", "--no-aa"],
            "latscope: -i/-T is not supported",
        ),
        (
            &["timerlat", "hist", "-a", "100"],
            "latscope: -a/--auto is not supported",
        ),
        (&["timerlat", "hist", "-p", ""], "latscope: -p"),
        (&["timerlat", "hist", "--bogus"], "latscope: "),
    ] {
        let o = as_rtla(&dir, args);
        let err = lines(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err:?}");
        assert_eq!(err.len(), 1, "{args:?}: {err:?}");
        assert!(err[0].starts_with(says), "{args:?}: {err:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}
