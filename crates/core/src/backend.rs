//! The boundary between the core and a linear-algebra engine.
//!
//! The core builds Laplacians and does the `O(n²)` glue per output; a backend
//! factorises a dense matrix once and answers questions about it.

use crate::error::Numerical;
use crate::graph::Rooting;
use crate::laplacian::laplacian;
use crate::matrix::Matrix;
use crate::scalar::{Scalar, Sign};

/// A dense linear-algebra engine over one scalar type.
pub trait MatrixBackend: Clone + Send + Sync {
    /// The number type the engine computes in.
    type Scalar: Scalar;
    /// A factorisation of one square matrix.
    type Factorization: Factorization<Scalar = Self::Scalar>;

    /// Whether the core should shift every Laplacian column by its largest
    /// log-weight before converting to [`MatrixBackend::Scalar`] (DESIGN.md §2).
    ///
    /// Stabilised backends never form `exp` of a large score, so `ln Z` cannot
    /// overflow; unstabilised ones see the weights exactly as given (exact
    /// rationals need this to return the exact `Z`).
    const SHIFTS_COLUMNS: bool;

    /// A short name for reports (`"f64"`, `"log"`, `"exact"`, …).
    fn name(&self) -> &'static str;

    /// The weight `e^θ` of a finite score in the backend's own precision, for
    /// backends more precise than `f64` (high-precision floats); `None`, the
    /// default, lets the core use `from_f64(θ.exp())`. Only consulted by
    /// unstabilised backends.
    fn weight_from_score(&self, score: f64) -> Option<Self::Scalar> {
        let _ = score;
        None
    }

    /// Factorises a square matrix, `O(n³)`.
    fn factorize(&self, matrix: Matrix<Self::Scalar>) -> Self::Factorization;

    /// Factorises the Laplacian of the collapsed `weights` (the `(n+1) × (n+1)`
    /// layout, row `0` the root) for `rooting`; what [`Model`](crate::Model)
    /// calls. The default builds [`laplacian`]`(weights, rooting)` and calls
    /// [`MatrixBackend::factorize`]; backends that eliminate on the graph
    /// weights themselves, so that no entry of the Laplacian is ever formed by
    /// cancellation (DESIGN.md §2), override it.
    /// `O(n³)`.
    fn factorize_laplacian(
        &self,
        weights: &Matrix<Self::Scalar>,
        rooting: Rooting,
    ) -> Self::Factorization {
        self.factorize(laplacian(weights, rooting))
    }
}

/// A factorisation of an `n × n` matrix `A`, computed once.
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
    fn solve(&self, rhs: &mut Matrix<Self::Scalar>) -> Result<(), Numerical>;

    /// Solves `Aᵀ X = B` in place, `O(n² k)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn solve_transpose(&self, rhs: &mut Matrix<Self::Scalar>) -> Result<(), Numerical>;

    /// `A⁻¹`, `O(n³)`.
    ///
    /// # Errors
    /// [`Numerical::Singular`] when `A` is singular.
    fn inverse(&self) -> Result<Matrix<Self::Scalar>, Numerical> {
        let mut x = Matrix::identity(self.dim());
        self.solve(&mut x)?;
        Ok(x)
    }

    /// The adjugate `adj A` (so `A · adj A = det A · I`), defined also when
    /// `A` is singular, `O(n³)`. By Jacobi's formula
    /// `∂ det A / ∂A[i][j] = adj(A)[j][i]`.
    fn adjugate(&self) -> Matrix<Self::Scalar>;

    /// The arc marginals `μ[h][m]` in the `(n+1) × (n+1)` layout, for a
    /// factorisation that was built from the graph weights by
    /// [`MatrixBackend::factorize_laplacian`] and can compute them more
    /// accurately than `w ⊙ weight_gradient(A⁻¹)`; `None`, the default, makes
    /// [`Model::marginals`](crate::Model::marginals) use the inverse.
    /// Called only when a spanning tree exists.
    ///
    /// # Errors
    /// [`Numerical`] when the computation fails to working precision.
    fn arc_marginals(&self) -> Option<Result<Matrix<Self::Scalar>, Numerical>> {
        None
    }
}
