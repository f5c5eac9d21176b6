//! Tier 2 of the suite: every quantity beyond `Z`, the marginals and `∇Z`,
//! on every engine, against enumeration over (labeled) trees
//! ([`Distribution`]) and, for the gradients, against complex-step
//! differentiation on the [`Complex`] engine.
//!
//! Every score gradient is checked through the identity
//! `∂E[f]/∂θ_{eℓ} = Cov[f, 1_{eℓ}]` for an `f` that does not depend on `θ`
//! (the explicit term of `−ln p` has expectation `μ − μ = 0`). With
//! [`Tolerance::EXACT`] the oracle runs in the engine's own scalar (exact
//! rationals) and every comparison is `==`; quantities with logarithms run
//! the oracle in `f64`.

use std::collections::HashMap;

use num_complex::Complex64;
use spantree_bruteforce::random::{self, SplitMix64};
use spantree_bruteforce::{Distribution, LabeledTree, LabeledWeights};
use spantree_core::engine::DENSE_UNCERTAINTY;
use spantree_core::{
    ArcFeatures, ArcRef, Divergence, Engine, Error, Graph, Inaccuracy, Matrix, Model, Numerical,
    Rooting, Scalar, SecondOrder, Transcendental,
};
use spantree_faer::Complex;

use crate::suite::Tolerance;

/// A labeled graph (one weight matrix per label) with at least one tree
/// under both rootings: `N(0, 1)` scores, a fifth of the arcs forbidden.
fn weights(rng: &mut SplitMix64, n: usize, labels: usize) -> Vec<Matrix<f64>> {
    loop {
        let w: Vec<Matrix<f64>> = (0..labels)
            .map(|_| random::normal_weights(rng, n, 1.0, 0.2))
            .collect();
        let lw = LabeledWeights::new(w.clone());
        if Rooting::ALL.iter().all(|&r| lw.partition(r) > 0.0) {
            return w;
        }
    }
}

/// The graph of per-label weights: unlabeled for one matrix.
pub(crate) fn graph_of(weights: &[Matrix<f64>]) -> Graph {
    if weights.len() == 1 {
        Graph::from_weights(&random::rows(&weights[0])).expect("valid weights")
    } else {
        Graph::from_labeled_weights(&LabeledWeights::new(weights.to_vec()).rows())
            .expect("valid labeled weights")
    }
}

/// The oracle in the scalar `S` (the `f64` weights convert exactly).
fn oracle<S: Scalar>(weights: &[Matrix<f64>], rooting: Rooting) -> Distribution<S> {
    let w = weights.iter().map(|m| m.map(|&x| S::from_f64(x))).collect();
    Distribution::new(&LabeledWeights::new(w), rooting).expect("a tree exists")
}

/// The cases of the brute-force comparisons: `n = 1..=5` unlabeled, `n ≤ 4`
/// with two labels, both rootings, one seed each.
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

/// `a` against `e`: `==` for exact tolerances, else `|a − e| ≤ tol (1 + |e|)`.
fn close<S: Scalar>(a: &S, e: &S, tol: f64, exact: bool, what: &str) {
    if exact {
        assert_eq!(a, e, "{what}");
    } else {
        let (a, e) = (a.to_f64(), e.to_f64());
        assert!(
            (a - e).abs() <= tol * (1.0 + e.abs()),
            "{what}: {a:e} against the oracle's {e:e} (tol {tol:e})"
        );
    }
}

/// One matrix per label, entry by entry as [`close`].
fn close_all<S: Scalar>(a: &[Matrix<S>], e: &[Matrix<S>], tol: f64, exact: bool, what: &str) {
    assert_eq!(a.len(), e.len(), "{what}: label count");
    for (l, (x, y)) in a.iter().zip(e).enumerate() {
        for h in 0..y.rows() {
            for m in 0..y.cols() {
                close(
                    &x[(h, m)],
                    &y[(h, m)],
                    tol,
                    exact,
                    &format!("{what} at ({h}, {m}, label {l})"),
                );
            }
        }
    }
}

fn arc(head: usize, dependent: usize, label: Option<usize>) -> ArcRef {
    ArcRef {
        head,
        dependent,
        label,
    }
}

/// `Σ` of a feature vector over the arcs of a tree.
fn value<S: Scalar>(f: &ArcFeatures<S>, t: &LabeledTree<S>) -> Vec<S> {
    let mut v = vec![S::zero(); f.dim()];
    for (a, values) in f.entries() {
        if t.has(a.head, a.dependent, a.label) {
            for (i, x) in values {
                v[*i] += x;
            }
        }
    }
    v
}

/// Three sparse features: root attachments, arcs pointing right and, on a
/// labeled graph, label 1 on any arc into word 1.
fn three_features<S: Scalar>(n: usize, labels: usize) -> ArcFeatures<S> {
    let mut f = ArcFeatures::new(3);
    for h in 0..=n {
        for m in (1..=n).filter(|&m| m != h) {
            let mut v = Vec::new();
            if h == 0 {
                v.push((0, S::one()));
            }
            if h < m {
                v.push((1, S::from_f64(0.5)));
            }
            if !v.is_empty() {
                f.push(arc(h, m, None), v).expect("valid feature");
            }
            if m == 1 && labels > 1 {
                f.push(arc(h, m, Some(1)), vec![(2, S::from_f64(2.0))])
                    .expect("valid feature");
            }
        }
    }
    f
}

