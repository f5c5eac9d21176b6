//! Named quantities of a spanning-tree distribution ([§1.3–1.4](crate::mathematics)):
//! Shannon, cross- and Rényi entropies, KL divergence, `ℓ_k` norms, expected
//! attachment score and the generalised-expectation (GE) objective, with the
//! `O(n³)` gradients of every first-order one by hand-written reverse mode
//! (Zmigrod, Vieira & Cotterell 2021; Li & Eisner 2009; Druck, Mann & McCallum
//! 2009). Entropies are in nats.
//!
//! Gradients are with respect to the scores `θ = ln w` of the model's graph:
//! one `(n+1) × (n+1)` matrix per label (one in all for unlabeled graphs), in
//! the layout of the marginals; [`Model::weight_gradient_of`] turns them into
//! gradients with respect to the weights.

use crate::engine::{Engine, Factors, PerLabel};
use crate::error::{ArcRef, Error, Result};
use crate::graph::Rooting;
use crate::linalg::store_lanes;
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::{Scalar, Sign, Transcendental};
use pulp::{Arch, Simd, WithSimd};
use std::any::Any;

/// A divergence or cross-entropy: finite, or `+∞` because `p` gives positive
/// probability to an arc that `q` forbids.
#[derive(Clone, Debug, PartialEq)]
pub enum Divergence<S> {
    /// A finite value.
    Finite(S),
    /// `+∞`: `p` puts mass on this arc (or label), which `q` forbids.
    Infinite {
        /// The arc.
        arc: ArcRef,
    },
}

impl<S: Scalar> Divergence<S> {
    /// The value as an `f64` (`+∞` for [`Divergence::Infinite`]).
    pub fn to_f64(&self) -> f64 {
        match self {
            Divergence::Finite(x) => x.to_f64(),
            Divergence::Infinite { .. } => f64::INFINITY,
        }
    }

    /// The finite value, if any.
    pub fn finite(self) -> Option<S> {
        match self {
            Divergence::Finite(x) => Some(x),
            Divergence::Infinite { .. } => None,
        }
    }
}

/// One model's arcs as read off its scores: the prepared weights `w'`, the
/// row-major scores `θ` and the column shifts `c_m` (`ln w'_k = θ_k − c_m`
/// where `w'_k ≠ 0`).
#[derive(Clone, Copy)]
struct ScoresF64<'a> {
    w: &'a [f64],
    theta: &'a [f64],
    shift: &'a [f64],
}

/// The score contractions on `f64` slices, the same sums bit for bit as
/// their scalar definitions: `Σ μ_e ln w'_e` ([`Model::expected_shifted_score`],
/// `q` `None`) or `Σ μ_e (ln w'^p_e − ln w'^q_e)`
/// ([`Model::kl_from_scores`]) over the arcs where every factor is
/// nonzero. Each row in chunks of [`Lanes::WIDTH`] columns, branch-free (a
/// term is `0` where it is skipped, and adding `0` to a partial sum changes
/// nothing), under one instruction-set dispatch so that a chunk is one
/// vector. `O(n²)`, no allocation.
#[derive(Clone, Copy)]
struct ScoreContraction<'a> {
    mu: &'a [f64],
    p: ScoresF64<'a>,
    q: Option<ScoresF64<'a>>,
}

impl WithSimd for ScoreContraction<'_> {
    type Output = f64;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> f64 {
        match self.q {
            None => contract_scores::<Sm, false>(simd, self.mu, self.p, self.p),
            Some(q) => contract_scores::<Sm, true>(simd, self.mu, self.p, q),
        }
    }
}

