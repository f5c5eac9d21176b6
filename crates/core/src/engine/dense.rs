//! Answers from a dense factorisation of the Laplacian.

use std::sync::{Mutex, OnceLock};

use super::derivative_check::{centred_with, dense_route, live_accuracy, DenseProduct, DenseRoute};
use super::{Eliminated, Factorization, Factors, VjpAccuracy};
use crate::error::{Inaccuracy, Numerical};
use crate::graph::Rooting;
use crate::laplacian::laplacian;
use crate::linalg::{column_blocks, load_lanes, store_lanes, ColumnBody, Narrow, PartialPivLu};
use crate::matrix::{as_f64, from_f64, give_back, Matrix, Scratch, Spare};
use crate::scalar::{Scalar, Sign};
use pulp::{Arch, Simd, WithSimd};

/// The last seed of [`Factors::marginals_vjp`], its centred form
/// (`derivative_check::centred_with`) and, when the product decided by it
/// already, the estimate [`Dense::vjp_accuracy`] is to report.
#[derive(Debug)]
struct LastProduct<S> {
    seed: Matrix<S>,
    centred: Matrix<S>,
    accuracy: Option<VjpAccuracy>,
}

/// A vector–Jacobian product `v` and the centred seed it was formed from
/// ([`Dense`]'s `product`).
type ProductAndCentred<S> = (Matrix<S>, Matrix<S>);

/// The elimination a dense `f64` engine escalates single-root products to
/// ([`Dense::with_derivative_check`]). Its own dense factorisation (for
/// solves, which no product reads) is core's [`PartialPivLu`]: `Dense<F>`
/// has no constructor of `F` to hand it.
type Escalation = Eliminated<f64, PartialPivLu<f64>>;

/// The marginals `μ = w ⊙ G(X)` and, from [`ROW_GLUE_FROM`] words on,
/// `G(X)` in the layout of the weights ([`gradient_and_marginals`]).
type MarginalsAndGradient<S> = (Matrix<S>, Option<Matrix<S>>);

/// From this many words on, the dense glue runs row by row: the marginals
/// with `G(X)` ([`gradient_and_marginals`]) and each product from
/// `(X Cᵀ X)ᵀ` ([`product_glue`]); below, column by column from `X` and
/// `X Cᵀ X` ([`vjp_glue`]), whose fixed costs are lower. The same bits
/// either way. Measured, callgrind instructions per `grad_entropy` call
/// (`op_loop grad_entropy N REPS 0 f64`, single-root `N(0, 2²)` scores,
/// rows against columns): `n = 5` +1.1%, `8` +1.6%, `10` +1.0%, `12`
/// −0.2%, `16` −5.6%, `24` −8.9%, `36` −8.8%. With the rows in `f64`
/// vectors (session 21), moving this to `8` still lost at `n = 10`
/// (task-clock per call, medians of 5: `log_z+marginals` +3.3%, `entropy`
/// +6.2%, `grad_entropy` −0.4%): the marginals alone pay for `G(X)`.
/// With the column glue on `f64` ([`ColumnGlue`], session 25), rows
/// against columns, `grad_entropy … accurate`: callgrind `n = 8` +1.3%,
/// `12` +1.0%, `16` +2.7%, `36` +1.9% (columns fewer instructions at every
/// size), but task-clock (medians of 3) `n = 12` +0.7%, `16` −1.1%, `24`
/// −2.0%, `36` −2.6%: the crossover stays here.
const ROW_GLUE_FROM: usize = 12;

/// A product escalated to the elimination and its own estimate, set by
/// [`Dense::with_derivative_check`] where the scalar is `f64`.
type Escalate<F> = fn(
    &Dense<F>,
    &Matrix<<F as Factorization>::Scalar>,
) -> Result<(Matrix<<F as Factorization>::Scalar>, VjpAccuracy), Numerical>;

/// The Laplacian of a graph's prepared weights under a dense factorisation
/// `F`: `ln Z` from its pivots, the marginals `μ = w ⊙ G(X)` from the inverse
/// `X = L⁻¹` (formed once; `G` reads one or two entries of `X` per arc,
/// [`weight_gradient`](crate::laplacian::weight_gradient)), solves and the adjugate from `F`.
///
/// With [`Dense::with_derivative_check`] (the `f64` engines `F64` and
/// `ShiftedF64` of `spantree-faer`) every vector–Jacobian product is
/// estimated in `O(n²)` ([`VjpAccuracy`]) and refused below
/// [`DERIVATIVE_BITS`](super::DERIVATIVE_BITS); single-root, a product that only the second
/// opinion of its residuals doubts is computed by the elimination instead ([`Eliminated`]).
#[derive(Debug)]
pub struct Dense<F: Factorization> {
    weights: Matrix<F::Scalar>,
    rooting: Rooting,
    lu: F,
    inverse: OnceLock<Result<Matrix<F::Scalar>, Numerical>>,
    /// The marginals from the inverse (the answer, the seed's centring, the
    /// derivative check and the model's balancing read them) and `G(X)` in
    /// the layout of the weights (every product's glue reads it along
    /// rows), formed once in one pass ([`gradient_and_marginals`]).
    marginals: OnceLock<Result<MarginalsAndGradient<F::Scalar>, Numerical>>,
    /// With [`Dense::with_derivative_check`]: the last seed of
    /// [`Factors::marginals_vjp`], its centred form and (single-root) the estimate of
    /// the product returned: the check of the same product reads it instead
    /// of centring and estimating again (`O(n²)` saved; the model asks for
    /// the check right after the product).
    last: Mutex<Option<LastProduct<F::Scalar>>>,
    /// [`Factorization::ln_det_error`], formed once (`ln Z` and every
    /// derivative check it).
    ln_det_error: OnceLock<f64>,
    /// Whether vector–Jacobian products are refused when
    /// [`VjpAccuracy`] says they keep fewer than [`DERIVATIVE_BITS`](super::DERIVATIVE_BITS).
    check_derivatives: bool,
    /// With [`Dense::with_derivative_check`] (`f64` only): the single-root
    /// products that only the residuals' second opinion doubts go to the elimination.
    escalate: Option<Escalate<F>>,
    /// That elimination, formed on first use (boxed: it holds a `Dense`).
    escalation: OnceLock<Box<Escalation>>,
}

impl<F: Factorization> Dense<F> {
    /// Builds the Laplacian of `weights` for `rooting` and factorises it with
    /// `factorize`, `O(n³)`.
    pub fn new(
        weights: Matrix<F::Scalar>,
        rooting: Rooting,
        factorize: impl FnOnce(Matrix<F::Scalar>) -> F,
    ) -> Self {
        let lu = factorize(laplacian(&weights, rooting));
        Dense {
            weights,
            rooting,
            lu,
            inverse: OnceLock::new(),
            marginals: OnceLock::new(),
            last: Mutex::new(None),
            ln_det_error: OnceLock::new(),
            check_derivatives: false,
            escalate: None,
            escalation: OnceLock::new(),
        }
    }

    /// [`Factors::marginals_vjp`] of `seed` with [`dense_route`] for the
    /// product, as [`Certified`](super::Certified) takes it (no refusal of
    /// its own: the estimate with the residuals' second opinion
    /// single-root, [`SINGLE_ROOT_RESIDUAL_FACTOR`](super::SINGLE_ROOT_RESIDUAL_FACTOR),
    /// and the margin decide), from the marginals and the centred seed the
    /// product formed: nothing kept between the two (no copy of the seed,
    /// no comparison of it, no lock). `O(n³)` for the product, `O(n²)` for
    /// the route.
    pub(crate) fn marginals_vjp_routed(
        &self,
        seed: &Matrix<F::Scalar>,
    ) -> Result<(Matrix<F::Scalar>, DenseRoute), Numerical> {
        let (v, centred) = self.product(seed)?;
        let product = DenseProduct {
            centred: &centred,
            weights: &self.weights,
            x: self.inverse()?,
            mu: self.mu()?,
            v: &v,
            rooting: self.rooting,
        };
        let route = dense_route(&product, false);
        Ok((v, route))
    }

    /// The product `v` of [`Factors::marginals_vjp`] (without its check)
    /// and the centred seed it was formed from ([`centred_with`]). `O(n³)`.
    fn product(&self, seed: &Matrix<F::Scalar>) -> Result<ProductAndCentred<F::Scalar>, Numerical> {
        let x = self.inverse()?;
        let w = &self.weights;
        let rooting = self.rooting;
        let centred = centred_with(seed, w, self.mu()?, rooting);
        let c = weighted_adjoint(&centred, w, rooting);
        // `C` and the sandwich formed in its place (on the plain kernel)
        // go back to this thread's spares once the glue has read them.
        let v = match self.gradient()? {
            Some(gx) => {
                let yt = self.lu.inverse_sandwich_transposed(x, c)?;
                let v = product_glue(&centred, w, gx, &yt, rooting);
                give_back(yt);
                v
            }
            None => {
                let y = self.lu.inverse_sandwich(x, c)?;
                let v = vjp_glue(Some(&centred), w, x, Some(&y), rooting);
                give_back(y);
                v
            }
        };
        Ok((v, centred))
    }

    /// What the last product kept, if its seed was `seed` (taken: the
    /// model asks once per product).
    fn last_of(&self, seed: &Matrix<F::Scalar>) -> Option<LastProduct<F::Scalar>> {
        let last = self.last.lock().ok().and_then(|mut l| l.take());
        last.filter(|l| same_entries(&l.seed, seed))
    }

