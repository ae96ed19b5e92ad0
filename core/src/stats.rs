//! Statistics over bucket counts: nearest-rank quantiles, mean, variance,
//! mode and mean absolute deviation (the figures rteval reports).
//!
//! The functions take the layout and a slice of counts, so they serve the
//! fixed-size histograms of the target and the run-time sized ones of the host.

use crate::layout::Layout;

/// A quantile in parts per million: `Ppm(990_000)` is p99.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Ppm(pub u32);

impl Ppm {
    /// p50, the median.
    pub const P50: Ppm = Ppm(500_000);
    /// p90.
    pub const P90: Ppm = Ppm(900_000);
    /// p99.
    pub const P99: Ppm = Ppm(990_000);
    /// p99.9.
    pub const P999: Ppm = Ppm(999_000);
    /// p99.99.
    pub const P9999: Ppm = Ppm(999_900);
    /// p99.999.
    pub const P99999: Ppm = Ppm(999_990);
    /// The quantiles every report prints, with their labels.
    pub const REPORTED: [(Ppm, &'static str); 6] = [
        (Ppm::P50, "p50"),
        (Ppm::P90, "p90"),
        (Ppm::P99, "p99"),
        (Ppm::P999, "p99.9"),
        (Ppm::P9999, "p99.99"),
        (Ppm::P99999, "p99.999"),
    ];
}

/// Nearest-rank quantile: the smallest bucket whose cumulative count reaches
/// `ceil(q * total)`, reported as that bucket's upper edge in ns
/// (conservative), but never above the exact maximum `max_ns`.
///
/// Returns `None` when there are no samples.
pub fn quantile(layout: &Layout, counts: &[u64], q: Ppm, max_ns: u64) -> Option<u64> {
    let i = nearest_rank(counts, q)?;
    let edge = layout.upper_ns(i).unwrap_or(max_ns);
    Some(edge.min(max_ns))
}

/// The bucket of the nearest-rank quantile: the smallest `i` whose
/// cumulative count reaches `ceil(q * total)` (at least 1).
///
/// Returns `None` when there are no samples.
pub fn nearest_rank(counts: &[u64], q: Ppm) -> Option<usize> {
    let total: u128 = counts.iter().map(|&c| c as u128).sum();
    if total == 0 {
        return None;
    }
    let ppm = q.0.min(1_000_000) as u128;
    let rank = (total * ppm).div_ceil(1_000_000).max(1);
    let mut cum: u128 = 0;
    counts.iter().position(|&c| {
        cum += c as u128;
        cum >= rank
    })
}

/// Representative value (ns) of bucket `i`: its midpoint, clamped to the
/// exact `[min_ns, max_ns]` range seen (the open last bucket uses `max_ns`).
///
/// Counts can arrive before the statistics that bound them (a recording
/// cut between a histogram and its first statistics frame): then
/// `min_ns > max_ns`, and the midpoint (the lower edge for the open last
/// bucket) stands unclamped.
fn representative(layout: &Layout, i: usize, min_ns: u64, max_ns: u64) -> f64 {
    let lo = layout.lower_ns(i);
    let known = min_ns <= max_ns;
    let mid = match layout.upper_ns(i) {
        Some(hi) => lo as f64 + (hi - lo) as f64 / 2.0,
        None if known => max_ns as f64,
        None => lo as f64,
    };
    if known {
        mid.clamp(min_ns as f64, max_ns as f64)
    } else {
        mid
    }
}

/// Spread figures of a histogram, in ns (from bucket midpoints).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Spread {
    /// Variance in ns²; the standard deviation is its square root.
    pub variance: f64,
    /// Mean absolute deviation around the mean (rteval's "MAD").
    pub mad: f64,
    /// Lower edge of the most populated bucket.
    pub mode_ns: u64,
}

/// Variance, mean absolute deviation and mode of the counts around `mean_ns`.
pub fn spread(layout: &Layout, counts: &[u64], mean_ns: f64, min_ns: u64, max_ns: u64) -> Spread {
    let mut n = 0f64;
    let mut sq = 0f64;
    let mut abs = 0f64;
    let mut mode = (0usize, 0u64);
    for (i, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        if c > mode.1 {
            mode = (i, c);
        }
        let d = representative(layout, i, min_ns, max_ns) - mean_ns;
        let w = c as f64;
        n += w;
        sq += w * d * d;
        abs += w * if d < 0.0 { -d } else { d };
    }
    if n == 0.0 {
        return Spread::default();
    }
    Spread {
        variance: sq / n,
        mad: abs / n,
        mode_ns: layout.lower_ns(mode.0),
    }
}