/// The body of [`ScoreContraction`], `q` read only when `RATIO`. A row's
/// chunk of [`Lanes::WIDTH`] columns is `WIDTH / lanes` vectors, each added
/// to its own vector of partial sums (sum `m mod WIDTH` in lane order); a
/// row's last columns short of a vector load zero-padded, and a padded
/// lane's term is `0` (its `μ` is `0`).
#[inline(always)]
fn contract_scores<Sm: Simd, const RATIO: bool>(
    simd: Sm,
    mu: &[f64],
    p: ScoresF64<'_>,
    q: ScoresF64<'_>,
) -> f64 {
    const W: usize = Lanes::<f64>::WIDTH;
    let lanes = Sm::F64_LANES;
    let n1 = p.shift.len();
    let zero = simd.splat_f64s(0.0);
    let mut sums = [zero; W];
    let rows = mu
        .chunks_exact(n1)
        .zip(p.w.chunks_exact(n1).zip(p.theta.chunks_exact(n1)))
        .zip(q.w.chunks_exact(n1).zip(q.theta.chunks_exact(n1)));
    let term = |m: Sm::f64s, wp, tp, cp, wq, tq, cq| {
        let log = simd.sub_f64s(tp, cp);
        let log = if RATIO {
            simd.sub_f64s(log, simd.sub_f64s(tq, cq))
        } else {
            log
        };
        let mut term = simd.mul_f64s(m, log);
        let mut skip = |x| term = simd.select_f64s(simd.equal_f64s(x, zero), zero, term);
        skip(m);
        skip(wp);
        if RATIO {
            skip(wq);
        }
        term
    };
    let (cp, cp_tail) = Sm::as_simd_f64s(p.shift);
    let (cq, cq_tail) = Sm::as_simd_f64s(q.shift);
    for ((mu, (wp, tp)), (wq, tq)) in rows {
        let ((m, m_tail), (wp, wp_tail), (tp, tp_tail)) = (
            Sm::as_simd_f64s(mu),
            Sm::as_simd_f64s(wp),
            Sm::as_simd_f64s(tp),
        );
        let ((wq, wq_tail), (tq, tq_tail)) = (Sm::as_simd_f64s(wq), Sm::as_simd_f64s(tq));
        let vectors = m
            .iter()
            .zip(wp)
            .zip(tp)
            .zip(cp)
            .zip(wq.iter().zip(tq).zip(cq));
        let mut v = 0;
        for ((((&m, &wp), &tp), &cp), ((&wq, &tq), &cq)) in vectors {
            sums[v] = simd.add_f64s(sums[v], term(m, wp, tp, cp, wq, tq, cq));
            v = (v + 1) % (W / lanes);
        }
        if !m_tail.is_empty() {
            let load = |s| simd.partial_load_f64s(s);
            let t = term(
                load(m_tail),
                load(wp_tail),
                load(tp_tail),
                load(cp_tail),
                load(wq_tail),
                load(tq_tail),
                load(cq_tail),
            );
            sums[v] = simd.add_f64s(sums[v], t);
        }
    }
    let mut out = [0.0; W];
    for (v, &sum) in sums.iter().enumerate().take(W / lanes) {
        store_lanes(simd, &mut out, v * lanes, sum);
    }
    Lanes { sums: out }.sum()
}

/// A sum over the arcs `h → m` of the `(n+1) × (n+1)` layout in
/// [`Lanes::WIDTH`] interleaved partial sums (arc `h → m` adds to sum
/// `m mod WIDTH`, so that a row's chunk of `WIDTH` columns is one vector),
/// added pairwise at the end. One running sum made the `O(n²)` contractions of
/// the entropies and divergences wait four cycles per arc for the previous
/// addition (`perf annotate` of `entropy` at `n = 36`: 40% of its samples
/// on the `mulsd`/`addsd` pair); independent sums do not wait. The error
/// bound of the sum, `(k_max / WIDTH + log₂ WIDTH) ε Σ|x_k|`, is no worse than
/// one running sum's `k_max ε Σ|x_k|`. Every route to one quantity adds the
/// same terms under the same `k`, so the routes agree bit for bit.
struct Lanes<S> {
    sums: [S; Lanes::<f64>::WIDTH],
}

impl<S: Scalar> Lanes<S> {
    /// The number of partial sums.
    const WIDTH: usize = 8;

    fn new() -> Self {
        Lanes {
            sums: std::array::from_fn(|_| S::zero()),
        }
    }

    /// Adds the term `x` of the arc into column `m`.
    #[inline(always)]
    fn add(&mut self, m: usize, x: S) {
        self.sums[m % Self::WIDTH] += x;
    }

    /// `((s₀ + s₁) + (s₂ + s₃)) + ((s₄ + s₅) + (s₆ + s₇))`.
    fn sum(self) -> S {
        let [a, b, c, d, e, f, g, h] = self.sums;
        ((a + b) + (c + d)) + ((e + f) + (g + h))
    }
}

