//! An a-posteriori accuracy estimate for a derivative read from a dense
//! inverse: how a dense engine knows when a gradient is wrong. The default
//! engine ([`Certified`](super::Certified)) routes by it; a dense engine
//! refuses by it with
//! [`Dense::with_derivative_check`](super::Dense::with_derivative_check)
//! (the `f64` dense engines `F64` and `ShiftedF64` of `spantree-faer`),
//! and single-root escalates to the elimination the products that only the
//! second opinion of the residuals ([`SINGLE_ROOT_RESIDUAL_FACTOR`]) doubts.

use super::dense::{marginals_from_inverse, nearly_certain_word, DENSE_UNCERTAINTY};
use crate::error::{Inaccuracy, Numerical};
use crate::graph::Rooting;
use crate::linalg::{column_blocks, load_lanes, store_lanes};
use crate::matrix::{as_f64, from_f64, Matrix, Scratch};
use crate::scalar::Scalar;
use pulp::{Arch, Simd, WithSimd};

/// The fewest correct bits, norm-wise, that a derivative from the dense
/// inverse must keep by [`VjpAccuracy`] to be returned: `45`, the bar every
/// gradient of the library is held to (`‖v̂ − v‖₂ ≤ 2⁻⁴⁵ ‖v‖₂`).
pub const DERIVATIVE_BITS: f64 = 45.0;

/// The factor `c` of the estimate [`VjpAccuracy`], by rooting
/// (`[multi, single]`): `[2, 1]`, calibrated against `HighPrecision<512>`
/// (see [`VjpAccuracy`]; `cargo run --profile test -p spantree-faer
/// --example vjp_calibration`). Multi-root, `2` is the least factor under
/// which the estimate (with the column identities of the model counted)
/// flags every product of the calibration sweep that kept fewer than 45
/// bits (with `1`: 6 of 18,654 products at 44.2–44.9 bits were not).
pub const VJP_ERROR_FACTOR: [f64; 2] = [2.0, 1.0];

/// The single-root floor of [`VjpAccuracy`]'s size, as a multiple of the
/// largest arc size: `‖size‖₂` is replaced by
/// `max(‖size‖₂, 20 max_f size_f)`. Koo et al.'s single-root Laplacian is
/// no M-matrix (its root row makes the LU add terms of both signs):
/// entries of `X` that no arc reads directly enter `X Cᵀ X`, and they are
/// shared by every arc of a column, so their roundings do not average out
/// over the arcs as the 2-norm assumes. The 2-norm alone missed 23 products
/// of `F64` and 22 of `ShiftedF64` in the calibration sweep that kept
/// 40.6–44.9 bits, all but one per engine at `n ≤ 8` and that one at
/// `n = 36` (by up to 3.5 bits at `n = 3`, 0.2 at `n = 36`): few arcs
/// carry the norm there. Neither the exact componentwise size of the
/// sandwich (`|X| |Cᵀ| |X|` read where the arcs read, `O(n³)`) nor the
/// model's column identities explained them (each still needed 3.2–3.5
/// bits more), so the floor is calibrated: `20` (`4.3` bits) is the least
/// multiple under which the estimate flags every single-root product of
/// the sweep below 45 bits, and with it 10,572 of 18,582 products (both
/// engines) are refused, 9,311 of them falsely (against about 11,000 of
/// 18,228 with a plain factor `2^3.6` on the 2-norm, in an earlier sweep). The floor grows with the largest
/// arc only, so large graphs, whose 2-norm dwarfs it, keep their estimate.
/// It is the floor of [`VjpAccuracy::of`] (an estimate from any product,
/// which may come balanced by the model, its residuals then zero by
/// construction).
/// It decided the route of [`Certified`](super::Certified) and the
/// single-root escalation of the dense engines until the second opinion of
/// [`SINGLE_ROOT_RESIDUAL_FACTOR`] replaced it there: the floor grows with
/// the largest arc whatever the error, and escalated most products at
/// `n ≤ 8` and many of ordinary graphs that kept their bits (4,422 of 7,012
/// per dense engine in the sweep, 2,017 of the 6,025 sentences of the UD
/// corpus on `Certified`, the speed table's `N(0, 2²)` graph at `n = 20`),
/// while it let one product of `F64` through at `n = 10` with 44.7 bits.
/// The refusal of the dense engines
/// ([`Dense::with_derivative_check`](super::Dense::with_derivative_check))
/// never took it: as a refusal, on ordinary graphs (`honest_accuracy
/// refusals`, 3,000 gradients per `σ` and engine at `n ≤ 100`) it refused
/// 6 at `σ = 1` and 121 at `σ = 2` that kept 45 bits (0 and 3 without), 9
/// of the 112 gradients of the core `honest` test (3 without), and the
/// entropy gradients, divergences and covariances of the conformance
/// suite's 2–4-word graphs (estimated 44 bits, every one accurate).
pub const SINGLE_ROOT_LARGEST_FACTOR: f64 = 20.0;

/// The factor of the single-root second opinion (`residual_accuracy`),
/// which decides the route of a single-root dense product in place of the
/// floor of [`SINGLE_ROOT_LARGEST_FACTOR`]: the product is kept when the
/// estimate without the floor, its error raised to `3` times the norm
/// `‖r'‖₂` of the weighted residuals of the product's identities
/// (`r_m = Σ_h v̂_hm` per word, `r_0 = Σ_m v̂_0m` for the root: zero in exact
/// arithmetic; each times `‖w‖₂ / ‖w‖₁` of the arcs it sums), keeps
/// [`DERIVATIVE_BITS`] + [`CERTIFY_DERIVATIVE_MARGIN`]. The residual
/// measures the error the floor guards against (an error shared by a
/// column adds up in its sum, see `residual_accuracy`).
///
/// Calibration, against `HighPrecision<512>` (`cargo run --profile test -p
/// spantree-faer --example vjp_calibration 3 4 5 6 8 36`, `… 10 12 16 20 28
/// 50` and `… 70 100`; the least factor from a scratch build of it that
/// printed each product's residuals beside its true bits): of the
/// single-root products of `F64` and `ShiftedF64` that
/// kept fewer than 45 bits while the estimate without the floor said 45 or
/// more (76 products, 44 of them at `n ≤ 8`), every one is flagged by a
/// factor of `2.27` or more on the weighted residual (`1.72` on the
/// unweighted one), so `3` (1.58 bits) flags them all with 0.4 bits to
/// spare, and the margin is the spare made honest, as for the floor. The
/// weight is at most `1`, so the rule keeps every product the unweighted
/// residual kept, and more.
///
/// Why the weight: an error `δ_m` shared by the arcs of column `m` adds up
/// to `δ_m ‖w‖₁` in `r_m`, but its 2-norm over the column is `|δ_m| ‖w‖₂`;
/// unweighted, the residual counted it up to `√(n + 1)` times over, and the
/// factor calibrated at `n ≤ 50` escalated to the elimination most
/// single-root entropy gradients of `N(0, 2²)` graphs from `n ≈ 60` on,
/// although their dense products kept 48.5–49 bits (`escalation_count`:
/// 4 of 15 graphs at `n = 60..=64`, 6 of 9 at `80..=82`, 6 of 6 at
/// `100, 101`; `op_loop grad_entropy 100 30 0 f64` 2.1 ms, 14× its kernel).
///
/// Per engine, single-root (`F64` / `ShiftedF64`): escalated 920 / 924 of
/// the 7,012 products each returns at `n ≤ 8` and 36 (1,006 / 1,008
/// unweighted), 315 / 321 of 2,283 at `n = 10..=50` (386 / 392); none
/// returned below 45 bits; the fewest returned keep 45.5 / 46.6 bits
/// (46.5 / 46.6 unweighted) and 45.7 / 46.5 (45.7 / 46.8); at `n = 70,
/// 100`, 63 / 60 of 332 escalated, none below 45 bits, fewest 47.7 / 47.5.
/// `Accurate` keeps 10,206 of 17,136 single-root products dense (9,995
/// unweighted; 3,162 of 5,040 at `n = 10..=50`, 3,023; 411 of 672 at
/// `n = 70, 100`), fewest 46.1, 46.5 and 47.3 bits.
pub const SINGLE_ROOT_RESIDUAL_FACTOR: f64 = 3.0;

/// The bits [`Certified`](super::Certified) asks of the estimate beyond
/// [`DERIVATIVE_BITS`] before it takes a dense product, by rooting
/// (`[multi, single]`): `[0, 1]`. Multi-root, the factor `c = 2` of
/// [`VJP_ERROR_FACTOR`] already flags every product of the calibration
/// sweep below 45 bits; single-root the second opinion of
/// [`SINGLE_ROOT_RESIDUAL_FACTOR`] does, with 0.09 bits to spare on the
/// worst product, and the one bit is that spare made honest (as it was for
/// the floor of [`SINGLE_ROOT_LARGEST_FACTOR`], 0.03 bits to spare; before
/// the floor, 3 bits on the plain estimate still let 1 product of 16,800
/// through at 43.8 bits; 5 would have caught it but sent nearly every
/// `N(0, 2²)` graph to the elimination). A dense engine with
/// [`Dense::with_derivative_check`](super::Dense::with_derivative_check)
/// refuses at the estimate itself, without the floor or the residual (a
/// margin there would refuse accurate products of ordinary graphs), and
/// single-root escalates to the elimination with this margin, as
/// `Certified` routes: an escalation costs time, not an answer.
pub const CERTIFY_DERIVATIVE_MARGIN: [f64; 2] = [0.0, 1.0];

