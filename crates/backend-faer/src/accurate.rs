//! Backends that eliminate on the graph weights without cancellation
//! ([`spantree_core::elimination`]): `ln Z` and the marginals keep their
//! relative accuracy whatever the scales of the weights.

use std::sync::OnceLock;

use spantree_core::elimination::{self, Elimination, LnPositive, NonNegative};
use spantree_core::laplacian::laplacian;
use spantree_core::{Factorization, Matrix, MatrixBackend, Numerical, Rooting, Sign};

use crate::Lu;

/// Cancellation-free elimination in `f64` on column-shifted weights
/// (DESIGN.md §2): `ln Z` with a relative error of a few `n ε` and every
/// marginal with a relative error of a few `n ε`, for any spread of scales
/// within a column that `f64` can hold (shifted weights down to `e^{-708}`,
/// i.e. scores down to 708 below their column's best), both rootings.
///
/// Cost: `n³/3` multiply-adds for `ln Z`, about `1.3 n³` more for the
/// marginals (a divide and conquer, see [`spantree_core::elimination`]);
/// measured 1.5–2.5× the time of [`crate::LogF64`]'s dense LU plus inverse (crate docs).
/// Everything else a [`Factorization`] answers (solves, inverse, adjugate:
/// what gradients and second-order quantities use) comes from a dense LU of
/// the Laplacian, formed on first use, with the accuracy of [`crate::LogF64`].
///
/// ```
/// use spantree_core::{Graph, Model, Rooting};
/// use spantree_faer::{Accurate, LogF64};
///
/// // Root scores −40 below N(0, 1)-sized arc scores: dense LU cannot hold
/// // e^-40 next to 1 on the multi-root diagonal.
/// let ninf = f64::NEG_INFINITY;
/// let g = Graph::from_scores(&[
///     [ninf, -40.0, -40.5, -39.0],
///     [ninf, ninf, 0.3, -0.2],
///     [ninf, 0.1, ninf, 0.4],
///     [ninf, -0.6, 0.2, ninf],
/// ])?;
/// let mu = Model::new(Accurate, &g, Rooting::Multi)?.marginals()?;
/// for m in 1..=3 {
///     let column: f64 = (0..=3).map(|h| mu[(h, m)]).sum();
///     assert!((column - 1.0).abs() < 1e-14);
/// }
/// // Single-root, too: exactly one root child.
/// let mu = Model::new(Accurate, &g, Rooting::Single)?.marginals()?;
/// assert!(((1..=3).map(|m| mu[(0, m)]).sum::<f64>() - 1.0).abs() < 1e-14);
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Accurate;

/// The elimination of [`Accurate`] run in log space ([`LnPositive`]): no
/// intermediate product can underflow or overflow. Slower (a log-sum-exp per
/// multiply-add, 15–40× [`Accurate`]); it differs from [`Accurate`] only
/// when products of shifted weights fall below `1e-308`, i.e. with scores
/// several hundred apart inside one column *and* tiny multipliers.
///
/// ```
/// use spantree_core::{Graph, MatrixBackend, Model, Rooting};
/// use spantree_faer::LogAccurate;
///
/// assert_eq!(LogAccurate.name(), "log-accurate");
/// let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
/// let model = Model::new(LogAccurate, &g, Rooting::Single)?;
/// // Single-root trees {0→1, 1→2} and {0→2, 2→1}: 1·3 + 2·4 = 11.
/// assert!((model.log_partition()? - 11f64.ln()).abs() < 1e-14);
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LogAccurate;

impl MatrixBackend for Accurate {
    type Scalar = f64;
    type Factorization = Eliminated<f64>;
    const SHIFTS_COLUMNS: bool = true;

    fn name(&self) -> &'static str {
        "accurate"
    }

    /// A general matrix (not a Laplacian given by its weights): dense LU.
    fn factorize(&self, matrix: Matrix<f64>) -> Eliminated<f64> {
        Eliminated::dense(matrix)
    }

    /// The cancellation-free elimination of the weights, `n³/3`.
    fn factorize_laplacian(&self, weights: &Matrix<f64>, rooting: Rooting) -> Eliminated<f64> {
        Eliminated::new(weights, rooting, |&w| w)
    }
}

impl MatrixBackend for LogAccurate {
    type Scalar = f64;
    type Factorization = Eliminated<LnPositive>;
    const SHIFTS_COLUMNS: bool = true;

    fn name(&self) -> &'static str {
        "log-accurate"
    }

    /// A general matrix (not a Laplacian given by its weights): dense LU.
    fn factorize(&self, matrix: Matrix<f64>) -> Eliminated<LnPositive> {
        Eliminated::dense(matrix)
    }

    /// The cancellation-free elimination of the weights in log space, `n³/3`
    /// log-sum-exps.
    fn factorize_laplacian(
        &self,
        weights: &Matrix<f64>,
        rooting: Rooting,
    ) -> Eliminated<LnPositive> {
        Eliminated::new(weights, rooting, |&w| LnPositive::from_weight(w))
    }
}

