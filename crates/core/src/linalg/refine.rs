//! One step of iterative refinement of rows of `X = L⁻¹`, `L` a Laplacian
//! (or the row-sum form of a multi-root one) given by its weights, with the
//! residual in double-double: the dense marginals of the accurate default
//! where the inverse alone cannot certify them.
//!
//! Row `j` of `X` solves `Lᵀ y = e_j`. By its structure
//! ([`arc_entries`](crate::laplacian::arc_entries)), column `k` of `L` is
//! `−A[·][k]` off the diagonal, the root weight `ρ_k` in row `0`
//! single-root, and on the diagonal the sum `D_k` of the weights into word
//! `k` (with `ρ_k` multi-root, without single-root, `D_0 = 0` single-root).
//! Every entry but `D_k` is a weight, held exactly; `D_k` is summed in
//! double-double from the weights. So
//! `(Lᵀ y)_k = D_k y_k + Σ_h c_h w[h][k]` with `c_h = −y_{h−1}` for a word
//! `h` (but `c_1 = 0` single-root, whose row `0` holds the roots) and
//! `c_0 = y_0` single-root (`0` multi-root), and the residual
//! `r = e_j − Lᵀ y` comes from one fused product and one two-sum per weight
//! (Ogita, Rump and Oishi's `Dot2`, 2005), vectorised over `k` along the
//! rows of the weights: its error is at most about
//! `γ_{n+1}² Σ_h |c_h w[h][k]|`, some `2⁻⁹⁰` of the terms, where the
//! residual of a dense solve is some `n ε` of them.
//!
//! The **row-sum form** `M` of a multi-root Laplacian ([`Form::RowSum`])
//! is `L` with its first row replaced by the column sums times `2^s`, i.e.
//! by `2^s ρ`: row `0` of `M` is `2^s ρ_k` (no diagonal entry, no arc from
//! word `1`), rows `i ≥ 1` are those of `L`, diagonal `D_k = ρ_k + Σ_h
//! A[h][k]` with the root weight in it. So `(Mᵀ y)_k = D_k y_k + Σ_h c_h
//! w[h][k]` with `c_0 = 2^s y_0`, `c_1 = 0`, `c_h = −y_{h−1}` for `h ≥ 2`,
//! and `D_0 = 0`: the single-root pattern with the multi-root diagonal and
//! the root coefficient scaled by `2^s` (exact). Its residual
//! `e_j − Mᵀ y` is formed the same way, from the weights: the diagonal's
//! root weight, which `D_k` rounded to `f64` cannot hold next to the arcs
//! (root scores −40), is held by the double-double sum, and the refined
//! rows converge to those of the inverse of `M` as given by the weights,
//! not of `M` as rounded.

use pulp::{Arch, Simd, WithSimd};

use crate::elimination::PowerOfTwo;
use crate::graph::Rooting;
use crate::matrix::{Matrix, Scratch};

/// The matrix, given by the weights, whose inverse's rows are refined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// The Laplacian of the rooting (single-root: Koo et al.'s, root
    /// weights in row `0`).
    Laplacian(Rooting),
    /// The row-sum form of a multi-root Laplacian: its first row replaced
    /// by the column sums, the root weights, times `2^s` (see the module
    /// docs).
    RowSum(PowerOfTwo),
}

impl Form {
    /// Whether the root weights are in the diagonal `D_k`.
    fn roots_on_diagonal(self) -> bool {
        self != Form::Laplacian(Rooting::Single)
    }

    /// Whether row `0` holds the root weights (then `D_0 = 0` and word
    /// `1`'s arcs are not in the matrix), and their coefficient's scale.
    fn root_row(self) -> Option<PowerOfTwo> {
        match self {
            Form::Laplacian(Rooting::Multi) => None,
            Form::Laplacian(Rooting::Single) => Some(PowerOfTwo(0)),
            Form::RowSum(scale) => Some(scale),
        }
    }
}

/// The residuals `r = e_j − Lᵀ y` of the rows `y` (row `c` of `rows`, a
/// vector of `n` entries) for the words `words[c]` (`0`-based, `j`), with
/// `L` the `n × n` matrix `form` of the `(n+1) × (n+1)` `weights` (a
/// Laplacian or a row-sum form), in double-double and rounded once; and a
/// bound of the error of each entry, `γ_{n+2}² (|y_k| D_k + ‖y‖_∞ Σ_h
/// σ_h w[h][k])` with `σ_0 = 2^s` (row-sum form) and `σ_h = 1` otherwise
/// (the double-double sum of `Dot2`; the final rounding, `ε |r_k|`, not
/// included). `O(n²)` per row, a step of `Dot2` per weight (a product, a
/// fused multiply-add and 8 sums, 3 of them as fused multiply-adds by
/// `±1` with 4 lanes or more); one sweep of the weights per
/// [`SWEPT_ROWS`] rows.
///
/// The diagonal entries of `weights` are not read (taken as `0`).
pub(crate) fn residuals(
    weights: &Matrix<f64>,
    form: Form,
    words: &[usize],
    rows: &Matrix<f64>,
) -> (Matrix<f64>, Matrix<f64>) {
    let n = weights.rows() - 1;
    debug_assert!(rows.cols() == n && rows.rows() == words.len());
    if n == 0 {
        return (Matrix::zeros(words.len(), n), Matrix::zeros(words.len(), n));
    }
    Arch::new().dispatch(Residuals {
        weights,
        form,
        words,
        rows,
    })
}

