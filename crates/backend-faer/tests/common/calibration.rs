//! The graphs and seeds of the `vjp_calibration` example, and the reference
//! products they are judged by, shared by that example and the tests that
//! replay its cases (`#[path]`-included: nothing here calls the crate under
//! test).

use spantree_bruteforce::random::{normal_scores, rows, uniform_scores, SplitMix64};
use spantree_core::{Graph, Matrix, Model, Scalar};
use spantree_exact::HighPrecision;

/// The graph and the three seeds (entropy `−θ`, random `N(0, 1)`, the
/// indicator of a random tree) for `n` words, score family `family` (`0`,
/// `1`, `2`: `N(0, σ²)` with `σ = 1, 2, 4`; `3`, `4`, `5`, `6`: uniform in
/// `±5`, `±10`, `±20`, `±50`), root shift `shift` and graph number `g`.
pub fn calibration_case(n: usize, family: u64, shift: f64, g: u64) -> (Graph, [Matrix<f64>; 3]) {
    let mut rng = SplitMix64::new(g * 1000 + n as u64 * 17 + family);
    let mut s = match family {
        0 => normal_scores(&mut rng, n, 1.0, 0.0),
        1 => normal_scores(&mut rng, n, 2.0, 0.0),
        2 => normal_scores(&mut rng, n, 4.0, 0.0),
        3 => uniform_scores(&mut rng, n, 5.0),
        4 => uniform_scores(&mut rng, n, 10.0),
        5 => uniform_scores(&mut rng, n, 20.0),
        _ => uniform_scores(&mut rng, n, 50.0),
    };
    for m in 1..=n {
        s[(0, m)] += shift;
    }
    let n1 = n + 1;
    let allowed = |h: usize, m: usize| h != m && m != 0;
    let entropy = Matrix::from_fn(n1, n1, |h, m| if allowed(h, m) { -s[(h, m)] } else { 0.0 });
    let random = Matrix::from_fn(
        n1,
        n1,
        |h, m| {
            if allowed(h, m) {
                rng.normal()
            } else {
                0.0
            }
        },
    );
    let heads: Vec<usize> = (1..=n)
        .map(|m| if m == 1 { 0 } else { rng.below(m - 1) + 1 })
        .collect();
    let tree = Matrix::from_fn(
        n1,
        n1,
        |h, m| {
            if m > 0 && heads[m - 1] == h {
                1.0
            } else {
                0.0
            }
        },
    );
    let graph = Graph::from_scores(&rows(&s)).expect("valid scores");
    (graph, [entropy, random, tree])
}

/// `marginals_vjp(seed)` on the calibration's reference model (MPFR at 512
/// bits), rounded to `f64`.
pub fn reference_product(
    reference: &Model<HighPrecision<512>>,
    seed: &Matrix<f64>,
) -> spantree_core::Result<Vec<f64>> {
    let v = reference.marginals_vjp(&seed.map(|&x| Scalar::from_f64(x)))?;
    Ok(v.as_slice().iter().map(Scalar::to_f64).collect())
}
