//! Answers from the cancellation-free elimination of the graph weights.

use std::sync::OnceLock;

use super::{Dense, Factorization, Factors, VjpAccuracy, DERIVATIVE_BITS};
use crate::elimination::{
    self, Anchored, Dual, Elimination, Graded, LnAnchored, LnDual, LnGraded, LnPositive,
    NonNegative, PowerOfTwo, RootTangent, Tangent, WideDual,
};
use crate::error::{Inaccuracy, Numerical};
use crate::graph::Rooting;
use crate::matrix::Matrix;
use crate::scalar::Sign;

/// The cancellation-free elimination ([`crate::elimination`]) of a graph's
/// prepared `f64` weights: `ln Z` run in the number type `P` (`f64`, or
/// [`LnPositive`] for log space), the marginals and every derivative in
/// `f64`; `ln Z` and every marginal with a small *relative* error whatever
/// the scales of the weights. A product that leaves `f64`'s safe range
/// reruns the step in log space.
///
/// Why not the marginals and derivatives in `P = LnPositive` too: a weight
/// `e^{s}` held as its logarithm `s` carries a relative error of `|s| ε`
/// (the weights are `f64` numbers, exact to `ε`, before they become logs),
/// so a root shift of `−300` cost log space 8 bits of every marginal and
/// derivative (measured on the `honest_accuracy` sweep: gradients 43 / 30
/// bits, norm-wise / worst entry, against 49 / 35 for `f64`), and log
/// space gains nothing where `f64` holds the products. Single-root, the
/// root row is also scaled by an exact power of two first (see
/// `elimination::root_scale`), so `ln Z` in log space keeps its bits too.
///
/// Derivatives come from the elimination too: the vector–Jacobian product of
/// the marginals ([`Factors::marginals_vjp`], behind every gradient and the
/// Jacobian–vector route of second order) is the elimination run on
/// [`Anchored`] numbers ([`elimination::marginals_jvp`]), and `∂Z/∂w = Z ν`
/// ([`elimination::log_partition_gradient`]). What it does not answer (the
/// inverse `X`, solves, the adjugate when `Z = 0`) comes from a dense
/// factorisation `F` of the Laplacian, formed on first use; the model does
/// not read `X` on this engine ([`Factors::cancellation_free`]).
///
/// # Why the dual numbers are accurate
///
/// The proof is in the [`crate::elimination`] module docs: values as
/// accurate as the marginals, tangents with an error of a few `n ε`
/// relative to the uncancelled size of `Cov[1_e, ḡ(d)]`. Before the run the
/// seed is reduced by exact invariances of `J ḡ`, each a property of
/// spanning trees, so that large common parts of the seed never enter the
/// sums:
///
/// * single-root, every tree has one root arc: a constant on the root seeds
///   changes nothing, and the seed is centred there first (root scores `−300`
///   in an entropy seed do not enter as `300`);
/// * every tree has one arc into each word: the seed is centred in every
///   column by its marginal-weighted mean;
/// * multi-root, a large common offset `c` of the root seeds is split off,
///   `J ḡ = J (ḡ − c 1_root) + c J 1_root`, the second product from its own
///   run. `J 1_root = Cov[1_e, #root arcs]` is a small difference when
///   the root arcs are nearly always one (`e^{shift}` times `μ_e`): on
///   [`elimination::Dual`] it kept only `n ε μ_e` absolutely, and `c` times that cost
///   multi-root entropy-type seeds `log₂ |c|` bits. It runs on [`Graded`]
///   numbers instead, whose tangents split into an integer multiple of the
///   value, added exactly, and a remainder of the size of the answer.
///
/// # Never silently wrong: the running error estimate
///
/// Those bounds are relative to the *uncancelled* size of the tangent's
/// terms, and on nearly deterministic graphs the terms can cancel far
/// beyond the covariance itself: a path through the root and one through
/// an arc into the same word carry tangents `±4.6e-4` that cancel to
/// `1e-15` in the next pivot (measured: arc scores in `±50`, the seed the
/// indicator of an unlikely tree, 0–30 correct bits returned before, with
/// no error). Every tangent type therefore carries, next to its tangent,
/// its size and its spread ([`Tangent::tangent_size`],
/// [`Tangent::tangent_spread`]: the sum, and the root of the sum of
/// squares, of the same terms in absolute value), one more multiply-add per
/// operation. The product's error is estimated as `c ε √n spread_e` per
/// entry (`c = 2`, calibrated against `HighPrecision<512>` by the
/// `vjp_calibration` example of `spantree-faer`: no product below 45 bits
/// passed, `n = 3`–`8` and `36`), summed as the model's column identities
/// sum the entries, and compared norm-wise with the product. Below
/// [`DERIVATIVE_BITS`] the product is recomputed on [`WideDual`] numbers
/// (values and tangents in double-double, about ten times the time), whose
/// errors are `2⁻⁵²` of those; if that is still below, the call fails with
/// [`Inaccuracy::EliminationCancellation`] naming the arc of largest
/// estimated error. The centring offsets enter anchored numbers exactly
/// ([`Tangent::seeded_minus`]), since no size could see their rounding.
///
/// # Entry by entry, on nearly deterministic graphs
///
/// A norm-wise estimate lets an entry `1e-6` of the largest lose 20 bits
/// unseen. Where the product runs on anchored numbers (some arc certain to
/// `2⁻²⁶`) or the word-arc weights into some word span more than `2⁵³`
/// (`spread_beyond_f64`), the same estimate is also read entry by entry:
/// an entry `≥ 1e-8` of the largest estimated below [`ENTRY_BITS`] sends
/// the product to [`WideDual`] too, and each entry is taken from the run
/// whose estimate of it is smaller (double-double dual numbers keep `2⁻¹⁰⁴`
/// of the *uncancelled* size, which on a nearly certain word is `1e20`
/// times the entry, where anchors cancel exactly). Measured
/// (`HONEST_FLOOR=1 cargo run --profile test -p spantree-faer --example
/// honest_accuracy`, spread family): the worst gradient entry from 35 to
/// 50 bits at `n = 5` (floor 51), 33–38 to 42–44 at `n = 25` (floor 43–46),
/// 37–38 to 39–41 at `n = 60` (floor 43–46). On ordinary graphs the gate
/// never applies (`vjp_calibration gate`: no product of `N(0, 1)`,
/// `N(0, 2²)`, `N(0, 4²)` graphs at `n = 5, 10, 36`), where an entry far
/// below the largest is mostly a covariance near zero by chance, which the
/// weights' rounding moves as much, and read entry-wise the estimate would
/// escalate nearly every product at `n = 36`.
pub struct Eliminated<P, F: Factorization<Scalar = f64>> {
    weights: Matrix<f64>,
    /// The weights, single-root with the root row scaled by `root_scale`
    /// (exact; see `elimination::root_scale`): what the marginals and
    /// `ν` eliminate.
    scaled: Matrix<f64>,
    root_scale: PowerOfTwo,
    /// `ln Z` was eliminated in `P`.
    number: std::marker::PhantomData<fn() -> P>,
    rooting: Rooting,
    /// `ln Z` (`-∞` when `Z = 0`) and the step that found `Z = 0`.
    log_z: f64,
    /// `det L = mantissa · 2^exponent` from the pivots themselves (to a few
    /// ulps, where `e^{ln Z}` would be off by `|ln Z| ε`); `None` when a
    /// pivot is outside `f64`'s safe range.
    det: OnceLock<Option<(f64, i32)>>,
    zero_pivot: Option<usize>,
    marginals: OnceLock<Result<Matrix<f64>, Numerical>>,
    /// The forward elimination with its first half kept, for the marginal
    /// pass to start from (`None` when it left `f64`'s safe range).
    forward: Option<Elimination<P>>,
    dense: OnceLock<Dense<F>>,
    factorize: fn(Matrix<f64>) -> F,
}

