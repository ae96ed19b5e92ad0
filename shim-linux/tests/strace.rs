//! System-call discipline, observed with strace: one absolute
//! clock_nanosleep per cycle and nothing else (each other wake-up mode: its
//! own wait, with its own flags, once per cycle), thread clones only, and
//! the exit order.
//!
//! These need strace (and root for the RT policy; without root they run
//! with --best-effort). Under CI=true a missing strace fails the test.

use std::collections::BTreeMap;

use latscope_testkit::target::{privilege_flags, serial, tool};
use latscope_testkit::{have, is_root, require};

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

/// The calls as this architecture's strace names them. The 64-bit ABIs
/// (x86_64, aarch64) make every wait under its own name. On the 32-bit ABIs
/// (arm) the waits go through the 64-bit-time calls: rustix and
/// `linux/sys.rs` call `clock_nanosleep_time64`, `rt_sigtimedwait_time64`
/// and `timer_settime64`, and rustix's `nanosleep()` is
/// `clock_nanosleep_time64(CLOCK_REALTIME, 0, ...)` there (arm's own
/// `nanosleep` takes a 32-bit time; riscv32 has none at all).
mod call {
    #[cfg(target_pointer_width = "64")]
    pub const CLOCK_NANOSLEEP: &str = "clock_nanosleep";
    #[cfg(target_pointer_width = "32")]
    pub const CLOCK_NANOSLEEP: &str = "clock_nanosleep_time64";
    #[cfg(target_pointer_width = "64")]
    pub const RT_SIGTIMEDWAIT: &str = "rt_sigtimedwait";
    #[cfg(target_pointer_width = "32")]
    pub const RT_SIGTIMEDWAIT: &str = "rt_sigtimedwait_time64";
    #[cfg(target_pointer_width = "64")]
    pub const TIMER_SETTIME: &str = "timer_settime";
    #[cfg(target_pointer_width = "32")]
    pub const TIMER_SETTIME: &str = "timer_settime64";
    /// `-s`'s `nanosleep()`, its key in [`super::key`].
    #[cfg(target_pointer_width = "64")]
    pub const NANOSLEEP: &str = "nanosleep";
    #[cfg(target_pointer_width = "32")]
    pub const NANOSLEEP: &str = "clock_nanosleep_time64(CLOCK_REALTIME, 0)";
}

/// The default wait: `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ..)`.
fn absolute_sleep() -> String {
    format!("{}(CLOCK_MONOTONIC, TIMER_ABSTIME)", call::CLOCK_NANOSLEEP)
}

/// `-r`'s wait: `clock_nanosleep(CLOCK_MONOTONIC, 0, ..)`, relative.
fn relative_sleep() -> String {
    format!("{}(CLOCK_MONOTONIC, 0)", call::CLOCK_NANOSLEEP)
}

/// A system call of strace's output line `TID name(args...) = ret`, as
/// this test counts it: the thread and the call, the clock sleeps with
/// their clock and flags arguments (`clock_nanosleep(CLOCK_MONOTONIC,
/// TIMER_ABSTIME)`), `timer_settime` with its flags
/// (`timer_settime(TIMER_ABSTIME)`), every other call by its name. `None`
/// for what is not the start of a call: the second half of an interrupted
/// one (`<... name resumed>`), signals and exits.
fn key(line: &str) -> Option<(&str, String)> {
    let (tid, call) = line.split_once(' ')?;
    let (name, args) = call.trim_start().split_once('(')?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let arg: Vec<&str> = args.split(", ").collect();
    let key = match name {
        n if n == call::CLOCK_NANOSLEEP => format!("{n}({}, {})", arg[0], arg[1]),
        n if n == call::TIMER_SETTIME => format!("{n}({})", arg[1]),
        n => n.to_string(),
    };
    Some((tid, key))
}

/// Calls counted by [`key`].
type Counts = BTreeMap<String, u64>;

/// The calls of one strace'd run of `loops` cycles of one measuring thread
/// with `extra` options, whose loop waits with `wait`: the loop's (the
/// measuring thread's calls from its first `wait` to its last; the
/// measuring thread is the one that made the most calls, one or more a
/// cycle, while the others wake every 100 ms), and all threads'.
fn syscall_counts(loops: u64, extra: &[&str], wait: &str) -> (Counts, Counts) {
    let l = loops.to_string();
    let mut args = vec!["-t", "1", "-i", "200", "-l", &l, "-q"];
    args.extend(extra);
    let text = strace(&[], &format!("c{loops}.txt"), &args);
    let calls: Vec<(&str, String)> = text.lines().filter_map(key).collect();
    let mut all = Counts::new();
    let mut per_thread: BTreeMap<&str, u64> = BTreeMap::new();
    for (tid, k) in &calls {
        *all.entry(k.clone()).or_insert(0) += 1;
        *per_thread.entry(tid).or_insert(0) += 1;
    }
    let measuring = per_thread.iter().max_by_key(|(_, n)| **n).map(|(t, _)| *t);
    let mine: Vec<&String> = calls
        .iter()
        .filter(|(tid, _)| Some(*tid) == measuring)
        .map(|(_, k)| k)
        .collect();
    let first = mine.iter().position(|k| *k == wait);
    let last = mine.iter().rposition(|k| *k == wait);
    let mut in_loop = Counts::new();
    if let (Some(first), Some(last)) = (first, last) {
        for k in &mine[first..=last] {
            *in_loop.entry((*k).clone()).or_insert(0) += 1;
        }
    }
    (in_loop, all)
}

