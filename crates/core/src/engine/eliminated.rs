//! Answers from the cancellation-free elimination of the graph weights.

use std::sync::OnceLock;

use super::{Dense, Factorization, Factors};
use crate::elimination::{self, Elimination, LnPositive, NonNegative};
use crate::error::Numerical;
use crate::graph::Rooting;
use crate::matrix::Matrix;
use crate::scalar::Sign;

/// The cancellation-free elimination ([`crate::elimination`]) of a graph's
/// prepared `f64` weights, run in the number type `P` (`f64`, or
/// [`LnPositive`] for log space): `ln Z` and every marginal with a small
/// *relative* error whatever the scales of the weights. On `P = f64`, a
/// product that leaves `f64`'s safe range reruns the step in log space.
///
/// What the elimination does not answer (solves, the inverse, the adjugate:
/// the gradients and second-order quantities) comes from a dense
/// factorisation `F` of the Laplacian, formed on first use.
pub struct Eliminated<P, F: Factorization<Scalar = f64>> {
    weights: Matrix<f64>,
    elimination_weights: Matrix<P>,
    rooting: Rooting,
    /// `ln Z` (`-∞` when `Z = 0`) and the step that found `Z = 0`.
    log_z: f64,
    zero_pivot: Option<usize>,
    marginals: OnceLock<Result<Matrix<f64>, Numerical>>,
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

impl<P: NonNegative, F: Factorization<Scalar = f64>> Eliminated<P, F> {
    /// Eliminates the words of `weights` in `P`, `n³/3` multiply-adds;
    /// `factorize` is the dense factorisation used for solves.
    pub fn new(weights: Matrix<f64>, rooting: Rooting, factorize: fn(Matrix<f64>) -> F) -> Self {
        let elimination_weights = weights.map(|&w| P::from_weight(w));
        let elimination = Elimination::new(&elimination_weights, rooting);
        let mut log_z = elimination.log_partition();
        let mut zero_pivot = elimination.zero_pivot();
        if elimination.is_extreme() {
            // Some product fell below f64's normal range (only `P = f64`
            // reports that in a way that matters): redo ln Z in log space.
            let logs = in_log_space(&elimination_weights);
            let e = Elimination::new(&logs, rooting);
            (log_z, zero_pivot) = (e.log_partition(), e.zero_pivot());
        }
        Eliminated {
            weights,
            elimination_weights,
            rooting,
            log_z,
            zero_pivot,
            marginals: OnceLock::new(),
            dense: OnceLock::new(),
            factorize,
        }
    }

    /// The dense factorisation of the Laplacian, formed once.
    fn dense(&self) -> &Dense<F> {
        self.dense
            .get_or_init(|| Dense::new(self.weights.clone(), self.rooting, self.factorize))
    }
}

fn in_log_space<P: NonNegative>(weights: &Matrix<P>) -> Matrix<LnPositive> {
    weights.map(|w| LnPositive::from_ln(w.ln_weight()))
}

impl<P: NonNegative, F: Factorization<Scalar = f64>> Factors for Eliminated<P, F> {
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

    /// [`elimination::marginals`] on the weights, computed once; in log
    /// space when a forward product of the `f64` run fell below `f64`'s
    /// normal range ([`elimination::checked_marginals`]).
    fn marginals(&self) -> Result<Matrix<f64>, Numerical> {
        self.marginals
            .get_or_init(|| {
                let (mu, tiny) =
                    elimination::checked_marginals(&self.elimination_weights, self.rooting)?;
                if !tiny {
                    return Ok(mu.map(NonNegative::to_weight));
                }
                let logs = in_log_space(&self.elimination_weights);
                Ok(elimination::marginals(&logs, self.rooting)?.map(NonNegative::to_weight))
            })
            .clone()
    }
}
