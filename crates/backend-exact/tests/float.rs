//! [`HighPrecision`] and [`BigFloat`] against independent oracles:
//! tree enumeration carried out in 256-bit floats (`n ≤ 5`), the exact
//! rational backend (`n = 10–20`), and, the other way round, `f64` results
//! measured against the 256-bit reference (`n = 10, 30`).
//!
//! Unit of the tolerances: one rounding at 256 bits is `2^−256 ≈ 8.6e−78`.

use spantree_bruteforce::random::{self, SplitMix64};
use spantree_bruteforce::{marginals, partition, trees};
use spantree_core::{
    Engine, Factorization, FromScore, Graph, Matrix, Model, Rooting, Scalar, Sign, Transcendental,
};
use spantree_exact::{BigFloat, Exact, HighPrecision, PartialPivLu, Rational};
use spantree_faer::ShiftedF64;

type F = BigFloat<256>;
const HP: HighPrecision<256> = HighPrecision;

fn f(x: f64) -> F {
    F::from_f64(x)
}

/// `|a − b|` as an `f64`.
fn diff(a: &F, b: &F) -> f64 {
    (a.clone() - b).abs().to_f64()
}

/// `|a − b| / max(1, |b|)` as an `f64`.
fn rel1(a: &F, b: &F) -> f64 {
    diff(a, b) / b.abs().to_f64().max(1.0)
}

/// `|a − b| / |b|` as an `f64`.
fn rel(a: &F, b: &F) -> f64 {
    diff(a, b) / b.abs().to_f64()
}

fn weight_graph(w: &Matrix<f64>) -> Graph {
    Graph::from_weights(&random::rows(w)).expect("generated weights are valid")
}

fn score_graph(s: &Matrix<f64>) -> Graph {
    Graph::from_scores(&random::rows(s)).expect("generated scores are valid")
}

/// The weights of scores at 256 bits, `e^θ` rounded once (`0` for `−∞`):
/// what the oracle enumerates for a score graph.
fn exp_weights(scores: &Matrix<f64>) -> Matrix<F> {
    scores.map(|&s| {
        if s == f64::NEG_INFINITY {
            F::zero()
        } else {
            f(s).exp()
        }
    })
}

/// The enumeration oracle at 256 bits: `(Z, μ, H, [Σ_d w(d)^α for α in alphas])`.
fn oracle(w: &Matrix<F>, rooting: Rooting, alphas: &[f64]) -> Option<(F, Matrix<F>, F, Vec<F>)> {
    let z = partition(w, rooting);
    if z.is_zero() {
        return None;
    }
    let mu = marginals(w, rooting).expect("Z > 0");
    let mut entropy = F::zero();
    let mut powered = vec![F::zero(); alphas.len()];
    for tree in trees(w, rooting) {
        let wd = tree.weight(w);
        let p = wd.clone() / z.clone();
        entropy -= p.clone() * p.ln();
        let ln_wd = wd.ln();
        for (sum, &alpha) in powered.iter_mut().zip(alphas) {
            // w(d)^α = e^{α ln w(d)}; α = 0 counts the trees of the support.
            *sum += (f(alpha) * ln_wd.clone()).exp();
        }
    }
    Some((z, mu, entropy, powered))
}

// ------------------------------------------------------------- scalar

#[test]
fn operations_keep_the_precision() {
    let a = f(1.0) / f(3.0);
    assert_eq!(a.0.prec(), 256);
    // A foreign-precision left operand is brought back to 256 bits.
    let low = BigFloat::<256>(rug::Float::with_val(20, 1.0));
    for x in [
        low.clone() + a.clone(),
        low.clone() - &a,
        &low * &a,
        low.clone() / a.clone(),
        -low.clone(),
        -&low,
        a.ln(),
        a.exp(),
        F::zero(),
        F::one(),
    ] {
        assert_eq!(x.0.prec(), 256, "{x}");
    }
    let mut y = low;
    y /= &f(3.0);
    assert_eq!(y.0.prec(), 256);
    // 1/3 at 256 bits, not at 20: 3y − 1 is a few ulps of 2^−256.
    assert!(diff(&(y * f(3.0)), &F::one()) < 1e-76);
}

