//! Cancellation-free elimination of the Laplacian on the graph weights
//! ([§2](crate::mathematics)): `ln Z` and the marginals with a small *relative* error
//! whatever the scales of the weights.
//!
//! # The multi-root step
//!
//! Eliminating word `k` from the multi-root Laplacian (one step of Gaussian
//! elimination with pivot `L[k][k]`) leaves the multi-root Laplacian of the
//! graph without `k`, whose weights are sums of non-negative terms:
//!
//! * pivot `d_k = ρ[k] + Σ_h A[h][k]`, formed afresh from the weights, never
//!   as a difference;
//! * arcs `A'[h][m] = A[h][m] + A[h][k] · A[k][m] / d_k`;
//! * root weights `ρ'[m] = ρ[m] + A[k][m] · ρ[k] / d_k`.
//!
//! The Schur complement keeps the off-diagonal entries `−A'` and the column
//! sums `ρ'` of a Laplacian (its diagonal `L'[m][m] = d_m − A[m][k]A[k][m]/d_k`
//! is the one subtraction of dense LU, and it is never formed: the next pivot
//! is summed afresh). So `Z_multi = det L = Π_k d_k`. This is the GTH
//! algorithm of Markov-chain numerics (Grassmann, Taksar & Heyman 1985;
//! O'Cinneide 1993; Alfa, Xue & Ye 2002): every operation adds, multiplies or
//! divides non-negative numbers, so each carries a relative error of one
//! rounding and none is amplified by cancellation. The same code runs on any
//! [`NonNegative`] number: `f64`, [`LnPositive`] (log space, no underflow),
//! exact rationals (one more exact oracle).
//!
//! # Single-root trees: the limit `t → 0`
//!
//! Give every root arc the weight `t ρ[m]`. A tree with `c ≥ 1` root children
//! then weighs `t^c w`, so `Z_multi(tρ) = t Z_single(ρ) + O(t²)`, i.e.
//! `Z_single = lim_{t→0} Z_multi(tρ) / t`, and the marginals converge to the
//! single-root ones (for `Z_single > 0`, the `t¹` terms dominate numerator and
//! denominator of every `μ_multi(tρ)`). Every quantity of the elimination is
//! a rational function of `t` built from non-negative terms, so its limit is
//! obtained exactly by computing with *leading terms* `v t^e` (a sum keeps the
//! terms of lowest order, a product adds orders): no `t` is ever chosen.
//! Root weights start at order `1`. A pivot whose word has arcs from other
//! words is of order `0` and ignores `ρ[k]`; a pivot without (the word must be
//! the only child of the root) is `ρ[k]` of order `1`, and then
//! `ρ[k] / d_k = 1` hands order-`0` root weights `A[k][m]` to its children.
//! `Z_multi(tρ)` has order exactly `1` when `Z_single > 0`, and
//! `Z_single = Π_k v(d_k)`. (With the natural order, the usual case: every pivot
//! but the last has word in-weight, and `Z_single = Π_{k<n} d_k(0) · ρ'_n`.)
//!
//! # Marginals without subtraction
//!
//! `μ(h→m) = A[h][m] · ∂ ln Z / ∂A[h][m]`. The derivative
//! `X[m][m] − X[m][h]` of [§1.2](crate::mathematics) cancels catastrophically when root
//! weights are small (both terms are `O(1/ρ)`, their difference `O(1)`). Here:
//! if `m` is never eliminated, column `m` enters the elimination only through
//! the *linear* updates `A'[h][m] = A[h][m] + (A[h][k]/d_k) A[k][m]`,
//! `ρ'[m] = ρ[m] + (ρ[k]/d_k) A[k][m]` with non-negative multipliers, and `Z`
//! through the reduced graph alone. So the gradient `ν_m = ∂ ln Z/∂(column m)`
//! flows backwards through non-negative multipliers:
//! `ν_m[k] = Σ_h (A[h][k]/d_k) ν'_m[h] + (ρ[k]/d_k) ν'_m[0]`, and in the
//! one-word graph at the end `ν_m[0] = 1/ρ'[m]`. Every word must be "the last
//! one" for its own column: a divide and conquer gives that in `O(n³)`. To get
//! the columns of one half `K` of the words, eliminate the other half, recurse
//! into the reduced graph on `K`, and push its gradients back through the
//! eliminated half; the same for the other half. The cost
//! `T(n) = 2 (eliminate n/2 words + push n/2 columns back) + 2 T(n/2)` is
//! about `1.3 n³` multiply-adds, against `≈ n³` for a dense LU plus inverse.
//!
//! # Derivatives: the same code on dual numbers
//!
//! The Jacobian `J_{ef} = ∂μ_e/∂θ_f` of the marginals in the scores is the
//! Hessian of `ln Z`, hence symmetric: the vector–Jacobian product `Jᵀ ḡ`
//! behind every gradient equals the Jacobian–vector product `J ḡ`, the
//! tangent of `μ(θ + t ḡ)` at `t = 0`. [`marginals_jvp`] runs the code above
//! on [`Dual`] numbers `(a ≥ 0, ȧ)` (or [`LnDual`], `(ln a, ȧ/a)`, in log
//! space), seeded with `ẇ = w ⊙ ḡ`; `Leading` terms carry duals as well, and
//! since their orders depend only on which weights are zero, the tangent of
//! the limit is the limit of the tangents. Cost: about three times the
//! multiply-adds of [`marginals`].
//!
//! *Values* are computed exactly as before. *Tangents*: each rounded
//! operation on tangents is the exact one on relatively perturbed
//! operands, so the computed `μ̇_e = Σ_f ḡ_f Σ_{paths f→e} Π ∂` carries an
//! absolute error of at most `γ_L Σ_f |ḡ_f| P_{ef}`, `P_{ef}` the same sum
//! over paths with every local partial in absolute value and `L = O(n)` the
//! longest path (forward error analysis of a sum of path products). All
//! local partials of `+` and `×` on non-negative values are non-negative;
//! the only negative one is that of a quotient in its denominator. The
//! quotients are the multipliers `A[h][k]/d_k` and `ρ[k]/d_k`, each of the
//! form `l = a / (a + c)` with `c` the other terms of the pivot, which
//! [`NonNegative::fraction`] sums afresh (prefix and suffix sums, `O(n)` per
//! pivot): `l̇ = l (1 − l) (ȧ/a − ċ/c)`, with `1 − l = c / d` a quotient of
//! non-negative numbers. So the positive and negative paths through a
//! multiplier are never formed apart: `P` is bounded by the derivative of
//! the same computation with every *relative* tangent of the inputs replaced
//! by its absolute value, and `μ̇_e` has an error of a few `n ε` relative to
//! `μ_e Σ_f |ḡ_f| · (sensitivity of ln μ_e to θ_f without cancellation)`.
//! What remains is the *true* cancellation of `(J ḡ)_e = Cov[1_e, ḡ(d)]`:
//! a covariance small against `μ_e · max|ḡ|` (nearly certain arcs; seeds
//! that almost cancel over every tree). Exact invariances take away its
//! avoidable part before the run (see `Eliminated`): constants on the arcs
//! into one word, or on the root arcs of single-root trees, do not change
//! `J ḡ`, so seeds are centred there; the arc whose marginal exceeds `1/2`
//! takes minus the sum of the rest of its column (every column of `J`
//! sums to zero). The measured bits are in the `spantree-faer` crate docs.
//!
//! # The root scaling: tangents with an exact integer part
//!
//! Multi-root, an entropy-type seed carries a large common offset `c` on the
//! root arcs (root scores far below the arcs'), split off as
//! `J ḡ = J (ḡ − c 1_root) + c J 1_root`. `J 1_root = Cov[1_e, #root arcs]`
//! is `e^{shift}` times smaller than `μ_e` when the trees nearly always have
//! one root arc, and on [`Dual`] its path sums cancel: every root-derived
//! quantity has a relative tangent near an integer (`ρ̇/ρ = 1`,
//! `ν_m[0] = 1/ρ'_m` near `−1`), and the marginal's tangent is the sum of
//! such terms; the bound above is then `n ε μ_e`, times `|c|` in the
//! gradient (`log₂ |c|` bits lost at shift `c`). [`Graded`] numbers hold
//! the tangent as `ȧ = o · a + r`: the integer order `o` of the single-root
//! limit (root weights `1`, arcs `0`; a sum takes the lower order, a product
//! adds, a quotient subtracts) and the remainder `r`. Each rule
//! ([`Graded`]) is exact algebra on `ȧ = o a + r` whatever the orders, so
//! the result is the same tangent; but the integer parts now add and cancel
//! exactly, and every rounded term of a remainder is a product of
//! non-negative values, each as small as the higher-order term it comes from
//! (`(o_b − o_a) b` in a sum, `l · c/d` in a multiplier): the argument above
//! holds with `P` the path sums of the remainders, which are of the size of
//! `Cov[1_e, #root arcs]` itself. [`root_scaling_jvp`]; in log space
//! [`LnGraded`].
//!
//! # Nearly certain arcs: anchored tangents
//!
//! On nearly deterministic graphs (arc scores spread over `±50`) a
//! derivative `(J ḡ)_e = μ_e (E[g | e] − E[g])` can be `1e-22 μ_e |ḡ|`:
//! the trees that carry `μ_e` and `Z` share one dominant structure, every
//! path product's relative tangent is the sum of `ḡ` over its arcs, and
//! those sums cancel between the numerator and the denominator of a
//! multiplier or of `ν = 1/ρ'` (single-root: an order-`0` pivot made of one
//! arc `w` next to the root term hands relative tangents `±ḡ_w` to both).
//! On [`Dual`] the cancellation costs `ε μ_e |ḡ|` absolutely: no relative
//! bit. [`Anchored`] numbers hold the tangent as `ȧ = o a + r` with the
//! anchor `o` the relative tangent of the dominant term, in double-double,
//! so that anchors cancel exactly and only the remainders (of the size of
//! the non-dominant terms) are rounded; [`Graded`] is the case of integer
//! anchors. The engines run the product on [`Anchored`] when some arc is
//! certain to `2⁻²⁶` and on [`Dual`] otherwise, where no term dominates and
//! anchored remainders would carry `O(|ḡ|)` parts that cancel (measured 2–5
//! bits worse than [`Dual`] there).
//!
//! # What `f64` weights allow
//!
//! Every engine prepares the weights `e^{θ − c_m}` in `f64`, a relative move
//! of up to `2⁻⁵³` per weight. Its effect on a derivative
//! `v_e = Cov[1_e, ḡ(d)]` is `Σ_f κ₃(e, f, ḡ) δ_f`, which is not small against
//! `v_e` where `v_e` is itself a small difference (a covariance near zero;
//! `μ^q_e − μ^p_e` in the gradient of a cross-entropy with respect to `q`).
//! The `honest_accuracy` example measures this *floor* (the reference on
//! the rounded weights against the reference on the scores): entry-wise
//! 39–48 bits at `n = 5`–`60` on the shifted families, so the 40 bits asked
//! of every entry `≥ 1e-8` of the largest are below what any route from
//! `f64` weights can promise on some entries. Measured (`HONEST_FLOOR=1
//! cargo run --profile test -p spantree-faer --example honest_accuracy`,
//! whole bits), the elimination stays within 4–5 bits of that floor there
//! (and ≥ 47 bits norm-wise). On word-arc scores spread over `±50` the
//! floor is 43–52 bits, and the `f64` products kept 33–43, up to 16 bits
//! below it: there a derivative far below the largest is small *by
//! structure* (a word torn between two heads, weakly coupled to what the
//! seed weighs; at `n = 5`, the second-order effect of a root swap of
//! probability `2.5e-22` on such a word, `1e-6` of the largest entry),
//! which the rounding of the weights moves little, while the elimination
//! forms it as a difference of first-order terms (anchors help only where
//! one term dominates a sum). The engines therefore judge those products
//! entry by entry (`Eliminated`'s entry-wise gate: on the anchored route or
//! where word-arc weights into a word span more than `2⁵³`) and recompute
//! them in double-double, entry by entry the better of the two runs; then
//! the worst gradient entry keeps 39–50 bits at `n = 5`–`60`, within 1–5
//! of the floor (45–46 against 48–50 at `n = 12`, 39–41 against 43–46 at
//! `n = 60`). Closing the rest would need
//! the weights in about twice the precision, and the floor of the rounded
//! weights stays unless the preparation is redone in that precision too. [`LnPositive`] adds its own loss: a
//! value `e^{s}` held as `s` in `f64` has a relative error of `|s| ε`, about
//! `log₂ |shift|` bits at root shift `shift`. So the engines run the
//! marginals and every tangent in `f64` and go to log space only where a
//! product leaves `f64`'s range, and single-root they first scale the root
//! row by an exact power of two ([`marginals_jvp`] and the engines): every single-root tree has
//! one root arc, so `Z` scales by the same factor and the marginals and
//! their derivatives do not move, and a root shift of `−300` no longer
//! enters a logarithm.
//!
//! # Underflow and the orders of the limit
//!
//! The orders of the single-root limit depend only on *which* quantities are
//! zero, so in exact arithmetic every elimination order agrees on them (the
//! determinant does not depend on the order), and no leading term of the
//! divide and conquer has a negative order when `Z_single > 0`. On `f64` a
//! product of two non-zero numbers may underflow to zero in one elimination
//! order and not in another; then the orders disagree, and a negative order
//! (a "marginal above 1") can appear. Every such product is flagged: the
//! checks compare the smallest product of a step with zero as well as with
//! `f64`'s normal range (a zero product of non-zero factors is an
//! underflow), and the caller reruns in log space, where nothing
//! underflows. A negative order without such a flag is a
//! [`Numerical::Singular`] error, never a term silently taken as zero.
//! Weights that underflowed *before* the elimination (an arc more than ~708
//! below the best arc into its word) are the preparation's business: the
//! model refuses them with `Numerical::Underflow` when the trees through
//! them may matter.
//!
//! ```
//! use spantree_core::elimination::{marginals, Elimination};
//! use spantree_core::{Matrix, Rooting};
//! // Two words: multi-root trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1} weigh
//! // 1·2 + 1·3 + 2·4 = 13; single-root ones 1·3 + 2·4 = 11.
//! let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
//! let multi = Elimination::new(&w, Rooting::Multi);
//! assert!((multi.log_partition() - 13f64.ln()).abs() < 1e-15);
//! let single = Elimination::new(&w, Rooting::Single);
//! assert!((single.log_partition() - 11f64.ln()).abs() < 1e-15);
//! let mu = marginals(&w, Rooting::Single).unwrap();
//! assert!((mu[(2, 1)] - 8.0 / 11.0).abs() < 1e-15);
//! ```

use std::any::Any;
use std::cell::Cell;
use std::fmt::Debug;
use std::ops::Range;

use crate::error::Numerical;
use crate::graph::Rooting;
use crate::matrix::Matrix;
use crate::scalar::Scalar;

/// A number type with `+ × ÷` on non-negative values: all the elimination
/// needs. Every [`Scalar`] qualifies (the operations are only ever applied
/// to non-negative values); so does [`LnPositive`], which cannot subtract.
///
/// The methods are named apart from [`Scalar`]'s so that both traits can be
/// in scope.
pub trait NonNegative: Clone + Debug + Send + Sync + 'static {
    /// `0`.
    fn nil() -> Self;
    /// `1`.
    fn unit() -> Self;
    /// A finite weight `x ≥ 0`.
    fn from_weight(x: f64) -> Self;
    /// The nearest `f64` (lossy).
    fn to_weight(&self) -> f64;
    /// `ln x` as an `f64`, `-∞` for zero; never overflows.
    fn ln_weight(&self) -> f64;
    /// Whether the value is exactly zero.
    fn is_nil(&self) -> bool;
    /// `self + other`.
    fn plus(&self, other: &Self) -> Self;
    /// `self · other`.
    fn times(&self, other: &Self) -> Self;
    /// `self / other`, `other > 0`.
    fn over(&self, other: &Self) -> Self;
    /// `self / (self + rest)`, for `self + rest > 0`: a multiplier of the
    /// elimination, whose other terms `rest` are known apart. The default
    /// divides; tangent types ([`Dual`], [`LnDual`]) use the rest for the
    /// derivative `(ȧ rest − a ṙest) / (a + rest)²`, which is of the size of
    /// `rest / (a + rest)` and never the difference of two near-equal
    /// quotient-rule terms when `a` dominates.
    fn fraction(&self, rest: &Self) -> Self {
        self.over(&self.plus(rest))
    }
    /// Whether [`NonNegative::fraction`] reads `rest` apart (the tangent
    /// types do). When it does not, the elimination multiplies each entry of
    /// the pivot column by the pivot's reciprocal, `a · (1/d_k)` (one
    /// division per step, two roundings per multiplier), and skips the prefix
    /// and suffix sums that form every `rest` afresh (two dependent chains of
    /// additions per step, a fifth of a step's time at `n = 36`); in exact
    /// arithmetic `a + rest = d_k`, and either way the multiplier is a
    /// quotient of sums of non-negative terms.
    const FRACTION_READS_REST: bool = true;
    /// `self += a · b`, the inner loop.
    fn add_product(&mut self, a: &Self, b: &Self) {
        *self = self.plus(&a.times(b));
    }
    /// Whether a non-zero value lies outside the safe range of `f64`: below
    /// its normal range (`2.2e-308`, where an `f64` keeps fewer than 53 bits
    /// and a product may have underflowed to zero) or above `1e300` (a few
    /// products from overflow; single-root leading coefficients `ρ[k]/d_k`
    /// are unbounded). For exact and log-space types it is merely a fact
    /// about the size; only `f64`-like types lose accuracy there.
    fn is_extreme(&self) -> bool {
        false
    }
    /// `self.is_nil() || self.is_extreme()`: whether a product of non-zero
    /// factors underflowed (or left the safe range), one test per product.
    fn is_nil_or_extreme(&self) -> bool {
        self.is_nil() || self.is_extreme()
    }
    /// A cheap `f64` key increasing with the value (the value itself, or its
    /// logarithm), to find the smallest of several values.
    fn magnitude(&self) -> f64 {
        self.ln_weight()
    }
}

