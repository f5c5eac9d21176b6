//! Dense LU where its own check certifies it, the cancellation-free
//! elimination elsewhere: the accurate default at dense speed.

use std::sync::OnceLock;

use super::dense::{self, DENSE_UNCERTAINTY};
use super::derivative_check::DenseRoute;
use super::eliminated::{eliminated_columns, eliminated_marginals};
use super::{Dense, Eliminated, Factorization, Factors};
use crate::elimination::{root_scale, PowerOfTwo};
use crate::error::Numerical;
use crate::graph::Rooting;
use crate::laplacian::laplacian;
use crate::linalg::refine::{corrections, residuals, Corrections, Form};
use crate::linalg::{column_blocks, load_lanes, store_lanes};
use crate::matrix::{Matrix, Scratch};
use crate::scalar::Sign;
use pulp::{Arch, Simd, WithSimd};

/// The largest estimated absolute error of `ln |det L|`
/// ([`Factorization::ln_det_error`]) under which [`Certified`] answers from
/// the dense LU: `2⁻⁴⁰`, the bar the model sets for any dense derivative
/// ([`DERIVATIVE_TOLERANCE`](crate::model::DERIVATIVE_TOLERANCE)), and at most
/// `2⁻⁴² max(1, |ln det L|)`, so that `ln Z` keeps the 42 bits the
/// elimination is held to.
pub const CERTIFY_LN_DET: f64 = 9.094_947_017_729_282e-13;

/// The number of correct bits every dense marginal must keep, by the
/// entry-wise estimate of [`Certified`], to be returned rather than the
/// elimination's: `40`, the elimination's own bar (every marginal above
/// `1e-300` keeps ≥ 40 bits *relative to itself*).
pub const CERTIFY_MARGINAL_BITS: i32 = 40;

/// The largest share of the words whose columns of dense marginals
/// [`Certified`] refines when they fail the first entry-wise test (one step
/// of iterative refinement of their rows of `X`, `O(n²)` each), rather than
/// taking every column from the elimination's marginal pass: `0.8`. The
/// refinement costs a double-double residual (about `0.25 ns` per weight
/// and row with AVX-512) and a product `Xᵀ r`, against about `0.4 ns · n³`
/// for the marginal pass. With `N(0, 2²)` scores, `k` columns failed: about
/// `n/7` multi-root at `n = 36`, `n/4` at `64`, `n/2` at `100` and nearly
/// `n` at `200`; single-root (word 1's column always among them) 1, 2, 4
/// and 23 (`cargo run --release -p spantree-bench --example certified 36 64
/// 100 200`). Dense LU + inverse + refinement against dense LU + the marginal
/// pass (`… --example certified time 36 64 100 200`, 10 graphs, medians):
/// multi-root 0.32× at `n = 36`, 0.44× at `64`, 0.76× at `100` with this
/// share (1.10× with `1/2`, 0.73× with `1`), 1.13× at `200` (1.27× with
/// `1`: there every column fails, and the inverse is formed for nothing);
/// single-root 0.25×–0.39× at every size. A speed policy, not an accuracy
/// one: every route keeps 40 bits.
pub const REFINE_COLUMNS_UP_TO: f64 = 0.8;

/// The largest share of the words whose columns of dense marginals
/// [`Certified`] recomputes by the elimination when they fail the
/// entry-wise test (multi-root only), rather than recomputing every column:
/// `1/4`. Recomputing
/// `k` columns eliminates the other words (`n³/3` multiply-adds) and pushes
/// `k` columns back (`2n²k`); at `k = n/4` that is about `0.85 n³`, against
/// `1.3 n³` for every column. A speed policy: either route keeps 40 bits.
pub const REPAIR_COLUMNS_UP_TO: f64 = 0.25;

/// The largest `k` for which [`Certified`] scales a single-root graph's
/// root row (and the first row of a multi-root graph's row-sum form) by
/// `2^k` before the dense LU: `64`, root weights down to `2⁻⁶⁴`
/// of the largest arc (root scores about 44 below the arcs'). Below that the
/// row is left as it is, and the LU's estimate sends the graph to the
/// elimination: entropy-type quantities multiply the errors of the
/// marginals by `|ln w|`, up to the shift, and the dense marginals are
/// certified to 40 bits where the elimination's keep about 50; at root
/// scores −300 the scaled dense route gave a cross-entropy 44.4 bits
/// (`tests/honest.rs`, against the 45 asked).
const ROOT_SCALE_UP_TO: i32 = 64;

