//! Hidden options for the proof scripts in `bench/` and for the tests, and
//! what they do. None of them belongs in a production run, and `--help`
//! does not list them.
//!
//! * `--ballast-mib N` locks N MiB more memory: the exit experiment of
//!   `bench/exit-stall` (a large locked process that exits);
//! * `--no-exit-demote` is that experiment's control: the main thread takes
//!   the measuring policy and exits holding its locked memory, as a naive RT
//!   program does;
//! * `--self-check-probe` (implies `--self-check`) makes every forbidden
//!   process-creation request once, to prove each is refused and counted.
//!
//! Their names and arguments are entries of the option table
//! (`config/options.rs`); the parser sets the fields of [`Knobs`].

#![deny(clippy::wildcard_enum_match_arm)]

use latscope_core::wire::Policy;

use crate::linux::{self, exit::Held, sched};

/// The hidden options of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Knobs {
    /// `--ballast-mib`.
    pub ballast_mib: u64,
    /// `--no-exit-demote`.
    pub no_exit_demote: bool,
    /// `--self-check-probe`.
    pub self_check_probe: bool,
}

/// The largest `--ballast-mib`.
pub const MAX_BALLAST_MIB: u64 = 1 << 20;

/// `--ballast-mib`: `mib` MiB, every page touched (and so locked under
/// mlockall).
pub fn ballast(mib: u64) -> Vec<u8> {
    let bytes = (mib as usize).saturating_mul(1 << 20);
    let mut b = vec![0u8; bytes];
    for i in (0..bytes).step_by(4096) {
        b[i] = 1;
    }
    std::hint::black_box(&b);
    b
}

/// `--no-exit-demote`: the main thread takes the measuring policy on `cpu`
/// and keeps its locked memory; only the latency request is dropped.
pub fn naive_exit(cpu: Option<usize>, policy: Policy, priority: u32, held: &mut Held) {
    if let Some(c) = cpu {
        let _ = rustix::thread::sched_setaffinity(None, &linux::cpu_set(&[c]));
    }
    let _ = linux::sys::sched_setattr(0, &sched::attr(policy, priority, (0, 0, 0)));
    drop(held.dma.take());
}