impl<S: Scalar> NonNegative for S {
    const FRACTION_READS_REST: bool = false;
    #[inline]
    fn nil() -> Self {
        <S as Scalar>::zero()
    }
    #[inline]
    fn unit() -> Self {
        <S as Scalar>::one()
    }
    fn from_weight(x: f64) -> Self {
        <S as Scalar>::from_f64(x)
    }
    fn to_weight(&self) -> f64 {
        <S as Scalar>::to_f64(self)
    }
    fn ln_weight(&self) -> f64 {
        self.ln_abs()
    }
    #[inline]
    fn is_nil(&self) -> bool {
        <S as Scalar>::is_zero(self)
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        self.clone() + other.clone()
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        self.clone() * other.clone()
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        self.clone() / other.clone()
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        *self += a.clone() * b.clone();
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        <S as Scalar>::to_f64(self)
    }
    fn is_extreme(&self) -> bool {
        let x = <S as Scalar>::to_f64(self).abs();
        !<S as Scalar>::is_zero(self) && !(f64::MIN_POSITIVE..=1e300).contains(&x)
    }
    /// A zero converts to `0.0`, outside the range: one range test.
    #[inline]
    fn is_nil_or_extreme(&self) -> bool {
        !(f64::MIN_POSITIVE..=1e300).contains(&<S as Scalar>::to_f64(self).abs())
    }
}

/// A non-negative number held as its natural logarithm (`-∞` for zero):
/// products and quotients are exact sums and differences of logarithms, sums
/// are `ln(e^a + e^b) = max + ln(1 + e^{−|a−b|})`, correctly rounded to about
/// one ulp of the logarithm. It never overflows or underflows (range
/// `e^{±1.8e308}`), and it cannot subtract, which is the point: the
/// elimination never needs to.
///
/// ```
/// use spantree_core::elimination::{LnPositive, NonNegative};
/// let tiny = LnPositive::from_ln(-1e4); // e^-10000: zero as an f64
/// let sum = tiny.plus(&tiny);
/// assert!((sum.ln() - (-1e4 + 2f64.ln())).abs() < 1e-12);
/// assert_eq!(tiny.times(&tiny).ln(), -2e4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct LnPositive(f64);

impl LnPositive {
    /// The number `e^ln` (`ln = -∞` for zero).
    pub fn from_ln(ln: f64) -> Self {
        LnPositive(ln)
    }

    /// Its natural logarithm.
    pub fn ln(self) -> f64 {
        self.0
    }
}

impl NonNegative for LnPositive {
    const FRACTION_READS_REST: bool = false;
    fn nil() -> Self {
        LnPositive(f64::NEG_INFINITY)
    }
    fn unit() -> Self {
        LnPositive(0.0)
    }
    fn from_weight(x: f64) -> Self {
        LnPositive(x.ln())
    }
    fn to_weight(&self) -> f64 {
        self.0.exp()
    }
    fn ln_weight(&self) -> f64 {
        self.0
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.0 == f64::NEG_INFINITY
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        let (hi, lo) = if self.0 >= other.0 {
            (self.0, other.0)
        } else {
            (other.0, self.0)
        };
        if lo == f64::NEG_INFINITY {
            return LnPositive(hi);
        }
        LnPositive(hi + (lo - hi).exp().ln_1p())
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        LnPositive(self.0 + other.0)
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        LnPositive(self.0 - other.0)
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.0
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        let p = a.0 + b.0;
        if p != f64::NEG_INFINITY {
            *self = self.plus(&LnPositive(p));
        }
    }
}

/// The leading term `value · t^order` of a non-negative function of `t` as
/// `t → 0`; zero when `value` is. Sums keep the lowest order, products add
/// orders: the exact arithmetic of the limit (see the module docs).
#[derive(Clone, Debug)]
struct Leading<P> {
    value: P,
    order: i32,
}

impl<P: NonNegative> Leading<P> {
    fn nil() -> Self {
        Leading {
            value: P::nil(),
            order: 0,
        }
    }

    fn finite(value: P) -> Self {
        Leading { value, order: 0 }
    }

    fn is_nil(&self) -> bool {
        self.value.is_nil()
    }

    /// [`Leading::plus`] in place, without its clones: the same rule (the
    /// lower order wins, equal orders add).
    fn add(&mut self, other: Self) {
        if self.is_nil() || (!other.is_nil() && other.order < self.order) {
            *self = other;
        } else if !other.is_nil() && self.order == other.order {
            self.value = self.value.plus(&other.value);
        }
    }

    fn plus(&self, other: &Self) -> Self {
        if self.is_nil() || (!other.is_nil() && other.order < self.order) {
            other.clone()
        } else if other.is_nil() || self.order < other.order {
            self.clone()
        } else {
            Leading {
                value: self.value.plus(&other.value),
                order: self.order,
            }
        }
    }

    fn times(&self, other: &Self) -> Self {
        if self.is_nil() || other.is_nil() {
            return Leading::nil();
        }
        Leading {
            value: self.value.times(&other.value),
            order: self.order + other.order,
        }
    }

    fn over(&self, other: &Self) -> Self {
        if self.is_nil() {
            return Leading::nil();
        }
        Leading {
            value: self.value.over(&other.value),
            order: self.order - other.order,
        }
    }

    /// The value at `t = 0`: `value` for order `0`, zero for positive order.
    /// A negative order (unbounded as `t → 0`: a marginal above 1) is
    /// impossible in exact arithmetic for a graph with a tree, since the
    /// orders depend only on which quantities are zero; on `f64` it means
    /// that a product underflowed to zero in one elimination order and not
    /// in another. With `tiny` set (an underflow was seen, the caller reruns
    /// in log space) the term is dropped; otherwise it is an error, never a
    /// silent zero.
    fn at_zero(&self, tiny: bool, pivot: usize) -> Result<P, Numerical> {
        match self.order {
            _ if self.is_nil() => Ok(P::nil()),
            0 => Ok(self.value.clone()),
            o if o > 0 || tiny => Ok(P::nil()),
            _ => Err(Numerical::Singular { pivot }),
        }
    }
}

/// The number of consecutive elimination steps that share one sweep over
/// the rows they all update ([`Work::eliminate_block`]).
const FUSED_STEPS: usize = 4;

/// On graphs of at most this many words the elimination runs step by step
/// ([`Work::eliminate_run`]): each step updates the rows alive whole, with
/// no block sweep.
const UNFUSED_UP_TO: usize = 32;

/// The graph being eliminated: `r` words, arcs `r × r` row-major (`[h][m]`
/// is `h → m`; the diagonal is never read), root weights as leading terms.
#[derive(Clone, Debug)]
struct Work<P> {
    r: usize,
    arcs: Vec<P>,
    root: Vec<Leading<P>>,
    /// Whether some product may have fallen below `f64`'s normal range
    /// ([`NonNegative::is_extreme`]).
    tiny: bool,
}

impl<P: NonNegative> Work<P> {
    fn new(weights: &Matrix<P>, rooting: Rooting) -> Self {
        let mut work = Work {
            r: 0,
            arcs: Vec::new(),
            root: Vec::new(),
            tiny: false,
        };
        work.fill(weights, rooting);
        work
    }

    /// `self = Work::new(weights, rooting)`, in `self`'s buffers (no
    /// allocation once they are large enough).
    fn fill(&mut self, weights: &Matrix<P>, rooting: Rooting) {
        let r = weights.rows() - 1;
        let n1 = r + 1;
        self.r = r;
        self.tiny = false;
        self.arcs.clear();
        self.arcs.reserve(r * r);
        for (h, row) in weights.as_slice().chunks_exact(n1).skip(1).enumerate() {
            self.arcs.extend_from_slice(&row[1..]);
            self.arcs[h * r + h] = P::nil();
        }
        let order = match rooting {
            Rooting::Multi => 0,
            Rooting::Single => 1,
        };
        self.root.clear();
        self.root
            .extend(weights.as_slice()[1..n1].iter().map(|w| Leading {
                value: w.clone(),
                order,
            }));
    }

    /// `self = other.clone()`, in `self`'s buffers (no allocation once they
    /// are large enough).
    fn copy_from(&mut self, other: &Self) {
        self.r = other.r;
        self.tiny = other.tiny;
        self.arcs.clear();
        self.arcs.extend_from_slice(&other.arcs);
        self.root.clear();
        self.root.extend_from_slice(&other.root);
    }

    /// The reduced graph on the words `keep` (all others eliminated), in
    /// place: rows move towards the front of the same buffer, no allocation.
    fn restrict(mut self, keep: Range<usize>) -> Self {
        let (r, k) = (self.r, keep.len());
        for i in 0..k {
            let src = (keep.start + i) * r + keep.start;
            // dst = i k ≤ src: moving forward in increasing order never
            // overwrites an entry still to be read.
            for j in 0..k {
                let x = std::mem::replace(&mut self.arcs[src + j], P::nil());
                self.arcs[i * k + j] = x;
            }
            self.arcs[i * k + i] = P::nil();
        }
        self.arcs.truncate(k * k);
        self.root.truncate(keep.end);
        self.root.drain(..keep.start);
        self.r = k;
        self
    }

    /// Eliminates the `count` words from `first` on, upwards when `forward`
    /// (step `k` leaves `k+1..r` alive) or downwards from `first` (leaving
    /// `0..k`), [`FUSED_STEPS`] steps at a time ([`Work::eliminate_block`];
    /// one at a time on at most [`UNFUSED_UP_TO`] words);
    /// pushes each step's pivot and root multiplier onto `steps`, and writes
    /// step `i`'s multipliers into `lowers[i r..(i + 1) r]` when given.
    fn eliminate_run(
        &mut self,
        first: usize,
        count: usize,
        forward: bool,
        lowers: Option<&mut [P]>,
        steps: &mut Vec<(Leading<P>, Leading<P>)>,
        scratch: &mut Scratch<P>,
    ) {
        let unfused = self.r <= UNFUSED_UP_TO;
        self.eliminate_run_as(first, count, forward, lowers, steps, scratch, unfused);
    }

    /// [`Work::eliminate_run`], step by step when `unfused`, else in blocks
    /// of [`FUSED_STEPS`].
    #[allow(clippy::too_many_arguments)]
    fn eliminate_run_as(
        &mut self,
        first: usize,
        count: usize,
        forward: bool,
        mut lowers: Option<&mut [P]>,
        steps: &mut Vec<(Leading<P>, Leading<P>)>,
        scratch: &mut Scratch<P>,
        unfused: bool,
    ) {
        let r = self.r;
        let mut own = std::mem::take(&mut scratch.lowers);
        if unfused {
            // Step by step: each step updates every row alive whole, each
            // entry taking the steps' rank-one updates in step order, as the
            // block sweep sums them ([`Work::eliminate_block`]): the same
            // numbers, bit for bit, without the sweep's per-row set-up,
            // which on small graphs cost more than the updates.
            // `step` writes the flags of every word alive, the only ones it
            // reads: no clearing per step.
            let mut applied = std::mem::take(&mut scratch.applied);
            applied.clear();
            applied.resize(r, false);
            for i in 0..count {
                let (k, alive) = if forward {
                    (first + i, first + i + 1..r)
                } else {
                    (first - i, 0..first - i)
                };
                let lower = match lowers.as_deref_mut() {
                    Some(lowers) => &mut lowers[i * r..(i + 1) * r],
                    None => {
                        own.clear();
                        own.resize(r, P::nil());
                        &mut own[..]
                    }
                };
                let step = self.step(k, alive.clone(), &alive, lower, &mut applied, scratch);
                steps.push(step);
            }
            scratch.applied = applied;
            scratch.lowers = own;
            return;
        }
        let mut done = 0;
        while done < count {
            let b = (count - done).min(FUSED_STEPS);
            let start = if forward { first + done } else { first - done };
            let block = match lowers.as_deref_mut() {
                Some(lowers) => &mut lowers[done * r..(done + b) * r],
                None => {
                    own.clear();
                    own.resize(b * r, P::nil());
                    &mut own[..]
                }
            };
            self.eliminate_block(start, b, forward, block, steps, scratch);
            done += b;
        }
        scratch.lowers = own;
    }

    /// Eliminates the `b ≤` [`FUSED_STEPS`] consecutive words from `first`
    /// on (upwards when `forward`, else downwards), in one pass over the
    /// rows they all update. Each step forms its pivot and multipliers and
    /// updates at once only what the next steps of the block read: the
    /// rows of the block's later words, and the block's columns in the
    /// other rows. The rest of the graph (the words alive after the block)
    /// then takes the `b` rank-one updates in one sweep, each entry summing
    /// them in step order ([`accumulate`]): every entry receives the same
    /// operations in the same order as step after step, so the numbers are
    /// those of [`Work::step`] alone, bit for bit, and still only sums of
    /// products of non-negative numbers; the sweep reads and writes each
    /// row once per block instead of once per step. `lowers` holds `b`
    /// rows of `r` multipliers.
    fn eliminate_block(
        &mut self,
        first: usize,
        b: usize,
        forward: bool,
        lowers: &mut [P],
        steps: &mut Vec<(Leading<P>, Leading<P>)>,
        scratch: &mut Scratch<P>,
    ) {
        let r = self.r;
        let word = |i: usize| if forward { first + i } else { first - i };
        let alive = |k: usize| if forward { k + 1..r } else { 0..k };
        let rest = alive(word(b - 1));
        let mut applied = std::mem::take(&mut scratch.applied);
        applied.clear();
        applied.resize(b * r, false);
        for i in 0..b {
            let k = word(i);
            let lower = &mut lowers[i * r..(i + 1) * r];
            let applied = &mut applied[i * r..(i + 1) * r];
            // The block's later words: alive for this step, not for the sweep.
            let later = if forward {
                k + 1..rest.start
            } else {
                rest.end..k
            };
            let (pivot, root_lower) = self.step(k, alive(k), &later, lower, applied, scratch);
            steps.push((pivot, root_lower));
        }
        // One word alive after the block: the sweep would update only its
        // diagonal entry, which is never read.
        if rest.len() <= 1 {
            scratch.applied = applied;
            return;
        }
        // The sweep: rows and columns `rest`, the block's rows as they were
        // at their steps (final since: a word is never updated once eliminated).
        // The block's rows lie on one side of `rest` (after it downwards,
        // before it upwards): read in place, beside the rows swept.
        let (fixed, fixed_first, swept, swept_first) = if forward {
            let (head, tail) = self.arcs.split_at_mut(rest.start * r);
            (&*head, 0, tail, rest.start)
        } else {
            let (head, tail) = self.arcs.split_at_mut(rest.end * r);
            (&*tail, rest.end, head, 0)
        };
        // Row `i` of the block, restricted to the columns `rest`: sliced
        // once per block, not once per row swept.
        let mut y: [&[P]; FUSED_STEPS] = [&[]; FUSED_STEPS];
        for (i, y) in y.iter_mut().enumerate().take(b) {
            let at = (word(i) - fixed_first) * r;
            *y = &fixed[at + rest.start..at + rest.end];
        }
        for h in rest.clone() {
            let mut terms: [(&P, &[P]); FUSED_STEPS] = [(&lowers[0], &[]); FUSED_STEPS];
            let mut t = 0;
            for (i, &y) in y.iter().enumerate().take(b) {
                if applied[i * r + h] {
                    terms[t] = (&lowers[i * r + h], y);
                    t += 1;
                }
            }
            // The diagonal entry h → h is updated too and never read: one
            // contiguous row keeps the loop simple and vectorisable.
            let at = (h - swept_first) * r;
            accumulate(&mut swept[at + rest.start..at + rest.end], &terms[..t]);
        }
        scratch.applied = applied;
    }

