//! Scores more than ~708 below the best arc into their word: the `f64`
//! weight `e^{θ − c_m}` of such an arc underflows in the preparation. The
//! engines must then answer right (the arc's trees are negligible) or
//! refuse with `Numerical::Underflow`, never return the `Z` of the graph
//! without that arc. Oracle: brute-force enumeration in exact rationals on
//! the scores shifted by a constant per arc (`+370`, so that every weight is
//! a normal `f64`: every tree has `n` arcs, so `ln Z` moves by exactly
//! `370 n` and the marginals not at all).

use spantree_bruteforce::{marginals as brute_marginals, partition as brute_partition};
use spantree_core::elimination::{
    checked_marginals, marginals, Elimination, LnPositive, NonNegative,
};
use spantree_core::{Engine, Error, Graph, Matrix, Model, Numerical, Rooting, Scalar};
use spantree_exact::Rational;
use spantree_faer::{Accurate, LogAccurate, ShiftedF64, F64};

const NINF: f64 = f64::NEG_INFINITY;

/// The fuzz target `arrays`' crasher (`fuzz/artifacts/arrays/arrays-order-minus-1`,
/// item 0): three words, single-root. The best tree `0→2, 2→1, 2→3`
/// (score −739.45) goes through `2 → 1`, 746.2 below `0 → 1` in its column.
const CRASHER: [[f64; 4]; 4] = [
    [0.5, 0.5, -3.125, 3.375],
    [-12.375, -12.125, NINF, -12.5],
    [-12.125, -745.2, -12.125, 8.875],
    [NINF, NINF, -745.2, 0.0],
];

/// The crasher with `3 → 2` at `0`: the tree `0→1, 1→3, 3→2` (score −12)
/// dominates, and the trees through the underflowing `2 → 1` weigh about
/// `e^{-733}` of it: below one rounding, so an answer is due.
const HARMLESS: [[f64; 4]; 4] = [
    [0.5, 0.5, -3.125, 3.375],
    [-12.375, -12.125, NINF, -12.5],
    [-12.125, -745.2, -12.125, 8.875],
    [NINF, NINF, 0.0, 0.0],
];

const SHIFT: f64 = 370.0;

/// `ln Z` and the marginals by enumeration on exact rationals of the
/// weights `e^{θ + SHIFT}` (each a normal `f64`, rounded once: a relative
/// error of `2⁻⁵³` per weight).
fn oracle(scores: &[[f64; 4]; 4], rooting: Rooting) -> (f64, Matrix<f64>) {
    let n = scores.len() - 1;
    let w = Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            Rational::from_f64(0.0)
        } else {
            let x = (scores[h][m] + SHIFT).exp();
            assert!(x == 0.0 || x >= f64::MIN_POSITIVE, "a normal weight");
            Rational::from_f64(x)
        }
    });
    let ln_z = brute_partition(&w, rooting).ln_abs() - SHIFT * n as f64;
    let mu = brute_marginals(&w, rooting).expect("a tree exists");
    (ln_z, mu.map(Scalar::to_f64))
}

/// Either the oracle's numbers or `Numerical::Underflow` naming the arc
/// that lost most: `3 → 2`, whose weight `e^{-742.075}` is subnormal (a few
/// bits left), next to `2 → 1`'s `e^{-745.7}`, zero.
fn answers_right_or_refuses<E: Engine<Scalar = f64>>(
    engine: E,
    scores: &[[f64; 4]; 4],
    refused: Option<Rooting>,
    dense: bool,
) {
    let graph = Graph::from_scores(scores).expect("valid scores");
    for rooting in Rooting::ALL {
        let ctx = format!("{} {rooting:?}", engine.name());
        let must_refuse = refused == Some(rooting);
        let (ln_z, mu) = oracle(scores, rooting);
        let model = Model::new(engine.clone(), &graph, rooting).expect("a model");
        let refusal = Error::Numerical(Numerical::Underflow {
            head: 3,
            dependent: 2,
        });
        match (model.log_partition(), model.marginals()) {
            (Ok(got), Ok(got_mu)) if !must_refuse => {
                // abs 1e-12: |ln Z| below 13, a few roundings of the weights
                // and of the elimination.
                assert!((got - ln_z).abs() < 1e-12, "{ctx}: ln Z {got} vs {ln_z}");
                for h in 0..=3 {
                    for m in 1..=3 {
                        // abs 1e-12: marginals in [0, 1] to a few roundings;
                        // the lost arc's e^{-733} is far below.
                        let (a, b) = (got_mu[(h, m)], mu[(h, m)]);
                        assert!((a - b).abs() < 1e-12, "{ctx}: μ({h}→{m}) {a} vs {b}");
                    }
                }
            }
            (Err(e), Err(f)) if must_refuse => {
                assert_eq!(e, refusal, "{ctx}");
                assert_eq!(f, refusal, "{ctx}");
            }
            // Dense LU's own check (a diagonal that lost a weight to
            // rounding) may refuse a single-root graph first: typed too.
            (Err(Error::Numerical(Numerical::Inaccurate { .. })), _) if dense => {}
            (z, m) => panic!("{ctx}: {z:?}, {m:?}; oracle ln Z {ln_z}"),
        }
    }
}