/// A Laplacian factorised densely and, where the dense factorisation cannot
/// be trusted, by the cancellation-free elimination ([`Eliminated`]).
///
/// The dense LU `F` comes first (`2n³/3` flops). Single-root, the root row
/// of the Laplacian is first scaled by an exact power of two `2^k` that
/// brings its largest weight into `[1, 2)` (for `k ≤ 64`, see
/// `ROOT_SCALE_UP_TO`): every single-root tree has one root arc, so `Z`
/// scales by `2^k` and no marginal moves, and root scores far below the
/// arcs' (−40) no longer leave a row of tiny entries whose pivots make the
/// LU's estimate of its own error huge. (Partial pivoting's backward error
/// is row-wise: the LU of such a row was accurate, its estimate was not;
/// the answers are unscaled exactly, `ln Z` by `k ln 2` to about twice
/// `f64`'s precision.) Its own `O(n²)` estimate
/// of the error of `ln |det L|`, `ε Σ_k c_k / |u_kk|`
/// ([`Factorization::ln_det_error`]), decides:
///
/// * **certified** (estimate `≤` [`CERTIFY_LN_DET`], positive determinant,
///   no zero pivot): `ln Z` and every vector–Jacobian product come from the
///   LU and its inverse, as on the dense engines. The marginals pass one
///   more `O(n²)` test, entry by entry: the error of
///   `μ_e = w_e (X_mm − X_mh)` is at most about `e (|X_mm| + |X_mh|) w_e`
///   with `e` the estimate plus `8 n ε` (the rounding of the solves; on a
///   multi-root Laplacian, an M-matrix, the solves for `X` add only
///   non-negative terms, so `e` estimates the relative error of each entry
///   of `X`), and every `μ_e` must keep [`CERTIFY_MARGINAL_BITS`] relative
///   to itself by it. What fails is a marginal far below `1` that the
///   inverse reads as a difference `X_mm − X_mh` about 10–40 times smaller
///   than its terms, against an allowance of `2⁻⁴⁰ / e` (20 at `n = 20`, 6
///   at `n = 64`): with `N(0, 2²)` scores, multi-root, about `n/7` columns
///   at `n = 36`, `n/2` at `n = 100`.
///
///   **The failing columns are refined**, if they are at most
///   [`REFINE_COLUMNS_UP_TO`] of the words (`O(n²)` each): row `m − 1` of
///   `X` solves `Lᵀ y = e_{m−1}`; its residual `r = e − Lᵀ x` is formed from
///   the weights in double-double (Ogita–Rump–Oishi `Dot2`, the diagonal of
///   `L` summed in double-double too, so the residual is exact to about
///   `2⁻⁹⁰` of its terms), the correction `δ = Xᵀ r` comes from the inverse
///   already formed, and the column is read from the unevaluated pair
///   `(x, δ)`: `μ = w ((x_m − x_h) + (δ_m − δ_h))`, the first difference
///   exact (Sterbenz) where it cancels. The error of `x + δ` is that of
///   `δ`, at most `Σ_l |X[l][k]| · max_l (a |r_l| + s_l)` with `s` the
///   residual's own error and `a = e` (multi-root: `e` bounds the relative
///   error of `X`'s entries); single-root `a = max(e, 4q)` with `q` the
///   largest relative correction `‖δ‖_∞ / ‖x‖_∞` the refined rows show.
///   Each refined marginal must keep [`CERTIFY_MARGINAL_BITS`] by twice
///   that estimate: the error falls from about `e |x|` to about `e² |x|`.
///   (Measured: every refined column passes on `N(0, 2²)` graphs at
///   `n = 20`–`200`; `cargo run --release -p spantree-bench --example
///   certified`.) Multi-root, a column that still fails is recomputed by
///   the elimination
///   ([`elimination::checked_column_marginals`](crate::elimination::checked_column_marginals):
///   the other words eliminated, `n³/3`, and those columns pushed back,
///   `2n²` each), as long as they are at most [`REPAIR_COLUMNS_UP_TO`] of
///   the words; beyond that, or when more than [`REFINE_COLUMNS_UP_TO`]
///   failed the first test, every column comes from the elimination's
///   marginal pass (`1.3 n³`).
///
///   Single-root, the Laplacian (Koo et al.) is not an M-matrix: its root
///   row makes the elimination add terms of both signs, and an entry of `X`
///   read alone (root arcs, arcs into word 1 and from it) can lose bits
///   that the first test cannot see (measured: 29 bits on an arc into word
///   1 that passed, root scores −20 next to arc scores spread over ±50, in
///   `tests/certified.rs`). So when any column fails, word 1's column is
///   refined with the failing ones, and in every other column the entries
///   read alone, `X[j][0]` and `X[j][j]`, must keep 40 bits against `4q`
///   times their row's largest entry (a norm-wise error like that of the
///   refined rows); any entry that still fails sends every column to the
///   elimination, as does a word nearly certain of its head. When every
///   column passes the first test, the columns stand on its estimate, which
///   is calibrated, not proven. Against a 128-bit reference (`cargo run
///   --release -p spantree-bench --example entry_wise_calibration`,
///   `N(0, σ²)` scores, `σ = 1, 2, 4`, root shifts `0` and `−10`, 100
///   graphs per size at `n = 20`–`100` (500 at `20` and `50`), 50 at
///   `200`), the columns left unrefined on the single-root graphs the dense
///   route answers (no nearly certain word) kept ≥ 45.1 bits on the arcs
///   read as differences (true error ≤ `2^{-2.8}` of the estimate) and
///   ≥ 43.9 bits on the entries read alone, word 1's column included, when
///   no column failed (≤ `2^{-1.8} e`); multi-root, ≥ 42.1 bits
///   (`2^{-0.4}`: nearly tight), and ≥ 42.2 on the root arcs (`2^{0.8} e`:
///   no bound there), both at `n = 20`, `σ = 4`; the row-sum form's test
///   (root shifts −10 and −40, `n = 20`–`100`) as single-root: ≥ 46.3 bits
///   (`2^{-2.9}`), ≥ 44.9 on entries read alone (`2^{-2.5} e`). On graphs
///   with a nearly certain word, the estimate fails as the least
///   uncertainty `u` falls (`2^{-0.4}` for `u ∈ [2⁻⁷, 2⁻⁵)`, up to
///   `2^{6.7}`, 35.3 bits, near `u = 2⁻¹³`), and word 1's column,
///   unrefined, kept 40.0 bits (`2^{4.3} e`): those graphs go to the
///   elimination (and a column failed on each), so the single-root
///   marginals lean on that test ([`DENSE_UNCERTAINTY`]) as well as on
///   this one.
///
///   The inverse is formed for the test at every size (the refined dense
///   route costs 0.25–0.45× the elimination's marginal pass single-root,
///   up to `n = 200`); `ln Z` is certified: no forward elimination for it
///   when the marginal pass answers. No rigorous bound sharper than `e` is
///   known that is as cheap: rigorous forward-error bounds of triangular
///   solves grow like `n² ε`, above the `8 n ε` used; and no sharper
///   estimate keeps 4 bits of margin on the graphs above (`4 n ε` for the
///   solves would refine 1.7 columns rather than 4.5 at `n = 100`,
///   `σ = 2`, single-root, but lets the true error reach `2^{-2.0}` of the
///   estimate at `n = 20`, root shift −10, and leaves 41.1 bits
///   multi-root; `c √n ε` less margin still);
/// * **not certified, multi-root: the row-sum form.** Root weights tiny
///   next to the arc weights (root scores −40) leave every diagonal entry
///   `ρ_m + Σ_h A[h][m]` unable to hold `ρ_m`, and the LU refuses itself.
///   Adding every other row to the first, an exact row operation, turns
///   that row into the column sums, which are the root weights: `M = E L`
///   has first row `2^k ρ` (`k` as single-root), `det M = 2^k Z` exactly,
///   and `M` is as well conditioned as the single-root Laplacian. Its LU
///   (`2n³/3` more) passes the same estimate on such graphs, and then
///   answers `ln Z`; the marginals come from `M⁻¹` under the single-root
///   policy: the columns that fail the entry-wise test (at most
///   [`REFINE_COLUMNS_UP_TO`] of the words), with word 1's, are refined
///   as above but against `M` (the residual `e_j − Mᵀ y` from the weights
///   in double-double, whose diagonal holds the root weights that `M`'s
///   rounded diagonal cannot; the correction `M⁻ᵀ r`; see
///   `linalg::refine` and `arc_reads` for the proof),
///   the entries read alone in the other columns pass the norm-wise
///   guard, and no word is nearly certain; or else every column comes from
///   the elimination's marginal pass alone. Derivatives come from the
///   elimination, started from that `ln Z` (no forward elimination).
///   Measured, root scores −40, `ln Z` + marginals against the dense path
///   (`cargo run --release -p spantree-bench --example elimination_ratio
///   -- -40 11 36 100 200`, one graph per size, medians of 11 groups, a
///   noisy shared machine): 1.6–1.7× at `n = 36` (no column refined),
///   1.7–2.0× at `n = 100` (3 refined; 5.2–5.9× when one failing column
///   sent every column to the elimination), 1.3–4.6× at `n = 200` (23
///   refined; 7.2–9.0× before);
/// * **not certified** otherwise (pivot cancellation; multi-root root
///   weights beyond `2⁻⁶⁴` of the arcs'): every answer comes from the
///   elimination, formed then.
///
/// When `ln Z` is certified and the elimination answers only the marginals
/// or derivatives, it runs without its forward elimination (`n³/3`), and
/// the marginals, once computed, serve its derivatives too: its own (no
/// second marginal pass on graphs with a nearly certain word) or the
/// certified dense ones, which its products read only to choose their
/// route, split off the root offset, centre the seed and weigh their error
/// estimate. Measured on the 1,705 escalated UD sentences of at most 10
/// words (`valgrind --tool=callgrind --toggle-collect='*entropy_and_gradient*'
/// … short_escalated DIR count 1 product 10`): 267.5M instructions before,
/// 237.8M after (−11%), every gradient bit the same (its `digest` mode,
/// 2,017 escalated sentences of any length).
///
/// Solves, the inverse and the adjugate always come from the dense LU
/// (of the scaled Laplacian, unscaled exactly: `X = L'⁻¹ D` for
/// `L' = D L`, `D = diag(2^k, 1, …, 1)`);
/// `∂Z/∂w` always from the elimination (`Z ν`, relative accuracy entry by
/// entry), and the model treats these factors as cancellation-free
/// ([`Factors::cancellation_free`]): it never reads second-order answers
/// from the inverse.
pub struct Certified<F: Factorization<Scalar = f64>> {
    /// The weights as given, when the dense Laplacian's root row is scaled
    /// (`k ≠ 0`); `None` when it is not: the dense factors' weights are
    /// then the given ones, one matrix for both ([`Certified::given`]).
    given: Option<Matrix<f64>>,
    /// Single-root: the power of two `2^k` the root row of the dense
    /// Laplacian is scaled by (`1` multi-root).
    root_scale: PowerOfTwo,
    /// The Laplacian of the weights with the root row scaled by `2^k`.
    dense: Dense<F>,
    /// `X = L⁻¹` of the unscaled Laplacian, when `k ≠ 0` (column `0` of the
    /// scaled one's times `2^k`).
    inverse: OnceLock<Result<Matrix<f64>, Numerical>>,
    certified: bool,
    /// `(sign, ln |det L|)` of the dense LU, unscaled (`ln |det L'| − k ln
    /// 2`): formed once for the certification, and answered by
    /// [`Factors::ln_abs_det`] when certified (no second pass of `n`
    /// logarithms).
    dense_ln_abs_det: (Sign, f64),
    /// The estimated relative error of an entry of `X`, when certified.
    entry_error: f64,
    /// The elimination, formed on first use (boxed, as `row_sum`: the
    /// certified factors, moved from their constructor into the model,
    /// stay a few hundred bytes rather than two kilobytes).
    eliminated: OnceLock<Box<Eliminated<f64, F>>>,
    /// Multi-root, when the dense LU of `L` is not certified: the certified
    /// LU of the row-sum form `M` ([`RowSum`]), which answers `ln Z` and
    /// tries the marginals.
    row_sum: Option<Box<RowSum<F>>>,
    /// The marginals, whether they came from the dense inverse, how many
    /// of their columns the elimination recomputed, and how many were
    /// refined ([`Certified::refined_columns`]).
    marginals: OnceLock<MarginalRoute>,
    factorize: fn(Matrix<f64>) -> F,
}

/// The marginals, whether they came from the dense inverse, how many of
/// their columns the elimination recomputed, and how many were refined.
type MarginalRoute = (Result<Matrix<f64>, Numerical>, bool, usize, usize);

/// The dense marginals, the words whose column failed the entry-wise test,
/// and (single-root) the column sweep of the nearly certain words over them
/// ([`Certified::dense_marginals`]).
type DenseMarginals = (Matrix<f64>, Vec<usize>, Vec<f64>);

impl<F: Factorization<Scalar = f64>> std::fmt::Debug for Certified<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certified")
            .field("certified", &self.certified)
            .finish_non_exhaustive()
    }
}

