//! `{:.N}` of an `f64` without the float formatting machinery: the exact
//! value of the double, rounded to `N` decimals, ties to even, which is
//! what `core::fmt` prints. Integer arithmetic only, so a target that
//! prints a few decimals does not link the general float formatter
//! (about 11 kB of the static target binary,
//! `bench/results/opt-level.md`).

use core::fmt;

/// Decimals [`Fixed`] prints at most (`10^MAX_PLACES` times a double's
/// 53-bit mantissa stays inside a `u128`).
pub const MAX_PLACES: u8 = 9;

/// `value` with `places` decimals (at most [`MAX_PLACES`]), as
/// `format!("{:.places$}", value)` writes it, for every `f64`: the same
/// digits, `-` for negatives (and for `-0.0`), `NaN`, `inf` and `-inf`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fixed(pub f64, pub u8);

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fixed(x, places) = *self;
        let places = u32::from(places.min(MAX_PLACES));
        if x.is_nan() {
            return f.write_str("NaN");
        }
        if x.is_sign_negative() {
            f.write_str("-")?;
        }
        if x.is_infinite() {
            return f.write_str("inf");
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        // x = mantissa * 2^shift, exactly
        let (mantissa, shift) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), exp - 1075)
        };
        let scale = 10u128.pow(places);
        if shift >= 0 {
            return write_integer(f, mantissa, shift as u32, places);
        }
        let scaled = u128::from(mantissa) * scale;
        let k = shift.unsigned_abs();
        // round(scaled / 2^k), ties to even
        let n = if k >= 128 {
            0 // below 2^-54: rounds to 0 at any `places`
        } else {
            let q = scaled >> k;
            let r = scaled & ((1u128 << k) - 1);
            let half = 1u128 << (k - 1);
            if r > half || (r == half && q & 1 == 1) {
                q + 1
            } else {
                q
            }
        };
        write!(f, "{}", n / scale)?;
        if places > 0 {
            write!(f, ".{:0width$}", n % scale, width = places as usize)?;
        }
        Ok(())
    }
}

/// `mantissa * 2^shift`, a whole number, and `places` zeros after the
/// point.
fn write_integer(
    f: &mut fmt::Formatter<'_>,
    mantissa: u64,
    shift: u32,
    places: u32,
) -> fmt::Result {
    if shift <= 64 {
        write!(f, "{}", u128::from(mantissa) << shift)?;
    } else {
        // up to 2^1024: 309 decimal digits, least significant first
        let mut digits = [0u8; 309];
        let mut len = 0;
        let mut m = mantissa;
        while m > 0 {
            digits[len] = (m % 10) as u8;
            m /= 10;
            len += 1;
        }
        for _ in 0..shift {
            let mut carry = 0;
            for d in digits.iter_mut().take(len) {
                let v = *d * 2 + carry;
                *d = v % 10;
                carry = v / 10;
            }
            if carry > 0 {
                if let Some(d) = digits.get_mut(len) {
                    *d = carry;
                    len += 1;
                }
            }
        }
        for d in digits[..len].iter().rev() {
            write!(f, "{d}")?;
        }
    }
    if places > 0 {
        f.write_str(".")?;
        for _ in 0..places {
            f.write_str("0")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(x: f64) {
        for p in 0..=MAX_PLACES {
            let want = format!("{:.*}", usize::from(p), x);
            assert_eq!(format!("{}", Fixed(x, p)), want, "{x:e} at {p} places");
        }
    }

    #[test]
    fn ties_go_to_even_as_core_fmt_rounds() {
        for x in [
            0.25, 0.35, 0.125, 0.5, 1.5, 2.5, 6.25, 6.75, 0.05, 0.15, 0.0005, 1.0005,
        ] {
            same(x);
        }
        assert_eq!(Fixed(6.25, 1).to_string(), "6.2");
        assert_eq!(Fixed(6.75, 1).to_string(), "6.8");
    }

    #[test]
    fn edges_print_as_core_fmt_prints_them() {
        for x in [
            0.0,
            -0.0,
            -1.25,
            f64::MIN_POSITIVE,
            5e-324,
            f64::EPSILON,
            1e-10,
            0.999_999_999_9,
            9.999_5,
            (1u64 << 53) as f64,
            1.8e19,
            1e22,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            same(x);
        }
    }

    /// The two figures the target prints: a percentage of two counts,
    /// and a CPU time in ns as ms; and random doubles below 1e20 (the
    /// whole numbers above take the digit loop, which the edges test
    /// covers: it is slow under qemu-user).
    #[test]
    fn every_kind_of_value_prints_as_core_fmt_prints_it() {
        for spikes in 1u64..200 {
            for explained in 0..=spikes {
                let pct = explained as f64 * 100.0 / spikes as f64;
                assert_eq!(Fixed(pct, 1).to_string(), format!("{pct:.1}"));
            }
        }
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for i in 0..8_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let ns = s % 100_000_000_000;
            let ms = ns as f64 / 1e6;
            assert_eq!(Fixed(ms, 3).to_string(), format!("{ms:.3}"));
            let x = f64::from_bits(s);
            if i % 4 == 0 && (x.is_nan() || x.abs() < 1e20) {
                same(x);
            }
        }
    }
}
