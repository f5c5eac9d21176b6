//! k-best trees against the sorted brute-force list of every tree: scores
//! exactly (rationals; integer scores in `f64`, whose sums are exact), ties
//! included, both rootings, labeled and unlabeled.

use spantree_bruteforce::random::{rows, SplitMix64};
use spantree_bruteforce::{for_each_tree, LabeledWeights};
use spantree_core::decode::kbest::{k_best_arborescences, k_best_arborescences_lawler};
use spantree_core::{Error, Graph, Matrix, NoTree, Rooting};
use spantree_exact::Rational;

/// `(heads, labels)` of a labeled tree.
type LabeledTree = (Vec<usize>, Vec<usize>);

/// Small integer weights `0..=3` on existing arcs: many ties, some zeros.
fn integer_weights(r: &mut SplitMix64, n: usize) -> Matrix<Rational> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            Rational::from(0)
        } else {
            Rational::from(r.below(4) as i64)
        }
    })
}

/// Checks a ranked list against every `(tree, value)` of the distribution:
/// non-increasing values equal to the sorted brute-force values, no
/// duplicates, each tree's value right, length `min(k, #trees)`; within the
/// last (possibly cut) tie group only membership can be asked.
fn check_list<T: Ord + Clone + std::fmt::Debug, V: PartialOrd + Clone + std::fmt::Debug>(
    list: &[(T, V)],
    mut all: Vec<(T, V)>,
    k: usize,
) {
    all.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then_with(|| a.0.cmp(&b.0)));
    assert_eq!(list.len(), k.min(all.len()));
    let values: Vec<V> = list.iter().map(|(_, v)| v.clone()).collect();
    let expected: Vec<V> = all.iter().take(k).map(|(_, v)| v.clone()).collect();
    assert_eq!(values, expected);
    let mut seen: Vec<T> = list.iter().map(|(t, _)| t.clone()).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), list.len(), "duplicates");
    for (t, v) in list {
        let found = all
            .iter()
            .find(|(u, _)| u == t)
            .expect("a tree of the rooting");
        assert_eq!(&found.1, v, "{t:?}");
    }
}

#[test]
fn exact_k_best_is_the_sorted_list_of_every_tree() {
    let mut r = SplitMix64::new(31);
    for rooting in Rooting::ALL {
        for n in 1..=5 {
            for _ in 0..4 {
                let w = integer_weights(&mut r, n);
                let graph =
                    Graph::from_weights(&(0..=n).map(|h| w.row(h).to_vec()).collect::<Vec<_>>())
                        .unwrap();
                let mut all = Vec::new();
                for_each_tree(
                    n,
                    rooting,
                    |h, m| w[(h, m)] != Rational::from(0),
                    |t| all.push((t.heads()[1..].to_vec(), t.weight(&w))),
                );
                if all.is_empty() {
                    let reason = graph.spanning_tree(rooting).unwrap_err();
                    assert_eq!(
                        graph.k_best_exact(rooting, 3).unwrap_err(),
                        Error::NoSpanningTree(reason)
                    );
                    continue;
                }
                for k in [1, 2, 7, all.len(), all.len() + 5] {
                    let list = graph.k_best_exact(rooting, k).unwrap();
                    let as_heads: Vec<(Vec<usize>, Rational)> = list
                        .iter()
                        .map(|(t, v)| (t.heads().to_vec(), v.clone()))
                        .collect();
                    check_list(&as_heads, all.clone(), k);
                    assert_eq!(list[0].0, graph.best_tree_exact(rooting).unwrap());
                }
            }
        }
    }
}

/// `n = 6, 7` with integer scores in `[-3, 3]` (sums exact in `f64`, many
/// ties): the 60 best against the sorted enumeration.
#[test]
fn k_best_at_seven_words_with_tied_integer_scores() {
    let mut r = SplitMix64::new(32);
    for rooting in Rooting::ALL {
        for n in [6, 7] {
            let scores = Matrix::from_fn(n + 1, n + 1, |h, m| {
                if m == 0 || h == m || r.chance(0.1) {
                    f64::NEG_INFINITY
                } else {
                    r.below(7) as f64 - 3.0
                }
            });
            let graph = Graph::from_scores(&rows(&scores)).unwrap();
            let mut all = Vec::new();
            for_each_tree(
                n,
                rooting,
                |h, m| scores[(h, m)] > f64::NEG_INFINITY,
                |t| all.push((t.heads()[1..].to_vec(), t.score(&scores))),
            );
            let k = 60;
            let list = graph.k_best(rooting, k).unwrap();
            assert_eq!(list[0].0, graph.best_tree(rooting).unwrap());
            let as_heads: Vec<(Vec<usize>, f64)> =
                list.iter().map(|(t, v)| (t.heads().to_vec(), *v)).collect();
            check_list(&as_heads, all, k);
        }
    }
}