/// The estimated accuracy of a vector–Jacobian product of the marginals
/// computed from the dense inverse `X = L⁻¹`
/// ([`Factors::marginals_vjp`](super::Factors::marginals_vjp) on
/// [`Dense`](super::Dense)), from what the product already has, `O(n²)`:
///
/// `error = c ε s ‖size‖₂`, with `s = max_f |ḡ'_f|` over the allowed arcs
/// of the seed centred per column as the product uses it (`ḡ'_hm = ḡ_hm −
/// Σ_k μ_km ḡ_km` where that lowers the column's largest `|ḡ|`, which
/// changes no product: see [`Dense`](super::Dense)),
/// `size_f = w_f Σ |X_ji|` over the entries of `X` arc `f` reads
/// (`X_mm` and `X_mh`; `G_f` of
/// [`weight_gradient`](crate::laplacian::weight_gradient) without its
/// signs), `c` = [`VJP_ERROR_FACTOR`]; compared with `‖v̂‖₂`, the norm of the
/// product as computed. Single-root, `‖size‖₂` is floored at
/// [`SINGLE_ROOT_LARGEST_FACTOR`] times the largest `size_f` (why there);
/// the routes of the dense products do not take the floor but a second
/// opinion from the product's own residuals
/// ([`SINGLE_ROOT_RESIDUAL_FACTOR`]). Multi-root, the size of the arc whose marginal
/// exceeds `1/2` in its column is the sum of the column's other sizes: the
/// model returns that entry as minus the sum of the others (`balance`, the
/// identity `Σ_h v_hm = 0`), so its error is at most the sum of theirs,
/// not the error of a direct `O(1)`-sized difference. (Single-root the
/// estimate then missed products by up to 30 bits: its entries of `X` are
/// not accurate relative to themselves, and the direct sizes stay.)
///
/// Why: the product is `v_f = w_f (ḡ_f G_f(X) − G_f(X Cᵀ X))`, a
/// covariance `Cov(1_f, Σ_e ḡ_e 1_e)` formed as the difference of two parts.
/// The first, `ḡ_f μ_f`, is read from `w_f (X_mm − X_mh)`, whose rounding
/// error is about `ε size_f` (each entry of `X` is accurate relative to
/// itself when the pivots are, which `ln Z`'s check already demands); the
/// second reads `X Cᵀ X`, whose entries are sums of `|X| |C| |X|`-sized
/// terms, and `C` is `L` with every weight scaled by its seed, so they err by
/// about `ε s size_f`. Where a word is nearly certain of its head (or small
/// root weights make `X` large) those parts are `O(s)` while `v_f` is
/// `O(u s)`: about `log₂(1/u)` bits go, which no check of `ln Z` sees. The
/// roundings of different arcs are independent, hence the 2-norm over arcs
/// (a sum grows with `n²` and overstated the error by 4–7 bits at `n = 100`).
/// It is an estimate, not a bound, calibrated on a sweep against
/// `HighPrecision<512>` (`cargo run --profile test -p spantree-faer
/// --example vjp_calibration 3 4 5 6 8 36`): `F64` and `ShiftedF64`, both
/// rootings, `n = 3, 4, 5, 6, 8` (40 graphs each) and `36` (4), `N(0, σ²)`
/// scores with `σ = 1, 2, 4` and uniform ones in `±5, ±10, ±20, ±50`, root
/// shifts `0, −5, −10, −20`, entropy, random and tree-indicator seeds, the
/// products that `ln Z`'s own check lets through. Multi-root (9,504
/// products per engine) it flags every product below 45 bits (3,890 on
/// `F64`, 3,949 on `ShiftedF64`); single-root (9,291) too (624 and 637)
/// with the floor of [`SINGLE_ROOT_LARGEST_FACTOR`], where the 2-norm alone
/// missed 23 and 22 at 40.6–44.9 bits. It is pessimistic by 3.3 (multi)
/// and 5.7–5.8 (single; 2.4 before the floor, in an earlier sweep) bits in
/// the median, with a long tail (products that keep all their bits where the estimate expects a nearly
/// certain word to cost them), so it refuses some products that did keep
/// 45 bits: 2,016 and 1,957 of 9,504 multi-root and 4,662 and 4,649 of
/// 9,291 single-root (1,678 and 1,665 before the floor; `F64` and
/// `ShiftedF64`) in the sweep (mostly on its nearly
/// deterministic families and at `n ≤ 8`, where the floor decides); how many on
/// ordinary graphs is measured by the `honest_accuracy` example of
/// `spantree-faer` (`refusals`). At `n ≤ 8` it refuses 5,791 multi-root
/// products (1,885 falsely); before the seed was centred and the column
/// identities counted, with `c = 1`, 6,058 (2,045 falsely).
///
/// An arc in every tree (a word's only allowed head, single-root the only
/// allowed root arc) has covariance exactly zero, restored by the model, and
/// is left out: a graph with one tree is never refused. A marginal that
/// underflows adds a part of size `0`: neither moves the estimate while
/// other words carry the norm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VjpAccuracy {
    /// The estimated absolute error `c ε s ‖size‖₂` (for `f64`, times
    /// `1 + 4 (n+1)² ε`: the order of its sums, see `over_f64`).
    pub error: f64,
    /// `‖v̂‖₂`, the norm of the product as computed.
    pub norm: f64,
}

impl VjpAccuracy {
    /// Estimates the accuracy of the product `v` of `seed` computed from the
    /// inverse `x` of the Laplacian of `weights`, `O(n²)`.
    ///
    /// ```
    /// use spantree_core::engine::VjpAccuracy;
    /// use spantree_core::{Matrix, Rooting};
    /// // Two words, every weight 1, multi-root: L = [[2, −1], [−1, 2]],
    /// // X = [[2, 1], [1, 2]] / 3. Root arcs read X_mm (size 2/3), word arcs
    /// // X_mm and X_mh (size 1); each root arc has marginal 2/3 > 1/2, so the
    /// // model returns it as minus its column's word arc (size 1): every
    /// // size is 1, ‖size‖₂ = 2, and c = 2 multi-root.
    /// let w = Matrix::from_fn(3, 3, |h, m| if m == 0 || h == m { 0.0 } else { 1.0 });
    /// let x = Matrix::from_fn(2, 2, |i, j| if i == j { 2.0 / 3.0 } else { 1.0 / 3.0 });
    /// // A seed of 1 on arc 1 → 2 alone: the column of word 2 has marginals
    /// // 2/3 (root) and 1/3 (arc 1 → 2), so c = 1/3 and the centred seed is
    /// // 2/3 on arc 1 → 2, −1/3 on the root arc, 0 elsewhere: s = 2/3.
    /// let mut seed = Matrix::zeros(3, 3);
    /// seed[(1, 2)] = 1.0;
    /// let v = Matrix::from_fn(3, 3, |_, m| if m == 0 { 0.0 } else { 1.0 });
    /// let a = VjpAccuracy::of(&seed, &w, &x, &v, Rooting::Multi);
    /// let expected = 2.0 * f64::EPSILON * 2.0 / 3.0 * 2.0;
    /// assert!((a.error - expected).abs() < 1e-3 * expected);
    /// // A seed constant on every arc into a word moves no marginal: the
    /// // centred seed is exactly 0, and so are the product and its error.
    /// let seed = Matrix::from_fn(3, 3, |_, m| m as f64);
    /// let a = VjpAccuracy::of(&seed, &w, &x, &Matrix::zeros(3, 3), Rooting::Multi);
    /// assert_eq!((a.error, a.bits()), (0.0, 53.0));
    /// ```
    pub fn of<S: Scalar>(
        seed: &Matrix<S>,
        weights: &Matrix<S>,
        x: &Matrix<S>,
        v: &Matrix<S>,
        rooting: Rooting,
    ) -> Self {
        let mu = marginals_from_inverse(weights, x, rooting);
        let centred = centred_with(seed, weights, &mu, rooting);
        let product = DenseProduct {
            centred: &centred,
            weights,
            x,
            mu: &mu,
            v,
            rooting,
        };
        Self::over(&product, None).floored
    }

    /// [`VjpAccuracy::of`] with the marginals `mu` (read from `x`) given and
    /// the seed already centred ([`centred_with`]), over the arcs that `live` marks (all allowed arcs when `None`),
    /// `live` in the row-major `(n+1) × (n+1)` layout: the estimate with and
    /// without the single-root floor from one pass (the floor needs only
    /// the largest size beside `‖size‖₂`). Row by row over the
    /// slices, the sizes summed in the order of
    /// [`arc_entries`](crate::laplacian::arc_entries); for `f64` over every
    /// allowed arc, per column first and with the error raised by
    /// `1 + 4 (n+1)² ε` for that order (`over_f64`). `O(n²)`.
    fn over<S: Scalar>(product: &DenseProduct<'_, S>, live: Option<&[bool]>) -> Estimates {
        if live.is_none() {
            if let Some(estimates) = over_f64(product) {
                return estimates;
            }
        }
        Self::over_generic(product, live)
    }

    /// [`VjpAccuracy::over`] for any scalar, the sums in the order stated
    /// there.
    fn over_generic<S: Scalar>(product: &DenseProduct<'_, S>, live: Option<&[bool]>) -> Estimates {
        let DenseProduct {
            centred,
            weights,
            x,
            mu,
            v,
            rooting,
        } = *product;
        let n1 = weights.rows();
        let n = n1 - 1;
        let single = rooting == Rooting::Single;
        let xs = x.as_slice();
        // The weights' layout keeps column `0` and the diagonal zero.
        let allowed = |w: &S, k: usize| !w.is_zero() && live.is_none_or(|l| l[k]);
        // An arc that is in every tree (the only allowed arc into its word,
        // or single-root the only allowed root arc) has covariance exactly
        // zero, which `balance` restores: it adds no error.
        let mut heads = vec![0usize; n1];
        for (h, wr) in rows(weights).enumerate() {
            for (m, (count, w)) in heads.iter_mut().zip(wr).enumerate() {
                *count += usize::from(allowed(w, h * n1 + m));
            }
        }
        let roots = (1..n1)
            .filter(|&m| allowed(&weights.as_slice()[m], m))
            .count();
        // What the arcs into word `m = j + 1` read of `X` besides `X[j][h−1]`
        // (the entries `arc_entries(rooting, h, m)` reads, `X[j][i]` for
        // each `(i, j)`): a root arc `(0, j)` single-root, `(j, j)` multi;
        // a word arc `(j, j)`, none single-root into word `1`.
        let root_read: Vec<f64> = (0..n)
            .map(|j| xs[j * n + if single { 0 } else { j }].to_f64().abs())
            .collect();
        let diagonal: Vec<f64> = (0..n)
            .map(|j| {
                if single && j == 0 {
                    0.0
                } else {
                    xs[j * n + j].to_f64().abs()
                }
            })
            .collect();
        // The size `w_f Σ |X_ji|` of arc `h → m = j + 1`, and whether it
        // counts (allowed, not in every tree).
        let arc = |h: usize, m: usize, w: &S| -> (bool, f64) {
            let counts =
                !(single && h == 0 && roots == 1) && heads[m] != 1 && allowed(w, h * n1 + m);
            let j = m - 1;
            let read = if h == 0 {
                root_read[j]
            } else {
                let other = if single && h == 1 {
                    0.0
                } else {
                    xs[j * n + h - 1].to_f64().abs()
                };
                diagonal[j] + other
            };
            (counts, w.to_f64().abs() * read)
        };
        let (mut scale, mut norm, mut sizes, mut largest) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        // Multi-root, the column identities rework the sizes before they
        // are summed (`balance` in the gradient module): in each column the
        // first arc whose marginal exceeds `1/2` gets minus the sum of the
        // column's other entries, so its size is the sum of the others'
        // (its error is at most the sum of theirs). Those column sums are
        // taken first, in the order of `h`, and the sizes summed after, in
        // row-major order as they come (the skipped zeros add nothing).
        let mut balanced = vec![0.0f64; if single { 0 } else { n1 }];
        let top = if single {
            Vec::new()
        } else {
            crate::gradient::top_heads(mu.as_slice(), n1)
        };
        if !single {
            for (h, (wr, sr)) in rows(weights).zip(rows(centred)).enumerate() {
                for m in 1..n1 {
                    let (counts, size) = arc(h, m, &wr[m]);
                    if counts {
                        scale = scale.max(sr[m].to_f64().abs());
                        if h != top[m] {
                            balanced[m] += size;
                        }
                    }
                }
            }
        }
        for (h, (wr, (sr, vr))) in rows(weights).zip(rows(centred).zip(rows(v))).enumerate() {
            for m in 1..n1 {
                let (counts, size) = arc(h, m, &wr[m]);
                if !counts {
                    continue;
                }
                if single {
                    scale = scale.max(sr[m].to_f64().abs());
                    largest = largest.max(size);
                    sizes += size * size;
                } else {
                    let size = if h == top[m] && size > 0.0 {
                        balanced[m]
                    } else {
                        size
                    };
                    sizes += size * size;
                }
                let value = vr[m].to_f64();
                norm += value * value;
            }
        }
        Estimates::of_sums(sizes, largest, scale, norm, single, 1.0)
    }

