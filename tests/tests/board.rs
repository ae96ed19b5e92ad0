//! latscope on emulated ARM, end to end.
//!
//! - An emulated board: qemu-system boots a Debian kernel (PREEMPT_RT for
//!   aarch64) with an initramfs whose `/init` is the static `latscope`
//!   binary. It measures on the guest's CPUs and streams to the second UART
//!   (`/dev/ttyAMA1`), which qemu connects to a TCP listener of this test;
//!   the recorded stream is decoded and checked.
//! - A qemu-user smoke run of each ARM binary: a short measurement whose
//!   output and stream file are checked.
//!
//! Needs the tools `.ci/run setup` installs. Outside CI a missing tool skips
//! a test with a message; with `CI=true` it fails. `LATSCOPE_BOARD_TESTS=0`
//! switches these tests off (CI runs them in a stage of their own).

#[path = "../src/board.rs"]
mod board;
#[path = "../src/qemu.rs"]
mod qemu;

use std::time::Duration;

use board::{check, decode, describe, Expect};
use qemu::{latscope_binary, run_user, unavailable, Arch, Board, Scratch, BOOT_TIMEOUT};

const INTERVAL_US: u64 = 1000;
const BOARD_SECS: u64 = 5;
const USER_SECS: u64 = 1;

fn arch_prefix(arch: Arch) -> &'static str {
    match arch {
        Arch::Aarch64 => "aarch64",
        Arch::Armv7 => "arm",
    }
}

fn board_run(arch: Arch) {
    if qemu::board_tests_disabled() {
        latscope_tests::switched_off("LATSCOPE_BOARD_TESTS=0");
        return;
    }
    let Some(board) = Board::find(arch) else {
        return;
    };
    let Some(bin) = latscope_binary(arch) else {
        return;
    };
    let args =
        format!("-t 2 -a 0,1 -i {INTERVAL_US} -D {BOARD_SECS}s -q --stream serial:/dev/ttyAMA1");
    eprintln!(
        "board {arch:?}: {} with {} ({} bytes), init args: {args}",
        board.kernel.display(),
        bin.display(),
        std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0)
    );
    let boot = board
        .boot(&bin, &args, BOOT_TIMEOUT)
        .unwrap_or_else(|e| panic!("board {arch:?} did not complete: {e}"));
    let sum = decode(&boot.stream);
    let report = describe(&sum);
    eprintln!(
        "board {arch:?}: qemu exit {} after {:.2} s; first stream byte at {:?}, first frame at {:?}; {} stream bytes\n{report}",
        boot.status,
        boot.total.as_secs_f64(),
        boot.first_byte.map(|d| format!("{:.2} s", d.as_secs_f64())),
        boot.first_frame.map(|d| format!("{:.2} s", d.as_secs_f64())),
        boot.stream.len()
    );
    let bad = check(
        &sum,
        &Expect {
            arch_prefix: arch_prefix(arch),
            threads: 2,
            interval_ns: INTERVAL_US * 1000,
            duration_ns: BOARD_SECS * 1_000_000_000,
        },
    );
    assert!(
        bad.is_empty() && boot.status.success(),
        "board {arch:?} run failed (qemu {}):\n  {}\n{report}--- console ---\n{}",
        boot.status,
        bad.join("\n  "),
        boot.console
    );
}

#[test]
fn board_aarch64_rt_kernel_streams_over_serial() {
    board_run(Arch::Aarch64);
}

