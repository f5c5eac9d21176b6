//! Maximum spanning arborescences, MBR trees, tree probabilities and the
//! min-entropy, against brute-force enumeration of every tree (`n ≤ 7`), exact
//! rationals and identities.

use spantree_bruteforce::random::{normal_scores, rows, weights_of, SplitMix64};
use spantree_bruteforce::{for_each_tree, LabeledWeights};
use spantree_core::decode::{max_arborescence, Multiplicative};
use spantree_core::{Error, Graph, Matrix, Model, NoTree, Rooting, Tree, TreeDefect};
use spantree_exact::Rational;
use spantree_faer::{LogAccurate, ShiftedF64};

/// Relative slack for `f64` tree scores: a sum of `n ≤ 7` scores is exact to
/// a few ulps, and Chu–Liu–Edmonds' reduced scores (differences of at most
/// `2n` scores) round at most that much; `1e-12` is far above both and far
/// below the gap between distinct random tree scores.
const SLACK: f64 = 1e-12;

/// The heads `heads[i]` of word `i + 1` of a brute-force tree.
fn heads_of(t: &spantree_bruteforce::Tree) -> Vec<usize> {
    t.heads()[1..].to_vec()
}

fn graph_of(scores: &Matrix<f64>) -> Graph {
    Graph::from_scores(&rows(scores)).unwrap()
}

/// The brute-force maximum score and the number of trees of `rooting`.
fn brute_max(scores: &Matrix<f64>, rooting: Rooting) -> Option<f64> {
    let n = scores.rows() - 1;
    let mut best: Option<f64> = None;
    for_each_tree(
        n,
        rooting,
        |h, m| scores[(h, m)] > f64::NEG_INFINITY,
        |t| {
            let s = t.score(scores);
            best = Some(best.map_or(s, |b: f64| b.max(s)));
        },
    );
    best
}

/// Decodes and checks the result against the brute-force maximum: the same
/// score (exactly when `exact`), the rooting respected, no forbidden arc; or
/// the no-tree reason of `Graph::spanning_tree` when there is no tree.
fn check_decoder(scores: &Matrix<f64>, rooting: Rooting, exact: bool) -> Option<Tree> {
    let graph = graph_of(scores);
    let decoded = graph.best_tree(rooting);
    match brute_max(scores, rooting) {
        None => {
            let reason = graph.spanning_tree(rooting).unwrap_err();
            assert_eq!(decoded, Err(Error::NoSpanningTree(reason)));
            None
        }
        Some(max) => {
            let tree = decoded.unwrap();
            let s = tree.score(&graph).unwrap();
            assert!(s.is_finite(), "a forbidden arc in {tree:?}");
            if exact {
                assert_eq!(s, max, "{tree:?} under {rooting:?}");
            } else {
                assert!(
                    (s - max).abs() <= SLACK * max.abs().max(1.0),
                    "{s} vs {max}"
                );
            }
            if rooting == Rooting::Single {
                assert_eq!(tree.root_children().len(), 1);
            }
            Some(tree)
        }
    }
}

#[test]
fn random_scores_decode_to_a_maximiser() {
    let mut rng = SplitMix64::new(12);
    for n in 1..=7 {
        let cases = if n == 7 { 3 } else { 25 };
        for _ in 0..cases {
            let scores = normal_scores(&mut rng, n, 2.0, 0.0);
            for rooting in Rooting::ALL {
                check_decoder(&scores, rooting, false).unwrap();
            }
        }
    }
}

/// Integer scores from `{0, 1, 2}`: many tied maxima. Sums of small integers
/// are exact in `f64`, so the decoded score must equal the maximum exactly,
/// and decoding twice must give the same tree (the documented tie rule is a
/// deterministic function of the scores).
#[test]
fn ties_decode_to_an_exact_maximiser_deterministically() {
    let mut rng = SplitMix64::new(7);
    for n in 1..=7 {
        let cases = if n == 7 { 3 } else { 30 };
        for _ in 0..cases {
            let scores = Matrix::from_fn(n + 1, n + 1, |h, m| {
                if m == 0 || h == m {
                    f64::NEG_INFINITY
                } else {
                    rng.below(3) as f64
                }
            });
            for rooting in Rooting::ALL {
                let t = check_decoder(&scores, rooting, true).unwrap();
                assert_eq!(graph_of(&scores).best_tree(rooting).unwrap(), t);
            }
        }
    }
}

