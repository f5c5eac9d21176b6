//! [`Rational`]: an exact rational number that implements [`Scalar`].
//!
//! The orphan rule forbids implementing the core's [`Scalar`] for
//! [`rug::Rational`] here, hence the newtype. Its field is public: use
//! `x.0` for anything `rug` offers and this wrapper does not.

use std::fmt;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};
use std::str::FromStr;

use rug::Integer;
use spantree_core::{Scalar, Sign};

/// An exact rational number `p/q` (GMP, through [`rug::Rational`]), always
/// in lowest terms with `q > 0`.
///
/// Every finite `f64` converts exactly ([`Scalar::from_f64`]), so a result
/// computed in `f64` can be compared with the true value of the same inputs.
/// Arithmetic never rounds; each operation costs a GCD of the operands' size.
///
/// ```
/// use spantree_core::Scalar;
/// use spantree_exact::Rational;
///
/// let third: Rational = "1/3".parse()?;
/// let x = third.clone() + third.clone() + third;
/// assert_eq!(x, Rational::one());
/// // 0.1 is not 1/10 in binary: the exact value of the nearest f64.
/// assert_eq!(Rational::from_f64(0.1).to_string(), "3602879701896397/36028797018963968");
/// # Ok::<(), spantree_exact::ParseRationalError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rational(pub rug::Rational);

impl Rational {
    /// `numerator / denominator`, reduced to lowest terms.
    ///
    /// # Panics
    /// If `denominator` is zero.
    ///
    /// ```
    /// use spantree_exact::Rational;
    /// assert_eq!(Rational::new(6, -4).to_string(), "-3/2");
    /// ```
    pub fn new(numerator: impl Into<Integer>, denominator: impl Into<Integer>) -> Self {
        let (p, q) = (numerator.into(), denominator.into());
        assert!(q != 0, "Rational::new: zero denominator");
        Rational(rug::Rational::from((p, q)))
    }

    /// The numerator (carrying the sign).
    pub fn numer(&self) -> &Integer {
        self.0.numer()
    }

    /// The denominator (always positive).
    pub fn denom(&self) -> &Integer {
        self.0.denom()
    }

    /// The `f64` nearest to the value, ties to even; `±∞` beyond `f64::MAX`
    /// (after rounding), and correctly rounded subnormals. `O(size)`.
    ///
    /// (`rug::Rational::to_f64` truncates towards zero instead.)
    ///
    /// ```
    /// use spantree_exact::Rational;
    /// assert_eq!(Rational::new(1, 3).to_f64_nearest(), 1.0 / 3.0);
    /// assert_eq!(Rational::new(2, 3).to_f64_nearest(), 2.0 / 3.0);
    /// ```
    pub fn to_f64_nearest(&self) -> f64 {
        nearest_f64(self.numer(), self.denom())
    }

    /// The inner `rug` value.
    pub fn into_inner(self) -> rug::Rational {
        self.0
    }
}

