//! Projective trees (Eisner's chart) against brute-force enumeration filtered
//! by projectivity, exact rational counts, identities, and complex-step
//! derivatives.

use num_complex::Complex64;
use spantree_bruteforce::random::{normal_scores, rows, weights_of, SplitMix64};
use spantree_bruteforce::{for_each_tree, LabeledWeights};
use spantree_core::decode::projective::{max_projective, partition, Chart, Projective, Semiring};
use spantree_core::decode::Multiplicative;
use spantree_core::{log_sum_exp, Error, Graph, Matrix, Model, Rooting, Tree};
use spantree_exact::Rational;
use spantree_faer::LogAccurate;

fn graph_of(scores: &Matrix<f64>) -> Graph {
    Graph::from_scores(&rows(scores)).unwrap()
}

fn is_projective(t: &spantree_bruteforce::Tree) -> bool {
    Tree::new(t.heads()[1..].to_vec()).unwrap().is_projective()
}

/// Every projective tree of the support of `scores`: `(heads, score)`.
fn projective_trees(scores: &Matrix<f64>, rooting: Rooting) -> Vec<(Vec<usize>, f64)> {
    let n = scores.rows() - 1;
    let mut out = Vec::new();
    for_each_tree(
        n,
        rooting,
        |h, m| scores[(h, m)] > f64::NEG_INFINITY,
        |t| {
            if is_projective(t) {
                out.push((t.heads()[1..].to_vec(), t.score(scores)));
            }
        },
    );
    out
}

/// Two labels of weights `exp(N(0, 1))`, some arcs forbidden.
fn labeled_case(rng: &mut SplitMix64, n: usize) -> (LabeledWeights<f64>, Graph) {
    let labels: Vec<Matrix<f64>> = (0..2)
        .map(|_| weights_of(&normal_scores(rng, n, 1.0, 0.15)))
        .collect();
    let lw = LabeledWeights::new(labels);
    let graph = Graph::from_labeled_weights(&lw.rows()).unwrap();
    (lw, graph)
}

/// Every labeled projective tree `(heads, labels, weight)` (index `0` the
/// root) of positive weight.
fn labeled_projective_trees(
    lw: &LabeledWeights<f64>,
    rooting: Rooting,
) -> Vec<(Vec<usize>, Vec<usize>, f64)> {
    let mut all = Vec::new();
    lw.for_each_labeled_tree(rooting, |h, l, w| {
        if w > 0.0 && Tree::new(h[1..].to_vec()).unwrap().is_projective() {
            all.push((h.to_vec(), l.to_vec(), w));
        }
    });
    all
}

/// The projective tree counts with unit weights, `n = 1..6`, in exact
/// rationals on the chart's real semiring, and by enumeration (Tree::is_projective).
#[test]
fn projective_tree_counts() {
    let single = [1, 2, 7, 30, 143, 728];
    let multi = [1, 3, 12, 55, 273, 1428];
    for n in 1..=6 {
        let ones = Matrix::from_fn(n + 1, n + 1, |h, m| {
            Rational::from(u32::from(m != 0 && h != m))
        });
        let graph = Graph::from_weights(&rows(&ones)).unwrap();
        for (rooting, counts) in [(Rooting::Single, single), (Rooting::Multi, multi)] {
            let z = partition(&graph, rooting).unwrap();
            assert_eq!(
                z,
                Rational::from(counts[n - 1] as u64),
                "n = {n}, {rooting:?}"
            );
            let mut enumerated = 0;
            for_each_tree(
                n,
                rooting,
                |_, _| true,
                |t| {
                    enumerated += usize::from(is_projective(t));
                },
            );
            assert_eq!(enumerated, counts[n - 1]);
        }
    }
}

/// Exact projective `Z` in rationals against the sum over enumerated
/// projective trees, with zero weights.
#[test]
fn exact_projective_partition_matches_enumeration() {
    let mut rng = SplitMix64::new(4);
    for n in 1..=6 {
        for _ in 0..5 {
            let w = Matrix::from_fn(n + 1, n + 1, |h, m| {
                if m == 0 || h == m || rng.chance(0.2) {
                    Rational::from(0)
                } else {
                    Rational::new(1 + rng.below(5) as u64, 1 + rng.below(3) as u64)
                }
            });
            let graph = Graph::from_weights(&rows(&w)).unwrap();
            for rooting in Rooting::ALL {
                let mut z = Rational::from(0);
                for t in spantree_bruteforce::trees(&w, rooting) {
                    if is_projective(&t) {
                        z += t.weight(&w);
                    }
                }
                assert_eq!(partition(&graph, rooting).unwrap(), z);
            }
        }
    }
}