/// [`residuals`] under one instruction set.
#[derive(Clone, Copy)]
struct Residuals<'a> {
    weights: &'a Matrix<f64>,
    form: Form,
    words: &'a [usize],
    rows: &'a Matrix<f64>,
}

/// How many rows [`Residuals`] and [`Corrections`] carry through one sweep
/// of the weights (of `X`), a vector of lanes at a time, their
/// accumulators held in registers: `4` (`2` with 4 lanes and 16
/// registers took 0.7% more instructions, accurate `ln Z` + marginals at
/// `n = 100` under callgrind).
const SWEPT_ROWS: usize = 4;

impl WithSimd for Residuals<'_> {
    type Output = (Matrix<f64>, Matrix<f64>);

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> Self::Output {
        self.swept::<S, SWEPT_ROWS>(simd)
    }
}

impl Residuals<'_> {
    /// Vector of lanes by vector of lanes (the columns `k`), the rows in
    /// groups of `G`: each weight is loaded once per group, and each
    /// accumulator takes its terms in the order of `h`, as row by row
    /// would (the same bits). The loop is bound by the throughput of the
    /// adders and of the issue, not by its `G` (+ `D`) chains of one sum
    /// each: a step of `Dot2` is 8 sums and 2 products, 4 cycles on Zen
    /// 5's two adders; [`dot2_step`] moves 3 of the sums to the
    /// multipliers, and a group whose coefficients of row `h` are all
    /// non-zero tests none (0.219 → 0.177 ns per weight and row at
    /// `n = 100`, 4 rows; 0.171 → 0.142 at `n = 200`, 23 rows; a test
    /// build, AVX-512). A last group of fewer than `G` rows (`k = 2` or
    /// `3` at `n = 50` single-root) has as many accumulators, compiled for
    /// its size ([`WeightSweep::group`]), rather than padded rows whose zero
    /// coefficients were tested in the loop (the residuals 9.9% → 8.7% of
    /// accurate `ln Z` + marginals at `n = 50`, perf; the temporaries in
    /// the thread's [`Scratch`]). Not kept: two vectors of lanes a pass (8
    /// chains, 0.31 ns), `G = 8` (0.29), `D` and the column sums in a pass
    /// of their own (0.227).
    #[inline(always)]
    fn swept<S: Simd, const G: usize>(self, simd: S) -> (Matrix<f64>, Matrix<f64>) {
        let w = self.weights;
        let n1 = w.rows();
        let n = n1 - 1;
        let k = self.words.len();
        let mut r = Matrix::zeros(k, n);
        let mut bound = Matrix::zeros(k, n);
        if n == 0 {
            return (r, bound);
        }
        let root_row = self.form.root_row();
        let roots_on_diagonal = self.form.roots_on_diagonal();
        let lanes = std::mem::size_of::<S::f64s>() / std::mem::size_of::<f64>();
        let width = n.div_ceil(lanes) * lanes;
        // The weights into words 1..=n, row `h` at `source[h (n + 1) + 1..]`:
        // the weights themselves where their diagonal is `+0`, else a copy
        // with it zeroed (a zero weight leaves a double-double sum as it
        // is); the lanes beyond `n` are partial loads, zeros.
        let zeroed;
        let source = if (1..n1).all(|h| w[(h, h)].to_bits() == 0) {
            w.as_slice()
        } else {
            let mut copy = w.as_slice().to_vec();
            for h in 1..n1 {
                copy[h * n1 + h] = 0.0;
            }
            zeroed = copy;
            &zeroed[..]
        };
        // Each row's coefficient of the weights' row `h`, at `[h][c]`,
        // padded with zeros to whole groups (a zero coefficient is
        // skipped): `2^s y_0` for the root row where row 0 holds the roots,
        // `−y_{h−1}` for a word, none for row `0` multi-root nor for row
        // `1` where row `0` holds the roots.
        let groups = k.div_ceil(G).max(1);
        let kp = groups * G;
        // The coefficients, the flags of whole groups, `D` (its high and
        // low parts), the column sums and each row's `(hi, lo)`: one
        // scratch of the thread.
        let mut scratch = Scratch::take();
        scratch.resize(n1 * kp + n1 * groups + (3 + 2 * k) * width, 0.0);
        let (coefficients, rest) = scratch.split_at_mut(n1 * kp);
        let (full, rest) = rest.split_at_mut(n1 * groups);
        let (d_hi, rest) = rest.split_at_mut(width);
        let (d_lo, rest) = rest.split_at_mut(width);
        let (column_sums, rest) = rest.split_at_mut(width);
        let (hi, lo) = rest.split_at_mut(k * width);
        for (h, cs) in coefficients.chunks_exact_mut(kp).enumerate() {
            for (c, x) in cs.iter_mut().take(k).enumerate() {
                let y = self.rows.row(c);
                *x = match (h, root_row) {
                    (0, None) | (1, Some(_)) => 0.0,
                    (0, Some(scale)) => scale.apply(y[0]),
                    _ => -y[h - 1],
                };
            }
        }
        // Whether a group's coefficients of row `h` are all non-zero, at
        // `[h][g]` (`1`, else `0`; its rows past `k` not counted): then
        // none is tested in the loop.
        for (cs, flags) in coefficients
            .chunks_exact(kp)
            .zip(full.chunks_exact_mut(groups))
        {
            for (g, flag) in flags.iter_mut().enumerate() {
                let rows = k.saturating_sub(g * G).min(G);
                let all = cs[g * G..g * G + rows].iter().all(|&c| c != 0.0);
                *flag = if all { 1.0 } else { 0.0 };
            }
        }
        // D in double-double (the weights into each word, the root's
        // multi-root and in the row-sum form; D_0 = 0 where row 0 holds the
        // roots), the column sums (the root row's times 2^s in the row-sum
        // form), and each row's `(hi, lo)`, `width` lanes each.
        let sweep = WeightSweep {
            source,
            coefficients,
            full,
            n1,
            kp,
            groups,
            root_size: simd.splat_f64s(match root_row {
                Some(scale) => scale.apply(1.0),
                None => 1.0,
            }),
            roots_on_diagonal,
            units: Units::of(simd),
        };
        let zero = simd.splat_f64s(0.0);
        for start in (0..width).step_by(lanes) {
            for g in 0..groups {
                // The group's rows, as many accumulators (no padded row
                // tested in the loop).
                let (first, at) = (g == 0, (g * G, start));
                let mut acc = [(zero, zero); G];
                let rows = k.saturating_sub(g * G).min(G);
                let d = match rows {
                    0 => sweep.group::<S, 0>(simd, g, at, first, &mut acc),
                    1 => sweep.group::<S, 1>(simd, g, at, first, &mut acc),
                    2 => sweep.group::<S, 2>(simd, g, at, first, &mut acc),
                    3 => sweep.group::<S, 3>(simd, g, at, first, &mut acc),
                    _ => sweep.group::<S, G>(simd, g, at, first, &mut acc),
                };
                if let Some([dh, dl, sums]) = d {
                    store_vector::<S>(&mut d_hi[start..], dh);
                    store_vector::<S>(&mut d_lo[start..], dl);
                    store_vector::<S>(&mut column_sums[start..], sums);
                    if start == 0 && root_row.is_some() {
                        d_hi[0] = 0.0;
                        d_lo[0] = 0.0;
                    }
                }
                // `+ D ⊙ y`, the last term of each row.
                let d = first_vector(simd, &d_hi[start..]);
                for (c, &(hv, lv)) in (g * G..).zip(&acc[..rows]) {
                    let y = first_vector(simd, &self.rows.row(c)[start..]);
                    let (hv, lv) = dot2_step(simd, d, y, hv, lv, sweep.units);
                    store_vector::<S>(&mut hi[c * width + start..], hv);
                    store_vector::<S>(&mut lo[c * width + start..], lv);
                }
            }
        }
        let gamma = (n + 2) as f64 * f64::EPSILON / (1.0 - (n + 2) as f64 * f64::EPSILON);
        // The column sums were summed in f64: 1 + γ covers their rounding.
        let slack = gamma * gamma * (1.0 + gamma);
        for (c, &j) in self.words.iter().enumerate() {
            let y = self.rows.row(c);
            let (hi, lo) = (&hi[c * width..], &lo[c * width..]);
            let norm = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let r = &mut r.as_mut_slice()[c * n..(c + 1) * n];
            let bound = &mut bound.as_mut_slice()[c * n..(c + 1) * n];
            for k in 0..n {
                let low = lo[k] + d_lo[k] * y[k];
                let target = if k == j { 1.0 } else { 0.0 };
                // Exact when hi ≈ 1 (Sterbenz) or target = 0.
                r[k] = (target - hi[k]) - low;
                bound[k] = slack * (y[k].abs() * d_hi[k] + norm * column_sums[k]);
            }
        }
        (r, bound)
    }
}

