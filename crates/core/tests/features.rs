//! The feature contractions of `expectation.rs` against their plain
//! definitions, in exact rationals (no rounding, so equality): the
//! expectation `E[r] = Σ_e μ_e r_e` with the label marginals `μ_{eℓ}` for
//! an entry of label `ℓ` and the arc marginals for a label-free one, and the
//! seed `ḡ_e = Σ_k a_k r_{e,k}` summed per arc into the matrix of its label
//! (every label's for a label-free entry). Graphs without labels, with one
//! label and with two; entries label-free, of each label, and one arc
//! twice; weights that give some words an arc of marginal above 1/2 (the
//! complement path of `expect_additive`) and leave others without.

use spantree_core::{ArcFeatures, ArcRef, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::{Exact, Rational};

const N: usize = 4;
const DIM: usize = 3;

/// Weight of `h → m` with label `l`: small integers, `0 → 1` and `1 → 2`
/// heavy (their words' top arcs), `3 → 4` zero for label 0.
fn weight(h: usize, m: usize, l: usize) -> f64 {
    if h == m || m == 0 {
        return 0.0;
    }
    match (h, m) {
        (0, 1) | (1, 2) => 40.0 + l as f64,
        (3, 4) if l == 0 => 0.0,
        _ => ((h * 3 + m * 5 + l * 7) % 4 + 1) as f64,
    }
}

fn graph(labels: Option<usize>) -> Graph {
    match labels {
        None => {
            let rows: Vec<Vec<f64>> = (0..=N)
                .map(|h| (0..=N).map(|m| weight(h, m, 0)).collect())
                .collect();
            Graph::from_weights(&rows).expect("valid weights")
        }
        Some(count) => {
            let rows: Vec<Vec<Vec<f64>>> = (0..=N)
                .map(|h| {
                    (0..=N)
                        .map(|m| (0..count).map(|l| weight(h, m, l)).collect())
                        .collect()
                })
                .collect();
            Graph::from_labeled_weights(&rows).expect("valid weights")
        }
    }
}

fn q(x: f64) -> Rational {
    Rational::from_f64(x)
}

/// Two values per arc, label-free and per label (labels `< count`), and arc
/// `2 → 3` twice.
fn features(count: usize) -> ArcFeatures<Rational> {
    let mut f = ArcFeatures::new(DIM);
    for h in 0..=N {
        for m in (1..=N).filter(|&m| m != h) {
            let labels = std::iter::once(None).chain((0..count).map(Some));
            for (j, label) in labels.enumerate() {
                let values = vec![
                    ((h + 2 * m + j) % DIM, q((h as f64 - m as f64) / 4.0)),
                    ((h * m + 1) % DIM, q(1.0 + j as f64)),
                ];
                let arc = ArcRef {
                    head: h,
                    dependent: m,
                    label,
                };
                f.push(arc, values).expect("indices below the dimension");
            }
        }
    }
    let again = ArcRef {
        head: 2,
        dependent: 3,
        label: None,
    };
    f.push(again, vec![(0, q(0.5)), (0, q(-3.0))])
        .expect("indices below the dimension");
    f
}

/// `(graph labels, label count of the features)`: unlabeled (whose one
/// label is `0`), one label, two labels.
const CASES: [(Option<usize>, usize); 3] = [(None, 1), (Some(1), 1), (Some(2), 2)];

#[test]
fn expectation_is_the_marginal_weighted_sum() {
    for (labels, count) in CASES {
        for rooting in Rooting::ALL {
            let model = Model::new(Exact, &graph(labels), rooting).expect("valid graph");
            let f = features(count);
            let mu = model.marginals().expect("marginals");
            let label_mu = model.label_marginals().expect("label marginals");
            let mut want = vec![Rational::zero(); DIM];
            for (arc, values) in f.entries() {
                let (h, m) = (arc.head, arc.dependent);
                let p = match arc.label {
                    Some(l) => label_mu[l][(h, m)].clone(),
                    None => mu[(h, m)].clone(),
                };
                for (i, v) in values {
                    want[*i] += p.clone() * v.clone();
                }
            }
            let got = model.expect_additive(&f).expect("expectation");
            assert_eq!(got, want, "labels {labels:?} {}", rooting.name());
        }
    }
}

#[test]
fn seeds_are_the_coefficient_weighted_features_per_arc() {
    let a = [q(0.75), q(-2.0), q(5.0)];
    for (labels, count) in CASES {
        let model = Model::new(Exact, &graph(labels), Rooting::Single).expect("valid graph");
        let f = features(count);
        let mut want = vec![Matrix::from_fn(N + 1, N + 1, |_, _| Rational::zero()); count];
        for (arc, values) in f.entries() {
            let mut g = Rational::zero();
            for (i, v) in values {
                g += a[*i].clone() * v.clone();
            }
            let (h, m) = (arc.head, arc.dependent);
            for (l, seed) in want.iter_mut().enumerate() {
                if arc.label.is_none_or(|k| k == l) {
                    seed[(h, m)] += g.clone();
                }
            }
        }
        let got = model.contract_features(&f, &a).expect("seeds");
        assert_eq!(got, want, "labels {labels:?}");
    }
}

/// Every way an entry can name no arc of a graph of `N` words and `count`
/// labels (by definition: a head or dependent beyond `N`, the root as
/// dependent, a self-loop, a label of no graph's label), pushed after the
/// valid entries and before a second bad one: every contraction and GE
/// answers `NoSuchArc` naming it, on graphs without labels and with two.
#[test]
fn the_first_entry_naming_no_arc_is_the_error() {
    let arc = |head, dependent, label| ArcRef {
        head,
        dependent,
        label,
    };
    let a = [q(0.75), q(-2.0), q(5.0)];
    for (labels, count) in [(None, 1), (Some(2), 2)] {
        let model = Model::new(Exact, &graph(labels), Rooting::Single).expect("valid graph");
        let bad = [
            arc(N + 1, 1, None),
            arc(0, N + 1, None),
            arc(2, 0, None),
            arc(3, 3, None),
            arc(0, 1, Some(count)),
            arc(1, 2, Some(usize::MAX)),
        ];
        for b in bad {
            let mut f = features(count);
            f.push(b, vec![(0, q(1.0))])
                .expect("index below the dimension");
            f.push(arc(N + 2, N + 2, None), vec![(1, q(1.0))])
                .expect("index below the dimension");
            let want = || Some(spantree_core::Error::NoSuchArc { arc: b, n: N });
            assert_eq!(model.expect_additive(&f).err(), want(), "{b}");
            assert_eq!(model.contract_features(&f, &a).err(), want(), "{b}");
            assert_eq!(model.ge_objective(&f, &a).err(), want(), "{b}");
            assert_eq!(model.grad_ge_objective(&f, &a).err(), want(), "{b}");
        }
    }
}
