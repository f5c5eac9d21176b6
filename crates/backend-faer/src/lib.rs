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
//! * [`Accurate`]: the dense LU of [`ShiftedF64`] where its own `O(n²)`
//!   check certifies it (ordinary scores: dense speed), and elsewhere the
//!   cancellation-free elimination of the graph weights
//!   ([`spantree_core::elimination`]) on shifted columns: `ln Z` and every
//!   marginal keep their relative accuracy whatever the spread of scales
//!   inside a column (root scores far below arc scores, where dense LU
//!   returns garbage or NaN), for both rootings.
//!   [`LogAccurate`] runs the same elimination with `ln Z` in log space.
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
//! the repository's `docs/report/engines.md`: the plain LU (blocked panels,
//! one SIMD kernel of fused multiply-adds over four rows, run-time dispatch)
//! is 1.4–3× faster than faer's LU + inverse up to `n = 384`
//! ([`CROSSOVER`]), and they tie at `n = 512`;
//! the elimination keeps ≥ 45 correct bits of every marginal where dense LU
//! keeps none. [`Accurate`] takes it only where the dense LU's own checks
//! cannot certify the answer: `ln Z` + marginals in 1.0–2.1× the time of
//! [`F64`] at `n = 10`–`200` on random scores (4.5× at `n = 500`: `cargo
//! bench -p spantree-bench --bench partition`), 1.1–1.5× the dense route
//! where root scores 40 below the arcs' need the elimination
//! (`spantree-report speed`; both 2026-11-30).
//!
//! ## Accuracy of the derivatives
//!
//! On [`LogAccurate`], and on [`Accurate`] wherever dense LU is not
//! certified, every derivative comes from the elimination too (run on dual
//! numbers in `f64`, log space only where a product leaves `f64`'s range;
//! see [`spantree_core::elimination`]); where it is certified (the shift-0
//! rows below), [`Accurate`] answers as [`ShiftedF64`] does; on [`F64`] and
//! [`ShiftedF64`] from the
//! dense inverse, refused with
//! [`Numerical::Inaccurate`](spantree_core::Numerical::Inaccurate) where
//! the LU's own check finds it cannot hold them, and every gradient where
//! its own norm-wise estimate says fewer than 45 bits
//! ([`VjpAccuracy`](spantree_core::engine::VjpAccuracy)): the dense
//! column shows either ≥ 45 bits norm-wise or `refused`. Correct bits against
//! `HighPrecision<1216>`, as `norm-wise / fewest of an entry ≥ 1e-8 of the
//! largest`, the worst over `n ∈ {5, 12, 25, 60}`, unlabeled and two labels;
//! `grads` is the worst of the gradients of entropy, cross-entropy and KL
//! (both arguments), expected attachment, GE, `grad_partition` and a
//! label-marginal VJP; covariance by the Jacobian–vector route, pairs by
//! conditioning (`cargo run --profile test -p spantree-faer --example
//! honest_accuracy`, which prints every cell):
//!
//! | rooting | root scores | dense LU (`log`): grads | `accurate`: grads | covariance | pairs | `log-accurate`: grads | covariance | floor: grads |
//! |---|---|---|---|---|---|---|---|---|
//! | single | shift 0 | 48 / 36 | 50 / 36 | 50 / 46 | 51 / 49 | 50 / 36 | 50 / 46 | 53 / 40 |
//! | single | shift -10 | refused | 49 / 36 | 50 / 47 | 51 / 49 | 50 / 36 | 50 / 47 | 53 / 39 |
//! | single | shift -20 | refused | 49 / 35 | 50 / 47 | 50 / 50 | 49 / 36 | 51 / 47 | 53 / 40 |
//! | single | shift -40 | refused | 49 / 35 | 50 / 46 | 50 / 49 | 50 / 36 | 51 / 47 | 53 / 40 |
//! | single | shift -80 | refused | 50 / 36 | 51 / 48 | 52 / 50 | 50 / 36 | 51 / 48 | 53 / 40 |
//! | single | shift -300 | refused | 50 / 37 | 51 / 47 | 51 / 50 | 50 / 37 | 51 / 47 | 53 / 39 |
//! | single | spread ±50 | refused | 46 / 33 | 50 / 45 | 51 / 50 | 46 / 33 | 50 / 47 | 52 / 43 |
//! | multi | shift 0 | 47 / 35 | 49 / 35 | 50 / 45 | 49 / 48 | 49 / 36 | 50 / 46 | 53 / 39 |
//! | multi | shift -10 | refused | 50 / 36 | 51 / 46 | 51 / 49 | 50 / 36 | 51 / 46 | 53 / 40 |
//! | multi | shift -20 | refused | 49 / 37 | 49 / 47 | 51 / 48 | 49 / 37 | 49 / 47 | 53 / 40 |
//! | multi | shift -40 | refused or `Singular` | 50 / 36 | 51 / 46 | 51 / 49 | 50 / 36 | 51 / 46 | 52 / 40 |
//! | multi | shift -80 | refused or `Singular` | 50 / 35 | 51 / 46 | 52 / 49 | 50 / 35 | 51 / 46 | 53 / 40 |
//! | multi | shift -300 | refused or `Singular` | 50 / 37 | 51 / 46 | 51 / 49 | 50 / 37 | 51 / 46 | 53 / 39 |
//! | multi | spread ±50 | refused | 46 / 33 | 50 / 47 | 50 / 49 | 46 / 33 | 50 / 47 | 52 / 43 |
//!
//! `floor` (`HONEST_FLOOR=1`) is the reference on the weights `e^θ` rounded
//! to `f64` against the reference on the scores: what rounding the weights
//! once costs any route that starts from `f64` weights, as every engine
//! here does. Before this route, `accurate` read its gradients from dense
//! LU: 32 bits at root shift −10, 16 at −20, none (wrong signs) from −40
//! on, multi-root. What the table leaves:
//!
//! * norm-wise, every gradient keeps ≥ 46 bits (the bar is 45);
//!   `grad_partition` reads `Z` from the pivots' product (`f64` pivots, also
//!   for `log-accurate`) and the column shifts summed in double-double;
//!   multi-root entropy-type seeds at large root shifts split off
//!   `Cov[1_e, #root arcs]`, run on graded numbers
//!   (`spantree_core::elimination::Graded`);
//! * entry-wise, 32–37 bits on entries `≥ 1e-8` of the largest, where the
//!   issue asks 40: those entries are small differences (`μ_e (E[g | e] −
//!   E[g])` near zero, `μ^q − μ^p`), and the floor column shows that
//!   rounding the weights alone leaves 39–40 bits of them at `n = 60`; the
//!   elimination stays within 2–5 bits of that floor, and the certified
//!   dense route (shift 0) within 4–5. On the spread family (nearly
//!   deterministic graphs) the worst entries keep 32–33 against a floor
//!   of 43: `O(1)` parts of the seed cancel between `E[g | e]` and `E[g]`
//!   after rounding the values they are formed from;
//! * `log-accurate` keeps the bits of `accurate` (before: `≈ log₂ |shift|`
//!   bits fewer, 43 / 30 at −300: a weight `e^{−300}` held as its
//!   logarithm carries `300 ε`). Its marginals and derivatives run in `f64`
//!   with log space only on underflow, and single-root its root row is
//!   scaled by an exact power of two first (every tree has one root arc),
//!   so `ln Z` in log space keeps its bits too.
//!
//! **The dense check.** [`Lu`] estimates the absolute error of
//! `ln |det|` as `ε Σ_k c_k / |u_kk|` (`c_k` the column's absolute sum),
//! `O(n²)`; the model refuses `ln Z` when it exceeds `2⁻²⁷ max(1, |ln Z|)`
//! and any derivative when it exceeds `2⁻⁴⁰`. On the families above no
//! dense `ln Z` with fewer than 26 bits got through (the rest is refused or
//! a typed `Singular`/`NegativeDeterminant`). False refusals, measured on
//! `N(0, σ²)` scores, `σ ∈ {1, 2, 4}`, `n = 1..100`, 10 graphs each, both
//! rootings, both dense engines (`… --example honest_accuracy refusals`):
//! none of 12 000 graphs refused, for `ln Z` or for the marginals. Their
//! gradients (entropy, GE, KL; 3,000 per row, `n = 1..100`): none refused
//! at `σ = 1`; at `σ = 2` (`N(0, 4)`) 3 single-root and 32 multi-root
//! refused, every one a false refusal (the refused gradient, unchecked,
//! kept 45.7–50 bits against `HighPrecision<256>`; the estimate said
//! 42–44); at `σ = 4`, 68 and 1,061 refused, of which 61 and 740 false.
//! The estimate is pessimistic by 2–3 bits in the median (`cargo run
//! --profile test -p spantree-faer --example vjp_calibration`).
//!
//! **Time** of the new route against the dense one (median of 21, `N(0, 1)`
//! single-root graphs, `Model::new` plus the quantity; release build on 2
//! shared cores, `cargo run --release -p spantree-faer --example
//! honest_accuracy timing`; `log-accurate` before → after its derivatives
//! moved to `f64`, the two binaries run alternately). At multi-root shift
//! −20 dense LU refuses, so its column is the time to refuse:
//!
//! | n   | quantity | dense LU (`log`) | `accurate` | ratio | `log-accurate` |
//! |-----|----------|------------------|------------|-------|----------------|
//! | 10  | `grad_entropy` | 0.005 ms | 0.005 ms | 1.0× | 0.07 → 0.03 ms |
//! | 10  | covariance (3 features) | 0.009 ms | 0.007 ms | 0.8× | 0.13 → 0.05 ms |
//! | 10  | `grad_entropy`, multi-root, shift −20 | 0.002 ms | 0.033 ms | 15× | 0.11 → 0.04 ms |
//! | 36  | `grad_entropy` | 0.047 ms | 0.047 ms | 1.0× | 2.3 → 0.54 ms |
//! | 36  | covariance (3 features) | 0.084 ms | 0.073 ms | 0.9× | 7.9 → 0.69 ms |
//! | 36  | `grad_entropy`, multi-root, shift −20 | 0.033 ms | 0.46 ms | 14× | 7.2 → 0.69 ms |
//! | 100 | `grad_entropy` | 0.87 ms | 0.88 ms | 1.0× | 104 → 15 ms |
//! | 100 | covariance (3 features) | 1.8 ms | 1.7 ms | 0.9× | 168 → 19 ms |
//! | 100 | `grad_entropy`, multi-root, shift −20 | 0.23 ms | 16 ms | 72× | 132 → 15 ms |
//!
//! Multi-root entropy-type gradients at large root shifts run one more
//! product, `J 1_root`, on graded numbers (before: on dual numbers). Its
//! cost alone, median of 21, root shift −20, release build on 2 shared
//! cores (`… --example honest_accuracy timing`, second table): 0.013 ms
//! against 0.010 ms at `n = 10` (1.3×), 0.21 against 0.12 ms at 36 (1.7×),
//! 3.3 against 1.5 ms at 100 (2.2×); the whole gradient (one dual run and
//! one graded run, against two dual runs before) costs 1.15×, 1.4× and
//! 1.6× the route before.
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
mod kernel;
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
/// Every answer passes the LU's own `O(n²)` check first
/// ([`Lu`]'s `ln_det_error`: pivots against their columns): where dense LU
/// has lost `ln Z` (root weights too small for a multi-root diagonal, pivot
/// cancellation) it returns [`Numerical::Inaccurate`](spantree_core::Numerical::Inaccurate)
/// instead of a value; derivatives need a tighter estimate than `ln Z`.
/// Every gradient (every vector–Jacobian product of the marginals) passes
/// its own `O(n²)` norm-wise estimate
/// ([`VjpAccuracy`](spantree_core::engine::VjpAccuracy)) and is refused
/// with [`Inaccuracy::SmallDerivative`](spantree_core::Inaccuracy::SmallDerivative)
/// below 45 estimated bits: where words are nearly certain of their heads
/// the dense product loses bits. Use [`Accurate`] then.
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
/// of [`F64`], and so is the accuracy check that refuses with
/// [`Numerical::Inaccurate`](spantree_core::Numerical::Inaccurate).
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

    /// [`Dense`] with its derivative check
    /// ([`Dense::with_derivative_check`]).
    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        Dense::new(weights, rooting, Lu::new).with_derivative_check()
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

    /// [`Dense`] with its derivative check
    /// ([`Dense::with_derivative_check`]).
    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        Dense::new(weights, rooting, Lu::new).with_derivative_check()
    }
}