    /// The estimated correct bits, `−log₂(error / norm)` clamped to
    /// `0..=53`; `53` when the estimated error is zero (a zero seed).
    pub fn bits(&self) -> f64 {
        if self.error == 0.0 {
            return 53.0;
        }
        let bits = -(self.error / self.norm).log2();
        if bits.is_nan() {
            0.0
        } else {
            bits.clamp(0.0, 53.0)
        }
    }
}

/// [`VjpAccuracy::of`] without the single-root floor
/// ([`SINGLE_ROOT_LARGEST_FACTOR`]: at `n ≤ 8` it refuses gradients of
/// ordinary `N(0, 1)` graphs that keep 50 bits, which `F64` must return;
/// the dense engines escalate by the residuals instead, see
/// [`Dense::with_derivative_check`](super::Dense::with_derivative_check)),
/// and where it says fewer than [`DERIVATIVE_BITS`],
/// again without what is zero by structure: arcs in no tree (their
/// covariances are exactly zero; the dense product leaves `ε`-sized values
/// there), so that the words they leave with one head count as certain.
/// `O(n²)`, and `O(n³)` at most on that path only.
/// `first` is the estimate without the floor over every allowed arc when a
/// pass has it already ([`dense_route`]).
pub(crate) fn live_accuracy<S: Scalar>(
    first: Option<VjpAccuracy>,
    product: &DenseProduct<'_, S>,
) -> VjpAccuracy {
    let plain = first.unwrap_or_else(|| VjpAccuracy::over(product, None).plain);
    if plain.bits() >= DERIVATIVE_BITS {
        return plain;
    }
    let live = live_arcs(product.weights, product.rooting);
    VjpAccuracy::over(product, Some(&live)).plain
}

/// A dense vector–Jacobian product and what its estimate
/// ([`VjpAccuracy`]) reads: the seed as [`centred_with`] leaves it, the
/// weights, the inverse `x`, the marginals `mu` read from it
/// (`marginals_from_inverse`), the product `v` and the rooting.
#[derive(Debug)]
pub(crate) struct DenseProduct<'a, S> {
    pub(crate) centred: &'a Matrix<S>,
    pub(crate) weights: &'a Matrix<S>,
    pub(crate) x: &'a Matrix<S>,
    pub(crate) mu: &'a Matrix<S>,
    pub(crate) v: &'a Matrix<S>,
    pub(crate) rooting: Rooting,
}

// By hand: the derive would ask `S: Copy` of the matrices' scalars.
impl<S> Clone for DenseProduct<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for DenseProduct<'_, S> {}

/// [`VjpAccuracy`] without and with the single-root floor of
/// [`SINGLE_ROOT_LARGEST_FACTOR`], from one pass (`VjpAccuracy::over`);
/// the two are equal multi-root. Single-root on `f64` (`over_f64`) the
/// same pass also sums the residuals of the product's identities.
#[derive(Clone, Copy, Debug)]
struct Estimates {
    /// `c ε s ‖size‖₂`.
    plain: VjpAccuracy,
    /// `c ε s max(‖size‖₂, 20 max_f size_f)` single-root.
    floored: VjpAccuracy,
    /// `‖r‖₂` of [`residual_accuracy`], when the pass summed it (`f64`,
    /// single-root): the same bits as its own pass.
    residual: Option<f64>,
}

impl Estimates {
    /// Both estimates from the sums of one pass: `Σ size_f²`, the largest
    /// `size_f`, `s` and `‖v̂‖₂²`; `order` raises the error for a summation
    /// order other than the stated one (`1` for it).
    fn of_sums(sizes: f64, largest: f64, scale: f64, norm: f64, single: bool, order: f64) -> Self {
        let factor = VJP_ERROR_FACTOR[usize::from(single)] * order;
        let size = sizes.sqrt();
        let floored = if single {
            size.max(SINGLE_ROOT_LARGEST_FACTOR * largest)
        } else {
            size
        };
        let accuracy = |size: f64| VjpAccuracy {
            error: factor * f64::EPSILON * scale * size,
            norm: norm.sqrt(),
        };
        Estimates {
            plain: accuracy(size),
            floored: accuracy(floored),
            residual: None,
        }
    }
}

/// What becomes of a dense vector–Jacobian product, by [`dense_route`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum DenseRoute {
    /// The dense product is returned; the estimate is what the model's
    /// check is to compare with [`DERIVATIVE_BITS`] (below it, a refusal).
    Dense(VjpAccuracy),
    /// The product is to be computed again by the cancellation-free
    /// elimination ([`Eliminated`](super::Eliminated)), which reports its
    /// own estimate.
    Elimination,
}

/// The one rule by which a dense `f64` product is kept or recomputed by the
/// elimination, for [`Certified`](super::Certified)
/// and the single-root escalation of
/// [`Dense::with_derivative_check`](super::Dense::with_derivative_check)
/// alike. One `O(n²)` pass gives the estimate with and without the floor of
/// [`SINGLE_ROOT_LARGEST_FACTOR`]; the product is kept when its estimate
/// keeps [`DERIVATIVE_BITS`] + [`CERTIFY_DERIVATIVE_MARGIN`] (by rooting),
/// that estimate being, multi-root, [`VjpAccuracy`]'s, and single-root the
/// one without the floor with its error raised to
/// [`SINGLE_ROOT_RESIDUAL_FACTOR`] times the residual of the product's
/// identities (`residual_accuracy`, one more `O(n²)` pass where the
/// estimate without the floor keeps the bar; the floor is not read):
///
/// * kept: the dense product, with that estimate (`refuses` false) or the
///   one without the floor (the check of the refusing engines, unchanged);
/// * otherwise, when `refuses` (a dense engine that refuses by the check
///   without the floor, [`live_accuracy`]) and that check puts the product
///   below [`DERIVATIVE_BITS`]: the dense product with that estimate, for
///   the model to refuse (`O(n³)` for the live arcs, on this path only);
/// * otherwise (only the residual doubts it, or `Certified`, which never
///   refuses a dense product): the elimination.
///
/// Why the residual and the margin: [`SINGLE_ROOT_RESIDUAL_FACTOR`] and
/// [`CERTIFY_DERIVATIVE_MARGIN`].
pub(crate) fn dense_route<S: Scalar>(product: &DenseProduct<'_, S>, refuses: bool) -> DenseRoute {
    let rooting = product.rooting;
    let single = rooting == Rooting::Single;
    let estimates = VjpAccuracy::over(product, None);
    let bar = DERIVATIVE_BITS + CERTIFY_DERIVATIVE_MARGIN[usize::from(single)];
    // Single-root, the estimate without the floor with the error the
    // identities' residuals measure (`O(n²)`, where the plain estimate
    // keeps the bar); multi-root, the estimate (the floor is single-root).
    let estimate = if single && estimates.plain.bits() >= bar {
        residual_accuracy(product, estimates.plain, estimates.residual)
    } else {
        estimates.floored
    };
    let kept = estimate.bits() >= bar;
    if !refuses {
        return if kept {
            DenseRoute::Dense(estimate)
        } else {
            DenseRoute::Elimination
        };
    }
    if kept {
        // The plain estimate keeps at least as many bits: the check
        // without the live arcs passes, by that estimate as before.
        return DenseRoute::Dense(estimates.plain);
    }
    let checked = live_accuracy(Some(estimates.plain), product);
    if checked.bits() < DERIVATIVE_BITS {
        DenseRoute::Dense(checked)
    } else {
        DenseRoute::Elimination
    }
}