/// The weights' sweep of one group of [`Residuals`]' rows over one vector
/// of lanes: its inputs, shared by the groups.
#[derive(Clone, Copy)]
struct WeightSweep<'a, V> {
    /// The weights, diagonal `+0` (see [`Residuals::swept`]).
    source: &'a [f64],
    /// Each row's coefficient of the weights' row `h`, at `[h][c]`.
    coefficients: &'a [f64],
    /// Whether a group's coefficients of row `h` are all non-zero (`1`).
    full: &'a [f64],
    n1: usize,
    /// The stride of `coefficients`.
    kp: usize,
    groups: usize,
    /// The root row's scale in the column sums.
    root_size: V,
    roots_on_diagonal: bool,
    units: Option<Units<V>>,
}

impl<V: Copy> WeightSweep<'_, V> {
    /// The `R` accumulators of group `g`, rows `row0..row0 + R`, over the
    /// lanes from `start`, each taking its terms in the order of `h`
    /// (zero coefficients skipped), into `out`; in the first group also
    /// `D` in double-double and the column sums (`[hi, lo, sums]`).
    /// `O(n)` vectors of lanes per row.
    #[inline(always)]
    fn group<S: Simd<f64s = V>, const R: usize>(
        self,
        simd: S,
        g: usize,
        (row0, start): (usize, usize),
        first: bool,
        out: &mut [(V, V)],
    ) -> Option<[V; 3]> {
        let (source, n1, units) = (self.source, self.n1, self.units);
        let (zero, one) = (simd.splat_f64s(0.0), simd.splat_f64s(1.0));
        let (mut dh, mut dl, mut sums) = (zero, zero, zero);
        let mut acc = [(zero, zero); R];
        for h in 0..n1 {
            let a = first_vector(simd, &source[h * n1 + 1 + start..(h + 1) * n1]);
            if first {
                if h > 0 || self.roots_on_diagonal {
                    (dh, dl) = dot2_step(simd, a, one, dh, dl, units);
                }
                let size = if h == 0 { self.root_size } else { one };
                sums = simd.add_f64s(sums, simd.mul_f64s(size, a));
            }
            let cs = &self.coefficients[h * self.kp + row0..][..R];
            if self.full[h * self.groups + g] != 0.0 {
                for (&coefficient, (hv, lv)) in cs.iter().zip(acc.iter_mut()) {
                    let c = simd.splat_f64s(coefficient);
                    (*hv, *lv) = dot2_step(simd, a, c, *hv, *lv, units);
                }
            } else {
                for (&coefficient, (hv, lv)) in cs.iter().zip(acc.iter_mut()) {
                    if coefficient != 0.0 {
                        let c = simd.splat_f64s(coefficient);
                        (*hv, *lv) = dot2_step(simd, a, c, *hv, *lv, units);
                    }
                }
            }
        }
        out[..R].copy_from_slice(&acc);
        first.then_some([dh, dl, sums])
    }
}