#[test]
fn conversions_are_exact_or_nearest() {
    // Every f64 is exact at 256 bits: compare with the exact rational.
    for x in [0.1, -1e-300, 5e-324, 1.7976931348623157e308, 1.0 / 3.0] {
        let exact = Rational::from_f64(x);
        assert_eq!(f(x), F::from(&exact), "{x}");
        assert_eq!(f(x).to_f64(), x);
    }
    // 1/3 and 2/3 at 256 bits round to the nearest f64.
    assert_eq!(F::from(&Rational::new(1, 3)).to_f64(), 1.0 / 3.0);
    assert_eq!(F::from(&Rational::new(2, 3)).to_f64(), 2.0 / 3.0);
    assert_eq!(f(-2.0).sign(), Sign::Negative);
    assert_eq!(F::zero().sign(), Sign::Zero);
    assert!(F::zero().is_zero() && !f(1e-300).is_zero());
    assert!(f(1.5).to_string().starts_with("1.500000000"), "{}", f(1.5));
}

#[test]
fn ln_abs_never_overflows_and_transcendentals_are_precise() {
    // e^{1e6} is far beyond f64 but inside MPFR's exponent range.
    let big = f(1e6).exp();
    assert!(big.is_finite() && big.to_f64() == f64::INFINITY);
    // 1e-14 relative: ln|x| is correctly rounded to 53 bits.
    assert!((big.ln_abs() - 1e6).abs() <= 1e6 * 1e-15);
    assert!(((-big).ln_abs() - 1e6).abs() <= 1e6 * 1e-15);
    assert!((f(-1e6).exp().ln_abs() + 1e6).abs() <= 1e6 * 1e-15);
    assert_eq!(F::zero().ln_abs(), f64::NEG_INFINITY);
    // Near 1, ln_abs keeps its relative accuracy: ln(1 + 2^−60) = 2^−60 − ….
    let near_one = f(1.0) + f(2f64.powi(-60));
    assert_eq!(near_one.ln_abs(), 2f64.powi(-60));
    // exp(ln 10) = 10 and ln(e) = 1 to a few ulps of 2^−256 (rel 1e-75).
    assert!(rel(&f(10.0).ln().exp(), &f(10.0)) < 1e-75);
    assert!(rel(&F::one().exp().ln(), &F::one()) < 1e-75);
    assert!(!f(f64::INFINITY).is_finite());
}

#[test]
fn from_score_is_exp_at_full_precision() {
    for theta in [-700.5, -1.0, 0.1, 3.0, 800.0, 1e4] {
        let w = BigFloat::<256>::from_score(theta).expect("finite");
        // 1e-75: e^θ correctly rounded (rel 2^−256), against exp(θ) recomputed
        // at 512 bits.
        let wide = BigFloat::<512>::from_f64(theta).exp();
        let w_wide = BigFloat::<512>::from(w.0.clone());
        assert!(
            ((w_wide.clone() - &wide) / wide).abs().to_f64() < 1e-75,
            "θ = {theta}"
        );
    }
    // Only a score past MPFR's range (≈ 7.4e8) is refused.
    assert!(BigFloat::<256>::from_score(1e10).is_none());
    assert_eq!(HP.name(), "float<256>");
    assert_eq!(HighPrecision::<100>.name(), "float");
    // Scores of 800 are no overflow at 256 bits: ln Z is the exact sum.
    let s = 800.0;
    let ninf = f64::NEG_INFINITY;
    let g = Graph::from_scores(&[[ninf, s, s], [ninf, ninf, s], [ninf, s, ninf]]).unwrap();
    let log_z = Model::new(HP, &g, Rooting::Multi)
        .unwrap()
        .log_partition()
        .unwrap();
    // 3 multi-root trees of score 1600 each; 1e-12: ln Z rounded to f64.
    assert!((log_z - (1600.0 + 3f64.ln())).abs() < 1e-12);
}