/// The second opinion on a single-root product whose estimate `plain`
/// (without the floor of [`SINGLE_ROOT_LARGEST_FACTOR`]) keeps the bar:
/// that estimate with its error raised to [`SINGLE_ROOT_RESIDUAL_FACTOR`]
/// times the norm of the residuals of the product's identities, when that
/// is larger. Every tree gives each word one head and, single-root, the
/// root one dependent, so `Σ_h v_hm = 0` for every word `m` and
/// `Σ_m v_0m = 0` in exact arithmetic: the residuals are
/// `r_m = Σ_h v̂_hm` (over the allowed arcs into `m`) and `r_0 = Σ_m v̂_0m`
/// of the product `v̂` as computed (before the model's `balance`), each
/// summed compensated (two-sum) and weighted by `‖w‖₂ / ‖w‖₁` of the
/// weights of the arcs it sums, and their norm is
/// `‖r'‖₂ = (Σ_m (r_m ‖w_·m‖₂ / ‖w_·m‖₁)² + (r_0 ‖w_0·‖₂ / ‖w_0·‖₁)²)^½`.
/// `O(n²)`, one allocation; `residual` is that norm when the estimate's
/// pass has summed it already (`over_f64`, the same bits).
///
/// Why it sees what the floor guards against: an error `δ_m` of an entry
/// of `X Cᵀ X` that every arc into `m` reads (the diagonal one) enters
/// `v_hm` as `w_hm δ_m`, with the sign of `δ_m` on every arc of the column
/// (the weights are positive), so it adds up in `r_m` to `δ_m ‖w_·m‖₁`,
/// and the weight turns that into its 2-norm over the column,
/// `|δ_m| ‖w_·m‖₂`; independent roundings add up in `r_m` as they do in
/// the 2-norm, and the weight (at most `1`) only lowers them. It is a
/// measurement of the error, not a bound (an error that cancels within a
/// column is not seen), hence the factor and the plain estimate beside it.
fn residual_accuracy<S: Scalar>(
    product: &DenseProduct<'_, S>,
    plain: VjpAccuracy,
    residual: Option<f64>,
) -> VjpAccuracy {
    let residual = residual.unwrap_or_else(|| column_residual_norm(product));
    VjpAccuracy {
        error: plain.error.max(SINGLE_ROOT_RESIDUAL_FACTOR * residual),
        norm: plain.norm,
    }
}

/// `‖r‖₂` of [`residual_accuracy`] by its own pass over the product
/// ([`ColumnResiduals`], then [`residual_norm`]). `O(n²)`, one allocation.
fn column_residual_norm<S: Scalar>(product: &DenseProduct<'_, S>) -> f64 {
    let (weights, v) = (product.weights.as_slice(), product.v.as_slice());
    let n1 = product.weights.rows();
    // Per column: the running sum and its compensation, and the weights'
    // sum and sum of squares, side by side.
    let mut state = vec![0.0f64; 4 * n1];
    let (sums, rest) = state.split_at_mut(n1);
    let (compensations, rest) = rest.split_at_mut(n1);
    let (l1, l2) = rest.split_at_mut(n1);
    Arch::new().dispatch(ColumnResiduals {
        weights,
        v,
        sums: &mut *sums,
        compensations: &mut *compensations,
        l1: &mut *l1,
        l2: &mut *l2,
    });
    residual_norm(
        &sums[1..],
        &compensations[1..],
        &l1[1..],
        &l2[1..],
        weights,
        v,
        n1,
    )
}

/// `‖r'‖₂` of [`residual_accuracy`] from the words' compensated column sums
/// and their weights' sums and sums of squares (`sums[j]`, `compensations[j]`,
/// `l1[j]`, `l2[j]` for word `j + 1`, in the order of `h`): the root row's
/// taken here, along the row (the order of `m`, compensated), then
/// `(Σ_m ((sum + compensation) √l2 / l1)² + r_0'²)^½` in the order of `m`
/// (a weight of `1` where no arc is summed). `O(n)`.
fn residual_norm<S: Scalar>(
    sums: &[f64],
    compensations: &[f64],
    l1: &[f64],
    l2: &[f64],
    weights: &[S],
    v: &[S],
    n1: usize,
) -> f64 {
    let mut root = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (w, x) in weights[1..n1].iter().zip(&v[1..n1]) {
        if !w.is_zero() {
            let (t, lost) = two_sum(root.0, x.to_f64());
            let w = w.to_f64();
            root = (t, root.1 + lost, root.2 + w, root.3 + w * w);
        }
    }
    let squares = sums
        .iter()
        .zip(compensations)
        .zip(l1.iter().zip(l2))
        .map(|((&s, &c), (&l1, &l2))| (s, c, l1, l2))
        .chain(std::iter::once(root))
        .map(|(sum, compensation, l1, l2)| {
            let weight = if l1 > 0.0 { l2.sqrt() / l1 } else { 1.0 };
            ((sum + compensation) * weight).powi(2)
        })
        .sum::<f64>();
    squares.sqrt()
}

/// `a + b = t + lost` exactly, `t = fl(a + b)` (Knuth's two-sum, branch-free;
/// `lost` is the one rounding error of the sum, as Neumaier's ordered form
/// finds it).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let t = a + b;
    let bv = t - a;
    let av = t - bv;
    (t, (a - av) + (b - bv))
}

/// The column sums of [`residual_accuracy`]: per word `m`, over the allowed
/// arcs `h → m` in the order of `h`, `Σ_h v̂_hm` compensated (the running
/// sum and the sum of each addition's rounding error), and the weights'
/// `Σ_h w_hm` and `Σ_h w_hm²`, row by row over contiguous slices; an arc
/// not allowed (or the diagonal) adds `+0`, which moves none of them
/// (`O(n²)`, branch-free, vectorised).
struct ColumnResiduals<'a, S> {
    weights: &'a [S],
    v: &'a [S],
    sums: &'a mut [f64],
    compensations: &'a mut [f64],
    /// `Σ_h w_hm` and `Σ_h w_hm²` over the same arcs.
    l1: &'a mut [f64],
    l2: &'a mut [f64],
}

impl<S: Scalar> WithSimd for ColumnResiduals<'_, S> {
    type Output = ();

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, _simd: Sm) {
        let ColumnResiduals {
            weights,
            v,
            sums,
            compensations,
            l1,
            l2,
        } = self;
        let n1 = sums.len();
        for (h, (wr, vr)) in weights.chunks_exact(n1).zip(v.chunks_exact(n1)).enumerate() {
            let (wr, vr) = (&wr[..n1], &vr[..n1]);
            let (sums, compensations) = (&mut sums[..n1], &mut compensations[..n1]);
            let (l1, l2) = (&mut l1[..n1], &mut l2[..n1]);
            for m in 0..n1 {
                let on = (m != h) & !wr[m].is_zero();
                let (x, w) = if on {
                    (vr[m].to_f64(), wr[m].to_f64())
                } else {
                    (0.0, 0.0)
                };
                let (t, lost) = two_sum(sums[m], x);
                sums[m] = t;
                compensations[m] += lost;
                l1[m] += w;
                l2[m] += w * w;
            }
        }
    }
}

/// The rows of a matrix, as slices.
fn rows<S>(m: &Matrix<S>) -> std::slice::ChunksExact<'_, S> {
    m.as_slice().chunks_exact(m.cols())
}

/// The refusal of a gradient whose estimated accuracy is below
/// [`DERIVATIVE_BITS`] (the caller decides that), naming the first word
/// under `mu` whose uncertainty is below [`DENSE_UNCERTAINTY`], if any.
/// `O(n²)`.
pub(crate) fn refusal<S: Scalar>(
    accuracy: VjpAccuracy,
    mu: &Matrix<S>,
    weights: &Matrix<S>,
    rooting: Rooting,
) -> Numerical {
    let mu = mu.map(Scalar::to_f64);
    let word = nearly_certain_word(&mu, weights, rooting, DENSE_UNCERTAINTY).map(|(m, _)| m);
    Numerical::Inaccurate {
        cause: Inaccuracy::SmallDerivative { word },
        bits: accuracy.bits() as u32,
    }
}

/// The seed with a constant `c_m` taken from every allowed arc into each
/// word `m`, as the dense product uses it: `ḡ'_hm = ḡ_hm − c_m`, with
/// `c_m = Σ_h μ_hm ḡ_hm` (the marginal-weighted mean of the column, `μ`
/// the marginals `mu`) where that lowers the column's largest `|ḡ|` (else
/// `c_m = 0`), and the column exactly zero when every allowed arc into `m`
/// has the same seed. Arcs of weight zero get `0`. `O(n²)`: three sweeps
/// row by row, each column's sums taken in the order of `h` (for `f64`,
/// `centred_f64`: two, the same values bit for bit, branch-free under one
/// `pulp` dispatch, [`single_root_constant`] folded into the first sweep).
///
/// Why the product does not change, and what it gains:
/// [`Dense`](super::Dense)'s `marginals_vjp`.
pub(crate) fn centred_with<S: Scalar>(
    seed: &Matrix<S>,
    weights: &Matrix<S>,
    mu: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    if let (Some(seed), Some(weights), Some(mu)) = (as_f64(seed), as_f64(weights), as_f64(mu)) {
        let n1 = weights.rows();
        let single = rooting == Rooting::Single;
        let centred = centred_f64(
            seed.as_slice(),
            weights.as_slice(),
            mu.as_slice(),
            n1,
            single,
        );
        if let Some(centred) = from_f64(Matrix::from_row_major(n1, n1, centred)) {
            return centred;
        }
    }
    centred_generic(seed, weights, mu, rooting)
}

