//! The field's fork failure mode, reproduced without latscope: an RT
//! thread measures wake-up latency (clock_nanosleep, TIMER_ABSTIME, like
//! cyclictest) while a fork loop runs
//!
//! - `inproc`:   in a sibling thread of the SAME process (as popen() from a
//!   helper thread does), or
//! - `separate`: in a SEPARATE process, or
//! - `none`:     not at all (the baseline).
//!
//! The forker runs on another CPU than the RT thread in every mode, so CPU
//! contention is not what differs: only sharing the address space does.
//! fork() write-protects the parent's private pages and takes the mm lock,
//! so the RT thread of the same process takes copy-on-write faults and
//! waits on the lock after each fork.
//!
//! Usage: fork_repro MODE [SECONDS=10] [INTERVAL_US=200] [RT_CPU=0] [FORK_CPU=1]
//! Prints one line:
//! `fork_repro mode M samples N min A avg B p99 C p99.9 D max E minflt F forks G` (µs).
//!
//! Raw libc calls are fine in this test helper; latscope itself never forks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity(0) acts on the
    // calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn set_fifo(prio: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler(0) acts on the calling thread on Linux.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

fn now() -> libc::timespec {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: t is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t
}

fn ns(t: &libc::timespec) -> i64 {
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

fn thread_minflt() -> i64 {
    // SAFETY: ru is a valid out-pointer; RUSAGE_THREAD is Linux-specific.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru.ru_minflt
    }
}

/// Fork and reap until `stop`; the child exits at once, as a popen()'d
/// short command would after exec.
fn fork_loop(stop: &AtomicBool, forks: &AtomicU64) {
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: the child only calls the async-signal-safe _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(0) };
        }
        if pid > 0 {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, &mut st, 0) };
            forks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn arg<T: std::str::FromStr>(a: &[String], i: usize, d: T) -> T {
    a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mode = a.get(1).cloned().unwrap_or_default();
    if mode == "forker" {
        // The separate process of `separate` mode.
        pin(arg(&a, 2, 1));
        let stop = AtomicBool::new(false);
        let forks = AtomicU64::new(0);
        fork_loop(&stop, &forks);
        return;
    }
    if !matches!(mode.as_str(), "inproc" | "separate" | "none") {
        eprintln!(
            "usage: fork_repro inproc|separate|none [SECONDS] [INTERVAL_US] [RT_CPU] [FORK_CPU]"
        );
        std::process::exit(2);
    }
    let secs: u64 = arg(&a, 2, 10);
    let interval_ns: i64 = arg::<i64>(&a, 3, 200) * 1000;
    let rt_cpu: usize = arg(&a, 4, 0);
    let fork_cpu: usize = arg(&a, 5, 1);
    // As cyclictest -m: lock everything, so only fork's own effects remain.
    // SAFETY: mlockall takes flags only.
    if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } != 0 {
        eprintln!("fork_repro: mlockall failed (run as root)");
        std::process::exit(3);
    }
    let n = (secs as i64 * 1_000_000_000 / interval_ns) as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let forks = Arc::new(AtomicU64::new(0));
    let mut child = None;
    let mut forker = None;
    match mode.as_str() {
        "separate" => {
            child = Some(
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["forker", &fork_cpu.to_string()])
                    .spawn()
                    .expect("spawn forker"),
            );
        }
        "inproc" => {
            let (s, f) = (stop.clone(), forks.clone());
            forker = Some(std::thread::spawn(move || {
                pin(fork_cpu);
                fork_loop(&s, &f);
            }));
        }
        _ => {}
    }
    std::thread::sleep(Duration::from_millis(200));
    let rt = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            pin(rt_cpu);
            if !set_fifo(80) {
                eprintln!("fork_repro: SCHED_FIFO refused (run as root)");
                std::process::exit(3);
            }
            let mut lat = vec![0i64; n];
            let f0 = thread_minflt();
            let mut next = ns(&now()) + interval_ns;
            for slot in lat.iter_mut() {
                let t = libc::timespec {
                    tv_sec: next / 1_000_000_000,
                    tv_nsec: next % 1_000_000_000,
                };
                // SAFETY: t is valid; absolute sleep on CLOCK_MONOTONIC.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &t,
                        std::ptr::null_mut(),
                    )
                };
                let woke = ns(&now());
                *slot = woke - next;
                next += interval_ns;
                while woke > next {
                    next += interval_ns;
                }
            }
            let f1 = thread_minflt();
            let p = libc::sched_param { sched_priority: 0 };
            // SAFETY: demote the calling thread before it returns.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
            (lat, f1 - f0)
        })
        .unwrap();
    let (mut lat, minflt) = rt.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    if let Some(f) = forker {
        f.join().unwrap();
    }
    let mut forks_done = forks.load(Ordering::Relaxed);
    if let Some(mut c) = child {
        // SAFETY: signal our own child.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGKILL) };
        let _ = c.wait();
        forks_done = u64::MAX; // counted in the other process; not reported
    }
    lat.sort_unstable();
    let q = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)] / 1000;
    let avg = lat.iter().sum::<i64>() / lat.len() as i64 / 1000;
    let forks_txt = if forks_done == u64::MAX {
        "separate-process".to_string()
    } else {
        forks_done.to_string()
    };
    println!(
        "fork_repro mode {mode} samples {} min {} avg {avg} p99 {} p99.9 {} max {} minflt {minflt} forks {forks_txt}",
        lat.len(),
        lat[0] / 1000,
        q(0.99),
        q(0.999),
        lat[lat.len() - 1] / 1000,
    );
}
