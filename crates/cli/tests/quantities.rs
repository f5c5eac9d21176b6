//! End-to-end tests of the quantities beyond `log Z` and marginals:
//! entropies, cross-entropy and KL, Rényi entropy, `ℓ_k` norms, expected
//! attachment, the GE objective and their gradients. Every expected number
//! comes from enumerating trees (`spantree_bruteforce`) or from a hand
//! computation written out in the test, never from the code under test.
//! Gradients by enumeration use `∂E[f]/∂θ_e = Cov(f, 1_e)` for an `f` that
//! does not depend on `θ`, and `∂H/∂θ_e = −Cov(ln p(d), 1_e)`.

mod common;

use common::*;
use serde_json::{json, Value};
use spantree_bruteforce::random::{self, SplitMix64};
use spantree_bruteforce::{trees, Tree};
use spantree_core::{Matrix, Rooting, Scalar};
use spantree_exact::Rational;

/// Input lines for a list of JSON values.
fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

/// A distribution over trees by enumeration: every tree of positive weight
/// with its probability (generic so that rationals give exact values).
struct Dist<S> {
    trees: Vec<Tree>,
    p: Vec<S>,
}

impl<S: Scalar> Dist<S> {
    fn new(w: &Matrix<S>, rooting: Rooting) -> Self {
        let trees: Vec<Tree> = trees(w, rooting).collect();
        let weights: Vec<S> = trees.iter().map(|t| t.weight(w)).collect();
        let mut z = S::zero();
        for x in &weights {
            z += x;
        }
        let p = weights.into_iter().map(|x| x / z.clone()).collect();
        Dist { trees, p }
    }

    fn n(&self) -> usize {
        self.trees[0].n()
    }

    /// `E[f]`.
    fn expect(&self, f: impl Fn(&Tree) -> S) -> S {
        let mut total = S::zero();
        for (t, p) in self.trees.iter().zip(&self.p) {
            total += p.clone() * f(t);
        }
        total
    }

    /// `Cov(f, 1_{h → m})` for every cell, `0` where `h → m` is not an arc.
    fn covariance_with_arcs(&self, f: impl Fn(&Tree) -> S) -> Matrix<S> {
        let n = self.n();
        let mean = self.expect(&f);
        Matrix::from_fn(n + 1, n + 1, |h, m| {
            if !random::exists(h, m) {
                return S::zero();
            }
            let in_tree = |t: &Tree| t.head(m) == h;
            let joint = self.expect(|t| if in_tree(t) { f(t) } else { S::zero() });
            let mu = self.expect(|t| if in_tree(t) { S::one() } else { S::zero() });
            joint - mean.clone() * mu
        })
    }
}

impl Dist<f64> {
    /// `ln p(d)` of a tree (of positive probability).
    fn log_p(&self, t: &Tree) -> f64 {
        let i = self.trees.iter().position(|u| u == t).expect("a tree of p");
        self.p[i].ln()
    }

    /// `ln q(d)` of any tree under another distribution, `-∞` outside its support.
    fn log_p_or_minus_infinity(&self, t: &Tree) -> f64 {
        match self.trees.iter().position(|u| u == t) {
            Some(i) => self.p[i].ln(),
            None => f64::NEG_INFINITY,
        }
    }

    fn entropy(&self) -> f64 {
        -self.expect(|t| self.log_p(t))
    }
}

/// The number at `field` of a record.
fn number(rec: &Value, field: &str) -> f64 {
    rec[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {rec}"))
}

/// `|got − expected| ≤ tol`, naming the quantity.
fn assert_near(got: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (got - expected).abs() <= tol,
        "{what}: got {got}, expected {expected}"
    );
}

/// Attachment score of a tree against reference heads (`heads[m − 1]`).
fn attachment(t: &Tree, heads: &[usize]) -> f64 {
    let hits = (1..=t.n()).filter(|&m| t.head(m) == heads[m - 1]).count();
    hits as f64 / t.n() as f64
}

