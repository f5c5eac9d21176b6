//! Tier 1 of the suite: `Z`, the marginals and `∇Z` on every engine.
//!
//! Each function is a plain generic test body, `fn …<B: Engine>(backend: B, tol: Tolerance)`
//! (plus a size for the identities that run at large `n`); `tests/engines.rs`
//! only stamps `#[test]`s around them ([`crate::stamp_suite!`]). Every number asserted
//! comes from the brute-force oracle, an identity or a count, never from the
//! code under test. A failure message names the backend, the rooting, `n` and
//! the seed, so it reproduces.
//!
//! With [`Tolerance::EXACT`] every comparison is `==` on the backend's scalar
//! (for exact rationals); otherwise the tolerances below apply.

use spantree_core::{ArcRef, Engine, Error, Graph, Matrix, Model, NoTree, Rooting, Scalar};

use spantree_bruteforce::random::{self, SplitMix64};
use spantree_bruteforce::{
    grad_partition, log_partition_from_scores, marginals, marginals_from_scores, partition,
    LabeledWeights,
};

/// How close a backend must come to the oracle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// On `ln Z`: `|ln Z − ln Z*| ≤ log_z · max(1, |ln Z*|)`, a relative error
    /// of `Z` while `|ln Z| ≤ 1` and of `ln Z` beyond.
    pub log_z: f64,
    /// On each marginal (a probability): `|μ − μ*| ≤ marginal`.
    pub marginal: f64,
    /// On `∂Z/∂w`: `|g − g*| ≤ gradient · max(max_e |g*_e|, M^(n−1))` with `M`
    /// the largest weight: relative to the largest entry, or to the size of
    /// one tree's product when every entry is `0`.
    pub gradient: f64,
}

impl Tolerance {
    /// Exact equality (`==` on the scalar): for exact backends.
    pub const EXACT: Tolerance = Tolerance {
        log_z: 0.0,
        marginal: 0.0,
        gradient: 0.0,
    };

    /// A tolerance with the same bound on `ln Z`, marginals and gradients.
    pub const fn uniform(tol: f64) -> Tolerance {
        Tolerance {
            log_z: tol,
            marginal: tol,
            gradient: tol,
        }
    }

    /// Whether comparisons are exact (`==`).
    pub fn is_exact(&self) -> bool {
        *self == Tolerance::EXACT
    }
}

/// The sizes the large-`n` identities run at, up to the caller's maximum.
const SIZES: [usize; 14] = [1, 2, 3, 4, 5, 7, 10, 15, 20, 25, 30, 40, 50, 60];

fn sizes(max_n: usize) -> impl Iterator<Item = usize> {
    SIZES.into_iter().filter(move |&n| n <= max_n)
}

fn weight_graph(weights: &Matrix<f64>) -> Graph {
    Graph::from_weights(&random::rows(weights)).expect("generated weights are valid")
}

fn score_graph(scores: &Matrix<f64>) -> Graph {
    Graph::from_scores(&random::rows(scores)).expect("generated scores are valid")
}

fn to_scalar<S: Scalar>(weights: &Matrix<f64>) -> Matrix<S> {
    weights.map(|&w| S::from_f64(w))
}

fn model<B: Engine>(backend: &B, graph: &Graph, rooting: Rooting, ctx: &str) -> Model<B> {
    Model::new(backend.clone(), graph, rooting)
        .unwrap_or_else(|e| panic!("{ctx}: Model::new failed: {e}"))
}

/// `|actual − expected| ≤ rel · max(1, |expected|)`; equal infinities pass.
fn assert_log_close(actual: f64, expected: f64, rel: f64, ctx: &str) {
    let ok = actual == expected || (actual - expected).abs() <= rel * expected.abs().max(1.0);
    assert!(
        ok,
        "{ctx}: ln Z = {actual:e}, expected {expected:e} (tol {rel:e})"
    );
}

/// Checks `Z` against the oracle's `expected`: `==` on exact backends, `ln Z`
/// to `tol.log_z` otherwise.
fn check_partition<B: Engine>(model: &Model<B>, expected: &B::Scalar, tol: Tolerance, ctx: &str) {
    let log_z = model
        .log_partition()
        .unwrap_or_else(|e| panic!("{ctx}: log_partition failed: {e}"));
    if tol.is_exact() {
        let z = model
            .partition()
            .unwrap_or_else(|e| panic!("{ctx}: partition failed: {e}"));
        assert_eq!(&z, expected, "{ctx}: Z");
        // rel 1e-12: ln|det| is a sum of n rounded logarithms of exact pivots.
        assert_log_close(log_z, expected.ln_abs(), 1e-12, ctx);
    } else {
        assert_log_close(log_z, expected.ln_abs(), tol.log_z, ctx);
    }
}

