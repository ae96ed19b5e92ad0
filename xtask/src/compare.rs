//! compare-cyclictest's result: latscope against cyclictest in
//! alternating pairs, every figure from the raw outputs the launcher
//! (`bench/compare-cyclictest`) keeps, with its paired statistics.
//!
//! The raw directory holds, per pair `P`:
//! - `res-NAME-P.time{L}`, `.strace{L}`, `.samples`: CPU time
//!   (`/usr/bin/time -f '%U %S'`), `strace -f -c` and the process samples
//!   of `-l L` runs, L the long and the short run;
//! - `mem-NAME-P.samples`, `.private`: the memory run's samples and its
//!   private locked memory (`xtask stats private-locked`);
//! - `lat-COND-NAME-P.line`, `.samples`: the latency run's histogram
//!   figures (`xtask stats hist`) and samples;
//! - `meta`: the run's settings (`KEY=VALUE` lines).

pub mod markdown;
mod raw;

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};

use crate::machine::Machine;
use crate::results::{self, Report};
use crate::stats::{median, PairStats};
use crate::Error;

pub use raw::Meta;

/// `cargo xtask compare-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where compare.json and compare.md (compare-explain.* for a run
    /// with `--explain`) are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// One figure of both programs over the pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// latscope's median over the pairs.
    pub latscope: Option<f64>,
    /// cyclictest's median over the pairs.
    pub cyclictest: Option<f64>,
    /// The per-pair ratios latscope / cyclictest and their statistics.
    pub ratio: Option<PairStats>,
}

impl Figure {
    /// The figure of the pairs `(latscope, cyclictest)`.
    pub fn of(pairs: &[(Option<f64>, Option<f64>)]) -> Figure {
        let latscope: Vec<f64> = pairs.iter().filter_map(|p| p.0).collect();
        let cyclictest: Vec<f64> = pairs.iter().filter_map(|p| p.1).collect();
        Figure {
            latscope: median(&latscope),
            cyclictest: median(&cyclictest),
            ratio: PairStats::of(pairs),
        }
    }
}

/// The memory of the static musl build, against cyclictest's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuslMemory {
    /// `Locked` of smaps_rollup, kB.
    pub locked_kb: Figure,
    /// Private locked, kB.
    pub private_locked_kb: Figure,
    /// VmRSS, kB.
    pub vmrss_kb: Figure,
}

/// What each cycle costs, and the memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// Every syscall per cycle.
    pub syscalls_per_cycle: Figure,
    /// `clock_nanosleep` per cycle.
    pub clock_nanosleep_per_cycle: Figure,
    /// CPU time per cycle, µs.
    pub cpu_us_per_cycle: Figure,
    /// VmLck, kB.
    pub vmlck_kb: Figure,
    /// `Locked` of smaps_rollup, kB.
    pub locked_kb: Figure,
    /// Private locked, kB.
    pub private_locked_kb: Figure,
    /// Of it, code, kB.
    pub private_locked_code_kb: Figure,
    /// Of it, the rest, kB.
    pub private_locked_rest_kb: Figure,
    /// VmRSS, kB.
    pub vmrss_kb: Figure,
    /// The std floor's `Locked`, against cyclictest's, kB.
    pub std_floor_locked_kb: Figure,
    /// The std floor's private locked, kB.
    pub std_floor_private_locked_kb: Figure,
    /// Of it, code, kB.
    pub std_floor_private_locked_code_kb: Figure,
    /// The std floor's VmRSS, kB.
    pub std_floor_vmrss_kb: Figure,
    /// The static musl build's memory, when it was built.
    pub musl: Option<MuslMemory>,
    /// Minor faults of the measuring threads after 1 s.
    pub minor_faults: Figure,
    /// Major faults of the measuring threads after 1 s.
    pub major_faults: Figure,
}

/// The figures without an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Other {
    /// Syscalls per cycle other than `clock_nanosleep`: latscope's and
    /// cyclictest's medians.
    pub other_syscalls_per_cycle: [Option<f64>; 2],
    /// User-space instructions per loop of the measuring thread
    /// (`bench/instructions`), latscope's and cyclictest's; deterministic.
    pub instructions_per_loop: Option<[f64; 2]>,
    /// Stripped binary sizes, both linked against glibc, bytes.
    pub binary_bytes: [Option<u64>; 2],
    /// latscope's static musl build, bytes.
    pub musl_binary_bytes: Option<u64>,
}