#[test]
fn board_armv7_streams_over_serial() {
    board_run(Arch::Armv7);
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn user_smoke(arch: Arch) {
    if qemu::board_tests_disabled() {
        latscope_tests::switched_off("LATSCOPE_BOARD_TESTS=0");
        return;
    }
    if qemu::which(arch.qemu_user()).is_none() {
        let _: Option<()> = unavailable(&format!("{} is not installed", arch.qemu_user()));
        return;
    }
    let Some(bin) = latscope_binary(arch) else {
        return;
    };
    let scratch = Scratch::new("user").expect("scratch dir");
    let stream = scratch.path().join("stream.bin");
    let stream_arg = stream.to_str().expect("utf-8 temp path");
    let duration = format!("{USER_SECS}s");
    let interval = INTERVAL_US.to_string();
    let mut args = vec![
        "-i", &interval, "-D", &duration, "-q", "--stream", stream_arg,
    ];
    if !is_root() {
        // No RT priority or mlock without privileges.
        args.push("--best-effort");
    }
    let run = run_user(arch, &bin, &args, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{} {}: {e}", arch.qemu_user(), bin.display()));
    eprintln!(
        "qemu-user {arch:?}: {} in {:.2} s\n{}{}",
        run.status,
        run.elapsed.as_secs_f64(),
        run.stdout,
        run.stderr
    );
    assert!(
        run.status.success(),
        "latscope under {} failed: {}\n{}{}",
        arch.qemu_user(),
        run.status,
        run.stdout,
        run.stderr
    );
    // -q prints only the final summary line per thread, cyclictest style.
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(
        out.contains("T:") && out.contains("C:") && out.contains("Max:"),
        "no cyclictest-style summary in the output:\n{out}"
    );
    let bytes = std::fs::read(&stream).expect("stream file written");
    let sum = decode(&bytes);
    let report = describe(&sum);
    eprintln!("{report}");
    let bad = check(
        &sum,
        &Expect {
            arch_prefix: arch_prefix(arch),
            threads: 1,
            interval_ns: INTERVAL_US * 1000,
            duration_ns: USER_SECS * 1_000_000_000,
        },
    );
    assert!(
        bad.is_empty(),
        "stream of the qemu-user run:\n  {}\n{report}",
        bad.join("\n  ")
    );
}

#[test]
fn qemu_user_smoke_aarch64() {
    user_smoke(Arch::Aarch64);
}

#[test]
fn qemu_user_smoke_armv7() {
    user_smoke(Arch::Armv7);
}

/// Encodes statistics and a bye as the target would, for the checks below.
fn synthetic_stream(cycles: u64, missed: u64, elapsed_ns: u64, with_bye: bool) -> Vec<u8> {
    use latscope_core::wire::{Body, Bye, ByeReason, Encoder, ThreadStats};
    let mut enc = Box::new(Encoder::new());
    let mut out = Vec::new();
    let stats = ThreadStats {
        thread: 0,
        epoch: 5,
        elapsed_ns,
        cycles,
        count: cycles,
        missed,
        last_report: true,
        ..ThreadStats::default()
    };
    out.extend_from_slice(enc.frame(Body::Stats(stats)).expect("encode stats"));
    if with_bye {
        let bye = Bye {
            reason: ByeReason::Completed,
            epoch: 5,
            elapsed_ns,
            threads: 1,
            cycles,
            max_ns: 0,
            frames_dropped: 0,
            defects: 0,
            ended: None,
        };
        out.extend_from_slice(enc.frame(Body::Bye(bye)).expect("encode bye"));
    }
    out
}

const ONE_SECOND_AT_1KHZ: Expect<'static> = Expect {
    arch_prefix: "aarch64",
    threads: 1,
    interval_ns: 1_000_000,
    duration_ns: 1_000_000_000,
};

/// Missed periods count towards the run's periods; a shortfall is caught.
#[test]
fn stream_check_counts_missed_periods() {
    let good = check(
        &decode(&synthetic_stream(990, 11, 1_000_000_000, true)),
        &ONE_SECOND_AT_1KHZ,
    );
    assert!(!good.iter().any(|b| b.contains("thread 0")), "{good:?}");
    assert!(!good.iter().any(|b| b.contains("bye")), "{good:?}");

    let short = check(
        &decode(&synthetic_stream(990, 5, 1_000_000_000, true)),
        &ONE_SECOND_AT_1KHZ,
    );
    assert!(
        short
            .iter()
            .any(|b| b.contains("thread 0: cycles 990 + missed 5")),
        "{short:?}"
    );
}

/// A run that stopped early is caught even when its accounting adds up
/// to its own run time.
#[test]
fn stream_check_wants_the_requested_run_time() {
    let early = check(
        &decode(&synthetic_stream(500, 0, 500_000_000, true)),
        &ONE_SECOND_AT_1KHZ,
    );
    assert!(
        early.iter().any(|b| b.contains("thread 0: ran")),
        "{early:?}"
    );
    assert!(
        early.iter().any(|b| b.contains("thread 0: cycles 500")),
        "{early:?}"
    );

    let late_report = check(
        &decode(&synthetic_stream(1000, 0, 1_100_000_000, true)),
        &ONE_SECOND_AT_1KHZ,
    );
    assert!(
        !late_report.iter().any(|b| b.contains("thread 0")),
        "{late_report:?}"
    );
}

/// A corrupted frame shows up as a CRC error, and a lost bye is caught.
#[test]
fn stream_check_reports_corruption_and_missing_bye() {
    let mut bytes = synthetic_stream(1000, 0, 1_000_000_000, false);
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    let bad = check(&decode(&bytes), &ONE_SECOND_AT_1KHZ);
    assert!(bad.iter().any(|b| b.starts_with("link errors")), "{bad:?}");
    assert!(bad.iter().any(|b| b == "no bye frame"), "{bad:?}");
}

/// The stream checks must be able to fail: an empty or cut stream is caught.
#[test]
fn stream_check_rejects_an_empty_stream() {
    let sum = decode(&[]);
    let bad = check(
        &sum,
        &Expect {
            arch_prefix: "aarch64",
            threads: 1,
            interval_ns: 1_000_000,
            duration_ns: 1_000_000_000,
        },
    );
    assert!(bad.iter().any(|b| b.contains("no hello")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("no bye")), "{bad:?}");
}