impl<P, F: Factorization<Scalar = f64>> std::fmt::Debug for Eliminated<P, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eliminated")
            .field("rooting", &self.rooting)
            .field("log_z", &self.log_z)
            .field("zero_pivot", &self.zero_pivot)
            .finish_non_exhaustive()
    }
}

impl<P: WithTangent, F: Factorization<Scalar = f64>> Eliminated<P, F> {
    /// Eliminates the words of `weights` in `P`, `n³/3` multiply-adds;
    /// `factorize` is the dense factorisation used for solves.
    pub fn new(weights: Matrix<f64>, rooting: Rooting, factorize: fn(Matrix<f64>) -> F) -> Self {
        let mut eliminated = Self::unfactorised(weights, rooting, factorize, f64::NAN);
        let root_scale = eliminated.root_scale;
        let elimination_weights = eliminated.scaled.map(|&w| P::from_weight(w));
        // On f64 the first half is kept for the marginals (1.5 n² numbers):
        // their divide and conquer then skips a fifth of its work. (In log
        // space the marginals run in f64 from the weights instead.)
        let elimination = if P::F64_PIVOTS {
            Elimination::keeping_half(&elimination_weights, rooting)
        } else {
            Elimination::new(&elimination_weights, rooting)
        };
        if P::F64_PIVOTS {
            let product = scaled_product(elimination.pivots());
            let _ = eliminated.det.set(unscaled(
                product.filter(|_| !elimination.is_extreme()),
                root_scale,
            ));
        }
        let mut log_z = elimination.log_partition();
        let mut zero_pivot = elimination.zero_pivot();
        if elimination.is_extreme() {
            // Some product fell below f64's normal range (only `P = f64`
            // reports that in a way that matters): redo ln Z in log space.
            let logs = in_log_space(&elimination_weights);
            let e = Elimination::new(&logs, rooting);
            (log_z, zero_pivot) = (e.log_partition(), e.zero_pivot());
        }
        eliminated.log_z = super::certified::unscaled_ln(log_z, root_scale);
        eliminated.zero_pivot = zero_pivot;
        eliminated.forward = (P::F64_PIVOTS && !elimination.is_extreme()).then_some(elimination);
        eliminated
    }

    /// The elimination of a graph whose `ln Z` (`log_z`, finite) is known
    /// already, from a certified dense LU ([`super::Certified`]): no forward
    /// elimination, `O(n²)`; the marginals, when given (the elimination's own,
    /// computed before), are kept rather than computed again. Derivatives
    /// and `∂Z/∂w` are formed on first use as in [`Eliminated::new`].
    pub(crate) fn with_log_partition(
        weights: Matrix<f64>,
        rooting: Rooting,
        factorize: fn(Matrix<f64>) -> F,
        log_z: f64,
        marginals: Option<Result<Matrix<f64>, Numerical>>,
    ) -> Self {
        let eliminated = Self::unfactorised(weights, rooting, factorize, log_z);
        if let Some(mu) = marginals {
            let _ = eliminated.marginals.set(mu);
        }
        eliminated
    }

    /// The weights and their root-scaled copy, `ln Z = log_z`, `Z > 0`,
    /// nothing eliminated or cached yet. `O(n²)`.
    fn unfactorised(
        weights: Matrix<f64>,
        rooting: Rooting,
        factorize: fn(Matrix<f64>) -> F,
        log_z: f64,
    ) -> Self {
        // Single-root, the root row scaled by 2^k exactly: Z scales by 2^k,
        // the marginals do not move, and in log space a root weight far
        // below the arcs no longer carries |shift| ε.
        let root_scale = elimination::root_scale(&weights, rooting);
        let scaled = root_scale.scaled_roots(&weights);
        Eliminated {
            weights,
            scaled,
            root_scale,
            number: std::marker::PhantomData,
            rooting,
            log_z,
            det: OnceLock::new(),
            zero_pivot: None,
            marginals: OnceLock::new(),
            forward: None,
            dense: OnceLock::new(),
            factorize,
        }
    }

    /// `ν = ∂ ln det L / ∂w` by the elimination, in log space when the
    /// `f64` run left `f64`'s safe range.
    fn log_partition_gradient(&self) -> Result<Matrix<f64>, Numerical> {
        let (nu, tiny) = elimination::checked_log_partition_gradient(&self.scaled, self.rooting)?;
        let mut nu = if tiny {
            let logs = in_log_space(&self.scaled);
            elimination::log_partition_gradient(&logs, self.rooting)?.map(NonNegative::to_weight)
        } else {
            nu.map(NonNegative::to_weight)
        };
        // ∂ ln Z/∂ρ_m = 2^k ∂ ln Z'/∂ρ'_m for the root row scaled by 2^k.
        for m in 1..nu.cols() {
            nu[(0, m)] = self.root_scale.apply(nu[(0, m)]);
        }
        Ok(nu)
    }

    /// `J θ̇` and the size of each entry ([`Tangent::tangent_size`]) by the
    /// elimination on dual numbers, or on anchored ones when `anchored`
    /// (nearly certain arcs), in log space when the `f64` run left `f64`'s
    /// safe range.
    fn jvp(&self, (d, a, b): &Centred, anchored: bool) -> Result<Sized, Numerical> {
        let (w, r, o) = (&self.weights, self.rooting, [a, b]);
        if anchored {
            let (v, size, tiny) = elimination::marginals_jvp_sized::<P::Anchored>(w, d, o, r)?;
            if !tiny {
                return Ok((v, size));
            }
            let (v, size, _) = elimination::marginals_jvp_sized::<LnAnchored>(w, d, o, r)?;
            return Ok((v, size));
        }
        let (v, size, tiny) = elimination::marginals_jvp_sized::<P::Dual>(w, d, o, r)?;
        if !tiny {
            return Ok((v, size));
        }
        let (v, size, _) = elimination::marginals_jvp_sized::<LnDual>(w, d, o, r)?;
        Ok((v, size))
    }

    /// `J 1_root = Cov[1_e, #root arcs]` (multi-root) by the elimination on
    /// graded numbers, accurate relative to its own size
    /// ([`elimination::root_scaling_jvp`]), in log space when the `f64` run
    /// left `f64`'s safe range.
    fn root_jvp(&self) -> Result<Matrix<f64>, Numerical> {
        let (v, tiny) = elimination::root_scaling_jvp::<P::Graded>(&self.weights)?;
        if !tiny {
            return Ok(v);
        }
        Ok(elimination::root_scaling_jvp::<LnGraded>(&self.weights)?.0)
    }

