//! The model object: one factorisation of one Laplacian, many answers.

use crate::engine::{Engine, Factors, PerLabel, Prepared};
use crate::error::{ArcRef, Error, NoTree, Numerical, Result};
use crate::graph::{Graph, Rooting};
use crate::matrix::Matrix;
use crate::scalar::{Scalar, Sign};

/// An edge-factored distribution over the spanning trees of one graph, with
/// its Laplacian factorised once by an [`Engine`] (`O(n³)`); every query
/// reuses that factorisation.
///
/// How the weights enter the engine's number type is the engine's own
/// policy ([`Prepared`]): exact engines take them as given (so `Z` is
/// exact), stabilised ones divide each column by its largest weight so that
/// `ln Z` cannot overflow. Every answer is the same either way.
#[derive(Debug)]
pub struct Model<E: Engine> {
    engine: E,
    rooting: Rooting,
    pub(crate) prepared: Prepared<E::Scalar>,
    pub(crate) tree: std::result::Result<(), NoTree>,
    pub(crate) factors: E::Factors,
    /// The `f64` graph, kept for zeroth-order quantities that need the
    /// Laplacian of transformed weights (Rényi entropy, `ℓ_p` norms).
    source: Option<Graph<f64>>,
    /// Whether every marginal the factors keep is finite, decided on the
    /// first [`Model::marginals_kept`] (an `O(n²)` sweep once, not per call).
    finite_marginals: std::sync::OnceLock<bool>,
    /// [`Model::log_partition`], decided on its first call: an `O(n²)`
    /// accuracy check and a logarithm per pivot once, not per query.
    ln_z: std::sync::OnceLock<Result<f64>>,
    /// [`Model::ready`], decided on its first call (it reads only the
    /// factors, which do not change).
    readiness: std::sync::OnceLock<Result<()>>,
}

impl<E: Engine> Model<E> {
    /// Builds and factorises the Laplacian of an `f64` graph, `O(|labels| n² + n³)`.
    ///
    /// # Errors
    /// [`Error::Overflow`] when an unstabilised engine meets a score above
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
    pub fn new(engine: E, graph: &Graph<f64>, rooting: Rooting) -> Result<Self> {
        let mut model = Self::build(engine, graph, rooting, |&w| E::Scalar::from_f64(w))?;
        model.source = Some(graph.clone());
        Ok(model)
    }

    /// As [`Model::new`], for a graph whose weights are already in the
    /// engine's scalar type (exact rationals read from text, complex
    /// perturbations for complex-step differentiation).
    ///
    /// # Errors
    /// As [`Model::new`].
    pub fn from_scalar_graph(
        engine: E,
        graph: &Graph<E::Scalar>,
        rooting: Rooting,
    ) -> Result<Self> {
        Self::build(engine, graph, rooting, Clone::clone)
    }

    fn build<W: Scalar>(
        engine: E,
        graph: &Graph<W>,
        rooting: Rooting,
        convert: impl Fn(&W) -> E::Scalar,
    ) -> Result<Self> {
        let mut prepared = engine.prepare(graph, convert)?;
        // The factors own the weights (they answer `Factors::weights`): the
        // model reads them there, no second copy.
        let weights = std::mem::replace(&mut prepared.weights, Matrix::zeros(0, 0));
        let factors = engine.factorize(weights, rooting);
        Ok(Model {
            engine,
            rooting,
            prepared,
            tree: graph.spanning_tree(rooting),
            factors,
            source: None,
            finite_marginals: std::sync::OnceLock::new(),
            ln_z: std::sync::OnceLock::new(),
            readiness: std::sync::OnceLock::new(),
        })
    }

    /// The number of words `n`.
    pub fn n(&self) -> usize {
        self.factors.weights().rows() - 1
    }

    /// The number of labels (`1` for an unlabeled graph).
    pub fn labels(&self) -> usize {
        self.prepared.shares.as_ref().map_or(1, PerLabel::labels)
    }