/// Expected attachment (UAS, and LAS on labeled graphs), additive
/// expectations and totals, the GE objective, and the gradients of
/// attachment and GE, against brute force.
pub fn expectations<E: Engine>(engine: E, tol: Tolerance) {
    let exact = tol.is_exact();
    let tol = tol.marginal;
    for (n, k, rooting, seed) in cases() {
        let ctx = format!("{} {} n={n} labels={k}", engine.name(), rooting.name());
        let w = weights(&mut SplitMix64::new(seed + 3), n, k);
        let oracle = oracle::<E::Scalar>(&w, rooting);
        let model = Model::new(engine.clone(), &graph_of(&w), rooting).expect("model");
        // The reference: the most probable labeled tree.
        let gold = oracle
            .trees()
            .iter()
            .max_by(|a, b| a.probability.to_f64().total_cmp(&b.probability.to_f64()))
            .expect("a tree")
            .clone();
        let heads: Vec<usize> = gold.heads[1..].to_vec();
        let labels: Vec<usize> = gold.labels[1..].to_vec();
        let share =
            |count: usize| E::Scalar::from_f64(count as f64) / E::Scalar::from_f64(n as f64);
        let uas = |t: &LabeledTree<E::Scalar>| {
            share((1..=n).filter(|&m| t.heads[m] == gold.heads[m]).count())
        };
        let las = |t: &LabeledTree<E::Scalar>| {
            share(
                (1..=n)
                    .filter(|&m| t.heads[m] == gold.heads[m] && t.labels[m] == gold.labels[m])
                    .count(),
            )
        };
        let got = model.expected_attachment(&heads, None).expect("E[UAS]");
        close(
            &got,
            &oracle.expect(uas),
            tol,
            exact,
            &format!("{ctx}: E[UAS]"),
        );
        let got = model.grad_expected_attachment(&heads, None);
        if !plausible_refusal(&got, &oracle, rooting, &format!("{ctx}: ∇E[UAS]")) {
            let expected = oracle.covariance_with_arcs(uas);
            close_all(
                &got.expect("∇E[UAS]"),
                &expected,
                tol,
                exact,
                &format!("{ctx}: ∇E[UAS]"),
            );
        }
        if k > 1 {
            let got = model
                .expected_attachment(&heads, Some(&labels))
                .expect("E[LAS]");
            close(
                &got,
                &oracle.expect(las),
                tol,
                exact,
                &format!("{ctx}: E[LAS]"),
            );
            let got = model
                .grad_expected_attachment(&heads, Some(&labels))
                .expect("∇E[LAS]");
            let expected = oracle.covariance_with_arcs(las);
            close_all(&got, &expected, tol, exact, &format!("{ctx}: ∇E[LAS]"));
        }

        let f = three_features::<E::Scalar>(n, k);
        let mean: Vec<E::Scalar> = (0..3)
            .map(|i| oracle.expect(|t| value(&f, t)[i].clone()))
            .collect();
        let got = model.expect_additive(&f).expect("E[r]");
        let z = LabeledWeights::new(
            w.iter()
                .map(|m| m.map(|&x| E::Scalar::from_f64(x)))
                .collect(),
        )
        .partition(rooting);
        let total = model.total_additive(&f).expect("Z E[r]");
        for i in 0..3 {
            close(&got[i], &mean[i], tol, exact, &format!("{ctx}: E[r_{i}]"));
            let expected = z.clone() * mean[i].clone();
            // Relative to Z: the total carries the error of Z and of E[r].
            let scale = E::Scalar::from_f64(z.to_f64().max(1.0));
            close(
                &(total[i].clone() / scale.clone()),
                &(expected / scale),
                tol,
                exact,
                &format!("{ctx}: Z E[r_{i}]"),
            );
        }
        let targets: Vec<E::Scalar> = [1.0, 0.25, 0.5].map(E::Scalar::from_f64).to_vec();
        let mut objective = E::Scalar::zero();
        let mut coefficient = Vec::new();
        for i in 0..3 {
            let d = mean[i].clone() - targets[i].clone();
            objective += &(d.clone() * d.clone());
            coefficient.push(E::Scalar::from_f64(2.0) * d);
        }
        let got = model.ge_objective(&f, &targets).expect("GE");
        close(
            &got,
            &objective,
            tol,
            exact,
            &format!("{ctx}: GE objective"),
        );
        // ∂G/∂θ = Σ_i 2 (E_i − t_i) Cov[r_i, 1_e].
        let expected = oracle.covariance_with_arcs(|t| {
            let v = value(&f, t);
            let mut s = E::Scalar::zero();
            for i in 0..3 {
                s += &(coefficient[i].clone() * v[i].clone());
            }
            s
        });
        let got = model.grad_ge_objective(&f, &targets);
        if !plausible_refusal(&got, &oracle, rooting, &format!("{ctx}: ∇GE")) {
            close_all(
                &got.expect("∇GE"),
                &expected,
                tol,
                exact,
                &format!("{ctx}: ∇GE"),
            );
        }
    }
}