// ------------------------------------------------------------- LU

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
        assert_eq!(lu.adjugate(), exact.adjugate(), "trial {trial}: {a:?}");
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

fn to_big(a: &Matrix<Rational>) -> Matrix<F> {
    a.map(|x| F::from(x))
}

#[test]
fn big_float_lu_solves_against_exact_rationals() {
    let mut rng = SplitMix64::new(0xf2);
    for n in [1, 2, 5, 12, 25] {
        let a = Matrix::from_fn(n, n, |_, _| Rational::from_f64(rng.normal()));
        let exact = Exact.lu(a.clone());
        let lu = HP.lu(to_big(&a));
        let b = Matrix::from_fn(n, 3, |_, _| Rational::from_f64(rng.normal()));
        let (mut x, mut y, mut xe, mut ye) = (to_big(&b), to_big(&b), b.clone(), b);
        lu.solve(&mut x).unwrap();
        lu.solve_transpose(&mut y).unwrap();
        exact.solve(&mut xe).unwrap();
        exact.solve_transpose(&mut ye).unwrap();
        let inv = lu.inverse().unwrap();
        let adj = lu.adjugate();
        let (inv_e, adj_e) = (exact.inverse().unwrap(), exact.adjugate());
        // 1e-65 relative to the largest entry: 256-bit LU, n ≤ 25, random
        // Gaussian matrices have condition numbers below 1e6 (seeded).
        let close = |got: &Matrix<F>, want: &Matrix<Rational>, what: &str| {
            let want = to_big(want);
            let scale = want
                .as_slice()
                .iter()
                .map(|v| v.abs().to_f64())
                .fold(0.0, f64::max);
            for (g, w) in got.as_slice().iter().zip(want.as_slice()) {
                assert!(diff(g, w) <= 1e-65 * scale, "n={n} {what}: {g} vs {w}");
            }
        };
        close(&x, &xe, "solve");
        close(&y, &ye, "solve_transpose");
        close(&inv, &inv_e, "inverse");
        close(&adj, &adj_e, "adjugate");
        assert!(rel(&lu.det(), &F::from(&exact.det())) < 1e-65, "n={n} det");
        let (sign, ln) = lu.ln_abs_det();
        assert_eq!(sign, exact.det().sign());
        // 1e-13 absolute: a sum of n ≤ 25 logarithms rounded to f64.
        assert!((ln - exact.det().ln_abs()).abs() < 1e-13, "n={n} ln|det|");
    }
}

#[test]
fn structurally_singular_laplacians_have_the_exact_adjugate() {
    // A word with no arc in: its Laplacian column is exactly zero, so the
    // elimination finds no pivot there (rank n − 1, bordered adjugate); two
    // such words: rank n − 2, adjugate 0. Both compared with exact rationals.
    let mut rng = SplitMix64::new(0xf3);
    for n in [2, 4, 7, 12] {
        for isolated in [1, 2] {
            if isolated > n {
                continue;
            }
            let mut w = random::normal_weights(&mut rng, n, 1.0, 0.0);
            for m in 1..=isolated {
                for h in 0..=n {
                    w[(h, m)] = 0.0;
                }
            }
            for rooting in Rooting::ALL {
                let g = weight_graph(&w);
                let exact = Model::new(Exact, &g, rooting)
                    .unwrap()
                    .grad_partition()
                    .unwrap();
                let big = Model::new(HP, &g, rooting)
                    .unwrap()
                    .grad_partition()
                    .unwrap();
                let ctx = format!("n={n} isolated={isolated} {}", rooting.name());
                let scale = exact
                    .as_slice()
                    .iter()
                    .map(|v| v.to_f64().abs())
                    .fold(0.0, f64::max);
                if isolated == 2 || n == 1 {
                    assert_eq!(scale, 0.0, "{ctx}");
                }
                for (g, e) in big.as_slice().iter().zip(exact.as_slice()) {
                    // 1e-65 of the largest entry: one 256-bit LU of the
                    // bordered matrix, n ≤ 13.
                    assert!(diff(g, &F::from(e)) <= 1e-65 * scale, "{ctx}: {g} vs {e}");
                }
            }
        }
    }
}

