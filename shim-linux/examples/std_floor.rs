//! The floor under latscope's footprint: the smallest program on Rust's
//! standard library that does what latscope's memory figures depend on.
//! It locks its memory (`mlockall(MCL_CURRENT | MCL_FUTURE)`), starts
//! THREADS threads with latscope's measuring-thread stack size that sleep
//! for SECS seconds, and unlocks before it exits.
//!
//! `bench/compare-cyclictest` measures it next to latscope and cyclictest,
//! and `bench/footprint` reports its stripped size: whatever latscope
//! locks or weighs beyond this program is latscope's own; the rest is the
//! cost of the standard library itself.
//!
//!     std_floor [THREADS [SECS]]        (defaults: 2 threads, 3 s)

use std::time::Duration;

use rustix::mm::{mlockall, munlockall, MlockAllFlags};

/// latscope's measuring-thread stack (its `rt::STACK_BYTES`).
const STACK_BYTES: usize = 64 * 1024;

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    if let Err(e) = mlockall(MlockAllFlags::CURRENT | MlockAllFlags::FUTURE) {
        eprintln!("std_floor: mlockall: {e}");
        std::process::exit(3);
    }
    let handles: Vec<_> = (0..threads)
        .filter_map(|_| {
            std::thread::Builder::new()
                .stack_size(STACK_BYTES)
                .spawn(move || std::thread::sleep(Duration::from_secs(secs)))
                .ok()
        })
        .collect();
    let started = handles.len();
    for h in handles {
        let _ = h.join();
    }
    println!("std_floor: {started} threads, {secs} s, memory locked");
    let _ = munlockall();
}