    /// Whether the graph was given with labels.
    pub fn is_labeled(&self) -> bool {
        self.prepared.shares.is_some()
    }

    /// The rooting the model was built for.
    pub fn rooting(&self) -> Rooting {
        self.rooting
    }

    /// The engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The engine's factors of the Laplacian, for reports that ask which
    /// route answered (e.g. [`Certified::is_certified`](crate::Certified::is_certified)).
    /// Not part of the stable API.
    #[doc(hidden)]
    pub fn factors(&self) -> &E::Factors {
        &self.factors
    }

    /// The `f64` graph the model was built from ([`Model::new`] only).
    pub fn graph(&self) -> Option<&Graph<f64>> {
        self.source.as_ref()
    }

    /// Whether a spanning tree exists, decided combinatorially (the same on
    /// every engine); see [`Graph::spanning_tree`].
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
    /// although trees exist (rounding), or the result is not finite;
    /// [`Numerical::Inaccurate`] when a dense factorisation's own estimate of
    /// its error exceeds [`LN_Z_TOLERANCE`] (use a cancellation-free engine);
    /// [`Numerical::Underflow`] when the weight of an arc underflowed in
    /// `f64` and the trees through such arcs may weigh more than `2⁻⁵³ Z`.
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::Accurate;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// // Single-root trees {0→1, 1→2} and {0→2, 2→1}: 1·3 + 2·4 = 11.
    /// let log_z = Model::new(Accurate, &g, Rooting::Single)?.log_partition()?;
    /// assert!((log_z - 11f64.ln()).abs() < 1e-15);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn log_partition(&self) -> Result<f64> {
        self.ln_z
            .get_or_init(|| self.compute_log_partition())
            .clone()
    }

    /// The body of [`Model::log_partition`], run once per model. `O(n²)`.
    fn compute_log_partition(&self) -> Result<f64> {
        if self.tree.is_err() {
            return Ok(f64::NEG_INFINITY);
        }
        let (sign, ln) = self.factors.ln_abs_det();
        // Arcs whose f64 weight underflowed: Z of the prepared weights misses
        // at most e^{bound} (a bound on the trees through them); refuse
        // unless that is below one rounding of Z.
        if let Some((arc, bound)) = self.prepared.lost {
            let ln_z = match sign {
                Sign::Zero => f64::NEG_INFINITY,
                _ => ln + self.prepared.ln_scale,
            };
            let margin = ln_z - bound;
            if margin.is_nan() || margin < f64::from(f64::MANTISSA_DIGITS) * std::f64::consts::LN_2
            {
                return Err(Numerical::Underflow {
                    head: arc.head,
                    dependent: arc.dependent,
                }
                .into());
            }
        }
        if sign == Sign::Zero {
            return Err(self.singular().into());
        }
        if !ln.is_finite() {
            return Err(Numerical::NotFinite.into());
        }
        let ln_z = ln + self.prepared.ln_scale;
        // Scores near f64::MAX: the shifts add up beyond f64 (found by fuzzing).
        if !ln_z.is_finite() {
            return Err(Numerical::NotFinite.into());
        }
        // The factorisation's own check first: a negative determinant is
        // one more symptom of the cancellation it names.
        self.factors
            .check_accuracy(LN_Z_TOLERANCE * ln_z.abs().max(1.0))?;
        match sign {
            Sign::Negative => Err(Numerical::NegativeDeterminant.into()),
            _ => Ok(ln_z),
        }
    }

    /// Everything a derivative needs: a spanning tree, a trusted `ln Z`, and
    /// factors accurate enough for derivatives ([`DERIVATIVE_TOLERANCE`]).
    /// Decided once per model. `O(1)` after the first call.
    pub(crate) fn ready(&self) -> Result<()> {
        self.readiness
            .get_or_init(|| {
                self.tree.map_err(Error::NoSpanningTree)?;
                self.log_partition()?;
                Ok(self.factors.check_accuracy(DERIVATIVE_TOLERANCE)?)
            })
            .clone()
    }

    /// Refuses a gradient of (Frobenius) norm `norm` whose estimated
    /// absolute error `error` ([`VjpAccuracy`](crate::engine::VjpAccuracy),
    /// from the dense `f64` engines) leaves fewer than
    /// [`DERIVATIVE_BITS`](crate::engine::DERIVATIVE_BITS) norm-wise; the
    /// marginals (to name a nearly certain word) only then. `O(n²)`.
    pub(crate) fn check_gradient(&self, error: f64, norm: f64) -> Result<()> {
        let accuracy = crate::engine::VjpAccuracy { error, norm };
        if !norm.is_finite() || accuracy.bits() >= crate::engine::DERIVATIVE_BITS {
            return Ok(());
        }
        let mu = self.marginals_kept()?;
        Err(
            crate::engine::derivative_check::refusal(accuracy, &mu, self.weights(), self.rooting)
                .into(),
        )
    }

    fn singular(&self) -> Numerical {
        Numerical::Singular {
            pivot: self.factors.zero_pivot().unwrap_or(0),
        }
    }

    /// `Z` in the engine's scalar: exact on exact engines. On stabilised
    /// engines `e^{Σ c_m}` is applied through `f64`; use
    /// [`Model::log_partition`] where `Z` exceeds the scalar's range. `0` when
    /// there is no spanning tree.
    ///
    /// # Errors
    /// As [`Model::log_partition`]; [`Numerical::NotFinite`] when `Z`
    /// overflows the scalar type.
    pub fn partition(&self) -> Result<E::Scalar> {
        if self.tree.is_err() {
            return Ok(E::Scalar::zero());
        }
        self.log_partition()?;
        let det = self.factors.det();
        let z = if self.prepared.ln_scale == 0.0 {
            det
        } else {
            det * E::Scalar::from_f64(self.prepared.ln_scale.exp())
        };
        if z.is_finite() {
            Ok(z)
        } else {
            Err(Numerical::NotFinite.into())
        }
    }

    /// `X = L⁻¹` of the prepared Laplacian, formed once, `O(n³)`.
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`] when `Z = 0`, [`Error::Numerical`] when the
    /// factorisation is singular to working precision.
    pub(crate) fn inverse(&self) -> Result<&Matrix<E::Scalar>> {
        self.ready()?;
        self.factors.inverse().map_err(Error::from)
    }

    /// The prepared (possibly column-scaled) weights.
    pub(crate) fn weights(&self) -> &Matrix<E::Scalar> {
        self.factors.weights()
    }

    /// Arc marginals `μ[h][m] = P(h → m ∈ d)` in the `(n+1) × (n+1)` layout
    /// (row `0`: the root; column `0` and the diagonal are `0`), from
    /// `μ_e = w_e ∂ ln Z / ∂w_e` (Koo et al. 2007; [§1.2–1.3](crate::mathematics)).
    /// Every column sums to `1`; for single-root trees so does row `0`.
    /// `O(n³)`: the engine's own route ([`Factors::marginals`]: the inverse on
    /// dense engines, the cancellation-free elimination on the accurate ones).
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`] when `Z = 0`; as [`Model::log_partition`];
    /// [`Numerical::Inaccurate`] when a dense factorisation's own check
    /// finds it cannot hold derivatives ([`DERIVATIVE_TOLERANCE`]).
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
    pub fn marginals(&self) -> Result<Matrix<E::Scalar>> {
        self.marginals_kept().map(std::borrow::Cow::into_owned)
    }

    /// [`Model::marginals`], borrowed from the factors where they keep
    /// them ([`Factors::marginals_kept`]): the same matrix, no `O(n²)` copy
    /// per call, and checked finite once (the factors return the same
    /// marginals on every call).
    pub(crate) fn marginals_kept(&self) -> Result<std::borrow::Cow<'_, Matrix<E::Scalar>>> {
        self.ready()?;
        let mu = self.factors.marginals_kept()?;
        if *self
            .finite_marginals
            .get_or_init(|| all_finite(mu.as_slice()))
        {
            Ok(mu)
        } else {
            Err(Numerical::NotFinite.into())
        }
    }

    /// `∂ ln Z / ∂θ` with respect to the scores `θ = ln w`: the marginals.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    pub fn grad_log_partition(&self) -> Result<Matrix<E::Scalar>> {
        self.marginals()
    }

    /// `∇Z = ∂Z/∂w` with respect to the (collapsed) weights, in the
    /// `(n+1) × (n+1)` layout, from the engine's adjugate (Jacobi's formula,
    /// [`weight_gradient`](crate::laplacian::weight_gradient)); on the
    /// cancellation-free engines `Z ν` from the elimination
    /// ([`Factors::partition_gradient`]). Defined also when `Z = 0`. `O(n³)`.
    ///
    /// # Errors
    /// [`Numerical::NotFinite`] when an entry overflows the scalar type
    /// (stabilised engines with large scores: use the marginals instead).
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_exact::{Exact, Rational};
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// // Z = ρ₁ρ₂ + ρ₁A₁₂ + ρ₂A₂₁, so ∂Z/∂ρ₁ = ρ₂ + A₁₂ = 5.
    /// let grad = Model::new(Exact, &g, Rooting::Multi)?.grad_partition()?;
    /// assert_eq!(grad[(0, 1)], Rational::from(5));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn grad_partition(&self) -> Result<Matrix<E::Scalar>> {
        if self.tree.is_ok() {
            self.ready()?;
        }
        let mut g = self.factors.partition_gradient()?;
        let shift = &self.prepared.shift;
        let n = self.n();
        for m in (1..=n).filter(|&m| self.prepared.ln_scale != shift[m]) {
            let factor = E::Scalar::from_f64(self.prepared.scale_without(m));
            for h in 0..=n {
                g[(h, m)] *= &factor;
            }
        }
        finite(g).map_err(|_| Numerical::NotFinite.into())
    }

    /// Label marginals `μ(h → m, ℓ) = μ(h → m) · w(h → m, ℓ) / Σ_ℓ' w(h → m, ℓ')`,
    /// one `(n+1) × (n+1)` matrix per label (one in all for an unlabeled
    /// graph). `O(|labels| n²)` after the marginals.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::Accurate;
    /// // One word, two labels of weights 1 and 3 on the arc 0 → 1.
    /// let g = Graph::from_labeled_weights(&[[[0.0, 0.0], [1.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]]])?;
    /// let mu = Model::new(Accurate, &g, Rooting::Single)?.label_marginals()?;
    /// assert_eq!((mu[(0, 0, 1)], mu[(1, 0, 1)]), (0.25, 0.75));
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn label_marginals(&self) -> Result<PerLabel<E::Scalar>> {
        let mu = self.marginals_kept()?;
        let Some(shares) = &self.prepared.shares else {
            return Ok(PerLabel::new(vec![mu.into_owned()]));
        };
        Ok(shares
            .iter()
            .map(|share| {
                // Each product written once (no copy of `μ` to scale in place).
                let products = mu.as_slice().iter().zip(share.as_slice()).map(|(x, s)| {
                    let mut x = x.clone();
                    x *= s;
                    x
                });
                Matrix::from_row_major(mu.rows(), mu.cols(), products.collect())
            })
            .collect::<Vec<_>>()
            .into())
    }

    /// `x s_{kℓ}`, the share of label `ℓ` on arc `k` (row-major index)
    /// times `x` (`x` itself when unlabeled): with `x = μ_k` the label
    /// marginal as [`Model::label_marginals`] forms it, bit for bit. `O(1)`.
    pub(crate) fn label_share_times(&self, l: usize, k: usize, x: &E::Scalar) -> E::Scalar {
        let mut x = x.clone();
        if let Some(shares) = &self.prepared.shares {
            x *= &shares[l].as_slice()[k];
        }
        x
    }

    /// The prepared weight of label `ℓ` on arc `h → m`:
    /// `w(h → m) · share(h → m, ℓ)` (the collapsed weight when unlabeled).
    pub(crate) fn label_weight(&self, l: usize, h: usize, m: usize) -> E::Scalar {
        let mut x = self.factors.weights()[(h, m)].clone();
        if let Some(shares) = &self.prepared.shares {
            x *= &shares[(l, h, m)];
        }
        x
    }

    /// `ln w'` of the prepared weights (`None` where a weight is zero) read
    /// off the scores, `θ − c_m` (`shifted`) or the scores `θ` themselves
    /// (which differ by a constant per column), when the model was built from one score
    /// per arc ([`Model::new`] on an unlabeled graph of scores, an engine
    /// whose weights are `f64` exponentials): no logarithm per arc. `None`
    /// otherwise. `O(n²)`.
    pub(crate) fn log_weights_from_scores(
        &self,
        shifted: bool,
    ) -> Option<Matrix<Option<E::Scalar>>> {
        let n1 = self.n() + 1;
        let mut logs = vec![None; n1 * n1];
        self.visit_log_weights_from_scores(shifted, |k, x| logs[k] = Some(x))
            .then(|| Matrix::from_row_major(n1, n1, logs))
    }

    /// Calls `f(k, ln w'_k)` for every arc `k` (row-major index in the
    /// `(n+1) × (n+1)` layout) of nonzero prepared weight, in order, with
    /// the log-weights of [`Model::log_weights_from_scores`], without
    /// forming their matrix; returns `false` (and calls nothing) when the
    /// model was not built from one score per arc. `O(n²)`.
    pub(crate) fn visit_log_weights_from_scores(
        &self,
        shifted: bool,
        mut f: impl FnMut(usize, E::Scalar),
    ) -> bool {
        let Some(graph) = self.source.as_ref().filter(|_| self.prepared.from_scores) else {
            return false;
        };
        let w = self.factors.weights();
        let n1 = w.rows();
        let shift = &self.prepared.shift;
        // One score per arc: the graph's values are the row-major scores.
        for (h, (wr, theta)) in w
            .as_slice()
            .chunks_exact(n1)
            .zip(graph.raw_values().chunks_exact(n1))
            .enumerate()
        {
            for (m, ((x, &t), &c)) in wr.iter().zip(theta).zip(shift).enumerate() {
                let c = if shifted { c } else { 0.0 };
                if !x.is_zero() {
                    f(h * n1 + m, E::Scalar::from_f64(t - c));
                }
            }
        }
        true
    }

    /// Calls `f(ℓ, k, ln w'_{kℓ})` for every label `ℓ` and arc `k`
    /// (row-major index in the `(n+1) × (n+1)` layout) of nonzero prepared
    /// label weight `w'_k s_{kℓ}`, label by label and in order, with
    /// `ln w'_{kℓ} = θ_{kℓ} − c_m` (`shifted`) or `θ_{kℓ}` read off the
    /// scores, when the model was built ([`Model::new`]) from a labeled graph
    /// of scores: no logarithm per label and arc (the weights are `e^{θ −
    /// c_m}` to a few ulps, or at the type's own precision). Returns `false`
    /// (and calls nothing) otherwise. `O(|labels| n²)`, no allocation.
    pub(crate) fn visit_label_log_weights(
        &self,
        shifted: bool,
        mut f: impl FnMut(usize, usize, E::Scalar),
    ) -> bool {
        let (Some(graph), Some(shares)) = (
            self.source
                .as_ref()
                .filter(|g| g.potentials() == crate::graph::Potentials::Scores),
            &self.prepared.shares,
        ) else {
            return false;
        };
        let w = self.factors.weights().as_slice();
        let n1 = self.n() + 1;
        let shift = &self.prepared.shift;
        let none = vec![0.0; if shifted { 0 } else { n1 }];
        let shift = if shifted { shift.as_slice() } else { &none };
        if let Some(scores) = &self.prepared.label_scores {
            // Label-major, as the shares: contiguous rows.
            for (l, (share, theta)) in shares.iter().zip(scores.chunks_exact(n1 * n1)).enumerate() {
                visit_label_rows(l, w, share.as_slice(), theta.iter().copied(), shift, &mut f);
            }
            return true;
        }
        let labels = shares.labels();
        let values = graph.raw_values();
        for (l, share) in shares.iter().enumerate() {
            let theta = values[l..].iter().step_by(labels).copied();
            visit_label_rows(l, w, share.as_slice(), theta, shift, &mut f);
        }
        true
    }

    /// `−θ_{kℓ}` (`negate`) or `θ_{kℓ}` where the prepared label weight
    /// `w'_k s_{kℓ}` is nonzero, `0` elsewhere, one matrix per label, from
    /// the label-major scores that [`Prepared`] kept ([`Model::new`] on a
    /// labeled graph of scores, an engine whose weights are `f64`
    /// exponentials): the seeds of the entropy gradient, branch-free (the
    /// values of [`Model::visit_label_log_weights`], unshifted). `None`
    /// otherwise. `O(|labels| n²)`.
    pub(crate) fn label_score_matrices(&self, negate: bool) -> Option<Vec<Matrix<E::Scalar>>> {
        let scores = self.prepared.label_scores.as_ref()?;
        let shares = self.prepared.shares.as_ref()?;
        self.source.as_ref()?;
        let w = self.factors.weights().as_slice();
        let n1 = self.n() + 1;
        let sign = if negate { -1.0 } else { 1.0 };
        Some(
            shares
                .iter()
                .zip(scores.chunks_exact(n1 * n1))
                .map(|(share, theta)| {
                    // Every entry written once (no zeroed matrix first).
                    let arcs = w.iter().zip(share.as_slice()).zip(theta);
                    let seeds = arcs.map(|((x, s), &t)| {
                        let defined = !(x.clone() * s.clone()).is_zero();
                        let v = E::Scalar::from_f64(sign * t);
                        if defined {
                            v
                        } else {
                            E::Scalar::zero()
                        }
                    });
                    Matrix::from_row_major(n1, n1, seeds.collect())
                })
                .collect(),
        )
    }

    /// The graph's row-major scores and the column shifts `c_m` of the
    /// prepared weights, when the model was built from one score per arc
    /// (then `ln w'_k = θ_k − c_m` wherever `w'_k ≠ 0`,
    /// [`Model::visit_log_weights_from_scores`]); `None` otherwise.
    pub(crate) fn scores_and_shift(&self) -> Option<(&[f64], &[f64])> {
        let graph = self.source.as_ref().filter(|_| self.prepared.from_scores)?;
        Some((graph.raw_values(), &self.prepared.shift))
    }

    /// The log-scale `Σ_m c_m` of the prepared weights (`0` when as given).
    pub(crate) fn ln_scale(&self) -> f64 {
        self.prepared.ln_scale
    }

    /// The share `w(h → m, ℓ) / w(h → m)` of a labeled arc (`1` for unlabeled
    /// graphs or `label = None`).
    pub(crate) fn share(&self, arc: ArcRef) -> E::Scalar {
        match (arc.label, &self.prepared.shares) {
            (Some(l), Some(shares)) => shares[(l, arc.head, arc.dependent)].clone(),
            _ => E::Scalar::one(),
        }
    }
}