    /// [`Factors::marginals_vjp`] in `f64` alone, without its escalation
    /// to double-double and without its refusal: the product `J ḡ` (before
    /// the model's column identities) and its estimated correct bits
    /// norm-wise after them (the running error estimate of [`Eliminated`],
    /// `O(n²)` on top of the product). For calibration and diagnostics.
    ///
    /// # Errors
    /// As [`elimination::marginals`].
    pub fn estimated_vjp(&self, seed: &Matrix<f64>) -> Result<(Matrix<f64>, f64), Numerical> {
        let (v, accuracy) = self.sized_vjp(seed, false)?;
        Ok((v, accuracy.bits))
    }

    /// [`Eliminated::estimated_vjp`] with the entry-wise estimate too:
    /// `(J ḡ, norm-wise bits, fewest bits of an entry ≥ 1e-8 of the
    /// largest)`, both after the model's column identities, and whether
    /// [`Factors::marginals_vjp`] would escalate this product to
    /// double-double (the gate of [`ENTRY_BITS`]). For calibration.
    ///
    /// # Errors
    /// As [`elimination::marginals`].
    pub fn estimated_vjp_entrywise(
        &self,
        seed: &Matrix<f64>,
    ) -> Result<(Matrix<f64>, EntryEstimate), Numerical> {
        let (v, accuracy) = self.sized_vjp(seed, false)?;
        let estimate = EntryEstimate {
            bits: accuracy.bits,
            entry_bits: accuracy.entry_bits,
            anchored: accuracy.anchored,
            escalates: accuracy.escalates(),
        };
        Ok((v, estimate))
    }

    /// [`Factors::marginals_vjp`] with its running error estimate as a
    /// [`VjpAccuracy`] (absolute error and norm of the product after the
    /// model's column identities): for a dense engine that escalates a
    /// product to the elimination
    /// ([`Dense::with_derivative_check`]) and must report the estimate of
    /// what it returns. Escalated to double-double and refused as
    /// [`Factors::marginals_vjp`].
    ///
    /// # Errors
    /// As [`Factors::marginals_vjp`].
    pub(crate) fn certified_vjp(
        &self,
        seed: &Matrix<f64>,
    ) -> Result<(Matrix<f64>, VjpAccuracy), Numerical> {
        let (v, accuracy) = self.sized_vjp(seed, true)?;
        accuracy.certify()?;
        let estimate = VjpAccuracy {
            error: accuracy.error,
            norm: accuracy.norm,
        };
        Ok((v, estimate))
    }

    /// [`Eliminated::estimated_vjp`] with the arc of largest estimated
    /// error, escalated to double-double when `escalate` and the `f64`
    /// product's estimate is below [`DERIVATIVE_BITS`].
    fn sized_vjp(
        &self,
        seed: &Matrix<f64>,
        escalate: bool,
    ) -> Result<(Matrix<f64>, Accuracy), Numerical> {
        // Borrowed from the cache, not cloned as `Factors::marginals` returns
        // them (one allocation and copy of `(n+1)²` numbers per product).
        let mu = self.cached_marginals().as_ref().map_err(Clone::clone)?;
        let n1 = self.weights.rows();
        // Every single-root tree adds the same seed: the product is exactly 0.
        if self.rooting == Rooting::Single
            && super::derivative_check::single_root_constant(seed, &self.weights)
        {
            let accuracy = Accuracy {
                bits: 53.0,
                arc: (0, 1),
                error: 0.0,
                norm: 0.0,
                entry_bits: 53.0,
                anchored: false,
            };
            return Ok((Matrix::zeros(n1, n1), accuracy));
        }
        let roots = || (1..n1).filter(|&m| self.weights[(0, m)] != 0.0);
        // Multi-root: a common offset c of the root seeds (root scores far
        // below the arcs' in an entropy seed) is split off, J ḡ =
        // J (ḡ − c 1_root) + c J 1_root, so that the large c never mixes
        // with the small arc seeds; J 1_root = Cov[1_e, #root arcs] comes
        // from its own run on graded numbers, accurate relative to its own
        // size (the integer parts of its tangents cancel exactly).
        let mass: f64 = roots().map(|m| mu[(0, m)]).sum();
        let offset = if self.rooting == Rooting::Multi && mass > 0.0 {
            roots().map(|m| mu[(0, m)] * seed[(0, m)]).sum::<f64>() / mass
        } else {
            0.0
        };
        let rest = roots().fold(0.0f64, |a, m| a.max((seed[(0, m)] - offset).abs()));
        let split = offset.abs() > rest;
        let anchored = nearly_certain(mu, self.rooting);
        let judged = anchored || spread_beyond_f64(&self.weights);
        // The split offset is taken from the root seeds as the elimination
        // seeds its numbers (exactly on anchored ones), like the centring.
        let split_offset = if split { offset } else { 0.0 };
        let direction = centred(seed, &self.weights, mu, self.rooting, split_offset);
        let per_root = if split { Some(self.root_jvp()?) } else { None };
        // J 1_root keeps a few n ε relative to its own entries
        // (`elimination::root_scaling_jvp`): its size is itself.
        let with_roots = |(mut v, [mut size, mut spread]): Sized| {
            if let Some(per_root) = &per_root {
                for (((x, s), q), y) in v
                    .as_mut_slice()
                    .iter_mut()
                    .zip(size.as_mut_slice())
                    .zip(spread.as_mut_slice())
                    .zip(per_root.as_slice())
                {
                    *x += offset * y;
                    *s += (offset * y).abs();
                    *q = q.hypot(offset * y);
                }
            }
            (v, [size, spread])
        };
        let judge = |(mut v, [mut size, mut spread]): Sized| {
            let accuracy = Accuracy::of(&v, [&size, &spread], mu, self.rooting, judged);
            if accuracy.bits >= DERIVATIVE_BITS {
                return ((v, [size, spread]), accuracy);
            }
            // Before a refusal, what is zero by structure: the covariance of
            // an arc in no tree, or in every tree (the one live head of its
            // word), with anything is exactly 0 (`O(n³)`, on this path only;
            // a graph with one tree is never refused).
            zero_by_structure(
                [&mut v, &mut size, &mut spread],
                &self.weights,
                self.rooting,
            );
            let accuracy = Accuracy::of(&v, [&size, &spread], mu, self.rooting, judged);
            ((v, [size, spread]), accuracy)
        };
        let (first, accuracy) = judge(with_roots(self.jvp(&direction, anchored)?));
        if !accuracy.escalates() || !escalate {
            return Ok((first.0, accuracy));
        }
        // Escalation: the same product in double-double, whose rounding
        // errors are `2⁻⁵²` times those of `f64` against the same size.
        let (w, r) = (&self.weights, self.rooting);
        let (d, a, b) = &direction;
        match elimination::marginals_jvp_sized::<WideDual>(w, d, [a, b], r) {
            Ok((wide, [size, spread], false)) => {
                let size = [
                    size.map(|&s| s * f64::EPSILON),
                    spread.map(|&s| s * f64::EPSILON),
                ];
                let wide = with_roots((wide, size));
                // Anchored, entry by entry the better of the two: double-double
                // dual numbers keep `2⁻¹⁰⁴` of the *uncancelled* size, which
                // on a nearly certain word is `1e20` times the entry (where
                // the anchors cancel exactly), and `f64` anchored numbers keep
                // `2⁻⁵²` of remainders that cancel where no term dominates (a
                // word torn between two heads): each entry from the run whose
                // running estimate of it is smaller.
                let wide = if anchored { merged(&first, wide) } else { wide };
                let (wide, wide_accuracy) = judge(wide);
                if wide_accuracy.bits > accuracy.bits
                    || (wide_accuracy.bits >= DERIVATIVE_BITS
                        && wide_accuracy.entry_bits > accuracy.entry_bits)
                {
                    return Ok((wide.0, wide_accuracy));
                }
                Ok((first.0, accuracy))
            }
            _ => Ok((first.0, accuracy)),
        }
    }

