//! The model object: one factorisation of one Laplacian, many answers.

use std::sync::OnceLock;

use crate::backend::{Factorization, MatrixBackend};
use crate::error::{ArcRef, Error, NoTree, Numerical, Result};
use crate::graph::{Graph, Potentials, Rooting};
use crate::laplacian::weight_gradient;
use crate::matrix::Matrix;
use crate::scalar::{Scalar, Sign};

/// An edge-factored distribution over the spanning trees of one graph, with
/// its Laplacian factorised once (`O(n³)`); every query reuses that
/// factorisation and the inverse, which is formed at most once.
///
/// Weights enter the backend's scalar as given on unstabilised backends (so
/// exact rationals give the exact `Z`). On stabilised backends
/// ([`MatrixBackend::SHIFTS_COLUMNS`]) column `m` is divided by its largest
/// weight `e^{c_m}` first: the marginals do not change and
/// `ln Z = ln det L(w e^{-c}) + Σ_m c_m` cannot overflow (DESIGN.md §2).
#[derive(Debug)]
pub struct Model<B: MatrixBackend> {
    backend: B,
    rooting: Rooting,
    weights: Matrix<B::Scalar>,
    shift: Vec<f64>,
    pub(crate) ln_scale: f64,
    labels: Option<(usize, Vec<B::Scalar>)>,
    pub(crate) tree: std::result::Result<(), NoTree>,
    factorization: B::Factorization,
    inverse: OnceLock<std::result::Result<Matrix<B::Scalar>, Numerical>>,
    /// The `f64` graph, kept for zeroth-order quantities that need the
    /// Laplacian of transformed weights (Rényi entropy, `ℓ_p` norms).
    source: Option<Graph<f64>>,
}

