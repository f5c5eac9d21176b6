//! Reverse mode through the marginals, written by hand ([§1.5](crate::mathematics)): the
//! gradient of any scalar function of the marginals in `O(n³)`, whatever the
//! number of features.

use crate::engine::{Engine, Factors, PerLabel};
use crate::error::{ArcRef, Error, Numerical, Result};
use crate::laplacian::{weight_gradient, weight_gradient_adjoint};
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;
use pulp::{Arch, Simd, WithSimd};
use std::borrow::Cow;

impl<E: Engine> Model<E> {
    /// The vector–Jacobian product of the marginals with respect to the
    /// scores: `v_f = Σ_e ḡ_e ∂μ_e/∂θ_f` for a seed `ḡ` in the `(n+1) × (n+1)`
    /// layout. For any `F(μ)`, seeding `ḡ = ∂F/∂μ` gives `∂F/∂θ` (add any
    /// explicit dependence of `F` on `θ` yourself); divide by `w_f` for
    /// `∂F/∂w_f`.
    ///
    /// With `μ_e = w_e G_e(X)` and `X = L⁻¹` (`G` as in
    /// [`laplacian::weight_gradient`](crate::laplacian::weight_gradient)):
    /// `v_f = w_f (ḡ_f G_f − [weight_gradient(X Cᵀ X)]_f)`, where
    /// `C = weight_gradient_adjoint(ḡ ⊙ w)` collects the adjoint of `X`, and
    /// `dX = −X dL X` turns it into the adjoint of `L`, `L̄ = −Xᵀ C Xᵀ`
    /// (which `weight_gradient` reads transposed, hence `X Cᵀ X`). Cost: the inverse (once
    /// per model), then two `O(n³)` solves with the existing factorisation and
    /// `O(n²)` glue; entries of the seed on forbidden arcs are ignored.
    ///
    /// # Errors
    /// As [`Model::marginals`].
    ///
    /// ```
    /// use spantree_core::{Graph, Matrix, Model, Rooting};
    /// use spantree_faer::F64;
    /// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
    /// let model = Model::new(F64, &g, Rooting::Multi)?;
    /// // Seed on arc 2 → 1: the derivative of its marginal 8/13 with respect to
    /// // its own score is μ(1 − μ), as for any arc of a single-tree-choice.
    /// let mut seed = Matrix::zeros(3, 3);
    /// seed[(2, 1)] = 1.0;
    /// let v = model.marginals_vjp(&seed)?;
    /// let mu = 8.0 / 13.0;
    /// assert!((v[(2, 1)] - mu * (1.0 - mu)).abs() < 1e-12);
    /// # Ok::<(), spantree_core::Error>(())
    /// ```
    pub fn marginals_vjp(&self, seed: &Matrix<E::Scalar>) -> Result<Matrix<E::Scalar>> {
        let (v, error) = self.vjp_with_error(seed)?;
        if let Some(error) = error {
            self.check_gradient(error, norm(std::slice::from_ref(&v)))?;
        }
        Ok(v)
    }

    /// [`Model::marginals_vjp`] unchecked, with the estimated absolute error
    /// of the product when the factors estimate it
    /// ([`Factors::vjp_accuracy`]): the callers compare it with the
    /// gradient they return.
    fn vjp_with_error(&self, seed: &Matrix<E::Scalar>) -> Result<(Matrix<E::Scalar>, Option<f64>)> {
        self.ready()?;
        let mut v = [self.factors.marginals_vjp(seed)?];
        if !crate::model::all_finite(v[0].as_slice()) {
            return Err(Numerical::NotFinite.into());
        }
        let error = self.factors.vjp_accuracy(seed, &v[0]).map(|a| a.error);
        let mu = self.marginals_kept()?;
        balance(&mut v, std::slice::from_ref(&*mu), self.rooting());
        let [v] = v;
        Ok((v, error))
    }

