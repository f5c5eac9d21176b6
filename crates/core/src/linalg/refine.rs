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
/// The diagonal entries of `weights` are not read.
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
        // D in double-double: the weights into each word, the root's
        // multi-root only; D_0 = 0 single-root (row 0 holds the roots).
        let (mut d_hi, mut d_lo) = (vec![0.0; n], vec![0.0; n]);
        let mut column_sums = vec![0.0; n];
        for h in 0..n1 {
            let row = &w.row(h)[1..];
            if h > 0 || !single {
                row_update(simd, row, h, 1.0, &mut d_hi, &mut d_lo);
            }
            for (k, (s, &x)) in column_sums.iter_mut().zip(row).enumerate() {
                if k + 1 != h {
                    *s += x;
                }
            }
        }
        if single {
            d_hi[0] = 0.0;
            d_lo[0] = 0.0;
        }
        let gamma = (n + 2) as f64 * f64::EPSILON / (1.0 - (n + 2) as f64 * f64::EPSILON);
        // The column sums were summed in f64: 1 + nε covers their rounding.
        let slack = gamma * gamma * (1.0 + gamma);
        let (mut hi, mut lo) = (vec![0.0; n], vec![0.0; n]);
        for (c, &j) in self.words.iter().enumerate() {
            let y = self.rows.row(c);
            hi.iter_mut().for_each(|x| *x = 0.0);
            lo.iter_mut().for_each(|x| *x = 0.0);
            for h in 0..n1 {
                let coefficient = match (h, single) {
                    (0, false) | (1, true) => 0.0,
                    (0, true) => y[0],
                    _ => -y[h - 1],
                };
                if coefficient != 0.0 {
                    row_update(simd, &w.row(h)[1..], h, coefficient, &mut hi, &mut lo);
                }
            }
            product_update(simd, &d_hi, y, &mut hi, &mut lo);
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

/// `(hi, lo) += coefficient · row` in double-double for the entries
/// `k ≠ h − 1` (the diagonal of the weights is skipped).
#[inline(always)]
fn row_update<S: Simd>(
    simd: S,
    row: &[f64],
    h: usize,
    coefficient: f64,
    hi: &mut [f64],
    lo: &mut [f64],
) {
    let split = if h == 0 { 0 } else { h - 1 };
    let skip = usize::from(h > 0);
    let c = simd.splat_f64s(coefficient);
    for (start, end) in [(0, split), (split + skip, row.len())] {
        let (rv, rt) = S::as_simd_f64s(&row[start..end]);
        let (hv, ht) = S::as_mut_simd_f64s(&mut hi[start..end]);
        let (lv, lt) = S::as_mut_simd_f64s(&mut lo[start..end]);
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

/// `out[c] = |X|ᵀ s[c]` for every row `c` of `s` (`out[c][k] = Σ_i
/// |X[i][k]| s[c][i]`): the first-order bound of what an error `|Δr| ≤ s`
/// of a right-hand side of `Lᵀ δ = r` moves in `δ = Xᵀ r`. `O(n²)` per row.
pub(crate) fn abs_transpose_products(x: &Matrix<f64>, s: &Matrix<f64>) -> Matrix<f64> {
    let n = x.rows();
    let mut out = Matrix::zeros(s.rows(), n);
    let abs = x.map(|v| v.abs());
    for (c, oc) in out.as_mut_slice().chunks_exact_mut(n.max(1)).enumerate() {
        let sc = s.row(c);
        for (i, &si) in sc.iter().enumerate() {
            if si != 0.0 {
                for (o, &a) in oc.iter_mut().zip(abs.row(i)) {
                    *o += a * si;
                }
            }
        }
    }
    out
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

    /// `|X|ᵀ s` against its definition on a small matrix with signs.
    #[test]
    fn abs_transpose_products_match_the_definition() {
        let x = Matrix::from_row_major(2, 2, vec![1.0, -2.0, -3.0, 4.0]);
        let s = Matrix::from_row_major(1, 2, vec![0.5, 0.25]);
        let out = abs_transpose_products(&x, &s);
        assert_eq!(out.row(0), &[0.5 + 0.75, 1.0 + 1.0]);
    }
}