/// `2^e` for `-1022 ≤ e ≤ 1023`, exactly.
fn pow2(e: i64) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `p/q` (with `q > 0`) correctly rounded to `f64`, ties to even.
///
/// A quotient `Q = ⌊|p| 2^k / q⌋` of 66–67 bits plus a sticky bit (whether
/// the division or the shift dropped anything) carries enough information to
/// round once, directly to the precision available at the result's exponent
/// (53 bits, fewer for subnormals), which avoids double rounding.
fn nearest_f64(p: &Integer, q: &Integer) -> f64 {
    if *p == 0 {
        return 0.0;
    }
    let negative = *p < 0;
    let bp = i64::from(p.significant_bits());
    let bq = i64::from(q.significant_bits());
    // |p|/q ∈ [2^(bp-bq-1), 2^(bp-bq+1)), so Q ∈ [2^65, 2^67).
    let k = 66 - (bp - bq);
    let mut num = Integer::from(p.abs_ref());
    let mut den = q.clone();
    if k >= 0 {
        num <<= k as u32;
    } else {
        den <<= (-k) as u32;
    }
    let (quot, rem) = num.div_rem(den);
    let sticky = rem != 0;
    let quot = quot
        .to_u128()
        .expect("quotient has at most 67 bits by construction");
    let len = 128 - i64::from(quot.leading_zeros());
    // x ∈ [2^e, 2^(e+1)).
    let e = len - 1 - k;
    let magnitude = if e > 1023 {
        f64::INFINITY
    } else {
        // Bits of precision available at exponent e.
        let precision = if e >= -1022 { 53 } else { e + 1075 };
        if precision < 0 {
            0.0
        } else if precision == 0 {
            // x ∈ [2^-1075, 2^-1074): the halfway point rounds to even (0).
            let exactly_half = !sticky && quot.is_power_of_two();
            if exactly_half {
                0.0
            } else {
                f64::from_bits(1)
            }
        } else {
            let drop = len - precision;
            let mut m = quot >> drop;
            let rest = quot & ((1u128 << drop) - 1);
            let half = 1u128 << (drop - 1);
            if rest > half || (rest == half && (sticky || m & 1 == 1)) {
                m += 1;
            }
            // Value m · 2^(drop - k), exactly representable (or overflowing).
            let exponent = drop - k;
            let m = m as f64; // m ≤ 2^53: exact
            if exponent >= -1022 {
                if exponent > 1023 {
                    f64::INFINITY
                } else {
                    m * pow2(exponent)
                }
            } else {
                // Two exact steps: m · 2^-1022 is normal, the final product
                // is representable by construction.
                m * pow2(-1022) * pow2(exponent + 1022)
            }
        }
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// `ln |n|` for a non-zero integer of any size, from its leading bits:
/// `n = f · 2^e` with `f ∈ [0.5, 1)`, so `ln |n| = ln f + e ln 2`.
fn ln_abs_integer(n: &Integer) -> (f64, i64) {
    let (f, e) = n.to_f64_exp();
    (f.abs().ln(), i64::from(e))
}

impl fmt::Display for Rational {
    /// `p/q`, or `p` when the denominator is `1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<rug::Rational> for Rational {
    fn from(x: rug::Rational) -> Self {
        Rational(x)
    }
}

impl From<Rational> for rug::Rational {
    fn from(x: Rational) -> Self {
        x.0
    }
}

impl From<Integer> for Rational {
    fn from(x: Integer) -> Self {
        Rational(rug::Rational::from(x))
    }
}

macro_rules! from_primitive {
    ($($t:ty),*) => {$(
        impl From<$t> for Rational {
            fn from(x: $t) -> Self {
                Rational(rug::Rational::from(x))
            }
        }
    )*};
}
from_primitive!(i32, i64, u32, u64, i128, u128);

/// The error of converting a non-finite `f64` to a [`Rational`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NotFiniteError(pub f64);

impl fmt::Display for NotFiniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} has no rational value", self.0)
    }
}

impl std::error::Error for NotFiniteError {}

impl TryFrom<f64> for Rational {
    type Error = NotFiniteError;

    /// The exact value of a finite `f64`.
    ///
    /// # Errors
    /// [`NotFiniteError`] for NaN and `±∞`.
    fn try_from(x: f64) -> Result<Self, NotFiniteError> {
        rug::Rational::from_f64(x)
            .map(Rational)
            .ok_or(NotFiniteError(x))
    }
}

macro_rules! binary_op {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident) => {
        impl $Op for Rational {
            type Output = Rational;
            fn $op(self, rhs: Rational) -> Rational {
                Rational(self.0.$op(rhs.0))
            }
        }
        impl<'a> $Op<&'a Rational> for Rational {
            type Output = Rational;
            fn $op(self, rhs: &'a Rational) -> Rational {
                Rational(self.0.$op(&rhs.0))
            }
        }
        impl<'a> $Op<&'a Rational> for &'a Rational {
            type Output = Rational;
            fn $op(self, rhs: &'a Rational) -> Rational {
                Rational(rug::Rational::from((&self.0).$op(&rhs.0)))
            }
        }
        impl $OpAssign for Rational {
            fn $op_assign(&mut self, rhs: Rational) {
                self.0.$op_assign(rhs.0);
            }
        }
        impl<'a> $OpAssign<&'a Rational> for Rational {
            fn $op_assign(&mut self, rhs: &'a Rational) {
                self.0.$op_assign(&rhs.0);
            }
        }
    };
}

binary_op!(Add, add, AddAssign, add_assign);
binary_op!(Sub, sub, SubAssign, sub_assign);
binary_op!(Mul, mul, MulAssign, mul_assign);
binary_op!(Div, div, DivAssign, div_assign);