/// Whether `got` is a dense engine's refusal of a derivative
/// ([`Inaccuracy::SmallDerivative`]) that the oracle finds plausible: the
/// word it names is nearly certain of its head by the oracle's marginals
/// (uncertainty `Σ_h μ_hm − max_h μ_hm` below [`DENSE_UNCERTAINTY`]; the
/// root's row for word `0`, `E[R] − 1` multi-root), the cause under which the dense product loses
/// about `log₂(1/u)` bits. Panics on any other error, and on a refusal
/// that names no word or a word the oracle finds uncertain.
fn plausible_refusal<S: Scalar, T>(
    got: &spantree_core::Result<T>,
    oracle: &Distribution<S>,
    rooting: Rooting,
    ctx: &str,
) -> bool {
    let word = match got {
        Ok(_) => return false,
        Err(Error::Numerical(Numerical::Inaccurate {
            cause: Inaccuracy::SmallDerivative { word: Some(word) },
            ..
        })) => *word,
        Err(e) => panic!("{ctx}: {e:?}"),
    };
    let mu = oracle.marginals();
    let n1 = mu.rows();
    let line: Vec<f64> = if word == 0 {
        (1..n1).map(|m| mu[(0, m)].to_f64()).collect()
    } else {
        (0..n1)
            .filter(|&h| h != word)
            .map(|h| mu[(h, word)].to_f64())
            .collect()
    };
    // Multi-root, the root's row counts the root arcs: `u = E[R] − 1`.
    let top = if word == 0 && rooting == Rooting::Multi {
        1.0
    } else {
        line.iter().copied().fold(0.0, f64::max)
    };
    let uncertainty = line.iter().sum::<f64>() - top;
    assert!(
        uncertainty < DENSE_UNCERTAINTY,
        "{ctx}: refused for word {word}, whose uncertainty is {uncertainty:e}"
    );
    true
}

/// The vector–Jacobian products of the marginals: for seeds `ḡ`,
/// `Σ_{eℓ} ḡ_{eℓ} ∂μ_{eℓ}/∂θ_{fℓ'} = Cov[Σ_{(e,ℓ) ∈ d} ḡ_{eℓ}, 1_{fℓ'}]`.
/// `label_marginals_vjp` with one seed per label and with one seed for the
/// arc marginals; `marginals_vjp` on unlabeled graphs.
pub fn marginals_vjp<E: Engine>(engine: E, tol: Tolerance) {
    let exact = tol.is_exact();
    let tol = tol.marginal;
    for (n, k, rooting, seed) in cases() {
        let ctx = format!("{} {} n={n} labels={k}", engine.name(), rooting.name());
        let mut rng = SplitMix64::new(seed + 4);
        let w = weights(&mut rng, n, k);
        let oracle = oracle::<E::Scalar>(&w, rooting);
        let model = Model::new(engine.clone(), &graph_of(&w), rooting).expect("model");
        // Seeds in eighths: exact in every scalar.
        let mut draw = || {
            Matrix::from_fn(n + 1, n + 1, |_, _| {
                E::Scalar::from_f64((rng.below(17) as f64 - 8.0) / 8.0)
            })
        };
        let per_label: Vec<Matrix<E::Scalar>> = (0..k).map(|_| draw()).collect();
        let expected = oracle.covariance_with_arcs(|t| {
            let mut s = E::Scalar::zero();
            for (h, m, l) in t.arcs() {
                s += &per_label[l][(h, m)];
            }
            s
        });
        let got = model.label_marginals_vjp(&per_label).expect("label VJP");
        close_all(
            &got,
            &expected,
            tol,
            exact,
            &format!("{ctx}: label_marginals_vjp"),
        );

        let one = draw();
        let expected = oracle.covariance_with_arcs(|t| {
            let mut s = E::Scalar::zero();
            for (h, m, _) in t.arcs() {
                s += &one[(h, m)];
            }
            s
        });
        let got = model
            .label_marginals_vjp(std::slice::from_ref(&one))
            .expect("arc-seeded VJP");
        close_all(
            &got,
            &expected,
            tol,
            exact,
            &format!("{ctx}: arc-seeded VJP"),
        );
        if k == 1 {
            let got = model.marginals_vjp(&one).expect("VJP");
            close_all(
                &[got],
                &expected,
                tol,
                exact,
                &format!("{ctx}: marginals_vjp"),
            );
        }
        if k > 1 {
            let wrong = vec![one.clone(); k + 1];
            assert!(
                matches!(
                    model.label_marginals_vjp(&wrong),
                    Err(Error::Mismatch { .. })
                ),
                "{ctx}: a seed count other than 1 or the label count"
            );
        }
    }
}