/// Small random graphs: `(p scores, q scores, reference heads, features)`.
/// `p` forbids some arcs, `q` none (so KL is finite); the reference heads
/// are a tree of `p`; the features are sparse with `F = 2`.
#[allow(clippy::type_complexity)]
fn random_cases(
    seed: u64,
) -> Vec<(
    Matrix<f64>,
    Matrix<f64>,
    Vec<usize>,
    Vec<(usize, usize, [f64; 2])>,
)> {
    let mut rng = SplitMix64::new(seed);
    let mut cases = Vec::new();
    for n in 1..=4 {
        for _ in 0..3 {
            let p = random::normal_scores(&mut rng, n, 1.0, 0.2);
            let w = random::weights_of(&p);
            let Some(first) = trees(&w, Rooting::Single).next() else {
                continue;
            };
            let q = random::normal_scores(&mut rng, n, 1.0, 0.0);
            let mut features = Vec::new();
            for h in 0..=n {
                for m in 1..=n {
                    if h != m && rng.chance(0.5) {
                        features.push((h, m, [rng.normal(), if h == 0 { 1.0 } else { 0.0 }]));
                    }
                }
            }
            cases.push((p, q, first.heads()[1..].to_vec(), features));
        }
    }
    cases
}

fn features_json(features: &[(usize, usize, [f64; 2])]) -> Value {
    Value::Array(
        features
            .iter()
            .map(|(h, m, v)| json!([h, m, [v[0], v[1]]]))
            .collect(),
    )
}

/// `f(d) = Σ_{e ∈ d} f_e`.
fn feature_sum(features: &[(usize, usize, [f64; 2])], t: &Tree, k: usize) -> f64 {
    features
        .iter()
        .filter(|(h, m, _)| t.head(*m) == *h)
        .map(|(_, _, v)| v[k])
        .sum()
}

const TARGETS: [f64; 2] = [0.3, 0.8];

#[test]
fn information_quantities_agree_with_enumeration() {
    let cases = random_cases(17);
    let input: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (p, q, heads, features))| {
            json!({
                "id": i,
                "scores": scores_json(p),
                "scores_q": scores_json(q),
                "heads": heads,
                "features": features_json(features),
                "targets": TARGETS,
            })
        })
        .collect();
    let input = lines(&input);
    let all = "entropy,grad_entropy,cross_entropy,grad_cross_entropy,kl,grad_kl,\
               expected_attachment,grad_expected_attachment,ge,grad_ge";
    for backend in ["f64", "log", "accurate"] {
        for rooting in Rooting::ALL {
            let args = [
                "infer",
                "--backend",
                backend,
                "--rooting",
                rooting.name(),
                "--quantities",
                all,
            ];
            let out = spantree(&args, &input);
            let recs = records(&out);
            assert_eq!(recs.len(), cases.len());
            for (i, ((p, q, heads, features), rec)) in cases.iter().zip(&recs).enumerate() {
                let what = |q: &str| format!("{backend} {rooting:?} #{i} {q}");
                let dp = Dist::new(&random::weights_of(p), rooting);
                // Single-root trees exist (the reference), multi-root ones then too.
                assert!(!dp.trees.is_empty(), "case {i} has trees");
                let dq = Dist::new(&random::weights_of(q), rooting);
                // abs 1e-10: n ≤ 4, scores of scale 1, one LU of a small well-scaled matrix.
                let tol = 1e-10;

                let h = dp.entropy();
                assert_near(number(rec, "entropy"), h, tol, &what("entropy"));
                let grad_h = dp.covariance_with_arcs(|t| -dp.log_p(t));
                assert_close(
                    &matrix_of(&rec["grad_entropy"]),
                    &grad_h,
                    tol,
                    &what("grad_entropy"),
                );

                let log_q = |t: &Tree| dq.log_p_or_minus_infinity(t);
                let ce = -dp.expect(log_q);
                assert_near(
                    number(rec, "cross_entropy"),
                    ce,
                    tol,
                    &what("cross_entropy"),
                );
                assert_near(number(rec, "kl"), ce - h, tol, &what("kl"));
                // ∂H(p,q)/∂θ_p = Cov_p(−ln q, 1_e); ∂KL/∂θ_p = Cov_p(ln p − ln q, 1_e)
                // (E_p[∂(ln p)/∂θ_e] = 0); both ∂/∂θ_q = μ^q − μ^p.
                let grad_ce = dp.covariance_with_arcs(|t| -log_q(t));
                let grad_kl = dp.covariance_with_arcs(|t| dp.log_p(t) - log_q(t));
                let mu_p = oracle_marginals(p, rooting);
                let mu_q = oracle_marginals(q, rooting);
                let grad_q =
                    Matrix::from_fn(mu_p.rows(), mu_p.cols(), |a, b| mu_q[(a, b)] - mu_p[(a, b)]);
                for (field, expected) in [
                    ("grad_cross_entropy", &grad_ce),
                    ("grad_kl", &grad_kl),
                    ("grad_cross_entropy_q", &grad_q),
                    ("grad_kl_q", &grad_q),
                ] {
                    assert_close(&matrix_of(&rec[field]), expected, tol, &what(field));
                }

                let uas = dp.expect(|t| attachment(t, heads));
                assert_near(number(rec, "expected_attachment"), uas, tol, &what("uas"));
                let grad_uas = dp.covariance_with_arcs(|t| attachment(t, heads));
                assert_close(
                    &matrix_of(&rec["grad_expected_attachment"]),
                    &grad_uas,
                    tol,
                    &what("grad_expected_attachment"),
                );

                let ef: Vec<f64> = (0..2)
                    .map(|k| dp.expect(|t| feature_sum(features, t, k)))
                    .collect();
                let ge: f64 = (0..2).map(|k| (ef[k] - TARGETS[k]).powi(2)).sum();
                assert_near(number(rec, "ge"), ge, tol, &what("ge"));
                // ∂G/∂θ_e = Σ_k 2 (E[f_k] − t_k) Cov(f_k, 1_e).
                let grad_ge = dp.covariance_with_arcs(|t| {
                    (0..2)
                        .map(|k| 2.0 * (ef[k] - TARGETS[k]) * feature_sum(features, t, k))
                        .sum()
                });
                assert_close(&matrix_of(&rec["grad_ge"]), &grad_ge, tol, &what("grad_ge"));
            }
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
    }
}