impl<E: Engine> Model<E>
where
    E::Scalar: Transcendental,
{
    /// `ln det L(w')` of the column-scaled Laplacian in the scalar type, so
    /// that `ln Z = ln det L(w') + Σ_m c_m`; taken from the determinant itself
    /// where it is finite and positive (full precision on high-precision
    /// backends), else from the pivots.
    fn ln_det_scaled(&self) -> Result<E::Scalar> {
        let ln_z = self.log_partition()?;
        self.tree.map_err(Error::NoSpanningTree)?;
        let det = self.factors.det();
        Ok(if det.sign() == Sign::Positive && det.is_finite() {
            det.ln()
        } else {
            E::Scalar::from_f64(ln_z - self.ln_scale())
        })
    }

    /// `ln Z` in the scalar type (see [`Model::log_partition`] for `f64`).
    ///
    /// # Errors
    /// [`Error::NoSpanningTree`], [`Error::Numerical`].
    pub fn log_partition_scalar(&self) -> Result<E::Scalar> {
        Ok(self.ln_det_scaled()? + E::Scalar::from_f64(self.ln_scale()))
    }

    /// `ln w'_{eℓ}` of the column-scaled label weights, one matrix per label,
    /// with `None` where the weight is zero: read off the scores, `θ − c_m`,
    /// where the model was built from scores
    /// ([`Model::log_weights_from_scores`],
    /// [`Model::visit_label_log_weights`]), else a logarithm per cell.
    fn scaled_log_weights(&self) -> Vec<Matrix<Option<E::Scalar>>> {
        self.log_weights(true)
    }

    /// `ln w'` (`shifted`) or the scores `θ` themselves, one matrix per label
    /// (`None` where the prepared label weight is zero); the logarithms of
    /// the prepared weights where the graph is not one of scores.
    /// `O(|labels| n²)`.
    fn log_weights(&self, shifted: bool) -> Vec<Matrix<Option<E::Scalar>>> {
        if let Some(logs) = self.log_weights_from_scores(shifted) {
            return vec![logs];
        }
        let n1 = self.n() + 1;
        let mut logs = vec![Matrix::from_row_major(n1, n1, vec![None; n1 * n1]); self.labels()];
        if self.visit_label_log_weights(shifted, |l, k, x| logs[l].as_mut_slice()[k] = Some(x)) {
            return logs;
        }
        for (l, log) in logs.iter_mut().enumerate() {
            for (k, out) in log.as_mut_slice().iter_mut().enumerate() {
                let x = self.label_weight(l, k / n1, k % n1);
                *out = (!x.is_zero()).then(|| x.ln());
            }
        }
        logs
    }

    /// Log-weights to seed gradients with: the graph's own scores `θ_{eℓ}`
    /// where the model was built from scores (defined where
    /// `scaled_log_weights` is), else `ln w'`. The two differ by the
    /// column shift `c_m`, a constant on the arcs into each word, which no
    /// gradient sees (every tree has one arc into `m`); the scores are exact
    /// inputs, while `ln w'` rounded to `f64` is off by up to half an ulp of
    /// `|θ − c_m|` (`3e-14` for scores 300 below the column's best), an error
    /// the reverse pass would carry into every gradient.
    fn seed_log_weights(&self) -> Vec<Matrix<Option<E::Scalar>>> {
        self.log_weights(false)
    }

    /// `Σ_{e,ℓ} μ_{eℓ} a_{eℓ}` over the arcs where `a` is defined, with
    /// `μ_{eℓ} = μ_e s_{eℓ}` formed in passing (as
    /// [`Model::label_marginals`] forms it), no matrix per label.
    fn contract_label_marginals(&self, a: &[Matrix<Option<E::Scalar>>]) -> Result<E::Scalar> {
        let mu = self.marginals_kept()?;
        let n1 = mu.rows();
        let mut total = Lanes::new();
        for (l, al) in a.iter().enumerate() {
            for (k, (m, x)) in mu.as_slice().iter().zip(al.as_slice()).enumerate() {
                let m = self.label_share_times(l, k, m);
                if let (Some(x), false) = (x, m.is_zero()) {
                    total.add(k % n1, m * x.clone());
                }
            }
        }
        Ok(total.sum())
    }

    /// `Σ_e μ_e (θ_e − c_m)` over the arcs of nonzero weight and marginal,
    /// for a model built from one score per arc (`theta`, `shift`:
    /// [`Model::scores_and_shift`]): the score contraction of the entropy,
    /// read off the scores (no logarithm, no matrix of log-weights), in the
    /// arc order and [`Lanes`] of [`Model::contract_label_marginals`].
    /// `O(n²)`.
    fn expected_shifted_score(
        &self,
        mu: &Matrix<E::Scalar>,
        theta: &[f64],
        shift: &[f64],
    ) -> E::Scalar {
        let w = self.factors.weights();
        if let (Some(mu), Some(w)) = (
            (mu as &dyn Any).downcast_ref::<Matrix<f64>>(),
            (w as &dyn Any).downcast_ref::<Matrix<f64>>(),
        ) {
            let total = Arch::new().dispatch(ScoreContraction {
                mu: mu.as_slice(),
                p: ScoresF64 {
                    w: w.as_slice(),
                    theta,
                    shift,
                },
                q: None,
            });
            return E::Scalar::from_f64(total);
        }
        let (mu, w, n1) = (mu.as_slice(), w.as_slice(), shift.len());
        let mut total = Lanes::new();
        let rows = mu
            .chunks_exact(n1)
            .zip(w.chunks_exact(n1))
            .zip(theta.chunks_exact(n1));
        for ((mu_row, w_row), theta_row) in rows {
            let arcs = mu_row.iter().zip(w_row).zip(theta_row).zip(shift);
            for (m, (((mu, w), &t), &c)) in arcs.enumerate() {
                if !(mu.is_zero() || w.is_zero()) {
                    total.add(m, mu.clone() * E::Scalar::from_f64(t - c));
                }
            }
        }
        total.sum()
    }

    /// Shannon entropy `H(p) = ln Z − Σ_e μ_e ln w_e` over (labeled) trees,
    /// with `0 ln 0 = 0` for forbidden arcs, computed as
    /// `ln det L(w') − Σ_e μ_e ln w'_e` so the column shifts cancel exactly.
    /// `O(n³)`, sharing the factorisation.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    ///
    /// ```
    /// use spantree_core::{Graph, Model, Rooting};
    /// use spantree_faer::F64;
    /// // Three trees of weights 2, 3 and 8 out of 13.
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let h = Model::new(F64, &g, Rooting::Multi)?.entropy()?;
    /// let expected: f64 = [2.0, 3.0, 8.0].iter().map(|w: &f64| -(w / 13.0) * (w / 13.0).ln()).sum();
    /// assert!((h - expected).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn entropy(&self) -> Result<E::Scalar> {
        let ln_det = self.ln_det_scaled()?;
        // Built from scores: the contraction of `contract_label_marginals`
        // in the same lanes, the log-weights read off the scores in passing
        // (no matrix of them, no logarithm).
        let mu = self.marginals_kept()?;
        if let Some((theta, shift)) = self.scores_and_shift() {
            return Ok(ln_det - self.expected_shifted_score(&mu, theta, shift));
        }
        let mu = mu.as_slice();
        let n1 = self.n() + 1;
        let mut total = Lanes::new();
        let add = |l: usize, k: usize, x: E::Scalar| {
            let m = self.label_share_times(l, k, &mu[k]);
            if !m.is_zero() {
                total.add(k % n1, m * x);
            }
        };
        if self.visit_label_log_weights(true, add) {
            return Ok(ln_det - total.sum());
        }
        let expected_log_weight = self.contract_label_marginals(&self.scaled_log_weights())?;
        Ok(ln_det - expected_log_weight)
    }

    /// `∂H/∂θ = −Σ_e θ_e ∂μ_e/∂θ` (the explicit terms `μ − μ` cancel): reverse
    /// mode seeded with `−ln w'`, `O(n³)`.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    pub fn grad_entropy(&self) -> Result<PerLabel<E::Scalar>> {
        let n1 = self.n() + 1;
        if let Some((theta, _)) = self.scores_and_shift() {
            // `−θ` on the arcs of nonzero weight, `0` elsewhere: one
            // branch-free pass, no zeroed matrix to overwrite, and no
            // vector around the one seed.
            let w = self.factors.weights().as_slice();
            let seed = w.iter().zip(theta).map(|(w, &t)| {
                if w.is_zero() {
                    E::Scalar::zero()
                } else {
                    E::Scalar::from_f64(-t)
                }
            });
            let seed = Matrix::from_row_major(n1, n1, seed.collect());
            return self.label_marginals_vjp(std::slice::from_ref(&seed));
        }
        let seeds = match self.label_score_matrices(true) {
            Some(seeds) => seeds,
            None => seeds_from(&self.seed_log_weights(), |x| -x.clone()),
        };
        self.label_marginals_vjp(&seeds)
    }

    fn check_same_graph(&self, q: &Model<E>) -> Result<()> {
        let labels = |m: &Model<E>| m.labels();
        if q.n() != self.n() {
            return Err(Error::Mismatch {
                what: "words of q against p",
                expected: self.n(),
                found: q.n(),
            });
        }
        if labels(q) != labels(self) {
            return Err(Error::Mismatch {
                what: "labels of q against p",
                expected: labels(self),
                found: labels(q),
            });
        }
        if q.rooting() != self.rooting() {
            return Err(Error::Mismatch {
                what: "rooting of q against p (0 single, 1 multi)",
                expected: (self.rooting() == Rooting::Multi) as usize,
                found: (q.rooting() == Rooting::Multi) as usize,
            });
        }
        Ok(())
    }

    /// The first arc to which `p` (self) gives mass but `q` gives weight zero.
    fn forbidden_by(&self, q_logs: &[Matrix<Option<E::Scalar>>]) -> Result<Option<ArcRef>> {
        let mu = self.marginals_kept()?;
        let labeled = self.is_labeled();
        let n1 = mu.rows();
        for (l, ql) in q_logs.iter().enumerate().take(self.labels()) {
            for h in 0..n1 {
                for m in 0..n1 {
                    let k = h * n1 + m;
                    let ml = self.label_share_times(l, k, &mu.as_slice()[k]);
                    if !ml.is_zero() && ql[(h, m)].is_none() {
                        return Ok(Some(ArcRef {
                            head: h,
                            dependent: m,
                            label: labeled.then_some(l),
                        }));
                    }
                }
            }
        }
        Ok(None)
    }

    /// Cross-entropy `H(p, q) = ln Z_q − Σ_e μ^p_e ln w^q_e` of `q` relative to
    /// `p = self` on the same graph shape, `O(n³)` per model.
    ///
    /// # Errors
    /// [`Error::Mismatch`] when the graphs differ in size, labels or rooting;
    /// as [`Model::marginals`] for either model.
    pub fn cross_entropy(&self, q: &Model<E>) -> Result<Divergence<E::Scalar>> {
        self.check_same_graph(q)?;
        let q_logs = q.scaled_log_weights();
        if let Some(arc) = self.forbidden_by(&q_logs)? {
            return Ok(Divergence::Infinite { arc });
        }
        let expected = self.contract_label_marginals(&q_logs)?;
        Ok(Divergence::Finite(q.ln_det_scaled()? - expected))
    }

    /// `KL(p ‖ q) = ln Z_q − ln Z_p + Σ_e μ^p_e (ln w^p_e − ln w^q_e)`, `O(n³)` per model.
    ///
    /// # Errors
    /// As [`Model::cross_entropy`].
    pub fn kl_divergence(&self, q: &Model<E>) -> Result<Divergence<E::Scalar>> {
        self.check_same_graph(q)?;
        if let (Some(p_scores), Some(q_scores)) = (self.scores_and_shift(), q.scores_and_shift()) {
            return self.kl_from_scores(q, p_scores, q_scores);
        }
        let q_logs = q.scaled_log_weights();
        if let Some(arc) = self.forbidden_by(&q_logs)? {
            return Ok(Divergence::Infinite { arc });
        }
        let ratio = log_ratio(&self.scaled_log_weights(), &q_logs);
        let expected = self.contract_label_marginals(&ratio)?;
        Ok(Divergence::Finite(
            q.ln_det_scaled()? - self.ln_det_scaled()? + expected,
        ))
    }

    /// [`Model::kl_divergence`] of two models built from one score per arc
    /// (`(scores, shifts)` of each, [`Model::scores_and_shift`]): the same
    /// terms in the same [`Lanes`] as the general route, in one pass over
    /// the scores (one vector pass on `f64`, [`ScoreContraction`]), without
    /// forming the `(n+1) × (n+1)` matrices of log-weights and their ratio.
    /// `O(n²)` after the factorisations.
    fn kl_from_scores(
        &self,
        q: &Model<E>,
        (p_theta, p_shift): (&[f64], &[f64]),
        (q_theta, q_shift): (&[f64], &[f64]),
    ) -> Result<Divergence<E::Scalar>> {
        let mu = self.marginals_kept()?;
        let n1 = self.n() + 1;
        let (wp, wq) = (
            self.factors.weights().as_slice(),
            q.factors.weights().as_slice(),
        );
        let mass_on = |(m, w): (&E::Scalar, &E::Scalar)| !m.is_zero() & w.is_zero();
        // A branch-free sweep first (it vectorises); the search only then.
        let forbidden = mu
            .as_slice()
            .iter()
            .zip(wq)
            .fold(false, |f, a| f | mass_on(a));
        let first = || mu.as_slice().iter().zip(wq).position(mass_on);
        if let Some(k) = forbidden.then(first).flatten() {
            return Ok(Divergence::Infinite {
                arc: ArcRef {
                    head: k / n1,
                    dependent: k % n1,
                    label: None,
                },
            });
        }
        let ln_dets = q.ln_det_scaled()? - self.ln_det_scaled()?;
        if let (Some(mu), Some(wp), Some(wq)) = (
            (&*mu as &dyn Any).downcast_ref::<Matrix<f64>>(),
            (self.factors.weights() as &dyn Any).downcast_ref::<Matrix<f64>>(),
            (q.factors.weights() as &dyn Any).downcast_ref::<Matrix<f64>>(),
        ) {
            let expected = Arch::new().dispatch(ScoreContraction {
                mu: mu.as_slice(),
                p: ScoresF64 {
                    w: wp.as_slice(),
                    theta: p_theta,
                    shift: p_shift,
                },
                q: Some(ScoresF64 {
                    w: wq.as_slice(),
                    theta: q_theta,
                    shift: q_shift,
                }),
            });
            return Ok(Divergence::Finite(ln_dets + E::Scalar::from_f64(expected)));
        }
        let mut expected = Lanes::new();
        let rows = mu
            .as_slice()
            .chunks_exact(n1)
            .zip(wp.chunks_exact(n1).zip(wq.chunks_exact(n1)))
            .zip(p_theta.chunks_exact(n1).zip(q_theta.chunks_exact(n1)));
        for ((mu_row, (wp_row, wq_row)), (tp_row, tq_row)) in rows {
            let arcs = mu_row
                .iter()
                .zip(wp_row.iter().zip(wq_row))
                .zip(tp_row.iter().zip(tq_row))
                .zip(p_shift.iter().zip(q_shift));
            for (m, (((mu, (a, b)), (&tp, &tq)), (&cp, &cq))) in arcs.enumerate() {
                if !(mu.is_zero() || a.is_zero() || b.is_zero()) {
                    let ratio = E::Scalar::from_f64(tp - cp) - E::Scalar::from_f64(tq - cq);
                    expected.add(m, mu.clone() * ratio);
                }
            }
        }
        Ok(Divergence::Finite(ln_dets + expected.sum()))
    }

    /// Gradients of `H(p, q)` with respect to the scores of `p` (reverse mode
    /// seeded with `−ln w^q`) and of `q` (`μ^q − μ^p`), `O(n³)`.
    ///
    /// # Errors
    /// [`Error::InfiniteDivergence`] naming an arc where `H(p, q) = +∞`; as
    /// [`Model::cross_entropy`].
    pub fn grad_cross_entropy(&self, q: &Model<E>) -> Result<GradientPair<E::Scalar>> {
        self.check_same_graph(q)?;
        self.finite_or_error(&q.scaled_log_weights())?;
        let q_logs = q.seed_log_weights();
        let wrt_p = self.label_marginals_vjp(&seeds_from(&q_logs, |x| -x.clone()))?;
        Ok(GradientPair {
            wrt_p,
            wrt_q: self.marginal_gap(q)?,
        })
    }

    /// Gradients of `KL(p ‖ q)` with respect to the scores of `p` (reverse
    /// mode seeded with `ln w^p − ln w^q`) and of `q` (`μ^q − μ^p`), `O(n³)`.
    ///
    /// # Errors
    /// As [`Model::grad_cross_entropy`].
    pub fn grad_kl_divergence(&self, q: &Model<E>) -> Result<GradientPair<E::Scalar>> {
        self.check_same_graph(q)?;
        self.finite_or_error(&q.scaled_log_weights())?;
        let ratio = log_ratio(&self.seed_log_weights(), &q.seed_log_weights());
        Ok(GradientPair {
            wrt_p: self.label_marginals_vjp(&seeds_from(&ratio, Clone::clone))?,
            wrt_q: self.marginal_gap(q)?,
        })
    }

    /// `μ^q − μ^p` (label marginals), the gradient of `H(p, q)` and of
    /// `KL(p ‖ q)` with respect to the scores of `q`. Where an arc is nearly
    /// certain under both, `μ^q_e − μ^p_e` is a tiny difference of two
    /// numbers near `1` that `f64` cannot hold apart; every column of the
    /// difference sums to zero (and, single-root, the root row), so that
    /// entry is taken as minus the sum of the others, each a difference of
    /// small marginals (as [`Model::marginals_vjp`] balances its columns).
    /// `O(|labels| n²)`.
    fn marginal_gap(&self, q: &Model<E>) -> Result<PerLabel<E::Scalar>> {
        let p_mu = self.label_marginals()?;
        let mut gap = difference(&q.label_marginals()?, &p_mu);
        crate::gradient::balance(&mut gap, &p_mu, self.rooting());
        Ok(gap)
    }

    fn finite_or_error(&self, q_logs: &[Matrix<Option<E::Scalar>>]) -> Result<()> {
        match self.forbidden_by(q_logs)? {
            Some(arc) => Err(Error::InfiniteDivergence { arc }),
            None => Ok(()),
        }
    }

    /// Rényi entropy `H_α = (ln Z(w^α) − α ln Z(w)) / (1 − α)` for `α ≥ 0`
    /// ([§1.3](crate::mathematics)): `α = 0` gives the log of the number of trees in the
    /// support, `α = 1` Shannon's entropy (its limit). One more `O(n³)`
    /// factorisation, of the graph of `w^α`. Near `α = 1` the quotient loses
    /// digits to cancellation (about `log10(1/|1 − α|)`). Non-increasing in `α`.
    ///
    /// `α = ∞` gives the min-entropy `−ln max_d p(d)` ([`Model::min_entropy`]).
    ///
    /// # Errors
    /// [`Error::Parameter`] for `α` negative or NaN; as [`Model::min_entropy`] for `α = ∞`;
    /// [`Error::Unsupported`] for models without an `f64` graph; as
    /// [`Model::log_partition`] for both models.
    pub fn renyi_entropy(&self, alpha: f64) -> Result<E::Scalar> {
        if alpha == f64::INFINITY {
            return Ok(E::Scalar::from_f64(self.min_entropy()?));
        }
        if alpha.is_nan() || alpha < 0.0 {
            return Err(Error::Parameter {
                what: "the Rényi order α",
                domain: "≥ 0 (∞ allowed)",
                value: alpha,
            });
        }
        if alpha == 1.0 {
            return self.entropy();
        }
        let ln_z_alpha = self.powered(alpha)?.log_partition_scalar()?;
        let a = E::Scalar::from_f64(alpha);
        let ln_z = self.log_partition_scalar()?;
        Ok((ln_z_alpha - a.clone() * ln_z) / (E::Scalar::one() - a))
    }

    /// `‖p‖_k = (Σ_d p(d)^k)^{1/k} = exp((ln Z(w^k) − k ln Z(w)) / k)` for `k > 0`.
    /// One more `O(n³)` factorisation.
    ///
    /// # Errors
    /// [`Error::Parameter`] for `k ≤ 0`, NaN or infinite; as
    /// [`Model::renyi_entropy`].
    pub fn lp_norm(&self, k: f64) -> Result<E::Scalar> {
        if !(k > 0.0 && k.is_finite()) {
            return Err(Error::Parameter {
                what: "the norm order k",
                domain: "finite and > 0",
                value: k,
            });
        }
        let ln_z_k = self.powered(k)?.log_partition_scalar()?;
        let kk = E::Scalar::from_f64(k);
        let ln_z = self.log_partition_scalar()?;
        Ok(((ln_z_k - kk.clone() * ln_z) / kk).exp())
    }

    fn powered(&self, alpha: f64) -> Result<Model<E>> {
        let graph = self
            .graph()
            .ok_or(Error::Unsupported("a zeroth-order quantity (no f64 graph)"))?;
        Model::new(self.engine().clone(), &graph.powered(alpha), self.rooting())
    }
}

