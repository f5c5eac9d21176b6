//! Answers from a dense factorisation of the Laplacian.

use std::sync::OnceLock;

use super::{Factorization, Factors};
use crate::error::{Inaccuracy, Numerical};
use crate::graph::Rooting;
use crate::laplacian::{laplacian, weight_gradient, weighted_adjoint_transposed};
use crate::matrix::Matrix;
use crate::scalar::{Scalar, Sign};

/// The Laplacian of a graph's prepared weights under a dense factorisation
/// `F`: `ln Z` from its pivots, the marginals `μ = w ⊙ G(X)` from the inverse
/// `X = L⁻¹` (formed once; `G` reads one or two entries of `X` per arc,
/// [`weight_gradient`]), solves and the adjugate from `F`.
#[derive(Debug)]
pub struct Dense<F: Factorization> {
    weights: Matrix<F::Scalar>,
    rooting: Rooting,
    lu: F,
    inverse: OnceLock<Result<Matrix<F::Scalar>, Numerical>>,
    /// [`Factorization::ln_det_error`], formed once (`ln Z` and every
    /// derivative check it).
    ln_det_error: OnceLock<f64>,
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
            ln_det_error: OnceLock::new(),
        }
    }

    /// The dense factorisation.
    pub fn lu(&self) -> &F {
        &self.lu
    }

    /// [`Factorization::ln_det_error`] of the factorisation, computed on
    /// first use and kept, `O(n²)` once.
    pub fn ln_det_error(&self) -> f64 {
        *self.ln_det_error.get_or_init(|| self.lu.ln_det_error())
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
    /// ([`Model::marginals_vjp`](crate::Model::marginals_vjp)): `X Cᵀ X` by
    /// [`Factorization::inverse_sandwich`] (one solve with `n` right-hand
    /// sides and one product by default), and the
    /// `O(n²)` glue reading `X` and `Y X` in place: no transposes, no
    /// intermediate `(n+1) × (n+1)` matrices. `O(n³)`.
    fn marginals_vjp(&self, seed: &Matrix<F::Scalar>) -> Result<Matrix<F::Scalar>, Numerical> {
        let x = self.inverse()?;
        let w = &self.weights;
        let rooting = self.rooting;
        let xcx = self
            .lu
            .inverse_sandwich(x, weighted_adjoint_transposed(seed, w, rooting))?;
        let n1 = w.rows();
        let mut v = Matrix::zeros(n1, n1);
        let (x, xcx) = (x.as_slice(), xcx.as_slice());
        for (h, ((out, sr), wr)) in v
            .as_mut_slice()
            .chunks_exact_mut(n1)
            .zip(seed.as_slice().chunks_exact(n1))
            .zip(w.as_slice().chunks_exact(n1))
            .enumerate()
        {
            for m in (1..n1).filter(|&m| m != h) {
                let wk = &wr[m];
                if wk.is_zero() {
                    continue;
                }
                let mut d = sr[m].clone() * arc_share(x, n1 - 1, rooting, h, m);
                d -= &arc_share(xcx, n1 - 1, rooting, h, m);
                out[m] = d * wk.clone();
            }
        }
        Ok(v)
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

/// `Σ σ M[j][i]` over the entries `(i, j, σ)` that arc `h → m` enters
/// (`laplacian::arc_entries`, written out for speed: the same additions in
/// the same order) of the row-major `n × n` matrix `m_`: the arc's share of
/// `⟨Mᵀ, dL⟩`. `O(1)`.
#[inline]
fn arc_share<S: Scalar>(m_: &[S], n: usize, rooting: Rooting, h: usize, m: usize) -> S {
    let j = m - 1;
    let row = &m_[j * n..(j + 1) * n];
    let single = rooting == Rooting::Single;
    let mut d = S::zero();
    if h == 0 {
        d += if single { &row[0] } else { &row[j] };
        return d;
    }
    let i = h - 1;
    if !single || j != 0 {
        d += &row[j];
    }
    if !single || i != 0 {
        d -= &row[i];
    }
    d
}

/// `μ = w ⊙ weight_gradient(X)`: the marginals from the inverse of the
/// Laplacian (Koo et al. 2007; `∂ ln Z / ∂w = weight_gradient(X)` by Jacobi's
/// formula). `O(n²)`.
pub(crate) fn marginals_from_inverse<S: Scalar>(
    weights: &Matrix<S>,
    x: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    let mut mu = weight_gradient(x, rooting);
    for (m, w) in mu.as_mut_slice().iter_mut().zip(weights.as_slice()) {
        if w.is_zero() {
            *m = S::zero();
        } else {
            *m *= w;
        }
    }
    mu
}