impl Neg for Rational {
    type Output = Rational;
    fn neg(self) -> Rational {
        Rational(-self.0)
    }
}

impl Neg for &Rational {
    type Output = Rational;
    fn neg(self) -> Rational {
        Rational(rug::Rational::from(-&self.0))
    }
}

impl std::iter::Sum for Rational {
    fn sum<I: Iterator<Item = Rational>>(iter: I) -> Rational {
        iter.fold(Rational::zero(), |a, b| a + b)
    }
}

impl std::iter::Product for Rational {
    fn product<I: Iterator<Item = Rational>>(iter: I) -> Rational {
        iter.fold(Rational::one(), |a, b| a * b)
    }
}

impl Scalar for Rational {
    fn zero() -> Self {
        Rational(rug::Rational::new())
    }

    fn one() -> Self {
        Rational(rug::Rational::from(1))
    }

    /// The exact value of `x` (every finite `f64` is a dyadic rational).
    ///
    /// # Panics
    /// If `x` is NaN or infinite: the core validates its inputs before
    /// converting, so this is a programming error; use
    /// [`Rational::try_from`] for unchecked input.
    fn from_f64(x: f64) -> Self {
        match Rational::try_from(x) {
            Ok(r) => r,
            Err(e) => panic!("Rational::from_f64: {e}"),
        }
    }

    /// The nearest `f64`, ties to even; see [`Rational::to_f64_nearest`].
    fn to_f64(&self) -> f64 {
        self.to_f64_nearest()
    }

    fn is_zero(&self) -> bool {
        self.0.cmp0() == std::cmp::Ordering::Equal
    }

    fn sign(&self) -> Sign {
        match self.0.cmp0() {
            std::cmp::Ordering::Less => Sign::Negative,
            std::cmp::Ordering::Equal => Sign::Zero,
            std::cmp::Ordering::Greater => Sign::Positive,
        }
    }

    /// `ln |p/q|`, `-∞` for zero, never overflowing: when `|p/q|` is a
    /// normal `f64` it is `ln` of the nearest `f64` (error ≤ 1 ulp of the
    /// logarithm plus 2⁻⁵³ relative); otherwise `ln f_p − ln f_q + (e_p − e_q) ln 2`
    /// from `p = f_p 2^{e_p}`, `q = f_q 2^{e_q}`, `f ∈ [0.5, 1)`, absolute
    /// error about `|e_p − e_q| · 2⁻⁵³`.
    fn ln_abs(&self) -> f64 {
        if self.is_zero() {
            return f64::NEG_INFINITY;
        }
        let (lp, ep) = ln_abs_integer(self.numer());
        let (lq, eq) = ln_abs_integer(self.denom());
        let e = ep - eq;
        if (-1000..=1000).contains(&e) {
            // Normal range: the correctly rounded value is more accurate
            // near |x| = 1, where the difference of logs cancels.
            self.to_f64_nearest().abs().ln()
        } else {
            (lp - lq) + e as f64 * std::f64::consts::LN_2
        }
    }
}

/// Why a string is not a [`Rational`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseRationalError {
    /// The string is empty (or only a sign).
    Empty,
    /// An unexpected character at this byte offset.
    InvalidCharacter {
        /// Byte offset into the string.
        position: usize,
    },
    /// `p/0`.
    ZeroDenominator,
    /// A decimal exponent beyond `±`[`MAX_DECIMAL_EXPONENT`].
    ExponentOutOfRange,
}

/// The largest `|e|` accepted in decimal notation `…e±e`: `10^e` has
/// `3.3 e` bits, so this bounds the memory a parsed string can claim.
pub const MAX_DECIMAL_EXPONENT: i64 = 1_000_000;

impl fmt::Display for ParseRationalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseRationalError::Empty => write!(f, "empty number"),
            ParseRationalError::InvalidCharacter { position } => write!(
                f,
                "unexpected character at byte {position}; expected an integer, \
                 p/q, or a decimal like -1.25e-3"
            ),
            ParseRationalError::ZeroDenominator => write!(f, "zero denominator"),
            ParseRationalError::ExponentOutOfRange => {
                write!(f, "decimal exponent beyond ±{MAX_DECIMAL_EXPONENT}")
            }
        }
    }
}

impl std::error::Error for ParseRationalError {}