    /// Keeps `seed`, its centred form and the estimate of the product
    /// returned for the check that follows.
    fn keep(
        &self,
        seed: &Matrix<F::Scalar>,
        centred: Matrix<F::Scalar>,
        accuracy: Option<VjpAccuracy>,
    ) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(LastProduct {
                seed: seed.clone(),
                centred,
                accuracy,
            });
        }
    }

    /// Whether a single-root product was escalated to the elimination
    /// ([`Dense::with_derivative_check`]; `false` before any is asked).
    pub fn elimination_formed(&self) -> bool {
        self.escalation.get().is_some()
    }

    /// The dense factorisation.
    pub fn lu(&self) -> &F {
        &self.lu
    }

    /// The marginals `w ⊙ G(X)` and (from [`ROW_GLUE_FROM`] words on)
    /// `G(X)` from the inverse, formed on first use and kept, `O(n²)` once
    /// ([`gradient_and_marginals`], or [`marginals_from_inverse`] below).
    fn mu_and_gradient(&self) -> Result<&MarginalsAndGradient<F::Scalar>, Numerical> {
        self.marginals
            .get_or_init(|| {
                let x = self.inverse()?;
                Ok(if x.rows() >= ROW_GLUE_FROM {
                    let (mu, g) = gradient_and_marginals(&self.weights, x, self.rooting);
                    (mu, Some(g))
                } else {
                    (marginals_from_inverse(&self.weights, x, self.rooting), None)
                })
            })
            .as_ref()
            .map_err(|&e| e)
    }

    /// The marginals `w ⊙ G(X)` from the inverse, formed on first use and
    /// kept, `O(n²)` once.
    fn mu(&self) -> Result<&Matrix<F::Scalar>, Numerical> {
        self.mu_and_gradient().map(|(mu, _)| mu)
    }

    /// `G(X)` in the layout of the weights, formed with the marginals from
    /// [`ROW_GLUE_FROM`] words on (`None` below).
    fn gradient(&self) -> Result<Option<&Matrix<F::Scalar>>, Numerical> {
        self.mu_and_gradient().map(|(_, g)| g.as_ref())
    }

    /// [`Factorization::ln_det_error`] of the factorisation, computed on
    /// first use and kept, `O(n²)` once.
    pub fn ln_det_error(&self) -> f64 {
        *self.ln_det_error.get_or_init(|| self.lu.ln_det_error())
    }
}

/// The weights, the inverse, the marginals and `G(X)` go back to this
/// thread's spares ([`Spare`]; `f64` only), for the next sentence's.
impl<F: Factorization> Drop for Dense<F> {
    fn drop(&mut self) {
        give_back(std::mem::replace(&mut self.weights, Matrix::zeros(0, 0)));
        if let Some(Ok(x)) = self.inverse.take() {
            give_back(x);
        }
        if let Some(Ok((mu, g))) = self.marginals.take() {
            give_back(mu);
            if let Some(g) = g {
                give_back(g);
            }
        }
    }
}

impl<F: Factorization<Scalar = f64>> Dense<F> {
    /// These factors, checking every vector–Jacobian product by
    /// [`VjpAccuracy`] (`O(n²)` per product, compared by the model with the
    /// gradient it returns): a product estimated below
    /// [`DERIVATIVE_BITS`](super::DERIVATIVE_BITS) norm-wise is refused
    /// ([`Inaccuracy::SmallDerivative`]); the estimate there is
    /// [`VjpAccuracy`] without the single-root floor of
    /// [`SINGLE_ROOT_LARGEST_FACTOR`](super::SINGLE_ROOT_LARGEST_FACTOR),
    /// which refuses accurate gradients of small ordinary graphs.
    ///
    /// Single-root, a product that this check accepts but whose estimate,
    /// its error raised to [`SINGLE_ROOT_RESIDUAL_FACTOR`](super::SINGLE_ROOT_RESIDUAL_FACTOR)
    /// times the residual of the product's identities, keeps fewer than
    /// [`DERIVATIVE_BITS`](super::DERIVATIVE_BITS) +
    /// [`CERTIFY_DERIVATIVE_MARGIN`](super::CERTIFY_DERIVATIVE_MARGIN) (the
    /// zone of the dense products that kept 40.6–44.9 bits in the calibration
    /// sweep while the plain estimate accepted them) is
    /// *escalated*: computed again by the
    /// cancellation-free elimination ([`Eliminated`], as
    /// [`Certified`](super::Certified) does; its marginal pass `≈ 1.3 n³`
    /// once per factors, and `≈ 4.5 n³` per product), returned with the
    /// elimination's own running estimate for the model's check (or its
    /// refusal, [`Inaccuracy::EliminationCancellation`]). The
    /// margin is `Certified`'s, and an escalation costs time, not a
    /// refusal. Accuracy and how often it escalates (the calibration sweep,
    /// `cargo run --profile test -p spantree-faer --example vjp_calibration
    /// 3 4 5 6 8 36`; `N(0, 2²)` graphs; the UD corpus): see
    /// [`SINGLE_ROOT_RESIDUAL_FACTOR`](super::SINGLE_ROOT_RESIDUAL_FACTOR)
    /// (no product returned below 45 bits; the largest-arc floor it
    /// replaced, [`SINGLE_ROOT_LARGEST_FACTOR`](super::SINGLE_ROOT_LARGEST_FACTOR),
    /// escalated 1,921 of the corpus's 6,025 sentences on these engines,
    /// nearly all of which kept 48 bits, and let one product through at
    /// 44.7 bits). The decision is `derivative_check::dense_route`.
    ///
    /// Only for `f64` factorisations (the elimination runs on `f64`
    /// weights); exact and high-precision factorisations need no check.
    #[must_use]
    pub fn with_derivative_check(mut self) -> Self {
        self.check_derivatives = true;
        self.escalate = Some(Self::eliminated_vjp);
        self
    }

    /// The product of `seed` by the elimination of these weights (formed
    /// once) and its own estimate ([`Eliminated`]'s running error
    /// estimate). `ln Z` is the dense LU's, which the model has checked
    /// before any derivative (the elimination's products do not read it).
    fn eliminated_vjp(&self, seed: &Matrix<f64>) -> Result<(Matrix<f64>, VjpAccuracy), Numerical> {
        self.escalation
            .get_or_init(|| {
                let (_, log_z) = self.lu.ln_abs_det();
                Box::new(Eliminated::with_log_partition(
                    self.weights.clone(),
                    self.rooting,
                    PartialPivLu::new,
                    log_z,
                    None,
                ))
            })
            .certified_vjp(seed)
    }
}

impl<F: Factorization> Factors for Dense<F> {
    type Scalar = F::Scalar;

    fn weights(&self) -> &Matrix<F::Scalar> {
        &self.weights
    }

    fn rooting(&self) -> Rooting {
        self.rooting
    }

    fn zero_pivot(&self) -> Option<usize> {
        self.lu.zero_pivot()
    }

    fn det(&self) -> F::Scalar {
        self.lu.det()
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        self.lu.ln_abs_det()
    }

    fn inverse(&self) -> Result<&Matrix<F::Scalar>, Numerical> {
        self.inverse
            .get_or_init(|| self.lu.inverse())
            .as_ref()
            .map_err(|&e| e)
    }

    /// The marginals `w ⊙ G(X)` from the inverse, formed once per factors.
    fn marginals(&self) -> Result<Matrix<F::Scalar>, Numerical> {
        self.mu().cloned()
    }

    /// The marginals kept by these factors, borrowed.
    fn marginals_kept(&self) -> Result<std::borrow::Cow<'_, Matrix<F::Scalar>>, Numerical> {
        self.mu().map(std::borrow::Cow::Borrowed)
    }

    fn solve(&self, rhs: &mut Matrix<F::Scalar>) -> Result<(), Numerical> {
        self.lu.solve(rhs)
    }

    fn solve_transpose(&self, rhs: &mut Matrix<F::Scalar>) -> Result<(), Numerical> {
        self.lu.solve_transpose(rhs)
    }

    fn adjugate(&self) -> Matrix<F::Scalar> {
        self.lu.adjugate()
    }

    /// `v_f = w_f (ḡ_f G_f(X) − G_f(X Cᵀ X))` with `Cᵀ` built transposed
    /// ([`Model::marginals_vjp`](crate::Model::marginals_vjp)): `(X Cᵀ X)ᵀ`
    /// by [`Factorization::inverse_sandwich_transposed`] (one solve with `n`
    /// right-hand sides and one product, both in place of `Cᵀ` on the plain
    /// kernel, then transposed in place), and the `O(n²)` glue
    /// `product_glue` reading it, `G(X)` (formed once per factors) and the
    /// seed along rows, each row of `v` written once. Below
    /// `ROW_GLUE_FROM` words, `X Cᵀ X` and the column-wise `vjp_glue`
    /// (the same bits). `O(n³)`.
    ///
    /// The seed is first centred per word: `ḡ'_hm = ḡ_hm − c_m` on every
    /// allowed arc into `m`, with `c_m = Σ_h μ_hm ḡ_hm` (the
    /// marginal-weighted mean of the column, `μ` from `X`) where that lowers
    /// the column's largest `|ḡ|` (else `c_m = 0`: the estimate
    /// [`VjpAccuracy`] grows with it), or the common
    /// value when the column's seeds are all equal (`O(n²)`).
    ///
    /// Why it changes no product: every tree gives word `m` exactly one head,
    /// so `Σ_h μ_hm = 1` on every graph (both rootings), and
    /// `Σ_h ∂μ_hm/∂θ_f = 0` for every arc `f`. The product is linear in the
    /// seed, `v_f = Σ_e ḡ_e ∂μ_e/∂θ_f`, so adding `c_m` to every seed of
    /// column `m` adds `c_m Σ_h ∂μ_hm/∂θ_f = 0`: any constant per column, in
    /// particular one computed from rounded marginals, leaves `v` unchanged
    /// in exact arithmetic. In floating point it shrinks what the product
    /// cancels: the dense product forms `v_f` as a difference of parts of
    /// size `|ḡ| μ`, so a seed that is large but nearly constant within a
    /// column (an entropy seed `−θ` when a column's scores sit far from zero)
    /// loses bits that the centred seed does not, and a seed constant per
    /// column (a gradient that is exactly zero) gives exactly zero, where the
    /// uncentred product gave rounding noise that no relative test can pass.
    /// Only the rounding of `ḡ_hm − c_m` itself (relative to the result) is
    /// added, which the estimate [`VjpAccuracy`] covers with `s = max |ḡ'|`.
    fn marginals_vjp(&self, seed: &Matrix<F::Scalar>) -> Result<Matrix<F::Scalar>, Numerical> {
        let (v, centred) = self.product(seed)?;
        let (x, w, rooting) = (self.inverse()?, &self.weights, self.rooting);
        let Some(escalate) = self.escalate.filter(|_| rooting == Rooting::Single) else {
            if self.check_derivatives {
                self.keep(seed, centred, None);
            }
            return Ok(v);
        };
        // Where only the residuals doubt the product it goes to the
        // elimination as on `Certified`; below the check it is returned for
        // the model to refuse (`dense_route`).
        let product = DenseProduct {
            centred: &centred,
            weights: w,
            x,
            mu: self.mu()?,
            v: &v,
            rooting,
        };
        let route = dense_route(&product, true);
        let (v, accuracy) = match route {
            DenseRoute::Dense(accuracy) => (v, accuracy),
            DenseRoute::Elimination => escalate(self, seed)?,
        };
        self.keep(seed, centred, Some(accuracy));
        Ok(v)
    }

    /// [`VjpAccuracy::of`](super::VjpAccuracy::of) with the inverse, without
    /// the single-root floor, with [`Dense::with_derivative_check`] only;
    /// for a product escalated to the elimination, the elimination's own
    /// estimate.
    fn vjp_accuracy(&self, seed: &Matrix<F::Scalar>, v: &Matrix<F::Scalar>) -> Option<VjpAccuracy> {
        if !self.check_derivatives {
            return None;
        }
        let last = self.last_of(seed);
        if let Some(accuracy) = last.as_ref().and_then(|l| l.accuracy) {
            return Some(accuracy);
        }
        let (x, mu) = (self.inverse().ok()?, self.mu().ok()?);
        let centred = match last {
            Some(last) => last.centred,
            None => centred_with(seed, &self.weights, mu, self.rooting),
        };
        let product = DenseProduct {
            centred: &centred,
            weights: &self.weights,
            x,
            mu,
            v,
            rooting: self.rooting,
        };
        Some(live_accuracy(None, &product))
    }

    /// [`Factorization::ln_det_error`] against `tolerance`; the error names
    /// a diagonal that lost a weight ([`Inaccuracy::LostWeight`]) when there
    /// is one, pivot cancellation otherwise.
    fn check_accuracy(&self, tolerance: f64) -> Result<(), Numerical> {
        let error = self.ln_det_error();
        if error <= tolerance {
            return Ok(());
        }
        let (_, ln) = self.lu.ln_abs_det();
        let relative = error / ln.abs().max(1.0);
        let bits = if relative.is_nan() {
            0
        } else {
            (-relative.log2()).clamp(0.0, 53.0) as u32
        };
        let cause = lost_weight(&self.weights, self.rooting)
            .map_or(Inaccuracy::Cancellation, |word| Inaccuracy::LostWeight {
                word,
            });
        Err(Numerical::Inaccurate { cause, bits })
    }
}