    /// The gradient with respect to the scores of a function `F` of the label
    /// marginals `μ_{eℓ} = μ_e s_{eℓ}`, given `ḡ_{eℓ} = ∂F/∂μ_{eℓ}` as one
    /// matrix per label (one in all for unlabeled graphs, or to seed the arc
    /// marginals of a labeled graph). With `ḡ̄_e = Σ_ℓ s_{eℓ} ḡ_{eℓ}` and `v` the
    /// [`Model::marginals_vjp`] of `ḡ̄`:
    /// `∂F/∂θ_{eℓ} = s_{eℓ} (v_e + μ_e (ḡ_{eℓ} − ḡ̄_e))`.
    /// One matrix per label comes back. `O(n³ + |labels| n²)`.
    ///
    /// # Errors
    /// [`Error::Mismatch`] for a seed count other than `1` or the label
    /// count; as [`Model::marginals`].
    pub fn label_marginals_vjp(&self, seeds: &[Matrix<E::Scalar>]) -> Result<PerLabel<E::Scalar>> {
        let Some(shares) = &self.prepared.shares else {
            if seeds.len() != 1 {
                return Err(Error::Mismatch {
                    what: "seeds for an unlabeled graph",
                    expected: 1,
                    found: seeds.len(),
                });
            }
            return Ok(PerLabel::new(vec![self.marginals_vjp(&seeds[0])?]));
        };
        let labels = shares.labels();
        if seeds.len() != 1 && seeds.len() != labels {
            return Err(Error::Mismatch {
                what: "seeds against labels",
                expected: labels,
                found: seeds.len(),
            });
        }
        let seed = |l: usize| &seeds[if seeds.len() == 1 { 0 } else { l }];
        // A large offset `c` common to the root seeds (root scores far below
        // the arcs' in an entropy seed) is taken out before the shares
        // average the seeds, where it would cost `|c| ε` per arc:
        // single-root, every tree has one root arc, so it changes nothing;
        // multi-root, it comes back as `c s ⊙ J 1_root`.
        // The label marginals `μ_e s_{eℓ}` are formed where they are read
        // (as `Model::label_marginals` forms them), no matrix per label.
        let mu = self.marginals_kept()?;
        let label_mu = |l: usize, k: usize| self.label_share_times(l, k, &mu.as_slice()[k]);
        let n1 = self.n() + 1;
        let root_cells = || (0..labels).flat_map(|l| (1..n1).map(move |m| (l, m)));
        let mass = root_cells().fold(E::Scalar::zero(), |a, (l, m)| a + label_mu(l, m));
        let mut offset = E::Scalar::zero();
        if !mass.is_zero() {
            let weighted = root_cells().fold(E::Scalar::zero(), |a, (l, m)| {
                a + label_mu(l, m) * seed(l)[(0, m)].clone()
            });
            offset = weighted / mass;
        }
        let spread = root_cells().fold(0.0f64, |a, (l, m)| {
            a.max((seed(l)[(0, m)].clone() - offset.clone()).to_f64().abs())
        });
        let split = offset.to_f64().abs() > spread;
        // The seeds less the offset on the root arcs: copied only then.
        let own: Cow<'_, [Matrix<E::Scalar>]> = if split {
            Cow::Owned(
                seeds
                    .iter()
                    .map(|s| {
                        let mut s = s.clone();
                        for m in 1..n1 {
                            s[(0, m)] -= offset.clone();
                        }
                        s
                    })
                    .collect(),
            )
        } else {
            Cow::Borrowed(seeds)
        };
        let seed = |l: usize| &own[if own.len() == 1 { 0 } else { l }];
        // One seed for every label (a function of the arc marginals alone):
        // `ḡ̄ = ḡ` and the label terms vanish, so `∂F/∂θ_{eℓ} = s_{eℓ} v_e`
        // exactly, without averaging the seed or forming the label terms.
        let one_seed = seeds.len() == 1;
        let mean = if one_seed {
            Cow::Borrowed(seed(0))
        } else {
            let mut mean = Matrix::zeros(n1, n1);
            for (l, share) in shares.iter().enumerate() {
                for ((out, s), g) in mean
                    .as_mut_slice()
                    .iter_mut()
                    .zip(share.as_slice())
                    .zip(seed(l).as_slice())
                {
                    *out += s.clone() * g.clone();
                }
            }
            Cow::Owned(mean)
        };
        // The estimated errors of the products (dense `f64` engines) are
        // compared with the gradients returned, not with the products: the
        // explicit label terms below may carry the norm.
        let (v, mut error) = self.vjp_with_error(&mean)?;
        let mut grads = PerLabel::zeros(labels, self.n());
        if one_seed {
            for (l, share) in shares.iter().enumerate() {
                for ((out, s), x) in grads[l]
                    .as_mut_slice()
                    .iter_mut()
                    .zip(share.as_slice())
                    .zip(v.as_slice())
                {
                    if !s.is_zero() {
                        *out = x.clone() * s.clone();
                    }
                }
            }
        } else {
            label_terms(&mut grads, shares, &seed, mu.as_slice(), v.as_slice());
        }
        if split && self.rooting() == crate::graph::Rooting::Multi {
            let ones = Matrix::from_fn(n1, n1, |h, _| {
                if h == 0 {
                    E::Scalar::one()
                } else {
                    E::Scalar::zero()
                }
            });
            let (per_root, root_error) = self.vjp_with_error(&ones)?;
            error = error
                .zip(root_error)
                .map(|(e, r)| e + offset.to_f64().abs() * r);
            for (l, share) in shares.iter().enumerate() {
                for (c, s) in share.as_slice().iter().enumerate() {
                    let add = offset.clone() * per_root.as_slice()[c].clone() * s.clone();
                    grads[l].as_mut_slice()[c] += add;
                }
            }
        }
        if labels == 1 {
            let label_mu = [Matrix::from_fn(n1, n1, |h, m| label_mu(0, h * n1 + m))];
            balance(&mut grads, &label_mu, self.rooting());
        } else {
            // Only an arc of marginal `μ_e ≥ 1/2` can hold a label of
            // marginal above `1/2` (the shares are at most `1`).
            balance_by(
                &mut grads,
                |l, h, m| label_mu(l, h * n1 + m).to_f64() > 0.5,
                |h, m| mu[(h, m)].to_f64() >= 0.5,
                self.rooting(),
            );
        }
        if let Some(error) = error {
            self.check_gradient(error, norm(&grads))?;
        }
        Ok(grads)
    }
}