fn oracle_marginals(scores: &Matrix<f64>, rooting: Rooting) -> Matrix<f64> {
    spantree_bruteforce::marginals_from_scores(scores, rooting).expect("trees exist")
}

#[test]
fn renyi_entropy_and_lp_norm_agree_with_enumeration() {
    let cases = random_cases(23);
    // Weights input too: the Rényi entropy needs the f64 graph, which the
    // command keeps for weights as well as for scores.
    let input: Vec<Value> = cases
        .iter()
        .flat_map(|(p, ..)| {
            [
                json!({"scores": scores_json(p)}),
                json!({"weights": weights_json(&random::weights_of(p))}),
            ]
        })
        .collect();
    let input = lines(&input);
    for rooting in Rooting::ALL {
        for (alpha, k) in [(0.0, 1.0), (0.5, 2.0), (2.0, 3.5)] {
            let quantities = format!("renyi:{alpha},lp_norm:{k}");
            let out = spantree(
                &[
                    "infer",
                    "--rooting",
                    rooting.name(),
                    "--quantities",
                    &quantities,
                ],
                &input,
            );
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let recs = records(&out);
            for (i, rec) in recs.iter().enumerate() {
                let (p, ..) = &cases[i / 2];
                let d = Dist::new(&random::weights_of(p), rooting);
                // H_α = ln(Σ p^α) / (1 − α); α = 0 counts the support.
                let power_sum = |a: f64| d.expect(|t| d.log_p(t).mul_add(a - 1.0, 0.0).exp());
                let renyi = power_sum(alpha).ln() / (1.0 - alpha);
                let norm = power_sum(k).powf(1.0 / k);
                let what = format!("{rooting:?} #{i} α = {alpha}, k = {k}");
                // abs 1e-9: the Rényi quotient divides a difference of two ln Z.
                assert_near(number(rec, "renyi"), renyi, 1e-9, &what);
                assert_near(number(rec, "lp_norm"), norm, 1e-9, &what);
                assert_eq!(rec.as_object().unwrap().len(), 6, "{rec}");
            }
        }
    }
    // α = 0 by hand: three multi-root trees on two words.
    let out = spantree(
        &[
            "infer",
            "--rooting",
            "multi",
            "--quantities",
            "renyi:0,entropy",
        ],
        r#"{"weights":[[0,1,2],[0,0,3],[0,4,0]]}"#,
    );
    let rec = &records(&out)[0];
    assert_near(number(rec, "renyi"), 3f64.ln(), 1e-12, "ln 3");
    // Trees of weights 2, 3 and 8 out of 13.
    let h: f64 = [2.0, 3.0, 8.0]
        .iter()
        .map(|w: &f64| -(w / 13.0) * (w / 13.0).ln())
        .sum();
    assert_near(number(rec, "entropy"), h, 1e-14, "entropy by hand");
}