/// Whether two matrices are equal entry by entry (`==`, so a NaN equals
/// nothing), without stopping at the first difference: a branch-free
/// sweep the compiler vectorises for `f64` (the seeds of one product are
/// equal, so an early exit saves nothing). `O(n²)`.
fn same_entries<S: Scalar>(a: &Matrix<S>, b: &Matrix<S>) -> bool {
    if let (Some(a), Some(b)) = (as_f64(a), as_f64(b)) {
        return a.rows() == b.rows()
            && a.cols() == b.cols()
            && Arch::new().dispatch(Narrow(SameEntries {
                a: a.as_slice(),
                b: b.as_slice(),
            }));
    }
    a.rows() == b.rows()
        && a.cols() == b.cols()
        && a.as_slice()
            .iter()
            .zip(b.as_slice())
            .fold(true, |same, (x, y)| same & (x == y))
}

/// [`same_entries`] on `f64` slices of one length in whole vectors under
/// one instruction-set dispatch: the lanes' inequalities `or`ed (a NaN
/// equals nothing), the last vector moved back over entries already
/// compared. Fewer entries than lanes take the scalar instruction set.
/// `O(n²)`.
#[derive(Clone, Copy)]
struct SameEntries<'a> {
    a: &'a [f64],
    b: &'a [f64],
}

impl ColumnBody for SameEntries<'_> {
    type Output = bool;

    fn columns(&self) -> usize {
        self.a.len()
    }

    /// The body of [`SameEntries`] under `simd`, whose lanes the slices
    /// cover.
    #[inline(always)]
    fn body<Sm: Simd>(self, simd: Sm) -> bool {
        let SameEntries { a, b } = self;
        if a.len() != b.len() {
            return false;
        }
        let lanes = Sm::F64_LANES;
        let zero = simd.splat_f64s(0.0);
        let all = simd.equal_f64s(zero, zero);
        let mut differ = simd.xor_m64s(all, all);
        for at in column_blocks(a.len(), lanes) {
            let equal = simd.equal_f64s(load_lanes(simd, a, at), load_lanes(simd, b, at));
            differ = simd.or_m64s(differ, simd.xor_m64s(equal, all));
        }
        simd.first_true_m64s(differ) >= lanes
    }
}

/// The first word whose Laplacian diagonal (`ρ_m + Σ_h A[h][m]` multi-root,
/// `Σ_h A[h][m]` single-root) adds a positive weight below `2⁻²⁶` of the
/// sum, i.e. keeps less than half of its bits. `O(n²)`.
fn lost_weight<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> Option<usize> {
    let n1 = weights.rows();
    let first = match rooting {
        Rooting::Multi => 0,
        Rooting::Single => 1,
    };
    (1..n1).find(|&m| {
        let column = (first..n1)
            .filter(|&h| h != m)
            .map(|h| weights[(h, m)].to_f64().abs());
        let (sum, smallest) = column
            .filter(|&w| w > 0.0)
            .fold((0.0, f64::INFINITY), |(s, lo), w| (s + w, lo.min(w)));
        smallest < sum * f64::EPSILON.sqrt()
    })
}

/// `Cᵀ = Σ_e ḡ_e w_e (∂L/∂w_e)ᵀ`, `n × n`: arc `h → m` adds `ḡ w` to
/// `(m−1, m−1)` and subtracts it at `(h−1, m−1)` (single-root: root arcs
/// enter row `0`, word arcs neither row `0` nor `(0, 0)`;
/// `laplacian::arc_entries`). Row by row, each row of `Cᵀ` written once
/// from one row of the seed (no zero-filled matrix first), branch-free (an
/// arc of seed or weight zero adds an exact zero, as if skipped), with the
/// diagonal summed apart in the order of
/// `laplacian::weighted_adjoint_transposed`: the same sums, bit for bit.
/// `O(n²)`. On `f64`, [`AdjointRows`] (the same bits in whole vectors).
fn weighted_adjoint<S: Scalar>(seed: &Matrix<S>, w: &Matrix<S>, rooting: Rooting) -> Matrix<S> {
    if let (Some(seed), Some(w)) = (as_f64(seed), as_f64(w)) {
        let single = rooting == Rooting::Single;
        let n = w.rows() - 1;
        let c = Arch::new().dispatch(Narrow(AdjointRows { seed, w, single }));
        if let Some(c) = from_f64(Matrix::from_row_major(n, n, c)) {
            return c;
        }
    }
    weighted_adjoint_generic(seed, w, rooting)
}

/// [`weighted_adjoint`] entry by entry on any scalar: its definition.
/// `O(n²)`.
fn weighted_adjoint_generic<S: Scalar>(
    seed: &Matrix<S>,
    w: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    let n1 = w.rows();
    let n = n1 - 1;
    let single = rooting == Rooting::Single;
    let mut c = Vec::with_capacity(n * n);
    let mut diagonal = vec![S::zero(); n];
    let product = |s: &S, wk: &S| {
        if s.is_zero() || wk.is_zero() {
            S::zero()
        } else {
            s.clone() * wk.clone()
        }
    };
    // The rows of `Cᵀ` come in the order of `h`: row `h − 1` from seed row
    // `h` (single-root, row `0` from the root's row `h = 0`, and word `1`'s
    // row `h = 1` adds to the diagonal only).
    for (h, (sr, wr)) in seed
        .as_slice()
        .chunks_exact(n1)
        .zip(w.as_slice().chunks_exact(n1))
        .enumerate()
    {
        // The diagonal weight `w[h][h]` is zero: it adds nothing.
        let (sr, wr) = (&sr[1..], &wr[1..]);
        if h == 0 {
            if single {
                c.extend(sr.iter().zip(wr).map(|(s, wk)| S::zero() + product(s, wk)));
            } else {
                for ((d, s), wk) in diagonal.iter_mut().zip(sr).zip(wr) {
                    *d += &product(s, wk);
                }
            }
            continue;
        }
        let first = usize::from(single);
        for ((d, s), wk) in diagonal.iter_mut().zip(sr).zip(wr).skip(first) {
            *d += &product(s, wk);
        }
        if !single || h != 1 {
            c.extend(sr.iter().zip(wr).map(|(s, wk)| S::zero() - product(s, wk)));
        }
    }
    for (j, d) in diagonal.into_iter().enumerate() {
        if !(single && j == 0) {
            c[j * n + j] = d;
        }
    }
    Matrix::from_row_major(n, n, c)
}

/// `v_e = w_e (ḡ_e G_e(X) − G_e(Y))` for every arc, `G_e(M) = Σ σ M[j][i]`
/// over the entries `(i, j, σ)` arc `e` enters (`laplacian::arc_entries`,
/// written out: the same additions in the same order), column by column so
/// that `X` and `Y = X Cᵀ X` are read along their rows; without a seed
/// `ḡ = 1` is not multiplied, without `Y` nothing is subtracted (the
/// marginals `w_e G_e(X)`). `O(n²)`.
/// On `f64`, [`ColumnGlue`] (the same bits, no per-arc options).
fn vjp_glue<S: Scalar>(
    seed: Option<&Matrix<S>>,
    w: &Matrix<S>,
    x: &Matrix<S>,
    y: Option<&Matrix<S>>,
    rooting: Rooting,
) -> Matrix<S> {
    if let (Some(w), Some(x)) = (as_f64(w), as_f64(x)) {
        // `S` is `f64`: a seed or `Y` that is there is too.
        let n1 = w.rows();
        let v = Arch::new().dispatch(ColumnGlue {
            seed: seed.and_then(as_f64).map(Matrix::as_slice),
            w: w.as_slice(),
            x: x.as_slice(),
            y: y.and_then(as_f64).map(Matrix::as_slice),
            n1,
            single: rooting == Rooting::Single,
        });
        if let Some(v) = from_f64(Matrix::from_row_major(n1, n1, v)) {
            return v;
        }
    }
    vjp_glue_generic(seed, w, x, y, rooting)
}

/// [`vjp_glue`] entry by entry on any scalar: its definition. `O(n²)`.
fn vjp_glue_generic<S: Scalar>(
    seed: Option<&Matrix<S>>,
    w: &Matrix<S>,
    x: &Matrix<S>,
    y: Option<&Matrix<S>>,
    rooting: Rooting,
) -> Matrix<S> {
    // Each case its own loops: no test of the options per arc in the two
    // that are used (the product, and the marginals).
    match (seed, y) {
        (Some(seed), Some(y)) => glue(Some(seed), w, x, Some(y), rooting),
        (None, None) => glue(None, w, x, None, rooting),
        (seed, y) => glue(seed, w, x, y, rooting),
    }
}