impl<F: Factorization<Scalar = f64>> Certified<F> {
    /// Factorises the Laplacian of `weights` densely with `factorize`
    /// (`2n³/3` flops), checks it in `O(n²)`, and eliminates (`n³/3`) only
    /// if the check fails.
    pub fn new(weights: Matrix<f64>, rooting: Rooting, factorize: fn(Matrix<f64>) -> F) -> Self {
        // Single-root, every tree has one root arc: the root row scaled by an
        // exact power of two scales Z by it and moves no marginal, and root
        // weights far below the arcs' (root scores −40) no longer make the
        // LU's estimate of its own error huge (the row of the Laplacian that
        // holds them is then of the size of the others).
        let scale = root_scale(&weights, rooting);
        let scale = if scale.0 <= ROOT_SCALE_UP_TO {
            scale
        } else {
            PowerOfTwo(0)
        };
        // Unscaled, the dense factors keep the weights as given: no copy.
        let (given, scaled) = if scale.0 == 0 {
            (None, weights)
        } else {
            let scaled = scale.scaled_roots(&weights);
            (Some(weights), scaled)
        };
        let dense = Dense::new(scaled, rooting, factorize);
        let error = dense.lu().ln_det_error();
        let (sign, ln) = dense.ln_abs_det();
        let ln = unscaled_ln(ln, scale);
        let certified = ln_det_certified(dense.zero_pivot().is_none(), sign, ln, error);
        let weights = given.as_ref().unwrap_or_else(|| dense.weights());
        let n = weights.rows().saturating_sub(1);
        let row_sum = if !certified && rooting == Rooting::Multi {
            RowSum::certified(weights, factorize).map(Box::new)
        } else {
            None
        };
        let certified_factors = Certified {
            given,
            root_scale: scale,
            dense,
            inverse: OnceLock::new(),
            certified,
            dense_ln_abs_det: (sign, ln),
            entry_error: error + 8.0 * n as f64 * f64::EPSILON,
            eliminated: OnceLock::new(),
            row_sum,
            marginals: OnceLock::new(),
            factorize,
        };
        if !certified && certified_factors.row_sum.is_none() {
            certified_factors.eliminated();
        }
        certified_factors
    }

    /// The weights as given: the dense factors' own when the root row is
    /// not scaled. `O(1)`.
    fn given(&self) -> &Matrix<f64> {
        self.given.as_ref().unwrap_or_else(|| self.dense.weights())
    }

    /// Whether the dense factorisation answers (`ln Z`, derivatives).
    pub fn is_certified(&self) -> bool {
        self.certified
    }

    /// Whether `ln Z` of a multi-root graph whose dense LU was not
    /// certified comes from the certified LU of its row-sum form (the first
    /// row replaced by the root weights, see [`Certified`]; `false`
    /// otherwise).
    pub fn row_sum_certified(&self) -> bool {
        self.row_sum.is_some()
    }

    /// Whether the marginals, once computed, came from the dense inverse,
    /// all or all but a few columns ([`Certified::eliminated_columns`])
    /// (`false` before they are computed).
    pub fn dense_marginals_used(&self) -> bool {
        self.marginals.get().is_some_and(|m| m.1)
    }

    /// How many columns of dense marginals failed the entry-wise test and
    /// were recomputed by the elimination (`0` before the marginals are
    /// computed, and when they came wholly from either route).
    pub fn eliminated_columns(&self) -> usize {
        self.marginals.get().map_or(0, |m| m.2)
    }

    /// How many columns of dense marginals failed the first entry-wise test
    /// and were refined (one step of iterative refinement of their rows of
    /// `X`, see [`Certified`]); `0` before the marginals are computed and
    /// when none was tried. Those that still failed are counted by
    /// [`Certified::eliminated_columns`] too (multi-root), or sent every
    /// column to the elimination (single-root).
    pub fn refined_columns(&self) -> usize {
        self.marginals.get().map_or(0, |m| m.3)
    }

    /// Whether the elimination was formed: it answered everything (not
    /// certified), or, certified, a vector–Jacobian product that the dense
    /// route's estimate refused (`false` before any is asked).
    pub fn elimination_formed(&self) -> bool {
        self.eliminated.get().is_some()
    }

    /// The elimination, formed on first use.
    fn eliminated(&self) -> &Eliminated<f64, F> {
        self.eliminated.get_or_init(|| {
            let (weights, rooting) = (self.given().clone(), self.dense.rooting());
            if !self.certified && self.row_sum.is_none() {
                return Box::new(Eliminated::new(weights, rooting, self.factorize));
            }
            // ln Z is certified (by the LU of L or of its row-sum form): no
            // forward elimination for it, and the marginals, if they were
            // computed, are not computed again. Certified dense marginals
            // (every entry ≥ 40 bits) serve the elimination's products only
            // to choose their route (a word certain to `2⁻²⁶`), split off
            // the common root offset and centre the seed (exact invariances
            // of `J ḡ`, whatever constant is taken) and to weigh their error
            // estimate: none needs more bits, and the elimination's marginal
            // pass (the half of an escalated short sentence's product) is
            // not run for them.
            let marginals = self
                .marginals
                .get()
                .filter(|(mu, dense, _, _)| !dense || mu.is_ok())
                .map(|(mu, _, _, _)| mu.clone());
            let (_, log_z) = self.ln_abs_det();
            Box::new(Eliminated::with_log_partition(
                weights,
                rooting,
                self.factorize,
                log_z,
                marginals,
            ))
        })
    }

    /// The dense marginals, the words whose column has an entry that
    /// fails the entry-wise estimate (those columns are not to be used),
    /// and, single-root, the column sweep of
    /// [`nearly_certain_word`](dense::nearly_certain_word) over them
    /// (`[top, sum, allowed]`, `3(n + 1)`; empty multi-root): [`EntryWise`],
    /// `O(n²)`.
    fn dense_marginals(&self) -> Result<DenseMarginals, Numerical> {
        let x = self.dense.inverse()?;
        let w = self.dense.weights();
        let single = self.dense.rooting() == Rooting::Single;
        let bound = 2f64.powi(-CERTIFY_MARGINAL_BITS) / self.entry_error;
        Ok(entry_wise(x, w, single, bound, single, |e| {
            Arch::new().dispatch(e)
        }))
    }

    /// The columns `failed` of the dense marginals `mu` after one step of
    /// iterative refinement of their rows of `X` ([`refined`]).
    fn refined(
        &self,
        mu: Matrix<f64>,
        failed: &[usize],
    ) -> Result<(Matrix<f64>, Vec<usize>, usize), Numerical> {
        Ok(refined(
            self.dense.inverse()?,
            self.dense.weights(),
            Form::Laplacian(self.dense.rooting()),
            self.entry_error,
            mu,
            failed,
        ))
    }

    /// The dense marginals with the columns that failed the entry-wise test
    /// recomputed by the elimination, if they are at most
    /// [`REPAIR_COLUMNS_UP_TO`] of the words of a multi-root graph; `None`
    /// otherwise (or when the `f64` elimination left its safe range: the
    /// caller takes the whole elimination). Returns the number of columns
    /// recomputed.
    fn repaired(&self, mut mu: Matrix<f64>, failed: &[usize]) -> Option<(Matrix<f64>, usize)> {
        let n1 = mu.rows();
        if failed.is_empty() {
            return Some((mu, 0));
        }
        // Single-root, the entries of X have no relative accuracy to trust
        // column by column (see `Certified`): one failing column sends
        // every column to the elimination.
        if self.dense.rooting() == Rooting::Single
            || failed.len() as f64 > REPAIR_COLUMNS_UP_TO * (n1 - 1) as f64
        {
            return None;
        }
        let columns = eliminated_columns(self.dense.weights(), self.dense.rooting(), failed)?;
        for &m in failed {
            for h in 0..n1 {
                mu[(h, m)] = columns[(h, m)];
            }
        }
        Some((mu, failed.len()))
    }
}

impl<F: Factorization<Scalar = f64>> Certified<F> {
    /// The marginals and their route ([`Factors::marginals`] of
    /// [`Certified`]), computed once.
    fn marginal_route(&self) -> &MarginalRoute {
        self.marginals.get_or_init(|| {
            let n = self.dense.weights().rows().saturating_sub(1);
            if let (false, Some(row_sum)) = (self.certified, &self.row_sum) {
                let mut refined = 0;
                if self.eliminated.get().is_none() {
                    match row_sum.marginals(self.given()) {
                        (Some(mu), k) => return (Ok(mu), true, 0, k),
                        (None, k) => refined = k,
                    }
                }
                // ln Z is known: the elimination's marginal pass alone.
                if let Some(e) = self.eliminated.get() {
                    return (e.marginals(), false, 0, refined);
                }
                return (
                    eliminated_marginals(self.given(), Rooting::Multi),
                    false,
                    0,
                    refined,
                );
            }
            if !self.certified {
                return (self.eliminated().marginals(), false, 0, 0);
            }
            let mut tried_columns = 0;
            let single_root = self.dense.rooting() == Rooting::Single;
            // No column can pass: the inverse is not formed for nothing.
            let tried = if any_column_can_pass(self.entry_error) {
                self.dense_marginals().and_then(|(mu, failed, sweep)| {
                    if failed.is_empty() {
                        Ok(Some((mu, failed, 0, sweep)))
                    } else if failed.len() as f64 > REFINE_COLUMNS_UP_TO * n as f64 {
                        Ok(None)
                    } else {
                        // Refined columns move: their part of the sweep is
                        // taken again (word 1's column too, single-root,
                        // which `refined` adds).
                        let (mu, still, k) = self.refined(mu, &failed)?;
                        let mut sweep = sweep;
                        let moved = failed.iter().copied().chain(single_root.then_some(1));
                        resweep_columns(&mut sweep, &mu, moved);
                        Ok(Some((mu, still, k, sweep)))
                    }
                })
            } else {
                Ok(None)
            };
            // Single-root, a word nearly certain of its head sends every
            // column to the elimination: the sweep `EntryWise` took over
            // the marginals it wrote, retaken for the columns refined after
            // it. (Single-root it always takes one; a sweep of another
            // length is taken anew rather than split.)
            let certain = |mu: &Matrix<f64>, sweep: &[f64]| {
                let (w, threshold) = (self.given(), DENSE_UNCERTAINTY);
                if sweep.len() != 3 * mu.rows() {
                    return dense::nearly_certain_word(mu, w, Rooting::Single, threshold);
                }
                let (top, rest) = sweep.split_at(mu.rows());
                let (sum, allowed) = rest.split_at(mu.rows());
                dense::nearly_certain_after_sweep(
                    [top, sum, allowed],
                    mu,
                    w,
                    Rooting::Single,
                    threshold,
                )
            };
            match tried {
                Ok(Some((mu, failed, refined, sweep)))
                    if self.dense.rooting() == Rooting::Multi || certain(&mu, &sweep).is_none() =>
                {
                    if let Some((mu, repaired)) = self.repaired(mu, &failed) {
                        return (Ok(mu), true, repaired, refined);
                    }
                    tried_columns = refined;
                }
                Ok(Some((_, _, refined, _))) => tried_columns = refined,
                Ok(None) => {}
                Err(e) => return (Err(e), true, 0, 0),
            }
            if let Some(e) = self.eliminated.get() {
                return (e.marginals(), false, 0, tried_columns);
            }
            (
                eliminated_marginals(self.dense.weights(), self.dense.rooting()),
                false,
                0,
                tried_columns,
            )
        })
    }
}