/// Second order against brute force: `E[r sᵀ]` and `Cov[r, s]` on every
/// route ([`SecondOrder`]), and every pair marginal of allowed arcs;
/// labeled graphs with label-specific and label-free features.
pub fn second_order<E: Engine>(engine: E, tol: Tolerance) {
    let exact = tol.is_exact();
    let tol = tol.marginal;
    for (n, k, rooting, seed) in cases() {
        let ctx = format!("{} {} n={n} labels={k}", engine.name(), rooting.name());
        let mut rng = SplitMix64::new(seed + 5);
        let w = weights(&mut rng, n, k);
        let oracle = oracle::<E::Scalar>(&w, rooting);
        let model = Model::new(engine.clone(), &graph_of(&w), rooting).expect("model");
        let mut r = ArcFeatures::new(3);
        let mut s = ArcFeatures::new(2);
        let label = |rng: &mut SplitMix64| (k > 1 && rng.chance(0.5)).then(|| rng.below(k));
        for h in 0..=n {
            for m in (1..=n).filter(|&m| m != h) {
                if rng.chance(0.7) {
                    let v = E::Scalar::from_f64(rng.below(4) as f64 - 1.0);
                    r.push(arc(h, m, label(&mut rng)), vec![(rng.below(3), v)])
                        .expect("valid feature");
                }
                if rng.chance(0.5) {
                    let v = E::Scalar::from_f64(rng.below(3) as f64);
                    s.push(
                        arc(h, m, label(&mut rng)),
                        vec![(0, E::Scalar::from_f64(0.5)), (1, v)],
                    )
                    .expect("valid feature");
                }
            }
        }
        for algorithm in [
            SecondOrder::JacobianVector,
            SecondOrder::Hessian,
            SecondOrder::Auto,
        ] {
            let ctx = format!("{ctx} {}", algorithm.name());
            let second = model.expect_second_order(&r, &s, algorithm);
            let cov = model.covariance(&r, &s, algorithm);
            let refused = plausible_refusal(&second, &oracle, rooting, &format!("{ctx}: E[r s]"));
            if plausible_refusal(&cov, &oracle, rooting, &format!("{ctx}: Cov")) || refused {
                continue;
            }
            let (second, cov) = (second.expect("E[r sᵀ]"), cov.expect("Cov"));
            for i in 0..3 {
                let ri = oracle.expect(|t| value(&r, t)[i].clone());
                for j in 0..2 {
                    let rs = oracle.expect(|t| value(&r, t)[i].clone() * value(&s, t)[j].clone());
                    let sj = oracle.expect(|t| value(&s, t)[j].clone());
                    let cv = rs.clone() - ri.clone() * sj;
                    close(&second[(i, j)], &rs, tol, exact, &format!("{ctx}: E[r s]"));
                    close(&cov[(i, j)], &cv, tol, exact, &format!("{ctx}: Cov"));
                }
            }
        }
        // Every pair of allowed arcs (any label).
        let allowed: Vec<ArcRef> = (0..=n)
            .flat_map(|h| (1..=n).map(move |m| (h, m)))
            .filter(|&(h, m)| h != m && w.iter().any(|l| l[(h, m)] > 0.0))
            .map(|(h, m)| arc(h, m, None))
            .collect();
        let pairs: Vec<(ArcRef, ArcRef)> = allowed
            .iter()
            .flat_map(|&a| allowed.iter().map(move |&b| (a, b)))
            .collect();
        let got = model.pair_marginals(&pairs).expect("pair marginals");
        for ((a, b), g) in pairs.iter().zip(got) {
            let both = oracle.expect(|t| {
                let hit = t.has(a.head, a.dependent, None) && t.has(b.head, b.dependent, None);
                E::Scalar::from_f64(f64::from(u8::from(hit)))
            });
            close(&g, &both, tol, exact, &format!("{ctx}: pair {a} {b}"));
        }
    }
}

/// `ln p(d)` of every labeled tree, keyed by heads and labels.
fn log_probabilities(d: &Distribution<f64>) -> HashMap<(Vec<usize>, Vec<usize>), f64> {
    d.trees()
        .iter()
        .map(|t| ((t.heads.clone(), t.labels.clone()), t.probability.ln()))
        .collect()
}

fn ln_p(table: &HashMap<(Vec<usize>, Vec<usize>), f64>, t: &LabeledTree<f64>) -> f64 {
    table[&(t.heads.clone(), t.labels.clone())]
}

fn to_f64_all<S: Scalar>(a: &[Matrix<S>]) -> Vec<Matrix<f64>> {
    a.iter().map(|m| m.map(Scalar::to_f64)).collect()
}

/// The entropy `H = −Σ p ln p` and `∂H/∂θ = Cov[−ln p, 1_e]`, against brute force in `f64`.
pub fn entropy<E: Engine>(engine: E, tol: Tolerance)
where
    E::Scalar: Transcendental,
{
    for (n, k, rooting, seed) in cases() {
        let ctx = format!("{} {} n={n} labels={k}", engine.name(), rooting.name());
        let w = weights(&mut SplitMix64::new(seed), n, k);
        let p = oracle::<f64>(&w, rooting);
        let lp = log_probabilities(&p);
        let model = Model::new(engine.clone(), &graph_of(&w), rooting).expect("model");
        let h = p.expect(|t| -ln_p(&lp, t));
        close(
            &model.entropy().expect("H").to_f64(),
            &h,
            tol.log_z,
            false,
            &format!("{ctx}: H"),
        );
        let grad = to_f64_all(&model.grad_entropy().expect("∇H"));
        let expected = p.covariance_with_arcs(|t| -ln_p(&lp, t));
        close_all(&grad, &expected, tol.gradient, false, &format!("{ctx}: ∇H"));
    }
}