#[test]
fn forbidden_arcs_are_never_used_and_no_tree_is_reported() {
    let mut rng = SplitMix64::new(99);
    let (mut some, mut none) = (0, 0);
    for n in 1..=6 {
        for _ in 0..40 {
            let scores = normal_scores(&mut rng, n, 1.0, 0.6);
            for rooting in Rooting::ALL {
                match check_decoder(&scores, rooting, false) {
                    Some(_) => some += 1,
                    None => none += 1,
                }
            }
        }
    }
    // Both branches were exercised.
    assert!(some > 50 && none > 50, "{some} with trees, {none} without");
}

/// Root arcs far above every other arc: the unconstrained maximum attaches
/// every word to the root, so the single-root decoder must do something else,
/// and still find the single-root maximum.
#[test]
fn single_root_decoder_differs_when_the_best_tree_has_many_root_children() {
    let mut rng = SplitMix64::new(3);
    for n in 2..=7 {
        for _ in 0..if n == 7 { 2 } else { 10 } {
            let mut scores = normal_scores(&mut rng, n, 1.0, 0.0);
            for m in 1..=n {
                scores[(0, m)] += 10.0;
            }
            let multi = check_decoder(&scores, Rooting::Multi, false).unwrap();
            assert_eq!(multi.root_children().len(), n);
            let single = check_decoder(&scores, Rooting::Single, false).unwrap();
            assert_eq!(single.root_children().len(), 1);
        }
    }
}

#[test]
fn huge_and_tiny_scores_decode() {
    // Scores up to ±1e4 and weights from 1e-300 to 1e300 (as scores ±690).
    let mut rng = SplitMix64::new(5);
    for bound in [1e4, 690.0] {
        for n in 2..=6 {
            let scores = Matrix::from_fn(n + 1, n + 1, |h, m| {
                if m == 0 || h == m {
                    f64::NEG_INFINITY
                } else {
                    rng.uniform_in(-bound, bound)
                }
            });
            for rooting in Rooting::ALL {
                // Reduced scores are differences of values up to 1e4: rounding
                // at 1e4 · 2^-52 ≈ 2e-12 absolute, within SLACK relative.
                check_decoder(&scores, rooting, false).unwrap();
            }
        }
    }
}

#[test]
fn no_tree_inputs_give_the_spanning_tree_reason() {
    let ninf = f64::NEG_INFINITY;
    // No root arc.
    let a = [[ninf, ninf, ninf], [ninf, ninf, 1.0], [ninf, 1.0, ninf]];
    // Word 2 unreachable.
    let b = [[ninf, 1.0, ninf], [ninf, ninf, ninf], [ninf, 1.0, ninf]];
    // Single root impossible: 0 → 1 and 0 → 2, no word-to-word arc.
    let c = [[ninf, 1.0, 1.0], [ninf, ninf, ninf], [ninf, ninf, ninf]];
    let cases = [
        (&a[..], Rooting::Multi, NoTree::NoRootArc),
        (&b[..], Rooting::Single, NoTree::Unreachable { word: 2 }),
        (&c[..], Rooting::Single, NoTree::NoSingleRoot),
    ];
    for (rows, rooting, reason) in cases {
        let g = Graph::from_scores(rows).unwrap();
        assert_eq!(g.best_tree(rooting), Err(Error::NoSpanningTree(reason)));
        let model = Model::new(ShiftedF64, &g, rooting).unwrap();
        assert_eq!(model.best_tree(), Err(Error::NoSpanningTree(reason)));
        assert_eq!(model.min_entropy(), Err(Error::NoSpanningTree(reason)));
    }
    // The multi-root case of `c` has a tree.
    let g = Graph::from_scores(&c).unwrap();
    assert_eq!(g.best_tree(Rooting::Multi).unwrap().heads(), &[0, 0]);
}

/// Exact rationals: random weights `p/q` with zeros; the decoded tree's exact
/// weight equals the brute-force maximum exactly, and the generic decoder on
/// `Multiplicative<Rational>` agrees.
#[test]
fn exact_rational_decoding_is_exactly_maximal() {
    let mut rng = SplitMix64::new(41);
    for n in 1..=6 {
        for _ in 0..if n == 6 { 4 } else { 15 } {
            let w = Matrix::from_fn(n + 1, n + 1, |h, m| {
                if m == 0 || h == m || rng.chance(0.25) {
                    Rational::from(0)
                } else {
                    Rational::new(1 + rng.below(6) as u64, 1 + rng.below(4) as u64)
                }
            });
            let graph = Graph::from_weights(&rows(&w)).unwrap();
            for rooting in Rooting::ALL {
                let mut best: Option<Rational> = None;
                for t in spantree_bruteforce::trees(&w, rooting) {
                    let x = t.weight(&w);
                    if best.as_ref().is_none_or(|b| x > *b) {
                        best = Some(x);
                    }
                }
                let decoded = graph.best_tree_exact(rooting);
                let generic = max_arborescence(n, rooting, |h, m| {
                    let x = w[(h, m)].clone();
                    (x != Rational::from(0)).then_some(Multiplicative(x))
                });
                match best {
                    None => {
                        assert!(matches!(decoded, Err(Error::NoSpanningTree(_))));
                        assert_eq!(decoded.unwrap_err(), generic.unwrap_err());
                    }
                    Some(best) => {
                        let t = decoded.unwrap();
                        assert_eq!(t.weight(&graph).unwrap(), best);
                        let g = Tree::new(generic.unwrap()).unwrap();
                        assert_eq!(g.weight(&graph).unwrap(), best);
                    }
                }
            }
        }
    }
}