/// Stores `v` into the first lanes of `s` (a whole vector).
#[inline(always)]
fn store_vector<S: Simd>(s: &mut [f64], v: S::f64s) {
    let lanes = std::mem::size_of::<S::f64s>() / std::mem::size_of::<f64>();
    S::as_mut_simd_f64s(&mut s[..lanes]).0[0] = v;
}

/// The first vector of lanes of `s`: a whole one, or at the right edge a
/// partial one (zeros beyond `s`).
#[inline(always)]
fn first_vector<S: Simd>(simd: S, s: &[f64]) -> S::f64s {
    match S::as_simd_f64s(s).0.first() {
        Some(&v) => v,
        None => simd.partial_load_f64s(s),
    }
}

/// One step of `Dot2`: `p = a b` with its rounding error by a fused
/// multiply-add (exact), `hi + p = s + t` by Knuth's two-sum (exact), and
/// the errors gathered in `lo`. With `units` (`±1`, opaque to the
/// compiler), three sums off the accumulators' chains, `hi − (s − bb)`,
/// `p − bb` and `t + pe`, are fused multiply-adds by `±1`: the same sums
/// rounded once (the same bits), on the multiply pipes that the step
/// leaves idle (an operand of each is not used after it: the fused form,
/// which overwrites one, needs no copy).
#[inline(always)]
fn dot2_step<S: Simd>(
    simd: S,
    a: S::f64s,
    b: S::f64s,
    hi: S::f64s,
    lo: S::f64s,
    units: Option<Units<S::f64s>>,
) -> (S::f64s, S::f64s) {
    let p = simd.mul_f64s(a, b);
    let pe = simd.mul_add_f64s(a, b, simd.neg_f64s(p));
    let s = simd.add_f64s(hi, p);
    match units {
        None => {
            let bb = simd.sub_f64s(s, hi);
            let t = simd.add_f64s(
                simd.sub_f64s(hi, simd.sub_f64s(s, bb)),
                simd.sub_f64s(p, bb),
            );
            (s, simd.add_f64s(lo, simd.add_f64s(t, pe)))
        }
        Some(Units { one, minus_one }) => {
            let bb = simd.sub_f64s(s, hi);
            let t = simd.add_f64s(
                simd.mul_add_f64s(simd.sub_f64s(s, bb), minus_one, hi),
                simd.mul_add_f64s(bb, minus_one, p),
            );
            (s, simd.add_f64s(lo, simd.mul_add_f64s(t, one, pe)))
        }
    }
}

/// `1` and `−1` in every lane, hidden from the compiler (which would turn
/// a fused multiply-add by them back into a sum): see [`dot2_step`].
#[derive(Clone, Copy)]
struct Units<V> {
    one: V,
    minus_one: V,
}

impl<V> Units<V> {
    /// The units of `S`, where its vectors have at least 4 lanes (a fused
    /// multiply-add of the scalar set may be a call).
    #[inline(always)]
    fn of<S: Simd<f64s = V>>(simd: S) -> Option<Self> {
        let lanes = std::mem::size_of::<S::f64s>() / std::mem::size_of::<f64>();
        (lanes >= 4).then(|| Units {
            one: simd.splat_f64s(std::hint::black_box(1.0)),
            minus_one: simd.splat_f64s(std::hint::black_box(-1.0)),
        })
    }
}