/// Square root by Newton's method (no_std has no `f64::sqrt`).
pub fn sqrt(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    let mut g = if x > 1.0 { x / 2.0 } else { 1.0 };
    for _ in 0..64 {
        let next = 0.5 * (g + x / g);
        let diff = if next > g { next - g } else { g - next };
        if diff <= f64::EPSILON * next {
            return next;
        }
        g = next;
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn hist(values: &[u64]) -> (Layout, Vec<u64>) {
        let l = Layout::DEFAULT;
        let mut c = std::vec![0u64; l.len()];
        for &v in values {
            c[l.bucket_of(v)] += 1;
        }
        (l, c)
    }

    fn exact_nearest_rank(sorted: &[u64], q: Ppm) -> u64 {
        let n = sorted.len() as u128;
        let rank = (n * q.0 as u128).div_ceil(1_000_000).max(1) as usize;
        sorted[rank - 1]
    }

    #[test]
    fn spread_of_counts_without_statistics_does_not_panic() {
        // counts but no min/max yet (u64::MAX, 0): the midpoints stand
        let (l, c) = hist(&[5_500, 5_500, 70_000_000_000]);
        let s = spread(&l, &c, 5_500.0, u64::MAX, 0);
        assert_eq!(s.mode_ns, 5_000);
        assert!(s.variance.is_finite() && s.variance > 0.0, "{s:?}");
        assert!(s.mad.is_finite(), "{s:?}");
    }

    #[test]
    fn nearest_rank_is_the_ceiling_rank_of_the_counts() {
        // 10 samples: 4 in bucket 0, 5 in bucket 2, 1 in bucket 3
        let c = [4, 0, 5, 1];
        assert_eq!(nearest_rank(&c, Ppm(400_000)), Some(0), "rank 4 is the 4th");
        assert_eq!(nearest_rank(&c, Ppm(400_001)), Some(2), "rank 5 is the 5th");
        assert_eq!(nearest_rank(&c, Ppm::P90), Some(2));
        assert_eq!(nearest_rank(&c, Ppm(900_001)), Some(3));
        assert_eq!(nearest_rank(&c, Ppm(0)), Some(0), "rank at least 1");
        assert_eq!(nearest_rank(&c, Ppm(2_000_000)), Some(3), "q capped at 1");
        assert_eq!(nearest_rank(&[0, 0], Ppm::P50), None);
    }

    #[test]
    fn quantiles_within_bucket_error_of_exact() {
        // deterministic pseudo-random samples spanning linear and log ranges
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut v = Vec::new();
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = match x % 10 {
                0 => x % 5_000_000_000,
                1..=3 => x % 3_000_000,
                _ => x % 40_000,
            };
            v.push(ns);
        }
        let (l, c) = hist(&v);
        v.sort_unstable();
        let max = *v.last().unwrap();
        for (q, _) in Ppm::REPORTED.iter().chain([(Ppm(1_000_000), "max")].iter()) {
            let exact = exact_nearest_rank(&v, *q);
            let got = quantile(&l, &c, *q, max).unwrap();
            assert!(got >= exact, "{q:?}: {got} < exact {exact}");
            let b = l.bucket_of(exact);
            let width = l.upper_ns(b).unwrap_or(max) - l.lower_ns(b);
            assert!(
                got - exact <= width,
                "{q:?}: {got} vs {exact}, width {width}"
            );
        }
        assert_eq!(quantile(&l, &c, Ppm(1_000_000), max), Some(max));
    }

    #[test]
    fn quantile_of_empty_is_none_and_single_is_capped_by_max() {
        let (l, c) = hist(&[]);
        assert_eq!(quantile(&l, &c, Ppm::P99, 0), None);
        let (l, c) = hist(&[5_300]);
        assert_eq!(quantile(&l, &c, Ppm::P50, 5_300), Some(5_300));
        let (l, c) = hist(&[5_300, 7_100]);
        assert_eq!(quantile(&l, &c, Ppm::P50, 7_100), Some(6_000));
    }

    #[test]
    fn spread_of_constant_is_zero_and_mode_found() {
        let (l, c) = hist(&[10_500; 100]);
        let s = spread(&l, &c, 10_500.0, 10_500, 10_500);
        assert!(s.variance.abs() < 1e-9);
        assert_eq!(s.mode_ns, 10_000);
        let (l, c) = hist(&[1_000, 3_000, 3_000]);
        let s = spread(&l, &c, (1_500.0 + 3_500.0 * 2.0) / 3.0, 1_000, 3_000);
        assert_eq!(s.mode_ns, 3_000);
        assert!(s.mad > 0.0);
    }

    #[test]
    fn sqrt_matches_std() {
        for x in [0.0, 1e-6, 0.5, 2.0, 1e6, 1.234e15] {
            let r = sqrt(x);
            assert!((r - x.sqrt()).abs() <= 1e-9 * (1.0 + r), "{x}");
        }
    }
}