/// The factorisation of [`Accurate`] (`P = f64`) and [`LogAccurate`]
/// (`P = LnPositive`): the pivots of the elimination, the weights for the
/// marginals (computed on first request), and a dense LU of the Laplacian for
/// solves, formed on first use.
#[derive(Debug)]
pub struct Eliminated<P> {
    graph: Option<Graph<P>>,
    laplacian: Option<Matrix<f64>>,
    dense: OnceLock<Lu>,
    n: usize,
}

#[derive(Debug)]
struct Graph<P> {
    weights: Matrix<P>,
    rooting: Rooting,
    /// `ln Z` (`-∞` when `Z = 0`) and the step that found `Z = 0`.
    log_z: f64,
    zero_pivot: Option<usize>,
    marginals: OnceLock<Result<Matrix<f64>, Numerical>>,
}

impl<P: NonNegative> Eliminated<P> {
    fn new(weights: &Matrix<f64>, rooting: Rooting, convert: impl Fn(&f64) -> P) -> Self {
        let weights_p = weights.map(convert);
        let elimination = Elimination::new(&weights_p, rooting);
        let mut log_z = elimination.log_partition();
        let mut zero_pivot = elimination.zero_pivot();
        if elimination.is_extreme() {
            // Some product fell below f64's normal range (only `P = f64`
            // reports that in a way that matters): redo ln Z in log space.
            let logs = weights_p.map(|w| LnPositive::from_ln(w.ln_weight()));
            let e = Elimination::new(&logs, rooting);
            (log_z, zero_pivot) = (e.log_partition(), e.zero_pivot());
        }
        Eliminated {
            n: weights.rows() - 1,
            laplacian: Some(laplacian(weights, rooting)),
            dense: OnceLock::new(),
            graph: Some(Graph {
                weights: weights_p,
                rooting,
                log_z,
                zero_pivot,
                marginals: OnceLock::new(),
            }),
        }
    }

    fn dense(matrix: Matrix<f64>) -> Self {
        Eliminated {
            n: matrix.rows(),
            laplacian: Some(matrix),
            dense: OnceLock::new(),
            graph: None,
        }
    }

    /// The dense LU of the Laplacian (or of the general matrix), formed once.
    pub fn lu(&self) -> &Lu {
        self.dense.get_or_init(|| {
            Lu::new(
                self.laplacian
                    .clone()
                    .expect("the matrix is kept until the LU is formed"),
            )
        })
    }
}

impl<P: NonNegative> Factorization for Eliminated<P> {
    type Scalar = f64;

    fn dim(&self) -> usize {
        self.n
    }

    fn zero_pivot(&self) -> Option<usize> {
        match &self.graph {
            Some(g) => g.zero_pivot,
            None => self.lu().zero_pivot(),
        }
    }

    /// `Z = Π d_k` through `exp(Σ ln d_k)` (may overflow; use `ln_abs_det`).
    fn det(&self) -> f64 {
        match &self.graph {
            Some(g) => g.log_z.exp(),
            None => self.lu().det(),
        }
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        match &self.graph {
            Some(g) => match g.log_z {
                f64::NEG_INFINITY => (Sign::Zero, f64::NEG_INFINITY),
                ln => (Sign::Positive, ln),
            },
            None => self.lu().ln_abs_det(),
        }
    }

    fn solve(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        self.lu().solve(rhs)
    }

    fn solve_transpose(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        self.lu().solve_transpose(rhs)
    }

    fn inverse(&self) -> Result<Matrix<f64>, Numerical> {
        self.lu().inverse()
    }

    fn adjugate(&self) -> Matrix<f64> {
        self.lu().adjugate()
    }

    /// [`elimination::marginals`] on the weights, computed once; in log
    /// space when a forward product of the `f64` run fell below `f64`'s
    /// normal range ([`elimination::checked_marginals`]).
    fn arc_marginals(&self) -> Option<Result<Matrix<f64>, Numerical>> {
        let g = self.graph.as_ref()?;
        Some(
            g.marginals
                .get_or_init(|| {
                    let (mu, tiny) = elimination::checked_marginals(&g.weights, g.rooting)?;
                    if !tiny {
                        return Ok(mu.map(NonNegative::to_weight));
                    }
                    let logs = g.weights.map(|w| LnPositive::from_ln(w.ln_weight()));
                    Ok(elimination::marginals(&logs, g.rooting)?.map(NonNegative::to_weight))
                })
                .clone(),
        )
    }
}