/// Cross-entropy `H(p, q) = −Σ p ln q` and `KL(p‖q) = Σ p ln(p/q)`, and both
/// gradients: `∂/∂θ^p = Cov_p[−ln q (+ ln p), 1_e]`, `∂/∂θ^q = μ^q − μ^p`.
pub fn divergences<E: Engine>(engine: E, tol: Tolerance)
where
    E::Scalar: Transcendental,
{
    for (n, k, rooting, seed) in cases() {
        let ctx = format!("{} {} n={n} labels={k}", engine.name(), rooting.name());
        let mut rng = SplitMix64::new(seed + 1);
        let wp = weights(&mut rng, n, k);
        // q on the support of p: every allowed weight of p times e^{N(0, 1)}.
        let wq: Vec<Matrix<f64>> = wp
            .iter()
            .map(|m| m.map(|&x| if x > 0.0 { x * rng.normal().exp() } else { 0.0 }))
            .collect();
        let (p, q) = (oracle::<f64>(&wp, rooting), oracle::<f64>(&wq, rooting));
        let (lp, lq) = (log_probabilities(&p), log_probabilities(&q));
        let mp = Model::new(engine.clone(), &graph_of(&wp), rooting).expect("model p");
        let mq = Model::new(engine.clone(), &graph_of(&wq), rooting).expect("model q");
        let ce = p.expect(|t| -ln_p(&lq, t));
        let kl = p.expect(|t| ln_p(&lp, t) - ln_p(&lq, t));
        let got = mp.cross_entropy(&mq).expect("H(p, q)").to_f64();
        close(&got, &ce, tol.log_z, false, &format!("{ctx}: H(p, q)"));
        let got = mp.kl_divergence(&mq).expect("KL").to_f64();
        close(&got, &kl, tol.log_z, false, &format!("{ctx}: KL"));
        // ∂/∂θ^q of both: μ^q − μ^p.
        let wrt_q: Vec<Matrix<f64>> = q
            .label_marginals()
            .iter()
            .zip(p.label_marginals())
            .map(|(a, b)| Matrix::from_fn(n + 1, n + 1, |h, m| a[(h, m)] - b[(h, m)]))
            .collect();
        let g = mp.grad_cross_entropy(&mq).expect("∇H(p, q)");
        let expected = p.covariance_with_arcs(|t| -ln_p(&lq, t));
        close_all(
            &to_f64_all(&g.wrt_p),
            &expected,
            tol.gradient,
            false,
            &format!("{ctx}: ∂H(p,q)/∂θp"),
        );
        close_all(
            &to_f64_all(&g.wrt_q),
            &wrt_q,
            tol.gradient,
            false,
            &format!("{ctx}: ∂H(p,q)/∂θq"),
        );
        let g = mp.grad_kl_divergence(&mq).expect("∇KL");
        let expected = p.covariance_with_arcs(|t| ln_p(&lp, t) - ln_p(&lq, t));
        close_all(
            &to_f64_all(&g.wrt_p),
            &expected,
            tol.gradient,
            false,
            &format!("{ctx}: ∂KL/∂θp"),
        );
        close_all(
            &to_f64_all(&g.wrt_q),
            &wrt_q,
            tol.gradient,
            false,
            &format!("{ctx}: ∂KL/∂θq"),
        );
    }
}

/// `H(p, q) = +∞` where `q` forbids an arc that `p` uses: the value names the
/// arc, the gradients are a typed error naming it, and the other direction
/// is finite (hand-worked graph).
pub fn infinite_divergence<E: Engine>(engine: E)
where
    E::Scalar: Transcendental,
{
    let ninf = f64::NEG_INFINITY;
    let p = Graph::from_scores(&[[ninf, 0.0, 0.0], [ninf, ninf, 0.0], [ninf, 0.0, ninf]])
        .expect("valid");
    let q = Graph::from_scores(&[[ninf, 0.0, 0.0], [ninf, ninf, ninf], [ninf, 0.0, ninf]])
        .expect("valid");
    let mp = Model::new(engine.clone(), &p, Rooting::Multi).expect("model p");
    let mq = Model::new(engine, &q, Rooting::Multi).expect("model q");
    let a = arc(1, 2, None);
    assert!(matches!(mp.cross_entropy(&mq), Ok(Divergence::Infinite { arc }) if arc == a));
    assert_eq!(mp.kl_divergence(&mq).expect("KL").to_f64(), f64::INFINITY);
    assert_eq!(
        mp.grad_kl_divergence(&mq).unwrap_err(),
        Error::InfiniteDivergence { arc: a }
    );
    assert_eq!(
        mp.grad_cross_entropy(&mq).unwrap_err(),
        Error::InfiniteDivergence { arc: a }
    );
    // q's support lies inside p's: {0→1, 0→2} and {0→2, 2→1}, each 1/2 under
    // q and 1/3 under p, so KL(q‖p) = ln(3/2).
    let back = mq.kl_divergence(&mp).expect("KL(q‖p)").to_f64();
    assert!((back - 1.5f64.ln()).abs() < 1e-12, "KL(q‖p) = {back}");
}