/// [`centred_with`] for any scalar.
fn centred_generic<S: Scalar>(
    seed: &Matrix<S>,
    weights: &Matrix<S>,
    mu: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    let n1 = weights.rows();
    let mut centred = Matrix::zeros(n1, n1);
    if rooting == Rooting::Single && single_root_constant(seed, weights) {
        return centred;
    }
    // Every row zipped with the per-column state: the weights' layout
    // keeps column `0` and the diagonal zero, so `w ≠ 0` marks the arcs.
    fn rows<S>(m: &Matrix<S>, n1: usize) -> std::slice::ChunksExact<'_, S> {
        m.as_slice().chunks_exact(n1)
    }
    // Per column: whether an allowed arc was seen, its first seed, whether
    // every allowed seed equals it, `c = Σ_h μ_hm ḡ_hm`, the largest `|ḡ|`.
    let mut seen = vec![false; n1];
    let mut first = vec![S::zero(); n1];
    let mut equal = vec![true; n1];
    let mut c = vec![S::zero(); n1];
    let mut plain = vec![0.0f64; n1];
    for ((sr, wr), ur) in rows(seed, n1).zip(rows(weights, n1)).zip(rows(mu, n1)) {
        let state = seen
            .iter_mut()
            .zip(first.iter_mut())
            .zip(equal.iter_mut())
            .zip(c.iter_mut())
            .zip(plain.iter_mut());
        for ((((((seen, first), equal), c), plain), s), (w, u)) in
            state.zip(sr).zip(wr.iter().zip(ur))
        {
            if w.is_zero() {
                continue;
            }
            if !*seen {
                *seen = true;
                *first = s.clone();
                // NaN equals nothing, not even itself.
                *equal = !s.to_f64().is_nan();
            } else if *equal {
                *equal = s == first;
            }
            *c = c.clone() + u.clone() * s.clone();
            *plain = plain.max((s.clone() - S::zero()).to_f64().abs());
        }
    }
    // A column with no allowed arc or one seed (every tree adds the same
    // seed there: exactly zero) stays zero; `c` only where it is finite.
    let live: Vec<bool> = seen.iter().zip(&equal).map(|(&s, &e)| s && !e).collect();
    let finite: Vec<bool> = c.iter().map(|c| c.to_f64().is_finite()).collect();
    let mut centre = vec![0.0f64; n1];
    for (sr, wr) in rows(seed, n1).zip(rows(weights, n1)) {
        let state = centre.iter_mut().zip(&c).zip(live.iter().zip(&finite));
        for (((centre, c), (&live, &finite)), (s, w)) in state.zip(sr.iter().zip(wr)) {
            if live && finite && !w.is_zero() {
                *centre = centre.max((s.clone() - c.clone()).to_f64().abs());
            }
        }
    }
    for ((c, &finite), (&centre, &plain)) in
        c.iter_mut().zip(&finite).zip(centre.iter().zip(&plain))
    {
        if !(finite && centre < plain) {
            *c = S::zero();
        }
    }
    for ((out, sr), wr) in centred
        .as_mut_slice()
        .chunks_exact_mut(n1)
        .zip(rows(seed, n1))
        .zip(rows(weights, n1))
    {
        for ((((out, s), w), c), &live) in out.iter_mut().zip(sr).zip(wr).zip(&c).zip(&live) {
            if live && !w.is_zero() {
                *out = s.clone() - c.clone();
            }
        }
    }
    centred
}

/// Whether every single-root tree adds the same seed: each word's
/// allowed word arcs share one seed `c_m`, and every allowed root arc
/// `0 → m` has seed `c_m + r` with one `r` (a word whose only allowed arc
/// is its root arc adds the same to every tree). Every tree has one arc
/// into each word and one root arc, so its seed sum is `Σ_m c_m + r`, and
/// the product is exactly zero. `O(n²)`.
pub(crate) fn single_root_constant<S: Scalar>(seed: &Matrix<S>, weights: &Matrix<S>) -> bool {
    let n1 = weights.rows();
    let mut r: Option<S> = None;
    for m in 1..n1 {
        let mut words = (1..n1).filter(|&h| h != m && !weights[(h, m)].is_zero());
        let Some(first) = words.next() else {
            continue;
        };
        let c = &seed[(first, m)];
        if !words.all(|h| seed[(h, m)] == *c) {
            return false;
        }
        if weights[(0, m)].is_zero() {
            continue;
        }
        let offset = seed[(0, m)].clone() - c.clone();
        match &r {
            Some(r) if *r != offset => return false,
            Some(_) => {}
            None => r = Some(offset),
        }
    }
    true
}

/// Whether each allowed arc `h → m` lies in some tree, row-major in the
/// `(n+1) × (n+1)` layout: `h` must be reachable from the root over allowed
/// arcs without entering `m` (otherwise every tree through `h → m` closes a
/// cycle through `m`). Single-root, a root arc `0 → m` also needs every
/// word reachable from `m` over word arcs, and a word arc is judged as
/// multi-root (a necessary condition: it may keep an arc in no single-root
/// tree, which only makes the estimate more cautious). One search per word,
/// `O(n³)`.
pub(crate) fn live_arcs<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> Vec<bool> {
    let n1 = weights.rows();
    let allowed = |h: usize, m: usize| h != m && m > 0 && !weights[(h, m)].is_zero();
    // The nodes reached from `start` over allowed arcs, never entering
    // `avoid` (nor the root: arcs into it do not exist).
    let reach = |start: usize, avoid: usize, words_only: bool| {
        let mut seen = vec![false; n1];
        let mut stack = vec![start];
        seen[start] = true;
        while let Some(h) = stack.pop() {
            if words_only && h == 0 {
                continue;
            }
            for (k, seen_k) in seen.iter_mut().enumerate().skip(1) {
                if k != avoid && !*seen_k && allowed(h, k) {
                    *seen_k = true;
                    stack.push(k);
                }
            }
        }
        seen
    };
    let mut live = vec![false; n1 * n1];
    for m in 1..n1 {
        let seen = reach(0, m, false);
        for h in (0..n1).filter(|&h| allowed(h, m) && seen[h]) {
            live[h * n1 + m] = true;
        }
        if rooting == Rooting::Single && allowed(0, m) {
            live[m] = reach(m, 0, true).iter().skip(1).all(|&s| s);
        }
    }
    live
}

/// [`centred_with`] on `f64` row-major slices, the same values bit for bit
/// (each column's `c_m` summed in the order of `h`, the same differences):
/// block by block of columns, one sweep down the rows gathers, per column
/// side by side, the root arc apart, the word arcs' count, first seed and
/// whether the others equal it (which also decides
/// [`single_root_constant`]), `c_m`, the largest `|ḡ|` and the largest and
/// least `ḡ` (which give the largest `|ḡ − c_m|`, and so whether `c_m`
/// stays); the block's columns are then decided in its lanes and a second
/// sweep down the same rows writes `ḡ − c_m`. Branch-free, explicit `pulp`
/// vectors down the rows of a block of columns. `O(n²)`; single-root, the
/// constant's state in this thread's scratch ([`Scratch`]), one allocation
/// for the result. Deciding each block's columns in its lanes, not in a
/// scalar loop over every column between two sweeps (which read back, one
/// lane at a time, the vectors just stored, and wrote the decisions one
/// lane at a time for vector loads), took the centring from 2.89k to 2.40k
/// instructions a call at `n = 10` and from 37.0k to 34.1k at `n = 36`
/// (`valgrind --tool=callgrind`, AVX2, inclusive, `op_loop grad_entropy N
/// R 0 f64`), and `grad_entropy` 0–3% faster at `n = 10`–`20` (`perf stat
/// -e task-clock`, 300,000 and 100,000 calls, medians of 5 alternated, a
/// busy machine; within the noise at `n = 36` and on the corpus). Taking the
/// largest `|ḡ − c_m|` from the extremes, not from a sweep of its own
/// (which also had to write the block again where `c_m` was dropped),
/// took the call from 502.8k to 491.0k instructions at `n = 36` and from
/// 52.9k to 51.7k at `n = 10`
/// (`valgrind --tool=callgrind`, AVX2, `op_loop grad_entropy N R 0 f64`).
/// At `n = 36` the centring and the estimate (`over_f64`) together went
/// from 28.2% to 11.3% of the call (`perf record -e cpu-clock` of
/// `cargo run --release -p spantree-bench --example op_loop --
/// grad_entropy 36 20000 0 f64`, AVX-512, a busy machine), and per call
/// from 81k to 43k instructions and 97k to 40k (`valgrind
/// --tool=callgrind`, AVX2, inclusive, memset counted as callgrind counts
/// it).
fn centred_f64(seed: &[f64], w: &[f64], mu: &[f64], n1: usize, single: bool) -> Vec<f64> {
    Arch::new().dispatch(CentredF64 {
        seed,
        w,
        mu,
        n1,
        single,
    })
}

/// The arguments of [`centred_f64`], run under one instruction-set
/// dispatch so that its element-wise loops use the widest vectors the CPU
/// has.
#[derive(Clone, Copy)]
struct CentredF64<'a> {
    seed: &'a [f64],
    w: &'a [f64],
    mu: &'a [f64],
    n1: usize,
    single: bool,
}

impl WithSimd for CentredF64<'_> {
    type Output = Vec<f64>;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> Vec<f64> {
        let CentredF64 {
            seed,
            w,
            mu,
            n1,
            single,
        } = self;
        if n1 < Sm::F64_LANES {
            return centred_f64_body(pulp::Scalar::new(), seed, w, mu, n1, single);
        }
        centred_f64_body(simd, seed, w, mu, n1, single)
    }
}

/// The body of [`centred_f64`], inlined into its dispatch. Its sweeps run
/// over blocks of `Sm::F64_LANES` columns ([`column_blocks`]) down the
/// rows, the block's per-column state in vector registers: per element
/// three loads (two in the second sweep, and its store) and a few
/// branch-free vector operations, no scalar remainder per row.
/// Single-root, the state the constant needs is kept in this thread's
/// scratch ([`Scratch`]).
#[inline(always)]
fn centred_f64_body<Sm: Simd>(
    simd: Sm,
    seed: &[f64],
    w: &[f64],
    mu: &[f64],
    n1: usize,
    single: bool,
) -> Vec<f64> {
    centred_f64_sweeps(simd, [seed, w, mu], n1, single, &mut Scratch::take())
}

