//! Typed results for front ends that want numbers rather than JSON text
//! (the Python bindings): the quantities that need logarithms, reachable
//! from generic code written against [`Backend`].
//!
//! Generic code cannot name the bound `Scalar: Transcendental` for every
//! backend (exact rationals have no `ln`), so each backend hands out the
//! table [`Information`] through [`Backend::information`], or `None`. The
//! field quantities (`log_partition`, `marginals`, `marginals_vjp`, …) need
//! no table: they are methods of [`Model`] for every backend.
//!
//! Also here: the decoders with the number each front end prints next to
//! the tree ([`best_tree`], [`mbr_tree`], [`samples`]), and Hessian–vector
//! products of the entropy and the KL divergence ([`grad_entropy_jvp`],
//! [`grad_kl_jvp`]) for the double backward of a PyTorch op.

use num_complex::Complex64;
use spantree_core::decode::projective::Projective;
use spantree_core::{
    Divergence, Error, GradientPair, Graph, Matrix, Model, PerLabel, Potentials, Result, Rooting,
    Scalar, Transcendental, Tree,
};
use spantree_faer::Complex;

use crate::backend::Backend;

/// A function of two distributions `p` and `q` on the same graph shape.
pub type PairFn<B, T> = fn(&Model<B>, &Model<B>) -> Result<T>;

/// The information-theoretic quantities of a backend whose numbers have
/// `ln` and `exp`, as plain function pointers over [`Model`] (each the
/// library method of the same name; costs and errors as there).
pub struct Information<B: Backend> {
    /// [`Model::log_partition_scalar`]: `ln Z` in the backend's numbers
    /// (full precision on the high-precision backend), `O(n³)`.
    pub log_partition: fn(&Model<B>) -> Result<B::Scalar>,
    /// [`Model::entropy`], `O(n³)`.
    pub entropy: fn(&Model<B>) -> Result<B::Scalar>,
    /// [`Model::grad_entropy`], `O(n³)`.
    pub grad_entropy: fn(&Model<B>) -> Result<PerLabel<B::Scalar>>,
    /// [`Model::cross_entropy`] of `q` (second argument) relative to `p`.
    pub cross_entropy: PairFn<B, Divergence<<B as spantree_core::Engine>::Scalar>>,
    /// [`Model::kl_divergence`] `KL(p ‖ q)`.
    pub kl: PairFn<B, Divergence<<B as spantree_core::Engine>::Scalar>>,
    /// [`Model::grad_kl_divergence`], with respect to the scores of `p` and `q`.
    pub grad_kl: PairFn<B, GradientPair<<B as spantree_core::Engine>::Scalar>>,
    /// [`Model::renyi_entropy`] of order `α`.
    pub renyi: fn(&Model<B>, f64) -> Result<B::Scalar>,
    /// [`Model::lp_norm`] of order `k`.
    pub lp_norm: fn(&Model<B>, f64) -> Result<B::Scalar>,
}

impl<B: Backend> Information<B>
where
    B::Scalar: Transcendental,
{
    /// The table of a backend whose scalar has logarithms.
    pub fn new() -> Self {
        Information {
            log_partition: Model::log_partition_scalar,
            entropy: Model::entropy,
            grad_entropy: Model::grad_entropy,
            cross_entropy: Model::cross_entropy,
            kl: Model::kl_divergence,
            grad_kl: Model::grad_kl_divergence,
            renyi: Model::renyi_entropy,
            lp_norm: Model::lp_norm,
        }
    }
}

impl<B: Backend> Default for Information<B>
where
    B::Scalar: Transcendental,
{
    fn default() -> Self {
        Self::new()
    }
}

/// A tree and one number about it: its score `Σ_{e ∈ d} θ_e` (best and
/// k-best trees), its log-probability `ln p(d)` (samples), or its expected
/// number of correct attachments `Σ_m μ(h_m → m)` (the MBR tree).
pub type ScoredTree = (Tree, f64);

fn source_graph<B: Backend>(model: &Model<B>) -> Result<&Graph<f64>> {
    model
        .graph()
        .ok_or(Error::Unsupported("decoding (no f64 graph)"))
}

/// The mode ([`Model::best_tree`]) and its score on the model's `f64`
/// graph. `O(|labels| n²)`.
///
/// # Errors
/// As [`Model::best_tree`].
pub fn best_tree<B: Backend>(model: &Model<B>) -> Result<ScoredTree> {
    let tree = model.best_tree()?;
    let score = tree.score(source_graph(model)?)?;
    Ok((tree, score))
}

/// The minimum-Bayes-risk tree ([`Model::mbr_tree`]) and its expected
/// number of correct attachments `Σ_m μ(h_m → m)` (label marginals of the
/// chosen labels on labeled graphs). `O(n³)`.
///
/// # Errors
/// As [`Model::mbr_tree`].
pub fn mbr_tree<B: Backend>(model: &Model<B>) -> Result<ScoredTree> {
    let tree = model.mbr_tree()?;
    let mu = model.label_marginals()?;
    let mut score = 0.0;
    for (h, m) in tree.arcs() {
        let l = tree.label(m).unwrap_or(0);
        score += mu[(l, h, m)].to_f64();
    }
    Ok((tree, score))
}

/// The minimum-Bayes-risk projective tree ([`Projective::mbr_tree`]: Eisner
/// over the projective marginals) and its expected number of correct
/// attachments under the projective distribution. `O(n³)`.
///
/// # Errors
/// As [`Projective::mbr_tree`].
pub fn projective_mbr_tree(chart: &Projective) -> Result<ScoredTree> {
    let tree = chart.mbr_tree()?;
    let mu = chart.label_marginals()?;
    let score = tree
        .arcs()
        .map(|(h, m)| mu[tree.label(m).unwrap_or(0)][(h, m)])
        .sum();
    Ok((tree, score))
}