/// The best projective tree against the enumerated maximum: random scores
/// (rel 1e-12: sums of ≤ 7 scores), integer ties (exact), forbidden arcs
/// (no-tree reasons), and exact rationals through `max_projective`.
#[test]
fn best_projective_tree_matches_enumeration() {
    let mut rng = SplitMix64::new(10);
    for n in 1..=7 {
        for case in 0..if n == 7 { 4 } else { 20 } {
            let scores = match case % 3 {
                0 => normal_scores(&mut rng, n, 2.0, 0.0),
                1 => normal_scores(&mut rng, n, 1.0, 0.5),
                _ => Matrix::from_fn(n + 1, n + 1, |h, m| {
                    if m == 0 || h == m {
                        f64::NEG_INFINITY
                    } else {
                        rng.below(3) as f64
                    }
                }),
            };
            let graph = graph_of(&scores);
            for rooting in Rooting::ALL {
                let trees = projective_trees(&scores, rooting);
                let decoded = graph.best_projective_tree(rooting);
                if trees.is_empty() {
                    let err = decoded.unwrap_err();
                    match graph.spanning_tree(rooting) {
                        Err(reason) => assert_eq!(err, Error::NoSpanningTree(reason)),
                        Ok(()) => assert_eq!(err, Error::NoProjectiveTree),
                    }
                    continue;
                }
                let max = trees.iter().map(|t| t.1).fold(f64::NEG_INFINITY, f64::max);
                let t = decoded.unwrap();
                assert!(t.is_projective());
                if rooting == Rooting::Single {
                    assert_eq!(t.root_children().len(), 1);
                }
                let s = t.score(&graph).unwrap();
                if case % 3 == 2 {
                    assert_eq!(s, max);
                } else {
                    assert!((s - max).abs() < 1e-12 * max.abs().max(1.0));
                }
                // The same decoder in exact rationals (weights 2^θ for integer θ).
                if case % 3 == 2 {
                    let heads = max_projective(n, rooting, |h, m| {
                        Some(Multiplicative(Rational::from(
                            1u32 << scores[(h, m)] as u32,
                        )))
                    })
                    .unwrap();
                    let exact = Tree::new(heads).unwrap();
                    assert!(exact.is_projective());
                    assert_eq!(exact.score(&graph).unwrap(), max);
                }
            }
        }
    }
}

#[test]
fn only_crossing_trees_give_no_projective_tree() {
    let ninf = f64::NEG_INFINITY;
    // The only tree is 0 → 2, 2 → 1, 1 → 3, and 1 → 3 crosses 0 → 2.
    let g = Graph::from_scores(&[
        [ninf, ninf, 0.0, ninf],
        [ninf, ninf, ninf, 0.0],
        [ninf, 0.0, ninf, ninf],
        [ninf, ninf, ninf, ninf],
    ])
    .unwrap();
    for rooting in Rooting::ALL {
        assert_eq!(g.best_tree(rooting).unwrap().heads(), &[2, 0, 1]);
        assert_eq!(
            g.best_projective_tree(rooting),
            Err(Error::NoProjectiveTree)
        );
        let p = Projective::new(&g, rooting).unwrap();
        assert_eq!(p.log_partition().unwrap(), ninf);
        assert_eq!(p.marginals(), Err(Error::NoProjectiveTree));
        assert_eq!(p.entropy(), Err(Error::NoProjectiveTree));
    }
}