    /// One step of [`Work::eliminate_block`]: eliminates word `k`, `alive`
    /// (a range not containing `k`) the words that remain, of which
    /// `later` (a range at one end of `alive`, or all of it when the steps
    /// run unfused) are the block's later words,
    /// whose rows it updates whole; the other rows get only their entries
    /// in the columns `later`, the rest waits for the block's sweep. Returns
    /// the pivot and the root multiplier `ρ[k] / d_k`; writes the
    /// multipliers `A[h][k] / d_k` into `lower` and whether each was formed
    /// (`A[h][k] ≠ 0`) into `applied` (indexed by word; every entry of
    /// `alive` written, the others untouched).
    fn step(
        &mut self,
        k: usize,
        alive: Range<usize>,
        later: &Range<usize>,
        lower: &mut [P],
        applied: &mut [bool],
        scratch: &mut Scratch<P>,
    ) -> (Leading<P>, Leading<P>) {
        let r = self.r;
        // Four partial sums: four independent chains of additions over a
        // strided column instead of one (any order of a sum of non-negative
        // terms keeps its relative error below `(n − 1) ε`).
        let mut parts: [P; 4] = std::array::from_fn(|_| P::nil());
        let column = &self.arcs[k..];
        let mut h = alive.start;
        while h + 4 <= alive.end {
            for (j, part) in parts.iter_mut().enumerate() {
                *part = part.plus(&column[(h + j) * r]);
            }
            h += 4;
        }
        for h in h..alive.end {
            parts[0] = parts[0].plus(&column[h * r]);
        }
        let [a, b, c, d] = parts;
        let in_weight = a.plus(&b).plus(&c.plus(&d));
        let pivot = Leading::finite(in_weight.clone()).plus(&self.root[k]);
        // The smallest multiplier formed (by magnitude, the first of equals),
        // for the underflow check at the end.
        let mut l_min: Option<(usize, f64)> = None;
        if in_weight.is_nil() {
            lower[alive.clone()].fill(P::nil());
            applied[alive.clone()].fill(false);
        } else {
            // The pivot is of order 0 here: a finite positive number. The
            // smallest multiplier is found on the way.
            if !P::FRACTION_READS_REST {
                // One division per step: each multiplier is A[h][k] · (1/d_k),
                // two roundings of non-negative numbers.
                let inverse = P::unit().over(&pivot.value);
                for h in alive.clone() {
                    let a = &self.arcs[h * r + k];
                    if a.is_nil() {
                        lower[h] = P::nil();
                        applied[h] = false;
                        continue;
                    }
                    let l = a.times(&inverse);
                    let key = l.magnitude();
                    if l_min.is_none_or(|(_, m)| key < m) {
                        l_min = Some((h, key));
                    }
                    lower[h] = l;
                    applied[h] = true;
                }
            } else {
                // Each multiplier is A[h][k] / (A[h][k] + rest_h), with rest_h
                // the other terms of the pivot summed afresh (prefix and suffix
                // sums, O(n)): its derivative then carries the factor
                // rest_h / d_k, never a difference (see [`NonNegative::fraction`]).
                // The column is read in place; `suffix[i]` sums its entries
                // from the `i`-th alive word on (`suffix[0]`, the whole
                // column, is never read and not formed).
                let suffix = &mut scratch.suffix;
                let column = |i: usize| &self.arcs[(alive.start + i) * r + k];
                suffix.clear();
                suffix.resize(alive.len() + 1, P::nil());
                for i in (1..alive.len()).rev() {
                    suffix[i] = suffix[i + 1].plus(column(i));
                }
                let mut prefix = if self.root[k].order == 0 {
                    self.root[k].value.clone()
                } else {
                    P::nil()
                };
                for (i, h) in alive.clone().enumerate() {
                    let a = column(i);
                    if a.is_nil() {
                        lower[h] = P::nil();
                        applied[h] = false;
                        continue;
                    }
                    let l = a.fraction(&prefix.plus(&suffix[i + 1]));
                    let key = l.magnitude();
                    if l_min.is_none_or(|(_, m)| key < m) {
                        l_min = Some((h, key));
                    }
                    lower[h] = l;
                    applied[h] = true;
                    prefix = prefix.plus(a);
                }
            }
            // Row `k` is read in place: the rows the step updates (words
            // alive) all lie on one side of it.
            let (row_k, rows, first_row) = if alive.start > k {
                let (head, tail) = self.arcs.split_at_mut((k + 1) * r);
                (&head[k * r + alive.start..k * r + alive.end], tail, k + 1)
            } else {
                let (head, tail) = self.arcs.split_at_mut(k * r);
                (&tail[alive.start..alive.end], head, 0)
            };
            // The block's later rows whole; in the other rows only the
            // block's later columns (at most three entries, the rest waits
            // for the sweep), and nothing at the block's last step.
            let later_rows = rows[(later.start - first_row) * r..].chunks_exact_mut(r);
            let later_lowers = lower[later.clone()].iter().zip(&applied[later.clone()]);
            for (row, (l, &applied)) in later_rows.zip(later_lowers) {
                if applied {
                    // `accumulate` with one term, inlined.
                    for (x, y) in row[alive.clone()].iter_mut().zip(row_k) {
                        x.add_product(l, y);
                    }
                }
            }
            if !later.is_empty() {
                let y = &row_k[later.start - alive.start..later.end - alive.start];
                // `later` is at one end of `alive`: the other rows are the
                // rest of it, in increasing order.
                for others in [alive.start..later.start, later.end..alive.end] {
                    for h in others {
                        if !applied[h] {
                            continue;
                        }
                        let l = &lower[h];
                        let at = (h - first_row) * r;
                        let row = &mut rows[at + later.start..at + later.end];
                        for (x, y) in row.iter_mut().zip(y) {
                            x.add_product(l, y);
                        }
                    }
                }
            }
        }
        let root = &self.root[k];
        let root_lower = if pivot.is_nil() || root.is_nil() {
            Leading::nil()
        } else if in_weight.is_nil() {
            // ρ[k] / ρ[k]: exactly 1, and constant.
            Leading::finite(P::unit())
        } else if root.order == 0 {
            Leading::finite(root.value.fraction(&in_weight))
        } else {
            root.over(&pivot)
        };
        // ρ[k] ≠ 0 with a zero multiplier: ρ[k] / d_k underflowed.
        self.tiny |= root_lower.is_nil() && !root.is_nil() && !pivot.is_nil();
        let Work {
            arcs,
            root,
            tiny: work_tiny,
            ..
        } = &mut *self;
        let row_k = &arcs[k * r + alive.start..k * r + alive.end];
        // The smallest non-zero entry of row `k` (by magnitude, the first of
        // equals), found on the way of the root update when there is one.
        let mut y_min: Option<(&P, f64)> = None;
        if !root_lower.is_nil() {
            let mut tiny = root_lower.value.is_extreme();
            let order = root_lower.order;
            for (a, rho) in row_k.iter().zip(&mut root[alive]) {
                if a.is_nil() {
                    continue;
                }
                let key = a.magnitude();
                if y_min.is_none_or(|(_, m)| key < m) {
                    y_min = Some((a, key));
                }
                // `rho + root_lower · a` as leading terms, in place
                // ([`Leading::add`], its tests of `add` taken once).
                let add = root_lower.value.times(a);
                if add.is_nil() {
                    // Underflow: the step is tiny whatever follows.
                    tiny = true;
                    if rho.is_nil() {
                        *rho = Leading { value: add, order };
                    }
                    continue;
                }
                // `add` and (so) `rho` are not zero from here on.
                tiny |= add.is_nil_or_extreme();
                if rho.is_nil() || order < rho.order {
                    *rho = Leading { value: add, order };
                } else if order == rho.order {
                    rho.value = rho.value.plus(&add);
                }
                tiny |= rho.value.is_nil_or_extreme();
            }
            *work_tiny |= tiny;
        } else if l_min.is_some() {
            y_min = smallest(row_k).map(|y| (y, 0.0));
        }
        // Every product of the step is at least (smallest multiplier) ·
        // (smallest entry of row k): one check per step finds underflow.
        if let (Some((h, _)), Some((y, _))) = (l_min, y_min) {
            // Both factors are non-zero: a zero product underflowed.
            let p = lower[h].times(y);
            *work_tiny |= p.is_nil_or_extreme();
        }
        (pivot, root_lower)
    }
}

/// The buffers of one elimination or marginal pass, reused by every step
/// and every level of the divide and conquer (no allocation per step).
struct Scratch<P> {
    /// Suffix sums of column `k` of the step.
    suffix: Vec<P>,
    /// Whether each multiplier of a block's steps was formed.
    applied: Vec<bool>,
    /// A block's multipliers, when the caller keeps none.
    lowers: Vec<P>,
}

impl<P: NonNegative> Scratch<P> {
    fn new() -> Self {
        Scratch {
            suffix: Vec::new(),
            applied: Vec::new(),
            lowers: Vec::new(),
        }
    }

    /// Room in the buffers for any step of a marginal pass on at most `r`
    /// words: no buffer grows (and reallocates) during the pass, which on
    /// small graphs (`n ≤ 20`, one product per sentence) cost a few
    /// percent. None is allocated that the pass never uses: the suffix
    /// sums when [`NonNegative::FRACTION_READS_REST`] is off, and `lowers`
    /// (the pass keeps every step's multipliers on its own stack).
    fn reserve(&mut self, r: usize) {
        self.suffix.clear();
        self.applied.clear();
        if P::FRACTION_READS_REST {
            self.suffix.reserve(r + 1);
        }
        self.applied.reserve(FUSED_STEPS * r);
    }
}

/// `x += Σ_i l_i y_i` entry by entry, each entry's sum formed term after
/// term in the order given: the same operations, bit for bit, as the
/// rank-one updates `x += l_i y_i` one after the other, in one sweep over
/// `x` per four terms (the loads and stores of `x`, and the loop's
/// overhead, shared by four updates). Each `y_i` is at least as long as `x`.
#[inline]
fn accumulate<P: NonNegative>(x: &mut [P], terms: &[(&P, &[P])]) {
    let n = x.len();
    let mut t = terms;
    loop {
        match t {
            [(a, ya), (b, yb), (c, yc), (d, yd), more @ ..] => {
                let (ya, yb, yc, yd) = (&ya[..n], &yb[..n], &yc[..n], &yd[..n]);
                for ((((x, ya), yb), yc), yd) in x.iter_mut().zip(ya).zip(yb).zip(yc).zip(yd) {
                    x.add_product(a, ya);
                    x.add_product(b, yb);
                    x.add_product(c, yc);
                    x.add_product(d, yd);
                }
                t = more;
            }
            [(a, ya), (b, yb), more @ ..] => {
                for ((x, ya), yb) in x.iter_mut().zip(&ya[..n]).zip(&yb[..n]) {
                    x.add_product(a, ya);
                    x.add_product(b, yb);
                }
                t = more;
            }
            [(a, ya)] => {
                for (x, ya) in x.iter_mut().zip(&ya[..n]) {
                    x.add_product(a, ya);
                }
                return;
            }
            [] => return,
        }
    }
}

/// The smallest non-zero entry (by logarithm), if any.
fn smallest<P: NonNegative>(xs: &[P]) -> Option<&P> {
    let mut best: Option<(&P, f64)> = None;
    for x in xs.iter().filter(|x| !x.is_nil()) {
        let key = x.magnitude();
        if best.is_none_or(|(_, k)| key < k) {
            best = Some((x, key));
        }
    }
    best.map(|(x, _)| x)
}

/// The pivots of the cancellation-free elimination of one graph, in the
/// natural word order: `ln Z` for either rooting. `O(n³/3)` multiply-adds.
///
/// Weights are read in the `(n+1) × (n+1)` layout (row `0` the root; column
/// `0` and the diagonal ignored). `Z_multi = Π_k d_k`; `Z_single = Π_k d_k`
/// at `t = 0` (module docs). Every pivot carries a relative error of at most
/// about `n` roundings (each is a sum of at most `n` non-negative terms, each
/// a product of earlier rounded quantities); `ln Z` therefore has an absolute
/// error of about `n² ε` in the worst case and `√n`-ish in practice, whatever
/// the scales of the weights.
///
/// ```
/// use spantree_core::elimination::Elimination;
/// use spantree_core::{Matrix, Rooting};
/// // Root weights 1e-200 next to unit arcs: dense LU loses every digit.
/// let mut w = Matrix::from_fn(4, 4, |h, m| if m == 0 || h == m { 0.0 } else { 1.0 });
/// for m in 1..=3 {
///     w[(0, m)] = 1e-200;
/// }
/// // Single-root: Cayley's n^(n−1) = 9 trees, each of weight 1e-200.
/// let z = Elimination::new(&w, Rooting::Single).log_partition();
/// assert!((z - (9f64.ln() + (1e-200f64).ln())).abs() < 1e-12);
/// ```
#[derive(Clone, Debug)]
pub struct Elimination<P> {
    pivots: Vec<Leading<P>>,
    rooting: Rooting,
    tiny: bool,
    /// The first half of the run, kept by [`Elimination::keeping_half`].
    head: Option<Box<Head<P>>>,
}

/// The first `⌊n/2⌋` steps of the natural-order elimination: the graph they
/// leave, their multipliers (`⌊n/2⌋ × n`) and root multipliers, and whether
/// a root weight was extreme when its word was eliminated. The divide and
/// conquer of the marginals starts its last branch with exactly these steps
/// ([`Elimination::checked_marginals`]).
#[derive(Clone, Debug)]
struct Head<P> {
    work: Work<P>,
    lowers: Vec<P>,
    root_lowers: Vec<Leading<P>>,
    roots_extreme: bool,
}

impl<P: NonNegative> Elimination<P> {
    /// Eliminates the words of `weights` in the order `1, 2, …, n`,
    /// `O(n³/3)`.
    pub fn new(weights: &Matrix<P>, rooting: Rooting) -> Self {
        Self::run(weights, rooting, false)
    }

    /// [`Elimination::new`], keeping what the marginals can reuse: the
    /// graph after the first `⌊n/2⌋` steps and their multipliers
    /// (`1.5 n²` numbers), so that [`Elimination::checked_marginals`] skips
    /// those steps, about a fifth of its work. The pivots are the same, bit
    /// for bit.
    pub fn keeping_half(weights: &Matrix<P>, rooting: Rooting) -> Self {
        Self::run(weights, rooting, true)
    }

    fn run(weights: &Matrix<P>, rooting: Rooting, keep: bool) -> Self {
        let mut work = Work::new(weights, rooting);
        let n = work.r;
        let half = if keep && n > 1 { n / 2 } else { 0 };
        let mut steps = Vec::with_capacity(n);
        let mut scratch = Scratch::new();
        let mut head = None;
        if half > 0 {
            let mut lowers = vec![P::nil(); half * n];
            work.eliminate_run(0, half, true, Some(&mut lowers), &mut steps, &mut scratch);
            head = Some(Box::new(Head {
                work: work.clone(),
                lowers,
                root_lowers: steps.iter().map(|(_, l)| l.clone()).collect(),
                // A word's root weight is final once it is eliminated.
                roots_extreme: work.root[..half].iter().any(|p| p.value.is_extreme()),
            }));
        }
        work.eliminate_run(half, n - 1 - half, true, None, &mut steps, &mut scratch);
        let mut pivots: Vec<Leading<P>> = steps.into_iter().map(|(p, _)| p).collect();
        pivots.push(work.root[n - 1].clone());
        let tiny = work.tiny || work.root.iter().any(|p| p.value.is_extreme());
        Elimination {
            pivots,
            rooting,
            tiny,
            head,
        }
    }

    /// [`checked_marginals`] of the `weights` this elimination ran on,
    /// reusing its first half when it kept it ([`Elimination::keeping_half`]):
    /// the same numbers, bit for bit, for about `1.0 n³` multiply-adds
    /// instead of `1.3 n³`.
    ///
    /// # Errors
    /// As [`marginals`].
    pub fn checked_marginals(&self, weights: &Matrix<P>) -> Result<(Matrix<P>, bool), Numerical> {
        match &self.head {
            Some(head) => checked_marginals_with(weights, self.rooting, Some((head, &self.pivots))),
            None => checked_marginals(weights, self.rooting),
        }
    }

    /// Whether some weight, pivot or product of the elimination left the
    /// safe range of `f64` ([`NonNegative::is_extreme`]). On `f64` the
    /// result may then have lost accuracy (a product may even have underflowed
    /// to zero or overflowed): rerun in log space ([`LnPositive`]), as
    /// `spantree_faer::Accurate` does. Never set by exact or log-space types
    /// in a way that matters.
    pub fn is_extreme(&self) -> bool {
        self.tiny || self.pivots.iter().any(|p| p.value.is_extreme())
    }

    /// The number of words `n`.
    pub fn dim(&self) -> usize {
        self.pivots.len()
    }

    /// The pivots `d_k` (for single-root trees, their values at `t = 0`,
    /// one of them the limit of `Z_multi(tρ)/t`), in elimination order.
    pub fn pivots(&self) -> impl Iterator<Item = &P> {
        self.pivots.iter().map(|p| &p.value)
    }

    /// The first step at which `Z` is found to be `0`: a zero pivot, or
    /// (single-root) a second pivot of order `t`. `None` when `Z > 0`.
    pub fn zero_pivot(&self) -> Option<usize> {
        let allowed = match self.rooting {
            Rooting::Multi => 0,
            Rooting::Single => 1,
        };
        let mut order = 0;
        for (k, p) in self.pivots.iter().enumerate() {
            order += p.order;
            if p.is_nil() || order > allowed {
                return Some(k);
            }
        }
        (order != allowed).then_some(self.pivots.len() - 1)
    }

    /// `ln Z = Σ_k ln d_k`, `-∞` when `Z = 0`. `O(n)`.
    pub fn log_partition(&self) -> f64 {
        if self.zero_pivot().is_some() {
            return f64::NEG_INFINITY;
        }
        self.pivots.iter().map(|p| p.value.ln_weight()).sum()
    }

    /// `Z = Π_k d_k` in `P` (exact for exact rationals; may overflow `f64`).
    pub fn partition(&self) -> P {
        if self.zero_pivot().is_some() {
            return P::nil();
        }
        let mut z = P::unit();
        for p in &self.pivots {
            z = z.times(&p.value);
        }
        z
    }
}

