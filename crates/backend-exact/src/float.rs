//! [`BigFloat`] and [`HighPrecision`]: binary floating point with a
//! selectable precision (MPFR, through [`rug::Float`]), for a reference value
//! of quantities with logarithms, which no rational backend can hold.

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use rug::{Assign, Float};
use spantree_core::linalg::PartialPivLu;
use spantree_core::{
    Dense, Engine, Factorization, FromScore, Graph, Matrix, Numerical, Prepared, Result, Rooting,
    Scalar, Sign, Transcendental,
};

use crate::Rational;

/// A binary floating-point number with `BITS` bits of significand (MPFR,
/// through [`rug::Float`]); every operation is correctly rounded to `BITS`
/// bits (relative error `≤ 2^−BITS`), and the exponent range (about
/// `±2^30` binary orders, `10^±323 228 496`) keeps `e^θ` of any `f64` score
/// up to `|θ| ≈ 7·10⁸` finite and non-zero.
///
/// `BITS` must be at least `53`, so that every `f64` converts exactly
/// (checked at compile time). Every value this type produces has `BITS`
/// bits; the field is public for anything `rug` offers and this wrapper
/// does not, and arithmetic restores `BITS` bits on a value built with
/// another precision. Each operation costs `O(M(BITS))` (a few hundred
/// nanoseconds at 256 bits) and one allocation.
///
/// ```
/// use spantree_core::{Scalar, Transcendental};
/// use spantree_exact::BigFloat;
///
/// type F = BigFloat<256>;
/// let third = F::one() / F::from_f64(3.0);
/// // 1/3 to 256 bits, not to 53: three times it is 1 to ~1e-77.
/// let error = (third.clone() * F::from_f64(3.0) - F::one()).abs();
/// assert!(error < F::from_f64(1e-76));
/// assert_eq!(third.to_f64(), 1.0 / 3.0);
/// // ln and exp at 256 bits: e^{ln 2} = 2 to the last few bits.
/// let two = F::from_f64(2.0).ln().exp();
/// assert!((two - F::from_f64(2.0)).abs() < F::from_f64(1e-75));
/// ```
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub struct BigFloat<const BITS: u32>(pub Float);

impl<const BITS: u32> BigFloat<BITS> {
    /// `BITS`, validated once per instantiation.
    const PREC: u32 = {
        assert!(
            BITS >= 53,
            "BigFloat<BITS> needs BITS ≥ 53 so that every f64 converts exactly"
        );
        assert!(BITS <= rug::float::prec_max(), "BITS beyond MPFR's maximum");
        BITS
    };

    /// `val` rounded to `BITS` bits (to nearest): anything [`rug::Float`]
    /// can be assigned from (integers, `f64`, `&rug::Rational`, `&rug::Integer`,
    /// a `rug` incomplete computation, …). `O(size of val)`.
    ///
    /// ```
    /// use spantree_core::Scalar;
    /// use spantree_exact::{rug, BigFloat};
    /// let x = BigFloat::<128>::with_val(&rug::Rational::from((1, 3)));
    /// assert_eq!(x.0.prec(), 128);
    /// assert_eq!(x.to_f64(), 1.0 / 3.0);
    /// // 128 bits are 38.5 decimal digits.
    /// let text = x.to_string();
    /// assert!(text.starts_with("3.33333333333333333333333333333333333") && text.ends_with("e-1"));
    /// ```
    pub fn with_val<T>(val: T) -> Self
    where
        Float: Assign<T>,
    {
        BigFloat(Float::with_val(Self::PREC, val))
    }

    /// The precision `BITS` in bits.
    ///
    /// ```
    /// assert_eq!(spantree_exact::BigFloat::<256>::precision(), 256);
    /// ```
    pub const fn precision() -> u32 {
        Self::PREC
    }

    /// `|x|`, exact.
    ///
    /// ```
    /// use spantree_core::Scalar;
    /// use spantree_exact::BigFloat;
    /// assert_eq!(BigFloat::<64>::from_f64(-2.5).abs(), BigFloat::from_f64(2.5));
    /// ```
    pub fn abs(&self) -> Self {
        Self::with_val(self.0.abs_ref())
    }

    /// The inner `rug` value.
    pub fn into_inner(self) -> Float {
        self.0
    }

    /// The value with exactly `BITS` bits (a no-op for values this type made).
    fn normalized(mut x: Float) -> Float {
        if x.prec() != Self::PREC {
            x.set_prec(Self::PREC);
        }
        x
    }
}