/// `ln Z`, marginals and entropy over projective trees against enumeration:
/// rel 1e-12 (log-sum-exps of ≤ 1428 terms).
#[test]
fn projective_inside_outside_matches_enumeration() {
    let mut rng = SplitMix64::new(23);
    for n in 1..=6 {
        for _ in 0..8 {
            let scores = normal_scores(&mut rng, n, 1.5, 0.2);
            let graph = graph_of(&scores);
            for rooting in Rooting::ALL {
                let trees = projective_trees(&scores, rooting);
                let p = Projective::new(&graph, rooting).unwrap();
                if trees.is_empty() {
                    assert_eq!(p.log_partition().unwrap(), f64::NEG_INFINITY);
                    continue;
                }
                let ln_z = log_sum_exp(trees.iter().map(|t| t.1));
                assert!((p.log_partition().unwrap() - ln_z).abs() < 1e-12 * ln_z.abs().max(1.0));
                let mut mu = Matrix::<f64>::zeros(n + 1, n + 1);
                let mut h = 0.0;
                for (heads, s) in &trees {
                    let prob = (s - ln_z).exp();
                    h -= prob * (s - ln_z);
                    for (i, &hd) in heads.iter().enumerate() {
                        mu[(hd, i + 1)] += prob;
                    }
                }
                let got = p.marginals().unwrap();
                for (a, b) in got.as_slice().iter().zip(mu.as_slice()) {
                    assert!((a - b).abs() < 1e-12, "{a} vs {b}");
                }
                assert_eq!(p.grad_log_partition().unwrap(), got);
                assert!((p.entropy().unwrap() - h).abs() < 1e-11 * h.max(1.0));
            }
        }
    }
}

/// Labeled projective trees: `ln Z`, label marginals, entropy, the best and
/// the MBR tree against every labeled projective tree.
#[test]
fn labeled_projective_quantities_match_enumeration() {
    let mut rng = SplitMix64::new(61);
    for n in 1..=4 {
        for _ in 0..5 {
            let (lw, graph) = labeled_case(&mut rng, n);
            for rooting in Rooting::ALL {
                let all = labeled_projective_trees(&lw, rooting);
                let p = Projective::new(&graph, rooting).unwrap();
                if all.is_empty() {
                    continue;
                }
                let z: f64 = all.iter().map(|t| t.2).sum();
                assert!((p.log_partition().unwrap() - z.ln()).abs() < 1e-12);
                let h: f64 = all.iter().map(|t| -(t.2 / z) * (t.2 / z).ln()).sum();
                assert!((p.entropy().unwrap() - h).abs() < 1e-11);
                let lmu = p.label_marginals().unwrap();
                for (l, ml) in lmu.iter().enumerate() {
                    for hd in 0..=n {
                        for m in 1..=n {
                            let expected: f64 = all
                                .iter()
                                .filter(|t| t.0[m] == hd && t.1[m] == l)
                                .map(|t| t.2 / z)
                                .sum();
                            assert!((ml[(hd, m)] - expected).abs() < 1e-12);
                        }
                    }
                }
                let best = p.best_tree().unwrap();
                let max = all.iter().map(|t| t.2).fold(0.0, f64::max);
                assert!((best.weight(&graph).unwrap() - max).abs() < 1e-12 * max);
                // The MBR tree maximises the expected labeled attachment
                // score (sums of at most n probabilities: 1e-12).
                let las = |heads: &[usize], ls: &[usize]| -> f64 {
                    all.iter()
                        .map(|t| {
                            let hits = (0..n)
                                .filter(|&i| t.0[i + 1] == heads[i] && t.1[i + 1] == ls[i])
                                .count();
                            hits as f64 * t.2 / z
                        })
                        .sum()
                };
                let best = all
                    .iter()
                    .map(|t| las(&t.0[1..], &t.1[1..]))
                    .fold(f64::NEG_INFINITY, f64::max);
                let mbr = p.mbr_tree().unwrap();
                assert!(mbr.is_projective());
                let got = las(mbr.heads(), mbr.labels().unwrap());
                assert!(
                    (got - best).abs() < 1e-12,
                    "{rooting:?} n = {n}: {got} vs {best}"
                );
            }
        }
    }
}