/// The cells of the arcs taken at once by [`label_terms`]: every label's
/// prefix sums of a block stay in cache (`2 · 37 · 64` numbers for UD's 37
/// labels).
const BLOCK: usize = 64;

/// The label terms of [`Model::label_marginals_vjp`] for one seed per
/// label: `∂F/∂θ_{eℓ} = s_{eℓ} (v_e + μ_e (ḡ_{eℓ} − ḡ̄_e))`, where
/// `ḡ_{eℓ} − ḡ̄_e = Σ_{k≠ℓ} s_{ek} (ḡ_{eℓ} − ḡ_{ek})` (the shares sum to
/// one) is formed as `ḡ_{eℓ} S_{−ℓ} − M_{−ℓ}` from prefix and suffix sums
/// over the other labels, `S_{−ℓ} = Σ_{k≠ℓ} s_k` and
/// `M_{−ℓ} = Σ_{k≠ℓ} s_k ḡ_k`. Read as `ḡ_{eℓ} − ḡ̄_e`, the difference is
/// `1 − s_ℓ` times its terms where one label holds nearly all of an arc's
/// weight, and lost `log₂ 1/(1 − s_ℓ)` bits (GE kept 29.4 bits entry-wise
/// with word-arc and label scores spread over ±50, `tests/honest.rs`; 51.3
/// now): both terms here shrink with the other labels' share. Each arc's
/// sums run over the labels in order (prefix) and in reverse (suffix),
/// `BLOCK` arcs at a time, label by label within a block: contiguous rows,
/// no allocation per arc. `grads` must be zero. `O(|labels| n²)`.
fn label_terms<'a, S: Scalar>(
    grads: &mut PerLabel<S>,
    shares: &PerLabel<S>,
    seed: &impl Fn(usize) -> &'a Matrix<S>,
    mu: &[S],
    v: &[S],
) {
    Arch::new().dispatch(LabelTerms {
        grads,
        shares,
        seed,
        mu,
        v,
        _a: std::marker::PhantomData,
    })
}

/// The arguments of [`label_terms`], run under one instruction-set
/// dispatch so that the element-wise loops over a block (which the
/// compiler vectorises for `f64`) use the widest vectors the CPU has.
struct LabelTerms<'s, 'a, S, F> {
    grads: &'s mut PerLabel<S>,
    shares: &'s PerLabel<S>,
    seed: &'s F,
    mu: &'s [S],
    v: &'s [S],
    _a: std::marker::PhantomData<&'a ()>,
}

impl<'a, S: Scalar, F: Fn(usize) -> &'a Matrix<S>> WithSimd for LabelTerms<'_, 'a, S, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, _simd: Sm) {
        let LabelTerms {
            grads,
            shares,
            seed,
            mu,
            v,
            ..
        } = self;
        let labels = shares.labels();
        let cells = mu.len();
        // Per label and block cell: the prefix sums `Σ_{k<ℓ} s_k`, `Σ_{k<ℓ} s_k ḡ_k`.
        let mut below = vec![S::zero(); 2 * labels * BLOCK];
        let mut acc = vec![S::zero(); 2 * BLOCK];
        for start in (0..cells).step_by(BLOCK) {
            let end = (start + BLOCK).min(cells);
            let len = end - start;
            let (below_s, below_m) = below.split_at_mut(labels * BLOCK);
            let (s_sum, m_sum) = acc.split_at_mut(BLOCK);
            let (s_sum, m_sum) = (&mut s_sum[..len], &mut m_sum[..len]);
            s_sum.iter_mut().for_each(|x| *x = S::zero());
            m_sum.iter_mut().for_each(|x| *x = S::zero());
            for l in 0..labels {
                let share = &shares[l].as_slice()[start..end];
                let g = &seed(l).as_slice()[start..end];
                let bs = &mut below_s[l * BLOCK..l * BLOCK + len];
                let bm = &mut below_m[l * BLOCK..l * BLOCK + len];
                let cols = bs.iter_mut().zip(bm.iter_mut()).zip(s_sum.iter_mut());
                for ((((bs, bm), ss), ms), (s, g)) in
                    cols.zip(m_sum.iter_mut()).zip(share.iter().zip(g))
                {
                    *bs = ss.clone();
                    *bm = ms.clone();
                    *ss += s;
                    *ms += s.clone() * g.clone();
                }
            }
            let (above_s, above_m) = (s_sum, m_sum);
            above_s.iter_mut().for_each(|x| *x = S::zero());
            above_m.iter_mut().for_each(|x| *x = S::zero());
            let (mu, v) = (&mu[start..end], &v[start..end]);
            for l in (0..labels).rev() {
                let share = &shares[l].as_slice()[start..end];
                let g = &seed(l).as_slice()[start..end];
                let bs = &below_s[l * BLOCK..l * BLOCK + len];
                let bm = &below_m[l * BLOCK..l * BLOCK + len];
                let out = &mut grads[l].as_mut_slice()[start..end];
                // Labels of zero share are skipped (their seed may be
                // anything): selects rather than a branch, so that `f64`
                // vectorises.
                let cols = out
                    .iter_mut()
                    .zip(above_s.iter_mut())
                    .zip(above_m.iter_mut());
                let inputs = share
                    .iter()
                    .zip(g)
                    .zip(bs.iter().zip(bm))
                    .zip(mu.iter().zip(v));
                for (((out, a_s), a_m), (((s, g), (bs, bm)), (mu, v))) in cols.zip(inputs) {
                    let keep = !s.is_zero();
                    let others_s = bs.clone() + a_s.clone();
                    let others_m = bm.clone() + a_m.clone();
                    let mut d = g.clone() * others_s - others_m;
                    d *= mu;
                    d += v;
                    let x = d * s.clone();
                    let sum_s = a_s.clone() + s.clone();
                    let sum_m = a_m.clone() + s.clone() * g.clone();
                    *out = if keep { x } else { S::zero() };
                    *a_s = if keep { sum_s } else { a_s.clone() };
                    *a_m = if keep { sum_m } else { a_m.clone() };
                }
            }
        }
    }
}