/// The sweep of [`centred_f64_body`], block by block of columns: down the
/// rows it gathers the block's state in vector registers, decides from it
/// which columns are live and which keep `c`, and writes `ḡ − c` down the
/// same rows at once (in cache). The single-root constant reads the
/// state kept in `state` (empty) only when no word's seeds differ (else it
/// fails at once). Branch-free per column: the per-column decisions, once
/// a scalar loop between two sweeps over vectors just stored (scalar
/// stores under vector loads: stalled store forwarding), are taken in the
/// block's lanes.
#[inline(always)]
fn centred_f64_sweeps<Sm: Simd>(
    simd: Sm,
    [seed, w, mu]: [&[f64]; 3],
    n1: usize,
    single: bool,
    state: &mut Vec<f64>,
) -> Vec<f64> {
    // Single-root, per column for the constant: [whether a word arc is
    // allowed (1 or 0), first word seed, whether every later word seed
    // equals it (1 or 0)]; the root arc's seed and whether it is allowed
    // are row 0.
    state.resize(if single { 3 * n1 } else { 0 }, 0.0);
    let (count, rest) = state.split_at_mut(if single { n1 } else { 0 });
    let (first, equal) = rest.split_at_mut(if single { n1 } else { 0 });
    let (zero, one) = (simd.splat_f64s(0.0), simd.splat_f64s(1.0));
    let minus_zero = simd.splat_f64s(-0.0);
    let (below, above) = (
        simd.splat_f64s(f64::NEG_INFINITY),
        simd.splat_f64s(f64::INFINITY),
    );
    let none = simd.greater_than_f64s(zero, zero);
    // Lane `0` of the block at `0`: column `0`, never live.
    let column_zero = simd.equal_f64s(simd.partial_load_f64s(&[1.0]), one);
    // Whether a word's seeds differ (lanes of words `m ≥ 1`).
    let mut differs = none;
    let mut out = vec![0.0f64; n1 * n1];
    for at in column_blocks(n1, Sm::F64_LANES) {
        let load = |m: &[f64], h: usize| load_lanes(simd, m, h * n1 + at);
        let (s0, root, u) = (load(seed, 0), allowed(simd, load(w, 0)), load(mu, 0));
        let a = root;
        let mut cv = simd.select_f64s(a, simd.add_f64s(zero, simd.mul_f64s(u, s0)), zero);
        let mut pv = simd.select_f64s(a, max_kept(simd, zero, simd.abs_f64s(s0)), zero);
        // The largest and the least allowed seed (what the largest
        // `|ḡ − c|` needs, below; ±∞ where none).
        let mut hv = simd.select_f64s(a, s0, below);
        let mut lv = simd.select_f64s(a, s0, above);
        // Whether a word arc was seen, and whether a later one differed
        // from the first (masks: the count only matters above zero).
        let (mut seen, mut differ, mut fv) = (none, none, zero);
        for h in 1..n1 {
            let (s, u) = (load(seed, h), load(mu, h));
            let a = allowed(simd, load(w, h));
            let fresh = simd.and_m64s(a, simd.not_m64s(seen));
            let later = simd.and_m64s(a, seen);
            let other = simd.and_m64s(later, simd.not_m64s(simd.equal_f64s(s, fv)));
            differ = simd.or_m64s(differ, other);
            seen = simd.or_m64s(seen, a);
            fv = simd.select_f64s(fresh, s, fv);
            // `c + (−0) = c` bit for bit (a NaN too): `c` moves where `a`.
            cv = simd.add_f64s(cv, simd.select_f64s(a, simd.mul_f64s(u, s), minus_zero));
            pv = max_kept(simd, pv, simd.select_f64s(a, simd.abs_f64s(s), zero));
            hv = simd.max_f64s(simd.select_f64s(a, s, below), hv);
            lv = simd.min_f64s(simd.select_f64s(a, s, above), lv);
        }
        let words = seen;
        let other_words = if at == 0 {
            simd.and_m64s(differ, simd.not_m64s(column_zero))
        } else {
            differ
        };
        differs = simd.or_m64s(differs, other_words);
        if single {
            store_lanes(simd, count, at, simd.select_f64s(words, one, zero));
            store_lanes(simd, first, at, fv);
            store_lanes(simd, equal, at, simd.select_f64s(differ, zero, one));
        }
        // Whether every allowed seed of the column is equal (no NaN): the
        // root arc's and, if any, the word arcs' (all equal to the first);
        // else the word arcs' alone. The column is live where an arc is
        // allowed and not every seed is equal (column `0` never).
        let later = simd.not_m64s(differ);
        let not_nan = |x: Sm::f64s| simd.equal_f64s(x, x);
        let with_root = simd.and_m64s(
            not_nan(s0),
            simd.or_m64s(
                simd.not_m64s(words),
                simd.and_m64s(later, simd.equal_f64s(fv, s0)),
            ),
        );
        let without_root = simd.and_m64s(words, simd.and_m64s(not_nan(fv), later));
        let all_equal = simd.or_m64s(
            simd.and_m64s(root, with_root),
            simd.and_m64s(simd.not_m64s(root), without_root),
        );
        let live = simd.and_m64s(simd.or_m64s(root, words), simd.not_m64s(all_equal));
        let live = if at == 0 {
            simd.and_m64s(live, simd.not_m64s(column_zero))
        } else {
            live
        };
        // Where live, whether `c` is finite (`c − c = 0`; a non-finite `c`
        // is dropped below: no `max` with it). The largest `|ḡ − c|` over
        // the allowed arcs comes from the column's largest and least seed;
        // `c` is kept where finite and lowering the largest `|ḡ|` (else
        // `0`); then `ḡ − c` is written down the rows. Where `c` is finite
        // so is every allowed seed (each adds `μ ḡ` to it, a NaN from
        // `0 · ∞`), and `ḡ ↦ fl(ḡ − c)` is monotone, so the largest
        // `|fl(ḡ − c)|` is at the largest or the least `ḡ`: the value the
        // sweep down the rows found before (only `< |ḡ|` reads it).
        let finite = simd.and_m64s(live, simd.equal_f64s(simd.sub_f64s(cv, cv), zero));
        let high = simd.abs_f64s(simd.sub_f64s(hv, cv));
        let low = simd.abs_f64s(simd.sub_f64s(lv, cv));
        let centre_v = simd.select_f64s(finite, simd.max_f64s(high, low), zero);
        // `c` stays where finite and lowering the largest `|ḡ|` (a column
        // that is not live is zeros whatever its `c`; where it is live,
        // `finite` is whether `c` is), `ḡ − 0` where it goes.
        let keep = simd.and_m64s(finite, simd.less_than_f64s(centre_v, pv));
        let cv = simd.select_f64s(keep, cv, zero);
        for h in 0..n1 {
            let on = simd.and_m64s(live, allowed(simd, load(w, h)));
            let d = simd.sub_f64s(load(seed, h), cv);
            store_lanes(simd, &mut out, h * n1 + at, simd.select_f64s(on, d, zero));
        }
    }
    // `single_root_constant`: the word arcs share one seed (no word's
    // seeds differ), and every root arc (of a word with word arcs) the
    // same offset from it: then every tree adds the same seed.
    if single && simd.reduce_max_f64s(simd.select_f64s(differs, one, zero)) == 0.0 {
        let (s0, w0) = (&seed[..n1], &w[..n1]);
        let mut offset: Option<f64> = None;
        let mut constant = true;
        for m in 1..n1 {
            let (root, words) = (w0[m] != 0.0, count[m] > 0.0);
            if words {
                constant &= equal[m] == 1.0;
                if root {
                    let r = s0[m] - first[m];
                    match offset {
                        Some(o) if o != r => constant = false,
                        Some(_) => {}
                        None => offset = Some(r),
                    }
                }
            }
        }
        if constant {
            out.fill(0.0);
        }
    }
    out
}

/// `w ≠ 0` lane by lane (true for a NaN, as `!=` is).
#[inline(always)]
fn allowed<Sm: Simd>(simd: Sm, w: Sm::f64s) -> Sm::m64s {
    simd.not_m64s(simd.equal_f64s(w, simd.splat_f64s(0.0)))
}

/// `acc.max(x)` lane by lane as `f64::max` gives it for an `acc` that is
/// never NaN (nor `−0`, nor `x`): `x` where it is larger, `acc` otherwise,
/// a NaN `x` too (`f64::max` returns the other operand, x86's `max` its
/// second when either is NaN: `acc` both ways).
#[inline(always)]
fn max_kept<Sm: Simd>(simd: Sm, acc: Sm::f64s, x: Sm::f64s) -> Sm::f64s {
    simd.max_f64s(x, acc)
}

/// [`VjpAccuracy::over`] over every allowed arc (`live` `None`) when the
/// scalar is `f64` (`None` otherwise): the same terms, summed per column
/// first (side by side in vector registers, a block of columns down the
/// rows, branch-free, with `|X|` transposed once so that arc `h → m` reads
/// `|X_{m−1,h−1}|` along row `h − 1`) and the columns after. That order differs from
/// `over`'s row-major one, which moves each sum by at most `(n+1)² ε`
/// relative; the error is raised by the factor `1 + 4 (n+1)² ε`
/// (`6e-13` at `n = 36`) so that it is never below the row-major estimate
/// relative to the norm: at least as conservative. Single-root the same
/// pass sums the residuals of [`residual_accuracy`] (the same bits as its
/// own pass, [`ColumnResiduals`], which read `w` and `v` again: 2.4% of
/// `op_loop grad_entropy 36 20000 0 f64` in `perf`, AVX-512). `O(n²)`, in
/// this thread's scratch ([`Scratch`]): no allocation.
fn over_f64<S: Scalar>(product: &DenseProduct<'_, S>) -> Option<Estimates> {
    let p = product;
    let (cs, w, x) = (as_f64(p.centred)?, as_f64(p.weights)?, as_f64(p.x)?);
    let (mu, v) = (as_f64(p.mu)?, as_f64(p.v)?);
    Some(Arch::new().dispatch(OverF64 {
        cs: cs.as_slice(),
        w: w.as_slice(),
        x: x.as_slice(),
        mu: mu.as_slice(),
        v: v.as_slice(),
        n1: p.weights.rows(),
        single: p.rooting == Rooting::Single,
    }))
}

/// The arguments of [`over_f64`], run under one instruction-set dispatch
/// so that its element-wise loops use the widest vectors the CPU has.
#[derive(Clone, Copy)]
struct OverF64<'a> {
    cs: &'a [f64],
    w: &'a [f64],
    x: &'a [f64],
    mu: &'a [f64],
    v: &'a [f64],
    n1: usize,
    single: bool,
}

impl WithSimd for OverF64<'_> {
    type Output = Estimates;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> Estimates {
        // The rooting as a constant: each body keeps only its own work
        // (the top arc's sums multi-root, the residuals single-root).
        match (self.n1 <= Sm::F64_LANES, self.single) {
            (true, false) => over_f64_body::<_, false>(pulp::Scalar::new(), self),
            (true, true) => over_f64_body::<_, true>(pulp::Scalar::new(), self),
            (false, false) => over_f64_body::<_, false>(simd, self),
            (false, true) => over_f64_body::<_, true>(simd, self),
        }
    }
}

