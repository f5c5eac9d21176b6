//! Expectations, entropies and their gradients against the brute-force
//! oracle: every expected number is a sum over enumerated (labeled) trees.

use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_bruteforce::{LabeledWeights, Tree};
use spantree_core::{ArcFeatures, ArcRef, Divergence, Graph, Matrix, Model, Rooting};
use spantree_faer::{ShiftedF64, F64};

/// Every labeled tree with its (unnormalised) weight: `labels[m]` is the
/// label of word `m`'s arc (index 0 unused).
fn labeled_trees(w: &[Matrix<f64>], rooting: Rooting) -> Vec<(Tree, Vec<usize>, f64)> {
    let mut out = Vec::new();
    LabeledWeights::new(w.to_vec()).for_each_labeled_tree(rooting, |heads, labels, weight| {
        out.push((Tree::from_heads(heads.to_vec()), labels.to_vec(), weight));
    });
    out
}

/// A random labeled graph as per-label score matrices, about a fifth of the
/// arcs and labels forbidden, with at least one tree under both rootings.
fn random_labeled(rng: &mut SplitMix64, n: usize, k: usize) -> Vec<Matrix<f64>> {
    loop {
        let scores: Vec<_> = (0..k).map(|_| normal_scores(rng, n, 1.0, 0.2)).collect();
        let w: Vec<_> = scores.iter().map(|s| s.map(|x| x.exp())).collect();
        if Rooting::ALL
            .iter()
            .all(|&r| !labeled_trees(&w, r).is_empty())
        {
            return scores;
        }
    }
}

fn graph_of(scores: &[Matrix<f64>]) -> Graph {
    if scores.len() == 1 {
        let rows: Vec<Vec<f64>> = (0..scores[0].rows())
            .map(|h| scores[0].row(h).to_vec())
            .collect();
        return Graph::from_scores(&rows).unwrap();
    }
    let n1 = scores[0].rows();
    let rows: Vec<Vec<Vec<f64>>> = (0..n1)
        .map(|h| {
            (0..n1)
                .map(|m| scores.iter().map(|s| s[(h, m)]).collect())
                .collect()
        })
        .collect();
    Graph::from_labeled_scores(&rows).unwrap()
}

/// The probability of each labeled tree, and the score matrices' weights.
struct Oracle {
    trees: Vec<(Tree, Vec<usize>, f64)>,
    scores: Vec<Matrix<f64>>,
}

impl Oracle {
    fn new(scores: &[Matrix<f64>], rooting: Rooting) -> Self {
        let w: Vec<_> = scores.iter().map(|s| s.map(|x| x.exp())).collect();
        let mut trees = labeled_trees(&w, rooting);
        let z: f64 = trees.iter().map(|t| t.2).sum();
        for t in &mut trees {
            t.2 /= z;
        }
        Oracle {
            trees,
            scores: scores.to_vec(),
        }
    }

    fn expect(&self, f: impl Fn(&Tree, &[usize]) -> f64) -> f64 {
        self.trees.iter().map(|(t, l, p)| p * f(t, l)).sum()
    }

    fn log_score(&self, scores: &[Matrix<f64>], t: &Tree, l: &[usize]) -> f64 {
        t.arcs().map(|(h, m)| scores[l[m]][(h, m)]).sum()
    }

    fn ln_p(&self, t: &Tree, l: &[usize]) -> f64 {
        let ln_z = self
            .trees
            .iter()
            .find(|_| true)
            .map(|(t0, l0, p0)| self.log_score(&self.scores, t0, l0) - p0.ln())
            .unwrap();
        self.log_score(&self.scores, t, l) - ln_z
    }

    /// `∂E[f]/∂θ_{eℓ} = Cov(f, 1[eℓ ∈ d])` for every labeled arc.
    fn gradient(&self, f: impl Fn(&Tree, &[usize]) -> f64) -> Vec<Matrix<f64>> {
        let n1 = self.scores[0].rows();
        let mean = self.expect(&f);
        let mut g = vec![Matrix::from_fn(n1, n1, |_, _| 0.0); self.scores.len()];
        for (t, l, p) in &self.trees {
            let centred = p * (f(t, l) - mean);
            for (h, m) in t.arcs() {
                g[l[m]][(h, m)] += centred;
            }
        }
        g
    }
}

