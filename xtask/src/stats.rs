//! The statistics of paired benchmarks: medians, the bootstrap interval
//! of a median ratio, and the exact sign test.
//!
//! A benchmark runs two programs in alternating pairs (A B, B A, ...)
//! and takes one ratio A/B per pair. The figures are the median of those
//! ratios, its bootstrap 95 % interval (percentile method, a fixed seed
//! so that a table rebuilt from the same raw outputs is the same) and
//! the two-sided exact sign test of the pairs below 1 against those
//! above. A claim ("lower", "higher") is made only when the interval
//! excludes 1. Histogram quantiles are the core's nearest rank
//! ([`latscope_core::stats::nearest_rank`], used by [`crate::histfile`]).

pub mod cli;

use serde::{Deserialize, Serialize};

/// Resamples of the bootstrap.
pub const RESAMPLES: usize = 4000;
/// The bootstrap's seed: a fixed one, so the same pairs give the same
/// interval.
pub const SEED: u64 = 16;

/// The median of `values` (the mean of the middle two for an even
/// count); `None` when there are none. NaN values are left out.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The arithmetic mean; `None` when there are no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// SplitMix64: a small, seeded generator, enough for resampling.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub const fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (`n` > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// A uniform value in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The bootstrap 95 % interval of the median of `values` (percentile
/// method: the 2.5th and 97.5th percentiles of the medians of
/// `resamples` resamples with replacement); `None` when there are none.
pub fn bootstrap_median(values: &[f64], resamples: usize, seed: u64) -> Option<(f64, f64)> {
    if values.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = Rng::new(seed);
    let mut sample = vec![0.0; values.len()];
    let mut medians = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for s in sample.iter_mut() {
            *s = values[rng.below(values.len())];
        }
        sample.sort_by(f64::total_cmp);
        medians.extend(median_sorted(&sample));
    }
    medians.sort_by(f64::total_cmp);
    // the ranks of the 2.5th and 97.5th percentiles, 1-based as
    // `floor(0.025 B) + 1` and `floor(0.975 B)`
    let lo = medians[resamples * 25 / 1000];
    let hi = medians[(resamples * 975 / 1000).max(1) - 1];
    Some((lo, hi))
}

/// P(X <= k) for X ~ Binomial(n, 1/2): exactly (integer counts, one
/// rounding) up to n = 126, in log space above.
pub fn binomial_half_cdf(k: u64, n: u64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if n <= 126 {
        // C(n, i+1) = C(n, i) (n - i) / (i + 1), exact in u128: C(126, 63) < 2^124
        let (mut c, mut sum) = (1u128, 0u128);
        for i in 0..=k as u128 {
            sum += c;
            c = c * (n as u128 - i) / (i + 1);
        }
        return sum as f64 / 2f64.powi(n as i32);
    }
    let log_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut log_c = 0.0f64;
    let mut sum = 0.0;
    for i in 0..=k {
        sum += (log_c + log_half_n).exp();
        log_c += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    sum.min(1.0)
}

/// The two-sided exact sign test of `below` against `above` (ties left
/// out): `2 P(X <= min)` for X ~ Binomial(below + above, 1/2), at most 1.
pub fn sign_test(below: u64, above: u64) -> f64 {
    let n = below + above;
    if n == 0 {
        return 1.0;
    }
    (2.0 * binomial_half_cdf(below.min(above), n)).min(1.0)
}

/// What a ratio's interval says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Claim {
    /// The whole interval is below 1.
    Lower,
    /// The whole interval is above 1.
    Higher,
    /// The interval holds 1: no claim.
    None,
}

impl Claim {
    /// The claim of the interval [`lo`, `hi`].
    pub fn of(lo: f64, hi: f64) -> Claim {
        if hi < 1.0 {
            Claim::Lower
        } else if lo > 1.0 {
            Claim::Higher
        } else {
            Claim::None
        }
    }

    /// Its word in a table.
    pub fn label(self) -> &'static str {
        match self {
            Claim::Lower => "lower",
            Claim::Higher => "higher",
            Claim::None => "no claim (interval holds 1)",
        }
    }
}

/// The paired statistics of a ratio A/B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairStats {
    /// The median of the per-pair ratios.
    pub median: f64,
    /// Its bootstrap 95 % interval, low end.
    pub lo: f64,
    /// Its bootstrap 95 % interval, high end.
    pub hi: f64,
    /// Pairs whose ratio is below 1.
    pub below: u64,
    /// Pairs whose ratio is above 1.
    pub above: u64,
    /// The pairs with both values (and B not 0).
    pub n: usize,
    /// The two-sided exact sign test of below against above.
    pub p: f64,
    /// Every pair's ratio, in pair order.
    pub ratios: Vec<f64>,
}

impl PairStats {
    /// The statistics of the pairs `(a, b)`; a pair with a value missing
    /// or `b` = 0 is left out, and with none left there are none.
    pub fn of(pairs: &[(Option<f64>, Option<f64>)]) -> Option<PairStats> {
        let ratios: Vec<f64> = pairs
            .iter()
            .filter_map(|&(a, b)| match (a, b) {
                (Some(a), Some(b)) if b != 0.0 => Some(a / b),
                _ => None,
            })
            .collect();
        let median = median(&ratios)?;
        let (lo, hi) = bootstrap_median(&ratios, RESAMPLES, SEED)?;
        let below = ratios.iter().filter(|&&r| r < 1.0).count() as u64;
        let above = ratios.iter().filter(|&&r| r > 1.0).count() as u64;
        Some(PairStats {
            median,
            lo,
            hi,
            below,
            above,
            n: ratios.len(),
            p: sign_test(below, above),
            ratios,
        })
    }

    /// What the interval says.
    pub fn claim(&self) -> Claim {
        Claim::of(self.lo, self.hi)
    }
}

/// `%.3g` of C's printf: 3 significant digits (as the sign test's p is
/// printed).
pub fn g3(x: f64) -> String {
    g(x, 3)
}

/// `%.Ng` of C's printf: `digits` significant digits, trailing zeros
/// dropped, the exponent form when the exponent is below -4 or not below
/// `digits` (awk prints a number that is not an integer as `%.6g`).
pub fn g(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x == 0.0 { "0".into() } else { format!("{x}") };
    }
    let p = digits.max(1);
    // the exponent after rounding to p digits
    let sci = format!("{:.*e}", p - 1, x);
    let (m, e) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = e.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = trim_zeros(m);
        return format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let decimals = (p as i32 - 1 - exp).max(0) as usize;
    trim_zeros(&format!("{x:.decimals$}")).to_string()
}

/// A/B with two decimals; "-" when either is missing or B is 0.
pub fn ratio_text(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => format!("{:.2}", a / b),
        _ => "-".into(),
    }
}

/// A figure in a table: [`awk_number`], or "-" without one.
pub fn cell(x: Option<f64>) -> String {
    x.map_or("-".into(), awk_number)
}

/// A number as awk's `print` writes it: an integer as one, anything else
/// as `%.6g`.
pub fn awk_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{}", x as i64)
    } else {
        g(x, 6)
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests;