/// Rényi entropies `H_α = ln(Σ p^α) / (1 − α)` (`α = 0`: ln of the number of
/// labeled trees) and `ℓ_k` norms `(Σ p^k)^{1/k}`, against brute force.
pub fn renyi_and_norms<E: Engine>(engine: E, tol: Tolerance)
where
    E::Scalar: Transcendental,
{
    for (n, k, rooting, seed) in cases() {
        let ctx = format!("{} {} n={n} labels={k}", engine.name(), rooting.name());
        let w = weights(&mut SplitMix64::new(seed + 2), n, k);
        let p = oracle::<f64>(&w, rooting);
        let model = Model::new(engine.clone(), &graph_of(&w), rooting).expect("model");
        let sum_pow = |a: f64| p.expect(|t| t.probability.powf(a - 1.0));
        for alpha in [0.0, 0.5, 2.0, 3.5] {
            let expected = if alpha == 0.0 {
                (p.trees().len() as f64).ln()
            } else {
                sum_pow(alpha).ln() / (1.0 - alpha)
            };
            let got = model.renyi_entropy(alpha).expect("Rényi").to_f64();
            close(
                &got,
                &expected,
                tol.log_z,
                false,
                &format!("{ctx}: H_{alpha}"),
            );
        }
        for kk in [0.5, 2.0, 3.0] {
            let got = model.lp_norm(kk).expect("ℓ_k").to_f64();
            let expected = sum_pow(kk).powf(1.0 / kk);
            close(&got, &expected, tol.log_z, false, &format!("{ctx}: ℓ_{kk}"));
        }
    }
}

/// Identities on complete graphs of `N(0, 1)` scores, `n ∈ {8, 20, 40}` up
/// to `max_n`: `0 ≤ H ≤ H_0`, `H_0` is Cayley's count, `KL(p‖p) = 0`,
/// `H(p, q) = H(p) + KL(p‖q)`, `H_α` does not increase in `α`, and
/// `H_α → H` as `α → 1`.
pub fn information_identities<E: Engine>(engine: E, tol: Tolerance, max_n: usize)
where
    E::Scalar: Transcendental,
{
    let mut rng = SplitMix64::new(77);
    // The tolerances below are those of f64 (sums of n² terms of size ln n²);
    // a tighter engine passes them too.
    let rel = tol.log_z.max(1e-12);
    for n in [8, 20, 40].into_iter().filter(|&n| n <= max_n) {
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n={n}", engine.name(), rooting.name());
            let s = random::normal_scores(&mut rng, n, 1.0, 0.0);
            let t = s.map(|&x| {
                if x.is_finite() {
                    x + 0.5 * rng.normal()
                } else {
                    x
                }
            });
            let score_graph =
                |s: &Matrix<f64>| Graph::from_scores(&random::rows(s)).expect("valid");
            let p = Model::new(engine.clone(), &score_graph(&s), rooting).expect("p");
            let q = Model::new(engine.clone(), &score_graph(&t), rooting).expect("q");
            let h = p.entropy().expect("H").to_f64();
            let trees = p.renyi_entropy(0.0).expect("H_0").to_f64();
            assert!(
                h >= 0.0 && h <= trees * (1.0 + rel),
                "{ctx}: H = {h}, H_0 = {trees}"
            );
            let count = match rooting {
                Rooting::Multi => (n as f64 - 1.0) * ((n + 1) as f64).ln(),
                Rooting::Single => (n as f64 - 1.0) * (n as f64).ln(),
            };
            assert!(
                (trees - count).abs() <= rel * count,
                "{ctx}: H_0 {trees} vs Cayley {count}"
            );
            // abs 1e-10: ~n² terms of size ~ln Z cancel.
            let self_kl = p.kl_divergence(&p).expect("KL").to_f64();
            assert!(self_kl.abs() < 1e-10, "{ctx}: KL(p‖p) = {self_kl}");
            let ce = p.cross_entropy(&q).expect("CE").to_f64();
            let kl = p.kl_divergence(&q).expect("KL").to_f64();
            assert!(
                (ce - (h + kl)).abs() < 1e-10 * ce.abs().max(1.0),
                "{ctx}: H(p,q) = H + KL"
            );
            let mut last = f64::INFINITY;
            for alpha in [0.0, 0.3, 0.9, 1.0, 1.5, 4.0, 20.0] {
                let r = p.renyi_entropy(alpha).expect("Rényi").to_f64();
                assert!(r <= last * (1.0 + rel) + rel, "{ctx}: H_{alpha} increased");
                last = r;
            }
            // At α = 1 ± 1e-6 the quotient differs from H by O(1e-6) (slope)
            // plus cancellation of ~1e-10 / 1e-6.
            for alpha in [1.0 - 1e-6, 1.0 + 1e-6] {
                let r = p.renyi_entropy(alpha).expect("Rényi").to_f64();
                assert!(
                    (r - h).abs() < 1e-4 * h.max(1.0),
                    "{ctx}: H_{alpha} = {r}, H = {h}"
                );
            }
        }
    }
}