/// What one sweep of the inverse `X` gives the refinement ([`corrections`]).
pub(crate) struct Corrections {
    /// `δ = Xᵀ r` for every row `c` of `r` (`δ[c][k] = Σ_i r[c][i]
    /// X[i][k]`): the corrections of the refined rows.
    pub delta: Matrix<f64>,
    /// The column sums of `|X|`, `Σ_i |X[i][k]|`: an error `|Δr| ≤ s` of a
    /// right-hand side of `Lᵀ δ = r` moves entry `k` of `δ = Xᵀ r` by at
    /// most `Σ_i |X[i][k]| s_i ≤ (Σ_i |X[i][k]|) max_i s_i`.
    pub column_sums: Vec<f64>,
    /// The row maxima of `|X|`, `max_k |X[i][k]|` (from `0`, NaN not
    /// counted, as `f64::max`).
    pub row_maxima: Vec<f64>,
}

/// [`Corrections`] of the `n × n` inverse `x` and the residuals `r`, in one
/// sweep of `x` per [`SWEPT_ROWS`] rows of `r`: vector of lanes by vector
/// of lanes, `x`'s rows in order, each sum taking its terms in the order
/// of the rows (`δ` by fused multiply-adds, in the last partial vector, a
/// padded copy, by a product and a sum). `2n²` flops per row of `r`,
/// `O(n²)` besides. Not kept (accurate `ln Z` + marginals, task-clock):
/// [`Residuals`]' last group of its own size (2.8% slower at `n = 100`),
/// the temporaries in the thread's [`Scratch`] (8% slower at `n = 50` to
/// `200`: the row maxima stored in the loop, slices of the one scratch
/// the coefficients are read from, may alias them for the compiler).
pub(crate) fn corrections(x: &Matrix<f64>, r: &Matrix<f64>) -> Corrections {
    Arch::new().dispatch(Sweep { x, r })
}

/// [`corrections`] under one instruction set.
#[derive(Clone, Copy)]
struct Sweep<'a> {
    x: &'a Matrix<f64>,
    r: &'a Matrix<f64>,
}

