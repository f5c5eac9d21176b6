//! The generic dense linear algebra of [`spantree_core::linalg`] against
//! independent oracles: the exact fraction-free LU of `spantree-exact`
//! (Bareiss over the integers, a different algorithm), determinants by
//! cofactor expansion, and the adjugate by its definition
//! `adj(A)[i][j] = (−1)^{i+j} det A_(j,i)`.

use spantree_bruteforce::cofactor::adjugate_by_cofactors;
use spantree_bruteforce::random::SplitMix64;
use spantree_core::linalg::{bordered_adjugate, PartialPivLu};
use spantree_core::{Engine, Factorization, Matrix, Numerical, Scalar};
use spantree_exact::{Exact, Rational};

// ---------------------------------------------------------------- oracles

/// Norm-wise relative error `max |got − want| / max |want|` of an `f64`
/// matrix against an exact one, in exact arithmetic until the final ratio.
fn normwise_error(got: &Matrix<f64>, want: &Matrix<Rational>) -> f64 {
    let (mut num, mut den) = (0.0_f64, 0.0_f64);
    for (g, w) in got.as_slice().iter().zip(want.as_slice()) {
        num = num.max((Rational::from_f64(*g) - w.clone()).to_f64().abs());
        den = den.max(w.to_f64().abs());
    }
    num / den
}

// ---------------------------------------------------------------- exact scalars

/// A random integer matrix of the given rank (`≤ n`), rows shuffled.
fn rank_deficient(rng: &mut SplitMix64, n: usize, rank: usize) -> Matrix<Rational> {
    let mut rows: Vec<Vec<i64>> = (0..n)
        .map(|_| (0..n).map(|_| rng.below(11) as i64 - 5).collect())
        .collect();
    for r in rank..n {
        let mut combo = vec![0i64; n];
        for source in rows.iter().take(rank) {
            let c = rng.below(5) as i64 - 2;
            for (x, y) in combo.iter_mut().zip(source) {
                *x += c * y;
            }
        }
        rows[r] = combo;
    }
    for i in (1..n).rev() {
        rows.swap(i, rng.below(i + 1));
    }
    Matrix::from_fn(n, n, |i, j| Rational::from(rows[i][j]))
}

#[test]
fn generic_lu_on_rationals_matches_the_exact_backend() {
    // PartialPivLu<Rational> computes exactly: `==` everywhere, including
    // the bordered adjugate of rank n − 1 and the zero adjugate below.
    let mut rng = SplitMix64::new(0xf1);
    let mut ranks = [0usize; 3];
    for trial in 0..150 {
        let n = 1 + trial % 7;
        let rank = n - (trial % 3).min(n);
        let a = rank_deficient(&mut rng, n, rank);
        let lu = PartialPivLu::new(a.clone());
        let exact = Exact.lu(a.clone());
        assert_eq!(lu.rank(), exact.rank(), "trial {trial}");
        ranks[(n - lu.rank()).min(2)] += 1;
        assert_eq!(lu.det(), exact.det(), "trial {trial}");
        assert_eq!(lu.zero_pivot().is_some(), exact.zero_pivot().is_some());
        let adj = lu.adjugate();
        assert_eq!(adj, exact.adjugate(), "trial {trial}: {a:?}");
        if n <= 5 {
            assert_eq!(adj, adjugate_by_cofactors(&a), "trial {trial}: {a:?}");
        }
        if lu.rank() == n {
            let b = Matrix::from_fn(n, 2, |_, _| {
                Rational::new(rng.below(9) as i64, 1 + rng.below(6) as i64)
            });
            let (mut x, mut y) = (b.clone(), b.clone());
            lu.solve(&mut x).unwrap();
            lu.solve_transpose(&mut y).unwrap();
            let (mut x2, mut y2) = (b.clone(), b);
            exact.solve(&mut x2).unwrap();
            exact.solve_transpose(&mut y2).unwrap();
            assert_eq!((x, y), (x2, y2), "trial {trial}");
            assert_eq!(lu.ln_abs_det().0, exact.det().sign());
        } else {
            let err = lu.inverse().unwrap_err();
            assert_eq!(Some(err), exact.inverse().err());
        }
    }
    assert!(ranks.iter().all(|&k| k > 20), "{ranks:?}");
}

