//! # spantree-faer
//!
//! Floating-point backends for [`spantree_core`]: dense LU with partial
//! pivoting, `P A = L U`, in `f64`.
//!
//! * [`F64`]: the Laplacian built from the weights as given. Fastest; `Z`
//!   and `exp` of scores above ~709 overflow.
//! * [`ShiftedF64`]: the same LU, but the core first divides every Laplacian
//!   column `m` by its largest weight `e^{c_m}`
//!   ([`spantree_core::Prepared::shifted`]), so weights lie in `[0, 1]` and
//!   `ln Z = Σ ln |u_ii| + Σ_m c_m` never overflows, whatever the scores.
//!   Marginals are unchanged by the shift. The default for long sentences
//!   and extreme scores.
//!
//! * [`Accurate`]: no LU at all, but the cancellation-free elimination of
//!   the graph weights ([`spantree_core::elimination`]) on shifted columns:
//!   `ln Z` and every marginal keep their relative accuracy whatever the
//!   spread of scales inside a column (root scores far below arc scores,
//!   where dense LU returns garbage or NaN), for both rootings.
//!   [`LogAccurate`] runs the same elimination in log space.
//!
//! * [`Complex`]: complex `f64` LU, for complex-step differentiation of any
//!   quantity (the independent check of hand-written gradients).
//!
//! * [`stable_adjugate`]: `adj A` by column-pivoted QR (Stewart 1998), which
//!   never divides by the smallest pivot and stays accurate at and near
//!   singularity; the report compares it with [`Lu`]'s adjugate.
//!
//! The dense engines factorise with an [`Lu`]. Its kernel depends on the
//! size: a plain row-major LU below [`CROSSOVER`] (most sentences), faer's
//! blocked LU from there on; [`Lu::with_kernel`] forces one. Costs: factorisation `≈ 2n³/3` flops,
//! determinant and log-determinant `O(n)` from the pivots, solves `2n²` per
//! right-hand side, inverse `O(n³)`, adjugate `O(n³)` (`det · A⁻¹`, or an
//! SVD when the matrix is singular to working precision; see
//! [`Factorization::adjugate`](spantree_core::Factorization::adjugate)).
//!
//! The measurements behind these choices (the crossover of the two LUs,
//! the accuracy and the cost of the elimination, elimination orders) are in
//! the repository's `docs/report/engines.md`: the plain LU is 2–6× faster up
//! to `n = 16` and faer's blocked LU wins from about `n = 48` ([`CROSSOVER`]);
//! the elimination keeps ≥ 45 correct bits of every marginal where dense LU
//! keeps none, at about 2–3× the time of a dense LU.
//!
//! No engine type appears in a public signature: matrices cross the boundary
//! as [`spantree_core::Matrix`], and faer is pinned to one exact version.
//!
//! ```
//! use spantree_core::{Graph, Model, Rooting};
//! use spantree_faer::{ShiftedF64, F64};
//!
//! // Two words: trees {0→1, 0→2}, {0→1, 1→2}, {0→2, 2→1}, of weight 1·2 + 1·3 + 2·4.
//! let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]])?;
//! let z = Model::new(F64, &g, Rooting::Multi)?.partition()?;
//! assert!((z - 13.0).abs() < 1e-12);
//! let log_z = Model::new(ShiftedF64, &g, Rooting::Multi)?.log_partition()?;
//! assert!((log_z - 13f64.ln()).abs() < 1e-12);
//! # Ok::<(), spantree_core::Error>(())
//! ```

mod accurate;
mod adjugate;
mod complex;
mod dense;
mod lu;
mod plain;
mod scaled;

pub use accurate::{Accurate, LogAccurate};
pub use adjugate::stable_adjugate;
pub use complex::{Complex, ComplexLu};
pub use lu::{Lu, LuKernel, CROSSOVER};

use spantree_core::{Dense, Engine, Graph, Matrix, Prepared, Result, Rooting, Scalar};

/// `f64` LU on the weights as given: `Z = det L`, `O(n³)`.
///
/// Use it when scores are moderate (every weight a finite `f64` and `Z` within
/// range); [`ShiftedF64`] otherwise. `ln Z` still comes from the pivots
/// (`Σ ln |u_ii|`), so only `Z` itself, not `ln Z`, can overflow through the
/// determinant.
///
/// ```
/// use spantree_core::{Engine, Factorization, Graph, Matrix, Model, Rooting};
/// use spantree_faer::F64;
///
/// assert_eq!(F64.name(), "f64");
/// let lu = F64.lu(Matrix::from_row_major(2, 2, vec![5.0, -3.0, -4.0, 5.0]));
/// // Pivots 5 and 5 − 0.8·3 = 2.6 (rounded): one ulp-level error.
/// assert!((lu.det() - 13.0).abs() < 1e-14);
///
/// // The same number as a partition function: unit weights on 2 words give
/// // Cayley's (n+1)^(n-1) = 3 multi-root trees.
/// let g = Graph::from_weights(&[[0.0, 1.0, 1.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])?;
/// assert!((Model::new(F64, &g, Rooting::Multi)?.partition()? - 3.0).abs() < 1e-14);
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F64;

/// `f64` LU on column-shifted weights: `ln Z = ln |det L(w e^{-c})| + Σ_m c_m`
/// ([§2](spantree_core::mathematics)), `O(n³)`. Never overflows `ln Z`; the marginals are those
/// of [`F64`].
///
/// ```
/// use spantree_core::{Engine, Graph, Model, Rooting};
/// use spantree_faer::ShiftedF64;
///
/// assert_eq!(ShiftedF64.name(), "log");
/// // Scores of 1000 overflow exp, not the log backend: 2 words, every arc
/// // scored 1000, so each of the 3 multi-root trees scores 2000.
/// let s = 1000.0;
/// let ninf = f64::NEG_INFINITY;
/// let g = Graph::from_scores(&[[ninf, s, s], [ninf, ninf, s], [ninf, s, ninf]])?;
/// let log_z = Model::new(ShiftedF64, &g, Rooting::Multi)?.log_partition()?;
/// assert!((log_z - (2000.0 + 3f64.ln())).abs() < 1e-9);
/// # Ok::<(), spantree_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ShiftedF64;

impl Engine for F64 {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Dense<Lu>;

    fn name(&self) -> &'static str {
        "f64"
    }

    /// The weights as given ([`Prepared::as_given`]).
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Prepared::as_given(graph, convert)
    }

    /// [`Lu::new`]: `≈ 2n³/3` flops.
    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        Lu::new(matrix)
    }

    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        Dense::new(weights, rooting, Lu::new)
    }
}

impl Engine for ShiftedF64 {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Dense<Lu>;

    fn name(&self) -> &'static str {
        "log"
    }

    /// Columns divided by their largest weight ([`Prepared::shifted`]).
    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        Ok(Prepared::shifted(graph, convert))
    }

    /// [`Lu::new`]: `≈ 2n³/3` flops.
    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        Lu::new(matrix)
    }

    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        Dense::new(weights, rooting, Lu::new)
    }
}

/// The former name of [`ShiftedF64`], which is dense LU on column-shifted
/// weights, not log space ([`LogAccurate`] is).
#[deprecated(since = "0.2.0", note = "renamed `ShiftedF64`")]
pub type LogF64 = ShiftedF64;

/// The former name of [`ShiftedF64`], as a value.
#[deprecated(since = "0.2.0", note = "renamed `ShiftedF64`")]
#[allow(non_upper_case_globals)]
pub const LogF64: ShiftedF64 = ShiftedF64;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
