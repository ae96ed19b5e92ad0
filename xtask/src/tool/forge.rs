//! Writes a forged stream to standard output, for measuring what it costs
//! the host (`bench/forged-memory`):
//!
//! * `xtask tool forge wide N`: the original finding, N hellos that each declare 64
//!   threads of a 65 535-bucket layout, with one snapshot chunk per thread;
//! * `xtask tool forge runs N LINEAR_US BUCKETS STRIDE [REPORTS [SPIKES [nobye]]]`: N
//!   runs of 64 threads whose snapshots fill every STRIDE-th bucket of that
//!   layout (64: one bucket in every page of the host's store, the most
//!   memory per input byte), with REPORTS statistics frames per thread
//!   (4096 fill the host's max-over-time series) and SPIKES spike records
//!   per thread (20000 fill its lists of overflows and `--spike` records),
//!   each ending with its bye unless `nobye` (a run without one stays in a
//!   recorder until it times out).

use std::io::Write;
use std::process::ExitCode;

use latscope_core::layout::Layout;
use latscope_core::wire::MAX_THREADS;
use latscope_testkit::forge::{wide_hellos, ForgedRun};

/// `cargo xtask tool forge ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let num = |i: usize| -> u64 {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| usage())
    };
    let bytes = match args.first().map(String::as_str) {
        Some("wide") => wide_hellos(num(1)),
        Some("runs") => {
            let layout = Layout {
                linear_us: num(2) as u32,
                buckets: num(3) as u16,
            };
            let mut out = Vec::new();
            let reports = if args.len() > 5 { num(5) as u32 } else { 1 };
            let spikes = if args.len() > 6 { num(6) as u32 } else { 0 };
            let bye = args.get(7).map(String::as_str) != Some("nobye");
            // a run id of the process's own: streams forged at once differ
            let base = u64::from(std::process::id()) << 32;
            for r in 0..num(1) {
                ForgedRun {
                    stride: num(4) as u16,
                    reports,
                    spikes,
                    bye,
                    ..ForgedRun::full(base + r, MAX_THREADS as u16, layout)
                }
                .write(&mut out);
            }
            out
        }
        _ => usage(),
    };
    if std::io::stdout().write_all(&bytes).is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn usage() -> ! {
    eprintln!(
        "usage: xtask tool forge wide N | xtask tool forge runs N LINEAR_US BUCKETS STRIDE [REPORTS [SPIKES [nobye]]]"
    );
    std::process::exit(2)
}