/// Entry by entry: `==` on exact backends, `|a − e| ≤ abs` otherwise.
fn check_matrix<S: Scalar>(
    actual: &Matrix<S>,
    expected: &Matrix<S>,
    abs: f64,
    exact: bool,
    ctx: &str,
) {
    assert_eq!(
        (actual.rows(), actual.cols()),
        (expected.rows(), expected.cols()),
        "{ctx}: shape"
    );
    for i in 0..expected.rows() {
        for j in 0..expected.cols() {
            let (a, e) = (&actual[(i, j)], &expected[(i, j)]);
            if exact {
                assert_eq!(a, e, "{ctx}: entry ({i}, {j})");
            } else {
                let (a, e) = (a.to_f64(), e.to_f64());
                assert!(
                    (a - e).abs() <= abs,
                    "{ctx}: entry ({i}, {j}) = {a:e}, expected {e:e} (tol {abs:e})"
                );
            }
        }
    }
}

/// Marginals against an `f64` oracle (the log-space one), whatever the scalar.
fn check_marginals_f64<S: Scalar>(actual: &Matrix<S>, expected: &Matrix<f64>, abs: f64, ctx: &str) {
    check_matrix(&actual.map(Scalar::to_f64), expected, abs, false, ctx);
}

fn check_gradient<B: Engine>(
    model: &Model<B>,
    weights: &Matrix<f64>,
    rooting: Rooting,
    tol: Tolerance,
    ctx: &str,
) {
    let expected = grad_partition(&to_scalar::<B::Scalar>(weights), rooting);
    let actual = model
        .grad_partition()
        .unwrap_or_else(|e| panic!("{ctx}: grad_partition failed: {e}"));
    if tol.is_exact() {
        check_matrix(&actual, &expected, 0.0, true, ctx);
        return;
    }
    let n = weights.rows() - 1;
    let largest_weight = weights.as_slice().iter().copied().fold(0.0, f64::max);
    let largest_entry = expected
        .as_slice()
        .iter()
        .map(|g| g.to_f64().abs())
        .fold(0.0, f64::max);
    let scale = largest_entry.max(largest_weight.powi(n as i32 - 1));
    check_matrix(
        &actual,
        &expected,
        tol.gradient * scale,
        false,
        &format!("{ctx}: ∂Z/∂w"),
    );
}

/// What a model must say about a graph without spanning tree.
fn check_no_tree<B: Engine>(model: &Model<B>, reason: Option<NoTree>, ctx: &str) {
    assert_eq!(model.log_partition(), Ok(f64::NEG_INFINITY), "{ctx}: ln Z");
    assert_eq!(model.partition(), Ok(B::Scalar::zero()), "{ctx}: Z");
    match (model.marginals(), reason) {
        (Err(Error::NoSpanningTree(found)), Some(r)) => assert_eq!(found, r, "{ctx}: reason"),
        (Err(Error::NoSpanningTree(_)), None) => {}
        (other, _) => panic!("{ctx}: marginals gave {other:?}, expected NoSpanningTree"),
    }
    let tree = model.spanning_tree();
    assert!(tree.is_err(), "{ctx}: spanning_tree() = {tree:?}");
    if let Some(r) = reason {
        assert_eq!(tree, Err(r), "{ctx}: reason");
    }
}

/// Checks one graph (given as `weights`, read by the backend from `graph`)
/// against the oracle: `Z`, marginals and `∂Z/∂w`, or the no-tree answers.
fn check_against_oracle<B: Engine>(
    backend: &B,
    tol: Tolerance,
    weights: &Matrix<f64>,
    graph: &Graph,
    rooting: Rooting,
    ctx: &str,
) {
    let model = model(backend, graph, rooting, ctx);
    let w = to_scalar::<B::Scalar>(weights);
    let z = partition(&w, rooting);
    if z.is_zero() {
        check_no_tree(&model, None, ctx);
    } else {
        check_partition(&model, &z, tol, ctx);
        let mu = model
            .marginals()
            .unwrap_or_else(|e| panic!("{ctx}: marginals failed: {e}"));
        let expected = marginals(&w, rooting).expect("Z > 0");
        check_matrix(&mu, &expected, tol.marginal, tol.is_exact(), ctx);
    }
    check_gradient(&model, weights, rooting, tol, ctx);
}

