//! The engine layer: how a [`Model`](crate::Model) turns a graph into
//! numbers.
//!
//! An [`Engine`] owns the whole pipeline *prepare the weights → factorise the
//! Laplacian → answer* (`ln Z`, marginals, solves, the vector–Jacobian
//! product of the marginals). The core ships the two ways to answer:
//!
//! * [`Dense`]: a dense factorisation of the Laplacian (any
//!   [`Factorization`]: faer's LU, exact Bareiss, MPFR or complex LU), with
//!   marginals from its inverse (Koo et al. 2007);
//! * [`Eliminated`]: the cancellation-free elimination of the graph weights
//!   ([`crate::elimination`]), with a dense factorisation on the side for
//!   what the elimination does not answer yet;
//! * [`Certified`]: a dense factorisation where its own `O(n²)` check
//!   certifies it, the elimination elsewhere (the default engine's).
//!
//! Preparation is the engine's own policy: an engine either takes the
//! weights as given ([`Prepared::as_given`], exact and unstabilised engines)
//! or divides every column by its largest weight ([`Prepared::shifted`], so
//! that `ln Z` never overflows). The model never sees which: it adds the
//! log-scale back where a quantity needs it.
//!
//! A new engine implements [`Engine`] in a few lines by choosing a
//! preparation and one of the two [`Factors`]; a new *kind* of answer (a
//! batched engine, say) implements [`Factors`].

mod certified;
mod dense;
pub(crate) mod derivative_check;
mod eliminated;
mod prepared;

pub use certified::{
    Certified, CERTIFY_LN_DET, CERTIFY_MARGINAL_BITS, REFINE_COLUMNS_UP_TO, REPAIR_COLUMNS_UP_TO,
};
pub use dense::{Dense, DENSE_UNCERTAINTY};
pub use derivative_check::{
    VjpAccuracy, CERTIFY_DERIVATIVE_MARGIN, DERIVATIVE_BITS, SINGLE_ROOT_LARGEST_FACTOR,
    SINGLE_ROOT_RESIDUAL_FACTOR, VJP_ERROR_FACTOR,
};
pub use eliminated::{Eliminated, EntryEstimate, WithTangent, ENTRY_BITS};
pub use prepared::{PerLabel, Prepared};

use crate::error::{Numerical, Result};
use crate::graph::{Graph, Rooting};
use crate::matrix::Matrix;
use crate::scalar::{FromScore, Scalar, Sign};

/// A way to compute with spanning-tree distributions: the number type, how
/// weights become numbers, and how the Laplacian is factorised.
///
/// ```
/// use spantree_core::{Engine, Graph, Model, Rooting};
/// use spantree_faer::Accurate;
/// assert_eq!(Accurate.name(), "accurate");
/// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
/// // Multi-root trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}: Z = 2 + 3 + 8.
/// let model = Model::new(Accurate, &g, Rooting::Multi)?;
/// assert!((model.log_partition()? - 13f64.ln()).abs() < 1e-15);
/// # Ok::<(), spantree_core::Error>(())
/// ```
pub trait Engine: Clone + Send + Sync + 'static {
    /// The number type of every answer.
    type Scalar: FromScore;
    /// A dense factorisation of a general square matrix (the baselines
    /// factorise minors and modified Laplacians with it).
    type Lu: Factorization<Scalar = Self::Scalar>;
    /// The factorised Laplacian of one graph.
    type Factors: Factors<Scalar = Self::Scalar>;

    /// A short name for reports and the command (`"accurate"`, `"f64"`, …).
    fn name(&self) -> &'static str;

    /// The collapsed weights of a validated graph in this engine's number
    /// type: [`Prepared::as_given`] or [`Prepared::shifted`]. `convert`
    /// turns a weight of the graph's own type into the scalar.
    ///
    /// # Errors
    /// [`crate::Error::Overflow`] when a weight is not representable.
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> Self::Scalar,
    ) -> Result<Prepared<Self::Scalar>>;

    /// Factorises a general square matrix, `O(n³)`.
    fn lu(&self, matrix: Matrix<Self::Scalar>) -> Self::Lu;

    /// Factorises the Laplacian of the prepared `weights` (the
    /// `(n+1) × (n+1)` layout, row `0` the root) for `rooting`, `O(n³)`.
    fn factorize(&self, weights: Matrix<Self::Scalar>, rooting: Rooting) -> Self::Factors;
}