impl<F: Factorization<Scalar = f64>> Factors for Certified<F> {
    type Scalar = f64;

    fn weights(&self) -> &Matrix<f64> {
        self.given()
    }

    fn rooting(&self) -> Rooting {
        self.dense.rooting()
    }

    fn zero_pivot(&self) -> Option<usize> {
        if self.certified || self.row_sum.is_some() {
            None
        } else {
            self.eliminated().zero_pivot()
        }
    }

    fn det(&self) -> f64 {
        if self.certified {
            PowerOfTwo(-self.root_scale.0).apply(self.dense.det())
        } else if let Some(row_sum) = &self.row_sum {
            PowerOfTwo(-row_sum.scale.0).apply(row_sum.lu.det())
        } else {
            self.eliminated().det()
        }
    }

    fn ln_abs_det(&self) -> (Sign, f64) {
        if self.certified {
            self.dense_ln_abs_det
        } else if let Some(row_sum) = &self.row_sum {
            (Sign::Positive, row_sum.log_z)
        } else {
            self.eliminated().ln_abs_det()
        }
    }

    /// `X = L⁻¹`: with the root row (row `0`) of the factorised Laplacian
    /// scaled, `L' = D L` with `D = diag(2^k, 1, …)`, so `X = L'⁻¹ D`
    /// (column `0` times `2^k`, exact).
    fn inverse(&self) -> Result<&Matrix<f64>, Numerical> {
        if self.root_scale.0 == 0 {
            return self.dense.inverse();
        }
        self.inverse
            .get_or_init(|| {
                let mut x = self.dense.inverse()?.clone();
                for i in 0..x.rows() {
                    x[(i, 0)] = self.root_scale.apply(x[(i, 0)]);
                }
                Ok(x)
            })
            .as_ref()
            .map_err(|&e| e)
    }

    /// `L x = b` is `L' x = D b`: row `0` of `b` times `2^k` first.
    fn solve(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        if self.root_scale.0 != 0 {
            for j in 0..rhs.cols() {
                rhs[(0, j)] = self.root_scale.apply(rhs[(0, j)]);
            }
        }
        self.dense.solve(rhs)
    }

    /// `Lᵀ x = b` is `L'ᵀ (D⁻¹ x) = b`: row `0` of the solution times `2^k`.
    fn solve_transpose(&self, rhs: &mut Matrix<f64>) -> Result<(), Numerical> {
        self.dense.solve_transpose(rhs)?;
        if self.root_scale.0 != 0 {
            for j in 0..rhs.cols() {
                rhs[(0, j)] = self.root_scale.apply(rhs[(0, j)]);
            }
        }
        Ok(())
    }

    /// `adj L = adj(L') D / 2^k`: every column but `0` divided by `2^k`.
    fn adjugate(&self) -> Matrix<f64> {
        let mut adj = self.dense.adjugate();
        if self.root_scale.0 != 0 {
            let down = PowerOfTwo(-self.root_scale.0);
            for i in 0..adj.rows() {
                for j in 1..adj.cols() {
                    adj[(i, j)] = down.apply(adj[(i, j)]);
                }
            }
        }
        adj
    }

    /// Dense where every entry is certified, directly or after refining its
    /// column, the elimination's in the columns that are not (all of them
    /// when more than [`REPAIR_COLUMNS_UP_TO`] still fail, or more than
    /// [`REFINE_COLUMNS_UP_TO`] failed the first test); computed once. When
    /// `ln Z` is certified, the elimination runs its marginal pass alone
    /// (its `ln Z` is not needed).
    fn marginals(&self) -> Result<Matrix<f64>, Numerical> {
        self.marginal_route().0.clone()
    }

    /// The marginals of [`Certified::marginals`], borrowed (kept once
    /// computed).
    fn marginals_kept(&self) -> Result<std::borrow::Cow<'_, Matrix<f64>>, Numerical> {
        match &self.marginal_route().0 {
            Ok(mu) => Ok(std::borrow::Cow::Borrowed(mu)),
            Err(e) => Err(*e),
        }
    }

    /// Dense where `ln det` is certified and the product's own estimate
    /// ([`VjpAccuracy`](super::VjpAccuracy), `O(n²)`) says it keeps
    /// [`DERIVATIVE_BITS`](super::DERIVATIVE_BITS) norm-wise with [`CERTIFY_DERIVATIVE_MARGIN`](super::CERTIFY_DERIVATIVE_MARGIN) to
    /// spare; the elimination's otherwise (the dense
    /// product, `≈ 4n³` flops, is then spent for nothing: the estimate needs
    /// it). The rule is the one the dense engines escalate by
    /// (`derivative_check::dense_route`, one `O(n²)` pass), without their
    /// refusal. Before, a word nearly certain of its head
    /// ([`DENSE_UNCERTAINTY`]) decided, and the
    /// dense products it let through kept only 37 bits.
    fn marginals_vjp(&self, seed: &Matrix<f64>) -> Result<Matrix<f64>, Numerical> {
        if !self.certified {
            return self.eliminated().marginals_vjp(seed);
        }
        // Word-arc weights into some word spanning more than 2⁵³ (nearly
        // deterministic graphs): the elimination, whose running estimate
        // judges every entry (and escalates by it), where the dense estimate
        // is only norm-wise.
        if super::eliminated::spread_beyond_f64(self.given()) {
            return self.eliminated().marginals_vjp(seed);
        }
        let (v, route) = self.dense.marginals_vjp_routed(seed)?;
        match route {
            DenseRoute::Dense(_) => Ok(v),
            DenseRoute::Elimination => self.eliminated().marginals_vjp(seed),
        }
    }

    fn partition_gradient(&self) -> Result<Matrix<f64>, Numerical> {
        self.eliminated().partition_gradient()
    }

    fn cancellation_free(&self) -> bool {
        true
    }
}

/// The row-sum form of a multi-root Laplacian: `M = E L`, `L` with its
/// first row replaced by its column sums times `2^k`. The column sums of a
/// multi-root Laplacian are the root weights (`L[m][m] = ρ_m + Σ_h A[h][m]`,
/// `L[h][m] = −A[h][m]`), so the row of `M` is `2^k ρ`, formed from the
/// weights themselves, and `det M = 2^k det L = 2^k Z` exactly (adding the
/// other rows to the first leaves the determinant; `2^k` brings the largest
/// root weight into `[1, 2)`, `k ≤ 64` as single-root). This is the
/// single-root Laplacian of Koo et al. but for the root weights still on
/// the diagonal of the other rows: root scores far below the arcs' (−40),
/// which leave `L` a difference of `O(1)` terms on its diagonal whose LU
/// refuses itself, leave `M` as well conditioned as the single-root form,
/// and its LU's own estimate ([`Factorization::ln_det_error`]) decides as
/// for `L`.
///
/// Its marginals, from `Y = M⁻¹` (Jacobi, `∂ ln det M/∂M[i][j] = Y[j][i]`):
/// `μ(h→m) = A[h][m] ([m≠1] Y[m][m] − [h≠1] Y[m][h])` and
/// `μ(0→m) = ρ_m (2^k Y[m][1] + [m≠1] Y[m][m])` (1-based words; `L⁻¹ =
/// M⁻¹ S` with `M = S L`, see `arc_reads`); `M` is no M-matrix, so they
/// are taken under the single-root policy of [`Certified`]: the columns
/// that fail the entry-wise estimate are refined (one step against `M` as
/// given by the weights, [`Form::RowSum`]), and a refined column that
/// still fails, an entry read alone that fails the guard, or a word nearly
/// certain of its head sends every column to the elimination's marginal
/// pass (`ln Z` still from `M`). Derivatives,
/// solves and the inverse do not read `M` (the elimination and the LU of
/// `L` answer them, as when `L` is not certified).
struct RowSum<F> {
    lu: F,
    scale: PowerOfTwo,
    /// `ln Z = ln det M − k ln 2`.
    log_z: f64,
    /// The estimated relative error of an entry of `Y`.
    entry_error: f64,
}

