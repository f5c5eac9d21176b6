//! The factorisation both backends return: `P A = L U` with partial pivoting,
//! on the plain engine for small matrices and on faer for large ones.

use std::fmt;

use spantree_core::{Factorization, Matrix, Numerical, Sign};

use crate::adjugate;
use crate::dense::FaerLu;
use crate::plain::PlainLu;
use crate::scaled::Scaled;

/// The dimension from which [`Lu::new`] uses faer rather than the plain LU.
///
/// Measured with `cargo run --release -p spantree-bench --example kernels --
/// crossover` on random multi-root Laplacians (factorise plus inverse,
/// minimum of 300 groups, µs, single thread, AVX-512): with the padded
/// multi-row FMA kernel the plain LU wins at every size measured up to
/// `n = 384` (plain / faer: `n = 48` 7.9 / 22.3, `96` 84 / 222, `200`
/// 642 / 1167, `256` 1335 / 1870, `320` 2126 / 3135, `384` 3507 / 4741)
/// and ties at `512` (10238 / 11340), where faer's cache blocking catches up.
pub const CROSSOVER: usize = 384;

/// Which LU implementation factorised a matrix.
///
/// Both compute the same mathematical factorisation (partial pivoting on the
/// largest magnitude of the column); they differ in speed and in rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LuKernel {
    /// A row-major LU, rows padded to whole vectors: unblocked up to
    /// `n = 32`, blocked in panels of 8 columns above, every update through
    /// SIMD fused multiply-adds (AVX-512, AVX2 or scalar, chosen at run
    /// time; the same bits on each); the inverse in register blocks of four
    /// rows. Fastest up to a few hundred rows.
    Plain,
    /// faer's recursive blocked LU (`faer::linalg::solvers::PartialPivLu`).
    Faer,
}

impl LuKernel {
    /// The engine [`Lu::new`] picks for an `n × n` matrix: [`LuKernel::Plain`]
    /// below [`CROSSOVER`], [`LuKernel::Faer`] from it on.
    pub fn for_dim(n: usize) -> LuKernel {
        if n < CROSSOVER {
            LuKernel::Plain
        } else {
            LuKernel::Faer
        }
    }
}

enum Factors {
    Plain(PlainLu),
    Faer(FaerLu),
}

/// An LU factorisation with partial pivoting, `P A = L U`, of a square `f64`
/// matrix: the [`Factorization`] of [`F64`](crate::F64) and
/// [`ShiftedF64`](crate::ShiftedF64).
///
/// * `det A = (−1)^{swaps} Π u_ii`, formed with a separate binary exponent
///   so that it overflows only if `det A` itself does;
/// * `ln |det A| = Σ ln |u_ii|`, which never overflows;
/// * solves and the inverse reuse the factors, `O(n²)` per right-hand side;
/// * the adjugate is `det A · A⁻¹` when `A` is safely nonsingular, and comes
///   from an SVD when it is singular to working precision (see
///   [`Lu::adjugate`](Factorization::adjugate)).
///
/// The factorisation keeps a copy of `A` (for the SVD route), so it holds
/// `2n²` numbers.
///
/// ```
/// use spantree_core::{Factorization, Matrix, Sign};
/// use spantree_faer::Lu;
///
/// let a = Matrix::from_row_major(2, 2, vec![2.0, 1.0, 4.0, 5.0]);
/// let lu = Lu::new(a);
/// assert_eq!(lu.det(), 6.0);
/// assert_eq!(lu.ln_abs_det().0, Sign::Positive);
/// let mut b = Matrix::from_row_major(2, 1, vec![3.0, 9.0]);
/// lu.solve(&mut b)?;
/// assert!((b[(0, 0)] - 1.0).abs() < 1e-15 && (b[(1, 0)] - 1.0).abs() < 1e-15);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub struct Lu {
    n: usize,
    original: Matrix<f64>,
    odd: bool,
    factors: Factors,
}

impl Lu {
    /// Factorises `a` on the engine [`LuKernel::for_dim`] picks, `≈ 2n³/3` flops.
    ///
    /// # Panics
    /// If `a` is not square (a programming error, not user input).
    pub fn new(a: Matrix<f64>) -> Lu {
        let engine = LuKernel::for_dim(a.rows());
        Lu::with_kernel(a, engine)
    }