/// The Frobenius norm of matrices, in `f64`, as the refusal of
/// [`Model::check_gradient`] reads it: the squares summed in eight
/// interleaved partial sums (a loop the compiler vectorises; a sum in order
/// is one dependent chain) and the result lowered by the factor
/// `1 − 2Nε` (`N` entries), which covers what the order of the sum moves
/// (at most `Nε` relative on the square root): never above the norm summed
/// in order, so the check is at least as cautious. `O(n²)` each.
/// Under one instruction-set dispatch ([`Norm`]): the eight partial sums
/// are eight lanes of one vector where the CPU has them, the same sums.
fn norm<S: Scalar>(m: &[Matrix<S>]) -> f64 {
    Arch::new().dispatch(Norm(m))
}

/// The argument of [`norm`], run under one instruction-set dispatch.
struct Norm<'a, S>(&'a [Matrix<S>]);

impl<S: Scalar> WithSimd for Norm<'_, S> {
    type Output = f64;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, _simd: Sm) -> f64 {
        norm_body(self.0)
    }
}

/// The body of [`norm`], inlined into its dispatch.
#[inline(always)]
fn norm_body<S: Scalar>(m: &[Matrix<S>]) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [0.0f64; LANES];
    let mut entries = 0usize;
    for x in m {
        let x = x.as_slice();
        entries += x.len();
        let chunks = x.chunks_exact(LANES);
        let tail = chunks.remainder();
        for chunk in chunks {
            for (l, x) in lanes.iter_mut().zip(chunk) {
                let x = x.to_f64();
                *l += x * x;
            }
        }
        for (l, x) in lanes.iter_mut().zip(tail) {
            let x = x.to_f64();
            *l += x * x;
        }
    }
    let sum = lanes.iter().sum::<f64>();
    sum.sqrt() * (1.0 - 2.0 * entries as f64 * f64::EPSILON)
}

/// The top head of each word of the row-major `(n+1) × (n+1)` marginals
/// `mu`: the first `h ≠ m`, in row order, with `μ_hm > 1/2` (a word has at
/// most one, its marginals summing to one), `usize::MAX` where none.
/// Row by row and branch-free (inlined into vectorised callers). `O(n²)`.
#[inline(always)]
pub(crate) fn top_heads<S: Scalar>(mu: &[S], n1: usize) -> Vec<usize> {
    let mut top = vec![usize::MAX; n1];
    for (h, ur) in mu.chunks_exact(n1).enumerate() {
        for (m, (t, x)) in top.iter_mut().zip(ur).enumerate() {
            *t = if first_above_half(*t, h, m, x) { h } else { *t };
        }
    }
    top
}

/// Whether row `h` holds word `m`'s top head: the first head `h ≠ m` of
/// marginal `x` above `1/2`, when no row before it did (`t`, the top head
/// so far, is `usize::MAX`). The one rule of [`top_heads`] and of
/// `expect_additive`'s pass.
#[inline(always)]
pub(crate) fn first_above_half<S: Scalar>(t: usize, h: usize, m: usize, x: &S) -> bool {
    t == usize::MAX && h != m && x.to_f64() > 0.5
}

/// [`first_above_half`] down a block of columns at once: for the `lanes`
/// words `1 + c..` of the row-major `(n+1) × (n+1)` marginals `mu`, each
/// lane's top head (as `f64`, `−1` for none) and a running value that
/// every row but the lane's top head updates, `rest ← step(rest, x, h)`
/// (`x` the row's marginals), from `0`. Whether a lane has its top head yet
/// is a mask carried down the rows, so the chain from row to row is that
/// mask's `or` and `step`, not a comparison of the top head so far.
/// Branch-free; the caller's instruction set (inlined). `O(n)` vectors.
#[inline(always)]
pub(crate) fn top_head_lanes<Sm: Simd>(
    simd: Sm,
    mu: &[f64],
    n1: usize,
    c: usize,
    mut step: impl FnMut(Sm::f64s, Sm::f64s, usize) -> Sm::f64s,
) -> ([f64; MAX_LANES], [f64; MAX_LANES]) {
    use crate::linalg::load_lanes;
    let (none, half) = (simd.splat_f64s(-1.0), simd.splat_f64s(0.5));
    let mut index = [0.0; MAX_LANES];
    for (i, x) in index.iter_mut().enumerate() {
        *x = (1 + c + i) as f64;
    }
    let columns = load_lanes(simd, &index, 0);
    let (mut top, mut rest) = (none, simd.splat_f64s(0.0));
    let mut found = simd.not_m64s(simd.equal_f64s(none, none));
    for (h, row) in mu.chunks_exact(n1).enumerate() {
        let at = simd.splat_f64s(h as f64);
        let x = load_lanes(simd, row, 1 + c);
        let qualifies = simd.and_m64s(
            simd.not_m64s(simd.equal_f64s(at, columns)),
            simd.greater_than_f64s(x, half),
        );
        let first = simd.and_m64s(simd.not_m64s(found), qualifies);
        found = simd.or_m64s(found, qualifies);
        top = simd.select_f64s(first, at, top);
        let next = step(rest, x, h);
        rest = simd.select_f64s(first, rest, next);
    }
    let lanes = Sm::F64_LANES;
    let (mut heads, mut sums) = ([0.0; MAX_LANES], [0.0; MAX_LANES]);
    Sm::as_mut_simd_f64s(&mut heads[..lanes]).0[0] = top;
    Sm::as_mut_simd_f64s(&mut sums[..lanes]).0[0] = rest;
    (heads, sums)
}