/// The arc marginals `μ[h][m]` of `weights` (the `(n+1) × (n+1)` layout) for
/// `rooting`, by back-propagating `∂ ln Z` through non-negative multipliers
/// (module docs): no subtraction anywhere, so every marginal carries a
/// relative error of a few times `n ε` whatever the scales. The divide and
/// conquer costs about `1.3 n³` multiply-adds and `O(n²)` memory per level.
///
/// # Errors
/// [`Numerical::Singular`] when `Z = 0` in `P` (no spanning tree, or the
/// weights that would make one underflowed).
///
/// ```
/// use spantree_core::elimination::marginals;
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// let mu = marginals(&w, Rooting::Multi)?;
/// // Arc 2 → 1 is in the tree {0→2, 2→1} of weight 8, out of 13.
/// assert!((mu[(2, 1)] - 8.0 / 13.0).abs() < 1e-15);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn marginals<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
) -> Result<Matrix<P>, Numerical> {
    checked_marginals(weights, rooting).map(|(mu, _)| mu)
}

/// [`marginals`], and whether a quantity of the forward eliminations left
/// the safe range of `f64` ([`Elimination::is_extreme`]): on `f64`, rerun in
/// log space then. (The backward pass needs no such check: multipliers are
/// at most 1, so its values stay below the largest `ν = 1/ρ'` checked here,
/// and its products below `1e-300` only feed marginals below about `1e-290`.)
///
/// # Errors
/// As [`marginals`].
pub fn checked_marginals<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
) -> Result<(Matrix<P>, bool), Numerical> {
    checked_marginals_with(weights, rooting, None)
}

/// [`checked_marginals`], starting from the first half of a natural-order
/// elimination (and its pivots) when given.
fn checked_marginals_with<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
    head: Option<(&Head<P>, &[Leading<P>])>,
) -> Result<(Matrix<P>, bool), Numerical> {
    let start = match head {
        Some((head, pivots)) => Start::Head(head, pivots),
        None => Start::Whole,
    };
    let (pass, tiny) = whole_pass(weights, rooting, start)?;
    let mu = weighted(weights, &pass.nu, &pass.root_nu);
    pass.give_back();
    Ok((mu, tiny))
}

/// `w ⊙ ν` in the `(n+1) × (n+1)` layout from the pass's `ν` (`n × n`,
/// word heads) and its root row: the marginals (zero on column `0`, the
/// diagonal and zero weights). One product per arc, row by row.
fn weighted<P: NonNegative>(weights: &Matrix<P>, nu: &[P], root_nu: &[P]) -> Matrix<P> {
    let n1 = weights.rows();
    let n = n1 - 1;
    let mut out = vec![P::nil(); n1 * n1];
    let rows = out
        .chunks_exact_mut(n1)
        .zip(weights.as_slice().chunks_exact(n1));
    for (h, (out, w)) in rows.enumerate() {
        let nu_row = if h == 0 {
            root_nu
        } else {
            &nu[(h - 1) * n..h * n]
        };
        // Whole rows without a test of the diagonal, which is reset after.
        for ((o, w), x) in out[1..].iter_mut().zip(&w[1..]).zip(nu_row) {
            *o = if w.is_nil() { P::nil() } else { w.times(x) };
        }
        if h > 0 {
            out[h] = P::nil();
        }
    }
    Matrix::from_row_major(n1, n1, out)
}

/// `ν = ∂ ln Z / ∂w` for every arc, allowed or not (the `(n+1) × (n+1)`
/// layout, row `0` the root arcs; column `0` and the diagonal zero), by the
/// same backward pass as [`marginals`] (whose result is `w ⊙ ν`): sums of
/// products of non-negative numbers, a relative error of a few `n ε` per
/// entry. For single-root trees, the root entries are
/// `∂ ln Z_single / ∂ρ_m = lim_{t→0} t · ∂ ln Z_multi / ∂ρ'_m (tρ)` (the
/// limit of the module docs). `∂Z/∂w = Z ν` when `Z > 0`. `O(1.3 n³)`.
///
/// # Errors
/// As [`marginals`].
///
/// ```
/// use spantree_core::elimination::log_partition_gradient;
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// // Z = ρ₁ρ₂ + ρ₁A₁₂ + ρ₂A₂₁ = 13, ∂Z/∂ρ₁ = ρ₂ + A₁₂ = 5.
/// let nu = log_partition_gradient(&w, Rooting::Multi)?;
/// assert!((nu[(0, 1)] - 5.0 / 13.0).abs() < 1e-15);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn log_partition_gradient<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
) -> Result<Matrix<P>, Numerical> {
    checked_log_partition_gradient(weights, rooting).map(|(nu, _)| nu)
}

/// [`log_partition_gradient`] and the flag of [`checked_marginals`].
///
/// # Errors
/// As [`marginals`].
pub fn checked_log_partition_gradient<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
) -> Result<(Matrix<P>, bool), Numerical> {
    gradient_with(weights, rooting)
}

/// [`checked_log_partition_gradient`]: `ν` in the `(n+1) × (n+1)` layout.
fn gradient_with<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
) -> Result<(Matrix<P>, bool), Numerical> {
    let n = weights.rows() - 1;
    let (pass, tiny) = whole_pass(weights, rooting, Start::Whole)?;
    let (nu, root_nu) = (&pass.nu, &pass.root_nu);
    let grad = Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            P::nil()
        } else if h == 0 {
            root_nu[m - 1].clone()
        } else {
            nu[(h - 1) * n + m - 1].clone()
        }
    });
    pass.give_back();
    Ok((grad, tiny))
}

/// The marginal pass of [`checked_marginals`] and [`gradient_with`] on all of `weights` from `start`
/// (`Whole` or `Head`), its error naming the first zero pivot of the
/// natural order.
fn whole_pass<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
    start: Start<'_, P>,
) -> Result<(Box<Pass<P>>, bool), Numerical> {
    // The divide and conquer eliminates the words in the natural order along
    // its last branches (the first half, then the first half of the rest, …),
    // so its pivots are those of `Elimination::new`, bit for bit: no second
    // forward elimination is needed to find `Z = 0` or an extreme pivot.
    let mut pass = Pass::take(weights.rows() - 1);
    let work = pass.work(weights, rooting);
    match run_pass(work, rooting, start, &mut pass) {
        Ok(tiny) => Ok((pass, tiny)),
        // Report the first zero pivot of the natural order, as before.
        Err(e) => Err(Elimination::new(weights, rooting)
            .zero_pivot()
            .map_or(e, |pivot| Numerical::Singular { pivot })),
    }
}

/// The marginals of the arcs into the words `columns` only (`1..=n`, the
/// `(n+1) × (n+1)` layout; every other column zero), and the flag of
/// [`checked_marginals`]: the same sums of non-negative products, hence the
/// same relative accuracy, for less work when the columns are few. The words
/// are renumbered so that `columns` come last; the others are eliminated in
/// that order (`≈ n³/3` multiply-adds, the cost of [`Elimination::new`]),
/// the divide and conquer runs on the reduced graph of `columns`, and its
/// gradients are pushed back through the eliminated words (`2 n² |columns|`).
///
/// # Errors
/// As [`marginals`] (the pivot named is one of the renumbered order).
///
/// ```
/// use spantree_core::elimination::{checked_column_marginals, marginals};
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_fn(5, 5, |h, m| if m == 0 || h == m { 0.0 } else { (h + 2 * m) as f64 });
/// let all = marginals(&w, Rooting::Single)?;
/// let (some, _) = checked_column_marginals(&w, Rooting::Single, &[3])?;
/// for h in 0..5 {
///     assert!((some[(h, 3)] - all[(h, 3)]).abs() < 1e-15);
///     assert_eq!(some[(h, 1)], 0.0);
/// }
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn checked_column_marginals<P: NonNegative>(
    weights: &Matrix<P>,
    rooting: Rooting,
    columns: &[usize],
) -> Result<(Matrix<P>, bool), Numerical> {
    let n = weights.rows() - 1;
    let mut last = vec![false; n + 1];
    columns.iter().for_each(|&m| last[m] = true);
    // order[i] is the word at position i (the root stays at 0).
    let order: Vec<usize> = std::iter::once(0)
        .chain((1..=n).filter(|&m| !last[m]))
        .chain((1..=n).filter(|&m| last[m]))
        .collect();
    let permuted = Matrix::from_fn(n + 1, n + 1, |h, m| weights[(order[h], order[m])].clone());
    let split = n - (1..=n).filter(|&m| last[m]).count();
    let start = if split == 0 {
        Start::Whole
    } else {
        Start::Columns(split)
    };
    let mut pass = Pass::take(n);
    let work = pass.work(&permuted, rooting);
    let tiny = run_pass(work, rooting, start, &mut pass)?;
    let (nu, root_nu) = (&pass.nu, &pass.root_nu);
    let mut mu = Matrix::from_fn(n + 1, n + 1, |_, _| P::nil());
    for m in split + 1..=n {
        let column = order[m];
        for h in 0..=n {
            let head = order[h];
            let w = &weights[(head, column)];
            if h == m || w.is_nil() {
                continue;
            }
            let g = if h == 0 {
                &root_nu[m - 1]
            } else {
                &nu[(h - 1) * n + m - 1]
            };
            mu[(head, column)] = w.times(g);
        }
    }
    pass.give_back();
    Ok((mu, tiny))
}

/// Where a marginal pass starts.
enum Start<'a, P> {
    /// The whole divide and conquer.
    Whole,
    /// Only the columns `split..n`, by one branch that eliminates
    /// `0..split` in order.
    Columns(usize),
    /// The whole divide and conquer, its last top-level branch taken from
    /// the first half of a natural-order elimination (and its pivots).
    Head(&'a Head<P>, &'a [Leading<P>]),
}

/// The marginal pass on `work` (`n` words, those of `pass`, fresh from
/// [`Pass::take`]) from `start`: `ν` for the arcs (`n × n`, word heads) into
/// `pass.nu` and for the root arcs into `pass.root_nu`; returns whether a
/// product left `f64`'s safe range. The words eliminated first in order
/// give the pivots, checked for `Z = 0` and extremes.
fn run_pass<P: NonNegative>(
    work: Work<P>,
    rooting: Rooting,
    start: Start<'_, P>,
    pass: &mut Pass<P>,
) -> Result<bool, Numerical> {
    let n = work.r;
    let tiny = match start {
        Start::Whole => gradient(work, 0, true, pass)?,
        Start::Columns(split) => {
            let tiny = work.tiny;
            branch(work, 0..split, 0, true, tiny, pass)?
        }
        Start::Head(head, pivots) => {
            // As `gradient` at the top: the first branch, then the natural
            // one, whose steps the head holds.
            let half = n / 2;
            let mut tiny = work.tiny;
            tiny |= branch(work, half..n, 0, false, tiny, pass)?;
            if let Some(k) = pivots[..half].iter().position(Leading::is_nil) {
                return Err(Numerical::Singular { pivot: k });
            }
            pass.roots_extreme |= head.roots_extreme;
            pass.pivots.extend_from_slice(&pivots[..half]);
            let at = (pass.lowers.len(), pass.root_lowers.len());
            pass.lowers.extend_from_slice(&head.lowers);
            pass.root_lowers.extend_from_slice(&head.root_lowers);
            let mut work = pass.spare.pop().unwrap_or_else(|| Work {
                r: 0,
                arcs: Vec::new(),
                root: Vec::new(),
                tiny: false,
            });
            work.copy_from(&head.work);
            tiny | finish(work, 0..half, 0, true, tiny, pass, at)?
        }
    };
    let elimination = Elimination {
        pivots: std::mem::take(&mut pass.pivots),
        rooting,
        tiny: pass.roots_extreme,
        head: None,
    };
    let (zero_pivot, extreme) = (elimination.zero_pivot(), elimination.is_extreme());
    pass.pivots = elimination.pivots;
    if let Some(pivot) = zero_pivot {
        return Err(Numerical::Singular { pivot });
    }
    let tiny = tiny || extreme;
    // Root weights enter as `t ρ` for single-root trees: `∂/∂ρ = t ∂/∂(tρ)`.
    let t = Leading {
        value: P::unit(),
        order: match rooting {
            Rooting::Multi => 0,
            Rooting::Single => 1,
        },
    };
    let Pass {
        nu_root, root_nu, ..
    } = pass;
    root_nu.clear();
    for (m, x) in nu_root.iter().enumerate() {
        root_nu.push(x.times(&t).at_zero(tiny, m)?);
    }
    Ok(tiny)
}

/// A non-negative value `a` with a signed tangent `ȧ` (forward-mode
/// differentiation): the elimination run on `Dual`s returns, next to each
/// marginal, its directional derivative. `+ × ÷` act on the values as on
/// `f64` and on the tangents by the product and quotient rules.
///
/// ```
/// use spantree_core::elimination::{Dual, NonNegative};
/// let x = Dual::new(2.0, 1.0); // d/dt of (2 + t)
/// let y = x.times(&x).over(&x.plus(&x)); // x² / 2x = x / 2
/// assert_eq!((y.value(), y.tangent()), (1.0, 0.5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual {
    value: f64,
    tangent: f64,
    /// The tangent's size: the same sums with every term in absolute value
    /// (see [`Tangent::tangent_size`]).
    size: f64,
    /// The sum of the squares of the same terms ([`Tangent::tangent_spread`]).
    square: f64,
}

impl Dual {
    /// The value `value ≥ 0` with tangent `tangent`.
    pub fn new(value: f64, tangent: f64) -> Self {
        Dual {
            value,
            tangent,
            size: tangent.abs(),
            square: tangent * tangent,
        }
    }

    /// The value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The tangent.
    pub fn tangent(&self) -> f64 {
        self.tangent
    }
}

impl NonNegative for Dual {
    fn nil() -> Self {
        Dual::new(0.0, 0.0)
    }
    fn unit() -> Self {
        Dual::new(1.0, 0.0)
    }
    fn from_weight(x: f64) -> Self {
        Dual::new(x, 0.0)
    }
    fn to_weight(&self) -> f64 {
        self.value
    }
    fn ln_weight(&self) -> f64 {
        self.value.ln()
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.value == 0.0
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        Dual {
            value: self.value + other.value,
            tangent: self.tangent + other.tangent,
            size: self.size + other.size,
            square: self.square + other.square,
        }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        Dual {
            value: self.value * other.value,
            tangent: self.tangent * other.value + self.value * other.tangent,
            size: self.size * other.value + self.value * other.size,
            square: self.square * (other.value * other.value)
                + (self.value * self.value) * other.square,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        let q = self.value / other.value;
        Dual {
            value: q,
            tangent: (self.tangent - q * other.tangent) / other.value,
            size: (self.size + q * other.size) / other.value,
            square: (self.square + q * q * other.square) / (other.value * other.value),
        }
    }
    fn fraction(&self, rest: &Self) -> Self {
        let d = self.value + rest.value;
        let (l, complement) = (self.value / d, rest.value / d);
        Dual {
            value: l,
            tangent: (self.tangent * complement - l * rest.tangent) / d,
            size: (self.size * complement + l * rest.size) / d,
            square: (self.square * complement * complement + l * l * rest.square) / (d * d),
        }
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        self.value += a.value * b.value;
        self.tangent += a.tangent * b.value + a.value * b.tangent;
        self.size += a.size * b.value + a.value * b.size;
        self.square += a.square * (b.value * b.value) + (a.value * a.value) * b.square;
    }
    fn is_extreme(&self) -> bool {
        self.value.is_extreme() || !self.size.is_finite()
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.value
    }
}

/// `ln(e^{hi} + e^{lo})` for `hi ≥ lo > −∞`, and the smaller term's share
/// `e^{lo} / (e^{hi} + e^{lo})` of the sum: what every log-space tangent's
/// `plus` ([`LnDual`], [`LnGraded`], [`LnAnchored`]) needs to weight the two
/// relative tangents. `O(1)`.
#[inline]
fn ln_sum_and_share(hi: f64, lo: f64) -> (f64, f64) {
    let ratio = (lo - hi).exp();
    (hi + ratio.ln_1p(), ratio / (1.0 + ratio))
}

/// [`Dual`] in log space: the value as [`LnPositive`] and the *relative*
/// tangent `ȧ / a` (which a sum averages, a product adds and a quotient
/// subtracts), so that neither can underflow or overflow.
///
/// ```
/// use spantree_core::elimination::{LnDual, NonNegative};
/// let x = LnDual::new(2f64.ln(), 0.5); // 2 + t: relative tangent 1/2
/// let y = x.times(&x).over(&x.plus(&x));
/// assert!((y.ln() - 0.0).abs() < 1e-15 && (y.relative_tangent() - 0.5).abs() < 1e-15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LnDual {
    ln: f64,
    rel: f64,
    /// The relative size of the tangent ([`Tangent::tangent_size`] over the value).
    size: f64,
}

impl LnDual {
    /// The value `e^ln` with relative tangent `rel`.
    pub fn new(ln: f64, rel: f64) -> Self {
        LnDual {
            ln,
            rel,
            size: rel.abs(),
        }
    }

    /// `ln a`.
    pub fn ln(&self) -> f64 {
        self.ln
    }

    /// `ȧ / a`.
    pub fn relative_tangent(&self) -> f64 {
        self.rel
    }
}

