//! The default engine's row-sum route for multi-root graphs whose dense LU
//! refuses itself (root scores far below the arcs'): `ln Z` and the
//! marginals from the LU of `M`, the Laplacian with its first row replaced
//! by the root weights (its column sums) times `2^k`, against exact
//! rationals. `ln Z` keeps 42 bits (absolute, `2⁻⁴² max(1, |ln Z|)`) and
//! every marginal 40 bits relative to itself, whichever route answered; the
//! columns of marginals that fail the first entry-wise test are refined
//! (one step of iterative refinement against `M`).

use spantree_bruteforce::bits::fewest_bits;
use spantree_bruteforce::random::{normal_scores, rows, uniform_scores, SplitMix64};
use spantree_core::{Engine, Factors, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::{Exact, HighPrecision};
use spantree_faer::Accurate;

/// `N(0, σ²)` scores with 5% of the arcs forbidden, root scores moved by
/// `shift`.
fn graph(n: usize, seed: u64, sigma: f64, shift: f64) -> Graph {
    let mut rng = SplitMix64::new(seed);
    let mut s = normal_scores(&mut rng, n, sigma, 0.05);
    for m in 1..=n {
        s[(0, m)] += shift;
    }
    Graph::from_scores(&rows(&s)).expect("valid scores")
}

/// The route the default engine took for `ln Z` and the marginals of a
/// multi-root graph.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// `L` certified (no row-sum form needed).
    Dense,
    /// `ln Z` and the marginals from the row-sum form.
    RowSum,
    /// `ln Z` from the row-sum form, the marginals from the elimination.
    RowSumLnZ,
    /// Everything from the elimination.
    Eliminated,
}

/// Checks `ln Z` (42 bits) and every marginal (40 bits) of the multi-root
/// graph `g` on `Accurate` against `Exact`, and returns the route taken.
fn check(g: &Graph) -> Route {
    let exact = Model::new(Exact, g, Rooting::Multi).expect("exact model");
    let exact_mu: Vec<f64> = exact
        .marginals()
        .expect("exact marginals")
        .as_slice()
        .iter()
        .map(Scalar::to_f64)
        .collect();
    let exact_ln_z = exact.log_partition().expect("exact ln Z");
    let model = Model::new(Accurate, g, Rooting::Multi).expect("model");
    let ln_z = model.log_partition().expect("ln Z");
    let allowed = 2f64.powi(-42) * exact_ln_z.abs().max(1.0);
    assert!(
        (ln_z - exact_ln_z).abs() <= allowed,
        "n = {}: ln Z {ln_z} against {exact_ln_z}",
        g.n()
    );
    let mu: Matrix<f64> = model.marginals().expect("marginals");
    let fewest = fewest_bits(mu.as_slice(), &exact_mu);
    assert!(fewest >= 40.0, "n = {}: {fewest:.1} bits", g.n());
    // The route, read off factors of the same prepared weights.
    let prepared = Accurate.prepare(g, |&w| w).expect("prepared");
    let f = Accurate.factorize(prepared.weights().clone(), Rooting::Multi);
    f.marginals().expect("marginals");
    match (
        f.is_certified(),
        f.row_sum_certified(),
        f.dense_marginals_used(),
    ) {
        (true, _, _) => Route::Dense,
        (false, true, true) => Route::RowSum,
        (false, true, false) => Route::RowSumLnZ,
        (false, false, _) => Route::Eliminated,
    }
}

#[test]
fn root_scores_minus_forty_take_the_row_sum_route_with_forty_bits() {
    // N(0, 1) arcs, root scores −40: L is refused (its diagonal cannot hold
    // e^-40 next to 1); M is certified, and its marginals pass the test on
    // most such graphs (measured: every graph below).
    let mut row_sum = 0;
    for n in [4, 12, 24] {
        for seed in 0..3 {
            let route = check(&graph(n, 40 + seed + n as u64, 1.0, -40.0));
            assert_ne!(route, Route::Dense, "n = {n}, seed {seed}");
            assert_ne!(route, Route::Eliminated, "n = {n}, seed {seed}");
            row_sum += usize::from(route == Route::RowSum);
        }
    }
    assert!(
        row_sum > 0,
        "no graph took the row-sum route for its marginals"
    );
}