/// [`vjp_glue`] on `f64` row-major slices (`w`, the seed and `v`:
/// `(n + 1)²`; `X`, `Y`: `n²`), the same operations on every arc in the
/// same order (so the same bits), column by column of `v` as
/// [`vjp_glue_generic`]: each column's reads of its row of `X` and `Y`
/// held in registers, then the word arcs `h → m` down the column in one
/// branch-free loop along the rows of `X` and `Y` (`0` where `w = 0`; the
/// diagonal arc `m → m` computed with the others and set back to zero
/// after). Each case of the options its own loops (const parameters): no
/// test per arc. Returns `v` row-major. `O(n²)`.
#[derive(Clone, Copy)]
struct ColumnGlue<'a> {
    seed: Option<&'a [f64]>,
    w: &'a [f64],
    x: &'a [f64],
    y: Option<&'a [f64]>,
    n1: usize,
    single: bool,
}

impl WithSimd for ColumnGlue<'_> {
    type Output = Vec<f64>;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, _simd: Sm) -> Vec<f64> {
        // An absent seed or `Y` is never read: any slice of its size
        // stands in for it.
        let (s, y) = (self.seed.unwrap_or(self.w), self.y.unwrap_or(self.x));
        match (self.seed.is_some(), self.y.is_some()) {
            (true, true) => self.columns::<true, true>(s, y),
            (false, false) => self.columns::<false, false>(s, y),
            (true, false) => self.columns::<true, false>(s, y),
            (false, true) => self.columns::<false, true>(s, y),
        }
    }
}

impl ColumnGlue<'_> {
    /// [`ColumnGlue`]'s loops with the seed `ss` read if `SEEDED` and `Y`
    /// (`ys`) if `WITH_Y`.
    #[inline(always)]
    fn columns<const SEEDED: bool, const WITH_Y: bool>(self, ss: &[f64], ys: &[f64]) -> Vec<f64> {
        let ColumnGlue {
            w, x, n1, single, ..
        } = self;
        let n = n1 - 1;
        let cells = n1 * n1;
        let mut v = vec![0.0; cells];
        if n == 0 {
            return v;
        }
        // Slices of one length: one bounds check per arc serves the three.
        let vs = &mut v[..cells];
        let (ss, ws) = (&ss[..cells], &w[..cells]);
        let (xs, ys) = (&x[..n * n], &ys[..n * n]);
        // `w (ḡ gx − gy)`, `0` where `w = 0`.
        let arc = |s: f64, gx: f64, gy: f64, wk: f64| {
            let d = if SEEDED { s * gx } else { gx };
            let d = if WITH_Y { d - gy } else { d };
            let a = d * wk;
            if wk == 0.0 {
                0.0
            } else {
                a
            }
        };
        let first = if single { 2 } else { 1 };
        for m in 1..n1 {
            let j = m - 1;
            let (xr, yr) = (&xs[j * n..][..n], &ys[j * n..][..n]);
            // The root arc reads one entry: (0, j) single-root, (j, j) multi.
            let r = if single { 0 } else { j };
            vs[m] = arc(ss[m], 0.0 + xr[r], 0.0 + yr[r], ws[m]);
            // Word arcs h → m read (j, j), unless single-root and j = 0,
            // minus (j, h − 1), unless single-root and h = 1.
            let (dx, dy) = if single && j == 0 {
                (0.0, 0.0)
            } else {
                (0.0 + xr[j], 0.0 + yr[j])
            };
            if single && m != 1 {
                vs[n1 + m] = arc(ss[n1 + m], dx, dy, ws[n1 + m]);
            }
            let mut k = first * n1 + m;
            for (&xt, &yt) in xr[first - 1..].iter().zip(&yr[first - 1..]) {
                vs[k] = arc(ss[k], dx - xt, dy - yt, ws[k]);
                k += n1;
            }
            // No arc from a word to itself.
            vs[m * n1 + m] = 0.0;
        }
        v
    }
}

/// The body of [`vjp_glue_generic`], inlined into each of its cases.
#[inline(always)]
fn glue<S: Scalar>(
    seed: Option<&Matrix<S>>,
    w: &Matrix<S>,
    x: &Matrix<S>,
    y: Option<&Matrix<S>>,
    rooting: Rooting,
) -> Matrix<S> {
    let n1 = w.rows();
    let n = n1 - 1;
    let single = rooting == Rooting::Single;
    let mut v = Matrix::zeros(n1, n1);
    let (vs, ss, ws) = (v.as_mut_slice(), seed.map(Matrix::as_slice), w.as_slice());
    let arc = |gx: S, gy: Option<S>, k: usize| -> S {
        let wk = &ws[k];
        if wk.is_zero() {
            return S::zero();
        }
        let mut d = match ss {
            Some(ss) => ss[k].clone() * gx,
            None => gx,
        };
        if let Some(gy) = gy {
            d -= &gy;
        }
        d * wk.clone()
    };
    for m in 1..n1 {
        let j = m - 1;
        let xr = &x.as_slice()[j * n..(j + 1) * n];
        let yr = y.map(|y| &y.as_slice()[j * n..(j + 1) * n]);
        // The root arc reads one entry: (0, j) single-root, (j, j) multi.
        let r = if single { 0 } else { j };
        let once = |row: &[S]| S::zero() + row[r].clone();
        vs[m] = arc(once(xr), yr.map(once), m);
        // Word arcs h → m read (j, j), unless single-root and j = 0, minus
        // (j, h − 1), unless single-root and h = 1.
        let diagonal = |row: &[S]| {
            if single && j == 0 {
                S::zero()
            } else {
                S::zero() + row[j].clone()
            }
        };
        let (dx, dy) = (diagonal(xr), yr.map(diagonal));
        let mut first = 1;
        if single {
            if m != 1 {
                vs[n1 + m] = arc(dx.clone(), dy.clone(), n1 + m);
            }
            first = 2;
        }
        for h in (first..n1).filter(|&h| h != m) {
            let k = h * n1 + m;
            let gy = match (&dy, yr) {
                (Some(dy), Some(yr)) => Some(dy.clone() - yr[h - 1].clone()),
                _ => None,
            };
            vs[k] = arc(dx.clone() - xr[h - 1].clone(), gy, k);
        }
    }
    v
}

/// What the arcs into word `m = j + 1` read of `M` besides `M[j][h − 1]`,
/// indexed by `m` (entry `0` unused, zero), one after the other in one
/// vector of `2(n + 1)`: the root arc's entries, `(0, j)` single-root
/// (`M[j][0]`), `(j, j)` multi; then the word arcs' diagonal `(j, j)`, none (zero)
/// single-root into word `1`. Each as `0 + M[·][·]`, as the sums of
/// `arc_entries` start (and [`vjp_glue`]'s). From `M` itself, or from
/// `Mᵀ` when `transposed`. Into `reads` (emptied first: the `f64` bodies
/// pass this thread's scratch, [`Scratch`]). `O(n)`.
fn word_reads<S: Scalar>(m: &Matrix<S>, single: bool, transposed: bool, reads: &mut Vec<S>) {
    let n = m.rows();
    let n1 = n + 1;
    let ms = m.as_slice();
    // Indexed writes into a zeroed vector of `2(n + 1)`: fewer instructions
    // than chained strided iterators.
    reads.clear();
    reads.resize(2 * n1, S::zero());
    let (root, diagonal) = reads.split_at_mut(n1);
    for j in 0..n {
        let d = &ms[j * n1];
        // `M[j][0]`: column `0` of `M`, row `0` of `Mᵀ`.
        let r = match (single, transposed) {
            (false, _) => d,
            (true, false) => &ms[j * n],
            (true, true) => &ms[j],
        };
        root[j + 1] = S::zero() + r.clone();
        if !(single && j == 0) {
            diagonal[j + 1] = S::zero() + d.clone();
        }
    }
}

/// `G(X)` in the layout of the weights and the marginals `μ = w ⊙ G(X)`
/// (an arc of weight zero gets an exact zero), in one pass row by row:
/// entry `(h, m)` of `G` is `G_e(X) = Σ σ X[j][i]` of arc `e = h → m`
/// (`laplacian::arc_entries`, written out as [`vjp_glue`] sums it: the same
/// bits, and the marginals those of [`marginals_from_inverse`]), `0` in
/// column `0`; its diagonal entries are never read, the marginals' are
/// zero. Row `h` reads column `h − 1` of `X` (strided reads; each row of
/// both results written once, no zero-filled matrix). `O(n²)`, once per
/// factors. On `f64`, [`GradientRows`] (the same bits in whole vectors).
fn gradient_and_marginals<S: Scalar>(
    w: &Matrix<S>,
    x: &Matrix<S>,
    rooting: Rooting,
) -> (Matrix<S>, Matrix<S>) {
    if let (Some(w), Some(x)) = (as_f64(w), as_f64(x)) {
        let single = rooting == Rooting::Single;
        let n1 = w.rows();
        let (mu, g) = Arch::new().dispatch(Narrow(GradientRows { w, x, single }));
        let (mu, g) = (
            Matrix::from_row_major(n1, n1, mu),
            Matrix::from_row_major(n1, n1, g),
        );
        if let (Some(mu), Some(g)) = (from_f64(mu), from_f64(g)) {
            return (mu, g);
        }
    }
    gradient_and_marginals_generic(w, x, rooting)
}

/// [`gradient_and_marginals`] entry by entry on any scalar: its definition.
/// `O(n²)`.
fn gradient_and_marginals_generic<S: Scalar>(
    w: &Matrix<S>,
    x: &Matrix<S>,
    rooting: Rooting,
) -> (Matrix<S>, Matrix<S>) {
    let n = x.rows();
    let n1 = n + 1;
    let single = rooting == Rooting::Single;
    let mut reads = Vec::new();
    word_reads(x, single, false, &mut reads);
    let (root, diagonal) = reads.split_at(n1);
    let mut g = Vec::with_capacity(n1 * n1);
    let mut mu = Vec::with_capacity(n1 * n1);
    let marginal = |gx: &S, wk: &S| {
        if wk.is_zero() {
            S::zero()
        } else {
            gx.clone() * wk.clone()
        }
    };
    for (h, wr) in w.as_slice().chunks_exact(n1).enumerate() {
        let start = g.len();
        match h {
            0 => g.extend_from_slice(root),
            1 if single => g.extend_from_slice(diagonal),
            _ => {
                g.push(S::zero());
                let column = x.as_slice()[h - 1..].iter().step_by(n);
                g.extend(
                    diagonal[1..]
                        .iter()
                        .zip(column)
                        .map(|(d, t)| d.clone() - t.clone()),
                );
            }
        }
        mu.push(S::zero());
        mu.extend(
            g[start + 1..]
                .iter()
                .zip(&wr[1..])
                .map(|(gx, wk)| marginal(gx, wk)),
        );
        if h > 0 {
            // No arc from a word to itself.
            mu[h * n1 + h] = S::zero();
        }
    }
    (
        Matrix::from_row_major(n1, n1, mu),
        Matrix::from_row_major(n1, n1, g),
    )
}