impl NonNegative for LnDual {
    fn nil() -> Self {
        LnDual::new(f64::NEG_INFINITY, 0.0)
    }
    fn unit() -> Self {
        LnDual::new(0.0, 0.0)
    }
    fn from_weight(x: f64) -> Self {
        LnDual::new(x.ln(), 0.0)
    }
    fn to_weight(&self) -> f64 {
        self.ln.exp()
    }
    fn ln_weight(&self) -> f64 {
        self.ln
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.ln == f64::NEG_INFINITY
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        let (hi, lo) = if self.ln >= other.ln {
            (self, other)
        } else {
            (other, self)
        };
        if lo.ln == f64::NEG_INFINITY {
            return *hi;
        }
        // a + b = a (1 + b/a); the tangent is the average of the two
        // relative tangents weighted by a/(a+b) and b/(a+b).
        let (ln, share) = ln_sum_and_share(hi.ln, lo.ln);
        LnDual {
            ln,
            rel: hi.rel + share * (lo.rel - hi.rel),
            size: hi.size * (1.0 - share) + share * lo.size,
        }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        LnDual {
            ln: self.ln + other.ln,
            rel: self.rel + other.rel,
            size: self.size + other.size,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        LnDual {
            ln: self.ln - other.ln,
            rel: self.rel - other.rel,
            size: self.size + other.size,
        }
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.ln
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        let p = a.ln + b.ln;
        if p != f64::NEG_INFINITY {
            *self = self.plus(&LnDual {
                ln: p,
                rel: a.rel + b.rel,
                size: a.size + b.size,
            });
        }
    }
    fn fraction(&self, rest: &Self) -> Self {
        let d = self.plus(rest);
        if rest.is_nil() {
            return LnDual::new(0.0, 0.0);
        }
        let complement = (rest.ln - d.ln).exp();
        LnDual {
            ln: self.ln - d.ln,
            rel: complement * (self.rel - rest.rel),
            size: complement * (self.size + rest.size),
        }
    }
}

/// A [`NonNegative`] number with a tangent, seeded from a weight and a
/// direction in score space: [`Dual`] and [`LnDual`].
pub trait Tangent: NonNegative {
    /// The weight `w ≥ 0` moving along the score direction `θ̇`: tangent `w θ̇`.
    fn seeded(w: f64, score_tangent: f64) -> Self;
    /// [`Tangent::seeded`] along `θ̇ − c`: the types with exact anchors
    /// ([`Anchored`], [`LnAnchored`]) hold the difference exactly (in
    /// double-double), so that a seed centred by `c` (an exact invariance of
    /// `J θ̇` when `c` is common to the arcs into one word) adds no rounding
    /// of its own; the others round it once (from the double-double
    /// difference), which their size counts.
    fn seeded_minus(w: f64, score_tangent: f64, offsets: [f64; 2]) -> Self {
        // Rounded once, to a relative error its size counts.
        Self::seeded(w, Twofold::difference(score_tangent, offsets).value())
    }
    /// The tangent `ȧ` as an `f64`.
    fn tangent_f64(&self) -> f64;
    /// The tangent's *size*: the sums and products that formed its rounded
    /// parts, each term in absolute value (the same rules with every local
    /// partial and every seed replaced by its absolute value). The rounding
    /// error of the tangent is at most about `n ε` times it (a running error
    /// bound: each rounded operation is exact on relatively perturbed
    /// operands), and the tangent itself can be far smaller where its terms
    /// cancel.
    fn tangent_size(&self) -> f64;
    /// The root of the sum of the squares of the same terms (at most the
    /// size; the size itself for the types that do not keep it): rounding
    /// errors of independent terms add like it, and a tangent far below it
    /// is a cancellation all the same.
    fn tangent_spread(&self) -> f64 {
        self.tangent_size()
    }
}

impl Tangent for Dual {
    fn seeded(w: f64, score_tangent: f64) -> Self {
        Dual::new(w, w * score_tangent)
    }
    fn tangent_f64(&self) -> f64 {
        self.tangent
    }
    fn tangent_size(&self) -> f64 {
        self.size
    }
    fn tangent_spread(&self) -> f64 {
        self.square.sqrt()
    }
}

impl Tangent for LnDual {
    fn seeded(w: f64, score_tangent: f64) -> Self {
        LnDual::new(w.ln(), score_tangent)
    }
    fn tangent_f64(&self) -> f64 {
        if self.is_nil() {
            0.0
        } else {
            self.ln.exp() * self.rel
        }
    }
    fn tangent_size(&self) -> f64 {
        if self.is_nil() {
            0.0
        } else {
            self.ln.exp() * self.size
        }
    }
}

/// The Jacobian–vector product `J θ̇` of the marginals with respect to the
/// scores `θ = ln w` (`J_{ef} = ∂μ_e / ∂θ_f`, the Hessian of `ln Z`, so also
/// the vector–Jacobian product `Jᵀ θ̇`): the tangents of [`marginals`] run on
/// the tangent type `D` ([`Dual`] or [`LnDual`]), the weights moving as
/// `ẇ = w ⊙ θ̇`. Entries of `direction` on zero weights are ignored.
/// Single-root, the root row is first multiplied by the power of two that
/// brings its largest weight into `[1, 2)`: exact, and the answer does not
/// move (every tree has one root arc), but in log space a root weight
/// `e^{−300}` would carry `300 ε` as a logarithm.
/// Returns the tangents and the flag of [`checked_marginals`] (on [`Dual`],
/// rerun on [`LnDual`] when it is set). About `3×` the multiply-adds of
/// [`marginals`], `O(n³)`. Accuracy: see the module docs.
///
/// # Errors
/// As [`marginals`].
///
/// ```
/// use spantree_core::elimination::{marginals_jvp, Dual};
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// // Trees of weights 2, 3, 8: ∂μ(2→1)/∂θ(2→1) = μ(1 − μ), μ = 8/13.
/// let mut dir = Matrix::zeros(3, 3);
/// dir[(2, 1)] = 1.0;
/// let (jvp, _) = marginals_jvp::<Dual>(&w, &dir, Rooting::Multi)?;
/// let mu = 8.0 / 13.0;
/// assert!((jvp[(2, 1)] - mu * (1.0 - mu)).abs() < 1e-15);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn marginals_jvp<D: Tangent>(
    weights: &Matrix<f64>,
    direction: &Matrix<f64>,
    rooting: Rooting,
) -> Result<(Matrix<f64>, bool), Numerical> {
    let zero = Matrix::zeros(weights.rows(), weights.cols());
    let (v, _, tiny) = marginals_jvp_sized::<D>(weights, direction, [&zero, &zero], rooting)?;
    Ok((v, tiny))
}

/// `J θ̇`, the sizes and the spreads of its entries, and whether the run
/// left `f64`'s safe range ([`marginals_jvp_sized`]).
pub type SizedJvp = (Matrix<f64>, [Matrix<f64>; 2], bool);

/// [`marginals_jvp`] along `θ̇ − a − b` for the two offset matrices
/// `offsets = [a, b]` (entry by entry, formed by [`Tangent::seeded_minus`])
/// with the size and the spread of every entry ([`Tangent::tangent_size`],
/// [`Tangent::tangent_spread`]): `(J (θ̇ − a − b), [sizes, spreads], tiny)`. The rounding error of entry `e` is at most about
/// `n ε · size_e`, whatever the cancellation inside the elimination (the
/// caller compares that with the product it returns). Same cost as
/// [`marginals_jvp`] plus one multiply-add per tangent operation.
///
/// # Errors
/// As [`marginals`].
///
/// ```
/// use spantree_core::elimination::{marginals_jvp_sized, Dual};
/// use spantree_core::{Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// let mut dir = Matrix::zeros(3, 3);
/// dir[(2, 1)] = 1.0;
/// let zero = Matrix::zeros(3, 3);
/// let (jvp, [size, _], _) =
///     marginals_jvp_sized::<Dual>(&w, &dir, [&zero, &zero], Rooting::Multi)?;
/// // No cancellation to speak of: the size is of the order of the tangent.
/// assert!(size[(2, 1)] >= jvp[(2, 1)].abs() && size[(2, 1)] < 10.0 * jvp[(2, 1)].abs());
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn marginals_jvp_sized<D: Tangent>(
    weights: &Matrix<f64>,
    direction: &Matrix<f64>,
    [a, b]: [&Matrix<f64>; 2],
    rooting: Rooting,
) -> Result<SizedJvp, Numerical> {
    let scale = root_scale(weights, rooting);
    let seeded = Matrix::from_fn(weights.rows(), weights.cols(), |h, m| {
        let w = if h == 0 {
            scale.apply(weights[(h, m)])
        } else {
            weights[(h, m)]
        };
        if w == 0.0 {
            D::nil()
        } else {
            D::seeded_minus(w, direction[(h, m)], [a[(h, m)], b[(h, m)]])
        }
    });
    // The marginals `w ⊙ ν` of `checked_marginals`, read straight into the
    // three outputs (no matrix of `ν` nor of the marginals in `D`).
    let (pass, tiny) = whole_pass(&seeded, rooting, Start::Whole)?;
    let (nu, root_nu) = (&pass.nu, &pass.root_nu);
    let n1 = weights.rows();
    let n = n1 - 1;
    // Row-major slices: the same numbers as entry by entry through
    // `Matrix` indexing, without its bounds checks.
    let none = D::nil();
    let none = [
        none.tangent_f64(),
        none.tangent_size(),
        none.tangent_spread(),
    ];
    let mut out = none.map(|x| vec![x; n1 * n1]);
    let [v, size, spread] = &mut out;
    for (h, w_row) in seeded.as_slice().chunks_exact(n1).enumerate() {
        let nu_row = if h == 0 {
            &root_nu[..]
        } else {
            &nu[(h - 1) * n..h * n]
        };
        for m in 1..n1 {
            let w = &w_row[m];
            if h == m || w.is_nil() {
                continue;
            }
            let mu = w.times(&nu_row[m - 1]);
            let i = h * n1 + m;
            v[i] = mu.tangent_f64();
            size[i] = mu.tangent_size();
            spread[i] = mu.tangent_spread();
        }
    }
    pass.give_back();
    let [v, size, spread] = out.map(|x| Matrix::from_row_major(n1, n1, x));
    Ok((v, [size, spread], tiny))
}

/// Single-root: the power of two `2^k` that brings the largest root weight
/// into `[1, 2)`; multi-root (or no root arc): `2⁰`. Every single-root tree
/// has exactly one root arc, so dividing every root weight by a common
/// factor divides `Z` by it and leaves the marginals and their derivatives
/// unchanged; by a power of two the division is exact in `f64`. It matters
/// in log space ([`LnDual`], [`LnAnchored`]): a root weight `e^{s}` at root
/// shift `s` held as its logarithm carries `|s| ε` relatively, and after
/// the rescaling only `|ln(ρ_m / 2^k)| ε`, of the size of the spread of the
/// root scores. Only ever a scaling *up* (`k ≥ 0`; root weights of `2` and
/// more stay as they are): scaling down could flush a small root weight to
/// zero, scaling up is exact down to the subnormals. `O(n)`.
pub(crate) fn root_scale(weights: &Matrix<f64>, rooting: Rooting) -> PowerOfTwo {
    let n1 = weights.rows();
    let top = (1..n1).map(|m| weights[(0, m)]).fold(0.0f64, f64::max);
    if rooting == Rooting::Multi || !(top > 0.0 && top < 1.0) {
        return PowerOfTwo(0);
    }
    PowerOfTwo(-(top.log2().floor() as i32))
}

/// Multiplication by `2^e` in two exact steps (one factor `2^e` alone
/// overflows for `|e| > 1023`, as weights near `2⁻¹⁰⁷⁴` need).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PowerOfTwo(pub(crate) i32);

impl PowerOfTwo {
    /// The weights with the root row multiplied by `2^e` (see `root_scale`):
    /// one copy, and one row scaled. `O(n²)`.
    pub(crate) fn scaled_roots(self, weights: &Matrix<f64>) -> Matrix<f64> {
        let mut scaled = weights.clone();
        if self.0 != 0 {
            let n1 = scaled.cols();
            for x in &mut scaled.as_mut_slice()[..n1] {
                *x = self.apply(*x);
            }
        }
        scaled
    }

    /// `x · 2^e`, exact in `f64` unless it leaves the range.
    pub(crate) fn apply(self, x: f64) -> f64 {
        if self.0 == 0 {
            return x;
        }
        let half = self.0 / 2;
        x * 2f64.powi(half) * 2f64.powi(self.0 - half)
    }
}

/// A non-negative value `a` with the tangent `ȧ = o · a + r` along the
/// scaling of every root weight by `e^t` (the seed `1` on every root arc),
/// kept as the integer *order* `o` and the *remainder* `r` apart.
///
/// Why: along that direction every root-derived quantity of the elimination
/// has a relative tangent near an integer (a root weight `1`, a multiplier
/// `ρ[k]/d_k` about `1`, `ν_m[0] = 1/ρ'_m` about `−1`), and the tangent of a
/// marginal is the small difference of such terms: `∂μ_e/∂t =
/// Cov[1_e, #root arcs]`, `e^{shift}` times smaller than `μ_e` when root
/// scores lie far below the arcs'. On [`Dual`] that difference is formed
/// from rounded terms of size `μ_e` and keeps `53 − log₂(μ_e/|Cov|)` bits at
/// best. Here the integer parts add and cancel exactly, as the orders of
/// the single-root limit do (root weights are order `1`, words' arcs order
/// `0`; a sum takes the lower order), and only the remainders, each of the
/// size of the higher-order terms it comes from, are rounded:
///
/// * `a + b`, `o_a ≤ o_b`: order `o_a`, `r = r_a + r_b + (o_b − o_a) b`;
/// * `a · b`: order `o_a + o_b`, `r = r_a b + a r_b`;
/// * `a / b`: order `o_a − o_b`, `r = (r_a − (a/b) r_b) / b`;
/// * `l = a / (a + c)`: with `d = a + c`, `r = (r_a c − a r_c)/d²
///   − |o_a − o_c| · l · (the higher-order one of a, c) / d`.
///
/// Each rule is exact algebra on `ȧ = o a + r`, whatever orders are
/// assigned; the orders only decide which parts cancel exactly.
///
/// ```
/// use spantree_core::elimination::{Graded, NonNegative};
/// let rho = Graded::root(1e-100); // a root weight: ȧ = 1 · a
/// let arc = Graded::from_weight(1.0); // an arc: ȧ = 0
/// // ρ/(ρ + 1): tangent ρ/(1 + ρ)², no cancellation of 1 − 1.
/// let l = rho.fraction(&arc);
/// assert_eq!(l.tangent(), 1e-100);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Graded {
    value: f64,
    order: i32,
    rest: f64,
}

/// The order of zero in [`Graded`]: above any order an elimination of
/// fewer than a million words can reach.
const NIL_ORDER: i32 = 1 << 20;

impl Graded {
    /// A root weight `ρ ≥ 0`: order `1`, remainder `0` (`ρ̇ = ρ`).
    pub fn root(value: f64) -> Self {
        Graded {
            value,
            order: if value == 0.0 { NIL_ORDER } else { 1 },
            rest: 0.0,
        }
    }

    /// The value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The tangent `o · a + r`.
    pub fn tangent(&self) -> f64 {
        f64::from(self.order) * self.value + self.rest
    }
}

impl NonNegative for Graded {
    fn nil() -> Self {
        Graded {
            value: 0.0,
            order: NIL_ORDER,
            rest: 0.0,
        }
    }
    fn unit() -> Self {
        Graded {
            value: 1.0,
            order: 0,
            rest: 0.0,
        }
    }
    fn from_weight(x: f64) -> Self {
        Graded {
            value: x,
            order: if x == 0.0 { NIL_ORDER } else { 0 },
            rest: 0.0,
        }
    }
    fn to_weight(&self) -> f64 {
        self.value
    }
    fn ln_weight(&self) -> f64 {
        self.value.ln()
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.value == 0.0
    }
    /// Without branches (the inner loop of the elimination): zero carries
    /// the order `NIL_ORDER`, above every true order, so the minimum
    /// ignores it and its excess multiplies its zero value.
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        let order = self.order.min(other.order);
        Graded {
            value: self.value + other.value,
            order,
            rest: self.rest
                + other.rest
                + f64::from(self.order - order) * self.value
                + f64::from(other.order - order) * other.value,
        }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        Graded {
            value: self.value * other.value,
            order: (self.order + other.order).min(NIL_ORDER),
            rest: self.rest * other.value + self.value * other.rest,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        if self.is_nil() {
            return Graded::nil();
        }
        let q = self.value / other.value;
        Graded {
            value: q,
            order: self.order - other.order,
            rest: (self.rest - q * other.rest) / other.value,
        }
    }
    fn fraction(&self, rest: &Self) -> Self {
        if self.is_nil() {
            return Graded::nil();
        }
        if rest.is_nil() {
            return Graded::unit();
        }
        let d = self.value + rest.value;
        let (l, complement) = (self.value / d, rest.value / d);
        let mut r = (self.rest * complement - l * rest.rest) / d;
        let order = if self.order <= rest.order {
            r -= f64::from(rest.order - self.order) * l * complement;
            0
        } else {
            r -= f64::from(self.order - rest.order) * l * l;
            self.order - rest.order
        };
        Graded {
            value: l,
            order,
            rest: r,
        }
    }
    fn is_extreme(&self) -> bool {
        self.value.is_extreme() || !self.rest.is_finite()
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.value
    }
}