/// The most lanes of any instruction set (`f64`s in 512 bits): the bound of
/// [`top_head_lanes`]' blocks.
pub(crate) const MAX_LANES: usize = 8;

/// Imposes the identities `Σ_{h,ℓ} v_ℓ[h][m] = 0` for every word `m` (every
/// tree has one arc into `m`, so the marginals do not move when all scores
/// into `m` move together: the columns of the Jacobian sum to zero) and,
/// single-root, `Σ_{m,ℓ} v_ℓ[0][m] = 0` (one root arc): in each column the
/// entry of the (labeled) arc whose marginal exceeds `1/2` becomes minus the
/// sum of the others. Its direct value is `μ(1 − μ)`-sized, a small
/// difference when the arc is nearly certain; the others carry total
/// marginal `1 − μ < 1/2`, so their sum is at least as accurate. Exact
/// arithmetic is unchanged. `O(|labels| n²)`.
pub(crate) fn balance<S: Scalar>(
    v: &mut [Matrix<S>],
    mu: &[Matrix<S>],
    rooting: crate::graph::Rooting,
) {
    let half = 0.5;
    let mut fixed = None;
    if let ([v], [mu]) = (&mut *v, mu) {
        fixed = balance_columns(v, mu).map(|m| (0, m));
    }
    if mu.len() > 1 {
        balance_labels(
            v,
            |l, h, m| mu[l][(h, m)].to_f64() > half,
            |_, _| true,
            rooting,
            fixed,
        );
        return;
    }
    balance_root(
        v,
        |l, h, m| mu[l][(h, m)].to_f64() > half,
        |_, _| true,
        rooting,
        fixed,
    );
}

/// [`balance`] for more than one label, with the label marginals given by
/// `above_half(ℓ, h, m)`, whether `μ_ℓ[h][m]` exceeds `1/2`, asked only
/// where `candidate(h, m)` (a necessary condition, cheaper to test): the
/// same arcs rewritten with the same sums, without the matrices of label
/// marginals. `O(|labels| n²)`.
pub(crate) fn balance_by<S: Scalar>(
    v: &mut [Matrix<S>],
    above_half: impl Fn(usize, usize, usize) -> bool,
    candidate: impl Fn(usize, usize) -> bool,
    rooting: crate::graph::Rooting,
) {
    balance_labels(v, above_half, candidate, rooting, None);
}

/// The column and root passes of [`balance`] for more than one label.
fn balance_labels<S: Scalar>(
    v: &mut [Matrix<S>],
    above_half: impl Fn(usize, usize, usize) -> bool,
    candidate: impl Fn(usize, usize) -> bool,
    rooting: crate::graph::Rooting,
    mut fixed: Option<(usize, usize)>,
) {
    let (labels, n1) = (v.len(), v[0].rows());
    let mut heads = Vec::with_capacity(n1);
    for m in 1..n1 {
        heads.clear();
        heads.extend((0..n1).filter(|&h| h != m && candidate(h, m)));
        let found = (0..labels)
            .flat_map(|l| heads.iter().map(move |&h| (l, h)))
            .find(|&(l, h)| above_half(l, h, m));
        let Some((l, h)) = found else {
            continue;
        };
        let cells = || (0..labels).flat_map(move |l| (0..n1).map(move |h| (l, h)));
        let mut rest = S::zero();
        for (k, g) in cells().filter(|&c| c != (l, h)) {
            rest -= v[k][(g, m)].clone();
        }
        v[l][(h, m)] = rest;
        if h == 0 {
            fixed = Some((l, m));
        }
    }
    balance_root(v, above_half, candidate, rooting, fixed);
}

