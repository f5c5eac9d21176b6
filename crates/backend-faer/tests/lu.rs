//! The `Lu` factorisation against independent oracles: hand-computed
//! determinants and inverses, the definition of the adjugate by cofactors,
//! the identities `A A⁻¹ = I`, `A adj A = det A · I`, `Aᵀ (A⁻ᵀ c) = c`, and
//! the plain and faer engines against each other (two implementations).

mod common;

use common::{
    adjugate_by_cofactors, det_by_expansion, max_abs, max_diff, mul, random, well_conditioned, Rng,
};
use spantree_core::{Factorization, Matrix, Numerical, Sign};
use spantree_faer::{Lu, LuKernel, CROSSOVER};

const ENGINES: [LuKernel; 2] = [LuKernel::Plain, LuKernel::Faer];
const EPS: f64 = f64::EPSILON;

fn m(rows: usize, data: &[f64]) -> Matrix<f64> {
    Matrix::from_row_major(rows, data.len() / rows, data.to_vec())
}

#[test]
fn engine_choice_follows_the_crossover() {
    assert_eq!(LuKernel::for_dim(1), LuKernel::Plain);
    assert_eq!(LuKernel::for_dim(CROSSOVER - 1), LuKernel::Plain);
    assert_eq!(LuKernel::for_dim(CROSSOVER), LuKernel::Faer);
    let mut rng = Rng::new(1);
    assert_eq!(Lu::new(random(3, &mut rng)).kernel(), LuKernel::Plain);
    assert_eq!(
        Lu::new(random(CROSSOVER, &mut rng)).kernel(),
        LuKernel::Faer
    );
}

#[test]
fn hand_computed_determinants() {
    for engine in ENGINES {
        // 2·5 − 1·4 = 6. Pivots 4 and 1 − ½·5 = −1.5, one swap: all exact in binary.
        let lu = Lu::with_kernel(m(2, &[2.0, 1.0, 4.0, 5.0]), engine);
        assert_eq!(lu.det(), 6.0, "{engine:?}");
        let (sign, ln) = lu.ln_abs_det();
        assert_eq!(sign, Sign::Positive);
        // ln 4 + ln 1.5 against ln 6: two roundings of ln and one of the sum.
        assert!((ln - 6f64.ln()).abs() < 4.0 * EPS * 6f64.ln(), "{engine:?}");

        // A permutation matrix: det −1, exactly, from the sign of the swap alone.
        let lu = Lu::with_kernel(m(2, &[0.0, 1.0, 1.0, 0.0]), engine);
        assert_eq!(lu.det(), -1.0);
        assert_eq!(lu.ln_abs_det(), (Sign::Negative, 0.0));
        assert_eq!(lu.zero_pivot(), None);

        // The textbook 3×3: 6(−14−40) − 1(28−10) + 1(32+4) = −306.
        let a = m(3, &[6.0, 1.0, 1.0, 4.0, -2.0, 5.0, 2.0, 8.0, 7.0]);
        assert_eq!(det_by_expansion(&a), -306.0);
        let lu = Lu::with_kernel(a, engine);
        // rel 1e-14: three pivots of a matrix with small integer entries,
        // each with a few roundings.
        assert!(
            (lu.det() + 306.0).abs() < 1e-14 * 306.0,
            "{engine:?}: {}",
            lu.det()
        );
        let (sign, ln) = lu.ln_abs_det();
        assert_eq!(sign, Sign::Negative);
        assert!((ln - 306f64.ln()).abs() < 1e-14 * 306f64.ln());
        assert_eq!(lu.dim(), 3);
    }
}

#[test]
fn hand_computed_inverse_and_solves() {
    for engine in ENGINES {
        // [[4, 7], [2, 6]]⁻¹ = [[6, −7], [−2, 4]] / 10.
        let lu = Lu::with_kernel(m(2, &[4.0, 7.0, 2.0, 6.0]), engine);
        let x = lu.inverse().unwrap();
        let expected = m(2, &[0.6, -0.7, -0.2, 0.4]);
        // 4 ulps of entries below 1: a 2×2 LU and triangular solves.
        assert!(max_diff(&x, &expected) < 4.0 * EPS, "{engine:?}: {x:?}");

        // A x = (11, 8) has x = (1, 1); Aᵀ y = (6, 13) has y = (1, 1).
        let mut b = m(2, &[11.0, 8.0]);
        lu.solve(&mut b).unwrap();
        assert!(
            max_diff(&b, &m(2, &[1.0, 1.0])) < 4.0 * EPS,
            "{engine:?}: {b:?}"
        );
        let mut c = m(2, &[6.0, 13.0]);
        lu.solve_transpose(&mut c).unwrap();
        assert!(
            max_diff(&c, &m(2, &[1.0, 1.0])) < 4.0 * EPS,
            "{engine:?}: {c:?}"
        );

        // adj = [[6, −7], [−2, 4]].
        let adj = lu.adjugate();
        assert!(max_diff(&adj, &m(2, &[6.0, -7.0, -2.0, 4.0])) < 16.0 * EPS);
    }
}

