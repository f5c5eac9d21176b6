//! Determinants and adjugates by their definitions: Laplace expansion and
//! cofactors, `O(n!)`, sharing nothing with any factorisation. The oracle
//! for the LU factorisations of the backends (practical up to `n ≈ 8`).

use spantree_core::{Matrix, Scalar};

/// `A` without row `r` and column `c`.
///
/// # Panics
/// If `A` is empty or `r`, `c` are out of range (a programming error).
pub fn minor<S: Clone>(a: &Matrix<S>, r: usize, c: usize) -> Matrix<S> {
    let (rows, cols) = (a.rows(), a.cols());
    assert!(r < rows && c < cols, "minor: row or column out of range");
    Matrix::from_fn(rows - 1, cols - 1, |i, j| {
        a[(i + usize::from(i >= r), j + usize::from(j >= c))].clone()
    })
}

/// `det A = Σ_j (−1)^j a_0j det A_(0,j)` by Laplace expansion along the
/// first row (zero entries skipped), `O(n!)`; `1` for `n = 0`. Exact in
/// exact arithmetic, and for small integer matrices in `f64`.
///
/// ```
/// use spantree_bruteforce::cofactor::det_by_expansion;
/// use spantree_core::Matrix;
/// let a = Matrix::from_row_major(3, 3, vec![2.0, 0.0, 1.0, 1.0, 3.0, 0.0, 0.0, 1.0, 4.0]);
/// assert_eq!(det_by_expansion(&a), 2.0 * 12.0 + 1.0 * 1.0);
/// ```
pub fn det_by_expansion<S: Scalar>(a: &Matrix<S>) -> S {
    let n = a.rows();
    if n == 0 {
        return S::one();
    }
    let mut total = S::zero();
    for j in 0..n {
        if a[(0, j)].is_zero() {
            continue;
        }
        let mut term = a[(0, j)].clone();
        term *= &det_by_expansion(&minor(a, 0, j));
        if j % 2 == 0 {
            total += term;
        } else {
            total -= term;
        }
    }
    total
}

/// `adj(A)[i][j] = (−1)^{i+j} det A_(j,i)` (the minor without row `j` and
/// column `i`): the definition, `O(n² (n−1)!)`; `[1]` for `n = 1`.
///
/// ```
/// use spantree_bruteforce::cofactor::adjugate_by_cofactors;
/// use spantree_core::Matrix;
/// // Rank one: adj [[1, 2], [2, 4]] = [[4, −2], [−2, 1]].
/// let a = Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 4.0]);
/// assert_eq!(adjugate_by_cofactors(&a).as_slice(), &[4.0, -2.0, -2.0, 1.0]);
/// ```
pub fn adjugate_by_cofactors<S: Scalar>(a: &Matrix<S>) -> Matrix<S> {
    let n = a.rows();
    Matrix::from_fn(n, n, |i, j| {
        let d = det_by_expansion(&minor(a, j, i));
        if (i + j) % 2 == 0 {
            d
        } else {
            -d
        }
    })
}
