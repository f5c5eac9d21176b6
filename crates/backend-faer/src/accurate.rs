//! Backends that eliminate on the graph weights without cancellation
//! ([`spantree_core::elimination`]): `ln Z` and the marginals keep their
//! relative accuracy whatever the scales of the weights.

use spantree_core::elimination::LnPositive;
use spantree_core::{
    Certified, Eliminated, Engine, Graph, Matrix, Prepared, Result, Rooting, Scalar,
};

use crate::Lu;

/// Dense LU where its own check certifies it, and the cancellation-free
/// elimination in `f64` on column-shifted weights where it does not
/// ([`Certified`]; [§2](spantree_core::mathematics)).
///
/// **Dense when certified.** The Laplacian is first factorised by [`Lu`]
/// (`2n³/3` flops). When the LU's `O(n²)` estimate of the error of
/// `ln |det L|` is at most `2⁻⁴⁰` (and `2⁻⁴² |ln det L|`), `ln Z`, the
/// marginals and every vector–Jacobian product come from the LU and its
/// inverse, at the speed of [`crate::ShiftedF64`]; the marginals also pass
/// an entry-wise estimate, every one keeping 40 bits relative to itself.
/// The few columns (arcs into one word) that do not are refined: one step
/// of iterative refinement of their rows of `X = L⁻¹`, the residual formed
/// from the weights in double-double, `O(n²)` per column; single-root, word
/// 1's column too, and the entries read alone in the others guarded by the
/// refined rows' norm-wise error. What still fails is recomputed by the
/// elimination (multi-root, a few columns) or sends every column to it (see
/// [`Certified`]). On `N(0, σ²)` scores (`σ ≤ 4`) every graph measured had
/// `ln Z` certified; with `σ = 2`, multi-root graphs needed about `n / 7`
/// columns refined at `n = 36` and `n / 2` at `n = 100` (more than `0.8 n`,
/// as at `n = 200`, go to the elimination), single-root 1–4 columns at
/// `n = 36`–`100`, and every refined column passed (`cargo run --release -p
/// spantree-bench --example certified`).
///
/// Single-root, the root row is scaled by an exact power of two first
/// (root weights down to `2⁻⁶⁴` of the arcs'): `Z` scales by it and the
/// marginals do not move, so root scores −40 below the arcs' take the dense
/// route too when its checks pass.
///
/// Multi-root, when the LU of the Laplacian refuses itself (root scores far
/// below the arcs'), its row-sum form comes next: the first row replaced by
/// the column sums, which are the root weights (an exact row operation,
/// the determinant unchanged), scaled as single-root. Its LU answers `ln Z`
/// when its own estimate certifies it, and its inverse the marginals under
/// the single-root test; the elimination the rest (see [`Certified`]).
///
/// **The elimination otherwise** (root scores more than about 44 below the
/// arcs', pivot cancellation): `ln Z` with a relative error of a few `n ε` and every
/// marginal with a relative error of a few `n ε`, for any spread of scales
/// within a column that `f64` can hold (shifted weights down to `e^{-708}`,
/// i.e. scores down to 708 below their column's best), both rootings. An
/// arc further below has a weight that underflows: the model answers when
/// the trees through such arcs weigh less than `2⁻⁵³ Z` (a bound from the
/// scores) and refuses with `Numerical::Underflow` otherwise.
///
/// Every derivative inherits that accuracy: the gradients (entropy,
/// cross-entropy, KL, attachment, GE, label-marginal VJPs) come from the
/// elimination run on dual numbers, covariance from the Jacobian–vector
/// route and pair marginals from conditioned marginals (see
/// [`spantree_core::Eliminated`] and the accuracy table in the crate docs).
/// `grad_partition` always comes from the elimination (`Z ν`).
///
/// [`LogAccurate`] always eliminates.
///
/// Cost: certified, that of [`crate::ShiftedF64`] plus `O(n²)` checks,
/// about `12 n²` operations per refined column, and `n³/3 + 2n²k`
/// multiply-adds for `k` columns recomputed by the elimination; marginals
/// that fail otherwise come from the elimination's marginal pass alone,
/// about `1.3 n³` multiply-adds. Measured (`spantree-report speed --runs
/// 7`, single-root `N(0, 2²)`, 2026-11-30): `ln Z` + marginals 1.4× the bare
/// kernel (LU + inverse) at `n = 36`, 2.0× at `n = 100` and 2.5× at `200`,
/// where [`crate::F64`] takes 1.2×. Not certified: the dense LU plus `n³/3`
/// multiply-adds for `ln Z`, about `1.3 n³` more for the marginals (a divide
/// and conquer, see [`spantree_core::elimination`]), about `4 n³` per
/// vector–Jacobian product; measured with root scores −40 (the elimination
/// needed): 1.1–1.5× the time of the dense route at `n = 36`–`100`.
///
/// ```
/// use spantree_core::{Graph, Model, Rooting};
/// use spantree_faer::{Accurate, ShiftedF64};
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

/// The elimination of [`Accurate`] with `ln Z` run in log space
/// ([`LnPositive`]): no intermediate product of `ln Z` can underflow or
/// overflow. Slower for `ln Z` (a log-sum-exp per multiply-add, 15–40×
/// [`Accurate`]); it differs from [`Accurate`] only when products of
/// shifted weights fall below `1e-308`, i.e. with scores several hundred
/// apart inside one column *and* tiny multipliers. The marginals and every
/// derivative run as in [`Accurate`]'s elimination, in `f64` with log space
/// where a product leaves `f64`'s range: a weight `e^{s}` held as its
/// logarithm carries a relative error of `|s| ε`, which cost every
/// derivative 8 bits at root shift `−300` (see
/// [`spantree_core::Eliminated`]).
///
/// ```
/// use spantree_core::{Engine, Graph, Model, Rooting};
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

impl Engine for Accurate {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Certified<Lu>;

    fn name(&self) -> &'static str {
        "accurate"
    }

    /// Columns divided by their largest weight ([`Prepared::shifted`]).
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Ok(Prepared::shifted(graph, convert))
    }

    /// A general matrix (not a Laplacian given by its weights): dense LU.
    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        Lu::new(matrix)
    }

    /// Dense LU, `2n³/3`, where its own check certifies it
    /// ([`Certified`]); the cancellation-free elimination of the weights,
    /// `n³/3` more, where it does not.
    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Certified<Lu> {
        Certified::new(weights, rooting, Lu::new)
    }
}

impl Engine for LogAccurate {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Eliminated<LnPositive, Lu>;

    fn name(&self) -> &'static str {
        "log-accurate"
    }

    /// Columns divided by their largest weight ([`Prepared::shifted`]).
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Ok(Prepared::shifted(graph, convert))
    }

    /// A general matrix (not a Laplacian given by its weights): dense LU.
    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        Lu::new(matrix)
    }

    /// The cancellation-free elimination of the weights in log space, `n³/3`
    /// log-sum-exps.
    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Eliminated<LnPositive, Lu> {
        Eliminated::new(weights, rooting, Lu::new)
    }
}