impl<const BITS: u32> fmt::Display for BigFloat<BITS> {
    /// Decimal, `rug`'s format: as many significant digits as `BITS` bits
    /// need (`3.33…3e-1` for `1/3`), an exponent where one is needed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl<const BITS: u32> From<&Rational> for BigFloat<BITS> {
    /// The rational rounded to nearest at `BITS` bits (one rounding).
    fn from(x: &Rational) -> Self {
        Self::with_val(&x.0)
    }
}

impl<const BITS: u32> From<Float> for BigFloat<BITS> {
    /// The value rounded to `BITS` bits (exact when it has at most `BITS`).
    fn from(x: Float) -> Self {
        BigFloat(Self::normalized(x))
    }
}

impl<const BITS: u32> From<BigFloat<BITS>> for Float {
    fn from(x: BigFloat<BITS>) -> Self {
        x.0
    }
}

macro_rules! binary_op {
    ($Op:ident, $op:ident, $OpAssign:ident, $op_assign:ident) => {
        impl<const BITS: u32> $Op for BigFloat<BITS> {
            type Output = BigFloat<BITS>;
            fn $op(self, rhs: BigFloat<BITS>) -> BigFloat<BITS> {
                // The result takes the left operand's precision: BITS.
                BigFloat(Self::normalized(self.0).$op(&rhs.0))
            }
        }
        impl<'a, const BITS: u32> $Op<&'a BigFloat<BITS>> for BigFloat<BITS> {
            type Output = BigFloat<BITS>;
            fn $op(self, rhs: &'a BigFloat<BITS>) -> BigFloat<BITS> {
                BigFloat(Self::normalized(self.0).$op(&rhs.0))
            }
        }
        impl<'a, const BITS: u32> $Op<&'a BigFloat<BITS>> for &'a BigFloat<BITS> {
            type Output = BigFloat<BITS>;
            fn $op(self, rhs: &'a BigFloat<BITS>) -> BigFloat<BITS> {
                BigFloat::with_val((&self.0).$op(&rhs.0))
            }
        }
        impl<const BITS: u32> $OpAssign for BigFloat<BITS> {
            fn $op_assign(&mut self, rhs: BigFloat<BITS>) {
                self.$op_assign(&rhs);
            }
        }
        impl<'a, const BITS: u32> $OpAssign<&'a BigFloat<BITS>> for BigFloat<BITS> {
            fn $op_assign(&mut self, rhs: &'a BigFloat<BITS>) {
                if self.0.prec() != Self::PREC {
                    self.0.set_prec(Self::PREC);
                }
                self.0.$op_assign(&rhs.0);
            }
        }
    };
}

binary_op!(Add, add, AddAssign, add_assign);
binary_op!(Sub, sub, SubAssign, sub_assign);
binary_op!(Mul, mul, MulAssign, mul_assign);
binary_op!(Div, div, DivAssign, div_assign);

impl<const BITS: u32> Neg for BigFloat<BITS> {
    type Output = BigFloat<BITS>;
    fn neg(self) -> BigFloat<BITS> {
        BigFloat(-Self::normalized(self.0))
    }
}

impl<const BITS: u32> Neg for &BigFloat<BITS> {
    type Output = BigFloat<BITS>;
    fn neg(self) -> BigFloat<BITS> {
        BigFloat::with_val(-&self.0)
    }
}

impl<const BITS: u32> std::iter::Sum for BigFloat<BITS> {
    /// Left to right, each addition rounded to `BITS` bits.
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::zero(), |a, b| a + b)
    }
}

impl<const BITS: u32> std::iter::Product for BigFloat<BITS> {
    /// Left to right, each multiplication rounded to `BITS` bits.
    fn product<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::one(), |a, b| a * b)
    }
}

impl<const BITS: u32> Scalar for BigFloat<BITS> {
    fn zero() -> Self {
        BigFloat(Float::new(Self::PREC))
    }

    fn one() -> Self {
        Self::with_val(1)
    }

    /// The exact value of `x` (`BITS ≥ 53`); NaN and `±∞` carry over.
    fn from_f64(x: f64) -> Self {
        Self::with_val(x)
    }

    /// The nearest `f64` (ties to even), `±∞` beyond `f64::MAX`, correctly
    /// rounded subnormals.
    fn to_f64(&self) -> f64 {
        self.0.to_f64()
    }

    fn is_zero(&self) -> bool {
        self.0.is_zero()
    }

    /// The sign; [`Sign::Zero`] for NaN (as for `f64`).
    fn sign(&self) -> Sign {
        match self.0.cmp0() {
            Some(Ordering::Less) => Sign::Negative,
            Some(Ordering::Greater) => Sign::Positive,
            Some(Ordering::Equal) | None => Sign::Zero,
        }
    }

