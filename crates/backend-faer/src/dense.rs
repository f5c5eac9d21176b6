//! The faer engine: blocked LU with partial pivoting, and the SVD used for
//! adjugates of singular matrices. faer types stay inside this module.

use faer::linalg::solvers::{DenseSolveCore, PartialPivLu, Solve, Svd};
use faer::{Mat, MatRef};
use spantree_core::Matrix;

/// faer's `P A = L U`.
#[derive(Debug)]
pub(crate) struct FaerLu {
    lu: PartialPivLu<f64>,
    /// The diagonal of `U`, read once.
    pivots: Vec<f64>,
}

impl FaerLu {
    pub(crate) fn new(a: &Matrix<f64>) -> Self {
        let lu = PartialPivLu::new(to_mat(a).as_ref());
        let u = lu.U();
        let pivots = (0..u.nrows()).map(|i| u[(i, i)]).collect();
        FaerLu { lu, pivots }
    }

    /// The diagonal of `U`. faer multiplies by the reciprocal of each pivot,
    /// so the entries after an exactly-zero pivot are NaN; the caller only
    /// reads up to the first zero.
    pub(crate) fn pivots(&self) -> &[f64] {
        &self.pivots
    }

    /// Whether `P` is an odd permutation: `n` minus its number of cycles.
    pub(crate) fn odd(&self) -> bool {
        let (forward, _) = self.lu.P().arrays();
        permutation_is_odd(forward)
    }

    pub(crate) fn solve(&self, rhs: &mut Matrix<f64>) {
        let mut b = to_mat(rhs);
        self.lu.solve_in_place(b.as_mut());
        copy_back(b.as_ref(), rhs);
    }

    pub(crate) fn solve_transpose(&self, rhs: &mut Matrix<f64>) {
        let mut b = to_mat(rhs);
        self.lu.solve_transpose_in_place(b.as_mut());
        copy_back(b.as_ref(), rhs);
    }

    /// `X B X` with `X = A⁻¹` given: one solve with faer's blocked
    /// triangular solves and one faer product, `4n³` flops.
    pub(crate) fn inverse_sandwich(&self, x: &Matrix<f64>, b: &Matrix<f64>) -> Matrix<f64> {
        let mut y = to_mat(b);
        self.lu.solve_in_place(y.as_mut());
        let product = &y * &to_mat(x);
        from_mat(product.as_ref())
    }

    /// `A⁻¹` from the factors: triangular inverses and one product, `≈ 4n³/3` flops.
    pub(crate) fn inverse(&self) -> Matrix<f64> {
        from_mat(self.lu.inverse().as_ref())
    }
}

/// Whether the permutation `i ↦ p[i]` is odd.
pub(crate) fn permutation_is_odd(p: &[usize]) -> bool {
    let mut seen = vec![false; p.len()];
    let mut cycles = 0;
    for start in 0..p.len() {
        if seen[start] {
            continue;
        }
        cycles += 1;
        let mut i = start;
        while !seen[i] {
            seen[i] = true;
            i = p[i];
        }
    }
    (p.len() - cycles) % 2 == 1
}

/// The full SVD `A = U Σ Vᵀ` as row-major matrices `(U, σ, V)`, or `None`
/// when faer's iteration does not converge (NaN input).
pub(crate) fn svd(a: &Matrix<f64>) -> Option<(Matrix<f64>, Vec<f64>, Matrix<f64>)> {
    let svd = Svd::new(to_mat(a).as_ref()).ok()?;
    let s = svd.S().column_vector();
    let sigma = (0..s.nrows()).map(|i| s[i]).collect();
    Some((from_mat(svd.U()), sigma, from_mat(svd.V())))
}

fn to_mat(a: &Matrix<f64>) -> Mat<f64> {
    Mat::from_fn(a.rows(), a.cols(), |i, j| a[(i, j)])
}

fn from_mat(a: MatRef<'_, f64>) -> Matrix<f64> {
    Matrix::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)])
}

fn copy_back(b: MatRef<'_, f64>, out: &mut Matrix<f64>) {
    for i in 0..out.rows() {
        for j in 0..out.cols() {
            out[(i, j)] = b[(i, j)];
        }
    }
}