/// The factorised Laplacian `L` of one graph's prepared weights `w`, and
/// what an engine answers from it. Every matrix in or out is in the
/// `(n+1) × (n+1)` layout of the weights unless it is said to be `n × n`.
pub trait Factors: Send + Sync {
    /// The number type.
    type Scalar: Scalar;

    /// The prepared weights the Laplacian was built from.
    fn weights(&self) -> &Matrix<Self::Scalar>;

    /// The rooting of the Laplacian.
    fn rooting(&self) -> Rooting;

    /// The first elimination step whose pivot is exactly zero, if any.
    fn zero_pivot(&self) -> Option<usize>;

    /// `det L` in the scalar type (may overflow on floating-point types).
    fn det(&self) -> Self::Scalar;

    /// `(sign, ln |det L|)`, never overflowing; `(Sign::Zero, -∞)` when singular.
    fn ln_abs_det(&self) -> (Sign, f64);

    /// `X = L⁻¹` (`n × n`), formed at most once.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `L` is singular to working precision.
    fn inverse(&self) -> std::result::Result<&Matrix<Self::Scalar>, Numerical>;

    /// Solves `L X = B` in place (`n × k`), `O(n² k)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`].
    fn solve(&self, rhs: &mut Matrix<Self::Scalar>) -> std::result::Result<(), Numerical>;

    /// Solves `Lᵀ X = B` in place, `O(n² k)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`].
    fn solve_transpose(&self, rhs: &mut Matrix<Self::Scalar>)
        -> std::result::Result<(), Numerical>;

    /// `adj L` (`n × n`), defined also when `L` is singular, `O(n³)`.
    fn adjugate(&self) -> Matrix<Self::Scalar>;

    /// The arc marginals `μ = w ⊙ ∂ ln det L / ∂w`. Called only when a
    /// spanning tree exists.
    ///
    /// # Errors
    /// [`Numerical`] when they cannot be computed to working precision.
    fn marginals(&self) -> std::result::Result<Matrix<Self::Scalar>, Numerical> {
        Ok(dense::marginals_from_inverse(
            self.weights(),
            self.inverse()?,
            self.rooting(),
        ))
    }

    /// [`Factors::marginals`], borrowed where the factors keep them (no
    /// `O(n²)` copy per call); owned otherwise (the default).
    ///
    /// # Errors
    /// As [`Factors::marginals`].
    fn marginals_kept(
        &self,
    ) -> std::result::Result<std::borrow::Cow<'_, Matrix<Self::Scalar>>, Numerical> {
        self.marginals().map(std::borrow::Cow::Owned)
    }

    /// The vector–Jacobian product of the marginals with respect to the
    /// scores, `v_f = Σ_e ḡ_e ∂μ_e/∂θ_f`; see
    /// [`Model::marginals_vjp`](crate::Model::marginals_vjp).
    ///
    /// # Errors
    /// As [`Factors::inverse`].
    fn marginals_vjp(
        &self,
        seed: &Matrix<Self::Scalar>,
    ) -> std::result::Result<Matrix<Self::Scalar>, Numerical> {
        crate::gradient::dense_marginals_vjp(self, seed)
    }

    /// `∂ det L / ∂w` for every arc, allowed or not (the `(n+1) × (n+1)`
    /// layout): Jacobi's formula on the adjugate by default
    /// ([`weight_gradient`](crate::laplacian::weight_gradient)), defined also
    /// when `det L = 0`.
    ///
    /// # Errors
    /// [`Numerical`] when it cannot be computed to working precision.
    fn partition_gradient(&self) -> std::result::Result<Matrix<Self::Scalar>, Numerical> {
        Ok(crate::laplacian::weight_gradient(
            &self.adjugate(),
            self.rooting(),
        ))
    }

    /// Whether every answer of these factors is computed without
    /// cancellation ([`Eliminated`]): the model then avoids routes that read
    /// the inverse `X` (the Hessian route of second order, pair marginals
    /// from `X`), whose entries lose their relative accuracy when root
    /// weights are small.
    fn cancellation_free(&self) -> bool {
        false
    }

    /// Refuses with [`Numerical::Inaccurate`] when the factorisation's own
    /// estimate of the absolute error of `ln |det L|`
    /// ([`Factorization::ln_det_error`]) exceeds `tolerance`. Nothing to
    /// check (the default) for factorisations that do not estimate it:
    /// exact, high-precision, complex, cancellation-free. `O(n²)`.
    ///
    /// # Errors
    /// [`Numerical::Inaccurate`].
    fn check_accuracy(&self, tolerance: f64) -> std::result::Result<(), Numerical> {
        let _ = tolerance;
        Ok(())
    }

    /// The estimated accuracy of a product `v` of `seed` from
    /// [`Factors::marginals_vjp`] ([`VjpAccuracy`]), when these factors
    /// estimate it ([`Dense::with_derivative_check`]: the `f64` dense
    /// engines); `None` (the default) otherwise. The model compares its
    /// error with the gradient it returns. `O(n²)`.
    fn vjp_accuracy(
        &self,
        seed: &Matrix<Self::Scalar>,
        v: &Matrix<Self::Scalar>,
    ) -> Option<VjpAccuracy> {
        let _ = (seed, v);
        None
    }
}