/// Against brute force for `n = 1..=6`, both rootings, log-normal weights
/// with `0`, `30 %` and `60 %` of the arcs forbidden (many of the last have
/// no tree), given as weights and as scores: `ln Z` (or `Z` exactly),
/// every marginal, `∂Z/∂w` (also where `Z = 0`), and the no-tree answers
/// where the oracle finds no tree.
pub fn against_brute_force<B: Engine>(backend: B, tol: Tolerance) {
    for n in 1..=6 {
        for seed in 0..4u64 {
            for (k, forbid) in [0.0, 0.3, 0.6].into_iter().enumerate() {
                let seed = seed * 3 + k as u64;
                let mut rng = SplitMix64::new(1000 * n as u64 + seed);
                let scores = random::normal_scores(&mut rng, n, 1.0, forbid);
                let weights = random::weights_of(&scores);
                // Half the graphs arrive as scores: the backend then forms e^θ itself.
                let (graph, input) = if seed % 2 == 0 {
                    (weight_graph(&weights), "weights")
                } else {
                    (score_graph(&scores), "scores")
                };
                for rooting in Rooting::ALL {
                    let ctx = format!(
                        "{} {} n={n} seed={seed} forbid={forbid} from {input}",
                        backend.name(),
                        rooting.name()
                    );
                    check_against_oracle(&backend, tol, &weights, &graph, rooting, &ctx);
                }
            }
        }
    }
}

/// Labeled graphs against brute force over labeled trees, `n = 1..=4`,
/// one to three labels, `30 %` of the label weights `0`: `Z` of the labeled
/// trees and every label marginal.
pub fn labeled_against_brute_force<B: Engine>(backend: B, tol: Tolerance) {
    for n in 1..=4 {
        for labels in 1..=3 {
            for seed in 0..3u64 {
                let mut rng = SplitMix64::new(5000 + 100 * n as u64 + 10 * labels as u64 + seed);
                let per_label: Vec<Matrix<f64>> = (0..labels)
                    .map(|_| random::normal_weights(&mut rng, n, 1.0, 0.3))
                    .collect();
                let lw = LabeledWeights::new(per_label);
                let graph = Graph::from_labeled_weights(&lw.rows()).expect("valid labeled weights");
                let oracle = LabeledWeights::new(
                    (0..labels)
                        .map(|l| to_scalar::<B::Scalar>(lw.label(l)))
                        .collect(),
                );
                for rooting in Rooting::ALL {
                    let ctx = format!(
                        "{} {} labeled n={n} labels={labels} seed={seed}",
                        backend.name(),
                        rooting.name()
                    );
                    let model = model(&backend, &graph, rooting, &ctx);
                    let z = oracle.partition(rooting);
                    if z.is_zero() {
                        check_no_tree(&model, None, &ctx);
                        continue;
                    }
                    check_partition(&model, &z, tol, &ctx);
                    let found = model
                        .label_marginals()
                        .unwrap_or_else(|e| panic!("{ctx}: label_marginals failed: {e}"));
                    let expected = oracle.label_marginals(rooting).expect("Z > 0");
                    assert_eq!(found.len(), labels, "{ctx}: one matrix per label");
                    for (l, (a, e)) in found.iter().zip(&expected).enumerate() {
                        let ctx = format!("{ctx} label {l}");
                        check_matrix(a, e, tol.marginal, tol.is_exact(), &ctx);
                    }
                }
            }
        }
    }
}

/// Identity, `n` up to `max_n`, `N(0, 1)` scores: every word's incoming
/// marginals sum to `1`, single-root root marginals sum to `1`, and every
/// marginal lies in `[0, 1]` (all to `tol.marginal`).
pub fn marginals_sum_to_one<B: Engine>(backend: B, tol: Tolerance, max_n: usize) {
    for n in sizes(max_n) {
        let mut rng = SplitMix64::new(20_000 + n as u64);
        let graph = score_graph(&random::normal_scores(&mut rng, n, 1.0, 0.0));
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n={n}", backend.name(), rooting.name());
            let mu = model(&backend, &graph, rooting, &ctx)
                .marginals()
                .unwrap_or_else(|e| panic!("{ctx}: marginals failed: {e}"));
            let check_sum = |cells: &mut dyn Iterator<Item = &B::Scalar>, what: &str| {
                let mut sum = B::Scalar::zero();
                for x in cells {
                    sum += x;
                }
                if tol.is_exact() {
                    assert_eq!(sum, B::Scalar::one(), "{ctx}: {what}");
                } else {
                    let s = sum.to_f64();
                    assert!((s - 1.0).abs() <= tol.marginal, "{ctx}: {what} = {s}");
                }
            };
            for m in 1..=n {
                check_sum(&mut (0..=n).map(|h| &mu[(h, m)]), &format!("column {m}"));
            }
            if rooting == Rooting::Single {
                check_sum(&mut (1..=n).map(|m| &mu[(0, m)]), "root row");
            }
            for x in mu.as_slice() {
                let x = x.to_f64();
                assert!(
                    (-tol.marginal..=1.0 + tol.marginal).contains(&x),
                    "{ctx}: marginal {x} outside [0, 1]"
                );
            }
        }
    }
}