    /// [`Factors::marginals`], formed once and borrowed (the products read
    /// them without a copy): from the first half of the forward elimination
    /// ([`Elimination::checked_marginals`]); in log space when a forward
    /// product of the `f64` run fell below `f64`'s normal range
    /// ([`elimination::checked_marginals`]).
    fn cached_marginals(&self) -> &Result<Matrix<f64>, Numerical> {
        self.marginals.get_or_init(|| match &self.forward {
            Some(forward) if P::F64_PIVOTS => {
                let weights = self.scaled.map(|&w| P::from_weight(w));
                match forward.checked_marginals(&weights) {
                    Ok((mu, false)) => Ok(mu.map(NonNegative::to_weight)),
                    _ => eliminated_marginals(&self.scaled, self.rooting),
                }
            }
            _ => eliminated_marginals(&self.scaled, self.rooting),
        })
    }

    /// `det L` as `(mantissa, exponent)` from `f64` pivots, formed once:
    /// pivots held as logarithms carry `|ln d| ε` each, so a log-space run
    /// takes it from an `f64` run of its own (`n³/3`, only for
    /// `grad_partition`).
    fn det_from_f64(&self) -> Option<(f64, i32)> {
        *self.det.get_or_init(|| {
            let run = Elimination::new(&self.scaled, self.rooting);
            let product = scaled_product(run.pivots()).filter(|_| !run.is_extreme());
            unscaled(product, self.root_scale)
        })
    }

    /// The dense factorisation of the Laplacian, formed once, on first use:
    /// only [`Factors::inverse`], the solves and the adjugate read it, so
    /// an elimination that answers only products and marginals (the
    /// escalation of [`Dense::with_derivative_check`], the derivatives of
    /// [`super::Certified`]) never factorises.
    fn dense(&self) -> &Dense<F> {
        self.dense
            .get_or_init(|| Dense::new(self.weights.clone(), self.rooting, self.factorize))
    }

    /// Whether [`Eliminated::dense`] was formed (for the tests that no
    /// product forms it).
    #[cfg(test)]
    pub(crate) fn dense_formed(&self) -> bool {
        self.dense.get().is_some()
    }
}

/// `det L` of the weights from that of the weights with the root row
/// scaled by `2^k` (single-root: `Z` scales by `2^k`).
fn unscaled(det: Option<(f64, i32)>, scale: PowerOfTwo) -> Option<(f64, i32)> {
    det.and_then(|(m, e)| Some((m, e.checked_sub(scale.0)?)))
}

/// `Π p` as `(mantissa, binary exponent)`, or `None` when a factor is zero
/// or outside `e^{±700}`.
fn scaled_product<'a, P: NonNegative>(factors: impl Iterator<Item = &'a P>) -> Option<(f64, i32)> {
    let (mut mantissa, mut exponent) = (1.0f64, 0i32);
    for p in factors {
        if p.ln_weight().is_nan() || p.ln_weight().abs() >= 700.0 {
            return None;
        }
        // mantissa ∈ [1/4, 2] and p ∈ e^{±700} ⊂ 2^{±1010}: a normal product.
        mantissa *= p.to_weight();
        if !(mantissa.is_finite() && mantissa > 0.0) {
            return None;
        }
        // Scaling by a power of two is exact.
        let e = mantissa.log2().floor() as i32;
        mantissa *= 2f64.powi(-e);
        exponent = exponent.checked_add(e)?;
    }
    Some((mantissa, exponent))
}

/// [`elimination::marginals`] of `weights` in `f64`, rerun in log space
/// when a forward product of the run fell below `f64`'s normal range
/// ([`elimination::checked_marginals`]): the marginals of [`Eliminated`],
/// without its forward elimination for `ln Z` (for callers that have `ln Z`
/// already). `≈ 1.3 n³` multiply-adds.
///
/// # Errors
/// As [`elimination::marginals`].
pub(crate) fn eliminated_marginals(
    weights: &Matrix<f64>,
    rooting: Rooting,
) -> Result<Matrix<f64>, Numerical> {
    let (mu, tiny) = elimination::checked_marginals(weights, rooting)?;
    if !tiny {
        return Ok(mu);
    }
    let logs = in_log_space(weights);
    Ok(elimination::marginals(&logs, rooting)?.map(NonNegative::to_weight))
}

/// The marginals of the arcs into the words `columns` only
/// ([`elimination::checked_column_marginals`]; other columns zero), or
/// `None` when the `f64` run left `f64`'s safe range or found no tree: the
/// caller then takes [`eliminated_marginals`], which reruns in log space and
/// names the error. `≈ n³/3 + 2n² |columns|` multiply-adds.
pub(crate) fn eliminated_columns(
    weights: &Matrix<f64>,
    rooting: Rooting,
    columns: &[usize],
) -> Option<Matrix<f64>> {
    match elimination::checked_column_marginals(weights, rooting, columns) {
        Ok((mu, false)) => Some(mu),
        _ => None,
    }
}

/// A product and the sizes and spreads of its entries
/// ([`Tangent::tangent_size`], [`Tangent::tangent_spread`]).
type Sized = (Matrix<f64>, [Matrix<f64>; 2]);

/// Entry by entry, the entry of `a` or of `b` (with its size and spread)
/// whose estimated error (`spread`, or `size` where the spread is not
/// finite) is smaller. `O(n²)`.
fn merged(a: &Sized, b: Sized) -> Sized {
    let (mut v, [mut size, mut spread]) = b;
    let error = |s: f64, q: f64| if q.is_finite() { q } else { s };
    for i in 0..v.as_slice().len() {
        let (sa, qa) = (a.1[0].as_slice()[i], a.1[1].as_slice()[i]);
        let (sb, qb) = (size.as_slice()[i], spread.as_slice()[i]);
        if error(sa, qa) < error(sb, qb) {
            v.as_mut_slice()[i] = a.0.as_slice()[i];
            size.as_mut_slice()[i] = sa;
            spread.as_mut_slice()[i] = qa;
        }
    }
    (v, [size, spread])
}

/// A seed and two offsets to take from it ([`centred`]).
type Centred = (Matrix<f64>, Matrix<f64>, Matrix<f64>);