#[test]
fn one_by_one() {
    for engine in ENGINES {
        let lu = Lu::with_kernel(m(1, &[-2.5]), engine);
        assert_eq!(lu.det(), -2.5);
        assert_eq!(lu.ln_abs_det(), (Sign::Negative, 2.5f64.ln()));
        assert_eq!(lu.inverse().unwrap(), m(1, &[-0.4]));
        // adj of a 1×1 matrix is [1] by definition (empty minor), even for [0].
        assert_eq!(lu.adjugate(), m(1, &[1.0]));
        let zero = Lu::with_kernel(m(1, &[0.0]), engine);
        assert_eq!(zero.zero_pivot(), Some(0));
        assert_eq!(zero.adjugate(), m(1, &[1.0]));
        assert_eq!(zero.ln_abs_det(), (Sign::Zero, f64::NEG_INFINITY));
    }
}

#[test]
fn identities_on_random_matrices() {
    let mut rng = Rng::new(0x0dd_ba11);
    for n in [2, 3, 5, 8, 17, 40, 64, 100] {
        for engine in ENGINES {
            for a in [well_conditioned(n, &mut rng), random(n, &mut rng)] {
                let lu = Lu::with_kernel(a.clone(), engine);
                let x = lu.inverse().unwrap();
                // Backward stability of LU: |A X − I| ≲ n ε |A| |X| entrywise,
                // times a small growth factor; 8 n ε max|A| max|X| · n covers
                // the inner products of length n.
                let scale = 8.0 * (n * n) as f64 * EPS * max_abs(&a) * max_abs(&x);
                let r = max_diff(&mul(&a, &x), &Matrix::identity(n));
                assert!(
                    r < scale,
                    "A A⁻¹ ≠ I: n={n} {engine:?} residual {r:e} > {scale:e}"
                );

                // A · adj A = det A · I, compared relative to |det| (same bound
                // as above, scaled by det).
                let det = lu.det();
                let adj = lu.adjugate();
                let target = Matrix::from_fn(n, n, |i, j| if i == j { det } else { 0.0 });
                let r = max_diff(&mul(&a, &adj), &target);
                assert!(
                    r < 2.0 * scale * det.abs(),
                    "A adj A: n={n} {engine:?} {r:e}"
                );

                // Solves: residuals of A u = b and Aᵀ v = c, and the duality
                // cᵀ (A⁻¹ b) = (A⁻ᵀ c)ᵀ b.
                let b = Matrix::from_fn(n, 2, |_, _| rng.uniform_in(-1.0, 1.0));
                let c = Matrix::from_fn(n, 2, |_, _| rng.uniform_in(-1.0, 1.0));
                let mut u = b.clone();
                lu.solve(&mut u).unwrap();
                let mut v = c.clone();
                lu.solve_transpose(&mut v).unwrap();
                let bound = 8.0 * (n * n) as f64 * EPS * max_abs(&a) * max_abs(&u).max(max_abs(&v));
                assert!(
                    max_diff(&mul(&a, &u), &b) < bound,
                    "A u = b: n={n} {engine:?}"
                );
                assert!(
                    max_diff(&mul(&a.transpose(), &v), &c) < bound,
                    "Aᵀ v = c: n={n} {engine:?}"
                );
                let lhs = mul(&c.transpose(), &u);
                let rhs = mul(&v.transpose(), &b);
                let size = max_abs(&lhs).max(1.0);
                // Both sides are inner products of length n of solutions with
                // the bound above: n times that bound relative to their size.
                assert!(
                    max_diff(&lhs, &rhs) < n as f64 * bound * size,
                    "solve vs solve_transpose: n={n} {engine:?}"
                );
            }
        }
    }
}

