//! Oracles and generators shared by the integration tests. Nothing here calls
//! the crate under test: the definitions the tests compare against.

#![allow(dead_code)]

use spantree_core::Matrix;

/// The workspace's one seeded generator, so every failure reproduces.
pub use spantree_bruteforce::random::SplitMix64 as Rng;

/// A random `n × n` matrix with off-diagonal entries in `[-1, 1)` and
/// diagonal `±(n + 1)` (random sign): strictly diagonally dominant by rows
/// and columns, so `‖A⁻¹‖∞ ≤ 1/2`, `‖A‖∞ < 2n`, `κ∞(A) < n`, and tolerances can be
/// stated a priori. (Partial pivoting never swaps here: see [`random`].)
pub fn well_conditioned(n: usize, rng: &mut Rng) -> Matrix<f64> {
    let mut a = Matrix::from_fn(n, n, |_, _| rng.uniform_in(-1.0, 1.0));
    for i in 0..n {
        let sign = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
        a[(i, i)] = sign * (n as f64 + 1.0);
    }
    a
}

/// A random matrix with entries in `[-1, 1)`: partial pivoting swaps rows
/// on almost every step. Condition numbers are moderate (typically `< 10³`
/// for `n ≤ 100`), checked in the tests through residuals, not assumed.
pub fn random(n: usize, rng: &mut Rng) -> Matrix<f64> {
    Matrix::from_fn(n, n, |_, _| rng.uniform_in(-1.0, 1.0))
}

/// `A B`, the schoolbook triple loop.
pub fn mul(a: &Matrix<f64>, b: &Matrix<f64>) -> Matrix<f64> {
    assert_eq!(a.cols(), b.rows());
    Matrix::from_fn(a.rows(), b.cols(), |i, j| {
        (0..a.cols()).map(|k| a[(i, k)] * b[(k, j)]).sum()
    })
}

/// `max_ij |a_ij|`.
pub fn max_abs(a: &Matrix<f64>) -> f64 {
    a.as_slice().iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// `max_ij |a_ij − b_ij|`.
pub fn max_diff(a: &Matrix<f64>, b: &Matrix<f64>) -> f64 {
    assert_eq!((a.rows(), a.cols()), (b.rows(), b.cols()));
    a.as_slice()
        .iter()
        .zip(b.as_slice())
        .fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

/// The determinant by Laplace expansion along the first row: the
/// definition, `O(n!)`, exact for small integer matrices.
pub fn det_by_expansion(a: &Matrix<f64>) -> f64 {
    let n = a.rows();
    if n == 0 {
        return 1.0;
    }
    (0..n)
        .map(|j| {
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            sign * a[(0, j)] * det_by_expansion(&minor(a, 0, j))
        })
        .sum()
}

/// `A` without row `r` and column `c`.
pub fn minor(a: &Matrix<f64>, r: usize, c: usize) -> Matrix<f64> {
    let n = a.rows();
    Matrix::from_fn(n - 1, n - 1, |i, j| {
        a[(i + usize::from(i >= r), j + usize::from(j >= c))]
    })
}

/// `adj(A)[i][j] = (−1)^{i+j} det A_{(j,i)}`: the definition, by cofactors.
pub fn adjugate_by_cofactors(a: &Matrix<f64>) -> Matrix<f64> {
    let n = a.rows();
    Matrix::from_fn(n, n, |i, j| {
        let sign = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
        sign * det_by_expansion(&minor(a, j, i))
    })
}