/// The factor `c` of the running error estimate of an elimination product
/// ([`Accuracy`]): the error of entry `e` is estimated as
/// `c ε √n spread_e` ([`Tangent::tangent_spread`]). Calibrated against
/// `HighPrecision<512>` by the `vjp_calibration` example of `spantree-faer`
/// (see [`Eliminated`]): with `c = 1` the estimate flagged every product
/// below 45 bits of the sweep at `n ≤ 8`, by a margin of 0.8 bits at the
/// closest; `2` adds a bit.
const ELIMINATION_ERROR_FACTOR: f64 = 2.0;

/// The entry-wise gate of the elimination's products: on the anchored
/// route (some arc certain to `2⁻²⁶`, `nearly_certain`), a product one
/// of whose entries `≥ 1e-8` of the largest keeps fewer than this many bits
/// by the running error estimate (`Accuracy::entry_bits`) is recomputed
/// on [`WideDual`] numbers, although it keeps [`DERIVATIVE_BITS`]
/// norm-wise. See `Accuracy::escalates`.
pub const ENTRY_BITS: f64 = 42.0;

/// The entries the entry-wise estimate judges: those at least this
/// fraction of the product's largest entry (in absolute value).
const ENTRY_FLOOR: f64 = 1e-8;

/// The running error estimate of an elimination product, as
/// [`Eliminated::estimated_vjp_entrywise`] reports it (for calibration).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EntryEstimate {
    /// Estimated correct bits norm-wise, after the column identities.
    pub bits: f64,
    /// The fewest estimated correct bits of an entry `≥ 1e-8` of the
    /// largest, after the column identities.
    pub entry_bits: f64,
    /// The entry-wise gate applies: some arc is certain to `2⁻²⁶` (the
    /// product runs on anchored numbers), or the word-arc weights into some
    /// word span more than `2⁵³` (then `Accurate` takes the elimination's
    /// product even where its dense one is certified).
    pub anchored: bool,
    /// [`Factors::marginals_vjp`] recomputes it in double-double
    /// (`≈ 10×` the time).
    pub escalates: bool,
}

/// The estimated accuracy of an elimination product.
struct Accuracy {
    /// Correct bits norm-wise, `0..=53`.
    bits: f64,
    /// The arc `(head, dependent)` of largest estimated error.
    arc: (usize, usize),
    /// The estimated absolute error, norm-wise, of the balanced product.
    error: f64,
    /// The norm of the balanced product.
    norm: f64,
    /// The fewest estimated correct bits of an entry of the balanced
    /// product at least [`ENTRY_FLOOR`] of its largest, `0..=53`.
    entry_bits: f64,
    /// The entry-wise gate applies: the product ran on anchored numbers
    /// (some arc certain to `2⁻²⁶`), or the word-arc weights into some word
    /// span more than `2⁵³` ([`spread_beyond_f64`]).
    anchored: bool,
}

impl Accuracy {
    /// The estimated correct bits, norm-wise, of the elimination's product `v`
    /// (unbalanced, as [`Eliminated::marginals_vjp`] returns it) once the model
    /// has imposed the column identities (`gradient::balance`): every entry
    /// errs by about `c ε √n spread_e` ([`ELIMINATION_ERROR_FACTOR`], a running error
    /// bound: see [`Tangent::tangent_size`]), the entry that `balance`
    /// replaces by minus the sum of its column (the marginal above `1/2`, the
    /// root arc's included) by the sum of the others' errors; and
    /// the arc of largest estimated error. `O(n²)`.
    fn of(
        v: &Matrix<f64>,
        [size, spread]: [&Matrix<f64>; 2],
        mu: &Matrix<f64>,
        rooting: Rooting,
        anchored: bool,
    ) -> Self {
        let n1 = v.rows();
        let mut balanced = [v.clone()];
        crate::gradient::balance(&mut balanced, std::slice::from_ref(mu), rooting);
        let [balanced] = balanced;
        let root_n = ((n1 - 1) as f64).sqrt();
        let mut error = Matrix::from_fn(n1, n1, |h, m| {
            let by_spread = ELIMINATION_ERROR_FACTOR * f64::EPSILON * root_n * spread[(h, m)];
            // The squares of the spread under- or overflow before the
            // terms do: then the size, an upper bound of the spread.
            if by_spread.is_finite() && (by_spread > 0.0 || size[(h, m)] == 0.0) {
                by_spread
            } else {
                ELIMINATION_ERROR_FACTOR * f64::EPSILON * root_n * size[(h, m)]
            }
        });
        let column_sum = |e: &Matrix<f64>, skip: (usize, usize)| -> f64 {
            (0..n1)
                .filter(|&h| h != skip.1 && (h, skip.1) != skip)
                .map(|h| e[(h, skip.1)])
                .sum()
        };
        // Each column has at most one entry replaced, summed from its own
        // column's other entries, which no other replacement touches: in
        // place, column by column, the same numbers as all sums first (and
        // no list of the replaced entries to allocate).
        let fixed = |m: usize| (0..n1).find(|&h| h != m && mu[(h, m)] > 0.5);
        for m in 1..n1 {
            if let Some(t) = fixed(m) {
                error[(t, m)] = column_sum(&error, (t, m));
            }
        }
        // `balance`'s root pass (single-root) rewrites the root arc above
        // `1/2` only where the column pass did not: with one matrix of
        // marginals that arc is its column's first above `1/2`, fixed above.
        let norm = balanced
            .as_slice()
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        let total = error.as_slice().iter().map(|x| x * x).sum::<f64>().sqrt();
        let mut worst = (0, 1);
        for h in 0..n1 {
            for m in 1..n1 {
                if error[(h, m)] > error[worst] {
                    worst = (h, m);
                }
            }
        }
        let bits = if total == 0.0 {
            53.0
        } else {
            let b = -(total / norm).log2();
            if b.is_nan() {
                0.0
            } else {
                b.clamp(0.0, 53.0)
            }
        };
        let largest = balanced
            .as_slice()
            .iter()
            .fold(0.0f64, |a, x| a.max(x.abs()));
        // The fewest bits `−log₂(e / |x|)` of a judged entry: the logarithm
        // only of the entries whose ratio is within `2⁻²⁰` of the largest
        // (or NaN). Any other ratio's logarithm lies `1.4e-6` below, far
        // beyond the rounding of `log2` (an ulp of at most `2.3e-13` here),
        // so the minimum is the same number, without a logarithm per entry
        // (measured, `valgrind --tool=callgrind
        // --toggle-collect='*entropy_and_gradient*' … short_escalated DIR
        // count 1 product 10`: 238.0M to 234.8M instructions, digests
        // unchanged).
        let ratios = || {
            balanced
                .as_slice()
                .iter()
                .zip(error.as_slice())
                .filter(|&(x, e)| *x != 0.0 && x.abs() >= ENTRY_FLOOR * largest && *e > 0.0)
                .map(|(x, e)| e / x.abs())
        };
        let most = ratios().fold(0.0f64, |a, q| if q > a { q } else { a });
        let near = most * (1.0 - f64::powi(2.0, -20));
        let mut entry_bits = 53.0f64;
        for q in ratios().filter(|q| q.is_nan() || *q >= near) {
            let b = -q.log2();
            entry_bits = entry_bits.min(if b.is_nan() { 0.0 } else { b.clamp(0.0, 53.0) });
        }
        Accuracy {
            bits,
            arc: worst,
            error: total,
            norm,
            entry_bits,
            anchored,
        }
    }