/// Labeled graphs: the best labeled tree against every labeled tree
/// (`LabeledWeights::for_each_labeled_tree`), in exact rationals and in `f64`.
#[test]
fn labeled_graphs_decode_to_the_best_labeled_tree() {
    let mut rng = SplitMix64::new(8);
    for n in 1..=4 {
        for _ in 0..10 {
            let labels: Vec<Matrix<Rational>> = (0..3)
                .map(|_| {
                    Matrix::from_fn(n + 1, n + 1, |h, m| {
                        if m == 0 || h == m || rng.chance(0.3) {
                            Rational::from(0)
                        } else {
                            Rational::from(1 + rng.below(9) as u64)
                        }
                    })
                })
                .collect();
            let lw = LabeledWeights::new(labels.clone());
            let graph = Graph::from_labeled_weights(&lw.rows()).unwrap();
            let scores: Vec<Vec<Vec<f64>>> = lw
                .rows()
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|c| c.iter().map(|x| x.to_f64_nearest().ln()).collect())
                        .collect()
                })
                .collect();
            let fgraph = Graph::from_labeled_scores(&scores).unwrap();
            for rooting in Rooting::ALL {
                let mut best: Option<Rational> = None;
                lw.for_each_labeled_tree(rooting, |_, _, x| {
                    if best.as_ref().is_none_or(|b| x > *b) {
                        best = Some(x);
                    }
                });
                match best {
                    None => assert!(graph.best_tree_exact(rooting).is_err()),
                    Some(best) => {
                        let t = graph.best_tree_exact(rooting).unwrap();
                        assert_eq!(t.labels().unwrap().len(), n);
                        assert_eq!(t.weight(&graph).unwrap(), best);
                        let f = fgraph.best_tree(rooting).unwrap();
                        let max = best.to_f64_nearest().ln();
                        // ln of integers ≤ 9^n: a few ulps of rounding.
                        assert!((f.score(&fgraph).unwrap() - max).abs() < SLACK * max.max(1.0));
                        assert!(
                            (f.weight(&graph).unwrap().to_f64_nearest().ln() - max).abs() < 1e-12
                        );
                    }
                }
            }
        }
    }
}

/// `ln p(d)` of every tree against `w(d) / Z` by enumeration, the min-entropy
/// against `−ln max_d p(d)`, and `renyi_entropy(∞)` = `min_entropy()`.
#[test]
fn tree_probabilities_and_min_entropy_match_brute_force() {
    let mut rng = SplitMix64::new(21);
    for n in 1..=5 {
        for _ in 0..6 {
            let scores = normal_scores(&mut rng, n, 1.5, 0.2);
            let graph = graph_of(&scores);
            let w = weights_of(&scores);
            for rooting in Rooting::ALL {
                if graph.spanning_tree(rooting).is_err() {
                    continue;
                }
                // The log-space elimination: `w^50` spans too many decades for an LU.
                let model = Model::new(LogAccurate, &graph, rooting).unwrap();
                let z = spantree_bruteforce::partition(&w, rooting);
                let mut max_p: f64 = 0.0;
                let mut total = 0.0;
                for t in spantree_bruteforce::trees(&w, rooting) {
                    let p = t.weight(&w) / z;
                    max_p = max_p.max(p);
                    let tree = Tree::new(heads_of(&t)).unwrap();
                    let lp = model.log_probability(&tree).unwrap();
                    // rel 1e-10: one LU of a well-conditioned n ≤ 5 Laplacian.
                    assert!((lp - p.ln()).abs() < 1e-10, "{lp} vs {}", p.ln());
                    total += lp.exp();
                }
                assert!((total - 1.0).abs() < 1e-10);
                let h_inf = model.min_entropy().unwrap();
                assert!((h_inf + max_p.ln()).abs() < 1e-10);
                assert_eq!(model.renyi_entropy(f64::INFINITY).unwrap(), h_inf);
                // Rényi entropies decrease in α towards H_∞.
                assert!(model.renyi_entropy(50.0).unwrap() >= h_inf - 1e-10);
            }
        }
    }
}