/// Every labeled tree of positive weight: `(heads, labels, weight)`, heads
/// and labels indexed by word `1..=n` (index 0 unused).
fn labeled_trees(per_label: &[Matrix<f64>], rooting: Rooting) -> Vec<(Tree, Vec<usize>, f64)> {
    let mut collapsed = per_label[0].clone();
    for w in &per_label[1..] {
        for (c, x) in collapsed.as_mut_slice().iter_mut().zip(w.as_slice()) {
            *c += x;
        }
    }
    let n = collapsed.rows() - 1;
    let k = per_label.len();
    let mut out = Vec::new();
    for t in trees(&collapsed, rooting) {
        for code in 0..k.pow(n as u32) {
            let labels: Vec<usize> = std::iter::once(0)
                .chain((0..n).map(|i| code / k.pow(i as u32) % k))
                .collect();
            let w: f64 = (1..=n)
                .map(|m| per_label[labels[m]][(t.head(m), m)])
                .product();
            if w > 0.0 {
                out.push((t.clone(), labels, w));
            }
        }
    }
    out
}

#[test]
fn labeled_attachment_and_label_gradients_agree_with_enumeration() {
    // Two words, two labels; 0 → 1 has only label 0.
    let a = Matrix::from_row_major(3, 3, vec![0.0, 1.5, 1.0, 0.0, 0.0, 0.5, 0.0, 2.0, 0.0]);
    let b = Matrix::from_row_major(3, 3, vec![0.0, 0.0, 3.0, 0.0, 0.0, 2.5, 0.0, 0.25, 0.0]);
    let weights = json!([
        [0, [1.5, 0], [1.0, 3.0]],
        [0, 0, [0.5, 2.5]],
        [0, [2.0, 0.25], 0]
    ]);
    let (heads, labels) = ([0usize, 1], [0usize, 1]);
    let line = json!({
        "weights": weights,
        "heads": heads,
        "labels": labels,
        // f = [1 on 0 → 1 (any label), 2 on label 1 of 1 → 2]
        "features": [[0, 1, [1, 0]], [1, 2, 1, [0, 2]]],
        "targets": [0.5, 1.0],
    })
    .to_string();
    for rooting in Rooting::ALL {
        let all = labeled_trees(&[a.clone(), b.clone()], rooting);
        let z: f64 = all.iter().map(|(.., w)| w).sum();
        let e = |f: &dyn Fn(&Tree, &[usize]) -> f64| -> f64 {
            all.iter().map(|(t, l, w)| w / z * f(t, l)).sum()
        };
        let las = e(&|t, l| {
            (1..=2)
                .filter(|&m| t.head(m) == heads[m - 1] && l[m] == labels[m - 1])
                .count() as f64
                / 2.0
        });
        let uas = e(&|t, _| attachment(t, &heads));
        let f = |t: &Tree, l: &[usize], k: usize| -> f64 {
            let mut x = 0.0;
            if k == 0 && t.head(1) == 0 {
                x += 1.0;
            }
            if k == 1 && t.head(2) == 1 && l[2] == 1 {
                x += 2.0;
            }
            x
        };
        let ef = [e(&|t, l| f(t, l, 0)), e(&|t, l| f(t, l, 1))];
        let ge = (ef[0] - 0.5).powi(2) + (ef[1] - 1.0).powi(2);
        let g = |t: &Tree, l: &[usize]| -> f64 {
            2.0 * (ef[0] - 0.5) * f(t, l, 0) + 2.0 * (ef[1] - 1.0) * f(t, l, 1)
        };
        // ∂G/∂θ_{eℓ} = Cov(g, 1_{e,ℓ}), one value per (h, m, ℓ).
        let grad = |h: usize, m: usize, lab: usize| -> f64 {
            let ind = |t: &Tree, l: &[usize]| t.head(m) == h && l[m] == lab;
            e(&|t, l| if ind(t, l) { g(t, l) } else { 0.0 })
                - e(&g) * e(&|t, l| if ind(t, l) { 1.0 } else { 0.0 })
        };

        let out = spantree(
            &[
                "infer",
                "--rooting",
                rooting.name(),
                "--quantities",
                "expected_attachment,ge,grad_ge",
            ],
            &line,
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let rec = &records(&out)[0];
        // abs 1e-12: two words, weights of order 1.
        assert_near(
            number(rec, "expected_attachment"),
            las,
            1e-12,
            "labeled attachment",
        );
        assert_near(number(rec, "ge"), ge, 1e-12, "labeled ge");
        for h in 0..=2 {
            for m in 0..=2 {
                for lab in 0..2 {
                    let expected = if random::exists(h, m) {
                        grad(h, m, lab)
                    } else {
                        0.0
                    };
                    let got = rec["grad_ge"][h][m][lab].as_f64().expect("a number");
                    assert_near(got, expected, 1e-12, &format!("grad_ge[{h}][{m}][{lab}]"));
                }
            }
        }
        // Without "labels" the unlabeled score, on the collapsed graph.
        let unlabeled: Value = {
            let mut v: Value = serde_json::from_str(&line).unwrap();
            v.as_object_mut().unwrap().remove("labels");
            v
        };
        let out = spantree(
            &[
                "infer",
                "--rooting",
                rooting.name(),
                "--quantities",
                "expected_attachment",
            ],
            &unlabeled.to_string(),
        );
        let rec = &records(&out)[0];
        assert_near(
            number(rec, "expected_attachment"),
            uas,
            1e-12,
            "unlabeled score",
        );
    }
}

#[test]
fn infinite_and_finite_divergences_by_hand() {
    // p: multi-root trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1} of weights 2, 3, 8.
    let p = json!([[0, 1, 2], [0, 0, 3], [0, 4, 0]]);
    // q forbids 0 → 2, which p uses: KL = H(p, q) = +∞ at arc 0 → 2.
    let q_forbids = json!([[0, 1, 0], [0, 0, 1], [0, 1, 0]]);
    let line = json!({"id": "inf", "weights": p, "weights_q": q_forbids}).to_string();
    let out = spantree(
        &[
            "infer",
            "--rooting",
            "multi",
            "--quantities",
            "kl,cross_entropy,entropy",
        ],
        &line,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = &records(&out)[0];
    assert_eq!(rec["kl"], Value::Null);
    assert_eq!(rec["kl_infinite_arc"], json!([0, 2]));
    assert_eq!(rec["cross_entropy"], Value::Null);
    assert_eq!(rec["cross_entropy_infinite_arc"], json!([0, 2]));
    assert!(rec["entropy"].is_number());
    for grad in ["grad_kl", "grad_cross_entropy"] {
        let out = spantree(
            &[
                "infer",
                "--rooting",
                "multi",
                "--quantities",
                &format!("kl,{grad}"),
            ],
            &line,
        );
        assert_eq!(out.status.code(), Some(1));
        let rec = &records(&out)[0];
        assert_eq!(rec["id"], "inf");
        assert_eq!(rec["error"]["kind"], "infinite_divergence", "{rec}");
        let message = rec["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("arc 0 → 2") && message.contains(grad),
            "{message}"
        );
    }

    // p forbids 0 → 2: its only multi-root tree is {0→1, 1→2}, so H(p) = 0.
    // q forbids 2 → 1, which p does not use: q has the trees {0→1, 0→2} and
    // {0→1, 1→2}, both of weight 1, so KL = H(p, q) = −ln(1/2) = ln 2, finite.
    let line = json!({
        "scores": [[null, 0.0, null], [null, null, 1.0], [null, 0.5, null]],
        "scores_q": [[null, 0.0, 0.0], [null, null, 0.0], [null, null, null]],
    })
    .to_string();
    let out = spantree(
        &[
            "infer",
            "--rooting",
            "multi",
            "--quantities",
            "entropy,kl,cross_entropy,grad_kl",
        ],
        &line,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rec = &records(&out)[0];
    assert_near(number(rec, "entropy"), 0.0, 1e-15, "H(p)");
    assert_near(number(rec, "kl"), 2f64.ln(), 1e-14, "KL");
    assert_near(number(rec, "cross_entropy"), 2f64.ln(), 1e-14, "H(p, q)");
    assert!(rec.get("kl_infinite_arc").is_none());
    // p is one tree: every derivative with respect to θ_p vanishes; ∂/∂θ_q = μ^q − μ^p.
    assert_close(
        &matrix_of(&rec["grad_kl"]),
        &Matrix::zeros(3, 3),
        1e-15,
        "grad_kl",
    );
    let expected_q =
        Matrix::from_row_major(3, 3, vec![0.0, 0.0, 0.5, 0.0, 0.0, -0.5, 0.0, 0.0, 0.0]);
    assert_close(
        &matrix_of(&rec["grad_kl_q"]),
        &expected_q,
        1e-15,
        "grad_kl_q",
    );
}

#[test]
fn labeled_infinite_divergence_names_the_label() {
    // Label 1 of 0 → 1 has mass under p and is forbidden by q.
    let line = json!({
        "weights": [[0, [1, 1]], [0, 0]],
        "weights_q": [[0, [1, 0]], [0, 0]],
    })
    .to_string();
    let out = spantree(&["infer", "--quantities", "kl"], &line);
    let rec = &records(&out)[0];
    assert_eq!(rec["kl"], Value::Null);
    assert_eq!(rec["kl_infinite_arc"], json!([0, 1, 1]));
}

#[test]
fn exact_backend_ge_and_attachment_are_the_rational_brute_force_values() {
    let r = |p: i64, q: i64| Rational::new(p, q);
    // Weights as rational strings, and the same as rationals.
    let text = json!([
        [0, "1/3", "2/3", "1/5"],
        [0, 0, "3/7", "1/2"],
        [0, "1/10", 0, "5/4"],
        [0, "2", "1/9", 0]
    ]);
    #[rustfmt::skip]
    let w = Matrix::from_row_major(4, 4, vec![
        r(0, 1), r(1, 3),  r(2, 3), r(1, 5),
        r(0, 1), r(0, 1),  r(3, 7), r(1, 2),
        r(0, 1), r(1, 10), r(0, 1), r(5, 4),
        r(0, 1), r(2, 1),  r(1, 9), r(0, 1),
    ]);
    // f: 0 → 1 ↦ [1/2, 0], 2 → 1 ↦ [0, -2], 3 → 2 ↦ [3, 1/3]; t = [1/3, 1].
    let feats: [(usize, usize, [Rational; 2]); 3] = [
        (0, 1, [r(1, 2), r(0, 1)]),
        (2, 1, [r(0, 1), r(-2, 1)]),
        (3, 2, [r(3, 1), r(1, 3)]),
    ];
    let targets = [r(1, 3), r(1, 1)];
    let heads = [0usize, 1, 2];
    let line = json!({
        "weights": text,
        "heads": heads,
        "features": [[0, 1, ["1/2", 0]], [2, 1, [0, -2]], [3, 2, [3, "1/3"]]],
        "targets": ["1/3", 1],
    })
    .to_string();
    for rooting in Rooting::ALL {
        let d = Dist::new(&w, rooting);
        let f = |t: &Tree, k: usize| {
            let mut x = Rational::zero();
            for (h, m, v) in &feats {
                if t.head(*m) == *h {
                    x += &v[k];
                }
            }
            x
        };
        let ef: Vec<Rational> = (0..2).map(|k| d.expect(|t| f(t, k))).collect();
        let mut ge = Rational::zero();
        for k in 0..2 {
            let diff = ef[k].clone() - targets[k].clone();
            ge += diff.clone() * diff;
        }
        let grad_ge = d.covariance_with_arcs(|t| {
            let mut g = Rational::zero();
            for k in 0..2 {
                g += Rational::from_f64(2.0) * (ef[k].clone() - targets[k].clone()) * f(t, k);
            }
            g
        });
        let uas = d.expect(|t| {
            let hits = (1..=3).filter(|&m| t.head(m) == heads[m - 1]).count();
            Rational::new(hits as i64, 3)
        });

        let out = spantree(
            &[
                "infer",
                "--backend",
                "exact",
                "--exact-output",
                "--rooting",
                rooting.name(),
                "--quantities",
                "ge,grad_ge,expected_attachment",
            ],
            &line,
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let rec = &records(&out)[0];
        assert_eq!(rec["ge"], ge.to_string(), "{rooting:?}");
        assert_eq!(rec["expected_attachment"], uas.to_string(), "{rooting:?}");
        for h in 0..=3 {
            for m in 0..=3 {
                assert_eq!(
                    rec["grad_ge"][h][m],
                    grad_ge[(h, m)].to_string(),
                    "{rooting:?} grad_ge[{h}][{m}]"
                );
            }
        }
        // Without --exact-output: the nearest f64 of the same value.
        let out = spantree(
            &[
                "infer",
                "--backend",
                "exact",
                "--rooting",
                rooting.name(),
                "--quantities",
                "ge",
            ],
            &line,
        );
        assert_eq!(records(&out)[0]["ge"].as_f64(), Some(ge.to_f64()));
    }
}

#[test]
fn entropy_type_quantities_are_a_usage_error_on_the_exact_backend() {
    for q in [
        "entropy",
        "grad_entropy",
        "kl",
        "grad_cross_entropy",
        "renyi:2",
        "lp_norm:2",
    ] {
        let out = spantree(&["infer", "--backend", "exact", "--quantities", q], "");
        assert_eq!(out.status.code(), Some(2), "{q}");
        let err = stderr(&out);
        assert!(
            err.contains("logarithms") && err.contains("--backend accurate"),
            "{q}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn bad_quantity_parameters_are_usage_errors() {
    let cases = [
        ("renyi", "renyi:ALPHA"),
        ("renyi:-1", "≥ 0"),
        ("renyi:nan", "≥ 0, or inf"),
        ("lp_norm:inf", "finite"),
        ("renyi:two", "not a number"),
        ("lp_norm:0", "> 0"),
        ("lp_norm:-2", "> 0"),
        ("lp_norm", "lp_norm:K"),
        ("entropy:2", "takes no parameter"),
        ("renyi:1,renyi:2", "two orders"),
        ("kl_divergence", "known: log_z"),
    ];
    for (q, needle) in cases {
        let out = spantree(&["infer", "--quantities", q], "");
        assert_eq!(out.status.code(), Some(2), "{q}");
        let err = stderr(&out);
        assert!(err.contains(needle), "{q}: {err}");
    }
    // The same order twice is one quantity.
    let out = spantree(
        &["infer", "--quantities", "renyi:2,renyi:2.0"],
        r#"{"weights":[[0,1],[0,0]]}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn missing_and_malformed_fields_become_error_records() {
    let p = r#""weights":[[0,1,2],[0,0,3],[0,4,0]]"#;
    // (quantity, extra fields, kind, words the message must contain)
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("kl", "", "missing_field", &["\"scores_q\""]),
        ("grad_cross_entropy", "", "missing_field", &["\"scores_q\""]),
        ("expected_attachment", "", "missing_field", &["\"heads\""]),
        (
            "ge",
            r#","targets":[1]"#,
            "missing_field",
            &["\"features\""],
        ),
        (
            "grad_ge",
            r#","features":[]"#,
            "missing_field",
            &["\"targets\""],
        ),
        (
            "kl",
            r#","scores_q":[[null,1],[null,null]]"#,
            "mismatch",
            &["words of q"],
        ),
        (
            "kl",
            r#","weights_q":[[0,1,1],[0,0,-1],[0,1,0]]"#,
            "negative_weight",
            &["\"weights_q\"", "arc 1 → 2"],
        ),
        (
            "kl",
            r#","scores_q":[[null,1,1],[null,null,1]],"weights_q":[[0,1,1],[0,0,1],[0,1,0]]"#,
            "parse",
            &["not both"],
        ),
        (
            "expected_attachment",
            r#","heads":[0]"#,
            "mismatch",
            &["heads", "expected 2, found 1"],
        ),
        (
            "expected_attachment",
            r#","heads":[0,5]"#,
            "no_such_arc",
            &["\"heads\"[1]", "arc 5 → 2"],
        ),
        (
            "grad_expected_attachment",
            r#","heads":[1,0]"#,
            "no_such_arc",
            &["\"heads\"[0]", "arc 1 → 1"],
        ),
        (
            "expected_attachment",
            r#","heads":[0,-1]"#,
            "parse",
            &["\"heads\"[1]"],
        ),
        (
            "expected_attachment",
            r#","heads":{"a":1}"#,
            "parse",
            &["\"heads\""],
        ),
        (
            "expected_attachment",
            r#","heads":[0,1],"labels":[0,3]"#,
            "no_such_arc",
            &["\"labels\"[1]", "label 3"],
        ),
        (
            "ge",
            r#","features":[[0,1,[1]],[0,3,[1]]],"targets":[1]"#,
            "no_such_arc",
            &["\"features\"[1]", "arc 0 → 3"],
        ),
        (
            "ge",
            r#","features":[[0,1,[1,2]]],"targets":[1]"#,
            "mismatch",
            &["\"features\"[0]", "2 feature values", "\"targets\" has 1"],
        ),
        (
            "ge",
            r#","features":[[0,1]],"targets":[1]"#,
            "parse",
            &["\"features\"[0]"],
        ),
        (
            "ge",
            r#","features":[[0,1,["x"]]],"targets":[1]"#,
            "parse",
            &["\"features\"[0] value 0"],
        ),
        (
            "grad_ge",
            r#","features":[[0,1,[1]]],"targets":[null]"#,
            "parse",
            &["\"targets\"[0]"],
        ),
        (
            "ge",
            r#","features":[[0,1,2,[1]]],"targets":[1]"#,
            "no_such_arc",
            &["\"features\"[0]", "label 2"],
        ),
    ];
    let input: String = cases
        .iter()
        .enumerate()
        .map(|(i, (_, extra, ..))| format!("{{\"id\":{i},{p}{extra}}}\n"))
        .collect();
    for (i, (quantity, _, kind, words)) in cases.iter().enumerate() {
        // Each case alone, so that the first error of the line is this one.
        let line = input.lines().nth(i).unwrap();
        let out = spantree(&["infer", "--quantities", quantity], line);
        assert_eq!(out.status.code(), Some(1), "case {i}");
        let rec = &records(&out)[0];
        assert_eq!(rec["id"], json!(i));
        assert_eq!(rec["line"], json!(1));
        assert_eq!(rec["error"]["kind"], *kind, "case {i}: {rec}");
        let message = rec["error"]["message"].as_str().unwrap();
        for w in *words {
            assert!(message.contains(w), "case {i}: {message:?} lacks {w:?}");
        }
    }
    // Fields no requested quantity reads are ignored, malformed or not.
    let out = spantree(
        &["infer", "--quantities", "log_z"],
        &format!(r#"{{{p},"heads":"x","features":7,"scores_q":false}}"#),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// ~100 graphs with the fields of every quantity, and some bad lines.
fn mixed_file() -> String {
    let mut rng = SplitMix64::new(41);
    let mut out = String::new();
    for i in 0..100 {
        let n = 1 + rng.below(9);
        let p = random::normal_scores(&mut rng, n, 1.5, 0.1);
        let mut q = random::normal_scores(&mut rng, n, 1.5, 0.0);
        if i % 17 == 3 {
            // q forbids 0 → 1, which p gives mass: KL is +∞ and grad_kl an error.
            q[(0, 1)] = f64::NEG_INFINITY;
        }
        let heads: Vec<usize> = (1..=n)
            .map(|m| if m == 1 { 0 } else { rng.below(m) })
            .collect();
        let features: Vec<Value> = (0..3)
            .map(|_| {
                let m = 1 + rng.below(n);
                let h = (m + 1 + rng.below(n)) % (n + 1);
                json!([h, m, [rng.normal(), rng.normal()]])
            })
            .collect();
        let line = match i % 23 {
            7 => "{\"id\": \"broken\", \"scores\": [[".to_owned(),
            11 => String::new(),
            _ => json!({
                "id": i,
                "scores": scores_json(&p),
                "scores_q": scores_json(&q),
                "heads": heads,
                "features": features,
                "targets": [0.5, -0.5],
            })
            .to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
fn output_with_every_quantity_does_not_depend_on_the_thread_count() {
    let input = mixed_file();
    let quantities = "log_z,marginals,entropy,grad_entropy,cross_entropy,grad_cross_entropy,kl,\
                      grad_kl,renyi:0.5,lp_norm:2,expected_attachment,grad_expected_attachment,\
                      ge,grad_ge";
    let run = |threads: &str| {
        spantree(
            &["infer", "--threads", threads, "--quantities", quantities],
            &input,
        )
    };
    let (one, two) = (run("1"), run("2"));
    assert!(one.stdout == two.stdout, "--threads 1 and 2 differ");
    assert_eq!(stderr(&one), stderr(&two));
    let recs = records(&one);
    // Blank lines 11, 34, 57, 80 give no record.
    assert_eq!(recs.len(), 96);
    let ok = recs.iter().filter(|r| r.get("error").is_none()).count();
    assert!(ok > 60, "most lines succeed ({ok})");
    assert!(
        recs.iter()
            .any(|r| r["kl"].is_null() && r.get("error").is_none())
            || recs
                .iter()
                .any(|r| r["error"]["kind"] == "infinite_divergence"),
        "some q forbids an arc p uses"
    );
}

#[test]
fn the_shipped_expectations_example_runs() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/expectations.jsonl"
    );
    let quantities = "entropy,grad_entropy,cross_entropy,kl,renyi:2,lp_norm:2,\
                      expected_attachment,grad_expected_attachment,ge,grad_ge";
    let out = spantree(&["infer", "--quantities", quantities, file], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = records(&out);
    assert_eq!(recs.len(), 4);
    assert_eq!(recs[2]["kl_infinite_arc"], json!([0, 2]));
    let out = spantree(
        &[
            "infer",
            "--backend",
            "exact",
            "--quantities",
            "expected_attachment,ge,grad_ge",
            file,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