/// Identity, `n` up to `max_n`: multiplying the incoming weights of one word
/// by `c` multiplies `Z` by `c` and leaves every marginal unchanged (every
/// tree has exactly one arc into that word). `c = 8` and `c = 2^-20` keep
/// the scaled `f64` weights exact.
pub fn column_scaling<B: Engine>(backend: B, tol: Tolerance, max_n: usize) {
    for n in sizes(max_n) {
        let mut rng = SplitMix64::new(30_000 + n as u64);
        let weights = random::normal_weights(&mut rng, n, 1.0, 0.0);
        let word = 1 + rng.below(n);
        for c in [8.0, 2f64.powi(-20)] {
            let mut factors = vec![1.0; n + 1];
            factors[word] = c;
            let scaled = random::scale_columns(&weights, &factors);
            for rooting in Rooting::ALL {
                let ctx = format!(
                    "{} {} n={n} word={word} c={c}",
                    backend.name(),
                    rooting.name()
                );
                let before = model(&backend, &weight_graph(&weights), rooting, &ctx);
                let after = model(&backend, &weight_graph(&scaled), rooting, &ctx);
                if tol.is_exact() {
                    let z = before.partition().expect("Z");
                    assert_eq!(
                        after.partition().expect("Z"),
                        z * B::Scalar::from_f64(c),
                        "{ctx}"
                    );
                } else {
                    let shift = after.log_partition().expect("ln Z")
                        - before.log_partition().expect("ln Z");
                    let reference = before.log_partition().expect("ln Z");
                    // The shift carries the error of both ln Z's.
                    assert!(
                        (shift - c.ln()).abs() <= 2.0 * tol.log_z * reference.abs().max(1.0),
                        "{ctx}: ln Z shifted by {shift}, expected ln c = {}",
                        c.ln()
                    );
                }
                let mu = before.marginals().expect("marginals");
                let mu_scaled = after.marginals().expect("marginals");
                check_matrix(&mu_scaled, &mu, 2.0 * tol.marginal, tol.is_exact(), &ctx);
            }
        }
    }
}

/// Identity, `n` up to `max_n`: relabeling the words by a permutation leaves
/// `Z` unchanged and permutes the marginals the same way. (The single-root
/// Laplacian singles out word 1, so this is not trivial.)
pub fn permutation<B: Engine>(backend: B, tol: Tolerance, max_n: usize) {
    for n in sizes(max_n) {
        let mut rng = SplitMix64::new(40_000 + n as u64);
        let weights = random::normal_weights(&mut rng, n, 1.0, 0.0);
        let perm = rng.word_permutation(n);
        let moved = random::permuted(&weights, &perm);
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n={n} perm={perm:?}", backend.name(), rooting.name());
            let before = model(&backend, &weight_graph(&weights), rooting, &ctx);
            let after = model(&backend, &weight_graph(&moved), rooting, &ctx);
            if tol.is_exact() {
                assert_eq!(
                    after.partition().expect("Z"),
                    before.partition().expect("Z"),
                    "{ctx}"
                );
            } else {
                let reference = before.log_partition().expect("ln Z");
                assert_log_close(
                    after.log_partition().expect("ln Z"),
                    reference,
                    2.0 * tol.log_z,
                    &ctx,
                );
            }
            let mu = before.marginals().expect("marginals");
            let mu_moved = after.marginals().expect("marginals");
            check_matrix(
                &mu_moved,
                &random::permuted(&mu, &perm),
                2.0 * tol.marginal,
                tol.is_exact(),
                &ctx,
            );
        }
    }
}

