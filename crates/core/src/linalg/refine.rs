//! One step of iterative refinement of rows of `X = L⁻¹`, `L` a Laplacian
//! given by its weights, with the residual in double-double: the dense
//! marginals of the accurate default where the inverse alone cannot certify
//! them.
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

use pulp::{Arch, Simd, WithSimd};

use crate::graph::Rooting;
use crate::matrix::Matrix;

/// The residuals `r = e_j − Lᵀ y` of the rows `y` (row `c` of `rows`, a
/// vector of `n` entries) for the words `words[c]` (`0`-based, `j`), with
/// `L` the `n × n` Laplacian of the `(n+1) × (n+1)` `weights` for
/// `rooting`, in double-double and rounded once; and a bound of the error
/// of each entry, `γ_{n+2}² (|y_k| D_k + ‖y‖_∞ Σ_h w[h][k])` (the
/// double-double sum of `Dot2`; the final rounding, `ε |r_k|`, not
/// included). `O(n²)` per row, two fused operations and a two-sum per
/// weight.
///
/// The diagonal entries of `weights` are not read (taken as `0`).
pub(crate) fn residuals(
    weights: &Matrix<f64>,
    rooting: Rooting,
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
        rooting,
        words,
        rows,
        r: &mut r,
        bound: &mut bound,
    });
    (r, bound)
}

struct Residuals<'a> {
    weights: &'a Matrix<f64>,
    rooting: Rooting,
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
        let single = self.rooting == Rooting::Single;
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
        // multi-root only; D_0 = 0 single-root (row 0 holds the roots).
        let (mut d_hi, mut d_lo) = (vec![0.0; width], vec![0.0; width]);
        let mut column_sums = vec![0.0; width];
        for (h, row) in padded.chunks_exact(width).enumerate() {
            if h > 0 || !single {
                row_update(simd, row, 1.0, &mut d_hi, &mut d_lo);
            }
            column_sums.iter_mut().zip(row).for_each(|(s, x)| *s += x);
        }
        if single {
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
                let coefficient = match (h, single) {
                    (0, false) | (1, true) => 0.0,
                    (0, true) => y[0],
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

    /// The oracle: integers. Integer weights (root weights `0..4`, arcs
    /// `0..1000`) and rows `y_k = N_k 2⁻⁶⁰` (`N_k < 2⁶¹` with 53
    /// significant bits, all close to `1/2`) make `2⁶⁰ (e_j − Lᵀ y)` an
    /// integer, computed exactly in `i128`. The terms `D_k y_k` (about
    /// `10⁴`) cancel down to residuals of a few units, as in a residual of
    /// a dense solve: the residual must equal the exact one to `ε` of
    /// itself plus its stated bound, where the same expansion summed in
    /// `f64` (the diagonal of the Laplacian rounded) is off by more.
    fn residual_is_exact(rooting: Rooting, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = 37;
        let n1 = n + 1;
        let w = Matrix::from_fn(n1, n1, |h, m| match (h, m) {
            (_, 0) => 0.0,
            (0, _) => f64::from(rng.random_range(0..4u32)),
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
        let (r, bound) = residuals(&w, rooting, &words, &rows);
        let single = rooting == Rooting::Single;
        let mut plain_error = 0.0f64;
        for (c, &j) in words.iter().enumerate() {
            let y = &numerators[c];
            for k in 0..n {
                // 2⁶⁰ (Lᵀ y)_k and the same in f64, column k of L read
                // from the weights: the root row (single-root), the
                // diagonal sum, the off-diagonal weights.
                let (mut exact, mut diagonal, mut plain): (i128, f64, f64) = (0, 0.0, 0.0);
                for h in (0..n1).filter(|&h| h != k + 1) {
                    let a = w[(h, k + 1)];
                    let ai = a as i128;
                    let on_diagonal = if single { h > 0 && k > 0 } else { true };
                    if on_diagonal {
                        exact += ai * y[k];
                        diagonal += a;
                    }
                    if h == 0 && single {
                        exact += ai * y[0];
                        plain += a * rows[(c, 0)];
                    } else if h > 1 || (h == 1 && !single) {
                        exact -= ai * y[h - 1];
                        plain -= a * rows[(c, h - 1)];
                    }
                }
                let target: i128 = if k == j { 1 << 60 } else { 0 };
                let exact = (target - exact) as f64 * 2f64.powi(-60);
                let err = (r[(c, k)] - exact).abs();
                assert!(
                    err <= f64::EPSILON * exact.abs() + bound[(c, k)],
                    "{rooting:?} row {c} entry {k}: {} against {exact}",
                    r[(c, k)]
                );
                let plain = (target as f64 * 2f64.powi(-60)) - (diagonal * rows[(c, k)] + plain);
                plain_error = plain_error.max((plain - exact).abs() / exact.abs());
            }
        }
        // The check can fail: the expansion in f64 is off by more than
        // 2⁵ ulps (measured 6.8e-14 single-root, more multi-root), where
        // the refined residual is within one ulp plus its bound.
        assert!(plain_error > 1e-14, "{rooting:?}: {plain_error}");
    }

    #[test]
    fn residual_is_exact_multi_root() {
        residual_is_exact(Rooting::Multi, 7);
    }

    #[test]
    fn residual_is_exact_single_root() {
        residual_is_exact(Rooting::Single, 8);
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
