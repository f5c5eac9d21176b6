//! Labeled graphs of scores at the edges of `f64`: forbidden labels
//! (`−∞`), an arc whose labels all lie ~1000 below the best score into its
//! word, and a root arc (the only one) whose labels lie 700 or 715 below
//! it, so that its label shares decide the label marginals while its weight
//! is tiny (700: a normal `f64`) or subnormal (715: the trees through it
//! are all the trees, so the engines must refuse or answer right). The same
//! graph as weights. Oracle: brute-force enumeration of the labeled trees in
//! exact rationals, on the weights `e^{θ + s_m}` with a shift `s_m` per
//! word (every tree has one arc into each word: `ln Z` moves by `Σ s_m`,
//! the label marginals not at all) that makes every weight a normal `f64`,
//! rounded once (a relative error of `2⁻⁵³` per weight); the entropy from
//! the identity `H = ln Z − Σ_{eℓ} μ_{eℓ} θ_{eℓ}` on the oracle's values.

use spantree_bruteforce::LabeledWeights;
use spantree_core::{Engine, Error, Graph, Matrix, Model, Numerical, Rooting, Scalar};
use spantree_exact::Rational;
use spantree_faer::{Accurate, ShiftedF64, F64};

const NINF: f64 = f64::NEG_INFINITY;
const LABELS: usize = 3;

/// `θ[h][m][ℓ]` over three words: root arcs only into word 1 (whose labels
/// sit at `root` and `root − 1.5`, one forbidden), arc `3 → 1` ~1000 below
/// the best score into word 1, forbidden labels here and there.
fn scores(root: f64) -> Vec<Vec<Vec<f64>>> {
    let ninf = vec![NINF; LABELS];
    let mut s = vec![vec![ninf.clone(); 4]; 4];
    s[0][1] = vec![root, root - 1.5, NINF];
    s[2][1] = vec![0.0, NINF, -3.0];
    s[3][1] = vec![-1000.0, -1001.0, -1002.5];
    s[1][2] = vec![0.25, -0.5, 1.0];
    s[3][2] = vec![NINF, 2.0, -1.0];
    s[1][3] = vec![-2.0, 0.5, NINF];
    s[2][3] = vec![1.5, 1.25, 0.0];
    s
}

/// The per-word shift that brings every finite score of the word's column
/// within `f64`'s normal exponentials (the middle of its range).
fn column_shift(s: &[Vec<Vec<f64>>], m: usize) -> f64 {
    let finite = || {
        (0..4)
            .flat_map(|h| s[h][m].iter().copied())
            .filter(|x| x.is_finite())
    };
    let hi = finite().fold(NINF, f64::max);
    let lo = finite().fold(f64::INFINITY, f64::min);
    assert!(hi - lo < 1300.0, "one shift fits the column");
    -(hi + lo) / 2.0
}

/// `ln Z` and the label marginals by enumeration in exact rationals.
fn oracle(s: &[Vec<Vec<f64>>], rooting: Rooting) -> (f64, Vec<Matrix<f64>>) {
    let shifts: Vec<f64> = (0..4)
        .map(|m| if m == 0 { 0.0 } else { column_shift(s, m) })
        .collect();
    let labels = (0..LABELS)
        .map(|l| {
            Matrix::from_fn(4, 4, |h, m| {
                let t = s[h][m][l];
                if m == 0 || h == m || t == NINF {
                    return Rational::from_f64(0.0);
                }
                let x = (t + shifts[m]).exp();
                assert!(x >= f64::MIN_POSITIVE && x.is_finite(), "a normal weight");
                Rational::from_f64(x)
            })
        })
        .collect();
    let lw = LabeledWeights::new(labels);
    let ln_z = lw.partition(rooting).ln_abs() - shifts.iter().sum::<f64>();
    let mu = lw.label_marginals(rooting).expect("a tree exists");
    (
        ln_z,
        mu.into_iter().map(|m| m.map(Scalar::to_f64)).collect(),
    )
}