/// Cayley's counts with unit weights, `n` up to `max_n`: `Z = (n+1)^(n−1)`
/// multi-root and `n^(n−1)` single-root, exactly (`==`) on exact backends,
/// `ln Z = (n−1) ln(n+1)` resp. `(n−1) ln n` to `tol.log_z` otherwise.
pub fn cayley<B: Engine>(backend: B, tol: Tolerance, max_n: usize) {
    for n in sizes(max_n) {
        let graph = weight_graph(&random::unit_weights(n));
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n={n} unit weights", backend.name(), rooting.name());
            let base = match rooting {
                Rooting::Multi => n + 1,
                Rooting::Single => n,
            };
            let model = model(&backend, &graph, rooting, &ctx);
            if tol.is_exact() {
                let mut count = B::Scalar::one();
                for _ in 1..n {
                    count *= B::Scalar::from_f64(base as f64);
                }
                assert_eq!(model.partition().expect("Z"), count, "{ctx}");
            } else {
                let expected = (n as f64 - 1.0) * (base as f64).ln();
                assert_log_close(
                    model.log_partition().expect("ln Z"),
                    expected,
                    tol.log_z,
                    &ctx,
                );
            }
        }
    }
}

/// `n = 1`: the only tree is `0 → 1` under both rootings, so `Z = w(0 → 1)`
/// and its marginal is `1`; with `w(0 → 1) = 0` there is no root arc.
pub fn single_word<B: Engine>(backend: B, tol: Tolerance) {
    for w in [1e-300, 0.375, 1.0, 3.0, 1e300] {
        let weights = Matrix::from_row_major(2, 2, vec![0.0, w, 0.0, 0.0]);
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n=1 w={w:e}", backend.name(), rooting.name());
            let model = model(&backend, &weight_graph(&weights), rooting, &ctx);
            check_partition(&model, &B::Scalar::from_f64(w), tol, &ctx);
            let mu = model.marginals().expect("marginals");
            let expected = Matrix::from_row_major(2, 2, vec![0.0, 1.0, 0.0, 0.0])
                .map(|&x| B::Scalar::from_f64(x));
            check_matrix(&mu, &expected, tol.marginal, tol.is_exact(), &ctx);
        }
    }
    let weights = Matrix::from_row_major(2, 2, vec![0.0, 0.0, 0.0, 0.0]);
    for rooting in Rooting::ALL {
        let ctx = format!("{} {} n=1 w=0", backend.name(), rooting.name());
        let model = model(&backend, &weight_graph(&weights), rooting, &ctx);
        check_no_tree(&model, Some(NoTree::NoRootArc), &ctx);
    }
}

/// Graphs without spanning tree, with the reason worked out by hand and
/// `Z = 0` confirmed by the oracle: `ln Z = −∞`, `Z = 0`, and
/// `marginals()` fails with `Error::NoSpanningTree(reason)`.
pub fn no_spanning_tree<B: Engine>(backend: B) {
    let unreachable_2 = NoTree::Unreachable { word: 2 };
    let unreachable_3 = NoTree::Unreachable { word: 3 };
    // (arcs h → m of weight 1, n, single-root reason, multi-root reason)
    type Case = (
        &'static [(usize, usize)],
        usize,
        Option<NoTree>,
        Option<NoTree>,
    );
    let cases: [Case; 6] = [
        // Word 2 has no incoming arc.
        (
            &[(0, 1), (2, 1)],
            2,
            Some(unreachable_2),
            Some(unreachable_2),
        ),
        // Two root arcs, no arc between words: one multi-root tree only.
        (&[(0, 1), (0, 2)], 2, Some(NoTree::NoSingleRoot), None),
        // Word 3 is isolated.
        (
            &[(0, 1), (1, 2), (2, 1)],
            3,
            Some(unreachable_3),
            Some(unreachable_3),
        ),
        // Words 1 and 3 both reach 2, neither reaches the other.
        (
            &[(0, 1), (0, 3), (1, 2), (3, 2)],
            3,
            Some(NoTree::NoSingleRoot),
            None,
        ),
        // Word 2 reaches everything but only word 1 has a root arc, and 1 cannot reach 2.
        (
            &[(0, 1), (2, 1), (2, 3), (1, 3)],
            3,
            Some(unreachable_2),
            Some(unreachable_2),
        ),
        // No root arc at all.
        (
            &[(1, 2), (2, 1)],
            2,
            Some(NoTree::NoRootArc),
            Some(NoTree::NoRootArc),
        ),
    ];
    for (k, &(arcs, n, single, multi)) in cases.iter().enumerate() {
        let mut weights = Matrix::zeros(n + 1, n + 1);
        for &arc in arcs {
            weights[arc] = 1.0;
        }
        for (rooting, reason) in [(Rooting::Single, single), (Rooting::Multi, multi)] {
            let ctx = format!("{} {} hand case {k}", backend.name(), rooting.name());
            let z = partition(&weights, rooting);
            assert_eq!(
                z == 0.0,
                reason.is_some(),
                "{ctx}: the hand-worked reason contradicts the oracle"
            );
            let model = model(&backend, &weight_graph(&weights), rooting, &ctx);
            match reason {
                Some(r) => check_no_tree(&model, Some(r), &ctx),
                None => check_partition(
                    &model,
                    &B::Scalar::from_f64(z),
                    Tolerance::uniform(1e-15),
                    &ctx,
                ),
            }
        }
    }
}