/// The body of [`Model::visit_label_log_weights`] for label `l`: row by
/// row (no index arithmetic per arc), `f(l, k, θ_k − c_m)` where
/// `w_k s_k ≠ 0`, `theta` the label's scores in row-major order.
fn visit_label_rows<S: Scalar>(
    l: usize,
    w: &[S],
    share: &[S],
    mut theta: impl Iterator<Item = f64>,
    shift: &[f64],
    f: &mut impl FnMut(usize, usize, S),
) {
    let n1 = shift.len();
    for (h, (wr, sr)) in w.chunks_exact(n1).zip(share.chunks_exact(n1)).enumerate() {
        let arcs = wr.iter().zip(sr).zip(theta.by_ref().take(n1)).zip(shift);
        for (m, (((x, s), t), &c)) in arcs.enumerate() {
            if !(x.clone() * s.clone()).is_zero() {
                f(l, h * n1 + m, S::from_f64(t - c));
            }
        }
    }
}

/// The largest estimated absolute error of `ln |det L|`
/// ([`Factors::check_accuracy`]) accepted for `ln Z`, relative to
/// `max(1, |ln Z|)`: `2⁻²⁷ ≈ 7e-9`. Dense LU is refused only where its own
/// estimate says it keeps fewer than 27 bits; the estimate overshoots the
/// true error (measured: see the `honest_accuracy` example of
/// `spantree-faer`), so no `ln Z` with fewer than 20 correct bits gets
/// through, and none accurate to `1e-10` is refused.
pub const LN_Z_TOLERANCE: f64 = 7.450_580_596_923_828e-9;

