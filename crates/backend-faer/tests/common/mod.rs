//! Oracles and generators shared by the integration tests. Nothing here calls
//! the crate under test: the definitions the tests compare against.

#![allow(dead_code)]

pub use spantree_bruteforce::cofactor::{adjugate_by_cofactors, det_by_expansion};
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