/// `k` exact samples ([`Model::samples`], the stream `(seed, stream)`: the
/// same trees whatever the thread count) with their log-probabilities
/// `θ(d) − ln Z`. `O(n³ + k ·` per-sample cost`)`.
///
/// # Errors
/// As [`Model::samples`].
pub fn samples<B: Backend>(
    model: &Model<B>,
    k: usize,
    seed: u64,
    stream: u64,
) -> Result<Vec<ScoredTree>> {
    let graph = source_graph(model)?;
    let trees = model.samples(k, seed, stream)?;
    let ln_z = model.log_partition()?;
    trees
        .into_iter()
        .map(|t| {
            let s = t.score(graph)?;
            Ok((t, s - ln_z))
        })
        .collect()
}

/// Complex-step differentiation (Squire & Trapp 1998): `∂F/∂θ · v =
/// Im F(θ + i h v) / h` to machine precision, without cancellation.
const STEP: f64 = 1e-30;

/// The complex model of `graph` (scores) perturbed along `direction`
/// (one matrix per label): weights `e^{θ − c_m} (1 + i h v)`, each column
/// `m` shifted by its largest finite score `c_m`, which leaves the
/// distribution unchanged (every tree has one arc into each word).
fn perturbed(
    graph: &Graph<f64>,
    rooting: Rooting,
    direction: &[Matrix<f64>],
) -> Result<Model<Complex>> {
    let (n1, labels) = (graph.n() + 1, graph.labels());
    if graph.potentials() != Potentials::Scores || direction.len() != labels {
        return Err(Error::Mismatch {
            what: "direction labels (one matrix per label, scores graph)",
            expected: labels,
            found: direction.len(),
        });
    }
    let shift: Vec<f64> = (0..n1)
        .map(|m| {
            (0..n1)
                .flat_map(|h| graph.values(h, m).iter().copied())
                .filter(|s| s.is_finite())
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    let weight = |h: usize, m: usize, l: usize| {
        let s = *graph.value(h, m, l);
        if !graph.is_allowed(h, m) || s == f64::NEG_INFINITY {
            return Complex64::new(0.0, 0.0);
        }
        let w = (s - shift[m]).exp();
        Complex64::new(w, w * STEP * direction[l][(h, m)])
    };
    let g = if graph.is_labeled() {
        let rows: Vec<Vec<Vec<Complex64>>> = (0..n1)
            .map(|h| {
                (0..n1)
                    .map(|m| (0..labels).map(|l| weight(h, m, l)).collect())
                    .collect()
            })
            .collect();
        Graph::from_labeled_weights(&rows)?
    } else {
        let rows: Vec<Vec<Complex64>> = (0..n1)
            .map(|h| (0..n1).map(|m| weight(h, m, 0)).collect())
            .collect();
        Graph::from_weights(&rows)?
    };
    Model::from_scalar_graph(Complex, &g, rooting)
}

/// The tangent (imaginary part over the step) of a complex gradient.
fn tangent(grad: PerLabel<Complex64>) -> PerLabel<f64> {
    grad.into_iter().map(|m| m.map(|z| z.im / STEP)).collect()
}

/// The Hessian–vector product `∇²H(θ) v` of the Shannon entropy with
/// respect to the scores of `graph`, by complex-step differentiation of
/// [`Model::grad_entropy`] on the [`Complex`] engine: exact to rounding,
/// `O(n³)` in complex arithmetic (about four real factorisations). The
/// Hessian is symmetric, so this is also the vector–Hessian product (the
/// double backward of the entropy).
///
/// The library has no forward-mode route through the cancellation-free
/// elimination for the entropy (only [`spantree_core::elimination::marginals_jvp`]
/// for `ln Z`), so this runs on partial-pivoting LU whatever the backend:
/// accurate for well-conditioned Laplacians; arcs whose score is more than
/// ~745 below the best into their word underflow to weight 0.
///
/// # Errors
/// [`Error::Mismatch`] for a direction with another label count; as
/// [`Model::grad_entropy`].
pub fn grad_entropy_jvp(
    graph: &Graph<f64>,
    rooting: Rooting,
    direction: &[Matrix<f64>],
) -> Result<PerLabel<f64>> {
    Ok(tangent(
        perturbed(graph, rooting, direction)?.grad_entropy()?,
    ))
}

/// The Hessian–vector product of `KL(p ‖ q)` with respect to the scores
/// of `p` and `q` along `(v_p, v_q)`: the pair `(∂_p ∇KL · v, ∂_q ∇KL · v)`
/// stacked as [`GradientPair`], by complex-step differentiation of
/// [`Model::grad_kl_divergence`] as for [`grad_entropy_jvp`] (same cost,
/// accuracy and reason). Symmetric, so also the double backward.
///
/// # Errors
/// [`Error::InfiniteDivergence`] where `KL = +∞`; as [`grad_entropy_jvp`].
pub fn grad_kl_jvp(
    p: &Graph<f64>,
    q: &Graph<f64>,
    rooting: Rooting,
    v_p: &[Matrix<f64>],
    v_q: &[Matrix<f64>],
) -> Result<GradientPair<f64>> {
    let p = perturbed(p, rooting, v_p)?;
    let q = perturbed(q, rooting, v_q)?;
    let GradientPair { wrt_p, wrt_q } = p.grad_kl_divergence(&q)?;
    Ok(GradientPair {
        wrt_p: tangent(wrt_p),
        wrt_q: tangent(wrt_q),
    })
}