/// The dense engines with the derivative check chosen: `F64` is
/// `DenseLu { shifted: false, derivative_check: true }`, `ShiftedF64` is
/// `{ shifted: true, derivative_check: true }`. Without the check a
/// vector–Jacobian product is returned however few bits it keeps: for
/// measuring what the check refuses (tests, calibration), never for use.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DenseLu {
    /// Columns divided by their largest weight, as `ShiftedF64`.
    pub shifted: bool,
    /// [`Dense::with_derivative_check`], as `F64` and `ShiftedF64`.
    pub derivative_check: bool,
}

impl Engine for DenseLu {
    type Scalar = f64;
    type Lu = Lu;
    type Factors = Dense<Lu>;

    fn name(&self) -> &'static str {
        match (self.shifted, self.derivative_check) {
            (false, true) => F64.name(),
            (true, true) => ShiftedF64.name(),
            (false, false) => "f64-unchecked",
            (true, false) => "log-unchecked",
        }
    }

    fn prepare<W: Scalar>(
        &self,
        graph: &Graph<W>,
        convert: impl Fn(&W) -> f64,
    ) -> Result<Prepared<f64>> {
        if self.shifted {
            ShiftedF64.prepare(graph, convert)
        } else {
            F64.prepare(graph, convert)
        }
    }

    fn lu(&self, matrix: Matrix<f64>) -> Lu {
        Lu::new(matrix)
    }

    fn factorize(&self, weights: Matrix<f64>, rooting: Rooting) -> Dense<Lu> {
        let dense = Dense::new(weights, rooting, Lu::new);
        if self.derivative_check {
            dense.with_derivative_check()
        } else {
            dense
        }
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
