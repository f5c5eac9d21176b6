//! The typed information table: offered exactly where the JSON route offers
//! the logarithmic quantities, and its values are the enumerated ones.

use spantree_api::{Backend, BackendKind, Quantity, WithBackend};
use spantree_core::{Graph, Matrix, Model, Rooting, Scalar};

/// Weights of three multi-root trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}:
/// 1·2, 1·3 and 2·4 out of 13.
const W: [[f64; 3]; 3] = [[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]];

struct Check;

impl WithBackend for Check {
    type Output = Option<(f64, f64)>;
    fn run<B: Backend>(self, backend: &B) -> Self::Output {
        let info = B::information()?;
        let graph = Graph::from_weights(&W).expect("valid");
        let model = Model::new(backend.clone(), &graph, Rooting::Multi).expect("a tree exists");
        let h = (info.entropy)(&model).expect("entropy").to_f64();
        let kl_self = (info.kl)(&model, &model).expect("kl").to_f64();
        Some((h, kl_self))
    }
}

#[test]
fn information_exactly_where_logarithms_are() {
    let entropy: Quantity = "entropy".parse().expect("registered");
    for kind in BackendKind::ALL {
        let offered = kind.dispatch(Check);
        assert_eq!(offered.is_some(), entropy.check(kind).is_ok(), "{kind}");
        if let Some((h, kl_self)) = offered {
            // The entropy of the three trees, enumerated by hand; KL(p ‖ p) = 0.
            let expected: f64 = [2.0, 3.0, 8.0]
                .iter()
                .map(|w: &f64| -(w / 13.0) * (w / 13.0).ln())
                .sum();
            let weights = Matrix::from_fn(3, 3, |h, m| W[h][m]);
            let z = spantree_bruteforce::partition(&weights, Rooting::Multi);
            assert_eq!(z, 13.0);
            // rel 1e-14: one 2×2 elimination.
            assert!(
                (h - expected).abs() < 1e-14 * expected,
                "{kind}: {h} vs {expected}"
            );
            assert!(kl_self.abs() < 1e-14, "{kind}: {kl_self}");
        }
    }
}

/// The decoders' numbers and the entropy's Hessian–vector product against
/// the enumerated distribution (n ≤ 4, both rootings).
#[test]
fn typed_decoders_and_entropy_hvp_match_enumeration() {
    use spantree_api::typed;
    use spantree_bruteforce::random::{normal_scores, weights_of, SplitMix64};
    use spantree_bruteforce::{Distribution, LabeledWeights};

    let mut rng = SplitMix64::new(7);
    for n in 1..=4 {
        for rooting in Rooting::ALL {
            let scores = normal_scores(&mut rng, n, 1.0, 0.2);
            let rows: Vec<Vec<f64>> = (0..=n).map(|h| scores.row(h).to_vec()).collect();
            let Ok(graph) = Graph::from_scores(&rows) else {
                continue;
            };
            let Some(d) =
                Distribution::new(&LabeledWeights::new(vec![weights_of(&scores)]), rooting)
            else {
                continue;
            };
            let model = Model::new(spantree_faer::Accurate, &graph, rooting).expect("a tree");
            let score = |heads: &[usize]| -> f64 { (1..=n).map(|m| scores[(heads[m], m)]).sum() };
            // The mode: the most probable enumerated tree, and its score.
            let (tree, s) = typed::best_tree(&model).expect("mode");
            let best = d
                .trees()
                .iter()
                .max_by(|a, b| a.probability.total_cmp(&b.probability))
                .expect("trees");
            assert_eq!(tree.heads(), &best.heads[1..], "n={n} {rooting:?}");
            // rel 1e-12: a sum of n scores either way.
            assert!((s - score(&best.heads)).abs() < 1e-12 * (1.0 + s.abs()));
            // MBR: the largest expected attachment count over the trees.
            let mu = d.marginals();
            let eas = |heads: &[usize]| -> f64 { (1..=n).map(|m| mu[(heads[m], m)]).sum() };
            let top = d.trees().iter().map(|t| eas(&t.heads)).fold(0.0, f64::max);
            let (_, value) = typed::mbr_tree(&model).expect("mbr");
            // rel 1e-10: marginals of one small elimination.
            assert!((value - top).abs() < 1e-10 * top, "{value} vs {top}");
            // (∇²H) v = −Cov(V + (s − E s)(V − E V), 1_f), V(d) = Σ_{f ∈ d} v_f.
            let v = Matrix::from_fn(n + 1, n + 1, |h, m| ((h * 7 + m * 3) % 5) as f64 - 2.0);
            let big_v = |heads: &[usize]| -> f64 { (1..=n).map(|m| v[(heads[m], m)]).sum() };
            let es = d.expect(|t| score(&t.heads));
            let ev = d.expect(|t| big_v(&t.heads));
            let expected = d.covariance_with_arcs(|t| {
                -(big_v(&t.heads) + (score(&t.heads) - es) * (big_v(&t.heads) - ev))
            });
            let hv = typed::grad_entropy_jvp(&graph, rooting, &[v]).expect("hvp");
            for h in 0..=n {
                for m in 1..=n {
                    let (a, b) = (hv[0][(h, m)], expected[0][(h, m)]);
                    // 1e-10: complex-step is exact to rounding; one small LU.
                    assert!(
                        (a - b).abs() < 1e-10 * (1.0 + b.abs()),
                        "{h}→{m}: {a} vs {b}"
                    );
                }
            }
        }
    }
}