/// Gradients of a function of two distributions `p` and `q`, with respect to
/// the scores of each (one matrix per label).
#[derive(Clone, Debug, PartialEq)]
pub struct GradientPair<S> {
    /// With respect to the scores of `p`.
    pub wrt_p: PerLabel<S>,
    /// With respect to the scores of `q`.
    pub wrt_q: PerLabel<S>,
}

fn seeds_from<S: Scalar>(a: &[Matrix<Option<S>>], f: impl Fn(&S) -> S) -> Vec<Matrix<S>> {
    a.iter()
        .map(|m| m.map(|x| x.as_ref().map_or_else(S::zero, &f)))
        .collect()
}

fn log_ratio<S: Scalar>(
    p: &[Matrix<Option<S>>],
    q: &[Matrix<Option<S>>],
) -> Vec<Matrix<Option<S>>> {
    p.iter()
        .zip(q)
        .map(|(a, b)| {
            Matrix::from_fn(a.rows(), a.cols(), |i, j| match (&a[(i, j)], &b[(i, j)]) {
                (Some(x), Some(y)) => Some(x.clone() - y.clone()),
                _ => None,
            })
        })
        .collect()
}

fn difference<S: Scalar>(a: &[Matrix<S>], b: &[Matrix<S>]) -> PerLabel<S> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            Matrix::from_fn(x.rows(), x.cols(), |i, j| {
                x[(i, j)].clone() - y[(i, j)].clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::by_lanes;

    /// A deterministic stream in `[0, 1)`.
    fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut stream = crate::testing::stream(seed);
        move || 0.5 * (stream() + 1.0)
    }

    /// The vector path, under every instruction set, adds the same terms to
    /// the same partial sums as the scalar definition (arc `h → m` to sum `m mod 8`, skipping zero
    /// weights and marginals), so the two agree bit for bit, tails of every
    /// length and forbidden arcs included.
    #[test]
    fn score_contractions_are_the_lane_sums() {
        for n1 in [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 37] {
            let mut u = uniform(n1 as u64 + 7);
            let k = n1 * n1;
            let w: Vec<f64> = (0..k).map(|_| if u() < 0.2 { 0.0 } else { u() }).collect();
            let mu: Vec<f64> = (0..k)
                .map(|i| if w[i] == 0.0 || u() < 0.1 { 0.0 } else { u() })
                .collect();
            let theta: Vec<f64> = (0..k)
                .map(|i| {
                    if w[i] == 0.0 {
                        f64::NEG_INFINITY
                    } else {
                        40.0 * u() - 20.0
                    }
                })
                .collect();
            let shift: Vec<f64> = (0..n1).map(|_| 10.0 * u()).collect();
            let mut lanes = Lanes::<f64>::new();
            for i in 0..k {
                if mu[i] != 0.0 && w[i] != 0.0 {
                    lanes.add(i % n1, mu[i] * (theta[i] - shift[i % n1]));
                }
            }
            let expected = lanes.sum();
            let p = ScoresF64 {
                w: &w,
                theta: &theta,
                shift: &shift,
            };
            for fast in by_lanes(ScoreContraction {
                mu: &mu,
                p,
                q: None,
            }) {
                assert_eq!(fast.to_bits(), expected.to_bits(), "n1 = {n1}");
            }
            // KL: `q` forbids some arcs `p` allows (their terms are skipped).
            let wq: Vec<f64> = w.iter().map(|&x| if u() < 0.1 { 0.0 } else { x }).collect();
            let tq: Vec<f64> = (0..k).map(|_| 40.0 * u() - 20.0).collect();
            let cq: Vec<f64> = (0..n1).map(|_| 10.0 * u()).collect();
            let mut lanes = Lanes::<f64>::new();
            for i in 0..k {
                if mu[i] != 0.0 && w[i] != 0.0 && wq[i] != 0.0 {
                    let ratio = (theta[i] - shift[i % n1]) - (tq[i] - cq[i % n1]);
                    lanes.add(i % n1, mu[i] * ratio);
                }
            }
            let expected = lanes.sum();
            let q = Some(ScoresF64 {
                w: &wq,
                theta: &tq,
                shift: &cq,
            });
            for fast in by_lanes(ScoreContraction { mu: &mu, p, q }) {
                assert_eq!(fast.to_bits(), expected.to_bits(), "KL, n1 = {n1}");
            }
        }
    }

    /// The lanes' sum is the sum: exact on integers, whatever the keys.
    #[test]
    fn lanes_sum_every_term_once() {
        let mut lanes = Lanes::<f64>::new();
        for m in 0..100 {
            lanes.add(m, m as f64);
        }
        assert_eq!(lanes.sum(), 4950.0);
    }
}
