//! Latency goals and their verdicts (`--slo`, `latscope-host report
//! --slo`): a list of conditions such as `p99.9<=80us,max<=200us,missed<=0`
//! with a confidence, each decided per thread as pass, fail or
//! inconclusive.
//!
//! * [`Goals`]: the conditions and the confidence, and their grammar
//!   ([`Goals::parse`]);
//! * [`Exceedances`]: per thread, the samples above each quantile goal's limit,
//!   block by block (a block is the report interval, or intervals, one
//!   histogram delta covers);
//! * [`decide`]: the verdicts of one run, the quantile goals' confidence
//!   holding for the whole run (Holm's procedure over every thread and
//!   goal);
//! * [`gate`]: a regression gate between baseline and candidate runs;
//! * [`math`]: the logarithm and the normal and t quantiles, without
//!   `libm`.
//!
//! ## The method
//!
//! A goal `pQ<=L` holds when the share of samples above `L` is at most
//! `1 - Q`. Latency samples are not independent (IRQ bursts, periodic
//! interferers, floods), so the share's uncertainty is measured between
//! blocks, not assumed from the sample count: the batch-means variance of
//! the share over the run's blocks, as a design effect over the binomial
//! variance (never below 1), shrinks the sample count to an effective
//! one, and Wilson's score interval on it, with Student's t at `blocks -
//! 1` degrees of freedom in place of the normal quantile, bounds the
//! share. Bucket edges round both ways outward: the upper bound counts
//! every sample whose bucket reaches above `L`, the lower bound only
//! those whose whole bucket lies above it. The goal passes when the upper
//! bound is at most `1 - Q`, fails when the lower bound is above it, and
//! is otherwise inconclusive, with the run time that would decide it at
//! the same share and spread.
//!
//! The maximum, missed periods and major faults pass or fail as
//! observed: no interval is claimed for them.

mod decide;
mod exceedances;
pub mod gate;
pub mod math;
mod parse;

#[cfg(test)]
mod tests;

pub use decide::{decide, worst, Bound, Observed, Outcome, Verdict, Why, MAX_TESTS};
pub use exceedances::Exceedances;

use crate::stats::Ppm;

/// Conditions a goal list holds at most.
pub const MAX_GOALS: usize = 8;

/// Fewest blocks a quantile goal is decided on: fewer leave its spread
/// unknown, and it is inconclusive.
pub const MIN_BLOCKS: u32 = 10;

/// The confidence when the list names none: 95 %.
pub const DEFAULT_CONFIDENCE: Ppm = Ppm(950_000);

/// One condition of a goal list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Goal {
    /// `pQ<=L`: the quantile `q` of every thread's latency at most
    /// `limit_ns`.
    Quantile {
        /// The quantile (p99.9 is `Ppm(999_000)`).
        q: Ppm,
        /// The limit (ns).
        limit_ns: u64,
    },
    /// `max<=L`: the largest sample at most `limit_ns`, as observed.
    Max {
        /// The limit (ns).
        limit_ns: u64,
    },
    /// `missed<=N`: missed periods, as counted.
    Missed {
        /// The most allowed.
        limit: u64,
    },
    /// `majflt<=N`: major page faults of the measuring thread, as counted.
    Majflt {
        /// The most allowed.
        limit: u64,
    },
}

impl Goal {
    /// The goal's metric as it is written (`p99.9`, `max`, `missed`,
    /// `majflt`).
    pub fn metric(&self) -> Metric {
        match *self {
            Goal::Quantile { q, .. } => Metric::Quantile(q),
            Goal::Max { .. } => Metric::Max,
            Goal::Missed { .. } => Metric::Missed,
            Goal::Majflt { .. } => Metric::Majflt,
        }
    }

    /// Whether the goal is decided on a time (ns) rather than a count.
    pub const fn is_latency(&self) -> bool {
        matches!(self, Goal::Quantile { .. } | Goal::Max { .. })
    }

    /// The limit: ns for a latency, else a count.
    pub const fn limit(&self) -> u64 {
        match *self {
            Goal::Quantile { limit_ns, .. } | Goal::Max { limit_ns } => limit_ns,
            Goal::Missed { limit } | Goal::Majflt { limit } => limit,
        }
    }
}

/// What a goal measures; it prints as it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Metric {
    /// A quantile.
    Quantile(Ppm),
    /// The maximum.
    Max,
    /// Missed periods.
    Missed,
    /// Major page faults.
    Majflt,
}

impl core::fmt::Display for Metric {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Metric::Quantile(q) => {
                f.write_str("p")?;
                write_percent(f, q)
            }
            Metric::Max => f.write_str("max"),
            Metric::Missed => f.write_str("missed"),
            Metric::Majflt => f.write_str("majflt"),
        }
    }
}

/// `q` as a percentage with no trailing zeros: `99.9` for `Ppm(999_000)`.
fn write_percent(f: &mut core::fmt::Formatter<'_>, q: Ppm) -> core::fmt::Result {
    let (int, mut frac) = (q.0 / 10_000, q.0 % 10_000);
    write!(f, "{int}")?;
    if frac == 0 {
        return Ok(());
    }
    let mut digits = 4;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    write!(f, ".{frac:0digits$}")
}

/// A goal list and its confidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goals {
    goals: heapless::Vec<Goal, MAX_GOALS>,
    confidence: Ppm,
}

impl Goals {
    /// No goal, at the default confidence.
    pub const fn new() -> Self {
        Goals {
            goals: heapless::Vec::new(),
            confidence: DEFAULT_CONFIDENCE,
        }
    }

    /// The conditions, in the order given.
    pub fn goals(&self) -> &[Goal] {
        &self.goals
    }

    /// The confidence the quantile verdicts hold at, for the whole run.
    pub const fn confidence(&self) -> Ppm {
        self.confidence
    }

    /// The quantile goals' limits (ns), in order: the thresholds a
    /// [`Exceedances`] counts samples above.
    pub fn quantile_limits(&self) -> impl Iterator<Item = u64> + '_ {
        self.goals.iter().filter_map(|g| match *g {
            Goal::Quantile { limit_ns, .. } => Some(limit_ns),
            _ => None,
        })
    }

    /// Whether there is no condition.
    pub fn is_empty(&self) -> bool {
        self.goals.is_empty()
    }
}

impl Default for Goals {
    fn default() -> Self {
        Goals::new()
    }
}

impl core::fmt::Display for Goal {
    /// The condition as [`Goals::parse`] reads it back: a latency in the
    /// largest unit it is a whole number of (`s`, `ms`, `us`, `ns`).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}<=", self.metric())?;
        let n = self.limit();
        if !self.is_latency() {
            return write!(f, "{n}");
        }
        let (div, unit) = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
            .into_iter()
            .find(|&(d, _)| n > 0 && n.is_multiple_of(d))
            .unwrap_or((1, "ns"));
        write!(f, "{}{unit}", n / div)
    }
}

impl core::fmt::Display for Goals {
    /// The list as [`Goals::parse`] reads it back, with the confidence.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, g) in self.goals.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{g}")?;
        }
        f.write_str("@")?;
        write_percent(f, self.confidence)?;
        f.write_str("%")
    }
}