    /// Whether [`Factors::marginals_vjp`] recomputes the product in
    /// double-double: below [`DERIVATIVE_BITS`] norm-wise, or, on the
    /// anchored route only, below [`ENTRY_BITS`] on some entry `≥ 1e-8` of
    /// the largest.
    fn escalates(&self) -> bool {
        self.bits < DERIVATIVE_BITS || (self.anchored && self.entry_bits < ENTRY_BITS)
    }

    /// `Ok` when the product keeps [`DERIVATIVE_BITS`] norm-wise by the
    /// estimate; otherwise the typed refusal naming the arc of largest
    /// estimated error.
    fn certify(&self) -> Result<(), Numerical> {
        if self.bits >= DERIVATIVE_BITS {
            return Ok(());
        }
        let (head, dependent) = self.arc;
        Err(Numerical::Inaccurate {
            cause: Inaccuracy::EliminationCancellation { head, dependent },
            bits: self.bits as u32,
        })
    }
}

/// Sets to zero, in each of `matrices`, the entries of the arcs whose
/// marginal is constant: arcs in no tree (by
/// [`live_arcs`](super::derivative_check::live_arcs)) and the arcs into a
/// word with at most one live head (that head is in every tree). Their
/// vector–Jacobian products `Cov[1_e, ḡ · 1_T]` are exactly `0`. `O(n³)`.
fn zero_by_structure(mut matrices: [&mut Matrix<f64>; 3], weights: &Matrix<f64>, rooting: Rooting) {
    let n1 = weights.rows();
    let live = super::derivative_check::live_arcs(weights, rooting);
    for m in 1..n1 {
        let heads = (0..n1).filter(|&h| live[h * n1 + m]).count();
        for h in (0..n1).filter(|&h| heads <= 1 || !live[h * n1 + m]) {
            for x in matrices.iter_mut() {
                (**x)[(h, m)] = 0.0;
            }
        }
    }
}

fn in_log_space<P: NonNegative>(weights: &Matrix<P>) -> Matrix<LnPositive> {
    weights.map(|w| LnPositive::from_ln(w.ln_weight()))
}

/// The seed `ḡ` (zero on forbidden arcs) and the offsets to take from it:
/// on the arcs into each word, its mean under the marginals (and,
/// single-root, the same on the root arcs first). `J ḡ` is unchanged by
/// them (see [`Eliminated`]), and the terms the elimination sums are as
/// small as the seed allows. The difference is formed when the
/// elimination seeds its numbers ([`Tangent::seeded_minus`]): exactly, on
/// anchored numbers. `O(n²)`.
fn centred(
    seed: &Matrix<f64>,
    weights: &Matrix<f64>,
    mu: &Matrix<f64>,
    rooting: Rooting,
    split: f64,
) -> Centred {
    let n1 = weights.rows();
    // Row-major slices (`[h n1 + m]`): the same operations in the same
    // order as through `Matrix` indexing, without its bounds checks (at
    // `n = 6` the centring cost 3% of an escalated entropy gradient).
    let (w, g, p) = (weights.as_slice(), seed.as_slice(), mu.as_slice());
    let dir: Vec<f64> = w
        .iter()
        .zip(g)
        .map(|(&w, &g)| if w == 0.0 { 0.0 } else { g })
        .collect();
    let dir = Matrix::from_row_major(n1, n1, dir);
    let d = dir.as_slice();
    let mut root = Matrix::zeros(n1, n1);
    let mut column = Matrix::zeros(n1, n1);
    // The root arcs first: root seeds share a large offset when root scores
    // are far below the arcs', and subtracting it here keeps it out of the
    // arc seeds of every column.
    let root_row = &mut root.as_mut_slice()[..n1];
    let roots = || (1..n1).filter(|&m| w[m] != 0.0);
    if rooting == Rooting::Single {
        let first = roots().next().map(|m| d[m]);
        let mean: f64 = match first {
            Some(c) if roots().all(|m| d[m] == c) => c,
            _ => roots().map(|m| p[m] * d[m]).sum(),
        };
        for m in roots() {
            root_row[m] = mean;
        }
    } else {
        // Multi-root: the common offset of the root seeds split off by the
        // caller (`J 1_root` adds it back).
        for m in roots() {
            root_row[m] = split;
        }
    }
    let r = root.as_slice();
    let c = column.as_mut_slice();
    for m in 1..n1 {
        let allowed = || {
            (0..n1)
                .map(move |h| h * n1 + m)
                .filter(move |&i| i != m * n1 + m && w[i] != 0.0)
        };
        // The column's mean of the seed after the root offset (rounded: any
        // constant common to the column is an exact invariance).
        // A column whose seeds are all equal adds that seed to every tree:
        // its offset is the seed itself, so its direction is exactly zero.
        let value = |i: usize| d[i] - r[i];
        let first = allowed().next().map(value);
        let mean: f64 = match first {
            Some(x) if allowed().all(|i| value(i) == x) => x,
            _ => allowed().map(|i| p[i] * value(i)).sum(),
        };
        for i in allowed() {
            c[i] = mean;
        }
    }
    (dir, root, column)
}

/// Whether some arc is certain to within `2⁻²⁶`: `1 − μ_e`, summed from the
/// other marginals of its column (or, single-root, of the root row), below
/// `2⁻²⁶`. Then a derivative can be `1e-20` times smaller than the marginal
/// it belongs to, formed from relative tangents that cancel exactly (the
/// structure of the nearly certain trees): [`Anchored`] numbers keep them
/// apart, where [`Dual`] numbers keep only `ε μ_e` absolutely. Elsewhere
/// [`Dual`] is cheaper and, when no term of a sum dominates, 2–5 bits more
/// accurate (anchored remainders then carry `O(|θ̇|)` parts that cancel).
/// `O(n²)`.
pub(crate) fn nearly_certain(mu: &Matrix<f64>, rooting: Rooting) -> bool {
    let n1 = mu.rows();
    let threshold = 2f64.powi(-26);
    // Two passes over the line, no buffer: this runs once per product, and
    // at n = 10 collecting each column cost 8% of the product.
    fn line<I: Iterator<Item = f64>>(cells: impl Fn() -> I, threshold: f64) -> bool {
        let top = cells().fold(0.0f64, f64::max);
        // The second pass only where the largest exceeds `1/2`.
        top > 0.5 && cells().filter(|&x| x != top).sum::<f64>() < threshold
    }
    let columns = (1..n1).any(|m| {
        line(
            || (0..n1).filter(move |&h| h != m).map(move |h| mu[(h, m)]),
            threshold,
        )
    });
    columns || (rooting == Rooting::Single && line(|| (1..n1).map(|m| mu[(0, m)]), threshold))
}