/// All root weights zero, `n = 1..=8`: no tree under either rooting, reason
/// [`NoTree::NoRootArc`], confirmed by the oracle for `n ≤ 6`.
pub fn no_root_arc<B: Engine>(backend: B) {
    for n in 1..=8 {
        let mut rng = SplitMix64::new(50_000 + n as u64);
        let weights = random::without_root(&random::normal_weights(&mut rng, n, 1.0, 0.0));
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n={n} no root arc", backend.name(), rooting.name());
            if n <= 6 {
                assert_eq!(partition(&weights, rooting), 0.0, "{ctx}: oracle");
            }
            let model = model(&backend, &weight_graph(&weights), rooting, &ctx);
            check_no_tree(&model, Some(NoTree::NoRootArc), &ctx);
        }
    }
}

/// Weights from `1e-290` to `1e290`, one scale per word (column), `n = 1..=6`:
/// against the oracle (`==` in exact arithmetic; otherwise the log-space
/// oracle, since products of such weights overflow `f64`). Every backend
/// must get these right: column scales are what column shifting removes.
pub fn extreme_column_scales<B: Engine>(backend: B, tol: Tolerance) {
    for n in 1..=6 {
        for seed in 0..3u64 {
            let mut rng = SplitMix64::new(60_000 + 10 * n as u64 + seed);
            let weights = random::normal_weights(&mut rng, n, 1.0, 0.2);
            let factors: Vec<f64> = (0..=n)
                .map(|_| 10f64.powf(rng.uniform_in(-290.0, 290.0)))
                .collect();
            let scaled = random::scale_columns(&weights, &factors);
            for rooting in Rooting::ALL {
                let ctx = format!(
                    "{} {} n={n} seed={seed} column scales 1e±290",
                    backend.name(),
                    rooting.name()
                );
                check_extreme(&backend, tol, &scaled, rooting, Strictness::Exact, &ctx);
            }
        }
    }
}

/// Scores `N(0, 1)` plus one offset per word (column) uniform in
/// `[−1e4, 1e4]`, `n = 1..=6`. A backend that shifts columns must match the
/// log-space oracle; one that does not must refuse with `Error::Overflow`
/// naming an arc whose weight overflows.
pub fn extreme_score_scales<B: Engine>(backend: B, tol: Tolerance) {
    for n in 1..=6 {
        for seed in 0..3u64 {
            let mut rng = SplitMix64::new(65_000 + 10 * n as u64 + seed);
            let mut scores = random::normal_scores(&mut rng, n, 1.0, 0.2);
            for m in 1..=n {
                let offset = rng.uniform_in(-1e4, 1e4);
                for h in 0..=n {
                    scores[(h, m)] += offset;
                }
            }
            for rooting in Rooting::ALL {
                let ctx = format!(
                    "{} {} n={n} seed={seed} column offsets ±1e4",
                    backend.name(),
                    rooting.name()
                );
                // Engines that take weights as given underflow e^{-1e4}: they
                // must then fail with a typed error, never return a number.
                check_scores(
                    &backend,
                    tol,
                    &scores,
                    rooting,
                    Strictness::RightOrTyped,
                    &ctx,
                );
            }
        }
    }
}

/// Every arc's weight `10^u`, `u` uniform in `[−300, 300]` independently,
/// `n = 1..=6`, so one column spans 600 decades. A known limit of dense LU
/// on shifted columns (the multi-root diagonal `Σ_h w_hm + ρ_m` cannot hold
/// a root weight tiny next to the arcs of its column): the backend must either match the
/// oracle or fail with a typed `Error::Numerical`, never return a wrong number.
pub fn extreme_weights<B: Engine>(backend: B, tol: Tolerance) {
    for n in 1..=6 {
        for seed in 0..3u64 {
            let mut rng = SplitMix64::new(70_000 + 10 * n as u64 + seed);
            let weights = random::extreme_weights(&mut rng, n, 300.0);
            for rooting in Rooting::ALL {
                let ctx = format!(
                    "{} {} n={n} seed={seed} arc weights 1e±300",
                    backend.name(),
                    rooting.name()
                );
                check_extreme(
                    &backend,
                    tol,
                    &weights,
                    rooting,
                    Strictness::RightOrTyped,
                    &ctx,
                );
            }
        }
    }
}