/// Reads `[0-9]+` from `s[start..]`; returns the digits' end.
fn digits_end(s: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
    }
    i
}

fn integer(digits: &str) -> Integer {
    if digits.is_empty() {
        Integer::new()
    } else {
        Integer::from_str_radix(digits, 10).expect("validated ASCII digits")
    }
}

impl FromStr for Rational {
    type Err = ParseRationalError;

    /// Parses, exactly, `[+-]p/q` (integers, `q ≠ 0`) or a decimal
    /// `[+-]digits[.digits][(e|E)[+-]digits]` such as `-2`, `0.25` or `1e-300`
    /// (the decimal value, not the nearest `f64`). No whitespace.
    ///
    /// # Errors
    /// A [`ParseRationalError`] saying what is wrong and where.
    ///
    /// ```
    /// use spantree_exact::{ParseRationalError, Rational};
    /// assert_eq!("0.25".parse::<Rational>()?, Rational::new(1, 4));
    /// assert_eq!("-6/4".parse::<Rational>()?, Rational::new(-3, 2));
    /// assert_eq!("1e-2".parse::<Rational>()?, Rational::new(1, 100));
    /// assert_eq!("1/0".parse::<Rational>(), Err(ParseRationalError::ZeroDenominator));
    /// # Ok::<(), ParseRationalError>(())
    /// ```
    fn from_str(src: &str) -> Result<Self, ParseRationalError> {
        let s = src.as_bytes();
        let bad = |position| Err(ParseRationalError::InvalidCharacter { position });
        let negative = s.first() == Some(&b'-');
        let start = usize::from(matches!(s.first(), Some(b'-' | b'+')));
        if s.len() == start {
            return Err(ParseRationalError::Empty);
        }
        let int_end = digits_end(s, start);
        let int_part = &src[start..int_end];

        // p/q
        if s.get(int_end) == Some(&b'/') {
            if int_part.is_empty() {
                return bad(int_end);
            }
            let den_end = digits_end(s, int_end + 1);
            if den_end == int_end + 1 {
                return bad(den_end);
            }
            if den_end != s.len() {
                return bad(den_end);
            }
            let den = integer(&src[int_end + 1..]);
            if den == 0 {
                return Err(ParseRationalError::ZeroDenominator);
            }
            let mut num = integer(int_part);
            if negative {
                num = -num;
            }
            return Ok(Rational(rug::Rational::from((num, den))));
        }

        // digits[.digits][e[+-]digits]
        let mut i = int_end;
        let mut frac_part = "";
        if s.get(i) == Some(&b'.') {
            let frac_end = digits_end(s, i + 1);
            frac_part = &src[i + 1..frac_end];
            i = frac_end;
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return bad(i);
        }
        let mut exponent: i64 = 0;
        if matches!(s.get(i), Some(b'e' | b'E')) {
            let sign_at = i + 1;
            let exp_negative = s.get(sign_at) == Some(&b'-');
            let exp_start = sign_at + usize::from(matches!(s.get(sign_at), Some(b'-' | b'+')));
            let exp_end = digits_end(s, exp_start);
            if exp_end == exp_start {
                return bad(exp_start);
            }
            // Leading zeros are harmless; a long exponent is out of range.
            let digits = src[exp_start..exp_end].trim_start_matches('0');
            exponent = if digits.len() > 12 {
                return Err(ParseRationalError::ExponentOutOfRange);
            } else {
                digits.parse::<i64>().unwrap_or(0)
            };
            if exp_negative {
                exponent = -exponent;
            }
            i = exp_end;
        }
        if i != s.len() {
            return bad(i);
        }
        exponent -= frac_part.len() as i64;
        if exponent.abs() > MAX_DECIMAL_EXPONENT {
            return Err(ParseRationalError::ExponentOutOfRange);
        }
        let mut mantissa = integer(int_part);
        if !frac_part.is_empty() {
            mantissa *= Integer::from(Integer::u_pow_u(10, frac_part.len() as u32));
            mantissa += integer(frac_part);
        }
        if negative {
            mantissa = -mantissa;
        }
        let scale = Integer::from(Integer::u_pow_u(10, exponent.unsigned_abs() as u32));
        let value = if exponent >= 0 {
            rug::Rational::from(mantissa * scale)
        } else {
            rug::Rational::from((mantissa, scale))
        };
        Ok(Rational(value))
    }
}