impl<F: Factorization<Scalar = f64>> RowSum<F> {
    /// Factorises `M` of the multi-root `weights` (`2n³/3` flops) and keeps
    /// it if its estimate certifies `ln det M` (as [`Certified::new`] does
    /// for `L`); `None` otherwise, or when the root weights need a scale
    /// beyond `2⁶⁴`.
    fn certified(weights: &Matrix<f64>, factorize: fn(Matrix<f64>) -> F) -> Option<Self> {
        let scale = root_scale(weights, Rooting::Single);
        if scale.0 > ROOT_SCALE_UP_TO || weights.rows() < 2 {
            return None;
        }
        let mut m = laplacian(weights, Rooting::Multi);
        for j in 0..m.cols() {
            m[(0, j)] = scale.apply(weights[(0, j + 1)]);
        }
        let lu = factorize(m);
        let (sign, ln) = lu.ln_abs_det();
        let log_z = unscaled_ln(ln, scale);
        let error = lu.ln_det_error();
        let certified = ln_det_certified(lu.zero_pivot().is_none(), sign, log_z, error);
        let n = weights.rows() - 1;
        certified.then_some(RowSum {
            lu,
            scale,
            log_z,
            entry_error: error + 8.0 * n as f64 * f64::EPSILON,
        })
    }

    /// The marginals from `Y = M⁻¹`, under the single-root policy of
    /// [`Certified`]: the columns that fail the entry-wise estimate (at
    /// most [`REFINE_COLUMNS_UP_TO`] of the words), with word 1's, refined
    /// against `M` as given by the weights ([`refined`] with
    /// [`Form::RowSum`]); `None` if a refined column still fails, an entry
    /// read alone fails the norm-wise guard, or a word is nearly certain of
    /// its head ([`DENSE_UNCERTAINTY`], root arcs counted as one word).
    /// Returns the number of columns refined too (`0` when none failed).
    /// `O(n³)` for `Y`, `O(n²)` per refined column after.
    fn marginals(&self, weights: &Matrix<f64>) -> (Option<Matrix<f64>>, usize) {
        if !any_column_can_pass(self.entry_error) {
            return (None, 0);
        }
        let Ok(y) = self.lu.inverse() else {
            return (None, 0);
        };
        let n = weights.rows() - 1;
        let (mu, failed) = self.first_test(&y, weights);
        let (mu, refined_columns) = if failed.is_empty() {
            (mu, 0)
        } else if failed.len() as f64 > REFINE_COLUMNS_UP_TO * n as f64 {
            return (None, 0);
        } else {
            let form = Form::RowSum(self.scale);
            let (mu, still, k) = refined(&y, weights, form, self.entry_error, mu, &failed);
            if !still.is_empty() {
                return (None, k);
            }
            (mu, k)
        };
        let certain = dense::nearly_certain_word(&mu, weights, Rooting::Single, DENSE_UNCERTAINTY);
        (certain.is_none().then_some(mu), refined_columns)
    }

    /// The marginals from `Y = M⁻¹` ([`arc_reads`]) and the words whose
    /// column has an entry that fails the entry-wise estimate: `|μ|` must
    /// exceed its error bound `e · size · w` by `2⁴⁰`. `O(n²)`.
    fn first_test(&self, y: &Matrix<f64>, weights: &Matrix<f64>) -> (Matrix<f64>, Vec<usize>) {
        let n1 = weights.rows();
        let bound = 2f64.powi(-CERTIFY_MARGINAL_BITS) / self.entry_error;
        let form = Form::RowSum(self.scale);
        let mut mu = Matrix::zeros(n1, n1);
        let mut failed = Vec::new();
        for m in 1..n1 {
            let j = m - 1;
            let row = y.row(j);
            let mut fails = false;
            for h in (0..n1).filter(|&h| h != m) {
                let w = weights[(h, m)];
                if w == 0.0 {
                    continue;
                }
                let (mut value, mut size) = (0.0, 0.0);
                for (i, s) in arc_reads(form, h, j).into_iter().flatten() {
                    value += s * row[i];
                    size += (s * row[i]).abs();
                }
                // |μ| must exceed its error bound e · size · w by 2⁴⁰ (NaN fails).
                let keeps_its_bits = size <= bound * value.abs();
                fails |= !keeps_its_bits;
                mu[(h, m)] = w * value;
            }
            if fails {
                failed.push(m);
            }
        }
        (mu, failed)
    }
}

/// The dense marginals `μ_hm = w_hm (X_jj − X_ji)` (`m = j + 1`, `h = i + 1`;
/// single-root without `X_00` and `X_j0`'s subtraction, the root arcs
/// `X_jj` multi-root and `X_j0` single-root: [`arc_entries`](crate::laplacian::arc_entries))
/// with their entry-wise test: `|X_jj| + |X_ji| ≤ bound · |μ_hm / w_hm|`,
/// i.e. the difference keeps [`CERTIFY_MARGINAL_BITS`] against its
/// rounding `entry_error · (|X_jj| + |X_ji|)` (NaN fails). Over blocks of
/// as many words as a vector has lanes ([`column_blocks`]) down the rows
/// `h`: arc `h → m` reads `X_{j,h−1}` along row `h − 1` of `Xᵀ`,
/// transposed once into the thread's [`Scratch`], and each block's state
/// (whether an entry failed, and the sweep's) stays in vector registers
/// down the rows; every load and store is a whole vector, branch-free
/// (fewer words than lanes: `pulp::Scalar`, one lane). With `sweep`
/// (`3(n + 1)` zeros, else
/// empty) it also takes [`nearly_certain_word`](dense::nearly_certain_word)'s
/// column sweep of the marginals it writes, in the same order, the same
/// bits: per column the largest marginal, their sum and the count of
/// allowed arcs, over `h ≠ m` (the diagonal arc's lane adds `+0` and
/// counts nothing). Returns the words with a failing entry.
/// `O(n²)`, `n² + 3n` of the thread's [`Scratch`] besides `out`
/// (whose column `0` it leaves as it is).
struct EntryWise<'a> {
    x: &'a [f64],
    w: &'a [f64],
    out: &'a mut [f64],
    n1: usize,
    single: bool,
    bound: f64,
    sweep: &'a mut [f64],
}

impl WithSimd for EntryWise<'_> {
    type Output = Vec<usize>;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> Vec<usize> {
        // The sweep as a constant: each body keeps only its own work.
        match (self.n1 <= Sm::F64_LANES, self.sweep.is_empty()) {
            (true, true) => entry_wise_blocks::<_, false>(pulp::Scalar::new(), self),
            (true, false) => entry_wise_blocks::<_, true>(pulp::Scalar::new(), self),
            (false, true) => entry_wise_blocks::<_, false>(simd, self),
            (false, false) => entry_wise_blocks::<_, true>(simd, self),
        }
    }
}

