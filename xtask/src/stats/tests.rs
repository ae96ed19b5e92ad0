use super::*;

/// C(n, k) exactly, from Pascal's triangle.
fn binomial(n: usize, k: usize) -> u128 {
    let mut row = vec![1u128];
    for _ in 0..n {
        let mut next = vec![1u128; row.len() + 1];
        for i in 1..row.len() {
            next[i] = row[i - 1] + row[i];
        }
        row = next;
    }
    row[k]
}

#[test]
fn median_of_odd_and_even_counts() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[7.0]), Some(7.0));
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[f64::NAN, 1.0, 5.0]), Some(3.0), "NaN left out");
    assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
    assert_eq!(mean(&[]), None);
}

#[test]
fn sign_test_textbook_cases() {
    // 10 pairs, 1 below and 9 above: 2 (C(10,0) + C(10,1)) / 2^10
    assert_eq!(sign_test(1, 9), 2.0 * 11.0 / 1024.0);
    assert_eq!(sign_test(9, 1), sign_test(1, 9), "two-sided");
    // 12 pairs, 2 below: 2 (1 + 12 + 66) / 4096 = 0.0386
    assert!((sign_test(2, 10) - 158.0 / 4096.0).abs() < 1e-15);
    // 12 of 12 above: 2 / 4096
    assert!((sign_test(0, 12) - 2.0 / 4096.0).abs() < 1e-15);
    // balanced: no evidence
    assert_eq!(sign_test(5, 5), 1.0);
    assert_eq!(sign_test(0, 0), 1.0);
    // 5 of 5 one way is not below 0.05: 2 / 32
    assert_eq!(sign_test(0, 5), 0.0625);
}

#[test]
fn binomial_cdf_is_the_exact_sum_of_counts() {
    for n in 1..=100usize {
        let total = 2f64.powi(n as i32);
        let mut exact = 0u128;
        for k in 0..=n {
            exact += binomial(n, k);
            let want = exact as f64 / total;
            let got = binomial_half_cdf(k as u64, n as u64);
            assert!(
                (got - want).abs() <= 1e-12 * want.max(1e-300) + 1e-15,
                "P(X <= {k}), n = {n}: {got} against exactly {want}"
            );
        }
    }
}

#[test]
fn bootstrap_of_a_constant_is_that_constant() {
    assert_eq!(
        bootstrap_median(&[1.25; 9], RESAMPLES, SEED),
        Some((1.25, 1.25))
    );
    assert_eq!(bootstrap_median(&[], RESAMPLES, SEED), None);
}

#[test]
fn bootstrap_is_reproducible_and_seeded() {
    let v = [
        0.91, 1.02, 0.97, 1.10, 0.88, 1.05, 0.99, 0.95, 1.01, 0.93, 1.07, 0.96,
    ];
    let a = bootstrap_median(&v, RESAMPLES, SEED);
    assert_eq!(
        a,
        bootstrap_median(&v, RESAMPLES, SEED),
        "same seed, same interval"
    );
    let (lo, hi) = a.expect("an interval");
    let m = median(&v).expect("a median");
    assert!(lo <= m && m <= hi, "[{lo}, {hi}] holds the median {m}");
    assert!(
        v.contains(&lo) || lo < hi,
        "a percentile of resampled medians"
    );
    assert!(lo >= 0.88 && hi <= 1.10, "within the sample's range");
}

/// Seeded simulations: the interval of the median of 25 draws from a
/// known distribution holds the true median about 95 % of the time. The
/// percentile bootstrap of a median from 25 values covers a little more
/// or less than its nominal level; 600 simulations give a binomial
/// standard error of 0.9 %, so [0.90, 0.99] is a band of about 5 of them.
#[test]
fn bootstrap_interval_covers_the_true_median_at_about_95_percent() {
    let mut rng = Rng::new(0x5EED);
    let sims = 600;
    let mut covered = 0;
    for s in 0..sims {
        // exponential with rate 1: the true median is ln 2
        let v: Vec<f64> = (0..25).map(|_| -(1.0 - rng.unit()).ln()).collect();
        let (lo, hi) = bootstrap_median(&v, 1000, s).expect("an interval");
        if lo <= std::f64::consts::LN_2 && std::f64::consts::LN_2 <= hi {
            covered += 1;
        }
    }
    let rate = covered as f64 / sims as f64;
    assert!((0.90..=0.99).contains(&rate), "coverage {rate}");
}