/// The product's glue `v_e = w_e (ḡ_e G_e(X) − G_e(Y))` of [`vjp_glue`]
/// (the same operations in the same order, so the same bits), row by row:
/// `gx = G(X)` in the layout of the weights ([`gradient_and_marginals`]),
/// and `yt = Yᵀ` (`Y = X Cᵀ X`), whose row `h − 1` holds the entries
/// `Y[j][h − 1]` that row `h` of `v` subtracts; the root arcs' and the
/// diagonal's entries of `Y` gathered once ([`word_reads`]). Every read and
/// write runs along a row; column `0` and the diagonal come out zero.
/// `O(n²)`, no zero-filled matrix. On `f64`, [`ProductRows`] (the same bits
/// in whole vectors).
fn product_glue<S: Scalar>(
    seed: &Matrix<S>,
    w: &Matrix<S>,
    gx: &Matrix<S>,
    yt: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    let f64s = (as_f64(seed), as_f64(w), as_f64(gx), as_f64(yt));
    if let (Some(seed), Some(w), Some(gx), Some(yt)) = f64s {
        let single = rooting == Rooting::Single;
        let n1 = w.rows();
        let v = Arch::new().dispatch(Narrow(ProductRows {
            seed,
            w,
            gx,
            yt,
            single,
        }));
        if let Some(v) = from_f64(Matrix::from_row_major(n1, n1, v)) {
            return v;
        }
    }
    product_glue_generic(seed, w, gx, yt, rooting)
}

/// [`product_glue`] entry by entry on any scalar: its definition. `O(n²)`.
fn product_glue_generic<S: Scalar>(
    seed: &Matrix<S>,
    w: &Matrix<S>,
    gx: &Matrix<S>,
    yt: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    let n1 = w.rows();
    let n = n1 - 1;
    let single = rooting == Rooting::Single;
    let mut reads = Vec::new();
    word_reads(yt, single, true, &mut reads);
    let (y_root, y_diagonal) = reads.split_at(n1);
    let arc = |s: &S, gx: &S, gy: S, wk: &S| {
        if wk.is_zero() {
            return S::zero();
        }
        let mut d = s.clone() * gx.clone();
        d -= &gy;
        d * wk.clone()
    };
    let mut v = Vec::with_capacity(n1 * n1);
    let rows = seed
        .as_slice()
        .chunks_exact(n1)
        .zip(w.as_slice().chunks_exact(n1))
        .zip(gx.as_slice().chunks_exact(n1));
    for (h, ((sr, wr), gr)) in rows.enumerate() {
        v.push(S::zero());
        let cells = sr[1..].iter().zip(&wr[1..]).zip(&gr[1..]);
        // The root's row reads the root arcs' entries; single-root, word
        // `1`'s row the diagonal only; every other row the diagonal minus
        // row `h − 1` of `Yᵀ`.
        let plain = match h {
            0 => Some(y_root),
            1 if single => Some(y_diagonal),
            _ => None,
        };
        if let Some(y) = plain {
            v.extend(
                cells
                    .zip(&y[1..])
                    .map(|(((s, wk), g), gy)| arc(s, g, gy.clone(), wk)),
            );
        } else {
            let ys = y_diagonal[1..]
                .iter()
                .zip(&yt.as_slice()[(h - 1) * n..h * n]);
            v.extend(
                cells
                    .zip(ys)
                    .map(|(((s, wk), g), (dy, ty))| arc(s, g, dy.clone() - ty.clone(), wk)),
            );
        }
        if h > 0 {
            // No arc from a word to itself.
            v[h * n1 + h] = S::zero();
        }
    }
    Matrix::from_row_major(n1, n1, v)
}

/// `x · w`, or `0` where `w = 0` (lane-wise): an arc of weight zero gets an
/// exact zero, as the scalar glue's branch gives it.
#[inline(always)]
fn weighted<Sm: Simd>(simd: Sm, x: Sm::f64s, w: Sm::f64s) -> Sm::f64s {
    let zero = simd.splat_f64s(0.0);
    simd.select_f64s(simd.equal_f64s(w, zero), zero, simd.mul_f64s(x, w))
}

/// `(s · g − gy) · w`, or `0` where `w = 0` (lane-wise): the product
/// glue's arc.
#[inline(always)]
fn arc<Sm: Simd>(simd: Sm, s: Sm::f64s, g: Sm::f64s, gy: Sm::f64s, w: Sm::f64s) -> Sm::f64s {
    weighted(simd, simd.sub_f64s(simd.mul_f64s(s, g), gy), w)
}

/// `s · w`, or `0` where `s = 0` or `w = 0` (lane-wise): an arc's term of
/// the weighted adjoint.
#[inline(always)]
fn product<Sm: Simd>(simd: Sm, s: Sm::f64s, w: Sm::f64s) -> Sm::f64s {
    let zero = simd.splat_f64s(0.0);
    let skip = simd.or_m64s(simd.equal_f64s(s, zero), simd.equal_f64s(w, zero));
    simd.select_f64s(skip, zero, simd.mul_f64s(s, w))
}

/// [`gradient_and_marginals`] on `f64`, the same operations on every entry
/// (so the same bits): `Xᵀ` gathered first, column by column of `X` (in
/// cache), then each row of `G(X)` (the diagonal reads minus a row of
/// `Xᵀ`) and of `μ` in whole vectors under one instruction-set dispatch,
/// over blocks of columns ([`column_blocks`]: the last moved back over
/// columns already written, which it writes again with the same values;
/// no masked load or store, which `pulp` makes a call). Fewer words than
/// lanes take the scalar instruction set. Returns `(μ, G(X))` row-major.
/// `O(n²)`.
#[derive(Clone, Copy)]
struct GradientRows<'a> {
    w: &'a Matrix<f64>,
    x: &'a Matrix<f64>,
    single: bool,
}

impl ColumnBody for GradientRows<'_> {
    type Output = (Vec<f64>, Vec<f64>);

    fn columns(&self) -> usize {
        self.x.rows()
    }

    /// The body of [`GradientRows`] under `simd`, whose lanes `n` covers.
    #[inline(always)]
    fn body<Sm: Simd>(self, simd: Sm) -> (Vec<f64>, Vec<f64>) {
        self.rows(simd, &mut Scratch::take())
    }
}

impl GradientRows<'_> {
    /// [`GradientRows`]'s body with the word reads in `reads` (this
    /// thread's scratch).
    #[inline(always)]
    fn rows<Sm: Simd>(self, simd: Sm, reads: &mut Vec<f64>) -> (Vec<f64>, Vec<f64>) {
        let GradientRows { w, x, single } = self;
        let n = x.rows();
        let n1 = n + 1;
        word_reads(x, single, false, reads);
        let (root, diagonal) = reads.split_at(n1);
        let (root, diagonal) = (&root[1..], &diagonal[1..]);
        // This thread's spares (their old entries overwritten: column `0`
        // set to zero below, every other entry by the blocks).
        let mut g = Spare::take(n1 * n1);
        let mut mu = Spare::take(n1 * n1);
        let rows = g
            .chunks_exact_mut(n1)
            .zip(mu.chunks_exact_mut(n1))
            .zip(w.as_slice().chunks_exact(n1));
        for (h, ((gr, ur), wr)) in rows.enumerate() {
            // Column `0` is zero; the diagonal of `μ` is set after.
            (gr[0], ur[0]) = (0.0, 0.0);
            let (gr, ur, wr) = (&mut gr[1..], &mut ur[1..], &wr[1..]);
            let plain = match h {
                0 => Some(root),
                1 if single => Some(diagonal),
                _ => None,
            };
            if let Some(reads) = plain {
                for at in column_blocks(n, Sm::F64_LANES) {
                    let gx = load_lanes(simd, reads, at);
                    store_lanes(simd, gr, at, gx);
                    store_lanes(simd, ur, at, weighted(simd, gx, load_lanes(simd, wr, at)));
                }
            } else {
                // Column `h − 1` of `X`, gathered lane by lane into a
                // vector register.
                let column = &x.as_slice()[h - 1..];
                for at in column_blocks(n, Sm::F64_LANES) {
                    let mut t = simd.splat_f64s(0.0);
                    let lanes: &mut [f64] =
                        pulp::bytemuck::cast_slice_mut(std::slice::from_mut(&mut t));
                    for (i, lane) in lanes.iter_mut().enumerate() {
                        *lane = column[(at + i) * n];
                    }
                    let gx = simd.sub_f64s(load_lanes(simd, diagonal, at), t);
                    store_lanes(simd, gr, at, gx);
                    store_lanes(simd, ur, at, weighted(simd, gx, load_lanes(simd, wr, at)));
                }
            }
            if h > 0 {
                // No arc from a word to itself.
                ur[h - 1] = 0.0;
            }
        }
        (mu, g)
    }
}

/// [`product_glue`] on `f64`, the same operations on every entry (so the
/// same bits), each row in whole vectors under one instruction-set
/// dispatch, over blocks of columns as [`GradientRows`]: `v = w (ḡ gx − gy)`
/// (`0` where `w = 0`), `gy` the root arcs' or diagonal reads of `Y`, minus
/// row `h − 1` of `Yᵀ` in the rows that read it. Returns `v` row-major.
/// `O(n²)`.
#[derive(Clone, Copy)]
struct ProductRows<'a> {
    seed: &'a Matrix<f64>,
    w: &'a Matrix<f64>,
    gx: &'a Matrix<f64>,
    yt: &'a Matrix<f64>,
    single: bool,
}

impl ColumnBody for ProductRows<'_> {
    type Output = Vec<f64>;

    fn columns(&self) -> usize {
        self.yt.rows()
    }

    /// The body of [`ProductRows`] under `simd`, whose lanes `n` covers.
    #[inline(always)]
    fn body<Sm: Simd>(self, simd: Sm) -> Vec<f64> {
        self.rows(simd, &mut Scratch::take())
    }
}