/// The body of [`EntryWise`] under `simd` (at least as many words as
/// lanes), with the column sweep if `SWEEP`.
#[inline(always)]
fn entry_wise_blocks<Sm: Simd, const SWEEP: bool>(simd: Sm, args: EntryWise<'_>) -> Vec<usize> {
    let EntryWise {
        x,
        w,
        out,
        n1,
        single,
        bound,
        sweep,
    } = args;
    let n = n1 - 1;
    if n == 0 {
        return Vec::new();
    }
    // `Xᵀ`, then per word the diagonal read (none single-root into word
    // 1), the word `m` itself, and whether an entry failed.
    let mut buf = Scratch::take();
    buf.reserve(n * n + 3 * n);
    for i in 0..n {
        buf.extend(x.chunks_exact(n).map(|xr| xr[i]));
    }
    buf.resize(n * n + 3 * n, 0.0);
    let (xt, rest) = buf.split_at_mut(n * n);
    let xt = &*xt;
    let (diagonal, rest) = rest.split_at_mut(n);
    let (words, failed) = rest.split_at_mut(n);
    for (j, (d, m)) in diagonal.iter_mut().zip(words.iter_mut()).enumerate() {
        *d = if single && j == 0 { 0.0 } else { x[j * n + j] };
        *m = (j + 1) as f64;
    }
    let (top, sum, allowed): (&mut [f64], &mut [f64], &mut [f64]) = if SWEEP {
        let (top, rest) = sweep[..3 * n1].split_at_mut(n1);
        let (sum, allowed) = rest.split_at_mut(n1);
        (&mut top[1..], &mut sum[1..], &mut allowed[1..])
    } else {
        (&mut [], &mut [], &mut [])
    };
    let (zero, one, bound) = (
        simd.splat_f64s(0.0),
        simd.splat_f64s(1.0),
        simd.splat_f64s(bound),
    );
    let lanes = Sm::F64_LANES;
    for at in column_blocks(n, lanes) {
        let load = |m: &[f64], k: usize| load_lanes(simd, m, k);
        let (d, words) = (load(diagonal, at), load(words, at));
        let (mut failed_v, mut top_v, mut sum_v, mut allowed_v) = (zero, zero, zero, zero);
        for h in 0..n1 {
            // Arc `h → m` of lane `j` at `h n1 + 1 + j`: `μ = w (a − b)`.
            let row = h * n1 + 1 + at;
            let (a, b) = match (h, single) {
                (0, false) | (1, true) => (d, zero),
                (0, true) => (load(xt, at), zero),
                _ => (d, load(xt, (h - 1) * n + at)),
            };
            let wv = load(w, row);
            let arc = simd.not_m64s(simd.equal_f64s(wv, zero));
            let value = simd.sub_f64s(a, b);
            let size = simd.add_f64s(simd.abs_f64s(a), simd.abs_f64s(b));
            let keeps_its_bits =
                simd.less_than_or_equal_f64s(size, simd.mul_f64s(bound, simd.abs_f64s(value)));
            let fails = simd.and_m64s(arc, simd.not_m64s(keeps_its_bits));
            failed_v = simd.select_f64s(fails, one, failed_v);
            let mu = simd.select_f64s(arc, simd.mul_f64s(wv, value), zero);
            store_lanes(simd, out, row, mu);
            if SWEEP {
                // The diagonal arc `h → h` is no arc: its lane (only in
                // the block holding word `h`) adds `+0` and counts nothing.
                let (mu, arc) = if h > at && h <= at + lanes {
                    let off = simd.not_m64s(simd.equal_f64s(words, simd.splat_f64s(h as f64)));
                    (simd.select_f64s(off, mu, zero), simd.and_m64s(off, arc))
                } else {
                    (mu, arc)
                };
                // The largest kept where `μ` is not greater (as `f64::max`
                // from a non-NaN start: a NaN is not kept).
                top_v = simd.select_f64s(simd.greater_than_f64s(mu, top_v), mu, top_v);
                sum_v = simd.add_f64s(sum_v, mu);
                allowed_v = simd.add_f64s(allowed_v, simd.select_f64s(arc, one, zero));
            }
        }
        store_lanes(simd, failed, at, failed_v);
        if SWEEP {
            store_lanes(simd, top, at, top_v);
            store_lanes(simd, sum, at, sum_v);
            store_lanes(simd, allowed, at, allowed_v);
        }
    }
    (0..n)
        .filter(|&j| failed[j] == 1.0)
        .map(|j| j + 1)
        .collect()
}

/// [`nearly_certain_word`](dense::nearly_certain_word)'s column sweep
/// (`[top, sum, allowed]`, each of `n + 1`; empty multi-root, left so)
/// taken again for the columns `moved` of `mu` alone: per column, over the
/// rows in order, the largest marginal and their sum, the diagonal adding
/// `+0` (the operations of the whole sweep, the same bits); the allowed
/// arcs do not move. Row by row, every moved column's running state side by
/// side (independent chains, each row's cache lines read once). `O(n)` per
/// column.
fn resweep_columns(sweep: &mut [f64], mu: &Matrix<f64>, moved: impl Iterator<Item = usize>) {
    let n1 = mu.rows();
    if sweep.len() < 2 * n1 {
        return;
    }
    let moved: Vec<usize> = moved.filter(|&m| (1..n1).contains(&m)).collect();
    let mut state = vec![(0.0f64, 0.0f64); moved.len()];
    for (h, row) in mu.as_slice().chunks_exact(n1).enumerate() {
        for ((t, s), &m) in state.iter_mut().zip(&moved) {
            let x = if h != m { row[m] } else { 0.0 };
            *t = t.max(x);
            *s += x;
        }
    }
    let (top, sum) = sweep.split_at_mut(n1);
    for ((t, s), &m) in state.into_iter().zip(&moved) {
        (top[m], sum[m]) = (t, s);
    }
}