/// The engine's `ln Z`, label marginals and entropy against the oracle, or
/// a typed refusal: underflow (`Numerical::Underflow`), or a dense LU's
/// own check (`Numerical::Inaccurate`: the root arc's weight is ~700
/// orders below the others of its Laplacian column). Tolerances: abs `1e-12`
/// on the marginals and the entropy (a few LUs of condition < 1e3 on
/// three words), rel `1e-13` on `ln Z` (of magnitude ~700).
fn answers_right_or_refuses<E: Engine<Scalar = f64>>(engine: E, g: &Graph, s: &[Vec<Vec<f64>>]) {
    for rooting in Rooting::ALL {
        let model = Model::new(engine.clone(), g, rooting).expect("valid");
        let (ln_z, mu) = oracle(s, rooting);
        match model.log_partition() {
            Err(Error::Numerical(Numerical::Underflow { .. } | Numerical::Inaccurate { .. })) => {
                continue
            }
            Err(e) => panic!("{} {rooting:?}: {e}", engine.name()),
            Ok(x) => assert!(
                (x - ln_z).abs() <= 1e-13 * ln_z.abs().max(1.0),
                "{} {rooting:?}: ln Z {x} against {ln_z}",
                engine.name()
            ),
        }
        let got = model.label_marginals().expect("label marginals");
        for l in 0..LABELS {
            for (a, b) in got[l].as_slice().iter().zip(mu[l].as_slice()) {
                assert!(
                    (a - b).abs() <= 1e-12,
                    "{} {rooting:?} label {l}: {a} against {b}",
                    engine.name()
                );
            }
        }
        let mut expected = ln_z;
        for l in 0..LABELS {
            for h in 0..4 {
                for m in 1..4 {
                    let t = s[h][m][l];
                    if mu[l][(h, m)] != 0.0 {
                        expected -= mu[l][(h, m)] * t;
                    }
                }
            }
        }
        let h = model.entropy().expect("entropy");
        assert!(
            (h - expected).abs() <= 1e-12,
            "{} {rooting:?}: H {h} against {expected}",
            engine.name()
        );
    }
}

fn every_engine(g: &Graph, s: &[Vec<Vec<f64>>]) {
    answers_right_or_refuses(Accurate, g, s);
    answers_right_or_refuses(ShiftedF64, g, s);
    answers_right_or_refuses(F64, g, s);
}

#[test]
fn shares_of_a_root_arc_700_below_its_column() {
    let s = scores(-700.0);
    let g = Graph::from_labeled_scores(&s).expect("valid");
    every_engine(&g, &s);
    // The single root arc carries every tree: its shares are the label
    // marginals, `1 / (1 + e^{−1.5})` and the rest, whatever its weight.
    let (_, mu) = oracle(&s, Rooting::Single);
    assert!((mu[0][(0, 1)] - 1.0 / (1.0 + (-1.5f64).exp())).abs() < 1e-15);
    let model = Model::new(Accurate, &g, Rooting::Single).expect("valid");
    let got = model.label_marginals().expect("answers");
    assert!((got[1][(0, 1)] - mu[1][(0, 1)]).abs() <= 1e-15);
}

#[test]
fn a_root_arc_715_below_its_column_is_refused_or_right() {
    // e^{−715} is subnormal: the weights lose bits, the trees through
    // them are every tree.
    let s = scores(-715.0);
    let g = Graph::from_labeled_scores(&s).expect("valid");
    every_engine(&g, &s);
}

#[test]
fn the_same_graph_as_weights() {
    // Weights: the scores shifted per word as the oracle does (ln Z moves
    // by the shifts' sum, which the oracle's `ln Z` does not carry here).
    let s = scores(-700.0);
    let shifts: Vec<f64> = (0..4)
        .map(|m| if m == 0 { 0.0 } else { column_shift(&s, m) })
        .collect();
    let shifted: Vec<Vec<Vec<f64>>> = (0..4)
        .map(|h| {
            (0..4)
                .map(|m| s[h][m].iter().map(|t| t + shifts[m]).collect())
                .collect()
        })
        .collect();
    let w: Vec<Vec<Vec<f64>>> = shifted
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| c.iter().map(|t| t.exp()).collect())
                .collect()
        })
        .collect();
    let g = Graph::from_labeled_weights(&w).expect("valid");
    for rooting in Rooting::ALL {
        let (_, mu) = oracle(&s, rooting);
        // The unstabilised dense engine may refuse (a typed numerical
        // error: the weights span 1e-300 to 1e217); the accurate one answers.
        for (dense, got) in [
            (
                false,
                Model::new(Accurate, &g, rooting).and_then(|m| m.label_marginals()),
            ),
            (
                true,
                Model::new(F64, &g, rooting).and_then(|m| m.label_marginals()),
            ),
        ] {
            let got = match got {
                Err(Error::Numerical(_)) if dense => continue,
                got => got.expect("label marginals"),
            };
            for l in 0..LABELS {
                for (a, b) in got[l].as_slice().iter().zip(mu[l].as_slice()) {
                    assert!(
                        (a - b).abs() <= 1e-12,
                        "{rooting:?} label {l}: {a} against {b}"
                    );
                }
            }
        }
    }
}
