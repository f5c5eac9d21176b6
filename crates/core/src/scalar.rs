//! The number types the algorithms run on.
//!
//! [`Scalar`] asks only for field operations plus the few conversions every
//! number type can do honestly, so that exact rationals, complex numbers (for
//! complex-step differentiation) and floats all qualify.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// The sign of a scalar (of its real part, for complex numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sign {
    /// Strictly below zero.
    Negative,
    /// Exactly zero.
    Zero,
    /// Strictly above zero.
    Positive,
}

impl Sign {
    /// The sign of an `f64`; `None` for NaN.
    pub fn of_f64(x: f64) -> Option<Sign> {
        if x > 0.0 {
            Some(Sign::Positive)
        } else if x < 0.0 {
            Some(Sign::Negative)
        } else if x == 0.0 {
            Some(Sign::Zero)
        } else {
            None
        }
    }

    /// The sign of a product.
    pub fn times(self, other: Sign) -> Sign {
        match (self, other) {
            (Sign::Zero, _) | (_, Sign::Zero) => Sign::Zero,
            (a, b) if a == b => Sign::Positive,
            _ => Sign::Negative,
        }
    }
}

/// A field element: what a backend computes with.
///
/// The `f64` and complex implementations are `#[inline]`: generic code
/// instantiated in another crate (an engine, a bench) could not inline them
/// otherwise without LTO, and paid a call per element (`is_zero`, `to_f64`).
///
/// Arithmetic is by value and by reference-assignment, which every candidate
/// type (`f64`, `num_complex::Complex64`, `rug::Rational`, `rug::Float`)
/// supports without allocation tricks.
pub trait Scalar:
    Clone
    + Debug
    + PartialEq
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + for<'a> AddAssign<&'a Self>
    + for<'a> SubAssign<&'a Self>
    + for<'a> MulAssign<&'a Self>
    + for<'a> DivAssign<&'a Self>
{
    /// The additive identity.
    fn zero() -> Self;
    /// The multiplicative identity.
    fn one() -> Self;
    /// Converts a finite `f64`; exact wherever the type can hold it (rationals do).
    fn from_f64(x: f64) -> Self;
    /// The nearest `f64` (of the real part, for complex numbers); lossy.
    fn to_f64(&self) -> f64;
    /// Whether the value is exactly zero.
    fn is_zero(&self) -> bool;
    /// The sign (of the real part, for complex numbers).
    fn sign(&self) -> Sign;
    /// `ln |x|` as an `f64`, `-∞` for zero; never overflows, even where
    /// [`Scalar::to_f64`] would (huge rationals).
    fn ln_abs(&self) -> f64;
    /// Whether the value is finite; only floating-point types can fail this.
    fn is_finite(&self) -> bool {
        true
    }
}

impl Scalar for f64 {
    #[inline]
    fn zero() -> Self {
        0.0
    }
    #[inline]
    fn one() -> Self {
        1.0
    }
    #[inline]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline]
    fn to_f64(&self) -> f64 {
        *self
    }
    #[inline]
    fn is_zero(&self) -> bool {
        *self == 0.0
    }
    #[inline]
    fn sign(&self) -> Sign {
        Sign::of_f64(*self).unwrap_or(Sign::Zero)
    }
    #[inline]
    fn ln_abs(&self) -> f64 {
        self.abs().ln()
    }
    #[inline]
    fn is_finite(&self) -> bool {
        f64::is_finite(*self)
    }
}

/// A scalar that may compute the weight `e^θ` of a score at its own
/// precision: the ability high-precision floats have and `f64` lacks. The
/// default, `None`, makes the core use `from_f64(θ.exp())`.
pub trait FromScore: Scalar {
    /// `e^θ` of a finite score rounded once to the type's precision, or
    /// `None` when the type has no exponential of its own (or `e^θ`
    /// overflows it).
    fn from_score(score: f64) -> Option<Self> {
        let _ = score;
        None
    }