    /// Factorises `a` on a chosen engine (for tests and benchmarks).
    ///
    /// # Panics
    /// If `a` is not square.
    pub fn with_kernel(a: Matrix<f64>, engine: LuKernel) -> Lu {
        assert_eq!(a.rows(), a.cols(), "an LU needs a square matrix");
        let n = a.rows();
        let factors = match engine {
            LuKernel::Plain => Factors::Plain(PlainLu::new(n, a.as_slice())),
            LuKernel::Faer => Factors::Faer(FaerLu::new(&a)),
        };
        let odd = match &factors {
            Factors::Plain(f) => f.odd(),
            Factors::Faer(f) => f.odd(),
        };
        Lu {
            n,
            original: a,
            odd,
            factors,
        }
    }

    /// The engine that computed the factors.
    pub fn kernel(&self) -> LuKernel {
        match self.factors {
            Factors::Plain(_) => LuKernel::Plain,
            Factors::Faer(_) => LuKernel::Faer,
        }
    }

    /// The pivots `u_ii`, the diagonal of `U`. After an exactly-zero pivot
    /// the later ones are engine-dependent (the plain LU skips the step,
    /// faer's are NaN).
    pub fn pivots(&self) -> &[f64] {
        match &self.factors {
            Factors::Plain(f) => f.pivots(),
            Factors::Faer(f) => f.pivots(),
        }
    }

    fn check(&self) -> Result<(), Numerical> {
        match self.zero_pivot() {
            Some(pivot) => Err(Numerical::Singular { pivot }),
            None => Ok(()),
        }
    }

    /// `X B X` for `X = A⁻¹`, or its transpose, from the factors: on the
    /// plain kernel `(A⁻¹ B) X` by a solve and one product, both in place
    /// of `B` when it is square (`PlainLu::matmul_in_place`: no result
    /// allocated), else a product that writes its rows as rows or as
    /// columns; on faer its blocked sandwich. `4n³` flops.
    fn sandwich(
        &self,
        x: &Matrix<f64>,
        mut b: Matrix<f64>,
        transposed: bool,
    ) -> Result<Matrix<f64>, Numerical> {
        self.check()?;
        Ok(match &self.factors {
            Factors::Plain(f) => {
                f.solve(&mut b);
                // In place where `B` and `X` are square (`X B X`), else
                // into a new matrix.
                if f.matmul_in_place(&mut b, x, transposed) {
                    b
                } else if transposed {
                    f.matmul_transposed(&b, x)
                } else {
                    f.matmul(&b, x)
                }
            }
            Factors::Faer(f) => {
                let y = f.inverse_sandwich(x, &b);
                if transposed {
                    y.transpose()
                } else {
                    y
                }
            }
        })
    }

    /// `det A` with its binary exponent apart; zero at the first zero pivot.
    fn scaled_det(&self) -> Scaled {
        let mut det = Scaled::ONE;
        for &p in self.pivots() {
            if p == 0.0 {
                return Scaled::ONE.times(0.0);
            }
            det = det.times(p);
        }
        if self.odd {
            det.negated()
        } else {
            det
        }
    }

    /// Whether `A` is singular to working precision: a zero pivot, or
    /// `min |u_ii| ≤ n ε max |u_ii|`, where `det A · A⁻¹` has no correct digit left.
    fn numerically_singular(&self) -> bool {
        let (min, max) = self
            .pivots()
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(lo, hi), p| {
                (lo.min(p.abs()), hi.max(p.abs()))
            });
        min <= self.n as f64 * f64::EPSILON * max
    }
}

impl fmt::Debug for Lu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lu")
            .field("n", &self.n)
            .field("kernel", &self.kernel())
            .field("pivots", &self.pivots())
            .field("odd_permutation", &self.odd)
            .finish_non_exhaustive()
    }
}

/// `column[k] = Σ_i |a[i][k]|` (from `+0`) over the rows `i` of the
/// row-major `a` in order, `column.len()` wide, under one instruction-set dispatch: strips
/// of up to [`STRIP_BLOCKS`] blocks of whole vectors, each strip's sums in
/// vector registers down the rows (no store and reload from one row to the
/// next), the last block moved back over columns it sums again the same
/// way (no partial vector); fewer columns than lanes take the scalar
/// instruction set. `O(n²)`.
struct ColumnSums<'a> {
    a: &'a [f64],
    column: &'a mut [f64],
}

