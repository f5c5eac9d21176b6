//! Exact tree samplers: the step probabilities against brute-force
//! enumeration in exact rationals, χ² goodness of fit against enumeration,
//! arc frequencies against the marginals, reproducibility of the streams.

use spantree_bruteforce::random::{normal_scores, rows, SplitMix64};
use spantree_bruteforce::{for_each_tree, LabeledWeights};
use spantree_core::decode::sample::{rng, Method};
use spantree_core::{Error, Graph, Matrix, Model, NoTree, Rooting, Tree};
use spantree_exact::{Exact, Rational};
use spantree_faer::Accurate;

/// Small integer weights `0..=3` (about a quarter zero) on existing arcs.
fn integer_weights(r: &mut SplitMix64, n: usize) -> Matrix<Rational> {
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            Rational::from(0)
        } else {
            Rational::from(r.below(4) as i64)
        }
    })
}

fn rational_rows(w: &Matrix<Rational>) -> Vec<Vec<Rational>> {
    (0..w.rows()).map(|h| w.row(h).to_vec()).collect()
}

/// Every tree over all existing arcs (allowed or not) gets, from the
/// marginal sampler forced along it, step probabilities whose product is
/// exactly `w(t) / Z` (and `0` for trees using a zero-weight arc).
fn check_forced_product(w: &Matrix<Rational>, rooting: Rooting) -> bool {
    let n = w.rows() - 1;
    let z = spantree_bruteforce::partition(w, rooting);
    let graph = Graph::from_weights(&rational_rows(w)).unwrap();
    if z == Rational::from(0) {
        let model = Model::from_scalar_graph(Exact, &graph, rooting).unwrap();
        assert!(matches!(
            model.sampler(Method::Marginal),
            Err(Error::NoSpanningTree(_))
        ));
        return false;
    }
    let model = Model::from_scalar_graph(Exact, &graph, rooting).unwrap();
    let sampler = model.sampler(Method::Marginal).unwrap();
    let mut count = 0;
    for_each_tree(
        n,
        rooting,
        |_, _| true,
        |t| {
            let tree = Tree::new(t.heads()[1..].to_vec()).unwrap();
            let steps = sampler.step_probabilities(&tree).unwrap();
            let p = steps.into_iter().fold(Rational::from(1), |a, b| a * b);
            assert_eq!(p, t.weight(w) / z.clone(), "{rooting:?} {:?}", t.heads());
            count += 1;
        },
    );
    assert_eq!(count, spantree_bruteforce::count_all_trees(n, rooting));
    true
}

#[test]
fn forced_step_probabilities_multiply_to_the_tree_probability_exactly() {
    let mut r = SplitMix64::new(14);
    for rooting in Rooting::ALL {
        for n in 1..=5 {
            let mut with_trees = 0;
            let mut tries = 0;
            while with_trees < 3 {
                tries += 1;
                if check_forced_product(&integer_weights(&mut r, n), rooting) {
                    with_trees += 1;
                }
            }
            assert!(tries < 50);
        }
    }
}

#[test]
fn forced_step_probabilities_of_labeled_trees_are_exact() {
    let mut r = SplitMix64::new(15);
    for rooting in Rooting::ALL {
        for n in 1..=3 {
            let labels: Vec<Matrix<Rational>> = (0..2)
                .map(|_| {
                    Matrix::from_fn(n + 1, n + 1, |h, m| {
                        if m == 0 || h == m {
                            Rational::from(0)
                        } else {
                            Rational::from(1 + r.below(3) as i64)
                        }
                    })
                })
                .collect();
            let lw = LabeledWeights::new(labels);
            let z = lw.partition(rooting);
            let graph = Graph::from_labeled_weights(&lw.rows()).unwrap();
            let model = Model::from_scalar_graph(Exact, &graph, rooting).unwrap();
            let sampler = model.sampler(Method::Marginal).unwrap();
            let mut total = Rational::from(0);
            lw.for_each_labeled_tree(rooting, |heads, labels, weight| {
                let tree = Tree::with_labels(heads[1..].to_vec(), labels[1..].to_vec()).unwrap();
                let steps = sampler.step_probabilities(&tree).unwrap();
                let p = steps.into_iter().fold(Rational::from(1), |a, b| a * b);
                assert_eq!(p, weight / z.clone());
                total += p;
            });
            assert_eq!(total, Rational::from(1));
        }
    }
}