/// [`Graded`] in log space: the value as its logarithm, the relative
/// tangent `ȧ/a = o + ρ` as the order `o` and the relative remainder `ρ`
/// (the rules of [`Graded`] divided by the value), so that nothing can
/// underflow or overflow.
///
/// ```
/// use spantree_core::elimination::{LnGraded, NonNegative};
/// let rho = LnGraded::root(-1000.0); // e^-1000, a root weight
/// let l = rho.fraction(&LnGraded::from_weight(1.0));
/// // ρ/(ρ + 1) has relative tangent 1/(1 + ρ) = 1 − ρ: order 1, rest −ρ.
/// assert_eq!(l.relative_tangent(), 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LnGraded {
    ln: f64,
    order: i32,
    rel: f64,
}

impl LnGraded {
    /// A root weight `e^ln`: order `1`, remainder `0`.
    pub fn root(ln: f64) -> Self {
        LnGraded {
            ln,
            order: i32::from(ln != f64::NEG_INFINITY),
            rel: 0.0,
        }
    }

    /// `ȧ / a = o + ρ`.
    pub fn relative_tangent(&self) -> f64 {
        f64::from(self.order) + self.rel
    }
}

impl NonNegative for LnGraded {
    fn nil() -> Self {
        LnGraded {
            ln: f64::NEG_INFINITY,
            order: 0,
            rel: 0.0,
        }
    }
    fn unit() -> Self {
        LnGraded {
            ln: 0.0,
            order: 0,
            rel: 0.0,
        }
    }
    fn from_weight(x: f64) -> Self {
        LnGraded {
            ln: x.ln(),
            order: 0,
            rel: 0.0,
        }
    }
    fn to_weight(&self) -> f64 {
        self.ln.exp()
    }
    fn ln_weight(&self) -> f64 {
        self.ln
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.ln == f64::NEG_INFINITY
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        let (hi, lo) = if self.ln >= other.ln {
            (self, other)
        } else {
            (other, self)
        };
        if lo.is_nil() {
            return *hi;
        }
        let (ln, share) = ln_sum_and_share(hi.ln, lo.ln);
        let order = hi.order.min(lo.order);
        // Each relative tangent o + ρ, weighted by its share of the sum,
        // less the order of the sum: the integer excess of the higher-order
        // term enters with its own share only.
        let rel = hi.rel
            + share * (lo.rel - hi.rel)
            + (1.0 - share) * f64::from(hi.order - order)
            + share * f64::from(lo.order - order);
        LnGraded { ln, order, rel }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        if self.is_nil() || other.is_nil() {
            return LnGraded::nil();
        }
        LnGraded {
            ln: self.ln + other.ln,
            order: self.order + other.order,
            rel: self.rel + other.rel,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        if self.is_nil() {
            return LnGraded::nil();
        }
        LnGraded {
            ln: self.ln - other.ln,
            order: self.order - other.order,
            rel: self.rel - other.rel,
        }
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.ln
    }
    fn fraction(&self, rest: &Self) -> Self {
        if self.is_nil() {
            return LnGraded::nil();
        }
        if rest.is_nil() {
            return LnGraded::unit();
        }
        let d = self.plus(rest);
        let complement = (rest.ln - d.ln).exp();
        let mut rel = complement * (self.rel - rest.rel);
        let order = if self.order <= rest.order {
            rel -= complement * f64::from(rest.order - self.order);
            0
        } else {
            let share = (self.ln - d.ln).exp();
            rel -= share * f64::from(self.order - rest.order);
            self.order - rest.order
        };
        LnGraded {
            ln: self.ln - d.ln,
            order,
            rel,
        }
    }
}

/// A [`NonNegative`] number carrying the tangent along the root scaling
/// ([`Graded`], [`LnGraded`]).
pub trait RootTangent: NonNegative {
    /// A root weight `ρ ≥ 0`, moving as `ρ̇ = ρ`.
    fn root(w: f64) -> Self;
    /// The tangent `ȧ` as an `f64`.
    fn root_tangent(&self) -> f64;
}

impl RootTangent for Graded {
    fn root(w: f64) -> Self {
        Graded::root(w)
    }
    fn root_tangent(&self) -> f64 {
        self.tangent()
    }
}

impl RootTangent for LnGraded {
    fn root(w: f64) -> Self {
        LnGraded::root(w.ln())
    }
    fn root_tangent(&self) -> f64 {
        if self.is_nil() {
            0.0
        } else {
            self.ln.exp() * self.relative_tangent()
        }
    }
}

/// `J 1_root = ∂μ/∂t` with every root score moving as `θ_{0m} + t`: the
/// covariance `Cov[1_e, #root arcs]` of every arc with the number of root
/// arcs, accurate relative to its own size (see [`Graded`]), where
/// [`marginals_jvp`] seeded with `1` on the root arcs keeps only its
/// absolute accuracy `n ε μ_e`. Multi-root trees only (single-root trees
/// have exactly one root arc, and the product is zero). Returns the tangents
/// and the flag of [`checked_marginals`]. `O(1.3 n³)` multiply-adds on
/// graded numbers.
///
/// # Errors
/// As [`marginals`].
///
/// ```
/// use spantree_core::elimination::{root_scaling_jvp, Graded};
/// use spantree_core::{Matrix, Rooting};
/// // Trees {0→1, 0→2} (2 root arcs, weight 2), {0→1, 1→2}, {0→2, 2→1}
/// // (1 root arc, weights 3 and 8): E[#root] = 15/13.
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// let (cov, _) = root_scaling_jvp::<Graded>(&w)?;
/// // Cov[1(2→1), #root] = 8/13 · (1 − 15/13).
/// assert!((cov[(2, 1)] - 8.0 / 13.0 * (1.0 - 15.0 / 13.0)).abs() < 1e-15);
/// # Ok::<(), spantree_core::Numerical>(())
/// ```
pub fn root_scaling_jvp<G: RootTangent>(
    weights: &Matrix<f64>,
) -> Result<(Matrix<f64>, bool), Numerical> {
    let seeded = Matrix::from_fn(weights.rows(), weights.cols(), |h, m| {
        let w = weights[(h, m)];
        if w == 0.0 {
            G::nil()
        } else if h == 0 {
            G::root(w)
        } else {
            G::from_weight(w)
        }
    });
    let (mu, tiny) = checked_marginals(&seeded, Rooting::Multi)?;
    Ok((mu.map(RootTangent::root_tangent), tiny))
}

/// `a + b` as the rounded sum and its exact error (Knuth's two-sum).
#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// A real number `hi + lo` in double-double, `|lo| ≤ ulp(hi)/2`: the
/// anchors of [`Anchored`] add and cancel to about `2⁻¹⁰⁵` of the anchors
/// themselves.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Twofold {
    hi: f64,
    lo: f64,
}

impl Twofold {
    const ZERO: Twofold = Twofold { hi: 0.0, lo: 0.0 };

    #[inline]
    fn of(x: f64) -> Self {
        Twofold { hi: x, lo: 0.0 }
    }

    #[inline]
    fn plus(self, other: Self) -> Self {
        let (s, e) = two_sum(self.hi, other.hi);
        let e = e + (self.lo + other.lo);
        let (hi, lo) = two_sum(s, e);
        Twofold { hi, lo }
    }

    #[inline]
    fn minus(self, other: Self) -> Self {
        self.plus(Twofold {
            hi: -other.hi,
            lo: -other.lo,
        })
    }

    /// `x − a − b` to about `2⁻¹⁰⁵` of the largest term (`x − a` exactly).
    #[inline]
    fn difference(x: f64, [a, b]: [f64; 2]) -> Self {
        let (hi, lo) = two_sum(x, -a);
        Twofold { hi, lo }.minus(Twofold::of(b))
    }

    /// The nearest `f64` (to a few ulps).
    #[inline]
    fn value(self) -> f64 {
        self.hi + self.lo
    }
}

impl Twofold {
    /// `a · b` to about `2⁻¹⁰⁴` relative (an exact product of the high parts
    /// by a fused multiply-add, the cross terms rounded).
    #[inline]
    fn times(self, other: Self) -> Self {
        let p = self.hi * other.hi;
        let e = self.hi.mul_add(other.hi, -p) + (self.hi * other.lo + self.lo * other.hi);
        let (hi, lo) = two_sum(p, e);
        Twofold { hi, lo }
    }

    /// `a / b` to about `2⁻¹⁰⁴` relative (two correction steps).
    #[inline]
    fn over(self, other: Self) -> Self {
        let q1 = self.hi / other.hi;
        let r = self.minus(other.times(Twofold::of(q1)));
        let q2 = r.hi / other.hi;
        let r = r.minus(other.times(Twofold::of(q2)));
        let q3 = r.hi / other.hi;
        let (hi, lo) = two_sum(q1, q2);
        Twofold { hi, lo }.plus(Twofold::of(q3))
    }
}

/// [`Dual`] in double-double: value and tangent each about 106 bits, with
/// the tangent's size ([`Tangent::tangent_size`]) in `f64`. The engines'
/// escalation when a product on [`Dual`] or [`Anchored`] cancels by more
/// than `f64` holds (its running error estimate says so): the same
/// elimination, whose rounding errors are now `2⁻¹⁰⁴` times the size, so
/// that a cancellation of `2⁴⁰` still leaves about 60 bits. About ten times
/// the time of [`Dual`].
///
/// ```
/// use spantree_core::elimination::{NonNegative, Tangent, WideDual};
/// // 1 + 1e-30 moving with relative tangents 1 and 3: the sum's tangent
/// // 1 + 3e-30 keeps its small part, as no f64 can.
/// let s = WideDual::seeded(1.0, 1.0).plus(&WideDual::seeded(1e-30, 3.0));
/// let one = WideDual::seeded(1.0, 1.0);
/// assert!((s.tangent_minus(&one) - 3e-30).abs() < 1e-45);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WideDual {
    value: Twofold,
    tangent: Twofold,
    size: f64,
}

impl WideDual {
    /// The difference of two tangents, rounded once to `f64`.
    pub fn tangent_minus(&self, other: &Self) -> f64 {
        self.tangent.minus(other.tangent).value()
    }
}

impl NonNegative for WideDual {
    fn nil() -> Self {
        WideDual {
            value: Twofold::ZERO,
            tangent: Twofold::ZERO,
            size: 0.0,
        }
    }
    fn unit() -> Self {
        WideDual::from_weight(1.0)
    }
    fn from_weight(x: f64) -> Self {
        WideDual {
            value: Twofold::of(x),
            tangent: Twofold::ZERO,
            size: 0.0,
        }
    }
    fn to_weight(&self) -> f64 {
        self.value.value()
    }
    fn ln_weight(&self) -> f64 {
        self.value.hi.ln()
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.value.hi == 0.0
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        WideDual {
            value: self.value.plus(other.value),
            tangent: self.tangent.plus(other.tangent),
            size: self.size + other.size,
        }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        WideDual {
            value: self.value.times(other.value),
            tangent: self
                .tangent
                .times(other.value)
                .plus(self.value.times(other.tangent)),
            size: self.size * other.value.hi + self.value.hi * other.size,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        let q = self.value.over(other.value);
        WideDual {
            value: q,
            tangent: self.tangent.minus(q.times(other.tangent)).over(other.value),
            size: (self.size + q.hi * other.size) / other.value.hi,
        }
    }
    fn fraction(&self, rest: &Self) -> Self {
        let d = self.value.plus(rest.value);
        let (l, complement) = (self.value.over(d), rest.value.over(d));
        let tangent = self
            .tangent
            .times(complement)
            .minus(l.times(rest.tangent))
            .over(d);
        WideDual {
            value: l,
            tangent,
            size: (self.size * complement.hi + l.hi * rest.size) / d.hi,
        }
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        if !a.is_nil() && !b.is_nil() {
            *self = self.plus(&a.times(b));
        }
    }
    /// Outside `[2⁻⁹⁰⁰, 2⁹⁰⁰]`: the low parts of double-double lose their
    /// bits near `f64`'s subnormals.
    fn is_extreme(&self) -> bool {
        let x = self.value.hi;
        (x != 0.0 && !(1e-270..=1e270).contains(&x)) || !self.size.is_finite()
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.value.hi
    }
}

impl Tangent for WideDual {
    fn seeded(w: f64, score_tangent: f64) -> Self {
        WideDual {
            value: Twofold::of(w),
            tangent: Twofold::of(w).times(Twofold::of(score_tangent)),
            size: (w * score_tangent).abs(),
        }
    }
    /// The difference held exactly in double-double (no rounding of its own).
    fn seeded_minus(w: f64, score_tangent: f64, offsets: [f64; 2]) -> Self {
        let d = Twofold::difference(score_tangent, offsets);
        WideDual {
            value: Twofold::of(w),
            tangent: Twofold::of(w).times(d),
            size: (w * d.hi).abs(),
        }
    }
    fn tangent_f64(&self) -> f64 {
        self.tangent.value()
    }
    fn tangent_size(&self) -> f64 {
        self.size
    }
}

/// A non-negative value `a` whose tangent is kept as `ȧ = o · a + r`: the
/// *anchor* `o`, the relative tangent of the value's dominant term, in
/// double-double, and the remainder `r` rounded. [`marginals_jvp`] runs on
/// it for every vector–Jacobian product of the `f64` engines.
///
/// Why: seeded with a direction `θ̇`, every product of weights (a term of a
/// pivot, a path of multipliers, a tree) has the relative tangent
/// `Σ_f θ̇_f · (times arc f occurs)`. When one term dominates a sum, the
/// sum's relative tangent is that term's up to the small shares of the
/// others; quotients of such sums (multipliers, `ν = 1/ρ'`) then carry
/// relative tangents that *cancel* between numerator and denominator.
/// [`Dual`] forms those cancelling parts from rounded `O(|θ̇|)` terms and
/// keeps `μ̇_e` only to about `ε μ_e |θ̇|`; on nearly deterministic graphs
/// (arc scores spread ±50: `μ̇_e` about `1e-22 μ_e`) that is no relative
/// bit at all. Here the anchors add and subtract in double-double, so their
/// cancellation is exact to `2⁻¹⁰⁵`, and every rounded term of a remainder
/// is a product of non-negative values as small as the non-dominant term it
/// comes from. The rules are exact algebra on `ȧ = o a + r` whatever the
/// anchors ([`Graded`] is the case of integer anchors along the root
/// scaling):
///
/// * `a + b`, `a ≥ b`: anchor `o_a`, `r = r_a + r_b + (o_b − o_a) b`;
/// * `a · b`: anchor `o_a + o_b`, `r = r_a b + a r_b`;
/// * `a / b`: anchor `o_a − o_b`, `r = (r_a − (a/b) r_b) / b`;
/// * `l = a / (a + c)`, `d = a + c`, `δ = o_a − o_c`,
///   `s = (r_a c/d − l r_c) / d`: for `a ≥ c` anchor `0`,
///   `r = s + δ l c/d`; otherwise anchor `δ`, `r = s − δ l²`.
///
/// ```
/// use spantree_core::elimination::{Anchored, NonNegative, Tangent};
/// // a = 1 and b = 1e-30 moving with relative tangents 1 and 3: the sum's
/// // tangent 1 + 3e-30 keeps its small part.
/// let s = Anchored::seeded(1.0, 1.0).plus(&Anchored::seeded(1e-30, 3.0));
/// assert_eq!(s.tangent_f64() - 1.0, 0.0); // rounded, as an f64 sum must be
/// assert_eq!(s.remainder(), 2e-30); // (3 − 1) · 1e-30, kept apart
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchored {
    value: f64,
    anchor: Twofold,
    rest: f64,
    /// The size of the remainder ([`Tangent::tangent_size`]).
    size: f64,
    /// The sum of the squares of the remainder's terms.
    square: f64,
}

impl Anchored {
    /// The value.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// The remainder `r = ȧ − o a`.
    pub fn remainder(&self) -> f64 {
        self.rest
    }
}

impl NonNegative for Anchored {
    fn nil() -> Self {
        Anchored {
            value: 0.0,
            anchor: Twofold::ZERO,
            rest: 0.0,
            size: 0.0,
            square: 0.0,
        }
    }
    fn unit() -> Self {
        Anchored::from_weight(1.0)
    }
    fn from_weight(x: f64) -> Self {
        Anchored {
            value: x,
            anchor: Twofold::ZERO,
            rest: 0.0,
            size: 0.0,
            square: 0.0,
        }
    }
    fn to_weight(&self) -> f64 {
        self.value
    }
    fn ln_weight(&self) -> f64 {
        self.value.ln()
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.value == 0.0
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        let (big, small) = if self.value >= other.value {
            (self, other)
        } else {
            (other, self)
        };
        let excess = if small.value == 0.0 {
            0.0
        } else {
            small.anchor.minus(big.anchor).value() * small.value
        };
        Anchored {
            value: big.value + small.value,
            anchor: big.anchor,
            rest: big.rest + small.rest + excess,
            size: big.size + small.size + excess.abs(),
            square: big.square + small.square + excess * excess,
        }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        Anchored {
            value: self.value * other.value,
            anchor: self.anchor.plus(other.anchor),
            rest: self.rest * other.value + self.value * other.rest,
            size: self.size * other.value + self.value * other.size,
            square: self.square * (other.value * other.value)
                + (self.value * self.value) * other.square,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        if self.is_nil() {
            return Anchored::nil();
        }
        let q = self.value / other.value;
        Anchored {
            value: q,
            anchor: self.anchor.minus(other.anchor),
            rest: (self.rest - q * other.rest) / other.value,
            size: (self.size + q * other.size) / other.value,
            square: (self.square + q * q * other.square) / (other.value * other.value),
        }
    }
    fn fraction(&self, rest: &Self) -> Self {
        if self.is_nil() {
            return Anchored::nil();
        }
        if rest.is_nil() {
            return Anchored::unit();
        }
        let d = self.value + rest.value;
        let (l, complement) = (self.value / d, rest.value / d);
        let delta = self.anchor.minus(rest.anchor);
        let s = (self.rest * complement - l * rest.rest) / d;
        let size = (self.size * complement + l * rest.size) / d;
        let square = (self.square * complement * complement + l * l * rest.square) / (d * d);
        if self.value >= rest.value {
            let excess = delta.value() * l * complement;
            Anchored {
                value: l,
                anchor: Twofold::ZERO,
                rest: s + excess,
                size: size + excess.abs(),
                square: square + excess * excess,
            }
        } else {
            let excess = delta.value() * l * l;
            Anchored {
                value: l,
                anchor: delta,
                rest: s - excess,
                size: size + excess.abs(),
                square: square + excess * excess,
            }
        }
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        if a.value != 0.0 && b.value != 0.0 {
            *self = self.plus(&a.times(b));
        }
    }
    fn is_extreme(&self) -> bool {
        self.value.is_extreme() || !self.size.is_finite() || !self.anchor.hi.is_finite()
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.value
    }
}

impl Tangent for Anchored {
    fn seeded_minus(w: f64, score_tangent: f64, offsets: [f64; 2]) -> Self {
        Anchored {
            value: w,
            anchor: Twofold::difference(score_tangent, offsets),
            rest: 0.0,
            size: 0.0,
            square: 0.0,
        }
    }
    fn seeded(w: f64, score_tangent: f64) -> Self {
        Anchored {
            value: w,
            anchor: Twofold::of(score_tangent),
            rest: 0.0,
            size: 0.0,
            square: 0.0,
        }
    }
    fn tangent_f64(&self) -> f64 {
        if self.value == 0.0 {
            return self.rest;
        }
        self.anchor.hi * self.value + (self.anchor.lo * self.value + self.rest)
    }
    /// The remainder's size plus the anchored part `|o| a`, whose value
    /// `a` carries the relative error of the marginal.
    fn tangent_size(&self) -> f64 {
        self.size + (self.anchor.hi * self.value).abs()
    }
    fn tangent_spread(&self) -> f64 {
        let anchored = self.anchor.hi * self.value;
        (self.square + anchored * anchored).sqrt()
    }
}

/// [`Anchored`] in log space: the value as its logarithm, the relative
/// tangent `ȧ/a = o + ρ` as the anchor `o` (double-double) and the relative
/// remainder `ρ` (the rules of [`Anchored`] divided by the value), so that
/// nothing can underflow or overflow.
///
/// ```
/// use spantree_core::elimination::{LnAnchored, NonNegative, Tangent};
/// let s = LnAnchored::seeded(1.0, 1.0).plus(&LnAnchored::seeded(1e-30, 3.0));
/// // Relative tangent (1 + 3e-30)/(1 + 1e-30) = 1 + 2e-30: anchor 1, rest 2e-30.
/// assert!((s.relative_remainder() - 2e-30).abs() < 1e-42);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LnAnchored {
    ln: f64,
    anchor: Twofold,
    rel: f64,
    /// The relative size of the remainder ([`Tangent::tangent_size`] over the value).
    size: f64,
}

impl LnAnchored {
    /// `ln a`.
    pub fn ln(&self) -> f64 {
        self.ln
    }