    /// Whether the weights of unlabeled scores may come from the vectorised
    /// [`exp_differences`](crate::linalg::exp_differences) (a few ulps from
    /// `f64::exp`, several times faster) rather than one `f64::exp` per arc.
    /// `true` for `f64` alone: exact rationals keep the very weights that
    /// `f64::exp` gives (what the brute-force oracle forms), high-precision
    /// floats their own exponential.
    const VECTORISED_EXP: bool = false;
}

impl FromScore for f64 {
    const VECTORISED_EXP: bool = true;
}

impl FromScore for num_complex::Complex64 {}

/// A scalar with a natural logarithm and an exponential: what entropy-type
/// quantities need. `f64`, complex and high-precision floats have it; exact
/// rationals do not (logarithms are not rational).
pub trait Transcendental: Scalar {
    /// The natural logarithm (principal branch for complex numbers).
    fn ln(&self) -> Self;
    /// The exponential.
    fn exp(&self) -> Self;
}

impl Transcendental for f64 {
    #[inline]
    fn ln(&self) -> Self {
        f64::ln(*self)
    }
    #[inline]
    fn exp(&self) -> Self {
        f64::exp(*self)
    }
}

/// `ln(e^a + e^b + …)` of `f64`s without overflow; `-∞` for an empty or all `-∞` input.
pub fn log_sum_exp(values: impl IntoIterator<Item = f64> + Clone) -> f64 {
    let max = values.clone().into_iter().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY || !max.is_finite() {
        return max;
    }
    max + values
        .into_iter()
        .map(|v| (v - max).exp())
        .sum::<f64>()
        .ln()
}

/// Complex numbers, for complex-step differentiation
/// `f'(x) ≈ Im f(x + ih) / h` (exact to first order for analytic `f`, with no
/// cancellation, so `h = 1e-30` is fine). Signs and `f64` conversion read the
/// real part.
impl Scalar for num_complex::Complex64 {
    #[inline]
    fn zero() -> Self {
        num_complex::Complex64::new(0.0, 0.0)
    }
    #[inline]
    fn one() -> Self {
        num_complex::Complex64::new(1.0, 0.0)
    }
    #[inline]
    fn from_f64(x: f64) -> Self {
        num_complex::Complex64::new(x, 0.0)
    }
    #[inline]
    fn to_f64(&self) -> f64 {
        self.re
    }
    #[inline]
    fn is_zero(&self) -> bool {
        self.re == 0.0 && self.im == 0.0
    }
    #[inline]
    fn sign(&self) -> Sign {
        Sign::of_f64(self.re).unwrap_or(Sign::Zero)
    }
    #[inline]
    fn ln_abs(&self) -> f64 {
        // hypot avoids overflow of re² + im².
        self.re.hypot(self.im).ln()
    }
    #[inline]
    fn is_finite(&self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }
}

impl Transcendental for num_complex::Complex64 {
    #[inline]
    fn ln(&self) -> Self {
        num_complex::Complex64::ln(*self)
    }
    #[inline]
    fn exp(&self) -> Self {
        num_complex::Complex64::exp(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_sum_exp_survives_huge_scores() {
        // ln(2 e^{1e4}) = 1e4 + ln 2: the identity, no overflow.
        let v = log_sum_exp([1e4, 1e4]);
        assert_eq!(v, 1e4 + std::f64::consts::LN_2);
        assert_eq!(log_sum_exp([f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(std::iter::empty::<f64>()), f64::NEG_INFINITY);
    }

    #[test]
    fn sign_of_products() {
        assert_eq!(Sign::Negative.times(Sign::Negative), Sign::Positive);
        assert_eq!(Sign::Negative.times(Sign::Positive), Sign::Negative);
        assert_eq!(Sign::Zero.times(Sign::Negative), Sign::Zero);
        assert_eq!(Sign::of_f64(f64::NAN), None);
    }
}