/// [`EntryWise`] of the inverse `x` and the weights `w` into new marginals
/// (`(n + 1)²`, column `0` zero) and, when `swept`, a new column sweep
/// (`3(n + 1)`; empty otherwise), run by `run` (an instruction-set
/// dispatch, or one instruction set in the tests). `O(n²)`.
fn entry_wise(
    x: &Matrix<f64>,
    w: &Matrix<f64>,
    single: bool,
    bound: f64,
    swept: bool,
    run: impl FnOnce(EntryWise<'_>) -> Vec<usize>,
) -> DenseMarginals {
    let n1 = w.rows();
    let mut mu = Matrix::zeros(n1, n1);
    let mut sweep = vec![0.0f64; if swept { 3 * n1 } else { 0 }];
    let failed = run(EntryWise {
        x: x.as_slice(),
        w: w.as_slice(),
        out: mu.as_mut_slice(),
        n1,
        single,
        bound,
        sweep: &mut sweep,
    });
    (mu, failed, sweep)
}

/// Whether any column of dense marginals can pass the first entry-wise
/// test when an entry of the inverse has the estimated relative error
/// `entry_error`: that test asks `|a| + |b| ≤ 2⁻⁴⁰/e · |a ± b|` of the one
/// or two entries an arc reads, which no non-zero marginal meets when
/// `2⁻⁴⁰/e < 1` (`|a ± b| ≤ |a| + |b|`); then every column would fail,
/// more than [`REFINE_COLUMNS_UP_TO`] of them, and the inverse (`4n³/3`
/// flops) would be formed only to be discarded. `O(1)`, before it is
/// formed.
fn any_column_can_pass(entry_error: f64) -> bool {
    2f64.powi(-CERTIFY_MARGINAL_BITS) >= entry_error
}

/// Whether an LU with no zero pivot, of determinant sign `sign`, certifies
/// `ln Z = ln` by its estimated error `error` of `ln |det|`: positive, finite,
/// and `error ≤` [`CERTIFY_LN_DET`] and `≤ 2⁻⁴² max(1, |ln Z|)`.
fn ln_det_certified(no_zero_pivot: bool, sign: Sign, ln: f64, error: f64) -> bool {
    no_zero_pivot
        && sign == Sign::Positive
        && ln.is_finite()
        && error <= CERTIFY_LN_DET.min(2f64.powi(-42) * ln.abs().max(1.0))
}

/// `ln |det L|` from `ln |det L'|`, `L'` the Laplacian with its root row
/// scaled by `2^k`.
pub(crate) fn unscaled_ln(ln: f64, scale: PowerOfTwo) -> f64 {
    // k ln 2 to about twice f64's precision: the rounded product, its
    // rounding error (an exact fused multiply-add) and the part of ln 2
    // below `LN_2`; at k = 433 (root scores −300) the rounded product alone
    // is off by 2⁻⁴⁵, more than ln Z may lose next to a small entropy.
    const LN_2_LOW: f64 = 2.319_046_813_846_299_6e-17;
    let k = f64::from(scale.0);
    let product = k * std::f64::consts::LN_2;
    let error = k.mul_add(std::f64::consts::LN_2, -product);
    (ln - product) - (error + k * LN_2_LOW)
}

/// The columns `failed` of the dense marginals `mu` (the arcs into those
/// words; word 1's too when `form` is no M-matrix: single-root, or the
/// row-sum form) after one step of iterative refinement of their rows of
/// `X`, the inverse of the matrix `form` of the weights `w`, whose entries
/// have the estimated relative error `entry_error`; the words whose column
/// still fails the entry-wise test with the refined error (no M-matrix:
/// also those whose entries read alone fail the norm-wise guard), and the
/// number of columns refined. `O(n²)` per column.
///
/// Row `j = m − 1` of `X` solves `Lᵀ y = e_j`. Its residual
/// `r = e_j − Lᵀ x` is formed from the weights in double-double
/// ([`residuals`]: `L`'s diagonal, the one entry that is not a weight,
/// summed in double-double too), the correction is `δ = Xᵀ r` (the
/// inverse formed: its error is bounded as the LU's solves' would be,
/// and it runs as one vectorised product), and the column is kept as
/// the unevaluated pair `(x, δ)`: the marginal
/// `w ((x_j − x_i) + (δ_j − δ_i))` has its first difference exact
/// (Sterbenz) where it cancels. The error of `x + δ` is that of `δ`,
/// at most `Σ_l |X[l][k]| · max_l (a |r_l| + s_l)` with `s` the
/// residual's own error (`a = e` multi-root, where `e` bounds the
/// relative error of every entry of `X`; single-root, where it does
/// not, `a = max(e, 4 q)` with `q = ‖δ‖_∞ / ‖x‖_∞` the relative
/// correction the rows show). Each refined marginal must keep
/// [`CERTIFY_MARGINAL_BITS`] relative to itself by twice that estimate;
/// the error falls from about `e |x|` to about `e² |x|`.
fn refined(
    x: &Matrix<f64>,
    w: &Matrix<f64>,
    form: Form,
    entry_error: f64,
    mut mu: Matrix<f64>,
    failed: &[usize],
) -> (Matrix<f64>, Vec<usize>, usize) {
    let n = x.rows();
    // Single-root and in the row-sum form, X is no inverse of an M-matrix:
    // its entries have no relative accuracy of their own.
    let single = form != Form::Laplacian(Rooting::Multi);
    // Single-root, the arcs into word 1 read one entry of X each, which
    // the first test cannot judge: that column is refined too.
    let mut failed = failed.to_vec();
    if single && failed.first() != Some(&1) {
        failed.insert(0, 1);
    }
    let failed = &failed[..];
    let k = failed.len();
    let words: Vec<usize> = failed.iter().map(|&m| m - 1).collect();
    let rows = Matrix::from_fn(k, n, |c, i| x[(words[c], i)]);
    let (r, residual_error) = residuals(w, form, &words, &rows);
    // δ = L⁻ᵀ r = Xᵀ r from the inverse formed: its error is bounded
    // as that of the LU's solves would be (X's entries, relative e). The
    // error of δ, entry by entry: (Σ_l |X[l][i]|) max_l s_l with
    // s = a |r| + (the residual's own error). One sweep of X for both,
    // and for the guard's row maxima below.
    let Corrections {
        delta,
        column_sums,
        row_maxima,
    } = corrections(x, &r);
    let mut largest_correction = 0.0f64;
    let mut spread = vec![0.0f64; k];
    for (c, spread) in spread.iter_mut().enumerate() {
        let norm = |v: &[f64]| largest(v.len(), |i| v[i].abs());
        let q = norm(delta.row(c)) / norm(rows.row(c));
        // NaN (a zero row) counts as no correction; the test below
        // fails on a NaN marginal anyway.
        largest_correction = largest_correction.max(q);
        let a = if single {
            entry_error.max(4.0 * q)
        } else {
            entry_error
        };
        let (r, residual_error) = (r.row(c), residual_error.row(c));
        *spread = largest(n, |i| a * r[i].abs() + residual_error[i]);
    }
    let bound = 2f64.powi(-CERTIFY_MARGINAL_BITS);
    let n1 = n + 1;
    let weights = w.as_slice();
    let mut still = Vec::new();
    for (c, &m) in failed.iter().enumerate() {
        let j = m - 1;
        let (x, d) = (rows.row(c), delta.row(c));
        // (σ_a x_a + σ_b x_b) + (σ_a δ_a + σ_b δ_b) for the entries the
        // arc reads ([`arc_reads`]; σ = ±1 or 2^s, exact), the first sum
        // exact (Sterbenz) where it cancels.
        let read = |[a, b]: [Option<(usize, f64)>; 2]| {
            let at = |v: &[f64], e: Option<(usize, f64)>| e.map_or(0.0, |(e, s)| s * v[e]);
            let value = (at(x, a) + at(x, b)) + (at(d, a) + at(d, b));
            let size = at(&column_sums, a).abs() + at(&column_sums, b).abs();
            (value, size * spread[c])
        };
        let mut fails = false;
        for h in (0..n1).filter(|&h| h != m) {
            let wk = weights[h * n1 + m];
            if wk == 0.0 {
                continue;
            }
            let (value, err) = read(arc_reads(form, h, j));
            // Twice the estimate, and the roundings of the last sums,
            // within 2⁻⁴⁰ of |μ| (NaN fails).
            let keeps_its_bits =
                2.0 * err + 4.0 * f64::EPSILON * value.abs() <= bound * value.abs();
            fails |= !keeps_its_bits;
            mu[(h, m)] = wk * value;
        }
        if fails {
            still.push(m);
        }
    }
    if single && still.is_empty() {
        // The entries of the other columns read alone (the root arc,
        // `X[j][0]` single-root, `2^s X[j][0] + X[j][j]` in the row-sum
        // form, and the arc from word 1, `X[j][j]`) cannot be judged by the
        // first test either: each must keep 40 bits against four times the
        // largest relative correction of a refined row, times its row's
        // largest entry (a norm-wise error like the refined rows'), times
        // the sizes of its coefficients.
        let guard = 4.0 * largest_correction / bound;
        for m in (2..=n).filter(|m| !failed.contains(m)) {
            let j = m - 1;
            let largest = row_maxima[j];
            for h in [0, 1] {
                let (mut alone, mut size) = (0.0, 0.0);
                for (i, s) in arc_reads(form, h, j).into_iter().flatten() {
                    alone += s * x[(j, i)];
                    size += s.abs();
                }
                let keeps_its_bits = guard * largest * size <= alone.abs();
                if w[(h, m)] != 0.0 && !keeps_its_bits {
                    still.push(m);
                    break;
                }
            }
        }
    }
    (mu, still, k)
}

/// `max_i f(i)` over `i < n` as `f64::max` folds it from `0` (a NaN not
/// counted), by eight independent maxima (no serial chain; the largest is
/// exact in any order) for values that are never `−0`. `O(n)`.
fn largest(n: usize, f: impl Fn(usize) -> f64) -> f64 {
    let mut lanes = [0.0f64; 8];
    let whole = n / 8 * 8;
    for i in (0..whole).step_by(8) {
        for (l, m) in lanes.iter_mut().enumerate() {
            *m = m.max(f(i + l));
        }
    }
    let rest = (whole..n).fold(0.0f64, |m, i| m.max(f(i)));
    lanes.iter().fold(rest, |m, &v| m.max(v))
}

/// The entries of row `j` of the inverse `X` of the matrix `form` that the
/// marginal of the arc `h → j + 1` reads, with their coefficients `σ`:
/// `μ = w (σ_a X[j][a] + σ_b X[j][b])` (Jacobi's formula through
/// [`arc_entries`](crate::laplacian::arc_entries) for a Laplacian). In the
/// row-sum form `M = S L` (`S` adds every row to the first and scales it
/// by `2^s`), `L⁻¹ = M⁻¹ S`: `X_L[j][i] = 2^s X[j][0] + [i ≠ 0] X[j][i]`,
/// so an arc `h → m` between words reads `[m ≠ 1] X[j][j] − [h ≠ 1]
/// X[j][h − 1]` (the common `2^s X[j][0]` cancels exactly, by
/// construction) and a root arc `2^s X[j][0] + [m ≠ 1] X[j][j]`.
fn arc_reads(form: Form, h: usize, j: usize) -> [Option<(usize, f64)>; 2] {
    let multi = form == Form::Laplacian(Rooting::Multi);
    let diagonal = (multi || j != 0).then_some((j, 1.0));
    match (h, form) {
        (0, Form::Laplacian(Rooting::Multi)) => [Some((j, 1.0)), None],
        (0, Form::Laplacian(Rooting::Single)) => [Some((0, 1.0)), None],
        (0, Form::RowSum(scale)) => [Some((0, scale.apply(1.0))), diagonal],
        (1, _) if !multi => [diagonal, None],
        _ => [diagonal, Some((h - 1, -1.0))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic inputs of `n + 1` weights (column `0` and the diagonal
    /// zero but in case `5`, about one arc in six forbidden, one NaN weight
    /// in cases `3` and `5`) and
    /// an `n × n` inverse whose rows make some differences `X_jj − X_ji`
    /// cancel to a few bits (failing entries), one NaN entry in case `2`.
    fn inputs(n: usize, case: u64) -> (Matrix<f64>, Matrix<f64>) {
        let n1 = n + 1;
        let u = |i: usize, j: usize, s: u64| ((i * 131 + j * 17) as f64 + s as f64 * 0.37).sin();
        let mut w = Matrix::from_fn(n1, n1, |h, m| {
            let v = u(h, m, 7 + case);
            if m == 0 || h == m || v < -0.66 {
                0.0
            } else {
                v.abs() + 0.01
            }
        });
        let mut x = Matrix::from_fn(n, n, |j, i| {
            let v = u(j, i, 29 + case);
            // Every fifth entry within a few ulps of its row's diagonal.
            if (i + j + case as usize) % 5 == 0 {
                (1.0 + f64::from(((j as u32 + 1) * 7) % 5) * f64::EPSILON) * u(j, j, 29 + case)
            } else {
                v
            }
        });
        if n > 2 {
            match case {
                2 => x[(1, 2)] = f64::NAN,
                3 => w[(2, 1)] = f64::NAN,
                // Weights on the diagonal, which is no arc (the sweep
                // skips it) but is read as one by the test.
                5 => {
                    for h in (1..n1).step_by(3) {
                        w[(h, h)] = 0.5 + h as f64 / 16.0;
                    }
                    w[(2, 2)] = f64::NAN;
                }
                _ => {}
            }
        }
        (w, x)
    }

    /// [`EntryWise`] entry by entry as it is defined: the marginals, the
    /// failing words, and the column sweep of `nearly_certain_word`
    /// (largest by `f64::max` from `0`, sum from `+0`, allowed arcs; over
    /// `h ≠ m` in the order of `h`).
    fn entry_wise_definition(
        x: &Matrix<f64>,
        w: &Matrix<f64>,
        single: bool,
        bound: f64,
    ) -> (Matrix<f64>, Vec<usize>, Vec<f64>) {
        let n1 = w.rows();
        let mut mu = Matrix::zeros(n1, n1);
        let mut failed = Vec::new();
        for m in 1..n1 {
            let j = m - 1;
            let mut fails = false;
            for h in 0..n1 {
                let a = match (h, single) {
                    (0, true) => x[(j, 0)],
                    _ if single && j == 0 => 0.0,
                    _ => x[(j, j)],
                };
                let b = match (h, single) {
                    (0, _) | (1, true) => 0.0,
                    _ => x[(j, h - 1)],
                };
                let value = a - b;
                let allowed = w[(h, m)] != 0.0;
                let keeps_its_bits = a.abs() + b.abs() <= bound * value.abs();
                fails |= allowed && !keeps_its_bits;
                mu[(h, m)] = if allowed { w[(h, m)] * value } else { 0.0 };
            }
            if fails {
                failed.push(m);
            }
        }
        let mut sweep = vec![0.0; 3 * n1];
        for m in 1..n1 {
            let (mut top, mut sum, mut allowed) = (0.0f64, 0.0f64, 0.0);
            for h in (0..n1).filter(|&h| h != m) {
                top = top.max(mu[(h, m)]);
                sum += mu[(h, m)];
                allowed += if w[(h, m)] != 0.0 { 1.0 } else { 0.0 };
            }
            (sweep[m], sweep[n1 + m], sweep[2 * n1 + m]) = (top, sum, allowed);
        }
        (mu, failed, sweep)
    }

    /// The sweep taken again for some columns is the sweep's definition
    /// on those columns (largest marginal and sum over `h ≠ m`, in order)
    /// and leaves the others, and the allowed counts, as they were.
    #[test]
    fn resweep_is_the_column_sweep_on_the_moved_columns() {
        for n in [1usize, 2, 5, 17] {
            let n1 = n + 1;
            let (w, _) = inputs(n, 1);
            let mu = Matrix::from_fn(n1, n1, |h, m| {
                if m == 0 || h == m {
                    0.0
                } else {
                    w[(h, m)] / (1.0 + (h * n1 + m) as f64)
                }
            });
            let moved: Vec<usize> = (1..n1).filter(|m| m % 2 == 1).collect();
            let mut sweep: Vec<f64> = (0..3 * n1).map(|i| -(i as f64) - 0.5).collect();
            let before = sweep.clone();
            resweep_columns(&mut sweep, &mu, moved.iter().copied().chain([0, n1]));
            for m in 0..n1 {
                let (mut top, mut sum) = (0.0f64, 0.0f64);
                for h in (0..n1).filter(|&h| h != m) {
                    top = top.max(mu[(h, m)]);
                    sum += mu[(h, m)];
                }
                let want = if moved.contains(&m) {
                    [top, sum]
                } else {
                    [before[m], before[n1 + m]]
                };
                assert_eq!([sweep[m], sweep[n1 + m]], want, "n = {n}, column {m}");
                assert_eq!(sweep[2 * n1 + m], before[2 * n1 + m]);
            }
            // Multi-root, the sweep is empty and stays so.
            let mut empty = Vec::new();
            resweep_columns(&mut empty, &mu, moved.iter().copied());
            assert!(empty.is_empty());
        }
    }

    /// The weights the factors answer are those given, whether the dense
    /// Laplacian's root row was scaled (the given ones kept apart) or not
    /// (one matrix, the dense factors'); the dense factors hold row `0`
    /// times `2^k` and the other rows as given, bit for bit.
    #[test]
    fn weights_are_the_given_ones_shared_when_unscaled() {
        use crate::linalg::PartialPivLu;
        let n1 = 7;
        for (rooting, root, scaled) in [
            (Rooting::Single, 1e-3, true),
            (Rooting::Single, 1.0, false),
            (Rooting::Multi, 1e-3, false),
        ] {
            let w = Matrix::from_fn(n1, n1, |h, m| match (h, m) {
                (_, 0) => 0.0,
                _ if h == m => 0.0,
                (0, _) => root * (1.0 + m as f64 / 7.0),
                _ => 0.5 + ((h * 7 + m * 3) % 5) as f64 / 5.0,
            });
            let c = Certified::new(w.clone(), rooting, PartialPivLu::new);
            assert_eq!(c.weights(), &w);
            // `ln |det L|` as formed once for the certification is the dense
            // LU's, unscaled, bit for bit.
            assert!(c.is_certified());
            let (sign, ln) = c.dense.ln_abs_det();
            let (kept_sign, kept) = c.ln_abs_det();
            assert_eq!(kept_sign, sign);
            assert_eq!(kept.to_bits(), unscaled_ln(ln, c.root_scale).to_bits());
            assert_eq!(c.root_scale.0 != 0, scaled);
            assert_eq!(c.given.is_some(), scaled);
            let k = c.root_scale.0;
            for h in 0..n1 {
                for m in 0..n1 {
                    let expected = if h == 0 {
                        w[(h, m)] * 2f64.powi(k)
                    } else {
                        w[(h, m)]
                    };
                    assert_eq!(c.dense.weights()[(h, m)].to_bits(), expected.to_bits());
                }
            }
        }
    }

    /// [`largest`] is `f64::max` folded from `0` in order, at every length
    /// around its eight lanes, with NaNs and zeros.
    #[test]
    fn largest_is_the_fold() {
        for n in 0..40 {
            let v: Vec<f64> = (0..n)
                .map(|i| match i % 11 {
                    3 => f64::NAN,
                    5 => 0.0,
                    _ => ((i * 37) % 17) as f64 * 0.25,
                })
                .collect();
            let want = v.iter().fold(0.0f64, |m, &e| m.max(e));
            assert_eq!(largest(n, |i| v[i]).to_bits(), want.to_bits(), "n = {n}");
        }
    }

    /// [`EntryWise`] under the scalar instruction set and each one of the
    /// machine (`V3`, 4 lanes; `V4`, 8) is its definition, bit for bit in
    /// the marginals and the sweep's sums, at every tail length, both
    /// rootings, with and without the sweep, with failing entries and NaNs;
    /// and the nearly certain word it leads to is `nearly_certain_word`'s.
    #[test]
    fn entry_wise_is_its_definition_at_every_width() {
        let mut seen_failed = 0;
        for single in [false, true] {
            let rooting = if single {
                Rooting::Single
            } else {
                Rooting::Multi
            };
            for n in (1..=19).chain([36, 37]) {
                for case in 0..6 {
                    let (w, x) = inputs(n, case);
                    let n1 = n + 1;
                    let bound = 2f64.powi(-CERTIFY_MARGINAL_BITS) / (64.0 * f64::EPSILON);
                    let (mu_def, failed_def, sweep_def) =
                        entry_wise_definition(&x, &w, single, bound);
                    seen_failed += usize::from(!failed_def.is_empty());
                    for swept in [false, true] {
                        let run = |simd: &dyn Fn(EntryWise<'_>) -> Vec<usize>| {
                            entry_wise(&x, &w, single, bound, swept, simd)
                        };
                        #[allow(unused_mut)]
                        let mut runs = vec![run(&|e| e.with_simd(pulp::Scalar::new()))];
                        #[cfg(target_arch = "x86_64")]
                        {
                            if let Some(simd) = pulp::x86::V3::try_new() {
                                runs.push(run(&|e| e.with_simd(simd)));
                            }
                            if let Some(simd) = pulp::x86::V4::try_new() {
                                runs.push(run(&|e| e.with_simd(simd)));
                            }
                        }
                        for (lane, (mu, failed, sweep)) in runs.iter().enumerate() {
                            let at = format!(
                                "single {single} n = {n} case {case} sweep {swept} run {lane}"
                            );
                            let bits = |m: &Matrix<f64>| -> Vec<u64> {
                                m.as_slice().iter().map(|v| v.to_bits()).collect()
                            };
                            assert_eq!(bits(mu), bits(&mu_def), "{at}");
                            assert_eq!(failed, &failed_def, "{at}");
                            if !swept {
                                assert!(sweep.is_empty(), "{at}");
                                continue;
                            }
                            for m in 1..n1 {
                                // The largest compared by value (`f64::max`
                                // leaves the sign of a zero tie open).
                                assert_eq!(sweep[m], sweep_def[m], "{at} top {m}");
                                for k in [1, 2] {
                                    let (got, want) = (sweep[k * n1 + m], sweep_def[k * n1 + m]);
                                    assert_eq!(got.to_bits(), want.to_bits(), "{at} {k} {m}");
                                }
                            }
                            let (top, rest) = sweep.split_at(n1);
                            let (sum, allowed) = rest.split_at(n1);
                            for threshold in [DENSE_UNCERTAINTY, 0.5, 2.0] {
                                let r = |c: Option<(usize, f64)>| c.map(|(m, u)| (m, u.to_bits()));
                                let got = dense::nearly_certain_after_sweep(
                                    [top, sum, allowed],
                                    mu,
                                    &w,
                                    rooting,
                                    threshold,
                                );
                                let want = dense::nearly_certain_word(mu, &w, rooting, threshold);
                                assert_eq!(r(got), r(want), "{at} threshold {threshold}");
                            }
                        }
                    }
                }
            }
        }
        assert!(seen_failed > 20, "failing cases {seen_failed}");
    }
}