    /// The relative remainder `ρ = ȧ/a − o`.
    pub fn relative_remainder(&self) -> f64 {
        self.rel
    }
}

impl NonNegative for LnAnchored {
    fn nil() -> Self {
        LnAnchored {
            ln: f64::NEG_INFINITY,
            anchor: Twofold::ZERO,
            rel: 0.0,
            size: 0.0,
        }
    }
    fn unit() -> Self {
        LnAnchored::from_weight(1.0)
    }
    fn from_weight(x: f64) -> Self {
        LnAnchored {
            ln: x.ln(),
            anchor: Twofold::ZERO,
            rel: 0.0,
            size: 0.0,
        }
    }
    fn to_weight(&self) -> f64 {
        self.ln.exp()
    }
    fn ln_weight(&self) -> f64 {
        self.ln
    }
    #[inline]
    fn is_nil(&self) -> bool {
        self.ln == f64::NEG_INFINITY
    }
    #[inline]
    fn plus(&self, other: &Self) -> Self {
        let (hi, lo) = if self.ln >= other.ln {
            (self, other)
        } else {
            (other, self)
        };
        if lo.is_nil() {
            return *hi;
        }
        let (ln, share) = ln_sum_and_share(hi.ln, lo.ln);
        let excess = lo.anchor.minus(hi.anchor).value();
        LnAnchored {
            ln,
            anchor: hi.anchor,
            rel: hi.rel + share * (lo.rel - hi.rel + excess),
            size: hi.size * (1.0 - share) + share * (lo.size + excess.abs()),
        }
    }
    #[inline]
    fn times(&self, other: &Self) -> Self {
        if self.is_nil() || other.is_nil() {
            return LnAnchored::nil();
        }
        LnAnchored {
            ln: self.ln + other.ln,
            anchor: self.anchor.plus(other.anchor),
            rel: self.rel + other.rel,
            size: self.size + other.size,
        }
    }
    #[inline]
    fn over(&self, other: &Self) -> Self {
        if self.is_nil() {
            return LnAnchored::nil();
        }
        LnAnchored {
            ln: self.ln - other.ln,
            anchor: self.anchor.minus(other.anchor),
            rel: self.rel - other.rel,
            size: self.size + other.size,
        }
    }
    #[inline]
    fn magnitude(&self) -> f64 {
        self.ln
    }
    #[inline]
    fn add_product(&mut self, a: &Self, b: &Self) {
        if !a.is_nil() && !b.is_nil() {
            *self = self.plus(&a.times(b));
        }
    }
    fn fraction(&self, rest: &Self) -> Self {
        if self.is_nil() {
            return LnAnchored::nil();
        }
        if rest.is_nil() {
            return LnAnchored::unit();
        }
        let d = self.plus(rest);
        let complement = (rest.ln - d.ln).exp();
        let l = (self.ln - d.ln).exp();
        let delta = self.anchor.minus(rest.anchor);
        let base = complement * (self.rel - rest.rel);
        let size = complement * (self.size + rest.size);
        if self.ln >= rest.ln {
            let excess = complement * delta.value();
            LnAnchored {
                ln: self.ln - d.ln,
                anchor: Twofold::ZERO,
                rel: base + excess,
                size: size + excess.abs(),
            }
        } else {
            let excess = l * delta.value();
            LnAnchored {
                ln: self.ln - d.ln,
                anchor: delta,
                rel: base - excess,
                size: size + excess.abs(),
            }
        }
    }
}

impl Tangent for LnAnchored {
    fn seeded_minus(w: f64, score_tangent: f64, offsets: [f64; 2]) -> Self {
        LnAnchored {
            ln: w.ln(),
            anchor: Twofold::difference(score_tangent, offsets),
            rel: 0.0,
            size: 0.0,
        }
    }
    fn seeded(w: f64, score_tangent: f64) -> Self {
        LnAnchored {
            ln: w.ln(),
            anchor: Twofold::of(score_tangent),
            rel: 0.0,
            size: 0.0,
        }
    }
    fn tangent_f64(&self) -> f64 {
        if self.is_nil() {
            return 0.0;
        }
        let w = self.ln.exp();
        self.anchor.hi * w + (self.anchor.lo + self.rel) * w
    }
    /// As [`Anchored`]'s: the remainder's size plus `|o| a`.
    fn tangent_size(&self) -> f64 {
        if self.is_nil() {
            return 0.0;
        }
        (self.size + self.anchor.hi.abs()) * self.ln.exp()
    }
}

/// The outputs and buffers of one marginal pass, shared by every level of
/// the divide and conquer: every level writes its `ν` straight into its
/// principal block of the whole graph's, and the multipliers of the
/// eliminated words live on one stack, so that a pass allocates only as its
/// buffers first grow.
struct Pass<P> {
    /// The number of words of the whole graph.
    n: usize,
    /// `∂ ln Z` for the arcs, `n × n` row-major, word heads.
    nu: Vec<P>,
    /// `∂ ln Z` for the root weights, as leading terms.
    nu_root: Vec<Leading<P>>,
    /// The pivots of [`Elimination::new`], in natural order.
    pivots: Vec<Leading<P>>,
    /// Whether a root weight was extreme when its word was eliminated in the
    /// natural order.
    roots_extreme: bool,
    /// The multipliers `A[h][k] / d_k` of the steps under way, one row of
    /// `r` per step, level after level.
    lowers: Vec<P>,
    /// The root multipliers `ρ[k] / d_k` of the same steps.
    root_lowers: Vec<Leading<P>>,
    /// The pivots and root multipliers of one branch's steps.
    steps: Vec<(Leading<P>, Leading<P>)>,
    /// Graphs no longer needed, whose buffers the next copies reuse.
    spare: Vec<Work<P>>,
    scratch: Scratch<P>,
    /// `∂ ln Z` for the root weights at `t = 0`: the pass's output.
    root_nu: Vec<P>,
}

thread_local! {
    /// The buffers of the passes that ran last on this thread, one per
    /// number type ([`Pass::take`]).
    static PASSES: Cell<Vec<Box<dyn Any>>> = const { Cell::new(Vec::new()) };
}

/// A pass's buffers are kept for the next pass on its thread when its graph
/// had at most this many words (a few hundred kilobytes on `f64`).
const RETAIN_WORDS: usize = 128;

/// At most this many number types keep a pass's buffers per thread.
const RETAIN_TYPES: usize = 8;

impl<P: NonNegative> Pass<P> {
    /// The buffers of a pass on `n` words, emptied: those of the last pass
    /// in `P` on this thread ([`Pass::give_back`]), or new ones. A corpus
    /// of short sentences allocated every buffer afresh per sentence (about
    /// a dozen allocations per pass, in sizes that change from sentence to
    /// sentence); now a pass allocates only where it outgrows the last.
    /// The numbers do not depend on the buffers: every entry read is
    /// written first in this pass. `O(n²)` (the clearing of `ν`).
    fn take(n: usize) -> Box<Self> {
        let kept = PASSES
            .try_with(|cell| {
                let mut slots = cell.take();
                let found = slots.iter().position(|b| b.is::<Self>());
                let pass = found.map(|i| slots.swap_remove(i));
                cell.set(slots);
                pass
            })
            .ok()
            .flatten()
            .and_then(|b| b.downcast::<Self>().ok());
        let mut pass = kept.unwrap_or_else(|| {
            Box::new(Pass {
                n: 0,
                nu: Vec::new(),
                nu_root: Vec::new(),
                pivots: Vec::new(),
                roots_extreme: false,
                lowers: Vec::new(),
                root_lowers: Vec::new(),
                steps: Vec::new(),
                spare: Vec::new(),
                scratch: Scratch::new(),
                root_nu: Vec::new(),
            })
        });
        pass.n = n;
        pass.nu.clear();
        pass.nu.resize(n * n, P::nil());
        pass.nu_root.clear();
        pass.nu_root.resize(n, Leading::nil());
        pass.pivots.clear();
        pass.pivots.reserve(n);
        pass.roots_extreme = false;
        // At most `n²` multipliers and `n` steps are ever stacked (the
        // levels of one path of the recursion: `n²/2 + n²/8 + …`).
        pass.lowers.clear();
        pass.lowers.reserve(n * n);
        pass.root_lowers.clear();
        pass.root_lowers.reserve(n);
        pass.steps.clear();
        pass.steps.reserve(n);
        pass.scratch.reserve(n);
        pass.root_nu.clear();
        pass.root_nu.reserve(n);
        pass
    }

    /// The graph of `weights` ([`Work::new`]) in a spare graph's buffers.
    fn work(&mut self, weights: &Matrix<P>, rooting: Rooting) -> Work<P> {
        match self.spare.pop() {
            Some(mut work) => {
                work.fill(weights, rooting);
                work
            }
            None => Work::new(weights, rooting),
        }
    }

