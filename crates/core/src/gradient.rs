//! Reverse mode through the marginals, written by hand (DESIGN.md §1.5): the
//! gradient of any scalar function of the marginals in `O(n³)`, whatever the
//! number of features.

use crate::backend::{Factorization, MatrixBackend};
use crate::error::Result;
use crate::laplacian::{weight_gradient, weight_gradient_adjoint};
use crate::matrix::Matrix;
use crate::model::Model;
use crate::scalar::Scalar;

impl<B: MatrixBackend> Model<B> {
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
    pub fn marginals_vjp(&self, seed: &Matrix<B::Scalar>) -> Result<Matrix<B::Scalar>> {
        let x = self.inverse()?;
        let w = self.weights();
        let mut weighted = seed.clone();
        for (s, wv) in weighted.as_mut_slice().iter_mut().zip(w.as_slice()) {
            *s *= wv;
        }
        let rooting = self.rooting();
        // X Cᵀ X = ((X Cᵀ X)ᵀ)ᵀ = (L⁻ᵀ (L⁻¹ Cᵀ)ᵀ)ᵀ: two solves on the one factorisation.
        let mut xc = weight_gradient_adjoint(&weighted, rooting).transpose();
        self.factorization().solve(&mut xc)?;
        let mut xcx_t = xc.transpose();
        self.factorization().solve_transpose(&mut xcx_t)?;
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
}