/// Absolute tolerance 1e-11: brute force sums up to 7⁶ positive terms and the
/// LU has condition numbers below ~1e3 on these N(0, 1) graphs, so both sides
/// carry errors of a few 1e-14; gradients involve a difference of two such
/// sums.
const TOL: f64 = 1e-11;

fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= TOL * (1.0 + b.abs()),
        "{what}: {a} against the oracle's {b}"
    );
}

fn close_all(a: &[Matrix<f64>], b: &[Matrix<f64>], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: label count");
    for (x, y) in a.iter().zip(b) {
        for (u, v) in x.as_slice().iter().zip(y.as_slice()) {
            close(*u, *v, what);
        }
    }
}

fn cases() -> Vec<(usize, usize, Rooting, u64)> {
    let mut out = Vec::new();
    for n in 1..=5 {
        for k in [1, 2] {
            for rooting in Rooting::ALL {
                if k == 1 || n <= 4 {
                    out.push((n, k, rooting, (n * 100 + k * 10) as u64));
                }
            }
        }
    }
    out
}

#[test]
fn entropy_and_its_gradient_match_brute_force() {
    for (n, k, rooting, seed) in cases() {
        let mut rng = SplitMix64::new(seed);
        let scores = random_labeled(&mut rng, n, k);
        let oracle = Oracle::new(&scores, rooting);
        let h = oracle.expect(|t, l| -oracle.ln_p(t, l));
        let grad = oracle.gradient(|t, l| -oracle.ln_p(t, l));
        // ∂H/∂θ = Cov(−ln p, 1_e): the explicit term E[∂(−ln p)/∂θ_e] = μ_e − μ_e vanishes.
        let f64_model = Model::new(F64, &graph_of(&scores), rooting).unwrap();
        close(f64_model.entropy().unwrap(), h, "entropy");
        close_all(&f64_model.grad_entropy().unwrap(), &grad, "grad entropy");
        let log_model = Model::new(ShiftedF64, &graph_of(&scores), rooting).unwrap();
        close(log_model.entropy().unwrap(), h, "entropy");
        close_all(&log_model.grad_entropy().unwrap(), &grad, "grad entropy");
    }
}

#[test]
fn cross_entropy_and_kl_match_brute_force() {
    for (n, k, rooting, seed) in cases() {
        let mut rng = SplitMix64::new(seed + 1);
        let p_scores = random_labeled(&mut rng, n, k);
        // q on a support containing p's: shift every allowed score of p randomly.
        let q_scores: Vec<_> = p_scores
            .iter()
            .map(|s| s.map(|&x| if x.is_finite() { x + rng.normal() } else { x }))
            .collect();
        let p = Oracle::new(&p_scores, rooting);
        let q = Oracle::new(&q_scores, rooting);
        let ce = p.expect(|t, l| -q.ln_p(t, l));
        let kl = p.expect(|t, l| p.ln_p(t, l) - q.ln_p(t, l));
        let mp = Model::new(ShiftedF64, &graph_of(&p_scores), rooting).unwrap();
        let mq = Model::new(ShiftedF64, &graph_of(&q_scores), rooting).unwrap();
        close(mp.cross_entropy(&mq).unwrap().to_f64(), ce, "cross-entropy");
        close(mp.kl_divergence(&mq).unwrap().to_f64(), kl, "KL");
        // ∂H(p,q)/∂θ^p = Cov_p(−ln q, 1_e); ∂/∂θ^q = μ^q − μ^p.
        let g = mp.grad_cross_entropy(&mq).unwrap();
        close_all(&g.wrt_p, &p.gradient(|t, l| -q.ln_p(t, l)), "∂CE/∂θp");
        let mu_p = p.gradient(|_, _| 0.0).len();
        assert_eq!(mu_p, k);
        let gk = mp.grad_kl_divergence(&mq).unwrap();
        close_all(
            &gk.wrt_p,
            &p.gradient(|t, l| p.ln_p(t, l) - q.ln_p(t, l)),
            "∂KL/∂θp",
        );
        // wrt q, brute force: −Σ_d p(d) ∂ln q(d)/∂θ^q_e = −(E_p[1_e] − μ^q_e).
        let n1 = n + 1;
        let mut expected = vec![Matrix::from_fn(n1, n1, |_, _| 0.0); k];
        for (t, l, pr) in &q.trees {
            for (h, m) in t.arcs() {
                expected[l[m]][(h, m)] += pr;
            }
        }
        for (t, l, pr) in &p.trees {
            for (h, m) in t.arcs() {
                expected[l[m]][(h, m)] -= pr;
            }
        }
        close_all(&gk.wrt_q, &expected, "∂KL/∂θq");
        close_all(&g.wrt_q, &expected, "∂CE/∂θq");
    }
}