/// Every arc's score uniform in `[−1e4, 1e4]` independently, `n = 1..=6`.
/// Shifting backends: the oracle's answer or a typed `Error::Numerical` (as
/// for [`extreme_weights`]); others: `Error::Overflow`.
pub fn extreme_scores<B: Engine>(backend: B, tol: Tolerance) {
    for n in 1..=6 {
        for seed in 0..3u64 {
            let mut rng = SplitMix64::new(80_000 + 10 * n as u64 + seed);
            let scores = random::uniform_scores(&mut rng, n, 1e4);
            for rooting in Rooting::ALL {
                let ctx = format!(
                    "{} {} n={n} seed={seed} arc scores ±1e4",
                    backend.name(),
                    rooting.name()
                );
                check_scores(
                    &backend,
                    tol,
                    &scores,
                    rooting,
                    Strictness::RightOrTyped,
                    &ctx,
                );
            }
        }
    }
}

/// One score of `800` (its weight overflows `f64`) among `N(0, 1)` scores:
/// an unshifted backend refuses with `Error::Overflow` naming exactly that
/// arc; a shifting one matches the log-space oracle.
pub fn overflow_is_typed<B: Engine>(backend: B, tol: Tolerance) {
    for n in 2..=5 {
        let mut rng = SplitMix64::new(90_000 + n as u64);
        let mut scores = random::normal_scores(&mut rng, n, 1.0, 0.0);
        let arc = ArcRef {
            head: n,
            dependent: 1,
            label: None,
        };
        scores[(arc.head, arc.dependent)] = 800.0;
        for rooting in Rooting::ALL {
            let ctx = format!("{} {} n={n} one score 800", backend.name(), rooting.name());
            match Model::new(backend.clone(), &score_graph(&scores), rooting) {
                Err(e) => assert_eq!(e, Error::Overflow { arc, score: 800.0 }, "{ctx}"),
                Ok(_) => check_scores(&backend, tol, &scores, rooting, Strictness::Exact, &ctx),
            }
        }
    }
}

/// Whether a float backend may answer an extreme graph with a typed
/// `Error::Numerical` instead of the oracle's value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Strictness {
    /// The oracle's value, to the tolerance.
    Exact,
    /// The oracle's value, or a typed numerical failure.
    RightOrTyped,
}

/// Checks `ln Z` and the marginals of the weight graph `weights` against the
/// rational oracle (exact backends: `==`) or the log-space oracle.
fn check_extreme<B: Engine>(
    backend: &B,
    tol: Tolerance,
    weights: &Matrix<f64>,
    rooting: Rooting,
    strictness: Strictness,
    ctx: &str,
) {
    let model = model(backend, &weight_graph(weights), rooting, ctx);
    if !tol.is_exact() {
        return check_log_space(
            &model,
            &random::scores_of(weights),
            rooting,
            tol,
            strictness,
            ctx,
        );
    }
    let w = to_scalar::<B::Scalar>(weights);
    let z = partition(&w, rooting);
    if z.is_zero() {
        return check_no_tree(&model, None, ctx);
    }
    check_partition(&model, &z, tol, ctx);
    let mu = model
        .marginals()
        .unwrap_or_else(|e| panic!("{ctx}: marginals failed: {e}"));
    check_matrix(&mu, &marginals(&w, rooting).expect("Z > 0"), 0.0, true, ctx);
}

/// The score graph `scores` on a shifting backend: checked against the
/// log-space oracle, unless the engine refuses it with `Error::Overflow`
/// naming an arc whose weight overflows `f64`.
fn check_scores<B: Engine>(
    backend: &B,
    tol: Tolerance,
    scores: &Matrix<f64>,
    rooting: Rooting,
    strictness: Strictness,
    ctx: &str,
) {
    let graph = score_graph(scores);
    // An engine answers every score graph, or refuses one whose weights
    // overflow its number type with a typed error naming such an arc.
    match Model::new(backend.clone(), &graph, rooting) {
        Err(Error::Overflow { arc, score }) => {
            assert_eq!(arc.label, None, "{ctx}");
            assert_eq!(scores[(arc.head, arc.dependent)], score, "{ctx}: {arc}");
            assert_eq!(score.exp(), f64::INFINITY, "{ctx}: {arc} does not overflow");
        }
        // Scores are no exact input: exact engines are checked on weights.
        Ok(_) if tol.is_exact() => {}
        Ok(model) => check_log_space(&model, scores, rooting, tol, strictness, ctx),
        Err(other) => panic!("{ctx}: expected a value or Error::Overflow, got {other}"),
    }
}