/// The upper `α = 1e-4` quantile of χ² with `df` degrees of freedom by the
/// Wilson–Hilferty approximation (relative error below 1 % for `df ≥ 3`
/// at this level, far less than the margin a wrong sampler exceeds it by).
fn chi2_critical(df: usize) -> f64 {
    let z = 3.719; // the upper 1e-4 point of N(0, 1)
    let k = df as f64;
    let c = 2.0 / (9.0 * k);
    k * (1.0 - c + z * c.sqrt()).powi(3)
}

/// χ² statistic of observed counts against expected probabilities over the
/// bins with expected count at least 5 (the rest pooled into one bin), and
/// its degrees of freedom. Fails outright on a sample in a zero-probability bin.
fn chi2(observed: &[u64], probs: &[f64], k: u64) -> (f64, usize) {
    let (mut stat, mut bins) = (0.0, 0);
    let (mut pooled_o, mut pooled_e) = (0.0, 0.0);
    for (&o, &p) in observed.iter().zip(probs) {
        assert!(p > 0.0 || o == 0, "a sample of probability zero");
        let e = p * k as f64;
        if e >= 5.0 {
            stat += (o as f64 - e).powi(2) / e;
            bins += 1;
        } else {
            pooled_o += o as f64;
            pooled_e += e;
        }
    }
    if pooled_e >= 5.0 {
        stat += (pooled_o - pooled_e).powi(2) / pooled_e;
        bins += 1;
    }
    (stat, bins - 1)
}

/// Draws `k` trees with `method` and tests their frequencies against the
/// enumerated probabilities.
fn goodness_of_fit(scores: &Matrix<f64>, rooting: Rooting, method: Method, seed: u64) {
    let n = scores.rows() - 1;
    let graph = Graph::from_scores(&rows(scores)).unwrap();
    let mut index = std::collections::HashMap::new();
    let mut probs = Vec::new();
    for_each_tree(
        n,
        rooting,
        |_, _| true,
        |t| {
            index.insert(t.heads()[1..].to_vec(), probs.len());
            probs.push(t.score(scores).exp());
        },
    );
    let z: f64 = probs.iter().sum();
    probs.iter_mut().for_each(|p| *p /= z);
    let model = Model::new(Accurate, &graph, rooting).unwrap();
    let sampler = model.sampler(method).unwrap();
    assert_eq!(sampler.method(), method);
    let k = 100_000;
    let mut counts = vec![0u64; probs.len()];
    let mut g = rng(seed, 0);
    for _ in 0..k {
        let t = sampler.sample(&mut g).unwrap();
        counts[index[t.heads()]] += 1;
    }
    let (stat, df) = chi2(&counts, &probs, k);
    assert!(
        stat < chi2_critical(df),
        "{rooting:?} {method:?} n = {n}: χ² = {stat} on {df} df"
    );
}

/// χ² at α = 1e-4 per test (8 tests, fixed seeds: the outcome is
/// deterministic; a correct sampler fails one with probability < 1e-3).
#[test]
fn samples_fit_the_enumerated_distribution() {
    let mut r = SplitMix64::new(16);
    for rooting in Rooting::ALL {
        for method in [Method::Marginal, Method::Wilson] {
            for n in [3, 5] {
                // n = 5 multi-root has 1296 trees: keep the scores mild so
                // most bins have an expected count above 5.
                let sigma = if n == 5 { 0.5 } else { 1.0 };
                let scores = normal_scores(&mut r, n, sigma, 0.1);
                let graph = Graph::from_scores(&rows(&scores)).unwrap();
                if graph.spanning_tree(rooting).is_err() {
                    continue;
                }
                goodness_of_fit(&scores, rooting, method, r.next_u64());
            }
        }
    }
}

