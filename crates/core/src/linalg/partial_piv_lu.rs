//! [`PartialPivLu`]: plain LU with partial pivoting, generic over [`Scalar`].

use super::{bordered_adjugate, RowEchelon};
use crate::{Factorization, Matrix, Numerical, Scalar, Sign};

/// `P A = L U` by Gaussian elimination with partial pivoting, for any
/// [`Scalar`]: the factorisation of `spantree_exact::HighPrecision` (MPFR
/// floats), written against the field operations only so that every scalar
/// type can use it.
///
/// **Method.** At step `k` the pivot is the candidate of largest magnitude
/// in column `k` (compared through [`Scalar::ln_abs`], which never
/// overflows; ties go to the upper row), then
/// `a[i][j] −= (a[i][k] / a[k][k]) · a[k][j]` below it. `L` is unit lower
/// triangular (multipliers stored below the diagonal), `U` upper triangular.
/// A column whose candidates are all *exactly* zero has no pivot: it is
/// skipped and the elimination goes on in row-echelon form, so the number
/// of pivots is the rank of the computed factors (the exact rank for exact
/// scalars) and, for rank `n − 1`, the unused row and the skipped column
/// name a non-singular `(n−1)`-submatrix (used by [`Factorization::adjugate`]).
///
/// **Cost.** `n³/3` multiply–subtracts and `n²/2` divisions to factorise
/// (entries that are exactly zero are skipped, which helps on sparse
/// Laplacians), `n²` per right-hand side to solve, `n²/2` calls of
/// [`Scalar::ln_abs`] for the pivot search. Each factorisation is done once:
/// `solve_transpose` reads the same factors transposed.
///
/// **Accuracy** (floating-point scalars). The backward error of partial
/// pivoting: the computed factors satisfy `L U = P A + E` with
/// `|E| ≲ n ε |L| |U|`, `ε = 2^(1−p)` for `p`-bit arithmetic; the growth
/// `|L| |U| / |A|` is small in practice (and `≤ 1`-ish for the diagonally
/// dominant multi-root Laplacian).
///
/// ```
/// use spantree_core::{Factorization, Matrix, Scalar};
/// use spantree_core::linalg::PartialPivLu;
///
/// let a = Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 2.0]);
/// let lu = PartialPivLu::new(a);
/// // The pivot of column 0 is 2 (largest magnitude): rows are swapped.
/// assert_eq!(lu.det(), -2.0);
/// let mut x = Matrix::from_row_major(2, 1, vec![5.0, 6.0]);
/// lu.solve(&mut x)?; // [[1, 2], [2, 2]] x = [5, 6]
/// assert_eq!(x.as_slice(), &[1.0, 2.0]);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
#[derive(Clone, Debug)]
pub struct PartialPivLu<S> {
    n: usize,
    /// `A` as given: the bordered matrix of a rank-`(n−1)` adjugate starts from it.
    original: Matrix<S>,
    /// Row-major `n × n`: `U` on and above the diagonal, the multipliers of
    /// `L` below it (`L[i][i] = 1` implied). In row-echelon form when
    /// `rank < n`.
    lu: Vec<S>,
    /// `P`, the rank, and the border of a rank-`(n−1)` adjugate.
    echelon: RowEchelon,
}

impl<S: Scalar> PartialPivLu<S> {
    /// Factorises a square matrix, `O(n³)`; see the type's docs.
    ///
    /// # Panics
    /// If `matrix` is not square (a programming error).
    ///
    /// ```
    /// use spantree_core::{Factorization, Matrix};
    /// use spantree_core::linalg::PartialPivLu;
    /// let lu = PartialPivLu::new(Matrix::from_row_major(2, 2, vec![2.0, 1.0, 1.0, 3.0]));
    /// assert_eq!(lu.det(), 5.0);
    /// ```
    pub fn new(matrix: Matrix<S>) -> Self {
        assert_eq!(
            matrix.rows(),
            matrix.cols(),
            "factorize: matrix is not square"
        );
        let n = matrix.rows();
        let original = matrix.clone();
        let mut lu = matrix.into_vec();
        // The pivot is the candidate of largest magnitude; a NaN magnitude
        // loses to any number.
        let pivot = |lu: &[S], k: usize, r: usize| {
            let mut best: Option<(usize, f64)> = None;
            for i in r..n {
                let x = &lu[i * n + k];
                if x.is_zero() {
                    continue;
                }
                let size = x.ln_abs();
                if best.is_none_or(|(_, b)| size > b || b.is_nan()) {
                    best = Some((i, size));
                }
            }
            best.map(|(i, _)| i)
        };
        let step = |pivot_row: &[S], below: &mut [S], k: usize| {
            let pivot = &pivot_row[k];
            for row in below.chunks_exact_mut(n) {
                if row[k].is_zero() {
                    continue;
                }
                let (head, tail) = row.split_at_mut(k + 1);
                head[k] /= pivot;
                let l = &head[k];
                for (aij, akj) in tail.iter_mut().zip(&pivot_row[k + 1..]) {
                    sub_mul(aij, l, akj);
                }
            }
        };
        let echelon = RowEchelon::eliminate(n, &mut lu, pivot, step);
        PartialPivLu {
            n,
            original,
            lu,
            echelon,
        }
    }