// ------------------------------------------------------------- brute force

#[test]
fn z_marginals_entropy_and_renyi_match_enumeration_at_256_bits() {
    let mut checked = 0;
    for n in 1..=5 {
        for seed in 0..4u64 {
            let mut rng = SplitMix64::new(0xb0 + 10 * n as u64 + seed);
            // Weight graphs: the weights enter exactly. Score graphs: both
            // sides take e^θ at 256 bits, and α θ is exact in f64 for
            // α ∈ {0, 1/2, 2}, so Rényi's powered graph is exact too.
            let w = random::normal_weights(&mut rng, n, 1.0, 0.2);
            let s = random::normal_scores(&mut rng, n, 2.0, 0.2);
            let cases = [
                ("weights", weight_graph(&w), w.map(|&x| f(x))),
                ("scores", score_graph(&s), exp_weights(&s)),
            ];
            for (kind, graph, weights) in cases {
                for rooting in Rooting::ALL {
                    let ctx = format!("{kind} {} n={n} seed={seed}", rooting.name());
                    let model = Model::new(HP, &graph, rooting).unwrap();
                    let alphas = [0.0, 0.5, 2.0, 3.0];
                    let Some((z, mu, h, powered)) = oracle(&weights, rooting, &alphas) else {
                        assert_eq!(model.log_partition().unwrap(), f64::NEG_INFINITY, "{ctx}");
                        continue;
                    };
                    checked += 1;
                    // rel 1e-68: 256-bit LU of n ≤ 5 (≤ 50 roundings on the
                    // way to each pivot) times a condition below 1e6; the
                    // oracle's own sum of ≤ 6^4 trees adds ≤ 1e3 roundings.
                    const TOL: f64 = 1e-68;
                    assert!(rel(&model.partition().unwrap(), &z) < TOL, "{ctx}: Z");
                    let ln_z = model.log_partition_scalar().unwrap();
                    assert!(rel1(&ln_z, &z.ln()) < TOL, "{ctx}: ln Z");
                    // 1e-14 relative: ln Z in f64 is a sum of n rounded logs.
                    let ln_z64 = model.log_partition().unwrap();
                    assert!((ln_z64 - z.ln().to_f64()).abs() <= 1e-14 * ln_z64.abs().max(1.0));
                    let got = model.marginals().unwrap();
                    for (g, e) in got.as_slice().iter().zip(mu.as_slice()) {
                        assert!(diff(g, e) < TOL, "{ctx}: μ {g} vs {e}");
                    }
                    assert!(rel1(&model.entropy().unwrap(), &h) < TOL, "{ctx}: H");
                    if kind == "weights" {
                        continue;
                    }
                    for (&alpha, sum) in alphas.iter().zip(&powered) {
                        let expected = (sum.ln() - f(alpha) * z.ln()) / (F::one() - f(alpha));
                        let got = model.renyi_entropy(alpha).unwrap();
                        // α = 3: the powered scores 3θ are rounded to f64
                        // (rel 2^−53 of |3θ| ≤ 30), so 1e-13; else as above.
                        let tol = if alpha == 3.0 { 1e-13 } else { TOL };
                        assert!(
                            rel1(&got, &expected) < tol,
                            "{ctx}: H_{alpha}: {got} vs {expected}"
                        );
                    }
                }
            }
        }
    }
    assert!(checked > 60, "{checked} graphs with trees");
}