    /// `ln |x|` correctly rounded to 53 bits from the full-precision value:
    /// finite for every finite non-zero `x` (the exponent range keeps
    /// `|ln |x|| < 10⁹`); `-∞` for zero, `+∞` for `±∞`, NaN for NaN.
    fn ln_abs(&self) -> f64 {
        if self.0.is_zero() {
            return f64::NEG_INFINITY;
        }
        Float::with_val(53, self.0.as_abs().ln_ref()).to_f64()
    }

    fn is_finite(&self) -> bool {
        self.0.is_finite()
    }
}

impl<const BITS: u32> Transcendental for BigFloat<BITS> {
    /// `ln x` correctly rounded to `BITS` bits (NaN below zero, `-∞` at zero).
    fn ln(&self) -> Self {
        Self::with_val(self.0.ln_ref())
    }

    /// `e^x` correctly rounded to `BITS` bits.
    fn exp(&self) -> Self {
        Self::with_val(self.0.exp_ref())
    }
}

/// The high-precision float backend: [`BigFloat<BITS>`] scalars and a
/// [`PartialPivLu`] factorisation, name `"float<BITS>"` (`"float"` for
/// precisions other than 64, 128, 256, 512, 1024).
///
/// Its purpose is a reference value, accurate far beyond `f64`, for the
/// quantities the exact backend cannot hold because they take logarithms
/// (`ln Z`, Shannon, cross- and Rényi entropies, KL divergence); see
/// `spantree_core`'s `Model::log_partition_scalar`, `Model::entropy`, … With
/// `BITS = 256` a well-conditioned Laplacian gives ~70 correct digits.
///
/// * Weights are taken as given ([`Prepared::as_given`]): MPFR's exponent range cannot overflow for any score an `f64`
///   graph holds up to `|θ| ≈ 7·10⁸`, and the `f64` inputs stay exact.
/// * Scores become weights through [`FromScore::from_score`],
///   `e^θ` rounded once to `BITS` bits, not through `f64`'s `exp`.
/// * Errors: those of `BITS`-bit partial-pivoting LU (see
///   [`PartialPivLu`]), relative `≈ n κ(L) 2^−BITS`; `Z = 0` is still
///   decided combinatorially by the core.
///
/// Cost: `O(n³)` operations at `BITS` bits (measured in the repository's
/// `docs/report/engines.md`).
///
/// ```
/// use spantree_core::{Graph, Model, Rooting, Scalar, Transcendental};
/// use spantree_exact::{BigFloat, HighPrecision};
///
/// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
/// let model = Model::new(HighPrecision::<256>, &g, Rooting::Multi)?;
/// // Trees of weights 2, 3, 8: Z = 13, H = −Σ p ln p.
/// type F = BigFloat<256>;
/// let z = F::from_f64(13.0);
/// let h: F = [2.0, 3.0, 8.0]
///     .iter()
///     .map(|&w| {
///         let p = F::from_f64(w) / z.clone();
///         -(p.clone() * p.ln())
///     })
///     .sum();
/// let error = (model.entropy()? - h).abs();
/// assert!(error < F::from_f64(1e-70));
/// assert_eq!(model.partition()?, z);
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HighPrecision<const BITS: u32>;

impl<const BITS: u32> Engine for HighPrecision<BITS> {
    type Scalar = BigFloat<BITS>;
    type Lu = PartialPivLu<BigFloat<BITS>>;
    type Factors = Dense<CheckedLu<BITS>>;

    fn name(&self) -> &'static str {
        match BITS {
            64 => "float<64>",
            128 => "float<128>",
            256 => "float<256>",
            512 => "float<512>",
            1024 => "float<1024>",
            _ => "float",
        }
    }

    /// The weights as given ([`Prepared::as_given`]), scores through
    /// [`FromScore::from_score`] at `BITS` bits.
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> BigFloat<BITS>,
    ) -> Result<Prepared<BigFloat<BITS>>> {
        Prepared::as_given(graph, convert)
    }

    fn factorize(
        &self,
        weights: Matrix<BigFloat<BITS>>,
        rooting: Rooting,
    ) -> Dense<CheckedLu<BITS>> {
        Dense::new(weights, rooting, CheckedLu::new)
    }

    /// Factorises `matrix` by [`PartialPivLu`] at `BITS` bits, `O(n³)`.
    ///
    /// # Panics
    /// If `matrix` is not square (a programming error).
    fn lu(&self, matrix: Matrix<BigFloat<BITS>>) -> PartialPivLu<BigFloat<BITS>> {
        PartialPivLu::new(matrix)
    }
}