/// The largest estimated absolute error of `ln |det L|` accepted before
/// any derivative (marginals, gradients, second order): `2⁻⁴⁰ ≈ 9e-13`.
/// Derivatives from a dense LU (the inverse and its solves) lose about as
/// many bits as the pivots, so this keeps them near the 40 bits that
/// gradients need.
pub const DERIVATIVE_TOLERANCE: f64 = 9.094_947_017_729_282e-13;

/// The matrix, or [`Numerical::NotFinite`] when an entry is NaN or infinite.
fn finite<S: Scalar>(m: Matrix<S>) -> Result<Matrix<S>> {
    if all_finite(m.as_slice()) {
        Ok(m)
    } else {
        Err(Numerical::NotFinite.into())
    }
}

/// `ln Z` of a graph in one call; see [`Model::log_partition`]. `O(n³)`.
///
/// # Errors
/// As [`Model::new`] and [`Model::log_partition`].
pub fn log_partition<E: Engine>(engine: E, graph: &Graph, rooting: Rooting) -> Result<f64> {
    Model::new(engine, graph, rooting)?.log_partition()
}

/// Arc marginals of a graph in one call; see [`Model::marginals`]. `O(n³)`.
///
/// # Errors
/// As [`Model::new`] and [`Model::marginals`].
pub fn arc_marginals<E: Engine>(
    engine: E,
    graph: &Graph,
    rooting: Rooting,
) -> Result<Matrix<E::Scalar>> {
    Model::new(engine, graph, rooting)?.marginals()
}

/// Whether every entry is finite, without stopping at the first that is
/// not: a branch-free sweep (the entries are finite but on failure paths)
/// under one instruction-set dispatch, so that `f64` runs in the widest
/// vectors the CPU has (baseline `x86-64` code had it in two-lane SSE2).
/// `O(len)`.
pub(crate) fn all_finite<S: Scalar>(m: &[S]) -> bool {
    pulp::Arch::new().dispatch(AllFinite(m))
}

/// The sweep of [`all_finite`], run under its dispatch.
pub(crate) struct AllFinite<'a, S>(pub(crate) &'a [S]);

impl<S: Scalar> pulp::WithSimd for AllFinite<'_, S> {
    type Output = bool;

    #[inline(always)]
    fn with_simd<Sm: pulp::Simd>(self, _simd: Sm) -> bool {
        self.0.iter().fold(true, |all, x| all & x.is_finite())
    }
}