impl WithSimd for Sweep<'_> {
    type Output = Corrections;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> Corrections {
        let (x, r) = (self.x, self.r);
        let n = x.cols();
        let k = r.rows();
        let mut delta = Matrix::zeros(k, n);
        let lanes = std::mem::size_of::<S::f64s>() / std::mem::size_of::<f64>();
        let whole = n / lanes * lanes;
        let width = n.div_ceil(lanes) * lanes;
        let mut column_sums = vec![0.0; width];
        let groups = k.div_ceil(SWEPT_ROWS).max(1);
        let kp = groups * SWEPT_ROWS;
        // `r` transposed, `[i][c]`, padded with zeros to whole groups (a
        // zero coefficient is skipped).
        let mut coefficients = vec![0.0; n * kp];
        for (i, cs) in coefficients.chunks_exact_mut(kp).enumerate() {
            for (c, v) in cs.iter_mut().take(k).enumerate() {
                *v = r[(c, i)];
            }
        }
        // The last columns of `x` that fill no whole vector, row by row,
        // padded with zeros to one.
        let mut tail = vec![0.0; if whole < n { n * lanes } else { 0 }];
        for (t, row) in tail
            .chunks_exact_mut(lanes)
            .zip(x.as_slice().chunks_exact(n))
        {
            t[..n - whole].copy_from_slice(&row[whole..]);
        }
        let zero = simd.splat_f64s(0.0);
        // Per row of `x`, the largest `|X[i][k]|` of each lane.
        let mut maxima = vec![0.0; n * lanes];
        for start in (0..width).step_by(lanes) {
            // Row `i`'s vector of these lanes; in the last partial one, `δ`
            // by a product and a sum, as entry by entry.
            let (source, stride, at) = if start < whole {
                (x.as_slice(), n, start)
            } else {
                (&tail[..], lanes, 0)
            };
            let fused = start < whole;
            for g in 0..groups {
                let first = g == 0;
                let mut sums = zero;
                let mut acc = [zero; SWEPT_ROWS];
                let (largest_lanes, _) = S::as_mut_simd_f64s(&mut maxima);
                for (i, largest) in largest_lanes.iter_mut().enumerate() {
                    let from = i * stride + at;
                    let a = S::as_simd_f64s(&source[from..from + lanes]).0[0];
                    if first {
                        let size = simd.abs_f64s(a);
                        sums = simd.add_f64s(sums, size);
                        // Kept where not greater: a NaN is not counted.
                        let greater = simd.greater_than_f64s(size, *largest);
                        *largest = simd.select_f64s(greater, size, *largest);
                    }
                    let cs = &coefficients[i * kp + g * SWEPT_ROWS..][..SWEPT_ROWS];
                    for (&ri, o) in cs.iter().zip(acc.iter_mut()) {
                        if ri != 0.0 {
                            let ri = simd.splat_f64s(ri);
                            *o = if fused {
                                simd.mul_add_e_f64s(ri, a, *o)
                            } else {
                                simd.add_f64s(*o, simd.mul_f64s(ri, a))
                            };
                        }
                    }
                }
                if first {
                    S::as_mut_simd_f64s(&mut column_sums[start..start + lanes]).0[0] = sums;
                }
                let delta = delta.as_mut_slice();
                let rows = k.saturating_sub(g * SWEPT_ROWS).min(SWEPT_ROWS);
                for (c, &o) in (g * SWEPT_ROWS..).zip(&acc[..rows]) {
                    let row = &mut delta[c * n + start..(c + 1) * n];
                    if row.len() >= lanes {
                        S::as_mut_simd_f64s(&mut row[..lanes]).0[0] = o;
                    } else {
                        simd.partial_store_f64s(row, o);
                    }
                }
            }
        }
        column_sums.truncate(n);
        // No lane holds a NaN: the largest of the lanes is exact.
        let (largest_lanes, _) = S::as_simd_f64s(&maxima);
        let row_maxima = largest_lanes
            .iter()
            .map(|&v| simd.reduce_max_f64s(v))
            .collect();
        Corrections {
            delta,
            column_sums,
            row_maxima,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The oracle: integers. Integer weights (root weights `0..4` times
    /// `2^-t`, arcs `0..1000`) and rows `y_k = N_k 2⁻⁶⁰` (`N_k < 2⁶¹` with
    /// 53 significant bits, all close to `1/2`) make `2^{60+t} (e_j − Lᵀ
    /// y)` an integer, computed exactly in `i128`. The terms `D_k y_k`
    /// (about `10⁴`) cancel down to residuals of a few units, as in a
    /// residual of a dense solve: the residual must equal the exact one to
    /// `ε` of itself plus its stated bound, where the same expansion summed
    /// in `f64` (the diagonal of the matrix rounded) is off by more.
    fn residual_is_exact(form: Form, t: i32, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = 37;
        let n1 = n + 1;
        let root = 2f64.powi(-t);
        let w = Matrix::from_fn(n1, n1, |h, m| match (h, m) {
            (_, 0) => 0.0,
            (0, _) => f64::from(rng.random_range(0..4u32)) * root,
            _ if h == m => 0.0,
            _ => f64::from(rng.random_range(0..1000u32)),
        });
        let words = [0usize, 5, 36];
        let mut numerators = vec![vec![0i128; n]; words.len()];
        let rows = Matrix::from_fn(words.len(), n, |c, k| {
            let base: i64 = 1 << 52;
            let v = (base + rng.random_range(0..1i64 << 20)) << 7;
            numerators[c][k] = i128::from(v);
            v as f64 * 2f64.powi(-60)
        });
        let (r, bound) = residuals(&w, form, &words, &rows);
        let root_row = form.root_row();
        // The root row's coefficient 2^s (row-sum form), an integer here.
        let s = root_row.map_or(0, |p| p.0);
        let unit = 2f64.powi(-60 - t);
        let mut plain_error = 0.0f64;
        for (c, &j) in words.iter().enumerate() {
            let y = &numerators[c];
            for k in 0..n {
                // 2^{60+t} (Lᵀ y)_k and the same in f64, column k of L
                // read from the weights: the root row, the diagonal sum,
                // the off-diagonal weights.
                let (mut exact, mut diagonal, mut plain): (i128, f64, f64) = (0, 0.0, 0.0);
                for h in (0..n1).filter(|&h| h != k + 1) {
                    let a = w[(h, k + 1)];
                    // The weight in units of 2^-t.
                    let ai = if h == 0 {
                        (a / root) as i128
                    } else {
                        (a as i128) << t
                    };
                    let on_diagonal = match root_row {
                        None => true,
                        Some(_) if k == 0 => false,
                        Some(_) => h > 0 || form.roots_on_diagonal(),
                    };
                    if on_diagonal {
                        exact += ai * y[k];
                        diagonal += a;
                    }
                    if h == 0 && root_row.is_some() {
                        exact += (ai << s) * y[0];
                        plain += a * 2f64.powi(s) * rows[(c, 0)];
                    } else if h > 1 || (h == 1 && root_row.is_none()) {
                        exact -= ai * y[h - 1];
                        plain -= a * rows[(c, h - 1)];
                    }
                }
                let target: i128 = if k == j { 1 << (60 + t) } else { 0 };
                let exact = (target - exact) as f64 * unit;
                let err = (r[(c, k)] - exact).abs();
                assert!(
                    err <= f64::EPSILON * exact.abs() + bound[(c, k)],
                    "{form:?} row {c} entry {k}: {} against {exact}",
                    r[(c, k)]
                );
                let plain = (target as f64 * unit) - (diagonal * rows[(c, k)] + plain);
                plain_error = plain_error.max((plain - exact).abs() / exact.abs());
            }
        }
        // The check can fail: the expansion in f64 is off by more than
        // 2⁵ ulps (measured 6.8e-14 single-root, more multi-root), where
        // the refined residual is within one ulp plus its bound.
        assert!(plain_error > 1e-14, "{form:?}: {plain_error}");
    }

    #[test]
    fn residual_is_exact_multi_root() {
        residual_is_exact(Form::Laplacian(Rooting::Multi), 0, 7);
    }

    #[test]
    fn residual_is_exact_single_root() {
        residual_is_exact(Form::Laplacian(Rooting::Single), 0, 8);
    }

    #[test]
    fn residual_is_exact_row_sum_form() {
        // Root weights 2⁻⁴⁰ (about root scores −28), scaled back by 2³⁸ in
        // the first row: the diagonal ρ_k + Σ_h A[h][k] (about 2¹⁴) cannot
        // hold them in f64, the double-double residual does.
        residual_is_exact(Form::RowSum(PowerOfTwo(38)), 40, 9);
    }

    /// `Xᵀ r` and `Xᵀ` (blocked, [`Matrix::transpose`]) against their
    /// definitions.
    #[test]
    fn transposes_match_the_definition() {
        let x = Matrix::from_fn(37, 37, |i, j| (i * 37 + j) as f64 - 600.0);
        let t = x.transpose();
        let r = Matrix::from_fn(2, 37, |c, i| (c + 1) as f64 * i as f64);
        let d = corrections(&x, &r).delta;
        for i in 0..37 {
            for j in 0..37 {
                assert_eq!(t[(i, j)], x[(j, i)]);
            }
            for c in 0..2 {
                // Integers below 2⁵³: exact in any order.
                let expected: f64 = (0..37).map(|l| r[(c, l)] * x[(l, i)]).sum();
                assert_eq!(d[(c, i)], expected);
            }
        }
    }

    /// The column sums and row maxima of `|X|` against their definition.
    #[test]
    fn column_abs_sums_match_the_definition() {
        let x = Matrix::from_row_major(2, 2, vec![1.0, -2.0, -3.0, 4.0]);
        let sweep = corrections(&x, &Matrix::zeros(1, 2));
        assert_eq!(sweep.column_sums, vec![4.0, 6.0]);
        assert_eq!(sweep.row_maxima, vec![2.0, 4.0]);
    }

    /// An operation under one instruction set, with its number of lanes.
    #[derive(Clone, Copy)]
    struct WithLanes<Op>(Op);

    impl<Op: WithSimd> WithSimd for WithLanes<Op> {
        type Output = (usize, Op::Output);

        fn with_simd<S: Simd>(self, simd: S) -> Self::Output {
            let lanes = std::mem::size_of::<S::f64s>() / std::mem::size_of::<f64>();
            (lanes, self.0.with_simd(simd))
        }
    }

    /// A step of `Dot2` as defined (the module docs), one entry.
    fn dot2(a: f64, b: f64, (hi, lo): (f64, f64)) -> (f64, f64) {
        let p = a * b;
        let pe = a.mul_add(b, -p);
        let s = hi + p;
        let bb = s - hi;
        let t = (hi - (s - bb)) + (p - bb);
        (s, lo + (t + pe))
    }

    /// Weights of every sign of magnitude (a few NaN or diagonal entries in
    /// some cases) and rows with some zero entries (skipped coefficients);
    /// case 4, rows that make the residual cancel.
    fn sweep_inputs(n: usize, k: usize, case: u64) -> (Matrix<f64>, Matrix<f64>) {
        let n1 = n + 1;
        let u = |i: usize, j: usize, s: u64| ((i * 131 + j * 17) as f64 + s as f64 * 0.37).sin();
        let mut w = Matrix::from_fn(n1, n1, |h, m| {
            let v = u(h, m, 3 + case);
            if m == 0 || h == m || v < -0.7 {
                0.0
            } else {
                v.abs() * 2f64.powi((h as i32 * 7 + m as i32) % 23 - 11)
            }
        });
        let rows = Matrix::from_fn(k, n, |c, i| {
            let v = u(c, i, 11 + case);
            if (c + i) % 7 == 3 {
                0.0
            } else {
                v / (1.0 + i as f64)
            }
        });
        if n > 2 {
            match case {
                1 => {
                    for h in (1..n1).step_by(2) {
                        w[(h, h)] = 0.25 * h as f64;
                    }
                }
                2 => w[(2, 1)] = f64::NAN,
                3 => w[(1, 1)] = -0.0,
                _ => {}
            }
        }
        if case == 4 {
            // Rows nearly constant and root weights small: `Lᵀ y` cancels
            // to `2⁻³⁰` of its terms or less, and the residual shows the
            // double-double's low part (a change of the order of its sums
            // fails the test below, where cases 0 to 3 did not).
            for m in 0..n1 {
                w[(0, m)] *= 2f64.powi(-30);
            }
            let rows = Matrix::from_fn(k, n, |c, i| 0.75 + u(c, i, 5) * 2f64.powi(-40));
            return (w, rows);
        }
        (w, rows)
    }

    /// [`Residuals`] entry by entry as it is defined: `D` and the residual
    /// summed by `Dot2` in the order of `h` (the diagonal weight taken as
    /// `0`, zero coefficients skipped), then `+ D_k y_k`, rounded once; the
    /// bound from the column sums summed in `f64`.
    fn residuals_definition(
        w: &Matrix<f64>,
        form: Form,
        words: &[usize],
        rows: &Matrix<f64>,
    ) -> (Matrix<f64>, Matrix<f64>) {
        let n1 = w.rows();
        let n = n1 - 1;
        let weight = |h: usize, k: usize| if h == k + 1 { 0.0 } else { w[(h, k + 1)] };
        let root_row = form.root_row();
        let gamma = (n + 2) as f64 * f64::EPSILON / (1.0 - (n + 2) as f64 * f64::EPSILON);
        let slack = gamma * gamma * (1.0 + gamma);
        let mut r = Matrix::zeros(words.len(), n);
        let mut bound = Matrix::zeros(words.len(), n);
        for (c, &j) in words.iter().enumerate() {
            let y = rows.row(c);
            let norm = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for k in 0..n {
                let (mut d, mut sums) = ((0.0, 0.0), 0.0);
                for h in 0..n1 {
                    if h > 0 || form.roots_on_diagonal() {
                        d = dot2(weight(h, k), 1.0, d);
                    }
                    let size = match (h, root_row) {
                        (0, Some(scale)) => scale.apply(1.0),
                        _ => 1.0,
                    };
                    sums += size * weight(h, k);
                }
                if root_row.is_some() && k == 0 {
                    d = (0.0, 0.0);
                }
                let mut acc = (0.0, 0.0);
                for h in 0..n1 {
                    let coefficient = match (h, root_row) {
                        (0, None) | (1, Some(_)) => 0.0,
                        (0, Some(scale)) => scale.apply(y[0]),
                        _ => -y[h - 1],
                    };
                    if coefficient != 0.0 {
                        acc = dot2(weight(h, k), coefficient, acc);
                    }
                }
                let (hi, lo) = dot2(d.0, y[k], acc);
                let target = if k == j { 1.0 } else { 0.0 };
                r[(c, k)] = (target - hi) - (lo + d.1 * y[k]);
                bound[(c, k)] = slack * (y[k].abs() * d.0 + norm * sums);
            }
        }
        (r, bound)
    }

    fn bits(m: &Matrix<f64>) -> Vec<u64> {
        m.as_slice().iter().map(|v| v.to_bits()).collect()
    }

    /// [`Residuals`] under the scalar instruction set and each one of the
    /// machine is its definition, bit for bit, at every tail length, in
    /// every form, for one row to more than two groups of
    /// [`SWEPT_ROWS`], with zero coefficients, diagonal weights (`+0`,
    /// `−0`, non-zero), a NaN weight, and rows whose residual cancels (its
    /// low part shows).
    #[test]
    fn residuals_are_their_definition_at_every_width() {
        let forms = [
            Form::Laplacian(Rooting::Multi),
            Form::Laplacian(Rooting::Single),
            Form::RowSum(PowerOfTwo(5)),
        ];
        for n in (1..=19).chain([36, 37]) {
            for k in [1, 3, 4, 5, 9] {
                for case in 0..5 {
                    let (w, rows) = sweep_inputs(n, k, case);
                    let words: Vec<usize> = (0..k).map(|c| (c * 5 + case as usize) % n).collect();
                    for form in forms {
                        let want = residuals_definition(&w, form, &words, &rows);
                        let runs = crate::testing::by_lanes(Residuals {
                            weights: &w,
                            form,
                            words: &words,
                            rows: &rows,
                        });
                        for (run, got) in runs.iter().enumerate() {
                            let at = format!("n = {n} k = {k} case {case} {form:?} run {run}");
                            assert_eq!(bits(&got.0), bits(&want.0), "{at} residual");
                            assert_eq!(bits(&got.1), bits(&want.1), "{at} bound");
                        }
                    }
                }
            }
        }
    }

    /// [`Corrections`] under the scalar instruction set and each one of the
    /// machine is its definition, bit for bit: `δ` summed in the order of
    /// the rows, zero coefficients skipped, by fused multiply-adds in the
    /// whole vectors of lanes (the scalar set's `mul_add_e` is a product
    /// and a sum) and by a product and a sum in the last partial one; the
    /// column sums of `|X|` in the order of the rows, the row maxima as
    /// `f64::max` from `0` (NaN not counted).
    #[test]
    fn corrections_are_their_definition_at_every_width() {
        for n in (1..=19).chain([36, 37]) {
            for k in [1, 3, 4, 5, 9] {
                for case in 0..4 {
                    let (w, r) = sweep_inputs(n, k, case);
                    let mut x = Matrix::from_fn(n, n, |i, j| w[(i + 1, j + 1)] - w[(j, i + 1)]);
                    if case == 2 && n > 3 {
                        x[(3, 1)] = f64::NAN;
                    }
                    let runs = crate::testing::by_lanes(WithLanes(Sweep { x: &x, r: &r }));
                    for (run, (lanes, got)) in runs.iter().enumerate() {
                        let at = format!("n = {n} k = {k} case {case} run {run}");
                        let whole = n / lanes * lanes;
                        for c in 0..k {
                            for t in 0..n {
                                let mut o = 0.0f64;
                                for i in (0..n).filter(|&i| r[(c, i)] != 0.0) {
                                    o = if *lanes > 1 && t < whole {
                                        r[(c, i)].mul_add(x[(i, t)], o)
                                    } else {
                                        o + r[(c, i)] * x[(i, t)]
                                    };
                                }
                                assert_eq!(got.delta[(c, t)].to_bits(), o.to_bits(), "{at}");
                            }
                        }
                        for t in 0..n {
                            let s = (0..n).fold(0.0, |s, i| s + x[(i, t)].abs());
                            assert_eq!(got.column_sums[t].to_bits(), s.to_bits(), "{at}");
                            let m = x.row(t).iter().fold(0.0f64, |m, v| m.max(v.abs()));
                            assert_eq!(got.row_maxima[t].to_bits(), m.to_bits(), "{at}");
                        }
                    }
                }
            }
        }
    }
}