#[test]
fn labeled_k_best_ranks_labeled_trees() {
    let mut r = SplitMix64::new(33);
    for rooting in Rooting::ALL {
        for n in 1..=3 {
            let labels: Vec<Matrix<Rational>> =
                (0..3).map(|_| integer_weights(&mut r, n)).collect();
            let lw = LabeledWeights::new(labels);
            let graph = Graph::from_labeled_weights(&lw.rows()).unwrap();
            let mut all = Vec::new();
            lw.for_each_labeled_tree(rooting, |heads, labels, w| {
                if w != Rational::from(0) {
                    all.push(((heads[1..].to_vec(), labels[1..].to_vec()), w));
                }
            });
            if all.is_empty() {
                assert!(graph.k_best_exact(rooting, 1).is_err());
                continue;
            }
            for k in [1, 5, all.len() + 1] {
                let list = graph.k_best_exact(rooting, k).unwrap();
                let keyed: Vec<(LabeledTree, Rational)> = list
                    .iter()
                    .map(|(t, v)| {
                        (
                            (t.heads().to_vec(), t.labels().unwrap().to_vec()),
                            v.clone(),
                        )
                    })
                    .collect();
                check_list(&keyed, all.clone(), k);
                assert_eq!(list[0].0, graph.best_tree_exact(rooting).unwrap());
            }
        }
    }
}

#[test]
fn ties_are_deterministic_and_edge_cases_are_typed() {
    // Unit weights: every tree ties; the list is the same on every call.
    let n = 4;
    let ones = vec![vec![1.0; n + 1]; n + 1]
        .into_iter()
        .enumerate()
        .map(|(h, row)| {
            row.into_iter()
                .enumerate()
                .map(|(m, w)| if m == 0 || h == m { 0.0 } else { w })
                .collect::<Vec<f64>>()
        })
        .collect::<Vec<_>>();
    let g = Graph::from_weights(&ones).unwrap();
    for rooting in Rooting::ALL {
        let a = g.k_best(rooting, 1000).unwrap();
        assert_eq!(a, g.k_best(rooting, 1000).unwrap());
        // Cayley: (n+1)^(n-1) multi-root, n^(n-1) single-root trees.
        let count = match rooting {
            Rooting::Multi => 125,
            Rooting::Single => 64,
        };
        assert_eq!(a.len(), count);
        assert!(g.k_best(rooting, 0).unwrap().is_empty());
    }
    let g = Graph::from_weights(&[[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]).unwrap();
    assert_eq!(
        g.k_best(Rooting::Multi, 2).unwrap_err(),
        Error::NoSpanningTree(NoTree::NoRootArc)
    );
    assert_eq!(
        k_best_arborescences::<f64>(0, 1, Rooting::Multi, 1, |_, _, _| None).unwrap_err(),
        Error::Empty
    );
}

/// Camerini et al.'s swaps against the plain partitioning scheme, which
/// decodes every subproblem afresh: the same list on `N(0, 1)` scores (no
/// ties, so the order is unique), both rootings, unlabeled and with three
/// labels, some arcs forbidden, `n` up to 30.
#[test]
fn swaps_give_the_list_of_the_plain_partitioning() {
    let mut r = SplitMix64::new(34);
    for rooting in Rooting::ALL {
        for (n, labels) in [
            (1, 1),
            (2, 1),
            (3, 3),
            (8, 1),
            (8, 3),
            (12, 1),
            (30, 1),
            (20, 2),
        ] {
            let scores: Vec<f64> = (0..(n + 1) * (n + 1) * labels)
                .map(|_| {
                    if r.chance(0.15) {
                        f64::NEG_INFINITY
                    } else {
                        r.normal()
                    }
                })
                .collect();
            let score = |h: usize, m: usize, l: usize| {
                let s = scores[(h * (n + 1) + m) * labels + l];
                (s > f64::NEG_INFINITY).then_some(s)
            };
            let k = 120;
            let fast = k_best_arborescences(n, labels, rooting, k, score);
            let plain = k_best_arborescences_lawler(n, labels, rooting, k, score);
            assert_eq!(fast, plain, "{rooting:?} n = {n}, {labels} labels");
        }
    }
}