/// The body of [`over_f64`], inlined into its dispatch: over blocks of
/// `Sm::F64_LANES` words ([`column_blocks`]) down the rows, each block's
/// per-column sums in vector registers, added in the order of `h` per
/// column as before (the same sums bit for bit whatever the lanes).
#[inline(always)]
fn over_f64_body<Sm: Simd, const SINGLE: bool>(simd: Sm, args: OverF64<'_>) -> Estimates {
    let OverF64 { w, v, n1, .. } = args;
    let single = SINGLE;
    if n1 == 1 {
        let zero = VjpAccuracy {
            error: 0.0,
            norm: 0.0,
        };
        return Estimates {
            plain: zero,
            floored: zero,
            residual: single.then(|| residual_norm(&[], &[], &[], &[], w, v, n1)),
        };
    }
    // Per word `m = j + 1` (index `j`): |X|ᵀ (`n × n`), then the diagonal
    // read `|X_jj|` (none single-root into word 1), `m` itself, and the
    // column's sums: the allowed arcs into it, Σ size² (the top arc's
    // apart), Σ size (the balanced size of the top arc), the top arc's size
    // (multi-root, the first `h ≠ m` whose marginal exceeds 1/2), Σ v², the
    // largest |ḡ'| and the largest size; single-root, the residual of the
    // column's identity (`residual_accuracy`: Σ_h v̂_hm over the allowed
    // arcs, compensated) and its compensation.
    // |X|ᵀ row by row, each read down a column of `X` (written in turn:
    // 4.5 instructions an entry against 9 for the scatter down the columns
    // of |X|ᵀ, `valgrind --tool=callgrind` on `cargo run --release -p
    // spantree-bench --example abs_transpose 36 1000`). In this thread's
    // scratch ([`Scratch`]): no allocation per call.
    over_f64_columns::<Sm, SINGLE>(simd, args, &mut Scratch::take())
}

