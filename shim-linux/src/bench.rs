//! Hidden options for the proof scripts in `bench/` and for the tests, and
//! what they do. None of them belongs in a production run: they exist only
//! in builds with the `proof` feature, which the release artefacts and the
//! Buildroot package never have (there the options are unknown, and the
//! accessors below are constants that leave the code out). `--help` does
//! not list them.
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

/// The hidden options of one run (none without the `proof` feature).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Knobs {
    /// `--ballast-mib`.
    #[cfg(feature = "proof")]
    pub ballast_mib: u64,
    /// `--no-exit-demote`.
    #[cfg(feature = "proof")]
    pub no_exit_demote: bool,
    /// `--self-check-probe`.
    #[cfg(feature = "proof")]
    pub self_check_probe: bool,
}

#[cfg(feature = "proof")]
impl Knobs {
    /// `--ballast-mib`: MiB to lock besides the run's own memory.
    pub const fn ballast_mib(&self) -> u64 {
        self.ballast_mib
    }
    /// `--no-exit-demote`: whether the exit discipline is off.
    pub const fn no_exit_demote(&self) -> bool {
        self.no_exit_demote
    }
    /// `--self-check-probe`: whether the sender makes the forbidden
    /// requests once.
    pub const fn self_check_probe(&self) -> bool {
        self.self_check_probe
    }
}

#[cfg(not(feature = "proof"))]
impl Knobs {
    /// No ballast: the option does not exist here.
    pub const fn ballast_mib(&self) -> u64 {
        0
    }
    /// The exit discipline is always on here.
    pub const fn no_exit_demote(&self) -> bool {
        false
    }
    /// No probe here (the sender has no probe to make; the option tests
    /// read it).
    #[cfg(test)]
    pub const fn self_check_probe(&self) -> bool {
        false
    }
}

/// The largest `--ballast-mib`.
#[cfg(feature = "proof")]
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