#[test]
fn cross_entropy_is_infinite_where_q_forbids_an_arc_of_p() {
    let ninf = f64::NEG_INFINITY;
    let p = Graph::from_scores(&[[ninf, 0.0, 0.0], [ninf, ninf, 0.0], [ninf, 0.0, ninf]]).unwrap();
    let q = Graph::from_scores(&[[ninf, 0.0, 0.0], [ninf, ninf, ninf], [ninf, 0.0, ninf]]).unwrap();
    let mp = Model::new(F64, &p, Rooting::Multi).unwrap();
    let mq = Model::new(F64, &q, Rooting::Multi).unwrap();
    let arc = ArcRef {
        head: 1,
        dependent: 2,
        label: None,
    };
    assert_eq!(mp.cross_entropy(&mq).unwrap(), Divergence::Infinite { arc });
    assert_eq!(mp.kl_divergence(&mq).unwrap().to_f64(), f64::INFINITY);
    // No gradient at +∞: a typed error naming the arc.
    assert_eq!(
        mp.grad_kl_divergence(&mq).unwrap_err(),
        spantree_core::Error::InfiniteDivergence { arc }
    );
    assert_eq!(
        mp.grad_cross_entropy(&mq).unwrap_err(),
        spantree_core::Error::InfiniteDivergence { arc }
    );
    // The other direction is finite: q's support lies inside p's.
    assert!(mq.kl_divergence(&mp).unwrap().to_f64().is_finite());
}

#[test]
fn renyi_and_norms_match_brute_force() {
    for (n, k, rooting, seed) in cases() {
        let mut rng = SplitMix64::new(seed + 2);
        let scores = random_labeled(&mut rng, n, k);
        let oracle = Oracle::new(&scores, rooting);
        let model = Model::new(ShiftedF64, &graph_of(&scores), rooting).unwrap();
        let sum_pow = |a: f64| oracle.expect(|t, l| oracle.ln_p(t, l).mul_add(a - 1.0, 0.0).exp());
        for alpha in [0.0, 0.5, 2.0, 3.5] {
            let expected = if alpha == 0.0 {
                (oracle.trees.len() as f64).ln()
            } else {
                sum_pow(alpha).ln() / (1.0 - alpha)
            };
            close(model.renyi_entropy(alpha).unwrap(), expected, "Rényi");
        }
        for kk in [0.5, 2.0, 3.0] {
            close(
                model.lp_norm(kk).unwrap(),
                sum_pow(kk).powf(1.0 / kk),
                "ℓp norm",
            );
        }
    }
}