/// Per cycle: (the counts of `long` minus those of `short`) over `n`.
fn difference(short: &Counts, long: &Counts, n: u64) -> BTreeMap<String, f64> {
    long.keys()
        .chain(short.keys())
        .map(|name| {
            let c = |m: &Counts| *m.get(name).unwrap_or(&0) as f64;
            (name.clone(), (c(long) - c(short)) / n as f64)
        })
        .collect()
}

/// Calls per cycle, from the counts of a run of `2 * n` cycles minus those
/// of a run of `n`: the measuring loop's, and all threads'.
struct PerCycle {
    measuring: BTreeMap<String, f64>,
    all: BTreeMap<String, f64>,
    /// All threads' calls in the run of `n` cycles.
    short: Counts,
}

fn per_cycle(n: u64, extra: &[&str], wait: &str) -> PerCycle {
    let (short, short_all) = syscall_counts(n, extra, wait);
    let (long, long_all) = syscall_counts(2 * n, extra, wait);
    PerCycle {
        measuring: difference(&short, &long, n),
        all: difference(&short_all, &long_all, n),
        short: short_all,
    }
}

/// `wait` once per cycle (within `rest`), `late` (a call made on late
/// cycles only) at most its bound per cycle, every other call at most
/// `rest` per cycle.
fn check_per_cycle(
    mode: &[&str],
    per: &BTreeMap<String, f64>,
    wait: &str,
    rest: f64,
    late: Option<(&str, f64)>,
) {
    let w = per.get(wait).copied().unwrap_or(0.0);
    assert!(
        (1.0 - rest..=1.0 + rest).contains(&w),
        "{mode:?}: {wait} per cycle: {w} ({per:?})"
    );
    for (name, p) in per {
        let bound = match late {
            Some((call, bound)) if call == name => bound,
            _ => rest,
        };
        if name != wait {
            assert!(p.abs() <= bound, "{mode:?}: {name}: {p} per cycle");
        }
    }
}

#[test]
fn one_clock_nanosleep_per_cycle_and_nothing_else() {
    require!(have("strace"), "strace is not installed");
    let _g = serial();
    let per = per_cycle(20_000, &[], &absolute_sleep());
    check_per_cycle(&[], &per.measuring, &absolute_sleep(), 0.001, None);
    // the whole process: the fixed grid does not drift, so the other
    // threads' waits, every 100 ms, come at 0.002 per cycle
    check_per_cycle(&[], &per.all, &absolute_sleep(), 0.01, None);
}

/// A wake-up mode or start alignment: its options, its wait (a [`key`]),
/// how often any other call may come per cycle, the call it makes on late
/// cycles only and how often that may come, and the call that arms its
/// timer once per thread, if it has them.
struct Mode {
    args: &'static [&'static str],
    wait: String,
    rest: f64,
    late: Option<(&'static str, f64)>,
    arm: Option<String>,
}

/// Each wake-up mode and start alignment, with its own wait.
fn modes() -> [Mode; 7] {
    let mode = |args, wait, rest| Mode {
        args,
        wait,
        rest,
        late: None,
        arm: None,
    };
    let timer = |args, flags| Mode {
        // a period long enough that strace's own stops are rarely one
        args,
        wait: call::RT_SIGTIMEDWAIT.to_string(),
        rest: 0.01,
        // a -x cycle a period late asks the timer for its overruns: under
        // strace on a loaded machine, a third of the cycles can be (-x -r's
        // deadline is read before timer_settime's own strace stop); asking
        // on every cycle would be 1
        late: Some(("timer_getoverrun", 0.5)),
        arm: Some(format!("{}({flags})", call::TIMER_SETTIME)),
    };
    [
        mode(&[], absolute_sleep(), 0.001),
        mode(&["-r"], relative_sleep(), 0.001),
        mode(&["-s"], call::NANOSLEEP.to_string(), 0.001),
        // -x: the first expiry at the absolute deadline; -x -r: relative
        timer(&["-x", "-i", "1000"], "TIMER_ABSTIME"),
        timer(&["-x", "-r", "-i", "1000"], "0"),
        // aligned starts change the first deadline only
        mode(&["-A", "50"], absolute_sleep(), 0.001),
        mode(&["--secaligned", "250"], absolute_sleep(), 0.001),
    ]
}

#[test]
fn each_mode_makes_its_own_wait_once_per_cycle() {
    require!(have("strace"), "strace is not installed");
    let _g = serial();
    for m in modes() {
        let per = per_cycle(2_000, m.args, &m.wait);
        assert!(
            per.measuring.contains_key(&m.wait),
            "{:?}: the measuring thread never made its {}; all threads per cycle: {:?}",
            m.args,
            m.wait,
            per.all
        );
        if let Some(arm) = &m.arm {
            // the one measuring thread's timer is armed once
            let short = &per.short;
            assert_eq!(short.get(arm), Some(&1), "{:?}: {arm}: {short:?}", m.args);
        }
        check_per_cycle(m.args, &per.measuring, &m.wait, m.rest, m.late);
        let seen = |per: &BTreeMap<String, f64>| {
            let v: Vec<_> = per.iter().filter(|(_, p)| p.abs() >= 0.0005).collect();
            format!("{v:?}")
        };
        println!(
            "{:?}: per cycle: measuring thread {}, all {}",
            m.args,
            seen(&per.measuring),
            seen(&per.all)
        );
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
    // the main thread waits for signals at SCHED_FIFO 1 (the run answers
    // SIGUSR2), below the two measuring threads
    assert_eq!(rt_threads.len(), 3, "three RT threads:\n{text}");
    assert!(
        rt_threads.contains(&main_pid),
        "the main thread did not wait at a real-time priority:\n{text}"
    );
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