impl<const BITS: u32> FromScore for BigFloat<BITS> {
    /// `e^θ` correctly rounded to `BITS` bits; `None` only when it
    /// overflows MPFR's exponent range (`θ > 7·10⁸`), so that the core
    /// reports [`spantree_core::Error::Overflow`].
    fn from_score(score: f64) -> Option<Self> {
        let w = BigFloat::<BITS>::from_f64(score).exp();
        w.is_finite().then_some(w)
    }
}

/// [`PartialPivLu`] at `BITS` bits with an a-posteriori estimate of its own
/// error, so that [`HighPrecision`] refuses (`Numerical::Inaccurate`) what
/// its precision cannot hold instead of answering wrongly: weights spanning
/// more than `BITS` bits inside one Laplacian column (a root weight `1e-300`
/// next to arcs `1e300` is lost on a multi-root diagonal at 128 bits as at
/// 53).
///
/// The estimate is that of the `f64` LU of `spantree-faer`, with this
/// type's unit roundoff `2^−BITS` for `ε`: `2^−BITS Σ_k c_k / |u_kk|`,
/// `c_k = Σ_i |A[i][k]|` the column of the pivot (row pivoting keeps pivot
/// `k` in column `k`; the rounding errors of its elimination are
/// `γ_k (|L̂||Û|)_kk`, a few `2^−BITS c_k` on the column-diagonally dominant
/// Laplacians; Higham, *Accuracy and Stability*, Thm 9.3). A pivot formed
/// by cancellation, far below its column, makes it large. `O(n²)`.
///
/// ```
/// use spantree_core::{Factorization, Matrix};
/// use spantree_exact::{BigFloat, CheckedLu};
/// use spantree_core::Scalar;
/// type F = BigFloat<128>;
/// // The last pivot 2^-126 is formed by cancellation: about 2 bits left.
/// let tiny = F::from_f64(2f64.powi(-126));
/// let a = Matrix::from_row_major(2, 2, vec![F::one(), F::one(), F::one(), F::one() + tiny]);
/// let lu = CheckedLu::<128>::new(a);
/// assert!(lu.ln_det_error() > 0.4);
/// // The same at 256 bits keeps its digits.
/// let b = Matrix::from_row_major(2, 2, vec![1.0, 1.0, 1.0, 1.0 + 2f64.powi(-50)]);
/// assert!(CheckedLu::<256>::new(b.map(|&x| BigFloat::from_f64(x))).ln_det_error() < 1e-60);
/// ```
#[derive(Debug)]
pub struct CheckedLu<const BITS: u32>(PartialPivLu<BigFloat<BITS>>);

impl<const BITS: u32> CheckedLu<BITS> {
    /// Factorises `matrix`, `O(n³)` operations at `BITS` bits.
    ///
    /// # Panics
    /// If `matrix` is not square (a programming error).
    pub fn new(matrix: Matrix<BigFloat<BITS>>) -> Self {
        CheckedLu(PartialPivLu::new(matrix))
    }
}

impl<const BITS: u32> Factorization for CheckedLu<BITS> {
    type Scalar = BigFloat<BITS>;

    fn dim(&self) -> usize {
        self.0.dim()
    }

    fn zero_pivot(&self) -> Option<usize> {
        self.0.zero_pivot()
    }

    fn det(&self) -> BigFloat<BITS> {
        self.0.det()
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        self.0.ln_abs_det()
    }

    fn solve(&self, rhs: &mut Matrix<BigFloat<BITS>>) -> std::result::Result<(), Numerical> {
        self.0.solve(rhs)
    }

    fn solve_transpose(
        &self,
        rhs: &mut Matrix<BigFloat<BITS>>,
    ) -> std::result::Result<(), Numerical> {
        self.0.solve_transpose(rhs)
    }

    fn inverse(&self) -> std::result::Result<Matrix<BigFloat<BITS>>, Numerical> {
        self.0.inverse()
    }

    fn adjugate(&self) -> Matrix<BigFloat<BITS>> {
        self.0.adjugate()
    }

    /// `2^−BITS Σ_k c_k / |u_kk|` (see the type), summed in logarithms so
    /// that neither overflows `f64`. `O(n²)`.
    fn ln_det_error(&self) -> f64 {
        let a = self.0.matrix();
        let n = a.rows();
        let mut total = 0.0f64;
        for (k, pivot) in self.0.pivots().enumerate() {
            if pivot.is_zero() {
                continue;
            }
            let column = (0..n).fold(BigFloat::<BITS>::zero(), |s, i| s + a[(i, k)].abs());
            let ln_ratio =
                column.ln_abs() - pivot.ln_abs() - f64::from(BITS) * std::f64::consts::LN_2;
            total += ln_ratio.min(700.0).exp();
        }
        total
    }
}