/// The sums of [`over_f64_body`] in `buf` (this thread's scratch, empty),
/// reserved whole at once (a reserve of `n² + 11n` grown to `n² + 13n`
/// had reallocated and copied `|X|ᵀ` on every call).
#[inline(always)]
fn over_f64_columns<Sm: Simd, const SINGLE: bool>(
    simd: Sm,
    args: OverF64<'_>,
    buf: &mut Vec<f64>,
) -> Estimates {
    let OverF64 {
        cs,
        w,
        x,
        mu,
        v,
        n1,
        ..
    } = args;
    let single = SINGLE;
    let n = n1 - 1;
    buf.reserve(n * n + 13 * n);
    for i in 0..n {
        buf.extend(x.chunks_exact(n).map(|xr| xr[i].abs()));
    }
    buf.resize(n * n + 13 * n, 0.0);
    let (xt, rest) = buf.split_at_mut(n * n);
    let xt = &*xt;
    let (diagonal, rest) = rest.split_at_mut(n);
    let (words, rest) = rest.split_at_mut(n);
    let (heads, rest) = rest.split_at_mut(n);
    let (squares, rest) = rest.split_at_mut(n);
    let (balanced, rest) = rest.split_at_mut(n);
    let (top_size, rest) = rest.split_at_mut(n);
    let (norms, rest) = rest.split_at_mut(n);
    let (scales, rest) = rest.split_at_mut(n);
    let (largests, rest) = rest.split_at_mut(n);
    let (sums, rest) = rest.split_at_mut(n);
    let (compensations, rest) = rest.split_at_mut(n);
    let (l1, l2) = rest.split_at_mut(n);
    for (j, (d, m)) in diagonal.iter_mut().zip(words.iter_mut()).enumerate() {
        *d = if single && j == 0 {
            0.0
        } else {
            x[j * n + j].abs()
        };
        *m = (j + 1) as f64;
    }
    let roots = w[1..n1].iter().filter(|&&w| w != 0.0).count();
    // Single-root, the only allowed root arc is in every tree.
    let skip_root = single && roots == 1;
    let (zero, one, half) = (
        simd.splat_f64s(0.0),
        simd.splat_f64s(1.0),
        simd.splat_f64s(0.5),
    );
    let none = simd.greater_than_f64s(zero, zero);
    for at in column_blocks(n, Sm::F64_LANES) {
        let load = |m: &[f64], k: usize| load_lanes(simd, m, k);
        let diagonal = load(diagonal, at);
        let words = load(words, at);
        let (mut heads_v, mut squares_v, mut balanced_v, mut top_v) = (zero, zero, zero, zero);
        let (mut norms_v, mut scales_v, mut largests_v) = (zero, zero, zero);
        let (mut sums_v, mut compensations_v, mut l1_v, mut l2_v) = (zero, zero, zero, zero);
        let mut found = none;
        for h in 0..n1 {
            // Arc `h → m` of lane `j` at `h n1 + 1 + j`.
            let row = h * n1 + 1 + at;
            let wr = load(w, row);
            let counted = allowed(simd, wr);
            heads_v = simd.add_f64s(heads_v, simd.select_f64s(counted, one, zero));
            let vr = load(v, row);
            if single {
                // `ColumnResiduals`: `+0` where the arc is not allowed or
                // is the diagonal (only the block holding word `h` has it).
                let on = if h > at && h <= at + Sm::F64_LANES {
                    let diagonal = simd.equal_f64s(words, simd.splat_f64s(h as f64));
                    simd.and_m64s(counted, simd.not_m64s(diagonal))
                } else {
                    counted
                };
                let x = simd.select_f64s(on, vr, zero);
                let t = simd.add_f64s(sums_v, x);
                let bv = simd.sub_f64s(t, sums_v);
                let av = simd.sub_f64s(t, bv);
                let lost = simd.add_f64s(simd.sub_f64s(sums_v, av), simd.sub_f64s(x, bv));
                sums_v = t;
                compensations_v = simd.add_f64s(compensations_v, lost);
                let w_on = simd.select_f64s(on, wr, zero);
                l1_v = simd.add_f64s(l1_v, w_on);
                l2_v = simd.add_f64s(l2_v, simd.mul_f64s(w_on, w_on));
            }
            if skip_root && h == 0 {
                continue;
            }
            let is_top = if single {
                none
            } else {
                let above = simd.greater_than_f64s(load(mu, row), half);
                // Only the block holding word `h` has a lane with `m = h`.
                let above = if h > at && h <= at + Sm::F64_LANES {
                    let other = simd.not_m64s(simd.equal_f64s(words, simd.splat_f64s(h as f64)));
                    simd.and_m64s(other, above)
                } else {
                    above
                };
                let first = simd.and_m64s(simd.not_m64s(found), above);
                found = simd.or_m64s(found, first);
                first
            };
            // What arc `h → m` reads of `X` besides the diagonal: the root
            // row `|X_{j0}|` single-root (and not the diagonal), none
            // multi-root, `|X_{j,h−1}|` for a word (none single-root from 1).
            let read = if h == 0 {
                if single {
                    load(xt, at)
                } else {
                    diagonal
                }
            } else if single && h == 1 {
                diagonal
            } else {
                simd.add_f64s(diagonal, load(xt, (h - 1) * n + at))
            };
            let size = simd.mul_f64s(simd.abs_f64s(wr), read);
            let rest = simd.and_m64s(counted, simd.not_m64s(is_top));
            let square = simd.mul_f64s(size, size);
            squares_v = simd.add_f64s(squares_v, simd.select_f64s(rest, square, zero));
            if !single {
                balanced_v = simd.add_f64s(balanced_v, simd.select_f64s(rest, size, zero));
                top_v = simd.select_f64s(simd.and_m64s(counted, is_top), size, top_v);
            }
            let vv = simd.mul_f64s(vr, vr);
            norms_v = simd.add_f64s(norms_v, simd.select_f64s(counted, vv, zero));
            let scale = simd.select_f64s(counted, simd.abs_f64s(load(cs, row)), zero);
            scales_v = max_kept(simd, scales_v, scale);
            // An arc not allowed has size `+0` (or NaN), which moves no maximum.
            largests_v = max_kept(simd, largests_v, size);
        }
        store_lanes(simd, heads, at, heads_v);
        store_lanes(simd, squares, at, squares_v);
        store_lanes(simd, balanced, at, balanced_v);
        store_lanes(simd, top_size, at, top_v);
        store_lanes(simd, norms, at, norms_v);
        store_lanes(simd, scales, at, scales_v);
        store_lanes(simd, largests, at, largests_v);
        store_lanes(simd, sums, at, sums_v);
        store_lanes(simd, compensations, at, compensations_v);
        store_lanes(simd, l1, at, l1_v);
        store_lanes(simd, l2, at, l2_v);
    }
    let (mut scale, mut norm, mut sizes, mut largest) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for j in 0..n {
        // A word with one allowed head: every arc into it is in every tree.
        if heads[j] == 1.0 {
            continue;
        }
        // Multi-root, the top arc's size is the sum of the column's others.
        let t = if top_size[j] > 0.0 {
            balanced[j]
        } else {
            top_size[j]
        };
        sizes += squares[j] + t * t;
        norm += norms[j];
        scale = scale.max(scales[j]);
        largest = largest.max(largests[j]);
    }
    let order = 1.0 + 4.0 * (n1 * n1) as f64 * f64::EPSILON;
    Estimates {
        residual: single.then(|| residual_norm(sums, compensations, l1, l2, w, v, n1)),
        ..Estimates::of_sums(sizes, largest, scale, norm, single, order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{by_lanes, stream};

    /// Weights in their layout (column 0 and the diagonal zero) with
    /// forbidden arcs, seeds with ties, constant columns, NaNs, large
    /// offsets, marginals with entries above 1/2: case `k` of a sweep.
    fn inputs(n1: usize, k: u64) -> [Matrix<f64>; 3] {
        let mut r = stream(k + 7 * n1 as u64);
        let mut w = Matrix::from_fn(n1, n1, |h, m| {
            let u = r();
            if m == 0 || h == m || (k % 3 == 1 && u < -0.5) {
                0.0
            } else {
                u.abs() + 0.1
            }
        });
        // A word with one head, one with none but its root arc.
        if k % 4 == 2 && n1 > 3 {
            for h in 0..n1 {
                w[(h, 2)] = if h == 3 { 1.0 } else { 0.0 };
                w[(h, 3)] = if h == 0 { 1.0 } else { 0.0 };
            }
        }
        let offset = [0.0, 300.0, -1e6, 1e-3][(k % 4) as usize];
        let mut seed = Matrix::from_fn(n1, n1, |_, _| r() + offset);
        match k % 5 {
            // Single-root constant: one seed per column, one root offset.
            1 => {
                seed = Matrix::from_fn(
                    n1,
                    n1,
                    |h, m| if h == 0 { m as f64 + 2.5 } else { m as f64 },
                )
            }
            // A constant column, a tie in another, a NaN.
            2 if n1 > 4 => {
                for h in 0..n1 {
                    seed[(h, 1)] = 4.0;
                }
                seed[(2, 3)] = seed[(1, 3)];
                seed[(1, 4)] = f64::NAN;
            }
            // Word arcs constant per column, root arcs not one offset.
            3 => {
                seed = Matrix::from_fn(
                    n1,
                    n1,
                    |h, m| if h == 0 { (m * m) as f64 } else { m as f64 },
                )
            }
            // A root NaN seed, an infinite one.
            4 if n1 > 3 => {
                seed[(0, 1)] = f64::NAN;
                seed[(2, 3)] = f64::INFINITY;
            }
            _ => {}
        }
        let mu = Matrix::from_fn(n1, n1, |h, m| {
            let u = r().abs();
            if (h + m + k as usize) % 4 == 0 {
                0.5 + u / 2.0
            } else {
                u / n1 as f64
            }
        });
        [w, seed, mu]
    }

    /// The sizes `n + 1` of the sweeps: every remainder of the column
    /// blocks (`n + 1` columns for the centring, `n` for the estimate) at
    /// 1, 4 and 8 lanes: fewer columns than lanes (the scalar path), whole
    /// blocks, a last block overlapping the one before.
    const SIZES: [usize; 20] = [
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 18, 33, 36, 37, 38,
    ];

    /// The `f64` path of the centring against the generic one, bit for
    /// bit, over every case of the sweep (both rootings).
    #[test]
    fn centred_f64_is_the_generic_centring() {
        let mut constant = 0;
        for rooting in [Rooting::Multi, Rooting::Single] {
            for n1 in SIZES {
                for k in 0..20 {
                    let [w, seed, mu] = inputs(n1, k);
                    let fast = centred_with(&seed, &w, &mu, rooting);
                    let generic = centred_generic(&seed, &w, &mu, rooting);
                    let bits = |m: &Matrix<f64>| {
                        m.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                    };
                    assert_eq!(
                        bits(&fast),
                        bits(&generic),
                        "{rooting:?} n1 = {n1} case {k}"
                    );
                    constant +=
                        usize::from(rooting == Rooting::Single && single_root_constant(&seed, &w));
                }
            }
        }
        assert!(constant > 0, "no single-root constant seed in the sweep");
    }

    /// The residual second opinion on a product whose identities' sums are
    /// known by hand: single-root, `n = 3`, every arc allowed, `w_hm =
    /// 1 + h`. Column 1 holds `1e16, 1, −1e16` (sum exactly `1`, which a
    /// plain left-to-right sum loses to `0`), column 2 sums to `1/2`,
    /// column 3 to `−2`; the root row `1e16 + 1 + 1/4` rounds to `1e16 + 2`
    /// (doubles near `1e16` are `2` apart; a plain sum gives `1e16`). Each
    /// residual is weighted by its arcs' `‖w‖₂ / ‖w‖₁`: column 1 (heads
    /// 0, 2, 3) `√26 / 8`, column 2 (heads 0, 1, 3) `√21 / 7`, column 3
    /// (heads 0, 1, 2) `√14 / 6`, the root row (weights 1, 1, 1) `√3 / 3`.
    /// Error `max(plain, c ‖r'‖₂)`, `c` = [`SINGLE_ROOT_RESIDUAL_FACTOR`].
    #[test]
    fn residual_accuracy_sums_the_identities_by_hand() {
        let w = Matrix::from_fn(4, 4, |h, m| {
            if m == 0 || h == m {
                0.0
            } else {
                1.0 + h as f64
            }
        });
        let mut v = Matrix::zeros(4, 4);
        // Column 1: root, 2 → 1, 3 → 1.
        v[(0, 1)] = 1e16;
        v[(2, 1)] = 1.0;
        v[(3, 1)] = -1e16;
        // Column 2: root, 1 → 2, 3 → 2.
        v[(0, 2)] = 1.0;
        v[(1, 2)] = -0.25;
        v[(3, 2)] = -0.25;
        // Column 3: root, 1 → 3, 2 → 3.
        v[(0, 3)] = 0.25;
        v[(1, 3)] = -1.0;
        v[(2, 3)] = -1.25;
        let zero = Matrix::zeros(4, 4);
        let x = Matrix::zeros(3, 3);
        let product = DenseProduct {
            centred: &zero,
            weights: &w,
            x: &x,
            mu: &zero,
            v: &v,
            rooting: Rooting::Single,
        };
        let plain = VjpAccuracy {
            error: 1.0,
            norm: 7.0,
        };
        let root: f64 = 1e16 + 2.0;
        let term = |r: f64, l1: f64, l2: f64| (r * (l2.sqrt() / l1)).powi(2);
        let squares = term(1.0, 8.0, 26.0)
            + term(0.5, 7.0, 21.0)
            + term(-2.0, 6.0, 14.0)
            + term(root, 3.0, 3.0);
        let expected = SINGLE_ROOT_RESIDUAL_FACTOR * squares.sqrt();
        let second = residual_accuracy(&product, plain, None);
        assert_eq!((second.error, second.norm), (expected, 7.0));
        // Every identity exact: the plain estimate stands.
        let balanced = Matrix::from_fn(4, 4, |h, m| match (h, m) {
            (0, 1) => 1.0,
            (0, 2) => -1.0,
            (_, 1) if h > 1 => -0.5,
            (_, 2) if h != 2 => 0.5,
            _ => 0.0,
        });
        let product = DenseProduct {
            v: &balanced,
            ..product
        };
        assert_eq!(residual_accuracy(&product, plain, None), plain);
    }

    /// The `f64` path of the estimate against the generic one: the same
    /// terms in another order, so within `(n+1)² ε` of it relative, and
    /// never more bits than it keeps (error over norm at least the generic
    /// one's).
    #[test]
    fn over_f64_is_the_generic_estimate_reordered() {
        for rooting in [Rooting::Multi, Rooting::Single] {
            for n1 in SIZES.into_iter().skip(1) {
                for k in 0..20 {
                    let [w, seed, mu] = inputs(n1, k);
                    let centred = centred_generic(&seed, &w, &mu, rooting);
                    let mut r = stream(k + 101);
                    let x = Matrix::from_fn(n1 - 1, n1 - 1, |_, _| r());
                    let v = Matrix::from_fn(n1, n1, |_, _| r() * 1e-3);
                    let product = DenseProduct {
                        centred: &centred,
                        weights: &w,
                        x: &x,
                        mu: &mu,
                        v: &v,
                        rooting,
                    };
                    let fast = VjpAccuracy::over(&product, None);
                    let generic = VjpAccuracy::over_generic(&product, None);
                    let pairs = [(fast.plain, generic.plain), (fast.floored, generic.floored)];
                    for (f, g) in pairs {
                        let at = format!("{rooting:?} n1 = {n1} case {k}: {f:?} {g:?}");
                        if !g.error.is_finite() {
                            assert_eq!(f.error.to_bits(), g.error.to_bits(), "{at}");
                            continue;
                        }
                        let tolerance = 8.0 * (n1 * n1) as f64 * f64::EPSILON;
                        assert!((f.norm - g.norm).abs() <= tolerance * g.norm, "{at}");
                        assert!((f.error - g.error).abs() <= tolerance * g.error, "{at}");
                        assert!(f.error * g.norm >= g.error * f.norm, "{at}");
                    }
                }
            }
        }
    }

    /// The centring under every instruction set is the generic one bit
    /// for bit, and the estimate the same bits under every instruction set
    /// (each column's sums in the order of `h` whatever the lanes), with
    /// NaN and infinite seeds (in the sweep) and entries of `X` too.
    #[test]
    fn f64_bodies_agree_at_every_width() {
        for rooting in [Rooting::Multi, Rooting::Single] {
            let single = rooting == Rooting::Single;
            for n1 in SIZES {
                for k in 0..20 {
                    let [w, seed, mu] = inputs(n1, k);
                    let at = format!("{rooting:?} n1 = {n1} case {k}");
                    let generic = centred_generic(&seed, &w, &mu, rooting);
                    let bits = |m: &[f64]| m.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    let centred = by_lanes(CentredF64 {
                        seed: seed.as_slice(),
                        w: w.as_slice(),
                        mu: mu.as_slice(),
                        n1,
                        single,
                    });
                    for c in &centred {
                        assert_eq!(bits(c), bits(generic.as_slice()), "{at}");
                    }
                    let mut r = stream(k + 303);
                    let mut x = Matrix::from_fn(n1 - 1, n1 - 1, |_, _| r());
                    if k % 7 == 3 && n1 > 3 {
                        x[(1, 2)] = f64::NAN;
                        x[(2, 0)] = f64::INFINITY;
                    }
                    let v = Matrix::from_fn(n1, n1, |_, _| r() * 1e-3);
                    let op = OverF64 {
                        cs: generic.as_slice(),
                        w: w.as_slice(),
                        x: x.as_slice(),
                        mu: mu.as_slice(),
                        v: v.as_slice(),
                        n1,
                        single,
                    };
                    let estimates = by_lanes(op);
                    let bits = |e: &Estimates| {
                        [e.plain, e.floored].map(|a| [a.error.to_bits(), a.norm.to_bits()])
                    };
                    for e in &estimates {
                        assert_eq!(bits(e), bits(&estimates[0]), "{at}");
                    }
                    // Single-root, the residuals summed in the pass are
                    // their own pass's (`ColumnResiduals`) bit for bit.
                    let product = DenseProduct {
                        centred: &generic,
                        weights: &w,
                        x: &x,
                        mu: &mu,
                        v: &v,
                        rooting,
                    };
                    let residual = single.then(|| column_residual_norm(&product).to_bits());
                    for e in &estimates {
                        assert_eq!(e.residual.map(f64::to_bits), residual, "{at}");
                    }
                    // A weight on the diagonal (outside the layout): the
                    // residuals still leave the diagonal out, as their
                    // own pass does.
                    let mut diagonal = w.clone();
                    for h in 1..n1 {
                        diagonal[(h, h)] = 1.0;
                    }
                    let product = DenseProduct {
                        weights: &diagonal,
                        ..product
                    };
                    let residual = single.then(|| column_residual_norm(&product).to_bits());
                    let estimates = by_lanes(OverF64 {
                        w: diagonal.as_slice(),
                        ..op
                    });
                    for e in &estimates {
                        assert_eq!(e.residual.map(f64::to_bits), residual, "{at} diagonal");
                    }
                }
            }
        }
    }
}
