//! Differential tests: the faer engines against the independent nalgebra
//! engine on graphs too large to enumerate (`n` up to 40), entry by entry:
//! `ln Z`, every label marginal, `∇Z`, the marginals' VJP and the entropy's
//! gradient. The identities of the suite check sums at these sizes; this
//! checks each entry. Cases are drawn by proptest (seeded) and shrink to a
//! minimal graph.

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spantree_conformance::cases::{case, Case};
use spantree_conformance::nalgebra::Nalgebra;
use spantree_core::{Engine, Matrix, Model, Scalar};
use spantree_faer::{Accurate, LogAccurate, ShiftedF64, F64};

/// rel 1e-10: two independent LUs of Laplacians of condition < 1e4 (scores
/// up to ±8 and root shifts down to −3 at n ≤ 40) each carry `n · ε ·
/// condition` ≈ 1e-11; gradients and VJPs take one or two solves more.
const TOL: f64 = 1e-10;

fn agree(what: &str, a: &[Matrix<f64>], b: &[Matrix<f64>]) -> Result<(), TestCaseError> {
    let scale = b
        .iter()
        .flat_map(|m| m.as_slice())
        .fold(1.0f64, |s, x| s.max(x.abs()));
    for (l, (x, y)) in a.iter().zip(b).enumerate() {
        for (i, (u, v)) in x.as_slice().iter().zip(y.as_slice()).enumerate() {
            if (u - v).abs() > TOL * scale {
                return Err(TestCaseError::fail(format!(
                    "{what} label {l} cell {i}: {u:e} vs nalgebra {v:e} (scale {scale:e})"
                )));
            }
        }
    }
    Ok(())
}

fn err(what: &'static str) -> impl Fn(spantree_core::Error) -> TestCaseError {
    move |e| TestCaseError::fail(format!("{what}: {e}"))
}

fn compare<E: Engine<Scalar = f64>>(engine: &E, case: &Case) -> Result<(), TestCaseError> {
    let graph = case.graph();
    let ours = Model::new(engine.clone(), &graph, case.rooting).map_err(err("model"))?;
    let theirs = Model::new(Nalgebra, &graph, case.rooting).map_err(err("nalgebra model"))?;
    if graph.spanning_tree(case.rooting).is_err() {
        return Ok(());
    }
    let (a, b) = (
        ours.log_partition().map_err(err("ln Z"))?,
        theirs.log_partition().map_err(err("nalgebra ln Z"))?,
    );
    if (a - b).abs() > TOL * b.abs().max(1.0) {
        return Err(TestCaseError::fail(format!("ln Z {a} vs nalgebra {b}")));
    }
    let mu = ours.label_marginals().map_err(err("μ"))?;
    let nu = theirs.label_marginals().map_err(err("nalgebra μ"))?;
    agree("label marginals", &mu, &nu)?;
    let n1 = case.scores[0].rows();
    // A seed in eighths, the same for both.
    let seed = Matrix::from_fn(n1, n1, |h, m| ((h * 5 + m * 3) % 17) as f64 / 8.0 - 1.0);
    let v = ours.marginals_vjp(&seed).map_err(err("VJP"))?;
    let w = theirs.marginals_vjp(&seed).map_err(err("nalgebra VJP"))?;
    agree("marginals VJP", &[v], &[w])?;
    let g = ours.grad_entropy().map_err(err("∇H"))?;
    let h = theirs.grad_entropy().map_err(err("nalgebra ∇H"))?;
    agree("∇H", &g, &h)?;
    // ∇Z only where Z fits in f64 on both (the shifted engines scale it back).
    if let (Ok(g), Ok(h)) = (ours.grad_partition(), theirs.grad_partition()) {
        if h.as_slice().iter().all(|x| x.is_finite()) {
            agree("∇Z", &[g], &[h])?;
        }
    }
    Ok(())
}

/// 24 seeded cases per engine, `n ≤ 40`, up to 3 labels.
fn differential<E: Engine<Scalar = f64>>(engine: E) {
    let config = Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    if let Err(e) = runner.run(&case(40, 3, -3.0), |c| compare(&engine, &c)) {
        panic!("{} against nalgebra: {e}", engine.name());
    }
}

#[test]
fn f64_agrees_with_nalgebra() {
    differential(F64);
}

#[test]
fn shifted_f64_agrees_with_nalgebra() {
    differential(ShiftedF64);
}

#[test]
fn accurate_agrees_with_nalgebra() {
    differential(Accurate);
}

#[test]
fn log_accurate_agrees_with_nalgebra() {
    differential(LogAccurate);
}

/// The nalgebra engine is a plain `Scalar = f64` engine: its name and a
/// hand-computed value (trees of weights 2, 3, 8: `Z = 13`).
#[test]
fn nalgebra_hand_case() {
    let g =
        spantree_core::Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])
            .expect("valid");
    let m = Model::new(Nalgebra, &g, spantree_core::Rooting::Multi).expect("model");
    assert_eq!(Nalgebra.name(), "nalgebra");
    assert!((m.log_partition().expect("ln Z") - 13f64.ln()).abs() < 1e-15);
    assert!((m.marginals().expect("μ")[(2, 1)] - 8.0 / 13.0).abs() < 1e-15);
    assert_eq!(
        m.partition().expect("Z").sign(),
        spantree_core::Sign::Positive
    );
}