#[test]
fn plain_and_faer_engines_agree() {
    let mut rng = Rng::new(42);
    for n in [3, 9, 31, 48, 70] {
        for a in [well_conditioned(n, &mut rng), random(n, &mut rng)] {
            let p = Lu::with_kernel(a.clone(), LuKernel::Plain);
            let f = Lu::with_kernel(a, LuKernel::Faer);
            // Same pivoting rule (largest magnitude, first on ties), so the
            // same permutation and pivots up to rounding; the products differ
            // only through blocking order. rel 1e-10: n ≤ 70 steps with
            // κ ≲ 10³ on the random matrices.
            let (sp, lp) = p.ln_abs_det();
            let (sf, lf) = f.ln_abs_det();
            assert_eq!(sp, sf, "n={n}");
            assert!(
                (lp - lf).abs() < 1e-10 * lp.abs().max(1.0),
                "n={n}: {lp} vs {lf}"
            );
            let (xp, xf) = (p.inverse().unwrap(), f.inverse().unwrap());
            assert!(max_diff(&xp, &xf) < 1e-10 * max_abs(&xp), "inverse n={n}");
            let (ap, af) = (p.adjugate(), f.adjugate());
            assert!(max_diff(&ap, &af) < 1e-10 * max_abs(&ap), "adjugate n={n}");
            let b = Matrix::from_fn(n, 3, |_, _| rng.uniform_in(-1.0, 1.0));
            let (mut up, mut uf) = (b.clone(), b.clone());
            p.solve(&mut up).unwrap();
            f.solve(&mut uf).unwrap();
            assert!(max_diff(&up, &uf) < 1e-10 * max_abs(&up), "solve n={n}");
            let (mut vp, mut vf) = (b.clone(), b);
            p.solve_transpose(&mut vp).unwrap();
            f.solve_transpose(&mut vf).unwrap();
            assert!(
                max_diff(&vp, &vf) < 1e-10 * max_abs(&vp),
                "solve_transpose n={n}"
            );
        }
    }
}

#[test]
fn exactly_singular_matrices_are_reported() {
    for engine in ENGINES {
        // Second row twice the first: pivot 2, then 2 − ½·4 = 0 exactly.
        let lu = Lu::with_kernel(m(2, &[1.0, 2.0, 2.0, 4.0]), engine);
        assert_eq!(lu.zero_pivot(), Some(1), "{engine:?}");
        assert_eq!(lu.det(), 0.0);
        assert_eq!(lu.ln_abs_det(), (Sign::Zero, f64::NEG_INFINITY));
        let mut b = m(2, &[1.0, 1.0]);
        assert_eq!(lu.solve(&mut b), Err(Numerical::Singular { pivot: 1 }));
        assert_eq!(
            lu.solve_transpose(&mut b),
            Err(Numerical::Singular { pivot: 1 })
        );
        assert_eq!(lu.inverse(), Err(Numerical::Singular { pivot: 1 }));

        // A zero first column: the first step already fails.
        let lu = Lu::with_kernel(m(3, &[0.0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 5.0, 7.0]), engine);
        assert_eq!(lu.zero_pivot(), Some(0), "{engine:?}");
        assert_eq!(lu.inverse(), Err(Numerical::Singular { pivot: 0 }));
    }
}