#[test]
fn attachment_ge_and_additive_expectations_match_brute_force() {
    for (n, k, rooting, seed) in cases() {
        let mut rng = SplitMix64::new(seed + 3);
        let scores = random_labeled(&mut rng, n, k);
        let oracle = Oracle::new(&scores, rooting);
        let model = Model::new(F64, &graph_of(&scores), rooting).unwrap();
        // The reference is the most probable labeled tree.
        let (gold, gold_labels, _) = oracle
            .trees
            .iter()
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .unwrap()
            .clone();
        let heads: Vec<usize> = (1..=n).map(|m| gold.head(m)).collect();
        let labels: Vec<usize> = (1..=n).map(|m| gold_labels[m]).collect();
        let uas = |t: &Tree, _: &[usize]| {
            (1..=n).filter(|&m| t.head(m) == gold.head(m)).count() as f64 / n as f64
        };
        let las = |t: &Tree, l: &[usize]| {
            (1..=n)
                .filter(|&m| t.head(m) == gold.head(m) && l[m] == gold_labels[m])
                .count() as f64
                / n as f64
        };
        close(
            model.expected_attachment(&heads, None).unwrap(),
            oracle.expect(uas),
            "E[UAS]",
        );
        close_all(
            &model.grad_expected_attachment(&heads, None).unwrap(),
            &oracle.gradient(uas),
            "∇E[UAS]",
        );
        if k > 1 {
            close(
                model.expected_attachment(&heads, Some(&labels)).unwrap(),
                oracle.expect(las),
                "E[LAS]",
            );
            close_all(
                &model
                    .grad_expected_attachment(&heads, Some(&labels))
                    .unwrap(),
                &oracle.gradient(las),
                "∇E[LAS]",
            );
        }
        // Three features: root attachments, arcs pointing right, and (labeled)
        // label 1 on any arc into word 1; targets arbitrary.
        let mut f = ArcFeatures::new(3);
        for h in 0..=n {
            for m in 1..=n {
                if h == m {
                    continue;
                }
                let mut v = Vec::new();
                if h == 0 {
                    v.push((0, 1.0));
                }
                if h < m {
                    v.push((1, 0.5));
                }
                if !v.is_empty() {
                    f.push(
                        ArcRef {
                            head: h,
                            dependent: m,
                            label: None,
                        },
                        v,
                    )
                    .unwrap();
                }
                if m == 1 && k > 1 {
                    f.push(
                        ArcRef {
                            head: h,
                            dependent: m,
                            label: Some(1),
                        },
                        vec![(2, 2.0)],
                    )
                    .unwrap();
                }
            }
        }
        let feat = |t: &Tree, l: &[usize]| {
            let mut r = [0.0; 3];
            for (h, m) in t.arcs() {
                if h == 0 {
                    r[0] += 1.0;
                }
                if h < m {
                    r[1] += 0.5;
                }
                if m == 1 && k > 1 && l[m] == 1 {
                    r[2] += 2.0;
                }
            }
            r
        };
        let e: Vec<f64> = (0..3)
            .map(|i| oracle.expect(|t, l| feat(t, l)[i]))
            .collect();
        let got = model.expect_additive(&f).unwrap();
        for i in 0..3 {
            close(got[i], e[i], "E[r]");
        }
        let targets = [1.0, 0.25, 0.5];
        let g_obj: f64 = (0..3).map(|i| (e[i] - targets[i]).powi(2)).sum();
        close(
            model.ge_objective(&f, &targets).unwrap(),
            g_obj,
            "GE objective",
        );
        // ∂G/∂θ = Σ_i 2 (E_i − t_i) Cov(r_i, 1_e): the gradient of the
        // additive function Σ_i a_i r_i with a fixed.
        let a: Vec<f64> = (0..3).map(|i| 2.0 * (e[i] - targets[i])).collect();
        let grad = oracle.gradient(|t, l| (0..3).map(|i| a[i] * feat(t, l)[i]).sum());
        close_all(
            &model.grad_ge_objective(&f, &targets).unwrap(),
            &grad,
            "∇GE",
        );
    }
}

