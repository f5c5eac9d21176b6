//! The adjugate of a rank-`(n − 1)` matrix from a bordered matrix.

use crate::{Factorization, Matrix, Numerical, Scalar};

/// `adj A` for a square `A` of rank exactly `n − 1`, given a row `r` and a
/// column `c` whose deletion leaves a non-singular `(n−1)`-submatrix, and a
/// way to factorise an `(n+1) × (n+1)` matrix of the same scalar.
///
/// **Formula.** A rank-`(n−1)` matrix has `adj A = γ x yᵀ` with `A x = 0`,
/// `yᵀ A = 0`. The bordered matrix `B = [[A, e_r], [e_cᵀ, 0]]` has
/// `det B = −e_cᵀ adj(A) e_r = −adj(A)[c][r] ≠ 0` by the choice of `r` and
/// `c`, so `B` is invertible; its last column is `[x / x_c; 0]` and its last
/// row `[yᵀ / y_r, 0]`, hence
///
/// `adj A = −det B · B⁻¹[0..n, n] · B⁻¹[n, 0..n]`.
///
/// Nothing divides by a vanishing pivot of `A`, so this is exact for exact
/// scalars and accurate to the conditioning of `B` for floats. An
/// elimination that finds the rank supplies `r` and `c`: the row left
/// without a pivot and the first column skipped.
///
/// **Cost.** One factorisation of `B` (`O(n³)`), one solve with `B` and one
/// with `Bᵀ` (`O(n²)`), `n²` products.
///
/// # Errors
/// [`Numerical::Singular`] (from the solves) when `B` is found singular:
/// for exact scalars only if `r`, `c` do not have the property above; for
/// floats also when rounding makes `B` singular.
///
/// # Panics
/// If `a` is not square or `r`, `c` are not below its size (programming
/// errors).
///
/// ```
/// use spantree_core::linalg::{bordered_adjugate, PartialPivLu};
/// use spantree_core::Matrix;
///
/// // Rank one: adj [[1, 2], [2, 4]] = [[4, −2], [−2, 1]]; deleting row 0 and
/// // column 0 leaves [4], non-singular.
/// let a = Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 4.0]);
/// let adj = bordered_adjugate(&a, 0, 0, PartialPivLu::new)?;
/// assert_eq!(adj.as_slice(), &[4.0, -2.0, -2.0, 1.0]);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn bordered_adjugate<S, F>(
    a: &Matrix<S>,
    r: usize,
    c: usize,
    factorize: impl FnOnce(Matrix<S>) -> F,
) -> Result<Matrix<S>, Numerical>
where
    S: Scalar,
    F: Factorization<Scalar = S>,
{
    let n = a.rows();
    assert_eq!(n, a.cols(), "bordered_adjugate: matrix is not square");
    assert!(
        r < n && c < n,
        "bordered_adjugate: border outside the matrix"
    );
    let bordered = Matrix::from_fn(n + 1, n + 1, |i, j| match (i < n, j < n) {
        (true, true) => a[(i, j)].clone(),
        (true, false) if i == r => S::one(),
        (false, true) if j == c => S::one(),
        _ => S::zero(),
    });
    let b = factorize(bordered);
    let unit = Matrix::from_fn(n + 1, 1, |i, _| if i == n { S::one() } else { S::zero() });
    let mut column = unit.clone();
    let mut row = unit;
    b.solve(&mut column)?;
    b.solve_transpose(&mut row)?;
    let minus_det = -b.det();
    let scaled: Vec<S> = (0..n)
        .map(|i| {
            let mut x = minus_det.clone();
            x *= &column[(i, 0)];
            x
        })
        .collect();
    Ok(Matrix::from_fn(n, n, |i, j| {
        let mut x = scaled[i].clone();
        x *= &row[(j, 0)];
        x
    }))
}