/// Complex-step differentiation: `∂F/∂θ_e = Im F(θ + i h e_e) / h` with
/// `h = 1e-30`, exact to first order and free of cancellation, computed by
/// the same generic code on the [`Complex`] engine (perturbing `θ_e` by `i h`
/// multiplies `w_e` by `1 + i h`, exactly in `f64`).
const H: f64 = 1e-30;

/// A complex-step case: per-label scores and a rooting.
struct StepCase {
    scores: Vec<Matrix<f64>>,
    rooting: Rooting,
}

impl StepCase {
    fn n(&self) -> usize {
        self.scores[0].rows() - 1
    }

    fn labels(&self) -> usize {
        self.scores.len()
    }

    fn graph(&self) -> Graph {
        graph_of(
            &self
                .scores
                .iter()
                .map(random::weights_of)
                .collect::<Vec<_>>(),
        )
    }

    /// The same scores, scaled and shifted: a second distribution on the same support.
    fn other(&self) -> StepCase {
        StepCase {
            scores: self
                .scores
                .iter()
                .map(|s| s.map(|&x| x * 0.5 - 0.25))
                .collect(),
            rooting: self.rooting,
        }
    }

    /// The complex model with score `(h, m, ℓ)` perturbed by `i H`.
    fn perturbed(&self, arc: Option<(usize, usize, usize)>) -> Model<Complex> {
        let n1 = self.n() + 1;
        let weight = |h: usize, m: usize, l: usize| {
            let s = self.scores[l][(h, m)];
            if s == f64::NEG_INFINITY {
                return Complex64::new(0.0, 0.0);
            }
            let w = s.exp();
            if arc == Some((h, m, l)) {
                Complex64::new(w, w * H)
            } else {
                Complex64::new(w, 0.0)
            }
        };
        let graph = if self.labels() == 1 {
            let rows: Vec<Vec<Complex64>> = (0..n1)
                .map(|h| (0..n1).map(|m| weight(h, m, 0)).collect())
                .collect();
            Graph::from_weights(&rows).expect("valid")
        } else {
            let rows: Vec<Vec<Vec<Complex64>>> = (0..n1)
                .map(|h| {
                    (0..n1)
                        .map(|m| (0..self.labels()).map(|l| weight(h, m, l)).collect())
                        .collect()
                })
                .collect();
            Graph::from_labeled_weights(&rows).expect("valid")
        };
        Model::from_scalar_graph(Complex, &graph, self.rooting).expect("complex model")
    }

    /// The arcs to perturb: every allowed one for small graphs, a seeded sample otherwise.
    fn arcs(&self, rng: &mut SplitMix64) -> Vec<(usize, usize, usize)> {
        let n = self.n();
        let mut all = Vec::new();
        for l in 0..self.labels() {
            for h in 0..=n {
                for m in (1..=n).filter(|&m| m != h) {
                    if self.scores[l][(h, m)].is_finite() {
                        all.push((h, m, l));
                    }
                }
            }
        }
        if all.len() <= 40 {
            return all;
        }
        (0..12).map(|_| all[rng.below(all.len())]).collect()
    }

    /// Checks `grad` (per label) against complex steps of `f` on `arcs`,
    /// relative to the largest entry of the gradient.
    fn check<S: Scalar>(
        &self,
        what: &str,
        grad: &[Matrix<S>],
        arcs: &[(usize, usize, usize)],
        tol: f64,
        f: impl Fn(&Model<Complex>) -> Complex64,
    ) {
        let scale = grad
            .iter()
            .flat_map(|g| g.as_slice().iter())
            .fold(0.0_f64, |a, x| a.max(x.to_f64().abs()))
            // A gradient that vanishes identically (n = 1) leaves complex-step
            // noise of order ε; every other case here has entries above 1e-5.
            .max(1e-5);
        for &(h, m, l) in arcs {
            let step = f(&self.perturbed(Some((h, m, l)))).im / H;
            let got = grad[l][(h, m)].to_f64();
            assert!(
                (got - step).abs() <= tol * scale,
                "{what} n={} {:?} arc {h}→{m} label {l}: reverse mode {got}, complex step {step}",
                self.n(),
                self.rooting
            );
        }
    }
}

/// Seeded complex-step cases up to `max_n`, a tenth of the arcs forbidden from `n = 6` on.
fn step_cases(max_n: usize) -> Vec<StepCase> {
    let mut rng = SplitMix64::new(31);
    let mut out = Vec::new();
    for (n, labels) in [
        (1, 1),
        (2, 1),
        (3, 2),
        (5, 1),
        (6, 3),
        (12, 1),
        (25, 2),
        (60, 1),
    ] {
        for rooting in Rooting::ALL {
            let forbid = if n < 6 { 0.0 } else { 0.1 };
            let scores: Vec<Matrix<f64>> = (0..labels)
                .map(|_| random::normal_scores(&mut rng, n, 1.0, forbid))
                .collect();
            if n <= max_n {
                out.push(StepCase { scores, rooting });
            }
        }
    }
    out
}

