//! System-call discipline, observed with strace: one clock_nanosleep per
//! cycle and nothing else (each other wake-up mode: its own wait once per
//! cycle), thread clones only, and the exit order.
//!
//! These need strace (and root for the RT policy; without root they run
//! with --best-effort). Under CI=true a missing strace fails the test.

use std::collections::BTreeMap;

use latscope_tests::target::{privilege_flags, serial, tool};
use latscope_tests::{have, is_root, require};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("latscope-{}-{name}", std::process::id()))
}

/// `strace -f OPTS` of one run of latscope with `args` and the privilege
/// flags, which must succeed: strace's output.
fn strace(opts: &[&str], name: &str, args: &[&str]) -> String {
    let out = tmp(name);
    let mut all = vec!["-f"];
    all.extend(opts);
    all.extend(["-o", out.to_str().unwrap(), BIN]);
    all.extend(args);
    all.extend(privilege_flags());
    let st = tool("strace").args(&all).output().expect("strace runs");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    text
}

/// `strace -f -c` call counts per syscall of one run with `extra` options.
fn syscall_counts(loops: u64, extra: &[&str]) -> BTreeMap<String, u64> {
    let l = loops.to_string();
    let mut args = vec!["-t", "1", "-i", "200", "-l", &l, "-q"];
    args.extend(extra);
    let text = strace(&["-c"], &format!("c{loops}.txt"), &args);
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors], syscall
        if f.len() >= 5 && f[0].parse::<f64>().is_ok() {
            let name = f[f.len() - 1].to_string();
            if name == "total" {
                continue;
            }
            if let Ok(calls) = f[3].parse::<u64>() {
                m.insert(name, calls);
            }
        }
    }
    m
}

/// Calls per cycle of each system call: the counts of a run of `2 * n`
/// cycles minus those of a run of `n`, over `n`.
fn per_cycle(n: u64, extra: &[&str]) -> BTreeMap<String, f64> {
    let short = syscall_counts(n, extra);
    let long = syscall_counts(2 * n, extra);
    long.keys()
        .chain(short.keys())
        .map(|name| {
            let c = |m: &BTreeMap<String, u64>| *m.get(name).unwrap_or(&0) as f64;
            (name.clone(), (c(&long) - c(&short)) / n as f64)
        })
        .collect()
}

/// `wait` once per cycle (within `rest`: the main thread's own waits, every
/// 100 ms, count too), every other call at most `rest` per cycle.
fn check_per_cycle(mode: &[&str], per: &BTreeMap<String, f64>, wait: &str, rest: f64) {
    let w = per.get(wait).copied().unwrap_or(0.0);
    assert!(
        (1.0 - rest..=1.0 + rest).contains(&w),
        "{mode:?}: {wait} per cycle: {w} ({per:?})"
    );
    for (name, p) in per {
        if name != wait {
            assert!(p.abs() <= rest, "{mode:?}: {name}: {p} per cycle");
        }
    }
}

#[test]
fn one_clock_nanosleep_per_cycle_and_nothing_else() {
    require!(have("strace"), "strace is not installed");
    let _g = serial();
    check_per_cycle(&[], &per_cycle(20_000, &[]), "clock_nanosleep", 0.01);
}

/// Each wake-up mode and start alignment, its wait, and how often any
/// other call may come per cycle.
const MODES: [(&[&str], &str, f64); 6] = [
    (&["-r"], "clock_nanosleep", 0.01),
    // nanosleep(), or on architectures without it clock_nanosleep
    (&["-s"], "nanosleep", 0.01),
    // a -x cycle a period late asks the timer for its overruns: allow a
    // few, and a period long enough that strace's own stops are rarely one
    (&["-x", "-i", "1000"], "rt_sigtimedwait", 0.05),
    (&["-x", "-r", "-i", "1000"], "rt_sigtimedwait", 0.05),
    // aligned starts change the first deadline only
    (&["-A", "50"], "clock_nanosleep", 0.01),
    (&["--secaligned", "250"], "clock_nanosleep", 0.01),
];

