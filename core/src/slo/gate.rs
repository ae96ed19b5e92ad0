//! The regression gate between runs (`latscope-host compare --gate`): a
//! quantile's values in baseline runs against candidate runs, runs being
//! the unit (run-to-run variance, from boot, placement and heat, is larger
//! than any one run's sampling error).
//!
//! Per quantile, Welch's t interval on the difference of the mean
//! logarithms (the ratio of the geometric means), against a tolerance: a
//! regression larger than the tolerance at the stated confidence fails,
//! one surely within it passes, else inconclusive. Holm's procedure over
//! the quantiles makes the confidence hold for the whole gate.

use super::decide::holm;
use super::math::{exp, ln, t_quantile};
use super::Outcome;
use crate::stats::{sqrt, Ppm};

/// Fewest runs per side: one run leaves the run-to-run spread unknown.
pub const MIN_RUNS: usize = 2;

/// One quantile's comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Comparison {
    /// Pass, fail or inconclusive.
    pub outcome: Outcome,
    /// The baseline runs' geometric mean (ns; NaN without runs).
    pub baseline_ns: f64,
    /// The candidate runs' geometric mean (ns; NaN without runs).
    pub candidate_ns: f64,
    /// Candidate over baseline, the ratio of the geometric means.
    pub ratio: f64,
    /// Lower bound of the ratio.
    pub lower: f64,
    /// Upper bound of the ratio.
    pub upper: f64,
    /// The one-sided confidence of each bound, after Holm's step.
    pub level: f64,
    /// Whether each side had [`MIN_RUNS`] runs.
    pub enough_runs: bool,
}

impl Comparison {
    /// A quantile not compared yet: [`gate`]'s output buffer starts as
    /// these.
    pub const NONE: Comparison = Comparison {
        outcome: Outcome::Inconclusive,
        baseline_ns: f64::NAN,
        candidate_ns: f64::NAN,
        ratio: f64::NAN,
        lower: f64::NAN,
        upper: f64::NAN,
        level: 0.0,
        enough_runs: false,
    };
}