#[test]
fn log_probability_of_impossible_trees_is_minus_infinity() {
    let ninf = f64::NEG_INFINITY;
    let g = Graph::from_scores(&[[ninf, 0.0, 0.0], [ninf, ninf, ninf], [ninf, 1.0, ninf]]).unwrap();
    let single = Model::new(ShiftedF64, &g, Rooting::Single).unwrap();
    // Two root children under a single-root model.
    let two = Tree::new(vec![0, 0]).unwrap();
    assert_eq!(single.log_probability(&two).unwrap(), ninf);
    // A forbidden arc 1 → 2.
    let forbidden = Tree::new(vec![0, 1]).unwrap();
    assert_eq!(single.log_probability(&forbidden).unwrap(), ninf);
    // The one single-root tree has probability 1.
    let only = Tree::new(vec![2, 0]).unwrap();
    assert!(single.log_probability(&only).unwrap().abs() < 1e-12);
    // A tree of another length.
    assert!(matches!(
        single.log_probability(&Tree::new(vec![0]).unwrap()),
        Err(Error::Mismatch { .. })
    ));
}

/// The MBR tree maximises `Σ_m μ(ĥ_m → m)` over all trees of the rooting
/// (brute force), so its expected attachment score is at least the best
/// tree's.
#[test]
fn mbr_tree_maximises_expected_attachment() {
    let mut rng = SplitMix64::new(31);
    for n in 1..=6 {
        for _ in 0..8 {
            let scores = normal_scores(&mut rng, n, 2.0, 0.15);
            let graph = graph_of(&scores);
            for rooting in Rooting::ALL {
                if graph.spanning_tree(rooting).is_err() {
                    continue;
                }
                let model = Model::new(ShiftedF64, &graph, rooting).unwrap();
                let mu = model.marginals().unwrap();
                let mbr = model.mbr_tree().unwrap();
                let eas = |heads: &[usize]| model.expected_attachment(heads, None).unwrap();
                let mut best = f64::NEG_INFINITY;
                for_each_tree(
                    n,
                    rooting,
                    |h, m| graph.is_allowed(h, m),
                    |t| {
                        best = best.max(t.score(&mu) / n as f64);
                    },
                );
                // Sums of n ≤ 6 marginals: rounding far below 1e-12.
                assert!((eas(mbr.heads()) - best).abs() < 1e-12);
                let mode = model.best_tree().unwrap();
                assert!(eas(mbr.heads()) >= eas(mode.heads()) - 1e-12);
                if rooting == Rooting::Single {
                    assert_eq!(mbr.root_children().len(), 1);
                }
            }
        }
    }
}

/// Labeled MBR: every labeled tree's expected labeled attachment score
/// `(1/n) Σ_m μ(h_m → m, ℓ_m)` from the brute-force label marginals; the MBR
/// tree attains the maximum.
#[test]
fn labeled_mbr_tree_maximises_expected_labeled_attachment() {
    let mut rng = SplitMix64::new(77);
    for n in 1..=4 {
        for _ in 0..6 {
            let labels: Vec<Matrix<f64>> = (0..2)
                .map(|_| weights_of(&normal_scores(&mut rng, n, 1.0, 0.1)))
                .collect();
            let lw = LabeledWeights::new(labels);
            let graph = Graph::from_labeled_weights(&lw.rows()).unwrap();
            for rooting in Rooting::ALL {
                let Some(lmu) = lw.label_marginals(rooting) else {
                    continue;
                };
                let model = Model::new(ShiftedF64, &graph, rooting).unwrap();
                let mbr = model.mbr_tree().unwrap();
                let score = |heads: &[usize], ls: &[usize]| -> f64 {
                    (0..n).map(|i| lmu[ls[i]][(heads[i], i + 1)]).sum::<f64>() / n as f64
                };
                let mut best = f64::NEG_INFINITY;
                lw.for_each_labeled_tree(rooting, |h, l, _| {
                    best = best.max(score(&h[1..], &l[1..]));
                });
                let got = score(mbr.heads(), mbr.labels().unwrap());
                // Marginals from one LU (rel 1e-12) summed over n ≤ 4 words.
                assert!((got - best).abs() < 1e-10, "{got} vs {best}");
                let eas = model
                    .expected_attachment(mbr.heads(), mbr.labels())
                    .unwrap();
                assert!((eas - got).abs() < 1e-10);
            }
        }
    }
}