    /// Keeps the buffers for the next pass in `P` on this thread (unless the
    /// graph was large, [`RETAIN_WORDS`]). Every graph a pass takes from the
    /// spares ([`Pass::work`], [`gradient`]) goes back to them at a leaf of
    /// the recursion, so their number stays that of the deepest path.
    fn give_back(self: Box<Self>) {
        if self.n > RETAIN_WORDS {
            return;
        }
        crate::matrix::keep_on_thread(&PASSES, self as Box<dyn Any>, RETAIN_TYPES);
    }
}

/// `∂ ln Z` with respect to every arc weight (word heads, at `t = 0`) and
/// every root weight (leading terms) of `work`, written into the block of
/// `pass` of the words `base..base + r`; returns whether a forward product
/// was tiny. When `natural` (the last branch at every level above), also
/// pushes the pivots of [`Elimination::new`] on `work`, which that branch
/// computes anyway.
fn gradient<P: NonNegative>(
    work: Work<P>,
    base: usize,
    natural: bool,
    pass: &mut Pass<P>,
) -> Result<bool, Numerical> {
    let (r, n) = (work.r, pass.n);
    if r == 1 {
        let rho = &work.root[0];
        if rho.is_nil() {
            return Err(Numerical::Singular { pivot: 0 });
        }
        let nu_root = Leading::finite(P::unit()).over(rho);
        let tiny = work.tiny || nu_root.value.is_extreme();
        if natural {
            pass.roots_extreme |= rho.value.is_extreme();
            pass.pivots.push(rho.clone());
        }
        pass.nu[base * n + base] = P::nil();
        pass.nu_root[base] = nu_root;
        pass.spare.push(work);
        return Ok(tiny);
    }
    if r == 2 {
        return gradient_pair(work, base, natural, pass);
    }
    let half = r / 2;
    let mut tiny = work.tiny;
    // The first branch takes a copy in a spare graph's buffers, the second
    // the graph itself.
    let copy = match pass.spare.pop() {
        Some(mut copy) => {
            copy.copy_from(&work);
            copy
        }
        None => work.clone(),
    };
    tiny |= branch(copy, half..r, base, false, tiny, pass)?;
    tiny |= branch(work, 0..half, base, natural, tiny, pass)?;
    Ok(tiny)
}

/// [`gradient`] on two words: its two branches (eliminate word `1` and
/// recurse into word `0`, then the natural one, word `0`), each one step
/// and one word left, with the numbers held in locals instead of the
/// general case's graph copy, multiplier rows, block sweep, reduction and
/// recursion. Every number is formed by the same operations on the same
/// operands in the same order as [`branch`], [`Work::step`] and the
/// one-word [`gradient`] (the nil terms of the step's partial sums
/// included), so the bits are those of the general case; the block sweep
/// would only have updated the diagonal entry, which is never read. At
/// `n ≈ 6` a pass has two such pairs, a quarter of its steps.
fn gradient_pair<P: NonNegative>(
    work: Work<P>,
    base: usize,
    natural: bool,
    pass: &mut Pass<P>,
) -> Result<bool, Numerical> {
    let mut tiny = work.tiny;
    tiny |= pair_branch(&work, 1, base, false, tiny, pass)?;
    tiny |= pair_branch(&work, 0, base, natural, tiny, pass)?;
    pass.spare.push(work);
    Ok(tiny)
}

/// One branch of [`gradient_pair`]: eliminates word `k` of the two-word
/// graph `g` (pushing its pivot when `natural` and `k = 0`, as [`branch`]),
/// then the other word's `ν` (the one-word [`gradient`]) and the push back
/// into row `k` of `ν`. Returns whether a forward product was tiny.
fn pair_branch<P: NonNegative>(
    g: &Work<P>,
    k: usize,
    base: usize,
    natural: bool,
    tiny: bool,
    pass: &mut Pass<P>,
) -> Result<bool, Numerical> {
    let o = 1 - k;
    let n = pass.n;
    let (a_ok, a_ko) = (&g.arcs[o * 2 + k], &g.arcs[k * 2 + o]);
    let root_k = &g.root[k];
    let mut root_o = g.root[o].clone();
    let mut g_tiny = g.tiny;
    // `Work::step` with the one word `o` alive: its four partial sums,
    // three of them empty.
    let nil = P::nil();
    let in_weight = nil.plus(a_ok).plus(&nil).plus(&nil.plus(&nil));
    let pivot = Leading::finite(in_weight.clone()).plus(root_k);
    let mut lower = P::nil();
    if !in_weight.is_nil() && !a_ok.is_nil() {
        lower = if !P::FRACTION_READS_REST {
            a_ok.times(&P::unit().over(&pivot.value))
        } else {
            // The prefix (the root term of order 0) and the empty suffix.
            let prefix = if root_k.order == 0 {
                root_k.value.clone()
            } else {
                P::nil()
            };
            a_ok.fraction(&prefix.plus(&nil))
        };
        if !a_ko.is_nil() {
            let p = lower.times(a_ko);
            g_tiny |= p.is_nil_or_extreme();
        }
    }
    let root_lower = if pivot.is_nil() || root_k.is_nil() {
        Leading::nil()
    } else if in_weight.is_nil() {
        Leading::finite(P::unit())
    } else if root_k.order == 0 {
        Leading::finite(root_k.value.fraction(&in_weight))
    } else {
        root_k.over(&pivot)
    };
    g_tiny |= root_lower.is_nil() && !root_k.is_nil() && !pivot.is_nil();
    if !root_lower.is_nil() {
        let mut t = root_lower.value.is_extreme();
        if !a_ko.is_nil() {
            let add = root_lower.value.times(a_ko);
            t |= add.is_nil_or_extreme();
            root_o.add(Leading {
                value: add,
                order: root_lower.order,
            });
            t |= root_o.value.is_extreme();
        }
        g_tiny |= t;
    }
    // [`branch`]: the pivot.
    let pushes = natural && k == 0;
    if pushes {
        pass.roots_extreme |= root_k.value.is_extreme();
    }
    if pivot.is_nil() {
        return Err(Numerical::Singular { pivot: k });
    }
    if pushes {
        pass.pivots.push(pivot);
    }
    // The one-word [`gradient`] on word `o`.
    if root_o.is_nil() {
        return Err(Numerical::Singular { pivot: 0 });
    }
    let nu_root = Leading::finite(P::unit()).over(&root_o);
    let tiny = tiny | g_tiny || nu_root.value.is_extreme();
    if pushes {
        pass.roots_extreme |= root_o.value.is_extreme();
        pass.pivots.push(root_o);
    }
    let (wo, wk) = (base + o, base + k);
    pass.nu[wo * n + wo] = P::nil();
    // [`finish`]: ν_o[k] = (A[o][k]/d_k) ν_o[o] + (ρ[k]/d_k) ν_o[0].
    let mut acc = P::nil();
    if !lower.is_nil() {
        acc.add_product(&lower, &pass.nu[wo * n + wo]);
    }
    if !root_lower.is_nil() {
        let term = root_lower.times(&nu_root).at_zero(tiny, k)?;
        acc = acc.plus(&term);
    }
    pass.nu_root[wo] = nu_root;
    pass.nu[wk * n + wo] = acc;
    Ok(tiny)
}

/// One branch of [`gradient`]: eliminates the words `drop` of `g` (a range
/// at one end of `0..r`, from its far end inwards so that the words that
/// remain stay contiguous), recurses into the reduced graph on the other
/// words, and pushes their columns of `ν` back through the eliminated
/// words. Pushes the pivots when `natural` and `drop` starts at `0`.
/// Returns whether a forward product was tiny.
fn branch<P: NonNegative>(
    mut g: Work<P>,
    drop: Range<usize>,
    base: usize,
    natural: bool,
    tiny: bool,
    pass: &mut Pass<P>,
) -> Result<bool, Numerical> {
    let r = g.r;
    let branch_natural = drop.start == 0;
    let order = |i: usize| {
        if branch_natural {
            drop.start + i
        } else {
            drop.end - 1 - i
        }
    };
    let steps = drop.len();
    let lowers_at = pass.lowers.len();
    let roots_at = pass.root_lowers.len();
    pass.lowers.resize(lowers_at + steps * r, P::nil());
    let mut done = std::mem::take(&mut pass.steps);
    done.clear();
    let (first, forward) = if branch_natural {
        (drop.start, true)
    } else {
        (drop.end - 1, false)
    };
    let lowers = &mut pass.lowers[lowers_at..];
    g.eliminate_run(
        first,
        steps,
        forward,
        Some(lowers),
        &mut done,
        &mut pass.scratch,
    );
    if natural && branch_natural {
        // A word's root weight is final once it is eliminated.
        pass.roots_extreme |= g.root[drop.clone()].iter().any(|p| p.value.is_extreme());
    }
    for (i, (pivot, root_lower)) in done.drain(..).enumerate() {
        if pivot.is_nil() {
            return Err(Numerical::Singular { pivot: order(i) });
        }
        if natural && branch_natural {
            pass.pivots.push(pivot);
        }
        pass.root_lowers.push(root_lower);
    }
    pass.steps = done;
    finish(g, drop, base, natural, tiny, pass, (lowers_at, roots_at))
}

/// The rest of [`branch`] once the words `drop` are eliminated from `g`,
/// their multipliers on the stacks of `pass` from `at` on: the recursion
/// into the reduced graph and the push back.
fn finish<P: NonNegative>(
    g: Work<P>,
    drop: Range<usize>,
    base: usize,
    natural: bool,
    mut tiny: bool,
    pass: &mut Pass<P>,
    (lowers_at, roots_at): (usize, usize),
) -> Result<bool, Numerical> {
    let (r, n) = (g.r, pass.n);
    let keep = if drop.start == 0 {
        drop.end..r
    } else {
        0..drop.start
    };
    let branch_natural = drop.start == 0;
    let alive_after = |k: usize| if branch_natural { k + 1..r } else { 0..k };
    let order = |i: usize| {
        if branch_natural {
            drop.start + i
        } else {
            drop.end - 1 - i
        }
    };
    let steps = drop.len();
    let sub = g.restrict(keep.clone());
    tiny |= gradient(sub, base + keep.start, natural && branch_natural, pass)?;
    // ν_m[k] = Σ_h (A[h][k]/d_k) ν_m[h] + (ρ[k]/d_k) ν_m[0], for the
    // columns m of `keep`, last elimination first.
    let Pass {
        nu,
        nu_root,
        lowers,
        root_lowers,
        ..
    } = &mut *pass;
    let columns = base + keep.start..base + keep.end;
    for i in (0..steps).rev() {
        let k = order(i);
        // Row k of ν is summed in place: the rows it reads (the words alive
        // after step k) all lie on one side of it.
        let (acc, rows, first) = if branch_natural {
            let (before, after) = nu.split_at_mut((base + k + 1) * n);
            (&mut before[(base + k) * n..], &*after, base + k + 1)
        } else {
            let (before, after) = nu.split_at_mut((base + k) * n);
            (after, &*before, 0)
        };
        let acc = &mut acc[columns.clone()];
        acc.fill(P::nil());
        let lower = &lowers[lowers_at + i * r..lowers_at + (i + 1) * r];
        // Four rows of ν per sweep over `acc`, each entry summed in the
        // order of h ([`accumulate`]).
        let mut terms: [(&P, &[P]); 4] = [(&lower[0], &[]); 4];
        let mut t = 0;
        let alive = alive_after(k);
        // Row h of ν starts at `at`, stepped by `n` along the words alive.
        let mut at = (base + alive.start - first) * n;
        for l in &lower[alive] {
            if !l.is_nil() {
                terms[t] = (l, &rows[at + columns.start..at + columns.end]);
                t += 1;
                if t == terms.len() {
                    accumulate(acc, &terms);
                    t = 0;
                }
            }
            at += n;
        }
        accumulate(acc, &terms[..t]);
        let root_lower = &root_lowers[roots_at + i];
        if !root_lower.is_nil() {
            let (value, order) = (&root_lower.value, root_lower.order);
            for (a, root) in acc.iter_mut().zip(&nu_root[columns.clone()]) {
                // `root_lower.times(root).at_zero(tiny, k)`, written out
                // with `root_lower` known not zero: a zero product is zero
                // whatever its order; a negative order is an error unless
                // an underflow was seen ([`Leading::at_zero`]).
                let term = if root.is_nil() {
                    P::nil()
                } else {
                    let product = value.times(&root.value);
                    match order + root.order {
                        _ if product.is_nil() => P::nil(),
                        0 => product,
                        o if o > 0 || tiny => P::nil(),
                        _ => return Err(Numerical::Singular { pivot: k }),
                    }
                };
                *a = a.plus(&term);
            }
        }
    }
    lowers.truncate(lowers_at);
    root_lowers.truncate(roots_at);
    Ok(tiny)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_words() -> Matrix<f64> {
        Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0])
    }

    #[test]
    fn leading_terms_keep_the_lowest_order() {
        let a = Leading {
            value: 2.0,
            order: 1,
        };
        let b = Leading::finite(3.0);
        assert_eq!(a.plus(&b).value, 3.0);
        assert_eq!(a.plus(&a).value, 4.0);
        assert_eq!(a.times(&b).order, 1);
        assert_eq!(b.over(&a).order, -1);
        assert_eq!(a.at_zero(false, 0), Ok(0.0));
        assert_eq!(b.over(&a).at_zero(true, 0), Ok(0.0));
        assert!(b.over(&a).at_zero(false, 0).is_err());
        assert!(Leading::<f64>::nil().plus(&a).order == 1);
    }

    #[test]
    fn forced_root_child() {
        // Word 1 has no arc from a word: every single-root tree is 0→1 plus
        // a multi-root tree of word 2 hung from 1: 1·3 only (2→1 cannot be used).
        let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0]);
        let e = Elimination::new(&w, Rooting::Single);
        assert_eq!(e.partition(), 3.0);
        let mu = marginals(&w, Rooting::Single).unwrap();
        assert_eq!(mu[(0, 1)], 1.0);
        assert_eq!(mu[(1, 2)], 1.0);
        assert_eq!(mu[(0, 2)], 0.0);
    }

    #[test]
    fn log_space_matches_f64() {
        // rel 1e-14: a handful of roundings in either representation.
        let w = two_words();
        let lw = w.map(|&x| LnPositive::from_weight(x));
        for rooting in Rooting::ALL {
            let a = Elimination::new(&w, rooting).log_partition();
            let b = Elimination::new(&lw, rooting).log_partition();
            assert!((a - b).abs() < 1e-14, "{rooting:?}");
            let ma = marginals(&w, rooting).unwrap();
            let mb = marginals(&lw, rooting).unwrap();
            for (x, y) in ma.as_slice().iter().zip(mb.as_slice()) {
                assert!((x - y.to_weight()).abs() < 1e-14, "{rooting:?}");
            }
        }
    }

    #[test]
    fn no_tree_is_a_zero_pivot() {
        let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(Elimination::new(&w, Rooting::Multi).partition(), 1.0);
        let single = Elimination::new(&w, Rooting::Single);
        assert!(single.zero_pivot().is_some());
        assert_eq!(single.log_partition(), f64::NEG_INFINITY);
        assert!(marginals(&w, Rooting::Single).is_err());
    }

    /// A seeded graph of `n` words with weights from `1e-6` to `1`, some
    /// arcs forbidden (weight zero), root weights scaled by `root`.
    fn seeded(n: usize, seed: u64, root: f64) -> Matrix<f64> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        Matrix::from_fn(n + 1, n + 1, |h, m| {
            let u = next();
            if m == 0 || h == m || u < 0.1 {
                0.0
            } else {
                (-14.0 * next()).exp() * if h == 0 { root } else { 1.0 }
            }
        })
    }

    /// The claim behind `checked_log_partition_gradient`: the divide and
    /// conquer's natural-order branches reproduce the pivots of
    /// `Elimination::new` bit for bit, for both rootings, at sizes whose
    /// halves are odd and even.
    #[test]
    fn divide_and_conquer_pivots_are_the_natural_ones() {
        for n in [1, 2, 3, 5, 8, 13, 21] {
            for seed in 0..4 {
                for rooting in Rooting::ALL {
                    let w = seeded(n, seed, 1e-3);
                    let natural = Elimination::new(&w, rooting);
                    let mut pass = Pass::<f64>::take(n);
                    if gradient(Work::new(&w, rooting), 0, true, &mut pass).is_err() {
                        assert!(natural.zero_pivot().is_some(), "n = {n}, seed {seed}");
                        continue;
                    }
                    let pivots = pass.pivots;
                    assert_eq!(pivots.len(), n);
                    for (a, b) in pivots.iter().zip(&natural.pivots) {
                        assert_eq!((a.value, a.order), (b.value, b.order), "n = {n}");
                    }
                }
            }
        }
    }

    /// Step by step (`Work::eliminate_run` on small graphs) the elimination
    /// forms the numbers of the fused blocks, its definition: every pivot,
    /// multiplier, root weight and arc alive after the run bit for bit,
    /// in both directions, on `f64` and on dual numbers (whose multipliers
    /// read the rest of the pivot), with zero arcs and both rootings.
    #[test]
    fn unfused_steps_are_the_fused_ones() {
        // `count` words eliminated upwards from `0`, or downwards from the last.
        fn check<P: NonNegative>(w: &Matrix<P>, rooting: Rooting, count: usize, forward: bool) {
            let bits = |x: &P| format!("{x:?}");
            let run = |unfused: bool| {
                let mut work = Work::new(w, rooting);
                let r = work.r;
                let mut lowers = vec![P::nil(); count * r];
                let mut steps = Vec::new();
                let mut scratch = Scratch::new();
                let start = if forward { 0 } else { r - 1 };
                work.eliminate_run_as(
                    start,
                    count,
                    forward,
                    Some(&mut lowers),
                    &mut steps,
                    &mut scratch,
                    unfused,
                );
                let alive = if forward {
                    start + count..r
                } else {
                    0..start + 1 - count
                };
                let mut out: Vec<String> = lowers.iter().map(bits).collect();
                for (p, l) in &steps {
                    out.extend([bits(&p.value), p.order.to_string()]);
                    out.extend([bits(&l.value), l.order.to_string()]);
                }
                for h in alive.clone() {
                    for m in alive.clone().filter(|&m| m != h) {
                        out.push(bits(&work.arcs[h * r + m]));
                    }
                    out.extend([bits(&work.root[h].value), work.root[h].order.to_string()]);
                }
                out.push(work.tiny.to_string());
                out
            };
            assert_eq!(run(true), run(false), "count {count}, forward {forward}");
        }
        for n in [2, 3, 5, 6, 9, 14, 23] {
            for seed in 0..3 {
                for rooting in Rooting::ALL {
                    let mut w = seeded(n, seed, 1e-3);
                    // A few zero arcs, so that some multipliers are not formed.
                    for h in 0..=n {
                        w[(h, 1 + (h * 7 + seed as usize) % n)] = 0.0;
                    }
                    let tangent = |x: f64| if x == 0.0 { 0.0 } else { x.ln().sin() };
                    let dual = w.map(|&x| Dual::new(x, tangent(x)));
                    for count in [1, n / 2, n - 1] {
                        for forward in [true, false] {
                            check(&w, rooting, count, forward);
                            check(&dual, rooting, count, forward);
                        }
                    }
                }
            }
        }
    }

    /// A pass on the buffers the thread's last passes left (of other sizes,
    /// in other number types) returns the bits of a pass on fresh buffers
    /// (its first on a new thread).
    #[test]
    fn reused_buffers_give_the_bits_of_fresh_ones() {
        let tangent = |x: f64| if x == 0.0 { 0.0 } else { x.ln().cos() };
        let fresh = |w: &Matrix<f64>, rooting: Rooting| {
            let w = w.clone();
            std::thread::spawn(move || {
                let mu = marginals(&w, rooting).map(|mu| mu.map(|x| x.to_bits()));
                let dual = w.map(|&x| Dual::new(x, tangent(x)));
                let jvp = marginals(&dual, rooting).map(|mu| mu.map(|x| format!("{x:?}")));
                (mu, jvp)
            })
            .join()
            .expect("the pass runs")
        };
        for (i, n) in [7, 12, 3, 7, 30, 1, 7, 140, 12].into_iter().enumerate() {
            for rooting in Rooting::ALL {
                let w = seeded(n, i as u64, 1e-2);
                let mu = marginals(&w, rooting).map(|mu| mu.map(|x| x.to_bits()));
                let dual = w.map(|&x| Dual::new(x, tangent(x)));
                let jvp = marginals(&dual, rooting).map(|mu| mu.map(|x| format!("{x:?}")));
                assert_eq!((mu, jvp), fresh(&w, rooting), "n = {n}, {rooting:?}");
            }
        }
    }

    /// Without a spanning tree the marginals report the first zero pivot of
    /// the natural order, as `Elimination::zero_pivot` finds it.
    #[test]
    fn marginals_report_the_first_zero_pivot() {
        for n in [2, 5, 9] {
            for rooting in Rooting::ALL {
                let mut w = seeded(n, 7, 1.0);
                // Word 2 unreachable: no arc into it at all.
                for h in 0..=n {
                    w[(h, 2)] = 0.0;
                }
                let expected = Elimination::new(&w, rooting).zero_pivot().expect("no tree");
                assert_eq!(
                    marginals(&w, rooting).unwrap_err(),
                    Numerical::Singular { pivot: expected },
                    "n = {n}, {rooting:?}"
                );
            }
        }
    }

    #[test]
    fn nil_or_extreme_is_its_definition() {
        // `f64`'s one range test against `is_nil() || is_extreme()` written
        // out from the safe range's ends, on both sides of each end.
        let tiny = f64::MIN_POSITIVE;
        // The neighbours of a positive `f64` (`next_up`/`next_down` need
        // Rust 1.86).
        let down = |x: f64| f64::from_bits(x.to_bits() - 1);
        let up = |x: f64| f64::from_bits(x.to_bits() + 1);
        let values = [
            0.0,
            -0.0,
            f64::from_bits(1),
            tiny / 2.0,
            down(tiny),
            tiny,
            up(tiny),
            1.0,
            down(1e300),
            1e300,
            up(1e300),
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for x in values {
            let defined = x == 0.0 || !(tiny..=1e300).contains(&x.abs());
            assert_eq!(x.is_nil_or_extreme(), defined, "{x:e}");
            let default = NonNegative::is_nil(&x) || NonNegative::is_extreme(&x);
            assert_eq!(x.is_nil_or_extreme(), default, "{x:e}");
        }
        // The default of the other types: log space is never extreme.
        assert!(LnPositive::nil().is_nil_or_extreme());
        assert!(!LnPositive::from_ln(-1000.0).is_nil_or_extreme());
    }
}