/// `adj A` of singular matrices against the cofactor definition, computed
/// here by Laplace expansion. The entries are small integers, so the oracle
/// is exact; the backend goes through the SVD.
#[test]
fn adjugate_of_singular_matrices_matches_cofactors() {
    let cases = [
        // Rank 1, 2×2: adj = [[4, −2], [−2, 1]] (exact zero pivot).
        m(2, &[1.0, 2.0, 2.0, 4.0]),
        // Rank 2, the classic 1..9: adj = [[−3, 6, −3], [6, −12, 6], [−3, 6, −3]];
        // in floating point the last pivot is tiny, not zero.
        m(3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        // A zero column (an isolated word's Laplacian column): rank 2.
        m(3, &[2.0, 0.0, -1.0, -1.0, 0.0, 3.0, -1.0, 0.0, -2.0]),
        // The root-free Laplacian of a 4-node graph: columns sum to zero, so
        // rank 3, and by the matrix-tree theorem every cofactor counts
        // spanning arborescences.
        m(
            4,
            &[
                3.0, -1.0, -2.0, 0.0, //
                -1.0, 4.0, -1.0, -3.0, //
                -2.0, -1.0, 5.0, -1.0, //
                0.0, -2.0, -2.0, 4.0,
            ],
        ),
        // Rank 2 in 4×4 (two repeated rows): adj = 0.
        m(
            4,
            &[
                1.0, 2.0, 0.0, 1.0, //
                1.0, 2.0, 0.0, 1.0, //
                0.0, 1.0, 3.0, 1.0, //
                0.0, 1.0, 3.0, 1.0,
            ],
        ),
    ];
    for a in cases {
        let n = a.rows();
        let expected = adjugate_by_cofactors(&a);
        let norm_a = max_abs(&a);
        for engine in ENGINES {
            let adj = Lu::with_kernel(a.clone(), engine).adjugate();
            // The SVD route is backward stable: error ≲ c n ε ‖A‖ ‖∂adj/∂A‖,
            // and ‖∂adj/∂A‖ ≤ n ‖A‖^{n−2} here (σ_{n−1} is not small for these
            // matrices). 1e-13 · ‖A‖^{n−1} is that with c n ≈ 450.
            let tol = 1e-13 * norm_a.powi(n as i32 - 1);
            let err = max_diff(&adj, &expected);
            assert!(
                err < tol,
                "{engine:?} n={n}: {adj:?} vs {expected:?} ({err:e})"
            );
            // And the identity A · adj A = 0 for singular A.
            assert!(max_abs(&mul(&a, &adj)) < tol * norm_a * n as f64);
        }
    }
}

#[test]
fn determinants_beyond_f64_range() {
    for engine in ENGINES {
        // det = 1e1200 overflows; ln|det| = 4 ln 1e300 does not. rel 4ε: four
        // logarithms (each correctly rounded to within an ulp) and three additions.
        let lu = Lu::with_kernel(
            Matrix::from_fn(4, 4, |i, j| if i == j { 1e300 } else { 0.0 }),
            engine,
        );
        let (sign, ln) = lu.ln_abs_det();
        assert_eq!(sign, Sign::Positive);
        let expected = 4.0 * 1e300f64.ln();
        assert!(
            (ln - expected).abs() < 4.0 * EPS * expected,
            "{engine:?}: {ln}"
        );
        assert_eq!(lu.det(), f64::INFINITY);

        // The running product passes 1e600 but the determinant is ≈ 1: the
        // product of the four f64 values, 4 roundings of the decimal inputs
        // plus 4 of the product, rel 1e-15.
        let d = [1e300, -1e300, 1e-300, 1e-300];
        let lu = Lu::with_kernel(
            Matrix::from_fn(4, 4, |i, j| if i == j { d[i] } else { 0.0 }),
            engine,
        );
        assert!((lu.det() + 1.0).abs() < 1e-15, "{engine:?}: {}", lu.det());
        assert_eq!(lu.ln_abs_det().0, Sign::Negative);

        // det = 1e-400 underflows to 0 without being singular: no zero pivot,
        // a finite log, and an adjugate diag(1e-200, 1e-200) that does not
        // underflow (det · A⁻¹ with det kept apart from its exponent).
        let lu = Lu::with_kernel(m(2, &[1e-200, 0.0, 0.0, 1e-200]), engine);
        assert_eq!(lu.zero_pivot(), None);
        assert_eq!(lu.det(), 0.0);
        let expected = 2.0 * 1e-200f64.ln();
        assert!((lu.ln_abs_det().1 - expected).abs() < 4.0 * EPS * expected.abs());
        let adj = lu.adjugate();
        // rel 4ε: one reciprocal and one product per entry.
        assert!(
            (adj[(0, 0)] / 1e-200 - 1.0).abs() < 4.0 * EPS,
            "{engine:?}: {adj:?}"
        );
        assert_eq!(adj[(0, 1)], 0.0);

        // adj diag(1e300, 1e300, 1e-10) = diag(1e290, 1e290, 1e600): the
        // first two entries are finite although det = 1e590 overflows.
        let d = [1e300, 1e300, 1e-10];
        let lu = Lu::with_kernel(
            Matrix::from_fn(3, 3, |i, j| if i == j { d[i] } else { 0.0 }),
            engine,
        );
        let adj = lu.adjugate();
        assert!(
            (adj[(0, 0)] / 1e290 - 1.0).abs() < 8.0 * EPS,
            "{engine:?}: {adj:?}"
        );
        assert!((adj[(1, 1)] / 1e290 - 1.0).abs() < 8.0 * EPS);
        assert_eq!(adj[(2, 2)], f64::INFINITY);
    }
}

#[test]
fn nan_pivots_give_a_nan_log() {
    for engine in ENGINES {
        let lu = Lu::with_kernel(m(2, &[f64::NAN, 1.0, 1.0, 1.0]), engine);
        let (_, ln) = lu.ln_abs_det();
        assert!(ln.is_nan(), "{engine:?}: {ln}");
        assert!(lu.det().is_nan());
    }
}
