//! The plain LU's SIMD kernels (blocked factorisation, inverse
//! `U⁻¹ L⁻¹ P`, solves, `X B X`) at every size from 1 to 70, so that every
//! remainder of every vector width and every panel boundary is hit, against
//! residual identities with stated bounds and exact rational determinants.

#[allow(unused_imports)] // the shared oracles this file does not need
mod common;

use common::{max_abs, max_diff, mul, random, well_conditioned, Rng};
use spantree_core::{Engine, Factorization, Matrix, Numerical, Scalar, Sign};
use spantree_exact::{Exact, Rational};
use spantree_faer::{Lu, LuKernel};

const EPS: f64 = f64::EPSILON;

/// A random matrix with about a third of its entries exactly zero (the
/// kernels skip all-zero coefficient sets: sparse Laplacians).
fn sparse(n: usize, rng: &mut Rng) -> Matrix<f64> {
    let mut a = Matrix::from_fn(n, n, |_, _| {
        if rng.uniform() < 0.35 {
            0.0
        } else {
            rng.uniform_in(-1.0, 1.0)
        }
    });
    for i in 0..n {
        a[(i, i)] += 2.0;
    }
    a
}

/// Backward stability of LU with partial pivoting: residuals of order
/// `n ε ‖A‖ ‖X‖` times a growth factor that is small on these matrices;
/// `8 n² ε max|A| max|X|` covers the inner products of length `n` and
/// the max-norm conversions.
fn bound(n: usize, a: &Matrix<f64>, x: &Matrix<f64>) -> f64 {
    8.0 * (n * n) as f64 * EPS * max_abs(a) * max_abs(x)
}

fn check_residuals(a: &Matrix<f64>, rng: &mut Rng) {
    let n = a.rows();
    let lu = Lu::with_kernel(a.clone(), LuKernel::Plain);
    let x = lu.inverse().expect("nonsingular");
    let r = max_diff(&mul(a, &x), &Matrix::identity(n));
    assert!(r <= bound(n, a, &x), "A A⁻¹ − I: n = {n}, residual {r:e}");
    let r = max_diff(&mul(&x, a), &Matrix::identity(n));
    assert!(r <= bound(n, a, &x), "A⁻¹ A − I: n = {n}, residual {r:e}");
    // k = 8 and 16: whole vectors, the blocked transposed solve.
    for k in [1, 5, 8, 16, n + 3] {
        let b = Matrix::from_fn(n, k, |_, _| rng.uniform_in(-1.0, 1.0));
        let mut u = b.clone();
        lu.solve(&mut u).expect("nonsingular");
        let r = max_diff(&mul(a, &u), &b);
        assert!(r <= bound(n, a, &u), "A U = B: n = {n}, k = {k}, {r:e}");
        let mut v = b.clone();
        lu.solve_transpose(&mut v).expect("nonsingular");
        let r = max_diff(&mul(&a.transpose(), &v), &b);
        assert!(r <= bound(n, a, &v), "Aᵀ V = B: n = {n}, k = {k}, {r:e}");
    }
    // X B X with X = A⁻¹: A (X B X) A = B, to the bound of two solves
    // around a product, relative to max|B| max|X|² max|A|².
    let b = Matrix::from_fn(n, n, |_, _| rng.uniform_in(-1.0, 1.0));
    let y = lu.inverse_sandwich(&x, b.clone()).expect("nonsingular");
    let back = mul(&mul(a, &y), a);
    let r = max_diff(&back, &b);
    let tol = 4.0 * bound(n, a, &x) * max_abs(a) * max_abs(&x) * (n as f64);
    assert!(r <= tol, "A (X B X) A = B: n = {n}, {r:e} > {tol:e}");
}

/// Every `n` from 1 to 70 on the plain kernel (forced past the crossover),
/// random (pivoting swaps on most steps), diagonally dominant (no swaps)
/// and sparse matrices.
#[test]
fn residuals_at_every_size() {
    let mut rng = Rng::new(0x5eed_0013);
    for n in 1..=70 {
        for a in [
            random(n, &mut rng),
            well_conditioned(n, &mut rng),
            sparse(n, &mut rng),
        ] {
            check_residuals(&a, &mut rng);
        }
    }
}

/// `(sign, ln |det A|)` against the exact determinant of the same `f64`
/// entries in rationals. rel 1e-11 of `max(1, |ln det|)`: the LU's
/// backward error `≈ n² ε` on matrices of condition `≲ 10³` (random) or
/// `< n` (diagonally dominant); the sign is exact (it is the parity of the
/// pivoting and the signs of the pivots).
#[test]
fn determinants_match_exact_rationals() {
    let mut rng = Rng::new(77);
    for n in (1..=40).step_by(3) {
        for a in [random(n, &mut rng), well_conditioned(n, &mut rng)] {
            let exact = Exact.lu(a.map(|&x| Rational::from_f64(x)));
            let (se, le) = exact.ln_abs_det();
            let (s, l) = Lu::with_kernel(a, LuKernel::Plain).ln_abs_det();
            assert_eq!(s, se, "sign, n = {n}");
            assert!(
                (l - le).abs() <= 1e-11 * le.abs().max(1.0),
                "n = {n}: {l} vs {le}"
            );
        }
    }
}

/// A zero column at `k` makes pivot `k` exactly zero (every update of that
/// column multiplies a zero), whatever the panel: before, on and after the
/// panel boundaries. The step is skipped, the factorisation goes on, and
/// every solve reports it.
#[test]
fn zero_columns_give_singular_pivots_across_panels() {
    let mut rng = Rng::new(3);
    for n in [9, 17, 33, 64] {
        for k in [0, 1, 7, 8, 9, 15, 16, n - 1]
            .into_iter()
            .filter(|&k| k < n)
        {
            let mut a = random(n, &mut rng);
            for i in 0..n {
                a[(i, k)] = 0.0;
            }
            let lu = Lu::with_kernel(a, LuKernel::Plain);
            assert_eq!(lu.zero_pivot(), Some(k), "n = {n}, column {k}");
            assert_eq!(lu.ln_abs_det(), (Sign::Zero, f64::NEG_INFINITY));
            assert_eq!(lu.inverse(), Err(Numerical::Singular { pivot: k }));
            let mut b = Matrix::zeros(n, 2);
            assert_eq!(lu.solve(&mut b), Err(Numerical::Singular { pivot: k }));
        }
    }
}