#[test]
fn each_mode_makes_its_own_wait_once_per_cycle() {
    require!(have("strace"), "strace is not installed");
    let _g = serial();
    for (mode, wait, rest) in MODES {
        let per = per_cycle(5_000, mode);
        let wait = if per.contains_key(wait) {
            wait
        } else {
            "clock_nanosleep"
        };
        check_per_cycle(mode, &per, wait, rest);
        let others: Vec<_> = per.iter().filter(|(_, p)| p.abs() >= 0.0005).collect();
        println!("{mode:?}: per cycle {others:?}");
    }
}

#[test]
fn only_threads_are_cloned() {
    require!(have("strace"), "strace is not installed");
    let _g = serial();
    let text = strace(
        &["-e", "trace=process"],
        "process.txt",
        &["-t", "2", "-l", "300", "-q", "--stream", "-"],
    );
    let mut clones = 0;
    let mut execs = 0;
    for line in text.lines() {
        // "PID name(args...) = ret": the syscall name is the word before '('
        let call = line
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.split('(').next())
            .unwrap_or("");
        if call == "execve" {
            execs += 1; // strace starting us
            continue;
        }
        assert!(
            !matches!(call, "fork" | "vfork" | "execveat"),
            "forbidden: {line}"
        );
        if call == "clone" || call == "clone3" {
            assert!(
                line.contains("CLONE_THREAD"),
                "a clone that is not a thread: {line}"
            );
            clones += 1;
        }
    }
    assert_eq!(execs, 1, "only strace's own exec of latscope:\n{text}");
    assert!(clones >= 3, "2 measuring threads and the sender:\n{text}");
}

#[test]
fn exit_order_demote_then_unlock_then_close_dma() {
    require!(have("strace"), "strace is not installed");
    require!(
        is_root(),
        "needs root for mlockall and /dev/cpu_dma_latency"
    );
    let _g = serial();
    // Root, so no privilege flag is added: the full real-time exit path.
    let text = strace(
        &[
            "-e",
            "trace=sched_setattr,munlockall,close,exit_group,openat,open",
        ],
        "exit.txt",
        &["-t", "2", "-l", "300", "-q"],
    );
    let lines: Vec<&str> = text.lines().collect();
    let pid_of = |l: &str| l.split_whitespace().next().unwrap_or("").to_string();
    let dma_at = lines
        .iter()
        .position(|l| l.contains("/dev/cpu_dma_latency") && !l.contains("= -1"))
        .expect("opens /dev/cpu_dma_latency");
    let dma = lines[dma_at];
    let main_pid = pid_of(dma);
    let dma_fd = dma.rsplit("= ").next().unwrap().trim().to_string();
    let pos = |pred: &dyn Fn(&str) -> bool| lines.iter().position(|l| pred(l));
    let rt_threads: Vec<String> = lines
        .iter()
        .filter(|l| l.contains("sched_setattr(0") && l.contains("SCHED_FIFO"))
        .map(|l| pid_of(l))
        .collect();
    assert_eq!(rt_threads.len(), 2, "two RT threads:\n{text}");
    let munlock = pos(&|l| l.contains("munlockall()")).expect("munlockall");
    let close = lines[dma_at..]
        .iter()
        .position(|l| pid_of(l) == main_pid && l.contains(&format!("close({dma_fd})")))
        .map(|i| i + dma_at)
        .expect("close of the dma fd");
    let exit = pos(&|l| l.contains("exit_group(")).expect("exit_group");
    for tid in rt_threads.iter().chain(std::iter::once(&main_pid)) {
        let demote = pos(&|l| {
            pid_of(l) == *tid && l.contains("sched_setattr(0") && l.contains("SCHED_OTHER")
        })
        .unwrap_or_else(|| panic!("thread {tid} never demoted itself:\n{text}"));
        assert!(
            demote < munlock,
            "thread {tid} demoted after munlockall:\n{text}"
        );
    }
    assert!(
        munlock < close,
        "munlockall before closing the dma fd:\n{text}"
    );
    // the last close of that fd number by main is the dma request
    let last_close = lines
        .iter()
        .rposition(|l| pid_of(l) == main_pid && l.contains(&format!("close({dma_fd})")))
        .unwrap();
    assert!(last_close > munlock && last_close < exit, "order:\n{text}");
    assert!(close < exit);
}
