//! Products of many `f64`s that would overflow or underflow on the way but
//! not at the end (determinants, products of singular values): the running
//! product is kept as a mantissa and a separate binary exponent.

/// `mant · 2^exp`, with `mant` in `[0.5, 1)` (or zero, or not finite).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scaled {
    mant: f64,
    exp: i64,
}

impl Scaled {
    /// The empty product.
    pub(crate) const ONE: Scaled = Scaled { mant: 0.5, exp: 1 };

    /// `self · x`; exact up to one rounding of the mantissa product.
    pub(crate) fn times(self, x: f64) -> Scaled {
        let (mx, ex) = frexp(x);
        let (m, e) = frexp(self.mant * mx);
        Scaled {
            mant: m,
            exp: self.exp + ex + e,
        }
    }

    /// The product of two scaled numbers.
    pub(crate) fn times_scaled(self, other: Scaled) -> Scaled {
        let (m, e) = frexp(self.mant * other.mant);
        Scaled {
            mant: m,
            exp: self.exp + other.exp + e,
        }
    }

    /// `-self`.
    pub(crate) fn negated(self) -> Scaled {
        Scaled {
            mant: -self.mant,
            exp: self.exp,
        }
    }

    /// The mantissa, in `[0.5, 1)` in absolute value (or zero / not finite).
    pub(crate) fn mantissa(self) -> f64 {
        self.mant
    }

    /// The binary exponent.
    pub(crate) fn exponent(self) -> i64 {
        self.exp
    }

    /// The nearest `f64`: `±∞` only if the product itself overflows, `0` only
    /// if it underflows.
    pub(crate) fn to_f64(self) -> f64 {
        scale2(self.mant, self.exp)
    }
}

/// `(m, e)` with `x = m · 2^e` and `|m|` in `[0.5, 1)`; `(x, 0)` for zero,
/// infinities and NaN.
pub(crate) fn frexp(x: f64) -> (f64, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    if biased == 0 {
        // Subnormal: make it normal first (exact).
        let (m, e) = frexp(x * pow2(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, biased - 1022)
}

/// `2^k` for `k` in `-1022..=1023`, exactly.
fn pow2(k: i64) -> f64 {
    debug_assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `x · 2^k` without intermediate overflow or underflow; exact unless the
/// result is subnormal, overflows or underflows.
pub(crate) fn scale2(mut x: f64, mut k: i64) -> f64 {
    while k > 1023 {
        x *= pow2(1023);
        k -= 1023;
        if !x.is_finite() {
            return x;
        }
    }
    while k < -1022 {
        // Stop shrinking while `x` is still large, so that the result rounds once.
        if x.abs() < 1.0 {
            break;
        }
        x *= pow2(-1022);
        k += 1022;
    }
    if k < -1022 {
        // |x| < 1 and 2^k is below the normal range: the result is subnormal
        // or zero; two steps keep every intermediate representable.
        let half = k / 2;
        return x * pow2(half.max(-1022)) * pow2((k - half).max(-1022));
    }
    x * pow2(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_round_trips() {
        for &x in &[
            1.0,
            -3.5,
            1e300,
            1e-300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
        ] {
            let (m, e) = frexp(x);
            assert!((0.5..1.0).contains(&m.abs()), "{x}: {m}");
            assert_eq!(scale2(m, e), x);
        }
    }

    #[test]
    fn products_that_overflow_midway() {
        // 1e300 · 1e300 · 1e-300 · 1e-300 = 1 (to rounding), although the
        // running product passes through 1e600.
        let p = [1e300, 1e300, 1e-300, 1e-300]
            .iter()
            .fold(Scaled::ONE, |p, &x| p.times(x));
        assert!((p.to_f64() - 1.0).abs() < 1e-15);
        assert_eq!(Scaled::ONE.to_f64(), 1.0);
        assert_eq!(scale2(1.0, 2000), f64::INFINITY);
        assert_eq!(scale2(1.0, -2000), 0.0);
        assert_eq!(scale2(0.5, -1073), 5e-324);
    }
}
