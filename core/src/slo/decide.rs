//! The verdicts of one run: every thread's every goal, the quantile goals
//! decided together at the goal list's confidence (Holm's procedure).

use super::math::{cbrt, t_quantile};
use super::{Exceedances, Goal, Goals, MAX_GOALS, MIN_BLOCKS};
use crate::stats::sqrt;
use crate::wire::MAX_THREADS;

/// A goal's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Outcome {
    /// The goal holds (a quantile's: at the stated confidence).
    Pass,
    /// The goal is broken (a quantile's: at the stated confidence).
    Fail,
    /// The run cannot tell.
    Inconclusive,
}

impl Outcome {
    /// The outcome's word: `pass`, `fail` or `inconclusive`.
    pub const fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Inconclusive => "inconclusive",
        }
    }
}

/// The outcome of several verdicts: fail over inconclusive over pass;
/// of none, inconclusive.
pub fn worst(outcomes: impl IntoIterator<Item = Outcome>) -> Outcome {
    outcomes
        .into_iter()
        .reduce(|w, o| match (w, o) {
            (Outcome::Fail, _) | (_, Outcome::Fail) => Outcome::Fail,
            (Outcome::Inconclusive, _) | (_, Outcome::Inconclusive) => Outcome::Inconclusive,
            _ => Outcome::Pass,
        })
        .unwrap_or(Outcome::Inconclusive)
}

/// Why a verdict is what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Why {
    /// A maximum or a count, as observed: no interval is claimed.
    Observed,
    /// The share's interval lies wholly on one side of the allowance.
    Interval,
    /// The interval holds the allowance: too short a run at this spread.
    Undecided,
    /// The share sits at the allowance (within the buckets' rounding): no
    /// run length will decide it.
    AtLimit,
    /// Fewer than [`MIN_BLOCKS`] blocks: the spread is unknown.
    TooFewBlocks,
    /// The thread has no sample.
    NoSamples,
    /// It would pass, but the run is incomplete or its histograms are not
    /// exact: lost samples could break it.
    Incomplete,
}

impl Why {
    /// Why, in a few words (as the host's table and the target's lines
    /// say it).
    pub const fn text(self) -> &'static str {
        match self {
            Why::Observed => "as observed",
            Why::Interval => "interval",
            Why::Undecided => "interval holds the allowance",
            Why::AtLimit => "at the allowance: no run length decides",
            Why::TooFewBlocks => "fewer than 10 blocks",
            Why::NoSamples => "no samples",
            Why::Incomplete => "run incomplete or not exact",
        }
    }
}

/// A quantile goal's evidence: the share of samples above its limit, and
/// the interval on that share that decided it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bound {
    /// Share allowed above the limit: `1 - q`.
    pub allowed: f64,
    /// Share of the samples whose bucket reaches above the limit.
    pub share: f64,
    /// Lower bound of the share (whole buckets above the limit only).
    pub lower: f64,
    /// Upper bound of the share (every bucket reaching above the limit).
    pub upper: f64,
    /// The one-sided confidence of each bound, after Holm's step for this
    /// goal: the list's confidence for the whole run.
    pub level: f64,
    /// The design effect: the blocks' variance over the binomial one
    /// (at least 1); the sample count is divided by it.
    pub design_effect: f64,
    /// Blocks the spread came from.
    pub blocks: u32,
    /// Samples.
    pub samples: u64,
}

/// One thread's verdict on one goal.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Verdict {
    /// The thread (index into the caller's list).
    pub thread: usize,
    /// The goal.
    pub goal: Goal,
    /// Pass, fail or inconclusive.
    pub outcome: Outcome,
    /// Why.
    pub why: Why,
    /// A quantile goal's interval (`None` for observed goals, and for a
    /// thread with too few blocks or samples).
    pub bound: Option<Bound>,
    /// For an inconclusive quantile goal: about how much longer (ns) the
    /// run should have gone on to decide it, at the same share and spread.
    pub more_ns: Option<u64>,
}

impl Verdict {
    /// A verdict not yet given: [`decide`]'s output buffer starts as these.
    pub const UNDECIDED: Verdict = Verdict {
        thread: 0,
        goal: Goal::Missed { limit: 0 },
        outcome: Outcome::Inconclusive,
        why: Why::NoSamples,
        bound: None,
        more_ns: None,
    };
}