impl<B: MatrixBackend> Model<B> {
    /// Builds and factorises the Laplacian of an `f64` graph, `O(|labels| n² + n³)`.
    ///
    /// # Errors
    /// [`Error::Overflow`] when an unstabilised backend meets a score above
    /// ~709 (its weight is not a finite `f64`). A graph without spanning tree
    /// is *not* an error here: [`Model::log_partition`] is then `-∞`.
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::F64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(F64, &g, Rooting::Multi)?;
    /// // Trees: {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}: 1·2 + 1·3 + 2·4 = 13.
    /// assert!((model.partition()? - 13.0).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn new(backend: B, graph: &Graph<f64>, rooting: Rooting) -> Result<Self> {
        let mut model = Self::build(backend, graph, rooting, |&w| B::Scalar::from_f64(w))?;
        model.source = Some(graph.clone());
        Ok(model)
    }

    /// As [`Model::new`], for a graph whose weights are already in the
    /// backend's scalar type (exact rationals read from text, complex
    /// perturbations for complex-step differentiation).
    ///
    /// # Errors
    /// As [`Model::new`].
    pub fn from_scalar_graph(
        backend: B,
        graph: &Graph<B::Scalar>,
        rooting: Rooting,
    ) -> Result<Self> {
        Self::build(backend, graph, rooting, Clone::clone)
    }

    fn build<W: Scalar>(
        backend: B,
        graph: &Graph<W>,
        rooting: Rooting,
        convert: impl Fn(&W) -> B::Scalar,
    ) -> Result<Self> {
        let n = graph.n();
        let mut weights = Matrix::zeros(n + 1, n + 1);
        let mut shift = vec![0.0; n + 1];
        for m in 1..=n {
            if B::SHIFTS_COLUMNS {
                let logs: Vec<f64> = (0..=n).map(|h| graph.log_weight(h, m)).collect();
                let c = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                shift[m] = if c.is_finite() { c } else { 0.0 };
                for (h, lw) in logs.into_iter().enumerate() {
                    if lw > f64::NEG_INFINITY {
                        weights[(h, m)] = B::Scalar::from_f64((lw - shift[m]).exp());
                    }
                }
                continue;
            }
            for h in 0..=n {
                if !graph.is_allowed(h, m) {
                    continue;
                }
                weights[(h, m)] = match graph.potentials() {
                    Potentials::Weights => {
                        let mut total = B::Scalar::zero();
                        for v in graph.values(h, m) {
                            total += convert(v);
                        }
                        total
                    }
                    Potentials::Scores => {
                        let lw = graph.log_weight(h, m);
                        match weight_from_scores(&backend, graph.values(h, m)) {
                            Some(w) => w,
                            None if lw.exp().is_finite() => B::Scalar::from_f64(lw.exp()),
                            None => {
                                return Err(Error::Overflow {
                                    arc: ArcRef {
                                        head: h,
                                        dependent: m,
                                        label: None,
                                    },
                                    score: lw,
                                })
                            }
                        }
                    }
                };
            }
        }
        let labels = graph
            .is_labeled()
            .then(|| (graph.labels(), label_shares(&backend, graph, &convert)));
        let factorization = backend.factorize_laplacian(&weights, rooting);
        Ok(Model {
            backend,
            rooting,
            weights,
            ln_scale: shift.iter().sum(),
            shift,
            labels,
            tree: graph.spanning_tree(rooting),
            factorization,
            inverse: OnceLock::new(),
            source: None,
        })
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.weights.rows() - 1
    }

    /// The rooting the model was built for.
    pub fn rooting(&self) -> Rooting {
        self.rooting
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The collapsed weights the Laplacian was built from, in the
    /// `(n+1) × (n+1)` layout, column `m` divided by `e^{c_m}` (see
    /// [`Model::column_shift`]).
    pub fn weights(&self) -> &Matrix<B::Scalar> {
        &self.weights
    }

    /// The shifts `c_m` (index `0` unused and `0`); all zero on unstabilised backends.
    pub fn column_shift(&self) -> &[f64] {
        &self.shift
    }

    /// The `f64` graph the model was built from ([`Model::new`] only).
    pub fn graph(&self) -> Option<&Graph<f64>> {
        self.source.as_ref()
    }

    /// The label count and the shares `w(h → m, ℓ) / Σ_ℓ' w(h → m, ℓ')`,
    /// `[h][m][ℓ]` row-major, for labeled graphs.
    pub fn label_shares(&self) -> Option<(usize, &[B::Scalar])> {
        self.labels.as_ref().map(|(k, s)| (*k, s.as_slice()))
    }

    /// The factorisation of the Laplacian.
    pub fn factorization(&self) -> &B::Factorization {
        &self.factorization
    }

    /// Whether a spanning tree exists, decided combinatorially (the same on
    /// every backend); see [`Graph::spanning_tree`].
    ///
    /// # Errors
    /// The reason there is none.
    pub fn spanning_tree(&self) -> std::result::Result<(), NoTree> {
        self.tree
    }

    /// `ln Z`, from the pivots plus the column shifts: it never overflows.
    /// `-∞` when the graph has no spanning tree. `O(n)` after construction.
    ///
    /// # Errors
    /// [`Error::Numerical`] when the factorisation is singular or negative
    /// although trees exist (rounding), or the result is not finite.
    pub fn log_partition(&self) -> Result<f64> {
        if self.tree.is_err() {
            return Ok(f64::NEG_INFINITY);
        }
        let (sign, ln) = self.factorization.ln_abs_det();
        match sign {
            Sign::Zero => Err(self.singular().into()),
            Sign::Negative => Err(Numerical::NegativeDeterminant.into()),
            Sign::Positive if ln.is_finite() => Ok(ln + self.ln_scale),
            Sign::Positive => Err(Numerical::NotFinite.into()),
        }
    }

    fn singular(&self) -> Numerical {
        Numerical::Singular {
            pivot: self.factorization.zero_pivot().unwrap_or(0),
        }
    }

    /// `Z` in the backend's scalar: exact on exact backends. On stabilised
    /// backends `e^{Σ c_m}` is applied through `f64`; use
    /// [`Model::log_partition`] where `Z` exceeds the scalar's range. `0` when
    /// there is no spanning tree.
    ///
    /// # Errors
    /// As [`Model::log_partition`]; [`Numerical::NotFinite`] when `Z`
    /// overflows the scalar type.
    pub fn partition(&self) -> Result<B::Scalar> {
        if self.tree.is_err() {
            return Ok(B::Scalar::zero());
        }
        self.log_partition()?;
        let det = self.factorization.det();
        let z = if self.ln_scale == 0.0 {
            det
        } else {
            det * B::Scalar::from_f64(self.ln_scale.exp())
        };
        if z.is_finite() {
            Ok(z)
        } else {
            Err(Numerical::NotFinite.into())
        }
    }

    /// `X = L⁻¹`, formed once, `O(n³)`.
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`] when `Z = 0`, [`Error::Numerical`] when the
    /// factorisation is singular to working precision.
    pub fn inverse(&self) -> Result<&Matrix<B::Scalar>> {
        self.tree.map_err(Error::NoSpanningTree)?;
        self.log_partition()?;
        self.inverse
            .get_or_init(|| self.factorization.inverse())
            .as_ref()
            .map_err(|&e| e.into())
    }

    /// Arc marginals `μ[h][m] = P(h → m ∈ d)` in the `(n+1) × (n+1)` layout
    /// (row `0`: the root; column `0` and the diagonal are `0`), from
    /// `μ_e = w_e ∂ ln Z / ∂w_e` (Koo et al. 2007; DESIGN.md §1.2–1.3).
    /// Every column sums to `1`; for single-root trees so does row `0`.
    /// `O(n³)` once for the inverse, then `O(n²)`; a factorisation that
    /// computes them itself ([`Factorization::arc_marginals`], the accurate
    /// backends) is asked first.
    ///
    /// # Errors
    /// As [`Model::inverse`].
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::F64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let mu = Model::new(F64, &g, Rooting::Multi)?.marginals()?;
    /// // Arc 2 → 1 is in the tree {0→2, 2→1} of weight 8, out of 13.
    /// assert!((mu[(2, 1)] - 8.0 / 13.0).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn marginals(&self) -> Result<Matrix<B::Scalar>> {
        if let Some(mu) = self
            .tree
            .ok()
            .and_then(|()| self.factorization.arc_marginals())
        {
            self.log_partition()?;
            return Ok(mu?);
        }
        let mut mu = weight_gradient(self.inverse()?, self.rooting);
        for (m, w) in mu.as_mut_slice().iter_mut().zip(self.weights.as_slice()) {
            if w.is_zero() {
                *m = B::Scalar::zero();
            } else {
                *m *= w;
            }
        }
        Ok(mu)
    }

    /// `∂ ln Z / ∂θ` with respect to the scores `θ = ln w`: the marginals.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    pub fn grad_log_partition(&self) -> Result<Matrix<B::Scalar>> {
        self.marginals()
    }

    /// `∇Z = ∂Z/∂w` with respect to the (collapsed) weights, in the
    /// `(n+1) × (n+1)` layout, from the backend's adjugate (DESIGN.md §1.2):
    /// defined also when `Z = 0`. `O(n³)`.
    ///
    /// # Errors
    /// [`Numerical::NotFinite`] when an entry overflows the scalar type
    /// (stabilised backends with large scores: use the marginals instead).
    pub fn grad_partition(&self) -> Result<Matrix<B::Scalar>> {
        let mut g = weight_gradient(&self.factorization.adjugate(), self.rooting);
        if B::SHIFTS_COLUMNS {
            let n = self.n();
            for m in 1..=n {
                let factor = B::Scalar::from_f64((self.ln_scale - self.shift[m]).exp());
                for h in 0..=n {
                    g[(h, m)] *= &factor;
                }
            }
        }
        if g.as_slice().iter().all(Scalar::is_finite) {
            Ok(g)
        } else {
            Err(Numerical::NotFinite.into())
        }
    }

    /// Label marginals `μ(h → m, ℓ) = μ(h → m) · w(h → m, ℓ) / Σ_ℓ' w(h → m, ℓ')`,
    /// one `(n+1) × (n+1)` matrix per label (one in all for an unlabeled
    /// graph). `O(|labels| n²)` after the marginals.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    pub fn label_marginals(&self) -> Result<Vec<Matrix<B::Scalar>>> {
        let mu = self.marginals()?;
        let Some((labels, shares)) = &self.labels else {
            return Ok(vec![mu]);
        };
        Ok((0..*labels)
            .map(|l| {
                let mut ml = mu.clone();
                for (i, x) in ml.as_mut_slice().iter_mut().enumerate() {
                    *x *= &shares[i * labels + l];
                }
                ml
            })
            .collect())
    }
}

/// `Σ_ℓ e^{θ_ℓ}` in the backend's own precision, where it has one.
fn weight_from_scores<B: MatrixBackend, W: Scalar>(backend: &B, scores: &[W]) -> Option<B::Scalar> {
    let mut total = B::Scalar::zero();
    for s in scores {
        let s = s.to_f64();
        if s > f64::NEG_INFINITY {
            total += backend.weight_from_score(s)?;
        }
    }
    Some(total)
}

/// `w(h → m, ℓ) / Σ_ℓ' w(h → m, ℓ')`, `[h][m][ℓ]`; `0` for forbidden arcs.
fn label_shares<B: MatrixBackend, W: Scalar>(
    backend: &B,
    graph: &Graph<W>,
    convert: impl Fn(&W) -> B::Scalar,
) -> Vec<B::Scalar> {
    type S<B> = <B as MatrixBackend>::Scalar;
    let n = graph.n();
    let mut shares = Vec::with_capacity((n + 1) * (n + 1) * graph.labels());
    for h in 0..=n {
        for m in 0..=n {
            let allowed = graph.is_allowed(h, m);
            let vals = graph.values(h, m);
            match graph.potentials() {
                _ if !allowed => shares.extend(vals.iter().map(|_| S::<B>::zero())),
                Potentials::Scores if backend.weight_from_score(0.0).is_some() => {
                    let ws: Vec<S<B>> = vals
                        .iter()
                        .map(|v| {
                            weight_from_scores(backend, std::slice::from_ref(v))
                                .unwrap_or_else(S::<B>::zero)
                        })
                        .collect();
                    push_shares(&mut shares, ws);
                }
                Potentials::Scores => {
                    let total = graph.log_weight(h, m);
                    shares.extend(
                        vals.iter()
                            .map(|v| S::<B>::from_f64((v.to_f64() - total).exp())),
                    );
                }
                Potentials::Weights => {
                    push_shares(&mut shares, vals.iter().map(&convert).collect())
                }
            }
        }
    }
    shares
}

fn push_shares<S: Scalar>(shares: &mut Vec<S>, weights: Vec<S>) {
    let mut total = S::zero();
    for w in &weights {
        total += w;
    }
    shares.extend(weights.into_iter().map(|w| w / total.clone()));
}

/// `ln Z` of a graph in one call; see [`Model::log_partition`]. `O(n³)`.
///
/// # Errors
/// As [`Model::new`] and [`Model::log_partition`].
pub fn log_partition<B: MatrixBackend>(backend: B, graph: &Graph, rooting: Rooting) -> Result<f64> {
    Model::new(backend, graph, rooting)?.log_partition()
}

/// Arc marginals of a graph in one call; see [`Model::marginals`]. `O(n³)`.
///
/// # Errors
/// As [`Model::new`] and [`Model::marginals`].
pub fn marginals<B: MatrixBackend>(
    backend: B,
    graph: &Graph,
    rooting: Rooting,
) -> Result<Matrix<B::Scalar>> {
    Model::new(backend, graph, rooting)?.marginals()
}