#[test]
fn identities_hold_on_larger_graphs() {
    let mut rng = SplitMix64::new(77);
    for n in [8, 20, 40] {
        for rooting in Rooting::ALL {
            let s = normal_scores(&mut rng, n, 1.0, 0.0);
            let t = s.map(|&x| {
                if x.is_finite() {
                    x + 0.5 * rng.normal()
                } else {
                    x
                }
            });
            let p = Model::new(ShiftedF64, &graph_of(&[s]), rooting).unwrap();
            let q = Model::new(ShiftedF64, &graph_of(&[t]), rooting).unwrap();
            let h = p.entropy().unwrap();
            let trees = p.renyi_entropy(0.0).unwrap();
            // 0 ≤ H ≤ ln #trees (rel 1e-12: sums of n² terms of size ≤ ln n²).
            assert!(h >= 0.0 && h <= trees * (1.0 + 1e-12), "{h} {trees}");
            let count = match rooting {
                Rooting::Multi => (n as f64 - 1.0) * ((n + 1) as f64).ln(),
                Rooting::Single => (n as f64 - 1.0) * (n as f64).ln(),
            };
            // H_0 counts the trees of the complete graph: Cayley (rel 1e-12, one LU).
            assert!((trees - count).abs() <= 1e-12 * count, "{trees} {count}");
            // KL(p‖p) = 0 up to the rounding of ~n² terms of size ~ln Z (abs 1e-10).
            assert!(p.kl_divergence(&p).unwrap().to_f64().abs() < 1e-10);
            let ce = p.cross_entropy(&q).unwrap().to_f64();
            let kl = p.kl_divergence(&q).unwrap().to_f64();
            assert!(
                (ce - (h + kl)).abs() < 1e-10 * ce.abs().max(1.0),
                "H(p,q) = H + KL"
            );
            let mut last = f64::INFINITY;
            for alpha in [0.0, 0.3, 0.9, 1.0, 1.5, 4.0, 20.0] {
                let r = p.renyi_entropy(alpha).unwrap();
                assert!(
                    r <= last * (1.0 + 1e-12) + 1e-12,
                    "Rényi must not increase: {alpha}"
                );
                last = r;
            }
            // The limit α → 1 is Shannon: the quotient at 1 ± 1e-6 differs from
            // H by O(1e-6) (slope) plus cancellation of ~1e-10 / 1e-6.
            for alpha in [1.0 - 1e-6, 1.0 + 1e-6] {
                assert!((p.renyi_entropy(alpha).unwrap() - h).abs() < 1e-4 * h.max(1.0));
            }
        }
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap();
    let m = Model::new(F64, &g, Rooting::Multi).unwrap();
    // α = ∞ is the min-entropy (tests/decode.rs); −∞ is not an order.
    for alpha in [-1.0, f64::NAN, f64::NEG_INFINITY] {
        assert!(matches!(
            m.renyi_entropy(alpha),
            Err(spantree_core::Error::Parameter { .. })
        ));
    }
    assert!(matches!(
        m.lp_norm(0.0),
        Err(spantree_core::Error::Parameter { .. })
    ));
    assert!(matches!(
        m.expected_attachment(&[0], None),
        Err(spantree_core::Error::Mismatch { .. })
    ));
    // A self-loop as the reference head of word 1.
    assert!(matches!(
        m.expected_attachment(&[1, 0], None),
        Err(spantree_core::Error::NoSuchArc { .. })
    ));
    let f = ArcFeatures::<f64>::new(2);
    assert!(matches!(
        m.ge_objective(&f, &[1.0]),
        Err(spantree_core::Error::Mismatch { .. })
    ));
    let mut bad = ArcFeatures::new(1);
    assert!(matches!(
        bad.push(
            ArcRef {
                head: 0,
                dependent: 1,
                label: None
            },
            vec![(1, 1.0)]
        ),
        Err(spantree_core::Error::FeatureIndex { .. })
    ));
    bad.push(
        ArcRef {
            head: 0,
            dependent: 3,
            label: None,
        },
        vec![(0, 1.0)],
    )
    .unwrap();
    assert!(matches!(
        m.expect_additive(&bad),
        Err(spantree_core::Error::NoSuchArc { .. })
    ));
}

#[test]
fn an_overflowing_partition_is_a_typed_error_not_infinity() {
    // Every arc score 800: Z = Σ_d e^{800 n} overflows f64, ln Z does not
    // (identity: ln Z = 800 n + ln #trees, Cayley: #trees = 3^1 for n = 2 multi-root).
    let ninf = f64::NEG_INFINITY;
    let g = Graph::from_scores(&[
        [ninf, 800.0, 800.0],
        [ninf, ninf, 800.0],
        [ninf, 800.0, ninf],
    ])
    .unwrap();
    let m = Model::new(ShiftedF64, &g, Rooting::Multi).unwrap();
    assert!((m.log_partition().unwrap() - (1600.0 + 3f64.ln())).abs() < 1e-12 * 1600.0);
    assert_eq!(
        m.partition().unwrap_err(),
        spantree_core::Error::Numerical(spantree_core::Numerical::NotFinite)
    );
}
