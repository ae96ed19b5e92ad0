//! A storm of known origin: a `SCHED_FIFO` task pinned to one CPU that
//! busy-loops for a burst every period, so that whatever measures below
//! its priority on that CPU is late by about a burst, at a known rate and
//! from a known pid.
//!
//! Usage: burster CPU PRIO BURST_US PERIOD_US SECS [LOG]
//! Bursts last BURST_US plus up to half of it again (varied, so that the
//! spikes they cause differ), one every PERIOD_US on average (varied by
//! half of it either way, so that the bursts do not lock onto the phase of
//! a periodic task), for SECS seconds. Prints
//! `burster: pid P ready` once it runs at its priority, and at the end
//! `burster: pid P bursts N busy_us B`. With LOG, it also writes there,
//! once it has ended, a line `FROM TO` per burst: when the burst began and
//! ended, `CLOCK_MONOTONIC` nanoseconds (the clock of a latscope deadline).
//!
//! Raw syscalls through `libc` are fine here: this is a test helper, never
//! part of the target program.

use std::time::{Duration, Instant};

fn fail(what: &str) -> ! {
    eprintln!("burster: {what}: {}", std::io::Error::last_os_error());
    std::process::exit(2);
}

fn arg(args: &[String], i: usize, name: &str) -> u64 {
    match args.get(i).and_then(|a| a.parse().ok()) {
        Some(v) => v,
        None => {
            eprintln!("burster: {name} missing or not a number");
            eprintln!("usage: burster CPU PRIO BURST_US PERIOD_US SECS [LOG]");
            std::process::exit(2);
        }
    }
}

/// clock_gettime(CLOCK_MONOTONIC), in nanoseconds.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, `t`, which lives here.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) } != 0 {
        fail("clock_gettime");
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cpu = arg(&args, 1, "CPU") as usize;
    let prio = arg(&args, 2, "PRIO") as i32;
    let burst = Duration::from_micros(arg(&args, 3, "BURST_US"));
    let period = Duration::from_micros(arg(&args, 4, "PERIOD_US").max(1));
    let secs = Duration::from_secs(arg(&args, 5, "SECS"));
    let log = args.get(6);
    // the log, sized up front so that no burst allocates: every burst
    // lasts BURST_US at least, so SECS holds no more than SECS / BURST_US
    let mut bursts_at: Vec<(u64, u64)> = Vec::with_capacity(if log.is_some() {
        (secs.as_micros() / burst.as_micros().max(1)) as usize + 2
    } else {
        0
    });
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes one bit
    // of it; sched_setaffinity reads the set for this thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            fail("sched_setaffinity");
        }
    }
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler reads `param` for this process (pid 0).
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        fail("sched_setscheduler SCHED_FIFO");
    }
    let pid = std::process::id();
    println!("burster: pid {pid} ready");
    let start = Instant::now();
    let mut next = start;
    let mut bursts = 0u64;
    let mut busy = Duration::ZERO;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    while start.elapsed() < secs {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let this = burst + burst.mul_f64((x % 1000) as f64 / 2000.0);
        let from_ns = monotonic_ns();
        let from = Instant::now();
        while from.elapsed() < this {
            std::hint::spin_loop();
        }
        busy += from.elapsed();
        if log.is_some() && bursts_at.len() < bursts_at.capacity() {
            bursts_at.push((from_ns, monotonic_ns()));
        }
        bursts += 1;
        next += period / 2 + period.mul_f64(((x >> 20) % 1000) as f64 / 1000.0);
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    if let Some(log) = log {
        let text: String = bursts_at
            .iter()
            .map(|(from, to)| format!("{from} {to}\n"))
            .collect();
        if let Err(e) = std::fs::write(log, text) {
            eprintln!("burster: {log}: {e}");
            std::process::exit(2);
        }
    }
    println!(
        "burster: pid {pid} bursts {bursts} busy_us {}",
        busy.as_micros()
    );
}
