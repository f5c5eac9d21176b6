//! Typed results for front ends that want numbers rather than JSON text
//! (the Python bindings): the quantities that need logarithms, reachable
//! from generic code written against [`Backend`].
//!
//! Generic code cannot name the bound `Scalar: Transcendental` for every
//! backend (exact rationals have no `ln`), so each backend hands out the
//! table [`Information`] through [`Backend::information`], or `None`. The
//! field quantities (`log_partition`, `marginals`, `marginals_vjp`, …) need
//! no table: they are methods of [`Model`] for every backend.

use spantree_core::{Divergence, GradientPair, Model, PerLabel, Result, Transcendental};

use crate::backend::Backend;

/// A function of two distributions `p` and `q` on the same graph shape.
pub type PairFn<B, T> = fn(&Model<B>, &Model<B>) -> Result<T>;

/// The information-theoretic quantities of a backend whose numbers have
/// `ln` and `exp`, as plain function pointers over [`Model`] (each the
/// library method of the same name; costs and errors as there).
pub struct Information<B: Backend> {
    /// [`Model::entropy`], `O(n³)`.
    pub entropy: fn(&Model<B>) -> Result<B::Scalar>,
    /// [`Model::grad_entropy`], `O(n³)`.
    pub grad_entropy: fn(&Model<B>) -> Result<PerLabel<B::Scalar>>,
    /// [`Model::cross_entropy`] of `q` (second argument) relative to `p`.
    pub cross_entropy: PairFn<B, Divergence<<B as spantree_core::Engine>::Scalar>>,
    /// [`Model::kl_divergence`] `KL(p ‖ q)`.
    pub kl: PairFn<B, Divergence<<B as spantree_core::Engine>::Scalar>>,
    /// [`Model::grad_kl_divergence`], with respect to the scores of `p` and `q`.
    pub grad_kl: PairFn<B, GradientPair<<B as spantree_core::Engine>::Scalar>>,
    /// [`Model::renyi_entropy`] of order `α`.
    pub renyi: fn(&Model<B>, f64) -> Result<B::Scalar>,
    /// [`Model::lp_norm`] of order `k`.
    pub lp_norm: fn(&Model<B>, f64) -> Result<B::Scalar>,
}

impl<B: Backend> Information<B>
where
    B::Scalar: Transcendental,
{
    /// The table of a backend whose scalar has logarithms.
    pub fn new() -> Self {
        Information {
            entropy: Model::entropy,
            grad_entropy: Model::grad_entropy,
            cross_entropy: Model::cross_entropy,
            kl: Model::kl_divergence,
            grad_kl: Model::grad_kl_divergence,
            renyi: Model::renyi_entropy,
            lp_norm: Model::lp_norm,
        }
    }
}

impl<B: Backend> Default for Information<B>
where
    B::Scalar: Transcendental,
{
    fn default() -> Self {
        Self::new()
    }
}
