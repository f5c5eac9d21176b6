//! [`stable_adjugate`] (column-pivoted QR, Stewart 1998) against the exact
//! rational adjugate of the same `f64` matrix, on random, exactly singular
//! (rank `n − 1`) and badly scaled matrices.

use spantree_bruteforce::random::SplitMix64;
use spantree_core::{Engine, Factorization, Matrix, Scalar};
use spantree_exact::{Exact, Rational};
use spantree_faer::stable_adjugate;

/// Norm-wise relative error of `a` against the exact adjugate of `m`.
fn error(m: &Matrix<f64>, a: &Matrix<f64>) -> f64 {
    let exact = Exact.lu(m.map(|&x| Rational::from_f64(x))).adjugate();
    let (mut num, mut den) = (0.0_f64, 0.0_f64);
    for (x, e) in a.as_slice().iter().zip(exact.as_slice()) {
        num = num.max((Rational::from_f64(*x) - e.clone()).to_f64().abs());
        den = den.max(e.to_f64().abs());
    }
    num / den
}

#[test]
fn matches_exact_adjugate_on_random_and_singular_matrices() {
    let mut rng = SplitMix64::new(3);
    for n in [2, 3, 5, 9] {
        let m = Matrix::from_fn(n, n, |_, _| rng.normal());
        // rel 1e-13: a few QR roundings, condition < 1e3 for these sizes.
        assert!(error(&m, &stable_adjugate(&m)) < 1e-13, "random n = {n}");
        // Rank n − 1 (almost surely): last column the sum of the others,
        // exact in f64 for multiples of 1/8; adj ≠ 0.
        let mut s = Matrix::from_fn(n, n, |_, _| (rng.normal() * 64.0).round() / 8.0);
        for i in 0..n {
            s[(i, n - 1)] = (0..n - 1).map(|l| s[(i, l)]).sum();
        }
        let e = error(&s, &stable_adjugate(&s));
        assert!(e < 1e-13, "singular n = {n}: {e}");
    }
}

#[test]
fn large_determinants_and_n_1() {
    // diag(1e200, 1e200, 1e-100): det R₁ = 1e400 overflows f64 on the
    // way, the adjugate diag(1e100, 1e100, 1e400 → ∞) only where it must.
    let m = Matrix::from_fn(3, 3, |i, j| match (i, j) {
        (0, 0) | (1, 1) => 1e200,
        (2, 2) => 1e-100,
        _ => 0.0,
    });
    let a = stable_adjugate(&m);
    assert!((a[(0, 0)] / 1e100 - 1.0).abs() < 1e-14);
    assert!(a[(2, 2)].is_infinite());
    assert_eq!(
        stable_adjugate(&Matrix::from_row_major(1, 1, vec![0.0]))[(0, 0)],
        1.0
    );
}