/// The root pass of [`balance`] (single-root): the root arc of label
/// marginal above `1/2`, unless the column pass `fixed` it, becomes minus
/// the sum of the other root arcs.
fn balance_root<S: Scalar>(
    v: &mut [Matrix<S>],
    above_half: impl Fn(usize, usize, usize) -> bool,
    candidate: impl Fn(usize, usize) -> bool,
    rooting: crate::graph::Rooting,
    fixed: Option<(usize, usize)>,
) {
    if rooting != crate::graph::Rooting::Single {
        return;
    }
    let (labels, n1) = (v.len(), v[0].rows());
    // The candidate words walked again for each label, not collected (an
    // allocation, 0.8% of a `grad_entropy` at `n = 10`).
    let words = || (1..n1).filter(|&m| candidate(0, m));
    let found = (0..labels)
        .flat_map(|l| words().map(move |m| (l, m)))
        .find(|&(l, m)| above_half(l, 0, m));
    if let Some((l, m)) = found {
        if fixed != Some((l, m)) {
            let cells = || (0..labels).flat_map(move |l| (1..n1).map(move |m| (l, m)));
            let mut rest = S::zero();
            for (k, j) in cells().filter(|&c| c != (l, m)) {
                rest -= v[k][(0, j)].clone();
            }
            v[l][(0, m)] = rest;
        }
    }
}

/// The column pass of [`balance`] for one label, swept along the rows
/// (every column's state side by side): in each column the first arc (in
/// the order of `h`) whose marginal exceeds `1/2` gets minus the sum of the
/// column's other entries, summed in that order, as the label-generic loop
/// does. Returns the last column whose root arc was so fixed, if any.
/// `O(n²)`.
fn balance_columns<S: Scalar>(v: &mut Matrix<S>, mu: &Matrix<S>) -> Option<usize> {
    use std::any::Any;
    let v64 = (&mut *v as &mut dyn Any).downcast_mut::<Matrix<f64>>();
    if let (Some(v), Some(mu)) = (v64, (mu as &dyn Any).downcast_ref::<Matrix<f64>>()) {
        // Measured: 3.1k instructions per `grad_entropy` at `n = 10` for
        // the element-wise loops (whose `usize` top heads keep them
        // scalar); now a block of columns in vector registers down the
        // rows ([`BalanceColumnsF64`]).
        return Arch::new().dispatch(BalanceColumnsF64 {
            v: v.as_mut_slice(),
            mu: mu.as_slice(),
            n1: mu.rows(),
        });
    }
    Arch::new().dispatch(BalanceColumns { v, mu })
}

/// [`balance_columns`] for `f64`: a block of columns `m ≥ 1` side by side
/// in one vector (`linalg::column_blocks`; blocks that overlap
/// redo their common columns the same way), down the rows in the order of
/// `h`, with each lane's top head so far as an `f64` row index (`−1`
/// where none yet): row `h` becomes it where none was, `h ≠ m` and
/// `μ_hm > 1/2` (a select), and is subtracted from the lane's sum unless
/// it is the top head (a select), so each sum skips the top entry, the
/// rows before the top head being summed before it is known. Whether a
/// lane has its top head yet is a mask carried down the rows, so the
/// chain from row to row is that mask's `or` and the sum's subtraction
/// and select (`perf annotate`: the select waited on the comparison of
/// the row index with the top head so far, five cycles a row). The same
/// selections and the same sums, bit for bit, as [`BalanceColumns`].
/// Fewer columns than lanes need the scalar instruction set. `O(n²)`, no
/// allocation.
struct BalanceColumnsF64<'a> {
    v: &'a mut [f64],
    mu: &'a [f64],
    n1: usize,
}

impl WithSimd for BalanceColumnsF64<'_> {
    type Output = Option<usize>;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> Option<usize> {
        use crate::linalg::{column_blocks, load_lanes};
        let n1 = self.n1;
        let n = n1.saturating_sub(1);
        if n == 0 {
            return None;
        }
        if n < Sm::F64_LANES || Sm::F64_LANES > MAX_LANES {
            return self.with_simd(pulp::Scalar::new());
        }
        let lanes = Sm::F64_LANES;
        let mut fixed = None;
        for c in column_blocks(n, lanes) {
            // Each row's entry is subtracted from the lane's sum unless it
            // is the top head.
            let v = &*self.v;
            let (heads, sums) = top_head_lanes(simd, self.mu, n1, c, |rest, _, h| {
                simd.sub_f64s(rest, load_lanes(simd, &v[h * n1..(h + 1) * n1], 1 + c))
            });
            for (i, (&t, &r)) in heads.iter().zip(&sums).take(lanes).enumerate() {
                if t < 0.0 {
                    continue;
                }
                let (t, m) = (t as usize, 1 + c + i);
                self.v[t * n1 + m] = r;
                if t == 0 {
                    fixed = Some(m);
                }
            }
        }
        fixed
    }
}

/// The arguments of [`balance_columns`] for other scalars than `f64`, run
/// under one instruction-set dispatch: row by row, every column's first arc
/// above `1/2` and every column's sum are kept side by side in branch-free
/// element-wise loops, each sum in the order of `h`.
struct BalanceColumns<'a, S> {
    v: &'a mut Matrix<S>,
    mu: &'a Matrix<S>,
}

