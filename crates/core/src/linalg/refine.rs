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
use crate::matrix::Matrix;

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
/// included). `O(n²)` per row, two fused operations and a two-sum per
/// weight.
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
    let mut r = Matrix::zeros(words.len(), n);
    let mut bound = Matrix::zeros(words.len(), n);
    if n == 0 {
        return (r, bound);
    }
    Arch::new().dispatch(Residuals {
        weights,
        form,
        words,
        rows,
        r: &mut r,
        bound: &mut bound,
    });
    (r, bound)
}

struct Residuals<'a> {
    weights: &'a Matrix<f64>,
    form: Form,
    words: &'a [usize],
    rows: &'a Matrix<f64>,
    r: &'a mut Matrix<f64>,
    bound: &'a mut Matrix<f64>,
}

impl WithSimd for Residuals<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let w = self.weights;
        let n1 = w.rows();
        let n = n1 - 1;
        let root_row = self.form.root_row();
        let roots_on_diagonal = self.form.roots_on_diagonal();
        // The weights into words 1..=n, row by row, with a zero diagonal and
        // padded with zeros to whole vectors: every row update is one run
        // of full vectors.
        let lanes = std::mem::size_of::<S::f64s>() / std::mem::size_of::<f64>();
        let width = n.div_ceil(lanes) * lanes;
        let mut padded = vec![0.0; n1 * width];
        for (h, row) in padded.chunks_exact_mut(width).enumerate() {
            row[..n].copy_from_slice(&w.row(h)[1..]);
            if h > 0 {
                row[h - 1] = 0.0;
            }
        }
        // D in double-double: the weights into each word, the root's
        // multi-root and in the row-sum form; D_0 = 0 where row 0 holds the
        // roots.
        let (mut d_hi, mut d_lo) = (vec![0.0; width], vec![0.0; width]);
        let mut column_sums = vec![0.0; width];
        for (h, row) in padded.chunks_exact(width).enumerate() {
            if h > 0 || roots_on_diagonal {
                row_update(simd, row, 1.0, &mut d_hi, &mut d_lo);
            }
            // The root row's coefficient is 2^s y_0 in the row-sum form.
            let size = match (h, root_row) {
                (0, Some(scale)) => scale.apply(1.0),
                _ => 1.0,
            };
            column_sums
                .iter_mut()
                .zip(row)
                .for_each(|(s, x)| *s += size * x);
        }
        if root_row.is_some() {
            d_hi[0] = 0.0;
            d_lo[0] = 0.0;
        }
        let gamma = (n + 2) as f64 * f64::EPSILON / (1.0 - (n + 2) as f64 * f64::EPSILON);
        // The column sums were summed in f64: 1 + γ covers their rounding.
        let slack = gamma * gamma * (1.0 + gamma);
        let (mut hi, mut lo) = (vec![0.0; width], vec![0.0; width]);
        let mut y = vec![0.0; width];
        for (c, &j) in self.words.iter().enumerate() {
            y[..n].copy_from_slice(self.rows.row(c));
            hi.iter_mut().for_each(|x| *x = 0.0);
            lo.iter_mut().for_each(|x| *x = 0.0);
            for (h, row) in padded.chunks_exact(width).enumerate() {
                let coefficient = match (h, root_row) {
                    (0, None) | (1, Some(_)) => 0.0,
                    (0, Some(scale)) => scale.apply(y[0]),
                    _ => -y[h - 1],
                };
                if coefficient != 0.0 {
                    row_update(simd, row, coefficient, &mut hi, &mut lo);
                }
            }
            product_update(simd, &d_hi, &y, &mut hi, &mut lo);
            let norm = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let r = &mut self.r.as_mut_slice()[c * n..(c + 1) * n];
            let bound = &mut self.bound.as_mut_slice()[c * n..(c + 1) * n];
            for k in 0..n {
                let low = lo[k] + d_lo[k] * y[k];
                let target = if k == j { 1.0 } else { 0.0 };
                // Exact when hi ≈ 1 (Sterbenz) or target = 0.
                r[k] = (target - hi[k]) - low;
                bound[k] = slack * (y[k].abs() * d_hi[k] + norm * column_sums[k]);
            }
        }
    }
}

/// `(hi, lo) += coefficient · row` in double-double, entry by entry.
#[inline(always)]
fn row_update<S: Simd>(simd: S, row: &[f64], coefficient: f64, hi: &mut [f64], lo: &mut [f64]) {
    let c = simd.splat_f64s(coefficient);
    let (rv, rt) = S::as_simd_f64s(row);
    let (hv, ht) = S::as_mut_simd_f64s(hi);
    let (lv, lt) = S::as_mut_simd_f64s(lo);
    for ((&a, h), l) in rv.iter().zip(hv.iter_mut()).zip(lv.iter_mut()) {
        (*h, *l) = dot2_step(simd, a, c, *h, *l);
    }
    if !rt.is_empty() {
        let (h, l) = dot2_step(
            simd,
            simd.partial_load_f64s(rt),
            c,
            simd.partial_load_f64s(ht),
            simd.partial_load_f64s(lt),
        );
        simd.partial_store_f64s(ht, h);
        simd.partial_store_f64s(lt, l);
    }
}