impl ProductRows<'_> {
    /// [`ProductRows`]'s body with the word reads in `reads` (this
    /// thread's scratch).
    #[inline(always)]
    fn rows<Sm: Simd>(self, simd: Sm, reads: &mut Vec<f64>) -> Vec<f64> {
        let ProductRows {
            seed,
            w,
            gx,
            yt,
            single,
        } = self;
        let n = yt.rows();
        let n1 = n + 1;
        word_reads(yt, single, true, reads);
        let (y_root, y_diagonal) = reads.split_at(n1);
        let (y_root, y_diagonal) = (&y_root[1..], &y_diagonal[1..]);
        let mut v = vec![0.0; n1 * n1];
        let rows = v
            .chunks_exact_mut(n1)
            .zip(seed.as_slice().chunks_exact(n1))
            .zip(w.as_slice().chunks_exact(n1))
            .zip(gx.as_slice().chunks_exact(n1));
        for (h, (((vr, sr), wr), gr)) in rows.enumerate() {
            let (vr, sr, wr, gr) = (&mut vr[1..], &sr[1..], &wr[1..], &gr[1..]);
            let plain = match h {
                0 => Some(y_root),
                1 if single => Some(y_diagonal),
                _ => None,
            };
            if let Some(y) = plain {
                for at in column_blocks(n, Sm::F64_LANES) {
                    let gy = load_lanes(simd, y, at);
                    let a = arc(
                        simd,
                        load_lanes(simd, sr, at),
                        load_lanes(simd, gr, at),
                        gy,
                        load_lanes(simd, wr, at),
                    );
                    store_lanes(simd, vr, at, a);
                }
            } else {
                let t = &yt.as_slice()[(h - 1) * n..h * n];
                for at in column_blocks(n, Sm::F64_LANES) {
                    let gy =
                        simd.sub_f64s(load_lanes(simd, y_diagonal, at), load_lanes(simd, t, at));
                    let a = arc(
                        simd,
                        load_lanes(simd, sr, at),
                        load_lanes(simd, gr, at),
                        gy,
                        load_lanes(simd, wr, at),
                    );
                    store_lanes(simd, vr, at, a);
                }
            }
            if h > 0 {
                // No arc from a word to itself.
                vr[h - 1] = 0.0;
            }
        }
        v
    }
}

/// [`weighted_adjoint`] on `f64`, the same operations on every entry in
/// the same order (so the same bits), under one instruction-set dispatch:
/// block by block of columns ([`column_blocks`]), down the rows, the row's
/// products `ḡ w` (`0` where either is zero) into the block's diagonal
/// sums (in a vector register, in the order of `h`) and (negated, or plus
/// zero in the single-root row `0`) into their row of `Cᵀ`, the sums
/// into its diagonal once the block's rows are written (no vector of
/// them). A block moved back over columns already done computes them
/// again the same way. Fewer words than lanes take the scalar instruction
/// set. Returns `Cᵀ` row-major. `O(n²)`.
#[derive(Clone, Copy)]
struct AdjointRows<'a> {
    seed: &'a Matrix<f64>,
    w: &'a Matrix<f64>,
    single: bool,
}

impl ColumnBody for AdjointRows<'_> {
    type Output = Vec<f64>;

    fn columns(&self) -> usize {
        self.w.rows() - 1
    }

    /// The body of [`AdjointRows`] under `simd`, whose lanes `n` covers.
    #[inline(always)]
    fn body<Sm: Simd>(self, simd: Sm) -> Vec<f64> {
        let AdjointRows { seed, w, single } = self;
        let n1 = w.rows();
        let n = n1 - 1;
        let zero = simd.splat_f64s(0.0);
        // One of this thread's spares: every entry is written below.
        let mut c = Spare::take(n * n);
        let (ss, ws) = (seed.as_slice(), w.as_slice());
        for at in column_blocks(n, Sm::F64_LANES) {
            let mut sum = zero;
            // Multi-root, the root's row adds to the diagonal only;
            // single-root, it is row `0` of `Cᵀ`, and word `1`'s row adds
            // to the diagonal only. The diagonal weight `w[h][h]` is zero:
            // it adds nothing.
            let mut r = 0;
            for h in 0..n1 {
                let k = h * n1 + 1 + at;
                let p = product(simd, load_lanes(simd, ss, k), load_lanes(simd, ws, k));
                if single && h == 0 {
                    store_lanes(simd, &mut c, at, simd.add_f64s(zero, p));
                    r = 1;
                    continue;
                }
                sum = simd.add_f64s(sum, p);
                if h > 0 && !(single && h == 1) {
                    store_lanes(simd, &mut c, r * n + at, simd.sub_f64s(zero, p));
                    r += 1;
                }
            }
            // The block's diagonal sums over the entries its rows wrote
            // (a block moved back writes its earlier columns' again, with
            // the same sums).
            let sums: &[f64] = pulp::bytemuck::cast_slice(std::slice::from_ref(&sum));
            for (j, &d) in (at..).zip(sums) {
                if !(single && j == 0) {
                    c[j * n + j] = d;
                }
            }
        }
        c
    }
}

/// The least uncertainty `u` a word may keep for a derivative through the
/// dense inverse: `2⁻⁵`. A word's uncertainty is `Σ_h μ_hm − max_h μ_hm`,
/// the mass of every arc into `m` but the likeliest (single-root, the root's
/// row counts as a word too; multi-root, so does the number `R ≥ 1` of root
/// arcs, with `u = E[R] − 1`).
///
/// Why: a derivative through the marginals is a covariance,
/// `(J ḡ)_e = Cov(1_e, Σ_f ḡ_f 1_f)`. Where a word's likeliest arc has
/// probability `1 − u`, the entries that involve it are `O(u |ḡ|)`, but the
/// inverse forms them from `O(1)` parts with an absolute error of a few
/// `ε |ḡ|`: about `log₂(1/u)` bits are lost, whatever the estimate of
/// `ln det` says (measured before this test: uniform scores in `±50`,
/// `n = 3`, root scores `−10`, entries of `8e-29` returned as `4e-16`).
/// Measured against `HighPrecision<512>` over 2,500 graphs (`n = 3`–`12`,
/// `N(0, σ²)` and uniform scores, root shifts `0`–`−10`), the worst
/// norm-wise accuracy of the dense entropy gradient is 40.5 bits with
/// `u ≥ 2⁻⁵`, 35.8 with `u ≥ 2⁻⁸`, about 28 with `u ≥ 2⁻²⁰`, and 0 below
/// `2⁻³⁹`. `N(0, 2²)` scores pass at `n = 10`–`100` on 36–40 graphs in 40;
/// `N(0, 1)` always. The default engine ([`Certified`](super::Certified))
/// takes the elimination below it for single-root marginals (the
/// single-root Laplacian is no M-matrix, and its inverse's small entries
/// are only absolutely accurate: measured 0 bits on marginals near `1e-20`
/// that its entry-wise test passed). Derivatives no longer use this
/// per-word test: one nearly certain word does not hurt a gradient whose
/// norm other words carry (and a marginal that underflows gives `u = 0`).
/// They take the norm-wise estimate [`VjpAccuracy`]
/// instead, which names the word below this threshold when it refuses.
pub const DENSE_UNCERTAINTY: f64 = 0.031_25;

/// The first word (`0`: the root's row, or multi-root the number of root
/// arcs) whose uncertainty under `mu` ([`DENSE_UNCERTAINTY`]) is below
/// `threshold`, with that uncertainty; `None` if there is none. NaN counts
/// as nearly certain. `O(n²)`, one sweep along the rows of `mu` and
/// `weights` (each column's sum taken in the order of `h`).
pub(crate) fn nearly_certain_word<S: Scalar>(
    mu: &Matrix<f64>,
    weights: &Matrix<S>,
    rooting: Rooting,
    threshold: f64,
) -> Option<(usize, f64)> {
    let n1 = mu.rows();
    if n1 < 2 {
        return None;
    }
    // Per column over `h ≠ m`: the largest marginal, their sum, and the
    // number of allowed arcs (exact in `f64`), in three arrays swept side by
    // side under one instruction-set dispatch (branch-free, vectorised).
    let mut state = vec![0.0f64; 3 * n1];
    let (top, rest) = state.split_at_mut(n1);
    let (sum, allowed) = rest.split_at_mut(n1);
    Arch::new().dispatch(ColumnSweep {
        mu: mu.as_slice(),
        weights: weights.as_slice(),
        top: &mut *top,
        sum: &mut *sum,
        allowed: &mut *allowed,
    });
    nearly_certain_after_sweep([&*top, &*sum, &*allowed], mu, weights, rooting, threshold)
}

/// [`nearly_certain_word`] from its column sweep already taken: per column
/// `m` over the rows `h ≠ m` in order, the largest marginal (`0` to start,
/// `f64::max`), their sum (from `+0`) and the count of allowed arcs
/// (`[top, sum, allowed]`, each of `n + 1`; entry `0` unused), as
/// [`ColumnSweep`] forms them. `O(n)` for the words, `O(n)` for the root.
pub(crate) fn nearly_certain_after_sweep<S: Scalar>(
    [top, sum, allowed]: [&[f64]; 3],
    mu: &Matrix<f64>,
    weights: &Matrix<S>,
    rooting: Rooting,
    threshold: f64,
) -> Option<(usize, f64)> {
    let n1 = mu.rows();
    if n1 < 2 {
        return None;
    }
    // A word with one allowed head is certain by structure: its covariances
    // are exactly zero, not small differences.
    let low = |(u, allowed): (f64, usize)| allowed > 1 && (u.is_nan() || u < threshold);
    for m in 1..n1 {
        let line = (sum[m] - top[m], allowed[m] as usize);
        if low(line) {
            return Some((m, line.0));
        }
    }
    let (mu0, w0) = (&mu.row(0)[1..], &weights.row(0)[1..]);
    let roots = {
        let (mut top, mut sum) = (0.0f64, 0.0f64);
        for &x in mu0 {
            top = top.max(x);
            sum += x;
        }
        let allowed = w0.iter().filter(|w| !w.is_zero()).count();
        (sum - top, allowed)
    };
    let line = match rooting {
        Rooting::Single => roots,
        Rooting::Multi => {
            // E[R] − 1 without cancellation at 1: with t the likeliest root
            // arc's word, Σ_{m≠t} μ_0m − (1 − μ_0t), the latter the rest of
            // t's column.
            let t = (1..n1).fold(1, |t, m| if mu[(0, m)] > mu[(0, t)] { m } else { t });
            let others: f64 = (1..n1).filter(|&m| m != t).map(|m| mu[(0, m)]).sum();
            let rest: f64 = (1..n1).filter(|&h| h != t).map(|h| mu[(h, t)]).sum();
            (others - rest, roots.1)
        }
    };
    low(line).then_some((0, line.0))
}