    /// The number of non-zero pivots: the rank of the computed factors
    /// (exact for exact scalars; for floats, exact zeros only arise from
    /// structure or exact cancellation).
    ///
    /// ```
    /// use spantree_core::Matrix;
    /// use spantree_core::linalg::PartialPivLu;
    /// let a = Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 4.0]);
    /// assert_eq!(PartialPivLu::new(a).rank(), 1);
    /// ```
    pub fn rank(&self) -> usize {
        self.echelon.rank()
    }

    /// The factorised matrix `A`.
    pub fn matrix(&self) -> &Matrix<S> {
        &self.original
    }

    /// The pivots `U[k][k]` (meaningful when [`PartialPivLu::rank`] is `n`).
    pub fn pivots(&self) -> impl Iterator<Item = &S> + '_ {
        (0..self.n).map(move |k| &self.lu[k * self.n + k])
    }
}

/// `x −= a · y`, skipping an exactly zero `y`.
fn sub_mul<S: Scalar>(x: &mut S, a: &S, y: &S) {
    if !y.is_zero() {
        let mut t = a.clone();
        t *= y;
        *x -= &t;
    }
}

impl<S: Scalar> Factorization for PartialPivLu<S> {
    type Scalar = S;

    fn dim(&self) -> usize {
        self.n
    }

    /// The first column in which every candidate was exactly zero; then
    /// the computed factors (and, for exact scalars, `A`) are singular.
    /// A float matrix that is singular only to working precision has tiny
    /// non-zero pivots instead.
    fn zero_pivot(&self) -> Option<usize> {
        self.echelon.zero_pivot()
    }

    /// `det A = ± Π_k U[k][k]` (sign of `P`), `O(n)`; `0` when a pivot is
    /// missing.
    fn det(&self) -> S {
        if self.echelon.rank() < self.n {
            return S::zero();
        }
        let mut det = S::one();
        for p in self.pivots() {
            det *= p;
        }
        if self.echelon.odd_permutation() {
            -det
        } else {
            det
        }
    }

    /// `(sign, Σ_k ln |U[k][k]|)` in `f64` through [`Scalar::ln_abs`]: never
    /// overflows, `O(n)`; absolute error about `n` ulps of the largest term.
    fn ln_abs_det(&self) -> (Sign, f64) {
        if self.echelon.rank() < self.n {
            return (Sign::Zero, f64::NEG_INFINITY);
        }
        let mut sign = if self.echelon.odd_permutation() {
            Sign::Negative
        } else {
            Sign::Positive
        };
        let mut ln = 0.0;
        for p in self.pivots() {
            sign = sign.times(p.sign());
            ln += p.ln_abs();
        }
        (sign, ln)
    }

    /// `x = U⁻¹ L⁻¹ P b` by forward and back substitution, `O(n² k)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when a pivot is exactly zero.
    ///
    /// # Panics
    /// If `rhs` does not have `n` rows (a programming error).
    fn solve(&self, rhs: &mut Matrix<S>) -> Result<(), Numerical> {
        self.echelon.check_solve(rhs.rows())?;
        let (n, k) = (self.n, rhs.cols());
        let mut w: Vec<S> = Vec::with_capacity(n * k);
        for &p in self.echelon.perm() {
            w.extend_from_slice(rhs.row(p));
        }
        // L y = P b, row by row (L[i][i] = 1).
        for s in 0..n {
            let (top, bottom) = w.split_at_mut((s + 1) * k);
            let ws = &top[s * k..];
            for (i, row) in (s + 1..n).zip(bottom.chunks_exact_mut(k)) {
                let l = &self.lu[i * n + s];
                if l.is_zero() {
                    continue;
                }
                for (x, y) in row.iter_mut().zip(ws) {
                    sub_mul(x, l, y);
                }
            }
        }
        // U x = y.
        for i in (0..n).rev() {
            let (head, tail) = w.split_at_mut((i + 1) * k);
            let wi = &mut head[i * k..];
            for (j, wj) in (i + 1..n).zip(tail.chunks_exact(k)) {
                let u = &self.lu[i * n + j];
                if u.is_zero() {
                    continue;
                }
                for (x, y) in wi.iter_mut().zip(wj) {
                    sub_mul(x, u, y);
                }
            }
            let pivot = &self.lu[i * n + i];
            for x in wi {
                *x /= pivot;
            }
        }
        *rhs = Matrix::from_row_major(n, k, w);
        Ok(())
    }