/// Projective `ln Z ≤` non-projective `ln Z` (a sum over a subset of the
/// trees), with equality for `n ≤ 2` where every tree is projective.
#[test]
fn projective_partition_is_at_most_the_nonprojective_one() {
    let mut rng = SplitMix64::new(5);
    for n in 1..=9 {
        for _ in 0..5 {
            let scores = normal_scores(&mut rng, n, 1.0, 0.0);
            let graph = graph_of(&scores);
            for rooting in Rooting::ALL {
                let proj = Projective::new(&graph, rooting)
                    .unwrap()
                    .log_partition()
                    .unwrap();
                let full = Model::new(LogAccurate, &graph, rooting)
                    .unwrap()
                    .log_partition()
                    .unwrap();
                // rel 1e-13: both are accurate log-space computations.
                let tol = 1e-13 * full.abs().max(1.0);
                if n <= 2 {
                    assert!((proj - full).abs() < tol, "n {n}: {proj} vs {full}");
                } else {
                    assert!(proj <= full + tol);
                }
            }
        }
    }
}

/// Scores up to ±1e4: `ln Z` stays finite and the marginals still sum to 1
/// in every column (and over the root's arcs for single-root trees).
#[test]
fn huge_scores_never_overflow() {
    let mut rng = SplitMix64::new(9);
    for n in [5, 20] {
        let scores = Matrix::from_fn(n + 1, n + 1, |h, m| {
            if m == 0 || h == m {
                f64::NEG_INFINITY
            } else {
                rng.uniform_in(-1e4, 1e4)
            }
        });
        let graph = graph_of(&scores);
        for rooting in Rooting::ALL {
            let p = Projective::new(&graph, rooting).unwrap();
            let ln_z = p.log_partition().unwrap();
            let best = p.best_tree().unwrap().score(&graph).unwrap();
            // max ≤ ln Z ≤ max + ln(#trees); rounding at 1e4·n·2^-52.
            assert!(ln_z >= best - 1e-9 && ln_z <= best + 3.0 * n as f64);
            let mu = p.marginals().unwrap();
            for m in 1..=n {
                let col: f64 = (0..=n).map(|h| mu[(h, m)]).sum();
                assert!((col - 1.0).abs() < 1e-9);
            }
            if rooting == Rooting::Single {
                let row: f64 = (1..=n).map(|m| mu[(0, m)]).sum();
                assert!((row - 1.0).abs() < 1e-9);
            }
            assert!(p.entropy().unwrap().is_finite());
        }
    }
}

/// The expectation semiring over complex numbers `(p, r)`, for complex-step
/// differentiation through the chart: `Z` and `r̄ = Σ_d w(d) θ(d)`.
#[derive(Clone, Debug)]
struct ComplexExpectation(Complex64, Complex64);

impl Semiring for ComplexExpectation {
    fn zero() -> Self {
        ComplexExpectation(Complex64::new(0.0, 0.0), Complex64::new(0.0, 0.0))
    }
    fn one() -> Self {
        ComplexExpectation(Complex64::new(1.0, 0.0), Complex64::new(0.0, 0.0))
    }
    fn plus(&self, o: &Self) -> Self {
        ComplexExpectation(self.0 + o.0, self.1 + o.1)
    }
    fn times(&self, o: &Self) -> Self {
        ComplexExpectation(self.0 * o.0, self.0 * o.1 + self.1 * o.0)
    }
}

const H: f64 = 1e-30;

/// `(ln Z, H)` in complex arithmetic with score `(h, m, ℓ)` perturbed by `iH`.
fn complex_log_z_and_entropy(
    labels: &[Matrix<f64>],
    rooting: Rooting,
    perturb: (usize, usize, usize),
) -> (Complex64, Complex64) {
    let n = labels[0].rows() - 1;
    let chart = Chart::inside(n, rooting, |h, m| {
        let mut acc = ComplexExpectation::zero();
        for (l, s) in labels.iter().enumerate() {
            if s[(h, m)] == f64::NEG_INFINITY {
                continue;
            }
            let bump = if perturb == (h, m, l) { H } else { 0.0 };
            let theta = Complex64::new(s[(h, m)], bump);
            let w = theta.exp();
            acc = acc.plus(&ComplexExpectation(w, w * theta));
        }
        acc
    })
    .unwrap();
    let ComplexExpectation(z, r) = chart.total().clone();
    (z.ln(), z.ln() - r / z)
}