impl Other {
    /// The instructions per loop, latscope's and cyclictest's, each `None`
    /// without a count.
    pub fn instructions(&self) -> (Option<f64>, Option<f64>) {
        self.instructions_per_loop
            .map_or((None, None), |[a, b]| (Some(a), Some(b)))
    }
}

/// Latency figures under one condition, µs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// The better thread's minimum.
    pub min: Figure,
    /// The threads' mean.
    pub avg: Figure,
    /// The worse thread's median.
    pub p50: Figure,
    /// The worse thread's p99.
    pub p99: Figure,
    /// The worse thread's p99.9.
    pub p999: Figure,
    /// The worse thread's maximum.
    pub max: Figure,
    /// Minor faults of the measuring threads after 1 s.
    pub minor_faults: Figure,
    /// Major faults likewise.
    pub major_faults: Figure,
    /// Without locked memory (under reclaim only).
    pub unlocked: Option<Unlocked>,
}

/// latscope `--no-mlock` against cyclictest without `-m`, under reclaim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unlocked {
    /// p99, µs.
    pub p99: Figure,
    /// p99.9, µs.
    pub p999: Figure,
    /// Maximum, µs.
    pub max: Figure,
    /// Major faults.
    pub major_faults: Figure,
}

/// The four load conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Condition {
    /// Nothing else running.
    Idle,
    /// `stress-ng --cpu 2`.
    Cpu,
    /// `hackbench -g 4 -l 2000` in a loop.
    Hackbench,
    /// `evict PID 100`: forced reclaim.
    Reclaim,
}

impl Condition {
    /// Every condition, in the table's order.
    pub const ALL: [Condition; 4] = [
        Condition::Idle,
        Condition::Cpu,
        Condition::Hackbench,
        Condition::Reclaim,
    ];

    /// The raw files' and the table's name.
    pub fn name(self) -> &'static str {
        match self {
            Condition::Idle => "idle",
            Condition::Cpu => "cpu",
            Condition::Hackbench => "hackbench",
            Condition::Reclaim => "reclaim",
        }
    }

    /// How the summary names it.
    pub fn described(self) -> &'static str {
        match self {
            Condition::Idle => "idle",
            Condition::Cpu => "under `stress-ng --cpu`",
            Condition::Hackbench => "under `hackbench`",
            Condition::Reclaim => "under forced reclaim",
        }
    }
}

/// The latency under each condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conditions {
    /// Idle.
    pub idle: Latency,
    /// Under `stress-ng --cpu`.
    pub cpu: Latency,
    /// Under `hackbench`.
    pub hackbench: Latency,
    /// Under forced reclaim.
    pub reclaim: Latency,
}

impl Conditions {
    /// The figures of one condition.
    pub fn get(&self, c: Condition) -> &Latency {
        match c {
            Condition::Idle => &self.idle,
            Condition::Cpu => &self.cpu,
            Condition::Hackbench => &self.hackbench,
            Condition::Reclaim => &self.reclaim,
        }
    }
}

/// One program's `evict` output in the first pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Eviction {
    /// The run's name (`latscope-nomlock` and the like).
    pub run: String,
    /// What `evict` printed.
    pub output: String,
}

/// The whole result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// The run's settings.
    pub meta: Meta,
    /// `rt-tests` and its version.
    pub cyclictest_version: String,
    /// `latscope --version`.
    pub latscope_version: String,
    /// Cost and memory.
    pub cost: Cost,
    /// The figures without an interval.
    pub other: Other,
    /// Latency per condition.
    pub latency: Conditions,
    /// What `evict` did in the first pair.
    pub evictions: Vec<Eviction>,
}

impl Report for Compare {
    const NAME: &'static str = "compare";

    fn markdown(&self) -> String {
        markdown::render(self)
    }
}

/// The same result of a run with `--explain`, in its own files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CompareExplain(pub Compare);

impl Report for CompareExplain {
    const NAME: &'static str = "compare-explain";

    fn markdown(&self) -> String {
        markdown::render(&self.0)
    }
}

/// Read the raw outputs of `raw` into the result.
///
/// # Errors
///
/// No `meta`, or a raw file that does not parse.
pub fn from_raw(raw: &Path) -> Result<Compare, Error> {
    raw::load(raw)
}

/// Write compare.json and compare.md (or compare-explain.*) from the raw
/// outputs, and print the markdown.
///
/// # Errors
///
/// As [`from_raw`], or a file that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let c = from_raw(&args.raw)?;
    let md = if c.meta.explain_us.is_some() {
        results::write(&args.out, &CompareExplain(c))?
    } else {
        results::write(&args.out, &c)?
    };
    print!("{}", std::fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}