/// Whether the word-arc weights into some word span more than `f64`'s
/// precision (largest `> 2⁵³ ×` smallest non-zero, scores more than 36.7
/// apart): the nearly deterministic graphs (word-arc scores spread over
/// `±50`) whose small derivatives are small by structure (weakly coupled
/// words, which the rounding of the weights moves little) while the
/// elimination's `f64` products lose up to 13 bits of them to sums that
/// cancel (measured: `honest_accuracy`, `n = 25`). There the entry-wise gate
/// ([`ENTRY_BITS`]) judges every product. On ordinary graphs (`N(0, 4²)`
/// scores span about 18 within a word at `n = 36`) an entry far below the
/// largest is mostly a covariance near zero by chance, which the weights'
/// rounding moves as much, and the gate would fire on nearly every product
/// at `n = 36` (`vjp_calibration gate`). `O(n²)`.
pub(crate) fn spread_beyond_f64(weights: &Matrix<f64>) -> bool {
    // Walked column by column with a test of nearly certain arcs on the
    // marginals, this cost `Certified` 9% of a `grad_entropy` at `n = 36`;
    // 1.4% row by row into two buffers (callgrind on `op_loop grad_entropy
    // 36 200 0 accurate`), 2.2% of the time at `n = 10` (perf, AVX-512);
    // now a block of columns in vector registers down the rows, no buffer
    // ([`ColumnSpread`]).
    pulp::Arch::new().dispatch(ColumnSpread {
        weights: weights.as_slice(),
        n: weights.rows().saturating_sub(1),
    })
}

/// Whether some column `m ≥ 1` of the row-major `(n + 1) × (n + 1)`
/// weights has, over the rows after the first, its largest weight (a
/// select on `>`, from `0`) above `2⁵³` times its smallest positive one
/// (a select on `<`, from `+∞`, non-positive weights read as `+∞`): the
/// rows in order, a block of columns side by side in one vector
/// (`linalg::column_blocks`; blocks that overlap judge their
/// common columns the same way twice), the same selections lane by lane
/// as one column at a time. Fewer columns than lanes need the scalar
/// instruction set (every load a whole vector). `O(n²)`, no allocation.
struct ColumnSpread<'a> {
    weights: &'a [f64],
    n: usize,
}

impl pulp::WithSimd for ColumnSpread<'_> {
    type Output = bool;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> bool {
        use crate::linalg::{column_blocks, load_lanes};
        let (n, n1) = (self.n, self.n + 1);
        if n == 0 {
            return false;
        }
        if n < S::F64_LANES {
            return self.with_simd(pulp::Scalar::new());
        }
        let (zero, one) = (simd.splat_f64s(0.0), simd.splat_f64s(1.0));
        let (infinity, scale) = (
            simd.splat_f64s(f64::INFINITY),
            simd.splat_f64s(2f64.powi(53)),
        );
        for c in column_blocks(n, S::F64_LANES) {
            let (mut high, mut low) = (zero, infinity);
            for row in self.weights.chunks_exact(n1).skip(1) {
                let w = load_lanes(simd, row, 1 + c);
                high = simd.select_f64s(simd.greater_than_f64s(w, high), w, high);
                let positive = simd.select_f64s(simd.greater_than_f64s(w, zero), w, infinity);
                low = simd.select_f64s(simd.less_than_f64s(positive, low), positive, low);
            }
            let beyond = simd.less_than_f64s(simd.mul_f64s(low, scale), high);
            if simd.reduce_max_f64s(simd.select_f64s(beyond, one, zero)) > 0.0 {
                return true;
            }
        }
        false
    }
}

/// The number types whose elimination runs a tangent along, tried first
/// (a run whose products leave `f64`'s safe range is redone on [`LnDual`],
/// [`LnAnchored`] or [`LnGraded`]): [`Dual`], [`Anchored`] and [`Graded`]
/// for both `f64` and [`LnPositive`], whose logarithms would carry
/// `|ln w| ε` (see [`Eliminated`]).
pub trait WithTangent: NonNegative {
    /// The tangent type.
    type Dual: Tangent;
    /// The tangent type with exact anchors, for nearly certain arcs.
    type Anchored: Tangent;
    /// The tangent type along the root scaling ([`Graded`]).
    type Graded: RootTangent;
    /// Whether the pivots are `f64` numbers, exact to a few ulps (then
    /// `det L` for `∂Z/∂w = Z ν` is their product; otherwise an `f64` run
    /// gives it).
    const F64_PIVOTS: bool;
}

impl WithTangent for f64 {
    type Dual = Dual;
    type Anchored = Anchored;
    type Graded = Graded;
    const F64_PIVOTS: bool = true;
}

impl WithTangent for LnPositive {
    type Dual = Dual;
    type Anchored = Anchored;
    type Graded = Graded;
    const F64_PIVOTS: bool = false;
}

impl<P: WithTangent, F: Factorization<Scalar = f64>> Factors for Eliminated<P, F> {
    type Scalar = f64;

    fn weights(&self) -> &Matrix<f64> {
        &self.weights
    }

    fn rooting(&self) -> Rooting {
        self.rooting
    }

    fn zero_pivot(&self) -> Option<usize> {
        self.zero_pivot
    }

    /// `Z = Π d_k` through `exp(Σ ln d_k)` (may overflow; use `ln_abs_det`).
    fn det(&self) -> f64 {
        self.log_z.exp()
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        match self.log_z {
            f64::NEG_INFINITY => (Sign::Zero, f64::NEG_INFINITY),
            ln => (Sign::Positive, ln),
        }
    }

    fn inverse(&self) -> Result<&Matrix<f64>, Numerical> {
        self.dense().inverse()
    }

    fn solve(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        self.dense().solve(rhs)
    }

    fn solve_transpose(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        self.dense().solve_transpose(rhs)
    }

    fn adjugate(&self) -> Matrix<f64> {
        self.dense().adjugate()
    }

    /// [`elimination::marginals`] on the weights, computed once, from the
    /// first half of the forward elimination
    /// ([`Elimination::checked_marginals`]); in log space when a forward
    /// product of the `f64` run fell below `f64`'s normal range
    /// ([`elimination::checked_marginals`]).
    fn marginals(&self) -> Result<Matrix<f64>, Numerical> {
        self.cached_marginals().clone()
    }

    /// `J ḡ` by the elimination on dual numbers
    /// ([`elimination::marginals_jvp_sized`] on the centred seed), in log
    /// space ([`LnAnchored`]) when the `f64` run left `f64`'s safe range.
    /// About `4.5 n³` multiply-adds on top of the (cached) marginals; no
    /// dense factorisation. Its running error estimate decides: below
    /// [`DERIVATIVE_BITS`] norm-wise the product is recomputed on
    /// [`WideDual`] numbers (about 10× the time), and if that still falls
    /// short, it is refused ([`Inaccuracy::EliminationCancellation`]).
    fn marginals_vjp(&self, seed: &Matrix<f64>) -> Result<Matrix<f64>, Numerical> {
        Ok(self.certified_vjp(seed)?.0)
    }