/// Checks `ln Z` and the marginals of a model against the log-space oracle
/// on `scores`, which never forms a weight, or the no-tree answers.
fn check_log_space<B: Engine>(
    model: &Model<B>,
    scores: &Matrix<f64>,
    rooting: Rooting,
    tol: Tolerance,
    strictness: Strictness,
    ctx: &str,
) {
    let Some(expected) = marginals_from_scores(scores, rooting) else {
        return check_no_tree(model, None, ctx);
    };
    let log_z = match model.log_partition() {
        Err(Error::Numerical(_)) if strictness == Strictness::RightOrTyped => return,
        other => other.unwrap_or_else(|e| panic!("{ctx}: log_partition failed: {e}")),
    };
    let expected_log_z = log_partition_from_scores(scores, rooting);
    assert_log_close(log_z, expected_log_z, tol.log_z, ctx);
    let mu = match model.marginals() {
        Err(Error::Numerical(_)) if strictness == Strictness::RightOrTyped => return,
        other => other.unwrap_or_else(|e| panic!("{ctx}: marginals failed: {e}")),
    };
    check_marginals_f64(&mu, &expected, tol.marginal, ctx);
}

/// `n` up to `max_n` with `N(0, σ²)` scores on a stabilised backend: `ln Z`
/// is finite and every word's marginals sum to `1` within `tol.marginal`
/// (the acceptance test at `n = 1000`, `σ = 20`).
pub fn large_scores_stay_finite<B: Engine>(backend: B, tol: Tolerance, n: usize, sigma: f64) {
    let mut rng = SplitMix64::new(100_000 + n as u64);
    let graph = score_graph(&random::normal_scores(&mut rng, n, sigma, 0.0));
    for rooting in Rooting::ALL {
        let ctx = format!("{} {} n={n} σ={sigma}", backend.name(), rooting.name());
        let model = model(&backend, &graph, rooting, &ctx);
        let log_z = model
            .log_partition()
            .unwrap_or_else(|e| panic!("{ctx}: log_partition failed: {e}"));
        assert!(log_z.is_finite(), "{ctx}: ln Z = {log_z}");
        let mu = model
            .marginals()
            .unwrap_or_else(|e| panic!("{ctx}: marginals failed: {e}"));
        for m in 1..=n {
            let s: f64 = (0..=n).map(|h| mu[(h, m)].to_f64()).sum();
            assert!(
                (s - 1.0).abs() <= tol.marginal,
                "{ctx}: column {m} sums to {s}"
            );
        }
        if rooting == Rooting::Single {
            let s: f64 = (1..=n).map(|m| mu[(0, m)].to_f64()).sum();
            assert!(
                (s - 1.0).abs() <= tol.marginal,
                "{ctx}: root row sums to {s}"
            );
        }
    }
}

/// Against a reference backend (the exact one), `n = 1..=max_n`, `N(0, 1)`
/// scores, both rootings: `ln Z` to `tol.log_z` (the reference's `Z` taken
/// through [`Scalar::ln_abs`], exact to rounding) and every marginal to
/// `tol.marginal`.
pub fn agrees_with_reference<B: Engine, R: Engine>(
    backend: B,
    reference: R,
    tol: Tolerance,
    max_n: usize,
) {
    for n in 1..=max_n {
        let mut rng = SplitMix64::new(110_000 + n as u64);
        let graph = score_graph(&random::normal_scores(&mut rng, n, 1.0, 0.0));
        for rooting in Rooting::ALL {
            let ctx = format!(
                "{} vs {} {} n={n}",
                backend.name(),
                reference.name(),
                rooting.name()
            );
            let truth = Model::new(reference.clone(), &graph, rooting)
                .unwrap_or_else(|e| panic!("{ctx}: reference failed: {e}"));
            let z = truth
                .partition()
                .unwrap_or_else(|e| panic!("{ctx}: reference Z failed: {e}"));
            let model = model(&backend, &graph, rooting, &ctx);
            let log_z = model
                .log_partition()
                .unwrap_or_else(|e| panic!("{ctx}: log_partition failed: {e}"));
            assert_log_close(log_z, z.ln_abs(), tol.log_z, &ctx);
            let expected = truth
                .marginals()
                .expect("reference marginals")
                .map(Scalar::to_f64);
            let mu = model
                .marginals()
                .unwrap_or_else(|e| panic!("{ctx}: marginals failed: {e}"));
            check_marginals_f64(&mu, &expected, tol.marginal, &ctx);
        }
    }
}