/// How many blocks of columns [`ColumnSums`] keeps in vector registers:
/// `4` (32 columns with AVX-512, 16 with AVX2).
const STRIP_BLOCKS: usize = 4;

impl pulp::WithSimd for ColumnSums<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        if self.column.len() < S::F64_LANES {
            column_sums(pulp::Scalar::new(), self.a, self.column);
        } else {
            column_sums(simd, self.a, self.column);
        }
    }
}

/// The body of [`ColumnSums`] under `simd`, whose lanes `column` fills.
#[inline(always)]
fn column_sums<S: pulp::Simd>(simd: S, a: &[f64], column: &mut [f64]) {
    let blocks = column.len().div_ceil(S::F64_LANES);
    let mut first = 0;
    while first < blocks {
        let strip = (blocks - first).min(STRIP_BLOCKS);
        match strip {
            1 => column_strip::<S, 1>(simd, a, column, first),
            2 => column_strip::<S, 2>(simd, a, column, first),
            3 => column_strip::<S, 3>(simd, a, column, first),
            _ => column_strip::<S, STRIP_BLOCKS>(simd, a, column, first),
        }
        first += strip;
    }
}

/// `B` blocks of [`ColumnSums`] from block `first` on.
#[inline(always)]
fn column_strip<S: pulp::Simd, const B: usize>(
    simd: S,
    a: &[f64],
    column: &mut [f64],
    first: usize,
) {
    let (n, lanes) = (column.len(), S::F64_LANES);
    let at: [usize; B] = std::array::from_fn(|b| ((first + b) * lanes).min(n - lanes));
    let load = |s: &[f64], at: usize| S::as_simd_f64s(&s[at..at + lanes]).0[0];
    // From zero, not from `column`: a block moved back over columns of an
    // earlier strip would add their sums twice.
    let mut sums: [S::f64s; B] = [simd.splat_f64s(0.0); B];
    for row in a.chunks_exact(n) {
        for b in 0..B {
            sums[b] = simd.add_f64s(sums[b], simd.abs_f64s(load(row, at[b])));
        }
    }
    for b in 0..B {
        S::as_mut_simd_f64s(&mut column[at[b]..at[b] + lanes]).0[0] = sums[b];
    }
}

impl Factorization for Lu {
    type Scalar = f64;

    fn dim(&self) -> usize {
        self.n
    }

    /// `ε Σ_k c_k / |u_kk|` with `c_k = Σ_i |A[i][k]|`, `O(n²)`.
    ///
    /// Why: with row pivoting the pivot `u_kk` lives in column `k`, and the
    /// rounding errors of its elimination are bounded by
    /// `γ_k (|L̂| |Û|)_kk` (Higham, *Accuracy and Stability*, Thm 9.3); on the
    /// matrices this crate factorises (Laplacians, column-diagonally dominant
    /// for multi-root: no growth) that is a few `ε c_k`. So `u_kk` carries
    /// a relative error of about `ε c_k / |u_kk|`, and `ln |det| = Σ ln |u_kk|`
    /// the sum of them. A pivot far below its column is a pivot formed by
    /// cancellation: a root weight lost on a multi-root diagonal leaves a
    /// last pivot of rounding size, and this estimate near `1`.
    fn ln_det_error(&self) -> f64 {
        let n = self.n;
        // The column sums row by row (no strided access), each adding its
        // rows in order: the same sums as column by column, compiled for
        // the detected instruction set (it ran on SSE2 before), in this
        // thread's scratch ([`Scratch`](spantree_core::matrix::Scratch)).
        let mut column = spantree_core::matrix::Scratch::take();
        column.resize(n, 0.0);
        crate::kernel::arch().dispatch(ColumnSums {
            a: self.original.as_slice(),
            column: &mut column,
        });
        let pivots = self.pivots();
        let ratio: f64 = (0..n)
            .filter(|&k| pivots[k] != 0.0)
            .map(|k| column[k] / pivots[k].abs())
            .sum();
        f64::EPSILON * ratio
    }

    /// The first step whose pivot is exactly `±0`. `O(n)`.
    fn zero_pivot(&self) -> Option<usize> {
        self.pivots().iter().position(|&p| p == 0.0)
    }