// ---------------------------------------------------------------- f64

#[test]
fn f64_lu_solves_and_determinants_against_exact_rationals() {
    let mut rng = SplitMix64::new(0x11);
    for n in [1, 2, 3, 6, 12, 25] {
        for _ in 0..4 {
            let a = Matrix::from_fn(n, n, |_, _| rng.normal());
            let b = Matrix::from_fn(n, 2, |_, _| rng.normal());
            let exact = Exact.lu(a.map(|&x| Rational::from_f64(x)));
            let lu = PartialPivLu::new(a);
            let (mut x, mut y) = (b.clone(), b.clone());
            lu.solve(&mut x).unwrap();
            lu.solve_transpose(&mut y).unwrap();
            let eb = b.map(|&v| Rational::from_f64(v));
            let (mut xe, mut ye) = (eb.clone(), eb);
            exact.solve(&mut xe).unwrap();
            exact.solve_transpose(&mut ye).unwrap();
            // rel 1e-11 norm-wise: backward error n ε |L||U| with small
            // growth, times the condition of seeded Gaussian matrices
            // (measured worst 2.8e-13, at n = 25).
            assert!(normwise_error(&x, &xe) < 1e-11, "n={n} solve");
            assert!(normwise_error(&y, &ye) < 1e-11, "n={n} solve_transpose");
            let det = exact.det();
            // rel 1e-11: the same bound for the product of the pivots
            // (measured worst 2.8e-13).
            let rel = ((Rational::from_f64(lu.det()) - det.clone()) / det.clone())
                .to_f64()
                .abs();
            assert!(rel < 1e-11, "n={n} det: {rel}");
            let (sign, ln) = lu.ln_abs_det();
            assert_eq!(sign, det.sign(), "n={n}");
            // 1e-11 absolute: ln of the pivots' product, whose relative
            // error is bounded just above.
            assert!((ln - det.ln_abs()).abs() < 1e-11, "n={n} ln|det|");
        }
    }
}

#[test]
fn bordered_adjugate_in_f64_matches_the_definition_at_rank_n_minus_1() {
    // Integer matrices are exact in f64; rounding happens only inside the
    // bordered LU. The border is the (row, column) pair whose cofactor is
    // largest, which keeps the bordered matrix well conditioned.
    let mut rng = SplitMix64::new(0x12);
    let mut checked = 0;
    for trial in 0..60 {
        let n = 2 + trial % 5;
        let a = rank_deficient(&mut rng, n, n - 1);
        let want = adjugate_by_cofactors(&a);
        let (mut c, mut r, mut best) = (0, 0, 0.0);
        for i in 0..n {
            for j in 0..n {
                let v = want[(i, j)].to_f64().abs();
                if v > best {
                    (c, r, best) = (i, j, v);
                }
            }
        }
        if best == 0.0 {
            continue; // rank below n − 1 after all: no border exists
        }
        let got = bordered_adjugate(&a.map(|x| x.to_f64()), r, c, PartialPivLu::new).unwrap();
        // rel 1e-13 norm-wise: one LU of an (n+1) ≤ 7 bordered matrix of
        // small integers (measured worst 3.1e-15).
        let e = normwise_error(&got, &want);
        assert!(e < 1e-13, "trial {trial}: {e}, {a:?}");
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} matrices of rank n − 1");
}

#[test]
fn bordered_adjugate_reports_a_singular_border() {
    // diag(1, 0) has rank 1 and adjugate diag(0, 1): deleting row 1 and
    // column 1 leaves [1] (a valid border); deleting row 0 and column 0
    // leaves [0], so the bordered matrix is singular.
    let a = Matrix::from_fn(2, 2, |i, j| Rational::from(u32::from(i == 0 && j == 0)));
    let factorize = |m| Exact.lu(m);
    let adj = bordered_adjugate(&a, 1, 1, factorize).unwrap();
    assert_eq!(adj, adjugate_by_cofactors(&a));
    assert!(matches!(
        bordered_adjugate(&a, 0, 0, factorize),
        Err(Numerical::Singular { .. })
    ));
    // The same through the generic LU on rationals.
    assert!(bordered_adjugate(&a, 0, 0, PartialPivLu::new).is_err());
}