/// A factorisation of a general `n × n` matrix `A`, computed once: the
/// contract of a dense linear-algebra engine.
pub trait Factorization: Send + Sync {
    /// The number type.
    type Scalar: Scalar;

    /// The dimension `n`.
    fn dim(&self) -> usize;

    /// The first elimination step whose pivot is exactly zero, if any: then
    /// `A` is singular (exactly, for exact arithmetic; to working precision
    /// otherwise).
    fn zero_pivot(&self) -> Option<usize>;

    /// `det A` in the scalar type (may overflow on floating-point types).
    fn det(&self) -> Self::Scalar;

    /// `(sign, ln |det A|)`, computed from the pivots so that it never
    /// overflows; `(Sign::Zero, -∞)` when singular.
    fn ln_abs_det(&self) -> (Sign, f64);

    /// Solves `A X = B` in place, `O(n² k)` for `k` right-hand sides.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn solve(&self, rhs: &mut Matrix<Self::Scalar>) -> std::result::Result<(), Numerical>;

    /// Solves `Aᵀ X = B` in place, `O(n² k)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn solve_transpose(&self, rhs: &mut Matrix<Self::Scalar>)
        -> std::result::Result<(), Numerical>;

    /// `A⁻¹`, `O(n³)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn inverse(&self) -> std::result::Result<Matrix<Self::Scalar>, Numerical> {
        let mut x = Matrix::identity(self.dim());
        self.solve(&mut x)?;
        Ok(x)
    }

    /// The adjugate `adj A` (so `A · adj A = det A · I`), defined also when
    /// `A` is singular, `O(n³)`. By Jacobi's formula
    /// `∂ det A / ∂A[i][j] = adj(A)[j][i]`.
    fn adjugate(&self) -> Matrix<Self::Scalar>;

    /// `X B X` for `X = A⁻¹` (given, as formed by [`Factorization::inverse`])
    /// and any `n × n` matrix `B`: reverse mode through `A⁻¹` reads it. By
    /// default one solve `A⁻¹ B` and one product with `X`, `4n³` flops;
    /// engines override it with their own kernels.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn inverse_sandwich(
        &self,
        x: &Matrix<Self::Scalar>,
        mut b: Matrix<Self::Scalar>,
    ) -> std::result::Result<Matrix<Self::Scalar>, Numerical> {
        self.solve(&mut b)?;
        Ok(b.matmul(x))
    }

    /// `(X B X)ᵀ`, the transpose of [`Factorization::inverse_sandwich`]
    /// with the same entries bit for bit: the dense product's glue reads it
    /// along rows. By default that sandwich transposed (`O(n²)` more);
    /// engines whose product can store its result transposed override it.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn inverse_sandwich_transposed(
        &self,
        x: &Matrix<Self::Scalar>,
        b: Matrix<Self::Scalar>,
    ) -> std::result::Result<Matrix<Self::Scalar>, Numerical> {
        Ok(self.inverse_sandwich(x, b)?.transpose())
    }

    /// An a-posteriori estimate of the absolute error of `ln |det A|` from
    /// the pivots and the original matrix, `O(n²)`; `0` (the default) for
    /// factorisations that do not round or do not estimate it.
    fn ln_det_error(&self) -> f64 {
        0.0
    }
}