#[test]
fn labeled_samples_fit_the_enumerated_distribution() {
    let mut r = SplitMix64::new(17);
    let n = 3;
    for rooting in Rooting::ALL {
        for method in [Method::Marginal, Method::Wilson] {
            let labels: Vec<Matrix<f64>> = (0..2)
                .map(|_| {
                    Matrix::from_fn(n + 1, n + 1, |h, m| {
                        if m == 0 || h == m {
                            0.0
                        } else {
                            r.uniform_in(0.2, 2.0)
                        }
                    })
                })
                .collect();
            let lw = LabeledWeights::new(labels);
            let graph = Graph::from_labeled_weights(&lw.rows()).unwrap();
            let mut index = std::collections::HashMap::new();
            let mut probs = Vec::new();
            lw.for_each_labeled_tree(rooting, |heads, labels, w| {
                index.insert((heads[1..].to_vec(), labels[1..].to_vec()), probs.len());
                probs.push(w);
            });
            let z: f64 = probs.iter().sum();
            probs.iter_mut().for_each(|p| *p /= z);
            let model = Model::new(Accurate, &graph, rooting).unwrap();
            let sampler = model.sampler(method).unwrap();
            let k = 100_000;
            let mut counts = vec![0u64; probs.len()];
            for t in sampler.samples(k as usize, &mut rng(3, 9)).unwrap() {
                counts[index[&(t.heads().to_vec(), t.labels().unwrap().to_vec())]] += 1;
            }
            let (stat, df) = chi2(&counts, &probs, k);
            assert!(
                stat < chi2_critical(df),
                "{rooting:?} {method:?}: {stat} on {df}"
            );
        }
    }
}

/// Arc frequencies of `k = 2000` samples at `n = 50` against the marginals:
/// each frequency within `5σ + 5/k` of `μ` (`σ² = μ(1 − μ)/k`, binomial;
/// `5/k` covers the skew of arcs with tiny `μ`). With 2550 arcs per graph a
/// correct sampler violates one bound with probability about 1e-3.
#[test]
fn arc_frequencies_match_the_marginals_at_fifty_words() {
    let n = 50;
    let k = 2000;
    let mut r = SplitMix64::new(18);
    for rooting in Rooting::ALL {
        for method in [Method::Marginal, Method::Wilson] {
            let scores = normal_scores(&mut r, n, 1.0, 0.0);
            let graph = Graph::from_scores(&rows(&scores)).unwrap();
            let model = Model::new(Accurate, &graph, rooting).unwrap();
            let mu = model.marginals().unwrap();
            let mut freq = Matrix::<f64>::zeros(n + 1, n + 1);
            let sampler = model.sampler(method).unwrap();
            for t in sampler.samples(k, &mut rng(r.next_u64(), 0)).unwrap() {
                for (h, m) in t.arcs() {
                    freq[(h, m)] += 1.0 / k as f64;
                }
            }
            for h in 0..=n {
                for m in 1..=n {
                    let p = mu[(h, m)];
                    let bound = 5.0 * (p * (1.0 - p) / k as f64).sqrt() + 5.0 / k as f64;
                    assert!(
                        (freq[(h, m)] - p).abs() <= bound,
                        "{rooting:?} {method:?} {h} → {m}: {} vs {p}",
                        freq[(h, m)]
                    );
                }
            }
        }
    }
}

#[test]
fn seeds_reproduce_and_sentences_have_their_own_streams() {
    let mut r = SplitMix64::new(19);
    let graph = Graph::from_scores(&rows(&normal_scores(&mut r, 8, 1.0, 0.0))).unwrap();
    for rooting in Rooting::ALL {
        let model = Model::new(Accurate, &graph, rooting).unwrap();
        for method in [Method::Marginal, Method::Wilson] {
            let s = model.sampler(method).unwrap();
            let a = s.samples(50, &mut rng(1, 0)).unwrap();
            assert_eq!(a, s.samples(50, &mut rng(1, 0)).unwrap());
            assert_ne!(a, s.samples(50, &mut rng(1, 1)).unwrap());
            assert_ne!(a, s.samples(50, &mut rng(2, 0)).unwrap());
        }
        assert_eq!(
            model.samples(20, 5, 7).unwrap(),
            model.samples(20, 5, 7).unwrap()
        );
    }
}