#[test]
fn rng_below_is_uniform() {
    let mut rng = Rng::new(1);
    let mut counts = [0u32; 10];
    let n = 100_000;
    for _ in 0..n {
        counts[rng.below(10)] += 1;
    }
    // chi-square with 9 degrees of freedom: above 27.9 once in 1000
    let e = n as f64 / 10.0;
    let chi2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    assert!(chi2 < 27.9, "chi-square {chi2}: {counts:?}");
}

#[test]
fn pair_stats_leave_out_incomplete_pairs_and_count_sides() {
    let pairs = [
        (Some(1.0), Some(2.0)),
        (Some(3.0), Some(2.0)),
        (None, Some(2.0)),
        (Some(1.0), Some(0.0)),
        (Some(2.0), Some(2.0)),
        (Some(1.0), Some(4.0)),
    ];
    let s = PairStats::of(&pairs).expect("stats");
    assert_eq!(s.ratios, vec![0.5, 1.5, 1.0, 0.25]);
    assert_eq!(
        (s.below, s.above, s.n),
        (2, 1, 4),
        "the tie left out of the sides"
    );
    assert_eq!(s.median, 0.75);
    assert_eq!(s.p, sign_test(2, 1));
    assert_eq!(PairStats::of(&[(None, Some(1.0))]), None);
}

#[test]
fn claims_only_when_the_interval_excludes_one() {
    assert_eq!(Claim::of(0.8, 0.95), Claim::Lower);
    assert_eq!(Claim::of(1.01, 1.2), Claim::Higher);
    assert_eq!(Claim::of(0.9, 1.0), Claim::None);
    assert_eq!(Claim::of(1.0, 1.3), Claim::None);
    let lower = PairStats::of(&[(Some(1.0), Some(2.0)); 12]).expect("stats");
    assert_eq!(lower.claim(), Claim::Lower);
}

#[test]
fn g3_prints_as_c_printf_does() {
    // from `printf '%.3g'`
    for (x, want) in [
        (0.021484375, "0.0215"),
        (1.0, "1"),
        (0.00048828125, "0.000488"),
        (0.0000488, "4.88e-05"),
        (0.123456, "0.123"),
        (0.5, "0.5"),
        (0.0385742, "0.0386"),
        (0.00195312, "0.00195"),
        (0.99999, "1"),
    ] {
        assert_eq!(g3(x), want, "{x}");
    }
}

#[test]
fn g6_and_awk_numbers_print_as_awk_does() {
    // from `awk 'BEGIN { print X }'`
    for (x, want) in [
        (2.6293, "2.6293"),
        (7848.0, "7848"),
        (0.1 + 0.2, "0.3"),
        (1234567.5, "1.23457e+06"),
        (18.545, "18.545"),
        (-0.5, "-0.5"),
        (3.0, "3"),
    ] {
        assert_eq!(awk_number(x), want, "{x}");
    }
    assert_eq!(g(999.9996, 6), "1000");
}

#[test]
fn binomial_cdf_above_the_exact_range_agrees_with_a_normal_tail() {
    // n = 400: P(X <= 180), z = (180.5 - 200) / 10 = -1.95; Phi(-1.95) = 0.02559
    let p = binomial_half_cdf(180, 400);
    assert!((p - 0.02559).abs() < 0.0015, "{p}");
    // symmetric: P(X <= 199) + P(X <= 200) = 1 + P(X = 200)
    let s = binomial_half_cdf(199, 400) + binomial_half_cdf(200, 400);
    assert!(s > 1.0 && s < 1.05, "{s}");
}