/// `ln Z(βθ) / β → max_d θ(d)`: for `N` trees,
/// `max ≤ ln Z(βθ)/β ≤ max + ln N / β`, so the gap shrinks like `1/β`.
#[test]
fn scaled_log_partition_tends_to_the_best_score() {
    let mut rng = SplitMix64::new(17);
    for n in [3, 6, 12, 30] {
        let scores = normal_scores(&mut rng, n, 1.0, 0.0);
        let graph = graph_of(&scores);
        for rooting in Rooting::ALL {
            let best = graph.best_tree(rooting).unwrap().score(&graph).unwrap();
            let trees = match rooting {
                Rooting::Multi => (n as f64 - 1.0) * ((n + 1) as f64).ln(),
                Rooting::Single => (n as f64 - 1.0) * (n as f64).ln(),
            };
            for beta in [1.0, 10.0, 100.0, 1000.0] {
                // βθ spans thousands within a column: the log-space elimination.
                let ln_z = Model::new(LogAccurate, &graph.powered(beta), rooting)
                    .unwrap()
                    .log_partition()
                    .unwrap()
                    / beta;
                // rel 1e-12 of ln Z(βθ) for the LU, divided by β.
                let tol = 1e-12 * (ln_z.abs() + 1.0);
                assert!(ln_z >= best - tol, "n {n} β {beta}: {ln_z} < {best}");
                assert!(ln_z <= best + trees / beta + tol, "n {n} β {beta}");
            }
        }
    }
}

/// Larger graphs: no oracle enumerates them, but the decoded tree must beat
/// or tie every tree obtained by changing one head (a necessary condition of
/// optimality) and respect the rooting.
#[test]
fn large_trees_are_locally_optimal() {
    let mut rng = SplitMix64::new(2);
    for n in [20, 60] {
        let scores = normal_scores(&mut rng, n, 1.0, 0.3);
        let graph = graph_of(&scores);
        for rooting in Rooting::ALL {
            let Ok(tree) = graph.best_tree(rooting) else {
                assert!(graph.spanning_tree(rooting).is_err());
                continue;
            };
            let s = tree.score(&graph).unwrap();
            for m in 1..=n {
                for h in 0..=n {
                    let mut heads = tree.heads().to_vec();
                    heads[m - 1] = h;
                    let Ok(t) = Tree::new(heads) else { continue };
                    if rooting == Rooting::Single && t.root_children().len() != 1 {
                        continue;
                    }
                    assert!(t.score(&graph).unwrap() <= s + 1e-9);
                }
            }
        }
    }
}

/// The tree type: validation errors, accessors, and projectivity against its
/// definition (every word between a head and its dependent descends from the
/// head) on every tree with up to 5 words.
#[test]
fn trees_validate_and_know_their_projectivity() {
    let invalid = |heads: Vec<usize>| Tree::new(heads).unwrap_err();
    assert_eq!(Tree::new(vec![]), Err(Error::Empty));
    assert_eq!(
        invalid(vec![0, 3]),
        Error::InvalidTree {
            word: 2,
            reason: TreeDefect::HeadOutOfRange { head: 3 }
        }
    );
    assert_eq!(
        invalid(vec![1]),
        Error::InvalidTree {
            word: 1,
            reason: TreeDefect::SelfLoop
        }
    );
    assert!(matches!(
        invalid(vec![0, 3, 2]),
        Error::InvalidTree {
            reason: TreeDefect::Cycle,
            ..
        }
    ));
    assert!(matches!(
        Tree::with_labels(vec![0, 1], vec![0]),
        Err(Error::Mismatch { .. })
    ));
    let t = Tree::with_labels(vec![0, 1, 1], vec![2, 0, 1]).unwrap();
    assert_eq!((t.n(), t.head(3), t.label(1)), (3, 1, Some(2)));
    assert_eq!(t.arcs().collect::<Vec<_>>(), vec![(0, 1), (1, 2), (1, 3)]);
    for n in 1..=5 {
        for rooting in Rooting::ALL {
            for_each_tree(
                n,
                rooting,
                |_, _| true,
                |bt| {
                    let heads = heads_of(bt);
                    let descends = |mut x: usize, h: usize| {
                        while x != 0 && x != h {
                            x = heads[x - 1];
                        }
                        x == h
                    };
                    let projective = (1..=n).all(|m| {
                        let h = heads[m - 1];
                        (h.min(m) + 1..h.max(m)).all(|k| descends(k, h))
                    });
                    let tree = Tree::new(heads.clone()).unwrap();
                    assert_eq!(tree.is_projective(), projective, "{heads:?}");
                },
            );
        }
    }
}