    /// `(−1)^{swaps} Π u_ii`, exact up to one rounding per pivot; `±∞` or
    /// `0` only if `det A` itself overflows or underflows `f64`. `O(n)`.
    fn det(&self) -> f64 {
        self.scaled_det().to_f64()
    }

    /// `(sign, Σ ln |u_ii|)`, never `ln(det)`. `(Sign::Zero, −∞)` at the
    /// first zero pivot. A NaN pivot before it gives `(Sign::Positive, NaN)`:
    /// the sign cannot be known, and the NaN logarithm makes the core report
    /// [`Numerical::NotFinite`]. `O(n)`; absolute error `≲ n ε max |ln|u_ii||`
    /// beyond the LU's own.
    fn ln_abs_det(&self) -> (Sign, f64) {
        let mut sign = if self.odd {
            Sign::Negative
        } else {
            Sign::Positive
        };
        let mut ln = 0.0;
        for &p in self.pivots() {
            if p.is_nan() {
                return (Sign::Positive, f64::NAN);
            }
            if p == 0.0 {
                return (Sign::Zero, f64::NEG_INFINITY);
            }
            if p < 0.0 {
                sign = sign.times(Sign::Negative);
            }
            ln += p.abs().ln();
        }
        (sign, ln)
    }

    /// Permute, forward with `L`, backward with `U`: `2n²` flops per column.
    ///
    /// # Errors
    /// [`Numerical::Singular`] at the first zero pivot.
    ///
    /// # Panics
    /// If `rhs` does not have `n` rows.
    fn solve(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        assert_eq!(rhs.rows(), self.n, "right-hand side has the wrong height");
        self.check()?;
        match &self.factors {
            Factors::Plain(f) => f.solve(rhs),
            Factors::Faer(f) => f.solve(rhs),
        }
        Ok(())
    }

    /// `Aᵀ = Uᵀ Lᵀ P`: forward with `Uᵀ`, backward with `Lᵀ`, then `Pᵀ`;
    /// `2n²` flops per column.
    ///
    /// # Errors
    /// [`Numerical::Singular`] at the first zero pivot.
    ///
    /// # Panics
    /// If `rhs` does not have `n` rows.
    fn solve_transpose(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        assert_eq!(rhs.rows(), self.n, "right-hand side has the wrong height");
        self.check()?;
        match &self.factors {
            Factors::Plain(f) => f.solve_transpose(rhs),
            Factors::Faer(f) => f.solve_transpose(rhs),
        }
        Ok(())
    }

    /// `A⁻¹` from the existing factors, one `O(n³)` pass, no refactorisation:
    /// `U⁻¹ L⁻¹ P` by two substitutions on the plain engine (`≈ 4n³/3`
    /// flops), triangular inverses and one product on faer.
    ///
    /// # Errors
    /// [`Numerical::Singular`] at the first zero pivot.
    fn inverse(&self) -> Result<Matrix<f64>, Numerical> {
        self.check()?;
        Ok(match &self.factors {
            Factors::Plain(f) => f.inverse(),
            Factors::Faer(f) => f.inverse(),
        })
    }

    /// `X B X` for `X = A⁻¹`: on faer's kernel, its blocked solve and
    /// product; on the plain one, a solve and a row-major product through
    /// the same SIMD kernel (`Lu::sandwich`). `4n³` flops.
    ///
    /// # Errors
    /// [`Numerical::Singular`] at the first zero pivot.
    fn inverse_sandwich(&self, x: &Matrix<f64>, b: Matrix<f64>) -> Result<Matrix<f64>, Numerical> {
        self.sandwich(x, b, false)
    }

    /// `(X B X)ᵀ`, the same entries as `inverse_sandwich` bit for bit: on
    /// the plain kernel the product in place of `B`, transposed in place
    /// (`PlainLu::matmul_in_place`; a `B` that is not square: the product
    /// stores its rows as columns as it forms them,
    /// `PlainLu::matmul_transposed`); on faer the sandwich transposed
    /// (`Lu::sandwich`). `4n³` flops.
    ///
    /// # Errors
    /// [`Numerical::Singular`] at the first zero pivot.
    fn inverse_sandwich_transposed(
        &self,
        x: &Matrix<f64>,
        b: Matrix<f64>,
    ) -> Result<Matrix<f64>, Numerical> {
        self.sandwich(x, b, true)
    }