#[test]
fn the_oracle_sees_the_tree_through_the_underflowing_arc() {
    // The case is what the fuzzer says: the best tree uses 2 → 1, so the
    // graph without it (ln Z ≈ −757.2, what the engines returned on the
    // f64 weights) is 17.75 off.
    let (ln_z, mu) = oracle(&CRASHER, Rooting::Single);
    let best = -3.125 - 745.2 + 8.875;
    // abs 1e-7: the other trees weigh e^{-17.75} ≈ 2e-8 of the best.
    assert!((ln_z - best).abs() < 1e-7, "{ln_z}");
    assert!(mu[(2, 1)] > 1.0 - 1e-7);
}

fn stamp<E: Engine<Scalar = f64>>(engine: E, dense: bool) {
    // Multi-root, the crasher is harmless too: the root arcs carry Z.
    answers_right_or_refuses(engine.clone(), &CRASHER, Some(Rooting::Single), dense);
    answers_right_or_refuses(engine, &HARMLESS, None, dense);
}

#[test]
fn accurate() {
    stamp(Accurate, false);
}

#[test]
fn log_accurate() {
    stamp(LogAccurate, false);
}

#[test]
fn shifted_f64() {
    stamp(ShiftedF64, true);
}

#[test]
fn unshifted_f64() {
    stamp(F64, true);
}

/// The elimination itself on the crasher's prepared `f64` weights
/// `e^{θ − c_m}` (`2 → 1` zero, `3 → 2` subnormal), single-root: in `f64`,
/// products underflow to zero in some elimination orders of the divide and
/// conquer and not in others, which gave a leading term of order −1. The
/// run must say so (the flag that makes the engine rerun in log space), and
/// the log-space run must match brute force on the same weights as exact
/// rationals.
#[test]
fn the_elimination_flags_products_that_underflow_to_zero() {
    let n = 3;
    let column_max: Vec<f64> = (0..=n)
        .map(|m| {
            (0..=n)
                .filter(|&h| h != m)
                .map(|h| CRASHER[h][m])
                .fold(NINF, f64::max)
        })
        .collect();
    let w = Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            0.0
        } else {
            (CRASHER[h][m] - column_max[m]).exp()
        }
    });
    assert_eq!(w[(2, 1)], 0.0);
    assert!(w[(3, 2)] > 0.0 && w[(3, 2)] < f64::MIN_POSITIVE);
    let rooting = Rooting::Single;
    match checked_marginals(&w, rooting) {
        Ok((_, tiny)) => assert!(tiny, "an underflow the f64 run did not report"),
        Err(e) => panic!("{e:?}: the underflow is the f64 run's, not the graph's"),
    }
    let exact = w.map(|&x| Rational::from_f64(x));
    let z = brute_partition(&exact, rooting);
    let mu = brute_marginals(&exact, rooting).expect("a tree exists");
    let logs = w.map(|&x| LnPositive::from_weight(x));
    let ln_z = Elimination::new(&logs, rooting).log_partition();
    // abs 1e-12: one tree, a handful of roundings in log space.
    assert!(
        (ln_z - z.ln_abs()).abs() < 1e-12,
        "{ln_z} vs {}",
        z.ln_abs()
    );
    let got = marginals(&logs, rooting).expect("Z > 0");
    for h in 0..=n {
        for m in 1..=n {
            let (a, b) = (got[(h, m)].to_weight(), mu[(h, m)].to_f64());
            // abs 1e-12: marginals in [0, 1] to a few roundings.
            assert!((a - b).abs() < 1e-12, "μ({h}→{m}) {a} vs {b}");
        }
    }
}
