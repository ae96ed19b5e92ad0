//! The verdicts at the level they claim: runs of independent and of
//! bursty (Markov-modulated) samples, at and away from the goal, with
//! fixed seeds. A rate "at most k of 200" takes k from the binomial
//! bound at 99.9 % ([`wrong_max`]): with a true rate of 5 %, 21 or fewer
//! of 200 runs (P(more) < 0.001). Under emulation a share of the runs,
//! with the bound for that many.

use super::*;
use crate::layout::Layout;
use std::vec;
use std::vec::Vec;

/// Runs per case: 200 natively, a share under emulation (CI's `arm-user`
/// stage: `LATSCOPE_PROPTEST_DIVISOR`, `core/src/proptest_cases.rs`).
fn runs() -> usize {
    crate::proptest_cases::config(200).cases as usize
}

/// The most wrong verdicts of `n` runs that a true rate of 5 % gives with
/// a chance of 99.9 %: the smallest `k` with `P(Bin(n, 0.05) > k) <
/// 0.001` (21 for 200 runs).
pub(super) fn wrong_max(n: usize) -> usize {
    let (p, mut pmf, mut cdf) = (0.05f64, 0.95f64.powi(n as i32), 0.0);
    for k in 0..=n {
        cdf += pmf;
        if 1.0 - cdf < 0.001 {
            return k;
        }
        pmf *= (n - k) as f64 / (k + 1) as f64 * p / (1.0 - p);
    }
    n
}

#[test]
fn the_bound_for_200_runs_is_21() {
    assert_eq!(wrong_max(200), 21);
    assert_eq!(wrong_max(25), 6);
}
const BASE_NS: u64 = 10_000;
const MID_NS: u64 = 50_000;
const HIGH_NS: u64 = 200_000;

struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Samples from two states: quiet, and a storm entered with probability
/// `enter` per sample and left with `leave`; in each state a sample is
/// high (above 100 µs) or mid (above 30 µs) with the state's own chances.
/// With `enter` 0 the samples are independent.
#[derive(Clone, Copy)]
struct Model {
    enter: f64,
    leave: f64,
    /// (P(high), P(mid)) when quiet.
    quiet: (f64, f64),
    /// (P(high), P(mid)) in a storm.
    storm: (f64, f64),
}

impl Model {
    /// Independent samples: high with `high`, mid with `mid`.
    fn independent(high: f64, mid: f64) -> Model {
        Model {
            enter: 0.0,
            leave: 1.0,
            quiet: (high, mid),
            storm: (0.0, 0.0),
        }
    }

    /// Storms of 25 samples on average, 1 % of the time, holding 90 % of
    /// the high samples and 50 % of the mid ones; overall high with
    /// `high` and mid with `mid`.
    fn bursty(high: f64, mid: f64) -> Model {
        let (leave, share) = (1.0 / 25.0, 0.01);
        let enter = leave * share / (1.0 - share);
        Model {
            enter,
            leave,
            quiet: (0.1 * high / (1.0 - share), 0.5 * mid / (1.0 - share)),
            storm: (0.9 * high / share, 0.5 * mid / share),
        }
    }

    /// One run of `blocks` blocks of `per_block` samples into the exceedances of
    /// `goals`; its largest sample.
    fn run(&self, rng: &mut Rng, goals: &Goals, blocks: u32, per_block: u32) -> (Exceedances, u64) {
        let l = Layout::DEFAULT;
        let mut t = Exceedances::for_goals(goals);
        let share = self.enter / (self.enter + self.leave);
        let mut storm = rng.unit() < share;
        let mut max = 0;
        for epoch in 1..=blocks {
            let mut c = [0u64; 3];
            for _ in 0..per_block {
                let u = rng.unit();
                storm = if storm {
                    u >= self.leave
                } else {
                    u < self.enter
                };
                let (high, mid) = if storm { self.storm } else { self.quiet };
                let u = rng.unit();
                let k = usize::from(u < high + mid) + usize::from(u < high);
                c[k] += 1;
            }
            for (k, ns) in [BASE_NS, MID_NS, HIGH_NS].into_iter().enumerate() {
                t.add(epoch, &l, l.bucket_of(ns), c[k]);
                if c[k] > 0 {
                    max = max.max(ns);
                }
            }
        }
        t.end_block();
        (t, max)
    }
}

/// The verdicts of `threads` threads of `runs` runs of `model`.
fn verdicts(
    model: Model,
    goals: &str,
    threads: usize,
    blocks: u32,
    seed: u64,
) -> Vec<Vec<Verdict>> {
    let goals = Goals::parse(goals).unwrap();
    let mut rng = Rng(seed);
    (0..runs())
        .map(|_| {
            let runs: Vec<(Exceedances, u64)> = (0..threads)
                .map(|_| model.run(&mut rng, &goals, blocks, 1000))
                .collect();
            let obs: Vec<Observed<'_>> = runs
                .iter()
                .map(|(t, max)| Observed {
                    exceedances: t,
                    max_ns: Some(*max),
                    missed: 0,
                    majflt: 0,
                    elapsed_ns: u64::from(blocks) * 1_000_000_000,
                })
                .collect();
            let mut out = vec![Verdict::UNDECIDED; threads * goals.goals().len()];
            let n = decide(&goals, &obs, true, &mut out);
            out.truncate(n);
            out
        })
        .collect()
}