impl<S: Scalar> WithSimd for BalanceColumns<'_, S> {
    type Output = Option<usize>;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, _simd: Sm) -> Option<usize> {
        let n1 = self.mu.rows();
        let (mu, v) = (self.mu.as_slice(), self.v.as_mut_slice());
        let top = top_heads(mu, n1);
        // Minus the sum of each column's entries but its top one (kept
        // aside, not subtracted).
        let mut rest = vec![S::zero(); n1];
        for (h, vr) in v.chunks_exact(n1).enumerate() {
            for ((r, x), &t) in rest.iter_mut().zip(vr).zip(&top) {
                let less = r.clone() - x.clone();
                *r = if h != t { less } else { r.clone() };
            }
        }
        let mut fixed = None;
        for (m, (r, &t)) in rest.into_iter().zip(&top).enumerate().skip(1) {
            if t == usize::MAX {
                continue;
            }
            v[t * n1 + m] = r;
            if t == 0 {
                fixed = Some(m);
            }
        }
        fixed
    }
}

/// [`Factors::marginals_vjp`] from the inverse and two solves of any
/// factorisation: `v_f = w_f (ḡ_f G_f − [weight_gradient(X Cᵀ X)]_f)` with
/// `C = weight_gradient_adjoint(ḡ ⊙ w)`. `O(n³)`.
pub(crate) fn dense_marginals_vjp<F: Factors + ?Sized>(
    factors: &F,
    seed: &Matrix<F::Scalar>,
) -> std::result::Result<Matrix<F::Scalar>, Numerical> {
    let x = factors.inverse()?;
    let w = factors.weights();
    let mut weighted = seed.clone();
    for (s, wv) in weighted.as_mut_slice().iter_mut().zip(w.as_slice()) {
        *s *= wv;
    }
    let rooting = factors.rooting();
    // X Cᵀ X = ((X Cᵀ X)ᵀ)ᵀ = (L⁻ᵀ (L⁻¹ Cᵀ)ᵀ)ᵀ: two solves on the one factorisation.
    let mut xc = weight_gradient_adjoint(&weighted, rooting).transpose();
    factors.solve(&mut xc)?;
    let mut xcx_t = xc.transpose();
    factors.solve_transpose(&mut xcx_t)?;
    let h = weight_gradient(&xcx_t.transpose(), rooting);
    let g = weight_gradient(x, rooting);
    let mut v = Matrix::zeros(w.rows(), w.cols());
    for (k, out) in v.as_mut_slice().iter_mut().enumerate() {
        let wk = &w.as_slice()[k];
        if wk.is_zero() {
            continue;
        }
        let mut d = seed.as_slice()[k].clone() * g.as_slice()[k].clone();
        d -= &h.as_slice()[k];
        *out = d * wk.clone();
    }
    Ok(v)
}

impl<E: Engine> Model<E> {
    /// Turns a gradient with respect to the scores into one with respect to
    /// the weights, `∂F/∂w_{eℓ} = (∂F/∂θ_{eℓ}) / w_{eℓ}`; entries of
    /// forbidden arcs are `0` (the score gradient carries no information
    /// there). `O(|labels| n²)`.
    pub fn weight_gradient_of(&self, score_gradient: &[Matrix<E::Scalar>]) -> PerLabel<E::Scalar> {
        let w = self.weights();
        let labels = score_gradient.len();
        score_gradient
            .iter()
            .enumerate()
            .map(|(l, g)| {
                Matrix::from_fn(w.rows(), w.cols(), |h, m| {
                    let mut wl = w[(h, m)].clone();
                    if labels > 1 {
                        wl *= self.share(ArcRef {
                            head: h,
                            dependent: m,
                            label: Some(l),
                        });
                    }
                    if wl.is_zero() {
                        return E::Scalar::zero();
                    }
                    let shift = self.prepared.shift[m];
                    let unscaled = if shift == 0.0 {
                        wl
                    } else {
                        wl * E::Scalar::from_f64(shift.exp())
                    };
                    g[(h, m)].clone() / unscaled
                })
            })
            .collect::<Vec<_>>()
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Rooting;

    /// Deterministic entries (`sin` of distinct integers) in `[-1, 1]`,
    /// scaled by `scale`, with a few columns given one entry above `1/2`
    /// (the arcs `balance` rewrites), the root row's included.
    fn matrix(n1: usize, seed: u64, scale: f64) -> Matrix<f64> {
        Matrix::from_fn(n1, n1, |h, m| {
            let u = ((h * 97 + m * 13) as f64 + seed as f64 * 0.61).sin();
            if m > 0 && (h + 2 * m + seed as usize) % 5 == 0 {
                0.75
            } else {
                scale * u
            }
        })
    }

    /// The one-label column pass against the label-generic loop, run on
    /// the same matrices padded with a second label of zeros (whose cells
    /// come after the first label's and add exact zeros): the same arcs
    /// rewritten with the same sums, bit for bit.
    #[test]
    fn one_label_balance_is_the_label_generic_loop() {
        for rooting in [Rooting::Multi, Rooting::Single] {
            for n1 in [2, 3, 5, 9, 17, 38] {
                for seed in 0..4 {
                    let mu = matrix(n1, seed, 0.4);
                    let v = matrix(n1, seed + 10, 1.0);
                    let mut one = [v.clone()];
                    balance(&mut one, std::slice::from_ref(&mu), rooting);
                    let zeros = Matrix::zeros(n1, n1);
                    let mut two = [v, zeros.clone()];
                    balance(&mut two, &[mu, zeros], rooting);
                    for (a, b) in one[0].as_slice().iter().zip(two[0].as_slice()) {
                        assert_eq!(a.to_bits(), b.to_bits(), "{rooting:?} n1 = {n1} {seed}");
                    }
                }
            }
        }
    }

    /// The `f64` column pass against its definition written out, one
    /// column at a time: the first `h ≠ m` with `μ_hm > 1/2` gets
    /// `0 − Σ_{g ≠ h} v[g][m]`, subtracted in the order of `g`; the last
    /// such column whose top head is the root is returned. Sizes below,
    /// at and above every lane count (blocks that overlap), marginals
    /// above `1/2` on the diagonal and twice in a column.
    #[test]
    fn f64_column_pass_is_its_definition() {
        for n1 in [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 17, 38] {
            for seed in 0..6 {
                let mu = Matrix::from_fn(n1, n1, |h, m| {
                    if (h * 7 + m * 3 + seed) % 4 == 0 {
                        0.5 + 0.1 * ((h + m) % 3) as f64
                    } else {
                        0.3
                    }
                });
                let v = matrix(n1, seed as u64 + 20, 1.0);
                let mut want = v.clone();
                let mut want_fixed = None;
                for m in 1..n1 {
                    let Some(t) = (0..n1).find(|&h| h != m && mu[(h, m)] > 0.5) else {
                        continue;
                    };
                    let mut rest = 0.0;
                    for g in (0..n1).filter(|&g| g != t) {
                        rest -= v[(g, m)];
                    }
                    want[(t, m)] = rest;
                    if t == 0 {
                        want_fixed = Some(m);
                    }
                }
                let mut got = v.clone();
                let fixed = balance_columns(&mut got, &mu);
                assert_eq!(fixed, want_fixed, "n1 = {n1} {seed}");
                for (a, b) in got.as_slice().iter().zip(want.as_slice()) {
                    assert_eq!(a.to_bits(), b.to_bits(), "n1 = {n1} {seed}");
                }
                // Under every instruction set, the same bits.
                let runs = crate::testing::by_lanes(ColumnPass {
                    v: v.as_slice(),
                    mu: mu.as_slice(),
                    n1,
                });
                for (got, fixed) in runs {
                    assert_eq!(fixed, want_fixed, "n1 = {n1} {seed} by lanes");
                    for (a, b) in got.iter().zip(want.as_slice()) {
                        assert_eq!(a.to_bits(), b.to_bits(), "n1 = {n1} {seed} by lanes");
                    }
                }
            }
        }
    }

    /// [`BalanceColumnsF64`] on a copy of `v`, for `by_lanes`.
    #[derive(Clone, Copy)]
    struct ColumnPass<'a> {
        v: &'a [f64],
        mu: &'a [f64],
        n1: usize,
    }

