//! Differential tests: the faer engines against the independent nalgebra
//! engine on graphs too large to enumerate (`n` up to 40), entry by entry:
//! `ln Z`, every label marginal, `∇Z`, the marginals' VJP and the entropy's
//! gradient. The identities of the suite check sums at these sizes; this
//! checks each entry. Cases are drawn by proptest (seeded) and shrink to a
//! minimal graph.

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spantree_conformance::cases::{case, Case};
use spantree_conformance::nalgebra::Nalgebra;
use spantree_core::engine::DENSE_UNCERTAINTY;
use spantree_core::{Engine, Error, Inaccuracy, Matrix, Model, Numerical, Scalar};
use spantree_exact::HighPrecision;
use spantree_faer::DenseLu;
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
    let shifted = engine.name() == "log";
    let v = ours.marginals_vjp(&seed);
    let hp_seed = seed.map(|&x| Scalar::from_f64(x));
    if !plausible_refusal(
        &v,
        case,
        shifted,
        |m| m.marginals_vjp(&seed).map(|v| flat(&[v])),
        |m| m.marginals_vjp(&hp_seed).map(|v| flat(&[v])),
    )? {
        let w = theirs.marginals_vjp(&seed).map_err(err("nalgebra VJP"))?;
        agree("marginals VJP", &[v.map_err(err("VJP"))?], &[w])?;
    }
    let g = ours.grad_entropy();
    if !plausible_refusal(
        &g,
        case,
        shifted,
        |m| m.grad_entropy().map(|g| flat(&g)),
        |m| m.grad_entropy().map(|g| flat(&g)),
    )? {
        let h = theirs.grad_entropy().map_err(err("nalgebra ∇H"))?;
        agree("∇H", &g.map_err(err("∇H"))?, &h)?;
    }
    // ∇Z only where Z fits in f64 on both (the shifted engines scale it back).
    if let (Ok(g), Ok(h)) = (ours.grad_partition(), theirs.grad_partition()) {
        if h.as_slice().iter().all(|x| x.is_finite()) {
            agree("∇Z", &[g], &[h])?;
        }
    }
    Ok(())
}

/// The fewest correct bits, norm-wise, under which a refused derivative
/// counts as plausibly refused: `50`, the 45 asked plus the estimate's
/// pessimism (`VjpAccuracy`: 2–3 bits in the median, and these seeds in
/// eighths meet it: the two refusals of these cases, multi-root `n = 3`,
/// were of products that kept 48.3 and 49.8 bits, estimated 44). Those are
/// false refusals, counted on random graphs by the `refusals` sweep of
/// `spantree-faer`'s `honest_accuracy` example; above this bar the refusal
/// fails the test.
const PLAUSIBLE_BITS: f64 = 50.0;

/// Whether `got` is a refusal of a derivative (`SmallDerivative`) that an
/// oracle finds plausible: the product the engine refused (`product` on the
/// same engine without the check, `shifted` as `ShiftedF64`) keeps fewer
/// than [`PLAUSIBLE_BITS`] norm-wise against `HighPrecision<256>`
/// (`reference`), or the oracle finds the cause the estimate names, a
/// nearly certain word ([`nearly_certain`]). Any other error fails.
fn plausible_refusal<T>(
    got: &spantree_core::Result<T>,
    case: &Case,
    shifted: bool,
    product: impl Fn(&Model<DenseLu>) -> spantree_core::Result<Vec<f64>>,
    reference: impl Fn(&Model<HighPrecision<256>>) -> spantree_core::Result<Vec<f64>>,
) -> Result<bool, TestCaseError> {
    match got {
        Ok(_) => return Ok(false),
        Err(Error::Numerical(Numerical::Inaccurate {
            cause: Inaccuracy::SmallDerivative { .. },
            ..
        })) => {}
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    }
    let graph = case.graph();
    let found = Model::new(
        DenseLu {
            shifted,
            derivative_check: false,
        },
        &graph,
        case.rooting,
    )
    .and_then(|m| product(&m))
    .map_err(err("unchecked product"))?;
    let exact = Model::new(HighPrecision::<256>, &graph, case.rooting)
        .and_then(|m| reference(&m))
        .map_err(err("reference product"))?;
    let bits = spantree_bruteforce::bits::normwise_bits(&found, &exact);
    if bits < PLAUSIBLE_BITS || nearly_certain(case) {
        Ok(true)
    } else {
        Err(TestCaseError::fail(format!(
            "refused a product that keeps {bits:.1} bits ({:?}, n = {})",
            case.rooting,
            graph.n()
        )))
    }
}

/// Whether, by the marginals of `HighPrecision<256>`, some word is nearly
/// certain of its head (uncertainty `Σ_h μ_hm − max_h μ_hm` below
/// `DENSE_UNCERTAINTY`): the cause under which the estimate expects the
/// dense product to lose about `log₂(1/u)` bits. It does in the median of
/// the calibration sweep, not always: of the refusals of these cases, one
/// (multi-root, `n = 3`, two words at `u ≈ 0.006`) refused a product that
/// kept 52 bits, a false refusal the estimate's premise explains.
fn nearly_certain(case: &Case) -> bool {
    let Ok(mu) =
        Model::new(HighPrecision::<256>, &case.graph(), case.rooting).and_then(|m| m.marginals())
    else {
        return false;
    };
    let n1 = mu.rows();
    (1..n1).any(|m| {
        let line: Vec<f64> = (0..n1)
            .filter(|&h| h != m && mu[(h, m)].to_f64() > 0.0)
            .map(|h| mu[(h, m)].to_f64())
            .collect();
        let top = line.iter().copied().fold(0.0, f64::max);
        line.len() > 1 && line.iter().sum::<f64>() - top < DENSE_UNCERTAINTY
    })
}

fn flat<S: Scalar>(m: &[Matrix<S>]) -> Vec<f64> {
    m.iter()
        .flat_map(|x| x.as_slice().iter().map(Scalar::to_f64))
        .collect()
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