/// The first trees of sentences `2i` and `2i + 1` are independent: a χ²
/// test of independence on their contingency table (α = 1e-4).
#[test]
fn streams_of_neighbouring_sentences_are_independent() {
    let graph = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap();
    let model = Model::new(Accurate, &graph, Rooting::Multi).unwrap();
    let s = model.sampler(Method::Wilson).unwrap();
    let id = |t: &Tree| match t.heads() {
        [0, 0] => 0,
        [0, 1] => 1,
        _ => 2,
    };
    let pairs = 30_000;
    let mut table = [[0u64; 3]; 3];
    for i in 0..pairs {
        let a = id(&s.sample(&mut rng(11, 2 * i)).unwrap());
        let b = id(&s.sample(&mut rng(11, 2 * i + 1)).unwrap());
        table[a][b] += 1;
    }
    let row: Vec<f64> = (0..3)
        .map(|a| table[a].iter().sum::<u64>() as f64)
        .collect();
    let col: Vec<f64> = (0..3)
        .map(|b| (0..3).map(|a| table[a][b]).sum::<u64>() as f64)
        .collect();
    let mut stat = 0.0;
    for a in 0..3 {
        for b in 0..3 {
            let e = row[a] * col[b] / pairs as f64;
            stat += (table[a][b] as f64 - e).powi(2) / e;
        }
    }
    assert!(stat < chi2_critical(4), "χ² = {stat}");
}

#[test]
fn awkward_inputs() {
    // n = 1: the only tree.
    let g = Graph::from_weights(&[[0.0, 2.0], [0.0, 0.0]]).unwrap();
    for rooting in Rooting::ALL {
        let model = Model::new(Accurate, &g, rooting).unwrap();
        for method in [Method::Auto, Method::Marginal, Method::Wilson] {
            let t = model
                .sampler(method)
                .unwrap()
                .sample(&mut rng(0, 0))
                .unwrap();
            assert_eq!(t.heads(), &[0]);
        }
    }
    // No root arc: no tree, a typed error.
    let g = Graph::from_weights(&[[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]).unwrap();
    let model = Model::new(Accurate, &g, Rooting::Single).unwrap();
    assert_eq!(
        model.sampler(Method::Auto).unwrap_err(),
        Error::NoSpanningTree(NoTree::NoRootArc)
    );
    // Only word 1 can be the root child (nothing reaches 1 from 2 or 3).
    let g = Graph::from_weights(&[
        [0.0, 1.0, 5.0, 5.0],
        [0.0, 0.0, 1.0, 1.0],
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0, 0.0],
    ])
    .unwrap();
    let model = Model::new(Accurate, &g, Rooting::Single).unwrap();
    for method in [Method::Marginal, Method::Wilson] {
        for t in model
            .sampler(method)
            .unwrap()
            .samples(200, &mut rng(4, 0))
            .unwrap()
        {
            assert_eq!(t.root_children(), vec![1]);
        }
    }
    // Scores up to ±1e4 on a stabilised engine: samples stay in the support.
    let mut r = SplitMix64::new(20);
    let scores = normal_scores(&mut r, 6, 1e4, 0.2);
    let g = Graph::from_scores(&rows(&scores)).unwrap();
    for rooting in Rooting::ALL {
        if g.spanning_tree(rooting).is_err() {
            continue;
        }
        let model = Model::new(Accurate, &g, rooting).unwrap();
        let best = model.best_tree().unwrap();
        for method in [Method::Marginal, Method::Wilson] {
            // The mode outweighs every other tree by e^(hundreds): every sample is it.
            let gap_is_huge = model.log_probability(&best).unwrap() > -1e-12;
            for t in model
                .sampler(method)
                .unwrap()
                .samples(20, &mut rng(5, 0))
                .unwrap()
            {
                assert!(t.score(&g).unwrap().is_finite());
                if gap_is_huge {
                    assert_eq!(t, best);
                }
            }
        }
    }
}

#[test]
fn the_automatic_choice_resolves_to_a_sampler() {
    let mut r = SplitMix64::new(21);
    for n in [2, 10, 40] {
        let graph = Graph::from_scores(&rows(&normal_scores(&mut r, n, 1.0, 0.0))).unwrap();
        for rooting in Rooting::ALL {
            let model = Model::new(Accurate, &graph, rooting).unwrap();
            let s = model.sampler(Method::Auto).unwrap();
            assert_ne!(s.method(), Method::Auto);
            // At least one step per word other than the root child.
            let e = s.expected_walk_steps();
            assert!(
                e >= (n - 1) as f64 * (1.0 - 1e-12),
                "{rooting:?} n = {n}: {e}"
            );
        }
    }
}