    /// `∂ det L / ∂w = det L · ν` from the elimination when `Z > 0`
    /// (relative accuracy entry by entry); the dense adjugate when `Z = 0`.
    fn partition_gradient(&self) -> Result<Matrix<f64>, Numerical> {
        if self.zero_pivot.is_some() {
            return Ok(crate::laplacian::weight_gradient(
                &self.adjugate(),
                self.rooting,
            ));
        }
        let nu = self.log_partition_gradient()?;
        Ok(match self.det_from_f64() {
            Some((mantissa, exponent)) => {
                let half = 2f64.powi(exponent / 2);
                let rest = 2f64.powi(exponent - exponent / 2);
                nu.map(|&x| x * mantissa * half * rest)
            }
            None => nu.map(|&x| {
                if x == 0.0 {
                    0.0
                } else {
                    (x.ln() + self.log_z).exp()
                }
            }),
        })
    }

    fn cancellation_free(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::spread_beyond_f64;
    use crate::matrix::Matrix;

    /// Word arcs into one word `2⁵⁴` apart span more than `f64`'s precision,
    /// `2⁵²` apart do not; root arcs and zero weights do not count.
    #[test]
    fn spread_beyond_f64_reads_word_arcs_only() {
        let weights = |ratio: f64, root: f64| {
            let mut w = Matrix::from_fn(4, 4, |h, m| if m == 0 || h == m { 0.0 } else { 1.0 });
            w[(1, 3)] = ratio;
            w[(0, 2)] = root;
            w[(1, 2)] = 0.0;
            w
        };
        assert!(spread_beyond_f64(&weights(2f64.powi(54), 1.0)));
        assert!(!spread_beyond_f64(&weights(2f64.powi(52), 1.0)));
        assert!(!spread_beyond_f64(&weights(1.0, 2f64.powi(-80))));
        assert!(spread_beyond_f64(&weights(2f64.powi(-54), 1.0)));
    }

    /// `spread_beyond_f64` under the instruction-set dispatch decides as its
    /// definition, column by column: the largest word-arc weight above
    /// `2⁵³` times the smallest positive one (NaN weights ignored), on
    /// random weights at every tail length, with zeros, NaNs, infinities
    /// and spreads on both sides of `2⁵³`.
    #[test]
    fn spread_beyond_f64_is_its_definition() {
        use spantree_bruteforce::random::SplitMix64;
        let definition = |w: &Matrix<f64>| {
            let n1 = w.rows();
            (1..n1).any(|m| {
                let column = || (1..n1).map(|h| w[(h, m)]);
                let high = column().fold(0.0f64, f64::max);
                let low = column().filter(|&x| x > 0.0).fold(f64::INFINITY, f64::min);
                low * 2f64.powi(53) < high
            })
        };
        let mut rng = SplitMix64::new(2026);
        let (mut yes, mut no) = (0, 0);
        for n1 in 1..=41 {
            for case in 0..40 {
                let w = Matrix::from_fn(n1, n1, |h, m| {
                    if m == 0 || h == m || rng.chance(0.1) {
                        return 0.0;
                    }
                    match (case % 8, rng.chance(0.02)) {
                        (0, true) => f64::NAN,
                        (1, true) => f64::INFINITY,
                        (2, true) => -1.0,
                        _ => (rng.normal() * (case as f64)).exp2() * 2f64.powi(-20),
                    }
                });
                let expected = definition(&w);
                assert_eq!(spread_beyond_f64(&w), expected, "n1 = {n1} case {case}");
                if expected {
                    yes += 1;
                } else {
                    no += 1;
                }
            }
        }
        assert!(yes > 200 && no > 200, "beyond {yes}, within {no}");
    }

    /// `Accuracy::of`'s estimated error (its norm and the arc of the largest
    /// entry) is that of its definition, bit for bit: the entry of each
    /// column whose marginal exceeds `1/2` replaced by the sum of the
    /// column's other errors (all such entries listed first, then replaced),
    /// and single-root the root arc above `1/2` by the sum of the other root
    /// errors unless listed. Random products, sizes (some zero or infinite
    /// spreads) and marginals (some columns with an entry above `1/2`, at
    /// the root or a word), both rootings.
    #[test]
    fn accuracy_error_is_its_definition() {
        use super::{Accuracy, ELIMINATION_ERROR_FACTOR};
        use crate::graph::Rooting;
        use spantree_bruteforce::random::SplitMix64;
        let definition = |spread: &Matrix<f64>, size: &Matrix<f64>, mu: &Matrix<f64>, r| {
            let n1 = mu.rows();
            let c = ELIMINATION_ERROR_FACTOR * f64::EPSILON * ((n1 - 1) as f64).sqrt();
            let mut e = Matrix::from_fn(n1, n1, |h, m| {
                let q = c * spread[(h, m)];
                if q.is_finite() && (q > 0.0 || size[(h, m)] == 0.0) {
                    q
                } else {
                    c * size[(h, m)]
                }
            });
            let mut fixed = Vec::new();
            for m in 1..n1 {
                if let Some(t) = (0..n1).find(|&h| h != m && mu[(h, m)] > 0.5) {
                    fixed.push((t, m));
                }
            }
            for &(t, m) in &fixed {
                e[(t, m)] = (0..n1)
                    .filter(|&h| h != m && h != t)
                    .map(|h| e[(h, m)])
                    .sum();
            }
            if r == Rooting::Single {
                if let Some(m) = (1..n1).find(|&m| mu[(0, m)] > 0.5) {
                    if !fixed.contains(&(0, m)) {
                        e[(0, m)] = (1..n1).filter(|&j| j != m).map(|j| e[(0, j)]).sum();
                    }
                }
            }
            let total = e.as_slice().iter().map(|x| x * x).sum::<f64>().sqrt();
            let mut worst = (0, 1);
            for h in 0..n1 {
                for m in 1..n1 {
                    if e[(h, m)] > e[worst] {
                        worst = (h, m);
                    }
                }
            }
            (total, worst)
        };
        let mut rng = SplitMix64::new(26);
        let mut replaced = 0;
        for n1 in 2..=12 {
            for case in 0..30 {
                let v = Matrix::from_fn(
                    n1,
                    n1,
                    |h, m| {
                        if m == 0 || h == m {
                            0.0
                        } else {
                            rng.normal()
                        }
                    },
                );
                let size = v.map(|x| x.abs() * rng.uniform_in(1.0, 4.0));
                let spread = size.map(|&s| match rng.below(10) {
                    0 => 0.0,
                    1 => f64::INFINITY,
                    _ => s * rng.uniform(),
                });
                let mu = Matrix::from_fn(n1, n1, |h, m| {
                    if m == 0 || h == m {
                        0.0
                    } else if rng.chance(0.3) {
                        rng.uniform_in(0.5, 1.0)
                    } else {
                        rng.uniform() * 0.5
                    }
                });
                replaced += (1..n1)
                    .filter(|&m| (0..n1).any(|h| mu[(h, m)] > 0.5))
                    .count();
                for r in [Rooting::Single, Rooting::Multi] {
                    let a = Accuracy::of(&v, [&size, &spread], &mu, r, false);
                    let (total, worst) = definition(&spread, &size, &mu, r);
                    assert_eq!(a.error.to_bits(), total.to_bits(), "n1 = {n1} case {case}");
                    assert_eq!(a.arc, worst, "n1 = {n1} case {case}");
                }
            }
        }
        assert!(replaced > 300, "{replaced} columns replaced");
    }
}
