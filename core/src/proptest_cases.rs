//! How many cases each property test runs: its full count natively, a
//! share of it under emulation.
//!
//! CI's `arm-user` stage runs these tests for aarch64 and armv7 under
//! qemu-user, where a case costs ten to thirty times what it costs
//! natively, and sets `LATSCOPE_PROPTEST_DIVISOR` there. What those runs
//! are for is the code's behaviour on 32-bit and on the other
//! architecture (its widths, alignment and atomics), which a share of the
//! cases shows as well as all of them; the full counts run natively in
//! the `tests` stage.

use proptest::test_runner::Config;

/// The fewest cases a property runs, whatever the divisor.
const FLOOR: u32 = 16;

/// A proptest configuration of `native` cases, divided by
/// `LATSCOPE_PROPTEST_DIVISOR` where that is set (to a whole number
/// above 1), but never below [`FLOOR`].
pub fn config(native: u32) -> Config {
    Config::with_cases(cases(
        native,
        std::env::var("LATSCOPE_PROPTEST_DIVISOR").ok(),
    ))
}

fn cases(native: u32, divisor: Option<String>) -> u32 {
    match divisor.and_then(|d| d.trim().parse::<u32>().ok()) {
        Some(d) if d > 1 => (native / d).max(FLOOR.min(native)),
        _ => native,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn a_divisor_shares_the_cases_out_down_to_a_floor() {
        assert_eq!(cases(2048, None), 2048);
        assert_eq!(cases(2048, Some("8".to_string())), 256);
        assert_eq!(cases(256, Some("64".to_string())), FLOOR);
        assert_eq!(cases(8, Some("4".to_string())), 8);
        // nonsense leaves the full count
        for bad in ["0", "1", "-3", "eight", ""] {
            assert_eq!(cases(512, Some(bad.to_string())), 512, "{bad:?}");
        }
    }
}