/// The column sweep of [`nearly_certain_word`]: per column `m`, over the
/// rows `h ≠ m` in order, the largest marginal, their sum and the count of
/// allowed arcs. `O(n²)`.
struct ColumnSweep<'a, S> {
    mu: &'a [f64],
    weights: &'a [S],
    top: &'a mut [f64],
    sum: &'a mut [f64],
    allowed: &'a mut [f64],
}

impl<S: Scalar> WithSimd for ColumnSweep<'_, S> {
    type Output = ();

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, _simd: Sm) {
        let ColumnSweep {
            mu,
            weights,
            top,
            sum,
            allowed,
        } = self;
        let n1 = top.len();
        for (h, (ur, wr)) in mu
            .chunks_exact(n1)
            .zip(weights.chunks_exact(n1))
            .enumerate()
        {
            // Every column but the diagonal one, which adds `+0` (exact:
            // the sums start at `+0`, the largest at `0 ≤` every value it
            // keeps): one loop over the whole row, with no remainder loop
            // per side of `h`.
            let (ur, wr) = (&ur[..n1], &wr[..n1]);
            let (top, sum, allowed) = (&mut top[..n1], &mut sum[..n1], &mut allowed[..n1]);
            for m in 0..n1 {
                let off = m != h;
                let x = if off { ur[m] } else { 0.0 };
                top[m] = top[m].max(x);
                sum[m] += x;
                allowed[m] += if off & !wr[m].is_zero() { 1.0 } else { 0.0 };
            }
        }
    }
}