/// Mean and variance of the logarithms of `values` (ns, at least 1).
fn log_moments(values: &[u64]) -> (f64, f64) {
    let n = values.len() as f64;
    let logs = || values.iter().map(|&v| ln(v.max(1) as f64));
    let mean = logs().sum::<f64>() / n;
    let var = if values.len() > 1 {
        logs().map(|l| (l - mean) * (l - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// Welch's difference of `candidate` over `baseline` logs: `(difference,
/// standard error, degrees of freedom)`.
fn welch(baseline: &[u64], candidate: &[u64]) -> (f64, f64, u32) {
    let (ma, va) = log_moments(baseline);
    let (mb, vb) = log_moments(candidate);
    let (na, nb) = (baseline.len() as f64, candidate.len() as f64);
    let (ea, eb) = (va / na, vb / nb);
    // identical values: a spread of a thousandth of the tolerance's scale
    let se2 = (ea + eb).max(1e-12);
    let den = ea * ea / (na - 1.0).max(1.0) + eb * eb / (nb - 1.0).max(1.0);
    let df = if den > 0.0 {
        se2 * se2 / den
    } else {
        na + nb - 2.0
    };
    (mb - ma, sqrt(se2), (df as u32).max(1))
}

/// Compare quantile by quantile: `quantiles[i]` is `(baseline values,
/// candidate values)` of one quantile, one value per run; a regression up
/// to `tolerance` (0.1 for 10 %) is allowed. Writes one comparison per
/// quantile into `out` (at most its length); the confidence holds for all
/// of them together.
pub fn gate(
    quantiles: &[(&[u64], &[u64])],
    tolerance: f64,
    confidence: Ppm,
    out: &mut [Comparison],
) {
    const MAX: usize = 16;
    let alpha = 1.0 - f64::from(confidence.0) / 1e6;
    let limit = ln(1.0 + tolerance);
    let mut tests = [(0usize, 0.0f64, 0.0f64, 0.0f64, 0u32); MAX];
    let mut m = 0;
    for (i, ((a, b), slot)) in quantiles.iter().zip(out.iter_mut()).enumerate() {
        *slot = Comparison {
            level: 1.0 - alpha,
            enough_runs: a.len() >= MIN_RUNS && b.len() >= MIN_RUNS,
            ..Comparison::NONE
        };
        if !a.is_empty() {
            slot.baseline_ns = exp(log_moments(a).0);
        }
        if !b.is_empty() {
            slot.candidate_ns = exp(log_moments(b).0);
        }
        if a.is_empty() || b.is_empty() {
            continue;
        }
        let (d, se, df) = welch(a, b);
        slot.ratio = exp(d);
        if !slot.enough_runs || m == MAX {
            continue;
        }
        // the side it leans to: within the tolerance (pass) or beyond it
        let strength = ((limit - d) / se).max((d - limit) / se);
        tests[m] = (i, d, se, strength, df);
        m += 1;
    }
    holm(
        &mut tests[..m],
        alpha,
        |t| (t.3, t.4),
        |&(i, d, se, _, df), level, decided| {
            let t = t_quantile(level, df);
            let (lo, hi) = (d - t * se, d + t * se);
            let c = &mut out[i];
            c.lower = exp(lo);
            c.upper = exp(hi);
            c.level = level;
            c.outcome = match (decided, lo > limit, hi <= limit) {
                (true, true, _) => Outcome::Fail,
                (true, _, true) => Outcome::Pass,
                _ => Outcome::Inconclusive,
            };
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn one(a: &[u64], b: &[u64], tol: f64) -> Comparison {
        let mut out = [Comparison {
            outcome: Outcome::Pass,
            ..Comparison::NONE
        }];
        gate(&[(a, b)], tol, Ppm(950_000), &mut out);
        out[0]
    }

    #[test]
    fn a_regression_fails_the_same_passes_one_run_is_inconclusive() {
        let base = [100_000, 104_000, 98_000, 101_000, 99_500];
        let same = [99_000, 103_000, 100_500, 102_000, 98_500];
        let worse = [150_000, 158_000, 149_000, 155_000, 151_000];
        let c = one(&base, &same, 0.1);
        assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
        assert!(c.lower < 1.0 && c.upper < 1.1, "{c:?}");
        let c = one(&base, &worse, 0.1);
        assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
        assert!((c.ratio - 1.51).abs() < 0.02 && c.lower > 1.1, "{c:?}");
        // the geometric means the ratio is of
        assert!(
            (c.candidate_ns / c.baseline_ns - c.ratio).abs() < 1e-9,
            "{c:?}"
        );
        assert!((c.baseline_ns - 100_478.0).abs() < 10.0, "{c:?}");
        let c = one(&base[..1], &worse, 0.1);
        assert_eq!((c.outcome, c.enough_runs), (Outcome::Inconclusive, false));
        // two noisy runs a side: too wide to tell
        let c = one(&[80_000, 130_000], &[90_000, 150_000], 0.1);
        assert_eq!(c.outcome, Outcome::Inconclusive, "{c:?}");
    }

    /// A/A: runs drawn from one log-normal spread (a boot-to-boot part
    /// shared by the quantiles, and each's own), 3 against 3, gated with
    /// no tolerance over 4 quantiles, so the truth sits on the limit: at
    /// 95 % for the gate, at most 21 of 200 gates may fail (fewer runs under
    /// emulation, with the bound for that many).
    #[test]
    fn equal_runs_rarely_fail_the_gate() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut normal = || {
            // Irwin-Hall: the sum of 12 uniforms less 6
            (0..12)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 11) as f64 / (1u64 << 53) as f64
                })
                .sum::<f64>()
                - 6.0
        };
        let gates = crate::proptest_cases::config(200).cases as usize;
        let mut fails = 0;
        for _ in 0..gates {
            let runs: Vec<[u64; 4]> = (0..6)
                .map(|_| {
                    let boot = 0.2 * normal();
                    [20_000.0, 40_000.0, 90_000.0, 200_000.0]
                        .map(|q| (q * exp(boot + 0.1 * normal())) as u64)
                })
                .collect();
            let col = |k: usize, r: &[[u64; 4]]| r.iter().map(|v| v[k]).collect::<Vec<u64>>();
            let cols: Vec<(Vec<u64>, Vec<u64>)> = (0..4)
                .map(|k| (col(k, &runs[..3]), col(k, &runs[3..])))
                .collect();
            let q: Vec<(&[u64], &[u64])> = cols
                .iter()
                .map(|(a, b)| (a.as_slice(), b.as_slice()))
                .collect();
            let mut out = [Comparison::NONE; 4];
            gate(&q, 0.0, Ppm(950_000), &mut out);
            fails += usize::from(out.iter().any(|c| c.outcome == Outcome::Fail));
        }
        eprintln!("A/A: {fails} of {gates} gates failed");
        let most = super::super::tests::wrong_max(gates);
        assert!(fails <= most, "{fails} of {gates} A/A gates failed");
    }
}