/// The gradients of expected attachment and of the GE objective against
/// complex steps of the values, `n` up to `min(max_n, 60)`; `tol.gradient`
/// relative to the largest entry.
pub fn complex_step_expectations<E: Engine>(engine: E, tol: Tolerance, max_n: usize) {
    // Exact engines: the complex-step side carries f64 rounding (rel 1e-10).
    let tol = if tol.is_exact() { 1e-10 } else { tol.gradient };
    let mut rng = SplitMix64::new(3);
    for case in step_cases(max_n) {
        let n = case.n();
        let model = Model::new(engine.clone(), &case.graph(), case.rooting).expect("model");
        // Reference heads: the best-scoring head of each word (always allowed).
        let heads: Vec<usize> = (1..=n)
            .map(|m| {
                (0..=n)
                    .filter(|&h| h != m && case.scores[0][(h, m)].is_finite())
                    .max_by(|&a, &b| case.scores[0][(a, m)].total_cmp(&case.scores[0][(b, m)]))
                    .expect("an allowed head")
            })
            .collect();
        let labels: Vec<usize> = (0..n).map(|i| i % case.labels()).collect();
        let arcs = case.arcs(&mut rng);
        let label_ref = (case.labels() > 1).then_some(labels.as_slice());
        let g = model
            .grad_expected_attachment(&heads, label_ref)
            .unwrap_or_else(|e| panic!("∇E[attachment] n={n} {:?}: {e:?}", case.rooting));
        case.check(
            &format!("{} ∂E[attachment]/∂θ", engine.name()),
            &g,
            &arcs,
            tol,
            |m| {
                m.expected_attachment(&heads, label_ref)
                    .expect("E[attachment]")
            },
        );
        // Five sparse features: each arc gets one or two, some label-specific.
        let mut f = ArcFeatures::new(5);
        for h in 0..=n {
            for m in (1..=n).filter(|&m| m != h) {
                let k = (h * 7 + m * 3) % 5;
                let label = (case.labels() > 1 && k % 2 == 0).then_some(k % case.labels());
                f.push(
                    arc(h, m, label),
                    vec![(k, rng.normal()), ((k + 2) % 5, 1.0)],
                )
                .expect("valid feature");
            }
        }
        let targets = [0.3, 1.0, -0.5, 2.0, 0.0];
        let g = model
            .grad_ge_objective(
                &f.map(|&x| E::Scalar::from_f64(x)),
                &targets.map(E::Scalar::from_f64),
            )
            .expect("∇GE");
        let fc = f.map(|&x| Complex64::from_f64(x));
        let tc = targets.map(Complex64::from_f64);
        case.check(
            &format!("{} ∂GE/∂θ", engine.name()),
            &g,
            &arcs,
            tol,
            |m| m.ge_objective(&fc, &tc).expect("GE"),
        );
    }
}

/// `∂ ln Z/∂θ` (the label marginals), `∂H/∂θ`, and both gradients of the
/// cross-entropy and of KL against complex steps, `n` up to `min(max_n, 60)`.
pub fn complex_step_information<E: Engine>(engine: E, tol: Tolerance, max_n: usize)
where
    E::Scalar: Transcendental,
{
    // Exact engines: the complex-step side carries f64 rounding (rel 1e-10).
    let tol = if tol.is_exact() { 1e-10 } else { tol.gradient };
    let mut rng = SplitMix64::new(2);
    let name = engine.name();
    for case in step_cases(max_n) {
        let q_case = case.other();
        let p = Model::new(engine.clone(), &case.graph(), case.rooting).expect("p");
        let q = Model::new(engine.clone(), &q_case.graph(), case.rooting).expect("q");
        let (pc, qc) = (case.perturbed(None), q_case.perturbed(None));
        let arcs = case.arcs(&mut rng);
        let mu = p.label_marginals().expect("μ");
        case.check(&format!("{name} ∂ln Z/∂θ"), &mu, &arcs, tol, |m| {
            m.log_partition_scalar().expect("ln Z")
        });
        let g = p.grad_entropy().expect("∇H");
        case.check(&format!("{name} ∂H/∂θ"), &g, &arcs, tol, |m| {
            m.entropy().expect("H")
        });
        let finite = |d: Divergence<Complex64>| d.finite().expect("finite divergence");
        let ce = p.grad_cross_entropy(&q).expect("∇H(p, q)");
        case.check(
            &format!("{name} ∂H(p,q)/∂θp"),
            &ce.wrt_p,
            &arcs,
            tol,
            |m| finite(m.cross_entropy(&qc).expect("H(p, q)")),
        );
        q_case.check(
            &format!("{name} ∂H(p,q)/∂θq"),
            &ce.wrt_q,
            &arcs,
            tol,
            |m| finite(pc.cross_entropy(m).expect("H(p, q)")),
        );
        let kl = p.grad_kl_divergence(&q).expect("∇KL");
        case.check(
            &format!("{name} ∂KL/∂θp"),
            &kl.wrt_p,
            &arcs,
            tol,
            |m| finite(m.kl_divergence(&qc).expect("KL")),
        );
        q_case.check(
            &format!("{name} ∂KL/∂θq"),
            &kl.wrt_q,
            &arcs,
            tol,
            |m| finite(pc.kl_divergence(m).expect("KL")),
        );
    }
}