/// `μ = w ⊙ weight_gradient(X)`: the marginals from the inverse of the
/// Laplacian (Koo et al. 2007; `∂ ln Z / ∂w = weight_gradient(X)` by Jacobi's
/// formula), written out as [`vjp_glue`] without seed. `O(n²)`.
pub(crate) fn marginals_from_inverse<S: Scalar>(
    weights: &Matrix<S>,
    x: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    vjp_glue(None, weights, x, None, rooting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::laplacian::{read_entries, weight_gradient, weighted_adjoint_transposed};

    /// Deterministic entries in `[-1, 1]` (`sin` of distinct integers),
    /// about one in five exactly zero (forbidden arcs, zero seeds: the
    /// skipped cases).
    fn matrix(rows: usize, cols: usize, seed: u64) -> Matrix<f64> {
        Matrix::from_fn(rows, cols, |i, j| {
            let u = ((i * 131 + j * 17) as f64 + seed as f64 * 0.37).sin();
            if u < -0.6 {
                0.0
            } else {
                u
            }
        })
    }

    /// The definition of [`nearly_certain_word`] read column by column:
    /// each word's uncertainty `Σ_{h≠m} μ_hm − max(0, max_h μ_hm)` in the
    /// order of `h`, the root's line along row `0`.
    fn nearly_certain_by_columns(
        mu: &Matrix<f64>,
        w: &Matrix<f64>,
        rooting: Rooting,
        threshold: f64,
    ) -> Option<(usize, f64)> {
        let n1 = mu.rows();
        let spread = |cells: Vec<(f64, f64)>| {
            let top = cells.iter().fold(0.0f64, |t, &(x, _)| t.max(x));
            let sum = cells.iter().fold(0.0f64, |s, &(x, _)| s + x);
            let allowed = cells.iter().filter(|&&(_, w)| w != 0.0).count();
            (sum - top, allowed)
        };
        let low = |(u, a): (f64, usize)| a > 1 && (u.is_nan() || u < threshold);
        for m in 1..n1 {
            let line = spread(
                (0..n1)
                    .filter(|&h| h != m)
                    .map(|h| (mu[(h, m)], w[(h, m)]))
                    .collect(),
            );
            if low(line) {
                return Some((m, line.0));
            }
        }
        if n1 < 2 {
            return None;
        }
        let roots = spread((1..n1).map(|m| (mu[(0, m)], w[(0, m)])).collect());
        let line = match rooting {
            Rooting::Single => roots,
            Rooting::Multi => {
                let t = (1..n1).fold(1, |t, m| if mu[(0, m)] > mu[(0, t)] { m } else { t });
                let others: f64 = (1..n1).filter(|&m| m != t).map(|m| mu[(0, m)]).sum();
                let rest: f64 = (1..n1).filter(|&h| h != t).map(|h| mu[(h, t)]).sum();
                (others - rest, roots.1)
            }
        };
        low(line).then_some((0, line.0))
    }

    /// The row sweep decides as the column-wise definition, bit for bit in
    /// the uncertainty it names: marginals of columns normalised to 1 with
    /// one head pushed towards certainty, forbidden arcs, a NaN, a word
    /// with one allowed head, negative rounding noise.
    #[test]
    fn nearly_certain_word_is_its_column_definition() {
        // (words named, roots named, none) over the sweep: every outcome.
        let mut seen = [0usize; 3];
        for rooting in [Rooting::Multi, Rooting::Single] {
            for n in [1, 2, 3, 7, 12, 37] {
                for case in 0..8u64 {
                    let mut w = matrix(n + 1, n + 1, 7 + case * 13 + n as u64);
                    let raw = matrix(n + 1, n + 1, 3 + case * 5 + n as u64);
                    let mut mu = Matrix::from_fn(n + 1, n + 1, |h, m| {
                        if m == 0 || h == m || w[(h, m)] == 0.0 {
                            0.0
                        } else {
                            raw[(h, m)].abs() + 1e-3
                        }
                    });
                    for m in 1..=n {
                        let total: f64 = (0..=n).map(|h| mu[(h, m)]).sum();
                        let sharp = case != 7 && (case + m as u64) % 3 == 0;
                        for h in 0..=n {
                            mu[(h, m)] /= total.max(1e-300);
                            if sharp && h != (m + 1) % (n + 1) {
                                mu[(h, m)] *= 1e-3;
                            }
                        }
                    }
                    match case {
                        1 if n > 2 => mu[(1, 2)] = f64::NAN,
                        2 if n > 2 => mu[(2, 3)] = -1e-17,
                        3 if n > 1 => {
                            for h in 0..=n {
                                if h != 1 && h != 2 {
                                    w[(h, 2)] = 0.0;
                                    mu[(h, 2)] = 0.0;
                                }
                            }
                        }
                        // Words uncertain, the root row certain: one root
                        // arc carries it all.
                        7 => {
                            for m in 2..=n {
                                mu[(0, m)] = 0.0;
                            }
                        }
                        _ => {}
                    }
                    for threshold in [DENSE_UNCERTAINTY, 0.5] {
                        let got = nearly_certain_word(&mu, &w, rooting, threshold);
                        let expected = nearly_certain_by_columns(&mu, &w, rooting, threshold);
                        let bits = |r: Option<(usize, f64)>| r.map(|(m, u)| (m, u.to_bits()));
                        assert_eq!(bits(got), bits(expected), "{rooting:?} n = {n} case {case}");
                        seen[match got {
                            Some((0, _)) => 1,
                            Some(_) => 0,
                            None => 2,
                        }] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c > 0), "outcomes {seen:?}");
    }

    /// The elimination a single-root product escalates to
    /// ([`Dense::with_derivative_check`]) answers it without a dense
    /// factorisation of its own: `Dense` holds one already, and the
    /// product reads only the elimination's marginals and its run on dual
    /// numbers. (A structural check: no number asserted.)
    #[test]
    fn escalation_forms_no_second_dense_factorisation() {
        for n in [1, 3, 7] {
            let mut w = matrix(n + 1, n + 1, 7 + n as u64).map(|x| x.abs() + 0.25);
            for h in 0..=n {
                w[(h, 0)] = 0.0;
                w[(h, h)] = 0.0;
            }
            let dense = Dense::new(w, Rooting::Single, PartialPivLu::new).with_derivative_check();
            let seed = matrix(n + 1, n + 1, 13 + n as u64);
            dense.eliminated_vjp(&seed).expect("escalated product");
            let escalation = dense.escalation.get().expect("escalation formed");
            assert!(!escalation.dense_formed(), "n = {n}");
        }
    }

    /// `marginals_vjp_routed` (what `Certified` takes) is its definition:
    /// the product of [`Factors::marginals_vjp`], bit for bit, and
    /// [`dense_route`] (no refusal) of that product from the seed centred
    /// anew ([`centred_with`]) and the marginals; both rootings, on both
    /// sides of [`ROW_GLUE_FROM`] (column and row glue).
    #[test]
    fn routed_product_is_the_product_and_its_route() {
        for n in [1, 2, 5, 10, 11, 12, 13, 20] {
            for rooting in [Rooting::Single, Rooting::Multi] {
                let mut w = matrix(n + 1, n + 1, 3 + n as u64).map(|x| x.abs());
                for h in 0..=n {
                    w[(h, 0)] = 0.0;
                    w[(h, h)] = 0.0;
                }
                let seed = matrix(n + 1, n + 1, 29 + n as u64).map(|x| 40.0 * x + 3.0);
                let routed = Dense::new(w.clone(), rooting, PartialPivLu::new);
                let (v, route) = routed.marginals_vjp_routed(&seed).expect("routed product");
                let plain = Dense::new(w.clone(), rooting, PartialPivLu::new);
                let expected = plain.marginals_vjp(&seed).expect("product");
                assert_eq!(bits(v.as_slice()), bits(expected.as_slice()), "n = {n}");
                let (x, mu) = (plain.inverse().expect("X"), plain.mu().expect("μ"));
                let centred = centred_with(&seed, &w, mu, rooting);
                let product = DenseProduct {
                    centred: &centred,
                    weights: &w,
                    x,
                    mu,
                    v: &expected,
                    rooting,
                };
                assert_eq!(route, dense_route(&product, false), "n = {n} {rooting:?}");
            }
        }
    }

    /// The bits of a row-major matrix, for comparisons that tell `-0` from
    /// `+0` and see NaN.
    fn bits(m: &[f64]) -> Vec<u64> {
        m.iter().map(|x| x.to_bits()).collect()
    }

    /// The inputs of the glue tests at `n` words: weights, seed, `X` and
    /// `Y` drawn from `base`, and for `n > 2` the entries a skipped product
    /// must not hide (a zero seed under an infinite weight, a NaN seed and
    /// `Y` entry under a zero weight) and `−0` reads.
    fn glue_case(n: usize, base: u64) -> [Matrix<f64>; 4] {
        let n1 = n + 1;
        let mut w = matrix(n1, n1, base + n as u64);
        let mut seed = matrix(n1, n1, base + 2 + n as u64);
        let mut x = matrix(n, n, base + 4 + n as u64);
        let mut y = matrix(n, n, base + 6 + n as u64);
        if n > 2 {
            (w[(1, 2)], seed[(1, 2)]) = (f64::INFINITY, 0.0);
            (w[(2, 1)], seed[(2, 1)]) = (0.0, f64::NAN);
            (w[(0, 3)], seed[(0, 3)]) = (-0.0, 1.5);
            x[(1, 1)] = -0.0;
            x[(2, 0)] = -0.0;
            y[(2, 2)] = -0.0;
            y[(0, 1)] = f64::NAN;
        }
        [w, seed, x, y]
    }

    /// The `f64` glue in whole vectors ([`GradientRows`], [`ProductRows`],
    /// [`AdjointRows`]) against their definitions entry by entry
    /// ([`gradient_and_marginals_generic`], [`product_glue_generic`],
    /// [`weighted_adjoint_generic`]), bit for bit, under every instruction
    /// set (`testing::by_lanes`): sizes 1–40 (every tail of 2, 4 and 8
    /// lanes), both rootings, zero weights and seeds, `−0`, and entries
    /// where the skipped product would not be zero (an infinite weight
    /// under a zero seed, NaN under a zero weight); the bodies that write
    /// into this thread's spares ([`Spare`]) given spares full of NaN.
    #[test]
    fn f64_glue_is_its_definition_in_every_instruction_set() {
        use crate::testing::by_lanes;
        for rooting in [Rooting::Multi, Rooting::Single] {
            let single = rooting == Rooting::Single;
            for n in 1..=40 {
                let [mut w, seed, x, y] = glue_case(n, 3);
                for h in 0..=n {
                    w[(h, 0)] = 0.0;
                    w[(h, h)] = 0.0;
                }
                let label = format!("{rooting:?} n = {n}");
                let (mu, g) = gradient_and_marginals_generic(&w, &x, rooting);
                // Spares of NaN: every entry is written (`Spare`).
                crate::matrix::poison_spares(2000);
                for (fast_mu, fast_g) in by_lanes(Narrow(GradientRows {
                    w: &w,
                    x: &x,
                    single,
                })) {
                    assert_eq!(bits(&fast_mu), bits(mu.as_slice()), "{label} marginals");
                    assert_eq!(bits(&fast_g), bits(g.as_slice()), "{label} G(X)");
                }
                let yt = y.transpose();
                let v = product_glue_generic(&seed, &w, &g, &yt, rooting);
                let product = ProductRows {
                    seed: &seed,
                    w: &w,
                    gx: &g,
                    yt: &yt,
                    single,
                };
                for fast in by_lanes(Narrow(product)) {
                    assert_eq!(bits(&fast), bits(v.as_slice()), "{label} product");
                }
                let c = weighted_adjoint_generic(&seed, &w, rooting);
                let adjoint = AdjointRows {
                    seed: &seed,
                    w: &w,
                    single,
                };
                // Spares of NaN: every entry is written (`Spare`).
                crate::matrix::poison_spares(2000);
                for fast in by_lanes(Narrow(adjoint)) {
                    assert_eq!(bits(&fast), bits(c.as_slice()), "{label} adjoint");
                }
            }
        }
    }

    /// The column glue on `f64` ([`ColumnGlue`]) against its definition
    /// entry by entry ([`vjp_glue_generic`]), bit for bit, under every
    /// instruction set (`testing::by_lanes`): sizes 1–13 (both sides of
    /// [`ROW_GLUE_FROM`]), both rootings, every case of the options, zero
    /// weights and seeds, `−0`, entries where the skipped product would not
    /// be zero (an infinite weight under a zero seed, NaN under a zero
    /// weight), and weights on the diagonal and in column `0`, which no arc
    /// reads.
    #[test]
    fn f64_column_glue_is_its_definition_in_every_instruction_set() {
        use crate::testing::by_lanes;
        for rooting in [Rooting::Multi, Rooting::Single] {
            for n in 1..=13 {
                let n1 = n + 1;
                let [mut w, seed, mut x, y] = glue_case(n, 31);
                if n > 2 {
                    (w[(2, 2)], w[(3, 0)]) = (1.25, -2.5);
                    x[(0, 2)] = 0.0;
                }
                for (with_seed, with_y) in
                    [(true, true), (false, false), (true, false), (false, true)]
                {
                    let (s, yy) = (with_seed.then_some(&seed), with_y.then_some(&y));
                    let v = vjp_glue_generic(s, &w, &x, yy, rooting);
                    let glue = ColumnGlue {
                        seed: s.map(Matrix::as_slice),
                        w: w.as_slice(),
                        x: x.as_slice(),
                        y: yy.map(Matrix::as_slice),
                        n1,
                        single: rooting == Rooting::Single,
                    };
                    for fast in by_lanes(glue) {
                        assert_eq!(
                            bits(&fast),
                            bits(v.as_slice()),
                            "{rooting:?} n = {n} ({with_seed}, {with_y})"
                        );
                    }
                }
            }
        }
    }

    /// [`SameEntries`] against `==` entry by entry, under every instruction
    /// set: equal slices of every length 0–40, one entry changed (or NaN,
    /// or `−0` for `+0`, which are equal) at every position.
    #[test]
    fn same_entries_is_entry_by_entry_equality() {
        use crate::testing::by_lanes;
        for len in 0..=40usize {
            let a: Vec<f64> = (0..len).map(|i| (i as f64 * 0.7).sin()).collect();
            let mut cases = vec![(a.clone(), true)];
            for k in 0..len {
                for x in [a[k] + 1.0, f64::NAN] {
                    let mut b = a.clone();
                    b[k] = x;
                    cases.push((b, false));
                }
                let mut b = a.clone();
                b[k] = 0.0;
                let mut c = a.clone();
                c[k] = -0.0;
                cases.push((b.clone(), b == a));
                let same = b.iter().zip(&c).all(|(x, y)| x == y);
                for fast in by_lanes(Narrow(SameEntries { a: &b, b: &c })) {
                    assert_eq!(fast, same, "len {len}, ±0 at {k}");
                }
            }
            for (b, expected) in cases {
                for fast in by_lanes(Narrow(SameEntries { a: &a, b: &b })) {
                    assert_eq!(fast, expected, "len {len}");
                }
            }
        }
    }

    /// The written-out adjoint and glue against the per-arc definition
    /// through `arc_entries` (`weighted_adjoint_transposed`,
    /// `read_entries`): the same sums in the same order, so bit for bit.
    #[test]
    fn written_out_glue_is_the_per_arc_definition() {
        for rooting in [Rooting::Multi, Rooting::Single] {
            for n in [1, 2, 3, 7, 12] {
                let seed = matrix(n + 1, n + 1, 11 + n as u64);
                // Weights in their layout: column 0 and the diagonal zero.
                let mut w = matrix(n + 1, n + 1, 29 + n as u64);
                for h in 0..=n {
                    w[(h, 0)] = 0.0;
                    w[(h, h)] = 0.0;
                }
                let x = matrix(n, n, 41 + n as u64);
                let y = matrix(n, n, 53 + n as u64);
                // The per-arc definition, `w (ḡ gx − gy)` (without a seed
                // `ḡ = 1` is not multiplied, without `Y` nothing is
                // subtracted), zero off the arcs and where `w` is.
                let definition =
                    |w: &Matrix<f64>, h: usize, m: usize, seeded: bool, with_y: bool| {
                        if m == 0 || h == m || w[(h, m)] == 0.0 {
                            return 0.0;
                        }
                        let gx = read_entries(&x, rooting, h, m);
                        let mut d = if seeded { seed[(h, m)] * gx } else { gx };
                        if with_y {
                            d -= read_entries(&y, rooting, h, m);
                        }
                        d * w[(h, m)]
                    };
                let ct = weighted_adjoint(&seed, &w, rooting);
                assert_eq!(ct, weighted_adjoint_transposed(&seed, &w, rooting));
                let v = vjp_glue(Some(&seed), &w, &x, Some(&y), rooting);
                let (mu_rows, gx) = gradient_and_marginals(&w, &x, rooting);
                let rows = product_glue(&seed, &w, &gx, &y.transpose(), rooting);
                let mu = marginals_from_inverse(&w, &x, rooting);
                let mut expected_mu = weight_gradient(&x, rooting);
                for (e, wk) in expected_mu.as_mut_slice().iter_mut().zip(w.as_slice()) {
                    *e = if *wk == 0.0 { 0.0 } else { *e * wk };
                }
                for (a, b) in mu.as_slice().iter().zip(expected_mu.as_slice()) {
                    assert_eq!(a.to_bits(), b.to_bits(), "{rooting:?} n = {n} marginals");
                }
                for (a, b) in mu_rows.as_slice().iter().zip(mu.as_slice()) {
                    assert_eq!(
                        a.to_bits(),
                        b.to_bits(),
                        "{rooting:?} n = {n} marginals by rows"
                    );
                }
                // Column `0` and the diagonal: no arc.
                for h in 0..=n {
                    assert_eq!(rows[(h, 0)].to_bits(), 0, "{rooting:?} n = {n} column 0");
                    assert_eq!(rows[(h, h)].to_bits(), 0, "{rooting:?} n = {n} diagonal");
                }
                for h in 0..=n {
                    for m in (1..=n).filter(|&m| m != h) {
                        let expected = definition(&w, h, m, true, true);
                        assert_eq!(
                            v[(h, m)].to_bits(),
                            expected.to_bits(),
                            "{rooting:?} n = {n} arc {h} → {m}"
                        );
                        assert_eq!(
                            rows[(h, m)].to_bits(),
                            expected.to_bits(),
                            "{rooting:?} n = {n} arc {h} → {m}, row by row"
                        );
                    }
                }
                // Every case of the options, a weight of zero in each
                // column, against the definition.
                for (h, m) in (1..=n).map(|m| ((m + 1) % (n + 1), m)) {
                    w[(h, m)] = 0.0;
                }
                for (with_seed, with_y) in
                    [(true, true), (true, false), (false, true), (false, false)]
                {
                    let (s, yy) = (with_seed.then_some(&seed), with_y.then_some(&y));
                    let v = vjp_glue(s, &w, &x, yy, rooting);
                    for h in 0..=n {
                        for m in 0..=n {
                            let expected = definition(&w, h, m, with_seed, with_y);
                            assert_eq!(
                                v[(h, m)].to_bits(),
                                expected.to_bits(),
                                "{rooting:?} n = {n} ({with_seed}, {with_y}) arc {h} → {m}"
                            );
                        }
                    }
                }
            }
        }
    }
}