    impl WithSimd for ColumnPass<'_> {
        type Output = (Vec<f64>, Option<usize>);

        fn with_simd<Sm: Simd>(self, simd: Sm) -> Self::Output {
            let mut v = self.v.to_vec();
            let fixed = BalanceColumnsF64 {
                v: &mut v,
                mu: self.mu,
                n1: self.n1,
            }
            .with_simd(simd);
            (v, fixed)
        }
    }

    /// [`norm`] and the finiteness test under every instruction set
    /// against their definitions written out: eight partial sums of squares
    /// (entry `j` of each matrix to sum `j mod 8`), added in order,
    /// the root lowered by `1 − 2Nε`; `is_finite` of every entry.
    #[test]
    fn norm_and_finiteness_are_their_definitions() {
        #[derive(Clone, Copy)]
        struct Both<'a>(&'a [Matrix<f64>]);
        impl WithSimd for Both<'_> {
            type Output = (f64, bool);
            fn with_simd<Sm: Simd>(self, simd: Sm) -> (f64, bool) {
                let finite = self
                    .0
                    .iter()
                    .all(|m| crate::model::AllFinite(m.as_slice()).with_simd(simd));
                (Norm(self.0).with_simd(simd), finite)
            }
        }
        for n1 in [1, 2, 3, 7, 9, 10, 37] {
            for labels in [1, 3] {
                let mut ms: Vec<_> = (0..labels)
                    .map(|l| matrix(n1, l as u64 + 3 * n1 as u64, 1e3))
                    .collect();
                for bad in [None, Some(f64::NAN), Some(f64::INFINITY)] {
                    if let Some(x) = bad {
                        ms[labels - 1][(n1 - 1, n1 / 2)] = x;
                    }
                    let mut lanes = [0.0f64; 8];
                    for m in &ms {
                        for (j, x) in m.as_slice().iter().enumerate() {
                            lanes[j % 8] += x * x;
                        }
                    }
                    let sum = lanes.iter().fold(0.0, |a, b| a + b);
                    let n = (labels * n1 * n1) as f64;
                    let want = sum.sqrt() * (1.0 - 2.0 * n * f64::EPSILON);
                    let finite = bad.is_none();
                    for (got, got_finite) in crate::testing::by_lanes(Both(&ms)) {
                        let at = format!("n1 = {n1} labels {labels} {bad:?}");
                        assert_eq!(got.to_bits(), want.to_bits(), "{at}");
                        assert_eq!(got_finite, finite, "{at}");
                    }
                }
            }
        }
    }
}