#[test]
fn every_route_keeps_its_bits_across_root_shifts() {
    // From root scores near the arcs' (L certified) through −20 and −40 to
    // −60 (beyond the 2⁶⁴ scale: the elimination), with N(0, 2²) arcs,
    // whose marginals fail the test more often, and uniform ±20 arcs,
    // nearly certain heads.
    for n in [5, 16] {
        for (seed, shift) in [(1, 0.0), (2, -20.0), (3, -40.0), (4, -60.0)] {
            check(&graph(n, seed + 10 * n as u64, 2.0, shift));
        }
    }
    for seed in 0..4 {
        let mut rng = SplitMix64::new(500 + seed);
        let mut s = uniform_scores(&mut rng, 6, 20.0);
        for m in 1..=6 {
            s[(0, m)] -= 40.0;
        }
        check(&Graph::from_scores(&rows(&s)).expect("valid scores"));
    }
}

#[test]
fn derivatives_on_the_row_sum_route_keep_their_bits() {
    // Derivatives do not read M: on graphs whose ln Z comes from it, the
    // entropy gradient is the elimination's (started from that ln Z), held
    // here to 40 bits norm-wise against 512-bit floats (the engine's
    // derivative bar; the elimination's own, tighter bars are tested with
    // the elimination).
    for (n, seed) in [(3, 7), (10, 77)] {
        let g = graph(n, seed, 1.0, -40.0);
        let prepared = Accurate.prepare(&g, |&w| w).expect("prepared");
        let f = Accurate.factorize(prepared.weights().clone(), Rooting::Multi);
        assert!(f.row_sum_certified(), "n = {n}: the row-sum route");
        let found = Model::new(Accurate, &g, Rooting::Multi)
            .and_then(|m| m.grad_entropy())
            .expect("gradient");
        let reference = Model::new(HighPrecision::<512>, &g, Rooting::Multi)
            .and_then(|m| m.grad_entropy())
            .expect("reference gradient");
        let reference: Vec<f64> = reference[0].as_slice().iter().map(Scalar::to_f64).collect();
        let a = found[0].as_slice();
        let error: f64 = a
            .iter()
            .zip(&reference)
            .map(|(x, y)| (x - y) * (x - y))
            .sum();
        let size: f64 = reference.iter().map(|y| y * y).sum();
        assert!(
            error <= size * 2f64.powi(-80),
            "n = {n}: {error:e} against {size:e}"
        );
    }
}

#[test]
fn refined_row_sum_route_keeps_forty_bits() {
    // N(0, 2²) arcs, root scores −40, n = 36–100: L is refused, M is
    // certified, and a few columns of M⁻¹'s marginals (measured 3, 4 and 4
    // of them; word 1's column included) fail the first entry-wise test.
    // They are refined against M as given by the weights (the double-double
    // residual holds the root weights that M's rounded diagonal cannot),
    // and every marginal keeps 40 bits relative to itself against
    // HighPrecision<512> (LU in 512-bit floats: its own error is some
    // 2⁻⁴⁹⁰ here), ln Z 42 bits (absolute, 2⁻⁴² max(1, |ln Z|)).
    for n in [36, 64, 100] {
        let g = graph(n, 1000 * n as u64, 2.0, -40.0);
        let reference = Model::new(HighPrecision::<512>, &g, Rooting::Multi).expect("reference");
        let reference_mu: Vec<f64> = reference
            .marginals()
            .expect("reference marginals")
            .as_slice()
            .iter()
            .map(Scalar::to_f64)
            .collect();
        let reference_ln_z = reference.log_partition().expect("reference ln Z");
        let model = Model::new(Accurate, &g, Rooting::Multi).expect("model");
        let ln_z = model.log_partition().expect("ln Z");
        let allowed = 2f64.powi(-42) * reference_ln_z.abs().max(1.0);
        assert!(
            (ln_z - reference_ln_z).abs() <= allowed,
            "n = {n}: ln Z {ln_z} against {reference_ln_z}"
        );
        let mu = model.marginals().expect("marginals");
        let fewest = fewest_bits(mu.as_slice(), &reference_mu);
        assert!(fewest >= 40.0, "n = {n}: {fewest:.1} bits");
        // The route: L refused, M certified, its marginals dense with some
        // columns refined and none recomputed by the elimination.
        let f = model.factors();
        assert!(!f.is_certified(), "n = {n}: L certified");
        assert!(f.row_sum_certified(), "n = {n}: M refused");
        assert!(f.dense_marginals_used(), "n = {n}: marginals eliminated");
        assert!(f.refined_columns() > 0, "n = {n}: no column refined");
        assert_eq!(f.eliminated_columns(), 0, "n = {n}");
        assert!(!f.elimination_formed(), "n = {n}: elimination formed");
    }
}
