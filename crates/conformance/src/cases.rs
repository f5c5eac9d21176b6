//! Conformance cases drawn by [`proptest`](mod@proptest): graph size, score scale, root
//! shift, forbidden arcs and labels, both rootings. A failing case shrinks
//! towards fewer words, fewer labels, smaller scores and no forbidden arc,
//! so the report shows a minimal graph. The runner is seeded, so every run
//! draws the same cases (CI reproduces a failure as it is).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spantree_bruteforce::{Distribution, LabeledWeights};
use spantree_core::{Engine, Graph, Matrix, Model, Rooting, Scalar};

use crate::suite::Tolerance;

/// One drawn graph: per-label scores (`−∞` forbids) and a rooting.
#[derive(Clone, Debug)]
pub struct Case {
    /// One `(n+1) × (n+1)` score matrix per label.
    pub scores: Vec<Matrix<f64>>,
    /// Single- or multi-root trees.
    pub rooting: Rooting,
}

impl Case {
    /// The graph (unlabeled for one label), given as scores.
    pub fn graph(&self) -> Graph {
        let n1 = self.scores[0].rows();
        if self.scores.len() == 1 {
            let rows: Vec<Vec<f64>> = (0..n1).map(|h| self.scores[0].row(h).to_vec()).collect();
            return Graph::from_scores(&rows).expect("drawn scores are valid");
        }
        let rows: Vec<Vec<Vec<f64>>> = (0..n1)
            .map(|h| {
                (0..n1)
                    .map(|m| self.scores.iter().map(|s| s[(h, m)]).collect())
                    .collect()
            })
            .collect();
        Graph::from_labeled_scores(&rows).expect("drawn scores are valid")
    }

    /// The weights `e^θ` per label, for the oracle.
    pub fn weights(&self) -> LabeledWeights<f64> {
        LabeledWeights::new(
            self.scores
                .iter()
                .map(|s| s.map(|&x| if x == f64::NEG_INFINITY { 0.0 } else { x.exp() }))
                .collect(),
        )
    }
}

/// Cases with `1..=max_n` words, `1..=max_labels` labels, scores
/// `scale · u` with `u` uniform in `[−1, 1]` and `scale ∈ [0, 8]`, root
/// scores shifted by `shift ∈ [min_root_shift, 0]`, and each arc forbidden
/// with probability about `1/4`.
pub fn case(max_n: usize, max_labels: usize, min_root_shift: f64) -> impl Strategy<Value = Case> {
    (
        1..=max_n,
        1..=max_labels,
        0.0..=8.0f64,
        min_root_shift..=0.0f64,
        any::<bool>(),
    )
        .prop_flat_map(|(n, labels, scale, shift, single)| {
            let cells = labels * (n + 1) * (n + 1);
            (
                Just((n, labels, scale, shift, single)),
                proptest::collection::vec(-1.0..=1.0f64, cells),
                proptest::collection::vec(proptest::bool::weighted(0.25), cells),
            )
        })
        .prop_map(|((n, labels, scale, shift, single), u, forbid)| {
            let n1 = n + 1;
            let scores = (0..labels)
                .map(|l| {
                    Matrix::from_fn(n1, n1, |h, m| {
                        let i = (l * n1 + h) * n1 + m;
                        if m == 0 || h == m || forbid[i] {
                            f64::NEG_INFINITY
                        } else {
                            scale * u[i] + if h == 0 { shift } else { 0.0 }
                        }
                    })
                })
                .collect();
            let rooting = if single {
                Rooting::Single
            } else {
                Rooting::Multi
            };
            Case { scores, rooting }
        })
}

/// Checks one case against enumeration: `ln Z` and every label marginal, or
/// the no-tree answers. Exact engines are held to `1e-12` here: the oracle
/// runs in `f64` on the same `e^θ`.
pub fn check<E: Engine>(engine: &E, tol: Tolerance, case: &Case) -> Result<(), TestCaseError> {
    let tol = if tol.is_exact() {
        Tolerance::uniform(1e-12)
    } else {
        tol
    };
    let model = Model::new(engine.clone(), &case.graph(), case.rooting)
        .map_err(|e| TestCaseError::fail(format!("Model::new: {e}")))?;
    let weights = case.weights();
    let Some(oracle) = Distribution::new(&weights, case.rooting) else {
        prop_assert_eq!(model.log_partition(), Ok(f64::NEG_INFINITY));
        prop_assert!(model.marginals().is_err(), "marginals without a tree");
        return Ok(());
    };
    let expected = weights.partition(case.rooting).ln();
    let log_z = model
        .log_partition()
        .map_err(|e| TestCaseError::fail(format!("log_partition: {e}")))?;
    prop_assert!(
        (log_z - expected).abs() <= tol.log_z * expected.abs().max(1.0),
        "ln Z = {}, oracle {}",
        log_z,
        expected
    );
    let mu = model
        .label_marginals()
        .map_err(|e| TestCaseError::fail(format!("label_marginals: {e}")))?;
    for (l, (a, e)) in mu.iter().zip(oracle.label_marginals()).enumerate() {
        for (i, (x, y)) in a.as_slice().iter().zip(e.as_slice()).enumerate() {
            let x = x.to_f64();
            prop_assert!(
                (x - y).abs() <= tol.marginal,
                "label {} cell {}: μ = {}, oracle {}",
                l,
                i,
                x,
                y
            );
        }
    }
    Ok(())
}

/// The property on one engine: 48 drawn cases (`n ≤ 5`, up to 2 labels,
/// root shifts down to `−3`) against enumeration. Seeded: the same cases on
/// every run.
pub fn against_brute_force<E: Engine>(engine: E, tol: Tolerance) {
    let config = Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&case(5, 2, -3.0), |case| check(&engine, tol, &case));
    if let Err(e) = result {
        panic!("{}: {e}", engine.name());
    }
}