/// Gradients of projective `ln Z` (the marginals) and of the entropy, by
/// complex step through the chart in the complex expectation semiring. Rel
/// 1e-9 of the largest entry: the outside pass adds and rescales ~n³ terms,
/// complex step is exact to rounding.
#[test]
fn projective_gradients_match_complex_step() {
    let mut rng = SplitMix64::new(13);
    for n in 1..=6 {
        for labels in [1, 2] {
            let scores: Vec<Matrix<f64>> = (0..labels)
                .map(|_| normal_scores(&mut rng, n, 1.0, 0.15))
                .collect();
            let graph = if labels == 1 {
                graph_of(&scores[0])
            } else {
                let r: Vec<Vec<Vec<f64>>> = (0..=n)
                    .map(|h| {
                        (0..=n)
                            .map(|m| scores.iter().map(|s| s[(h, m)]).collect())
                            .collect()
                    })
                    .collect();
                Graph::from_labeled_scores(&r).unwrap()
            };
            for rooting in Rooting::ALL {
                let p = Projective::new(&graph, rooting).unwrap();
                if p.log_partition().unwrap() == f64::NEG_INFINITY {
                    continue;
                }
                let lmu = p.label_marginals().unwrap();
                let gh = p.grad_entropy().unwrap();
                let scale = gh
                    .iter()
                    .flat_map(|g| g.as_slice().iter().map(|x| x.abs()))
                    .fold(1e-3, f64::max);
                for l in 0..labels {
                    for h in 0..=n {
                        for m in 1..=n {
                            if h == m || scores[l][(h, m)] == f64::NEG_INFINITY {
                                continue;
                            }
                            let (lz, ent) = complex_log_z_and_entropy(&scores, rooting, (h, m, l));
                            assert!((lz.im / H - lmu[l][(h, m)]).abs() < 1e-12);
                            let d = ent.im / H;
                            assert!(
                                (d - gh[l][(h, m)]).abs() < 1e-9 * scale,
                                "n {n} {rooting:?} ({h},{m},{l}): {d} vs {}",
                                gh[l][(h, m)]
                            );
                        }
                    }
                }
                // The real parts are the forward quantities.
                let (lz, ent) = complex_log_z_and_entropy(&scores, rooting, (0, 0, 0));
                assert!((lz.re - p.log_partition().unwrap()).abs() < 1e-12);
                assert!((ent.re - p.entropy().unwrap()).abs() < 1e-11);
            }
        }
    }
}

/// The projective MBR tree maximises the expected attachment score over
/// every enumerated projective tree, with the marginals also by enumeration
/// (tolerance 1e-12: sums of at most n marginals, each exact to ~1e-15); it
/// is projective and uses allowed arcs only; its score is at least the
/// mode's.
#[test]
fn projective_mbr_tree_maximises_the_expected_attachment() {
    let mut rng = SplitMix64::new(71);
    for n in 1..=6 {
        for _ in 0..6 {
            let scores = normal_scores(&mut rng, n, 2.0, 0.2);
            let graph = graph_of(&scores);
            for rooting in Rooting::ALL {
                let trees = projective_trees(&scores, rooting);
                let p = Projective::new(&graph, rooting).unwrap();
                if trees.is_empty() {
                    assert!(p.mbr_tree().is_err());
                    continue;
                }
                let ln_z = log_sum_exp(trees.iter().map(|t| t.1));
                let mut mu = Matrix::<f64>::zeros(n + 1, n + 1);
                for (heads, s) in &trees {
                    for (i, &hd) in heads.iter().enumerate() {
                        mu[(hd, i + 1)] += (s - ln_z).exp();
                    }
                }
                let eas = |heads: &[usize]| -> f64 {
                    heads.iter().enumerate().map(|(i, &h)| mu[(h, i + 1)]).sum()
                };
                let best = trees
                    .iter()
                    .map(|t| eas(&t.0))
                    .fold(f64::NEG_INFINITY, f64::max);
                let mbr = p.mbr_tree().unwrap();
                assert!(mbr.is_projective());
                assert!(trees.iter().any(|t| t.0 == mbr.heads()), "an allowed tree");
                assert!(
                    (eas(mbr.heads()) - best).abs() < 1e-12,
                    "{rooting:?} n = {n}"
                );
                assert!(eas(mbr.heads()) >= eas(p.best_tree().unwrap().heads()) - 1e-12);
            }
        }
    }
}
