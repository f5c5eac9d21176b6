//! The two routes to `adj A`: `det A · A⁻¹` from the LU when `A` is safely
//! nonsingular, and the SVD when it is singular to working precision.

use spantree_core::{Factorization, Matrix, Sign};

use crate::dense;
use crate::lu::Lu;
use crate::scaled::{frexp, scale2, Scaled};

/// `det · X` for `X = A⁻¹`, with `det` kept as mantissa and exponent so that
/// an entry overflows (underflows) only if the adjugate's entry itself does.
pub(crate) fn from_inverse(det: Scaled, mut x: Matrix<f64>) -> Matrix<f64> {
    for v in x.as_mut_slice() {
        *v = scale2(*v * det.mantissa(), det.exponent());
    }
    x
}

/// `adj A` from the SVD of an equilibrated copy of `A`.
///
/// `A = D_r B D_c` with power-of-two diagonal scalings (exact) that bring
/// every row, then every column, to a largest entry in `[0.5, 1)`; then
/// `adj A = adj D_c · adj B · adj D_r`, `adj D = det D · D⁻¹`, and for
/// `B = U Σ Vᵀ`:
///
/// `adj B = det U · det V · V · diag(Π_{k≠l} σ_k) · Uᵀ`
///
/// (`adj Q = det Q · Qᵀ` for orthogonal `Q`, `adj Σ = diag(Π_{k≠l} σ_k)`).
/// The products of singular values are formed as mantissa and exponent and
/// share one power-of-two factor, applied last. `det U, det V = ±1` come from
/// the signs of LUs of `U` and `V`. Cost: one SVD (`≈ 20n³` flops) plus two
/// LUs and one product; NaN everywhere if the SVD does not converge.
pub(crate) fn from_svd(a: &Matrix<f64>) -> Matrix<f64> {
    let n = a.rows();
    let mut b = a.clone();
    let row_exp: Vec<i64> = (0..n)
        .map(|i| {
            let e = largest_exponent((0..n).map(|j| b[(i, j)]));
            (0..n).for_each(|j| b[(i, j)] = scale2(b[(i, j)], -e));
            e
        })
        .collect();
    let col_exp: Vec<i64> = (0..n)
        .map(|j| {
            let e = largest_exponent((0..n).map(|i| b[(i, j)]));
            (0..n).for_each(|i| b[(i, j)] = scale2(b[(i, j)], -e));
            e
        })
        .collect();
    let Some((u, sigma, v)) = dense::svd(&b) else {
        return Matrix::from_fn(n, n, |_, _| f64::NAN);
    };
    let flip = det_is_negative(&u) != det_is_negative(&v);

    // π_l = Π_{k≠l} σ_k from prefix and suffix products.
    let mut prefix = vec![Scaled::ONE; n + 1];
    for l in 0..n {
        prefix[l + 1] = prefix[l].times(sigma[l]);
    }
    let mut pi = vec![Scaled::ONE; n];
    let mut suffix = Scaled::ONE;
    for l in (0..n).rev() {
        pi[l] = prefix[l].times_scaled(suffix);
        suffix = suffix.times(sigma[l]);
    }
    let common = pi
        .iter()
        .filter(|p| p.mantissa() != 0.0)
        .map(|p| p.exponent())
        .max()
        .unwrap_or(0);
    let pi: Vec<f64> = pi
        .iter()
        .map(|p| scale2(p.mantissa(), p.exponent() - common))
        .collect();

    let row_total: i64 = row_exp.iter().sum();
    let col_total: i64 = col_exp.iter().sum();
    Matrix::from_fn(n, n, |i, j| {
        let mut s: f64 = (0..n).map(|l| v[(i, l)] * pi[l] * u[(j, l)]).sum();
        if flip {
            s = -s;
        }
        scale2(
            s,
            common + (col_total - col_exp[i]) + (row_total - row_exp[j]),
        )
    })
}

/// The binary exponent of the largest magnitude among `values` (`0` if all are zero).
fn largest_exponent(values: impl Iterator<Item = f64>) -> i64 {
    let max = values.map(f64::abs).fold(0.0, f64::max);
    if max == 0.0 || !max.is_finite() {
        0
    } else {
        frexp(max).1
    }
}

/// Whether `det Q < 0` for an orthogonal `Q` (so `det Q = -1`), from the
/// sign of its LU, which is well conditioned.
fn det_is_negative(q: &Matrix<f64>) -> bool {
    Lu::new(q.clone()).ln_abs_det().0 == Sign::Negative
}