// ------------------------------------------------------------- exact backend

#[test]
fn z_and_marginals_match_exact_rationals_at_n_10_to_20() {
    for n in [10, 13, 16, 20] {
        for seed in 0..2u64 {
            let mut rng = SplitMix64::new(0xe0 + 10 * n as u64 + seed);
            // Weights, not scores: the exact backend rounds e^θ through f64,
            // this one does not, so only weights are the same input to both.
            let g = weight_graph(&random::normal_weights(&mut rng, n, 1.0, 0.1));
            for rooting in Rooting::ALL {
                let ctx = format!("{} n={n} seed={seed}", rooting.name());
                let exact = Model::new(Exact, &g, rooting).unwrap();
                let model = Model::new(HP, &g, rooting).unwrap();
                let z = F::from(&exact.partition().unwrap());
                // rel 1e-70: the exact value rounded once (2^−256) against a
                // 256-bit LU of n ≤ 20 (≈ n² roundings per pivot) on
                // Laplacians of condition below 1e3.
                assert!(rel(&model.partition().unwrap(), &z) < 1e-70, "{ctx}: Z");
                assert!(rel1(&model.log_partition_scalar().unwrap(), &z.ln()) < 1e-70);
                let mu_exact = exact.marginals().unwrap();
                let mu = model.marginals().unwrap();
                for (g, e) in mu.as_slice().iter().zip(mu_exact.as_slice()) {
                    assert!(diff(g, &F::from(e)) < 1e-70, "{ctx}: μ {g} vs {e}");
                }
            }
        }
    }
}

// ------------------------------------------------------------- f64 vs reference

#[test]
fn f64_results_against_the_256_bit_reference() {
    for n in [10, 30] {
        for (seed, sigma) in [(0u64, 1.0), (1, 3.0)] {
            let mut rng = SplitMix64::new(0xd0 + 10 * n as u64 + seed);
            let g = score_graph(&random::normal_scores(&mut rng, n, sigma, 0.0));
            for rooting in Rooting::ALL {
                let ctx = format!("{} n={n} σ={sigma}", rooting.name());
                let reference = Model::new(HP, &g, rooting).unwrap();
                let fast = Model::new(ShiftedF64, &g, rooting).unwrap();
                let ln_z = reference.log_partition_scalar().unwrap();
                // rel 1e-14 of max(1, |ln Z|): a sum of n ≤ 30 logarithms of
                // f64 pivots (one LU on shifted columns, condition < 1e3) and
                // n² weights e^{θ−c} rounded to f64; measured ≤ 1e-16.
                let got = fast.log_partition().unwrap();
                assert!(rel1(&f(got), &ln_z) < 1e-14, "{ctx}: ln Z {got} vs {ln_z}");
                // 1e-13 absolute on probabilities: the inverse of the same LU,
                // condition < 1e3 times n ε ≈ 7e-15; measured ≤ 2e-15.
                let mu_ref = reference.marginals().unwrap();
                let mu = fast.marginals().unwrap();
                for (g, e) in mu.as_slice().iter().zip(mu_ref.as_slice()) {
                    assert!(diff(&f(*g), e) < 1e-13, "{ctx}: μ {g} vs {e}");
                }
                // 1e-13 of max(1, |ln Z|): H = ln Z − Σ μ θ cancels terms of
                // size |ln Z| (≤ 200 here), each known to the marginals'
                // accuracy; measured ≤ 7e-14 absolute at ln Z ≈ 113.
                let h_ref = reference.entropy().unwrap();
                let h = fast.entropy().unwrap();
                let scale = ln_z.abs().to_f64().max(1.0);
                assert!(
                    diff(&f(h), &h_ref) < 1e-13 * scale,
                    "{ctx}: H {h} vs {h_ref}"
                );
            }
        }
    }
}