/// `(hi, lo) += a ⊙ b` in double-double, entry by entry.
#[inline(always)]
fn product_update<S: Simd>(simd: S, a: &[f64], b: &[f64], hi: &mut [f64], lo: &mut [f64]) {
    let (av, at) = S::as_simd_f64s(a);
    let (bv, bt) = S::as_simd_f64s(b);
    let (hv, ht) = S::as_mut_simd_f64s(hi);
    let (lv, lt) = S::as_mut_simd_f64s(lo);
    for (((&a, &b), h), l) in av.iter().zip(bv).zip(hv.iter_mut()).zip(lv.iter_mut()) {
        (*h, *l) = dot2_step(simd, a, b, *h, *l);
    }
    if !at.is_empty() {
        let (h, l) = dot2_step(
            simd,
            simd.partial_load_f64s(at),
            simd.partial_load_f64s(bt),
            simd.partial_load_f64s(ht),
            simd.partial_load_f64s(lt),
        );
        simd.partial_store_f64s(ht, h);
        simd.partial_store_f64s(lt, l);
    }
}

/// One step of `Dot2`: `p = a b` with its rounding error by a fused
/// multiply-add (exact), `hi + p = s + t` by Knuth's two-sum (exact), and
/// the errors gathered in `lo`.
#[inline(always)]
fn dot2_step<S: Simd>(
    simd: S,
    a: S::f64s,
    b: S::f64s,
    hi: S::f64s,
    lo: S::f64s,
) -> (S::f64s, S::f64s) {
    let p = simd.mul_f64s(a, b);
    let pe = simd.mul_add_f64s(a, b, simd.neg_f64s(p));
    let s = simd.add_f64s(hi, p);
    let bb = simd.sub_f64s(s, hi);
    let t = simd.add_f64s(
        simd.sub_f64s(hi, simd.sub_f64s(s, bb)),
        simd.sub_f64s(p, bb),
    );
    (s, simd.add_f64s(lo, simd.add_f64s(t, pe)))
}

/// The column sums of `|X|`, `Σ_i |X[i][k]|`: an error `|Δr| ≤ s` of a
/// right-hand side of `Lᵀ δ = r` moves entry `k` of `δ = Xᵀ r` by at most
/// `Σ_i |X[i][k]| s_i ≤ (Σ_i |X[i][k]|) max_i s_i`. `O(n²)`, once for every
/// refined row.
pub(crate) fn column_abs_sums(x: &Matrix<f64>) -> Vec<f64> {
    let mut sums = vec![0.0; x.cols()];
    for i in 0..x.rows() {
        for (s, v) in sums.iter_mut().zip(x.row(i)) {
            *s += v.abs();
        }
    }
    sums
}

/// `δ = Xᵀ r` for every row `c` of `r` (`δ[c][k] = Σ_i r[c][i] X[i][k]`):
/// the corrections of the refined rows from the inverse already formed,
/// row by row of `X` (contiguous), `2n²` flops per row of `r`.
pub(crate) fn transpose_products(x: &Matrix<f64>, r: &Matrix<f64>) -> Matrix<f64> {
    let n = x.cols();
    let mut out = Matrix::zeros(r.rows(), n);
    if n == 0 {
        return out;
    }
    Arch::new().dispatch(TransposeProducts {
        x,
        r,
        out: &mut out,
    });
    out
}

struct TransposeProducts<'a> {
    x: &'a Matrix<f64>,
    r: &'a Matrix<f64>,
    out: &'a mut Matrix<f64>,
}

impl WithSimd for TransposeProducts<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let n = self.x.cols();
        for (c, oc) in self.out.as_mut_slice().chunks_exact_mut(n).enumerate() {
            for (i, &ri) in self.r.row(c).iter().enumerate() {
                if ri == 0.0 {
                    continue;
                }
                let a = simd.splat_f64s(ri);
                let (xv, xt) = S::as_simd_f64s(self.x.row(i));
                let (ov, ot) = S::as_mut_simd_f64s(oc);
                for (o, &v) in ov.iter_mut().zip(xv) {
                    *o = simd.mul_add_e_f64s(a, v, *o);
                }
                for (o, &v) in ot.iter_mut().zip(xt) {
                    *o += ri * v;
                }
            }
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
        let d = transpose_products(&x, &r);
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

    /// The column sums of `|X|` against their definition.
    #[test]
    fn column_abs_sums_match_the_definition() {
        let x = Matrix::from_row_major(2, 2, vec![1.0, -2.0, -3.0, 4.0]);
        assert_eq!(column_abs_sums(&x), vec![4.0, 6.0]);
    }
}