    /// `Aᵀ = Uᵀ Lᵀ P`: `Uᵀ z = b` forward, `Lᵀ y = z` back, `x = Pᵀ y`,
    /// with the same factors (no second factorisation), `O(n² k)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when a pivot is exactly zero.
    ///
    /// # Panics
    /// If `rhs` does not have `n` rows (a programming error).
    fn solve_transpose(&self, rhs: &mut Matrix<S>) -> Result<(), Numerical> {
        self.echelon.check_solve(rhs.rows())?;
        let (n, k) = (self.n, rhs.cols());
        let mut w = std::mem::replace(rhs, Matrix::zeros(0, 0)).into_vec();
        // Uᵀ z = b: z_s is final once divided by U[s][s]; then it leaves the
        // rows below through U[s][i].
        for s in 0..n {
            let (top, bottom) = w.split_at_mut((s + 1) * k);
            let ws = &mut top[s * k..];
            let pivot = &self.lu[s * n + s];
            for x in ws.iter_mut() {
                *x /= pivot;
            }
            for (i, row) in (s + 1..n).zip(bottom.chunks_exact_mut(k)) {
                let u = &self.lu[s * n + i];
                if u.is_zero() {
                    continue;
                }
                for (x, y) in row.iter_mut().zip(ws.iter()) {
                    sub_mul(x, u, y);
                }
            }
        }
        // Lᵀ y = z (unit diagonal): y_s is final, then leaves the rows above
        // through L[s][i].
        for s in (0..n).rev() {
            let (top, bottom) = w.split_at_mut(s * k);
            let ws = &bottom[..k];
            for (i, row) in top.chunks_exact_mut(k).enumerate() {
                let l = &self.lu[s * n + i];
                if l.is_zero() {
                    continue;
                }
                for (x, y) in row.iter_mut().zip(ws) {
                    sub_mul(x, l, y);
                }
            }
        }
        // y = P x: row i of y is row perm[i] of x.
        let mut x = vec![S::zero(); n * k];
        for (yi, &p) in w.chunks_exact_mut(k).zip(self.echelon.perm()) {
            for (dst, src) in x[p * k..(p + 1) * k].iter_mut().zip(yi) {
                std::mem::swap(dst, src);
            }
        }
        *rhs = Matrix::from_row_major(n, k, x);
        Ok(())
    }

    /// `A⁻¹` by `n` solves with the identity, `O(n³)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when a pivot is exactly zero.
    fn inverse(&self) -> Result<Matrix<S>, Numerical> {
        let mut x = Matrix::identity(self.n);
        self.solve(&mut x)?;
        Ok(x)
    }

    /// The adjugate, `O(n³)`, by the rank the elimination found:
    ///
    /// * `n` pivots: `adj A = det A · A⁻¹`. For floats this loses relative
    ///   accuracy as `A` approaches singularity: the smallest pivot divides
    ///   and `det A` multiplies it back.
    /// * `n − 1` pivots (one column without a pivot):
    ///   [`bordered_adjugate`] with `r` the unused row and `c` the skipped
    ///   column, whose deletion leaves `n − 1` non-zero pivots (one more
    ///   factorisation, of the `(n+1)`-bordered matrix, and two solves). No
    ///   division by a vanishing pivot.
    /// * fewer pivots: `0`. Certain for exact scalars (every `(n−1)`-minor
    ///   vanishes). For floats the computed factors have rank `≤ n − 2`, so
    ///   `P A + E` does for a backward error `E` of the size of the rounding
    ///   (`|E| ≲ n ε |L| |U|`), and `adj A` is `O(|E|)`, not certainly `0`;
    ///   exact zero pivot columns in floats come from structure (two words
    ///   with no weight in, two identical columns), where `0` is exact.
    ///   If the bordered matrix of the previous case is itself found
    ///   singular (rounding), the answer is `0` as well.
    ///
    /// ```
    /// use spantree_core::{Factorization, Matrix};
    /// use spantree_core::linalg::PartialPivLu;
    /// // Singular: [[1, 2], [2, 4]] has adjugate [[4, -2], [-2, 1]].
    /// let a = Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 4.0]);
    /// let adj = PartialPivLu::new(a).adjugate();
    /// assert_eq!(adj.as_slice(), &[4.0, -2.0, -2.0, 1.0]);
    /// ```
    fn adjugate(&self) -> Matrix<S> {
        let n = self.n;
        if self.echelon.rank() == n {
            let det = self.det();
            let mut x = self.inverse().expect("n pivots: non-singular");
            for v in x.as_mut_slice() {
                *v *= &det;
            }
            return x;
        }
        let Some((r, c)) = self.echelon.deficient() else {
            return Matrix::zeros(n, n);
        };
        bordered_adjugate(&self.original, r, c, PartialPivLu::new)
            .unwrap_or_else(|_| Matrix::zeros(n, n))
    }
}