/// Runs whose verdicts include `outcome`.
fn runs_with(v: &[Vec<Verdict>], outcome: Outcome) -> usize {
    v.iter()
        .filter(|r| r.iter().any(|v| v.outcome == outcome))
        .count()
}

const P999: &str = "p99.9<=100us";

#[test]
fn at_the_goal_neither_verdict_comes_more_often_than_claimed() {
    for (name, model) in [
        ("independent", Model::independent(0.001, 0.0)),
        ("bursty", Model::bursty(0.001, 0.0)),
    ] {
        let v = verdicts(model, P999, 1, 60, 0x5eed_0001);
        let n = v.len();
        let (pass, fail) = (runs_with(&v, Outcome::Pass), runs_with(&v, Outcome::Fail));
        eprintln!("{name}: {pass} passes, {fail} fails of {n} at the goal");
        assert!(
            pass <= wrong_max(n),
            "{name}: {pass} passes of {n} at the goal"
        );
        assert!(
            fail <= wrong_max(n),
            "{name}: {fail} fails of {n} at the goal"
        );
    }
}

#[test]
fn the_confidence_holds_for_the_run_across_threads_and_goals() {
    for (name, model) in [
        ("independent", Model::independent(0.001, 0.009)),
        ("bursty", Model::bursty(0.001, 0.009)),
    ] {
        // both goals sit exactly at their allowance: a fail is wrong, and
        // so would a pass be a hair above it
        let v = verdicts(model, "p99.9<=100us,p99<=30us", 4, 60, 0x5eed_0002);
        let n = v.len();
        let (pass, fail) = (runs_with(&v, Outcome::Pass), runs_with(&v, Outcome::Fail));
        eprintln!("{name}: runs with a pass {pass}, with a fail {fail} of {n}");
        assert!(
            pass <= wrong_max(n),
            "{name}: {pass} runs of {n} with a pass at the goals"
        );
        assert!(
            fail <= wrong_max(n),
            "{name}: {fail} runs of {n} with a fail at the goals"
        );
    }
}

#[test]
fn a_goal_that_holds_passes_and_a_broken_one_fails() {
    // the share of runs that must decide rightly
    for (name, model, outcome, at_least) in [
        (
            "independent, 4x under",
            Model::independent(0.00025, 0.0),
            Outcome::Pass,
            0.95,
        ),
        (
            "bursty, 4x under",
            Model::bursty(0.00025, 0.0),
            Outcome::Pass,
            0.75,
        ),
        (
            "independent, 3x over",
            Model::independent(0.003, 0.0),
            Outcome::Fail,
            0.95,
        ),
        (
            "bursty, 3x over",
            Model::bursty(0.003, 0.0),
            Outcome::Fail,
            0.75,
        ),
    ] {
        let v = verdicts(model, P999, 1, 60, 0x5eed_0003);
        let (got, n) = (runs_with(&v, outcome), v.len());
        eprintln!("{name}: {got} of {n} runs {outcome:?}");
        assert!(
            got as f64 >= at_least * n as f64,
            "{name}: {got} of {n} runs {outcome:?}"
        );
        assert!(
            v.iter()
                .flatten()
                .all(|v| v.outcome != Outcome::Inconclusive
                    || v.more_ns.is_some()
                    || v.why == Why::AtLimit),
            "{name}: an undecided verdict without a run time"
        );
    }
}

#[test]
fn a_short_run_is_inconclusive_and_says_how_long_to_run() {
    let v = verdicts(Model::independent(0.00025, 0.0), P999, 1, 3, 0x5eed_0004);
    for v in v.iter().flatten() {
        assert_eq!(
            (v.outcome, v.why),
            (Outcome::Inconclusive, Why::TooFewBlocks)
        );
        // 3 of 10 blocks: 7 more seconds
        assert_eq!(v.more_ns, Some(7_000_000_000));
    }
}

#[test]
fn an_incomplete_run_never_passes_but_its_fails_stand() {
    let goals = Goals::parse("p99.9<=100us,max<=150us,missed<=0").unwrap();
    let mut rng = Rng(7);
    let (t, max) = Model::independent(0.0, 0.0).run(&mut rng, &goals, 20, 1000);
    let obs = [Observed {
        exceedances: &t,
        max_ns: Some(max),
        missed: 2,
        majflt: 0,
        elapsed_ns: 20_000_000_000,
    }];
    let mut out = [Verdict::UNDECIDED; 3];
    assert_eq!(decide(&goals, &obs, true, &mut out), 3);
    let got: Vec<_> = out.iter().map(|v| (v.outcome, v.why)).collect();
    assert_eq!(
        got,
        [
            (Outcome::Pass, Why::Interval),
            (Outcome::Pass, Why::Observed),
            (Outcome::Fail, Why::Observed)
        ]
    );
    decide(&goals, &obs, false, &mut out);
    let got: Vec<_> = out.iter().map(|v| (v.outcome, v.why)).collect();
    assert_eq!(
        got,
        [
            (Outcome::Inconclusive, Why::Incomplete),
            (Outcome::Inconclusive, Why::Incomplete),
            (Outcome::Fail, Why::Observed)
        ]
    );
}