    /// `adj A`, defined for every `A` (`A · adj A = det A · I`).
    ///
    /// * `n = 1`: `[1]`, exactly.
    /// * `A` safely nonsingular: `det A · A⁻¹`, `O(n³)` from the existing
    ///   factors, with `det A` applied as mantissa and exponent (no spurious
    ///   overflow). Relative error about `κ(A) ε`, growing as `A` nears
    ///   singularity (Stewart 1998).
    /// * `A` singular to working precision (a zero pivot, or
    ///   `min |u_ii| ≤ n ε max |u_ii|`): from the SVD of `A` equilibrated by
    ///   powers of two, `adj A = det U det V · V diag(Π_{k≠l} σ_k) Uᵀ`, with the
    ///   products of singular values formed without overflow. It divides by
    ///   no small pivot, so its error is about `ε σ_1 / σ_{n−1}` relative to
    ///   `‖adj A‖`: accurate for rank `n − 1`, and `≈ 0` (to `ε ‖A‖^{n−1}`) for
    ///   lower rank, where `adj A = 0`. Cost one SVD, `≈ 20n³` flops.
    fn adjugate(&self) -> Matrix<f64> {
        match self.n {
            0 => Matrix::zeros(0, 0),
            1 => Matrix::identity(1),
            _ if self.numerically_singular() => adjugate::from_svd(&self.original),
            _ => match self.inverse() {
                Ok(x) => adjugate::from_inverse(self.scaled_det(), x),
                Err(_) => adjugate::from_svd(&self.original),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spantree_bruteforce::random::SplitMix64;

    /// An `n × n` matrix of `N(0, 1)` entries, a few exactly zero.
    fn matrix(n: usize, seed: u64) -> Matrix<f64> {
        let mut rng = SplitMix64::new(seed);
        Matrix::from_fn(
            n,
            n,
            |_, _| {
                if rng.chance(0.1) {
                    0.0
                } else {
                    rng.normal()
                }
            },
        )
    }

    /// [`ColumnSums`] under every instruction set (scalar, AVX2 and the
    /// detected one): the column sums `Σ_i |A[i][k]|` down the rows, bit
    /// for bit, at every width and strip (`n` up to 70).
    #[test]
    fn column_sums_are_their_definition_on_every_instruction_set() {
        let mut arches = vec![crate::kernel::arch(), pulp::Arch::Scalar];
        #[cfg(target_arch = "x86_64")]
        arches.extend(pulp::x86::V3::try_new().map(pulp::Arch::V3));
        for n in (1..=41).chain([63, 64, 65, 70]) {
            let a = matrix(n, 2000 + n as u64);
            for arch in &arches {
                let mut column = vec![0.0; n];
                arch.dispatch(ColumnSums {
                    a: a.as_slice(),
                    column: &mut column,
                });
                for (k, c) in column.iter().enumerate() {
                    let expected: f64 = (0..n).fold(0.0, |c, i| c + a[(i, k)].abs());
                    assert_eq!(c.to_bits(), expected.to_bits(), "n = {n}, column {k}");
                }
            }
        }
    }

    /// `ln_det_error`, whose column sums now run under the instruction-set
    /// dispatch ([`ColumnSums`]), is its definition `ε Σ_k c_k / |u_kk|`,
    /// `c_k = Σ_i |A[i][k]|` summed column by column down the rows, bit
    /// for bit, on both kernels.
    #[test]
    fn ln_det_error_is_its_definition() {
        for n in (1..=41).chain([64, 67]) {
            let a = matrix(n, 1000 + n as u64);
            for kernel in [LuKernel::Plain, LuKernel::Faer] {
                let lu = Lu::with_kernel(a.clone(), kernel);
                let ratio: f64 = (0..n)
                    .filter(|&k| lu.pivots()[k] != 0.0)
                    .map(|k| {
                        let c: f64 = (0..n).fold(0.0, |c, i| c + a[(i, k)].abs());
                        c / lu.pivots()[k].abs()
                    })
                    .sum();
                let expected = f64::EPSILON * ratio;
                assert_eq!(lu.ln_det_error().to_bits(), expected.to_bits(), "n = {n}");
            }
        }
    }
}