/// What [`decide`] needs of one thread.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The samples above the quantile goals' limits, block by block.
    pub exceedances: &'a Exceedances,
    /// The largest sample (ns), if any.
    pub max_ns: Option<u64>,
    /// Missed periods.
    pub missed: u64,
    /// Major page faults.
    pub majflt: u64,
    /// Run time the samples cover (ns).
    pub elapsed_ns: u64,
}

/// One quantile goal's test, for Holm's procedure.
#[derive(Debug, Clone, Copy)]
struct Test {
    slot: usize,
    qi: usize,
    allowed: f64,
    strength: f64,
    df: u32,
}

/// Quantile tests one run holds at most: every goal of every thread a
/// run can have.
pub const MAX_TESTS: usize = MAX_THREADS * MAX_GOALS;

/// The verdicts of a run of `threads` on `goals`, thread by thread in
/// goal order, into `out` (which should hold `threads.len() *
/// goals.goals().len()`); returns how many were written. `complete`:
/// whether the run ended well and its histograms are exact; if not, no
/// goal passes.
///
/// The quantile goals' confidence holds for the run: each thread's every
/// quantile goal is one hypothesis of Holm's step-down procedure, so that
/// the chance of any wrong pass or fail among them is at most one minus
/// the confidence.
pub fn decide(
    goals: &Goals,
    threads: &[Observed<'_>],
    complete: bool,
    out: &mut [Verdict],
) -> usize {
    let alpha = 1.0 - f64::from(goals.confidence().0) / 1e6;
    let mut tests = [Test {
        slot: 0,
        qi: 0,
        allowed: 0.0,
        strength: 0.0,
        df: 0,
    }; MAX_TESTS];
    let (mut written, mut m) = (0usize, 0usize);
    for (thread, obs) in threads.iter().enumerate() {
        let mut qi = 0usize;
        for &goal in goals.goals() {
            let Some(slot) = out.get_mut(written) else {
                break;
            };
            *slot = observed(thread, goal, obs, complete);
            if let Goal::Quantile { q, .. } = goal {
                let allowed = f64::from(1_000_000 - q.0) / 1e6;
                match (share_of(obs.exceedances, qi, allowed), tests.get_mut(m)) {
                    (Some(s), Some(t)) => {
                        let (strength, df) = s.strength();
                        *t = Test {
                            slot: written,
                            qi,
                            allowed,
                            strength,
                            df,
                        };
                        m += 1;
                    }
                    (Some(_), None) => slot.why = Why::Undecided,
                    (None, _) => {}
                }
                qi += 1;
            }
            written += 1;
        }
    }
    let tests = &mut tests[..m];
    holm(
        tests,
        alpha,
        |t| (t.strength, t.df),
        |t, level, decided| {
            let v = &mut out[t.slot];
            let obs = &threads[v.thread];
            if let Some(s) = share_of(obs.exceedances, t.qi, t.allowed) {
                *v = s.verdict(*v, level, decided, complete, obs.elapsed_ns);
            }
        },
    );
    written
}

/// Holm's step-down procedure over `tests` at family error `alpha`: the
/// tests in order of falling strength (`key`: the statistic and its
/// degrees of freedom), the `i`-th of `m` tested at one-sided level `1 -
/// alpha / (m - i)` against Student's t; after the first that falls short,
/// none is decided. `each` gets every test with its level and whether it
/// was decided.
pub(super) fn holm<T>(
    tests: &mut [T],
    alpha: f64,
    key: impl Fn(&T) -> (f64, u32),
    mut each: impl FnMut(&T, f64, bool),
) {
    let m = tests.len();
    // strongest first, by f64::total_cmp's order; core's one sort, not
    // another instance of the slice sorts in every target binary
    crate::sort::by_key(tests, |t| core::cmp::Reverse(total_order(key(t).0)));
    let mut stopped = false;
    for (rank, t) in tests.iter().enumerate() {
        let level = 1.0 - alpha / (m - rank) as f64;
        let (strength, df) = key(t);
        stopped |= strength < t_quantile(level, df);
        each(t, level, !stopped);
    }
}

/// `x` as an integer of the same order as [`f64::total_cmp`].
fn total_order(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

/// The verdict of an observed goal, and a quantile goal's before its
/// test (too few blocks or samples, else undecided).
fn observed(thread: usize, goal: Goal, obs: &Observed<'_>, complete: bool) -> Verdict {
    let v = Verdict {
        thread,
        goal,
        outcome: Outcome::Inconclusive,
        why: Why::Observed,
        bound: None,
        more_ns: None,
    };
    let seen = match goal {
        Goal::Quantile { .. } => {
            let t = obs.exceedances;
            let why = if t.samples() == 0 {
                Why::NoSamples
            } else {
                Why::TooFewBlocks
            };
            let more_ns = (t.blocks() > 0 && t.blocks() < MIN_BLOCKS).then(|| {
                obs.elapsed_ns / u64::from(t.blocks()) * u64::from(MIN_BLOCKS - t.blocks())
            });
            return Verdict { why, more_ns, ..v };
        }
        Goal::Max { .. } => match obs.max_ns {
            Some(ns) => ns,
            None => {
                return Verdict {
                    why: Why::NoSamples,
                    ..v
                }
            }
        },
        Goal::Missed { .. } => obs.missed,
        Goal::Majflt { .. } => obs.majflt,
    };
    let (outcome, why) = if seen > goal.limit() {
        (Outcome::Fail, Why::Observed)
    } else if complete {
        (Outcome::Pass, Why::Observed)
    } else {
        (Outcome::Inconclusive, Why::Incomplete)
    };
    Verdict { outcome, why, ..v }
}

/// One rounding's share above a limit, with its spread between blocks.
#[derive(Debug, Clone, Copy)]
struct Side {
    /// The share of the run's samples.
    share: f64,
    /// Standard deviation of a block's share (batch means), at least the
    /// binomial one at the allowance.
    sd: f64,
    /// Skewness of the blocks' shares.
    skew: f64,
    /// Degrees of freedom.
    df: u32,
}

/// A thread's share above one limit, both ways of rounding, allowed
/// `allowed`.
#[derive(Debug, Clone, Copy)]
struct Share {
    n: f64,
    blocks: u32,
    allowed: f64,
    hi: Side,
    lo: Side,
}

/// The degrees of freedom of a share's spread: the blocks that hold
/// samples above the limit, less one (the spread of sparse, clustered
/// samples is known only as well as the blocks that show them), or all
/// blocks less one when fewer than two do.
fn degrees(blocks_above: u32, blocks: u32) -> u32 {
    if blocks_above >= 2 {
        blocks_above - 1
    } else {
        blocks - 1
    }
}

/// The share above the `i`-th limit of `exc`, allowed `allowed`; `None`
/// without the blocks to measure its spread.
fn share_of(exc: &Exceedances, i: usize, allowed: f64) -> Option<Share> {
    let (sums, sizes) = exc.sums(i)?;
    let blocks = exc.blocks();
    if blocks < MIN_BLOCKS || exc.samples() == 0 {
        return None;
    }
    let n = exc.samples() as f64;
    let k = f64::from(blocks);
    let mean_n = n / k;
    let side = |s: &super::exceedances::Side| {
        let r = s.x as f64 / n;
        // Σ d_b² and Σ d_b³ of d_b = x_b - r n_b, over a block's mean size
        let d2 = s.xx as f64 - 2.0 * r * s.xn as f64 + r * r * sizes.nn as f64;
        let d3 = s.xxx - 3.0 * r * s.xxn + 3.0 * r * r * s.xnn - r * r * r * sizes.nnn;
        let var = (d2.max(0.0) / (mean_n * mean_n)) / (k - 1.0);
        let floor = allowed * (1.0 - allowed) / mean_n;
        let sd = sqrt(var.max(floor));
        let third = d3 / (mean_n * mean_n * mean_n) / k;
        Side {
            share: r,
            sd,
            skew: third / (sd * sd * sd),
            df: degrees(s.blocks, blocks),
        }
    };
    Some(Share {
        n,
        blocks,
        allowed,
        hi: side(&sums.hi),
        lo: side(&sums.lo),
    })
}

impl Side {
    /// Hall's skewness-corrected statistic (1992) for a mean of `mean`
    /// over `k` blocks: `√k · g(S)`, `S = (share - mean) / sd`, `g(S) = S
    /// + γS²/3 + γ²S³/27 + γ/(6k)`, increasing in `S`.
    fn statistic(&self, mean: f64, k: f64) -> f64 {
        let s = (self.share - mean) / self.sd;
        let g = self.skew;
        sqrt(k) * (s + g * s * s / 3.0 + g * g * s * s * s / 27.0 + g / (6.0 * k))
    }

    /// The mean at which [`Side::statistic`] equals `t`: `g(S) = t / √k`
    /// solved in closed form, `S = 3/γ · (∛(1 + γ(c - γ/(6k))) - 1)`.
    fn bound(&self, t: f64, k: f64) -> f64 {
        let g = self.skew;
        let c = t / sqrt(k) - g / (6.0 * k);
        let s = if g.abs() < 1e-9 {
            c
        } else {
            3.0 / g * (cbrt(1.0 + g * c) - 1.0)
        };
        (self.share - s * self.sd).clamp(0.0, 1.0)
    }
}

impl Share {
    /// The statistic of the side the share leans to, positive and large
    /// when it is far below (pass) or above (fail) the allowance, and its
    /// degrees of freedom.
    fn strength(&self) -> (f64, u32) {
        let k = f64::from(self.blocks);
        let pass = -self.hi.statistic(self.allowed, k);
        let fail = self.lo.statistic(self.allowed, k);
        if pass >= fail {
            (pass, self.hi.df)
        } else {
            (fail, self.lo.df)
        }
    }

    /// The verdict, tested at one-sided `level`; `decided`: whether
    /// Holm's procedure reached and rejected it.
    fn verdict(
        &self,
        v: Verdict,
        level: f64,
        decided: bool,
        complete: bool,
        elapsed_ns: u64,
    ) -> Verdict {
        let k = f64::from(self.blocks);
        let (crit_hi, crit_lo) = (t_quantile(level, self.hi.df), t_quantile(level, self.lo.df));
        let upper = self.hi.bound(-crit_hi, k);
        let lower = self.lo.bound(crit_lo, k);
        let binomial = sqrt(self.allowed * (1.0 - self.allowed) * k / self.n);
        let bound = Some(Bound {
            allowed: self.allowed,
            share: self.hi.share,
            lower,
            upper,
            level,
            design_effect: (self.hi.sd / binomial) * (self.hi.sd / binomial),
            blocks: self.blocks,
            samples: self.n as u64,
        });
        let (outcome, why) = match (decided, upper <= self.allowed, lower > self.allowed) {
            (true, true, _) if complete => (Outcome::Pass, Why::Interval),
            (true, true, _) => (Outcome::Inconclusive, Why::Incomplete),
            (true, _, true) => (Outcome::Fail, Why::Interval),
            _ if self.lo.share <= self.allowed && self.hi.share >= self.allowed => {
                (Outcome::Inconclusive, Why::AtLimit)
            }
            _ => (Outcome::Inconclusive, Why::Undecided),
        };
        let more_ns = (why == Why::Undecided)
            .then(|| self.more_ns(crit_hi, crit_lo, elapsed_ns))
            .flatten();
        Verdict {
            outcome,
            why,
            bound,
            more_ns,
            ..v
        }
    }

    /// About how much longer the run should have gone on for the side
    /// the share leans to to be decided at the same share, spread and
    /// skewness: the first of a rising list of run lengths (up to 1,000
    /// times this one) whose statistic crosses `crit_hi` or `crit_lo`.
    fn more_ns(&self, crit_hi: f64, crit_lo: f64, elapsed_ns: u64) -> Option<u64> {
        const FACTORS: [f64; 16] = [
            1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 25.0, 40.0, 60.0, 100.0, 250.0,
            1000.0,
        ];
        let k = f64::from(self.blocks);
        let p = self.allowed;
        let decides = |f: f64| {
            if self.hi.share < p {
                -self.hi.statistic(p, k * f) >= crit_hi
            } else {
                self.lo.share > p && self.lo.statistic(p, k * f) >= crit_lo
            }
        };
        let f = FACTORS.into_iter().find(|&f| decides(f))?;
        Some(((f - 1.0) * elapsed_ns as f64) as u64)
    }
}
