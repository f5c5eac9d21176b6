//! Routes to `adj A` in `f64`: `det A · A⁻¹` from the LU when `A` is safely
//! nonsingular, the SVD when it is singular to working precision (the two
//! that [`Lu`]'s adjugate chooses between), and [`stable_adjugate`] by
//! column-pivoted QR, which never divides by the smallest pivot.

use spantree_core::{Factorization, Matrix, Sign};

use crate::dense::{self, permutation_is_odd};
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

/// `adj A` of a square `f64` matrix by column-pivoted QR (Stewart 1998, "On
/// the adjugate matrix"): `A · adj A = det A · I`, defined and accurate also
/// for singular `A` of rank `n − 1`.
///
/// **Formula.** Householder QR with column pivoting gives `A P = Q R` with
/// `|r_11| ≥ |r_22| ≥ … ≥ |r_nn|`. Then
/// `adj A = det P · det Q · P · adj R · Qᵀ` (`adj(XY) = adj Y adj X`,
/// `adj Q = det Q · Qᵀ` for orthogonal `Q`), and with `R = [R₁ r; 0 ρ]`
///
/// `adj R = det R₁ · [ρ R₁⁻¹, −R₁⁻¹ r; 0, 1]`,
///
/// in which the small `ρ` only multiplies. The adjugate of [`Lu`]
/// (`det A · A⁻¹`) divides by the smallest pivot and multiplies it back;
/// this route avoids the division for every `A`.
///
/// **Accuracy.** `R₁` is well conditioned when `A` has rank at least `n − 1`
/// (the pivoting puts the near-dependence in `ρ`), so the error is about
/// `n ε` relative to `‖adj A‖`, including at exact singularity. `det R₁` is
/// kept as mantissa and binary exponent, so it never overflows on the way;
/// the products `ρ R₁⁻¹` are formed in plain `f64` and underflow only when
/// the entries of `A` span more than ~10³⁰⁰.
///
/// **Cost.** `≈ 4n³/3 + 2n³` flops (the QR with recomputed column norms,
/// the triangular inverse, `Qᵀ` applied to `adj R`), `O(n²)` memory.
///
/// ```
/// use spantree_core::Matrix;
/// use spantree_faer::stable_adjugate;
/// // Rank one: adj [[1, 2], [2, 4]] = [[4, −2], [−2, 1]].
/// let adj = stable_adjugate(&Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 4.0]));
/// let expected = [4.0, -2.0, -2.0, 1.0];
/// for (a, e) in adj.as_slice().iter().zip(expected) {
///     assert!((a - e).abs() < 1e-14);
/// }
/// ```
///
/// # Panics
/// If `a` is not square (a programming error).
pub fn stable_adjugate(a: &Matrix<f64>) -> Matrix<f64> {
    assert_eq!(a.rows(), a.cols(), "the adjugate needs a square matrix");
    let n = a.rows();
    if n == 0 {
        return Matrix::zeros(0, 0);
    }
    if n == 1 {
        return Matrix::identity(1);
    }
    let qr = PivotedQr::new(a);
    let r = &qr.r;
    let k = n - 1;
    let det_r1 = (0..k).fold(Scaled::ONE, |d, i| d.times(r[(i, i)]));
    // R₁⁻¹ by back substitution, then y = R₁⁻¹ r.
    let mut inv = Matrix::zeros(k, k);
    for j in 0..k {
        inv[(j, j)] = 1.0 / r[(j, j)];
        for i in (0..j).rev() {
            let s: f64 = (i + 1..=j).map(|l| r[(i, l)] * inv[(l, j)]).sum();
            inv[(i, j)] = -s / r[(i, i)];
        }
    }
    let rho = r[(k, k)];
    let mut adj_r = Matrix::zeros(n, n);
    for i in 0..k {
        for j in i..k {
            adj_r[(i, j)] = rho * inv[(i, j)];
        }
        adj_r[(i, k)] = -(i..k).map(|l| inv[(i, l)] * r[(l, k)]).sum::<f64>();
    }
    adj_r[(k, k)] = 1.0;
    // adj R · Qᵀ = adj R · H_{n−1} ⋯ H_1 (each H symmetric).
    let mut m = adj_r;
    for (v, tau) in qr.reflectors.iter().rev() {
        for i in 0..n {
            let dot: f64 = (0..n).map(|l| m[(i, l)] * v[l]).sum();
            if dot != 0.0 {
                for l in 0..n {
                    m[(i, l)] -= tau * dot * v[l];
                }
            }
        }
    }
    // det Q = (−1)^{reflectors}, det P = ±1.
    let negative = (qr.reflectors.len() % 2 == 1) != permutation_is_odd(&qr.perm);
    let det = if negative { det_r1.negated() } else { det_r1 };
    // (P M)[perm[j]] = M[j]; scaled by ± det R₁ last.
    let mut out = Matrix::zeros(n, n);
    for j in 0..n {
        for l in 0..n {
            out[(qr.perm[j], l)] = m[(j, l)];
        }
    }
    from_inverse(det, out)
}

/// `A P = Q R`, Householder with column pivoting (Businger & Golub 1965).
struct PivotedQr {
    r: Matrix<f64>,
    /// Column `j` of `A P` is column `perm[j]` of `A`.
    perm: Vec<usize>,
    /// `H = I − τ v vᵀ`, in the order applied (`Qᵀ = H_last ⋯ H_first`).
    reflectors: Vec<(Vec<f64>, f64)>,
}

impl PivotedQr {
    fn new(a: &Matrix<f64>) -> Self {
        let n = a.rows();
        let mut r = a.clone();
        let mut perm: Vec<usize> = (0..n).collect();
        let mut reflectors = Vec::new();
        for k in 0..n {
            // Column norms recomputed each step: O(n³) in all, and exact
            // enough that no downdating error picks a wrong pivot.
            let norm2 =
                |r: &Matrix<f64>, j: usize| -> f64 { (k..n).map(|i| r[(i, j)].powi(2)).sum() };
            let best = (k..n)
                .max_by(|&x, &y| norm2(&r, x).total_cmp(&norm2(&r, y)))
                .unwrap_or(k);
            if best != k {
                for i in 0..n {
                    let t = r[(i, k)];
                    r[(i, k)] = r[(i, best)];
                    r[(i, best)] = t;
                }
                perm.swap(k, best);
            }
            if k + 1 == n {
                break;
            }
            let x: Vec<f64> = (k..n).map(|i| r[(i, k)]).collect();
            if x[1..].iter().all(|&v| v == 0.0) {
                continue; // already triangular here: H = I
            }
            let scale = x.iter().fold(0.0_f64, |s, v| s.max(v.abs()));
            let norm = scale * x.iter().map(|v| (v / scale).powi(2)).sum::<f64>().sqrt();
            // LAPACK's convention (dlarfg): H x = β e₁, v₀ = 1, no overflow in vᵀv.
            let beta = if x[0] > 0.0 { -norm } else { norm };
            let tau = (beta - x[0]) / beta;
            let mut v = vec![0.0; n];
            v[k] = 1.0;
            for (i, xi) in x.iter().enumerate().skip(1) {
                v[k + i] = xi / (x[0] - beta);
            }
            for j in k + 1..n {
                let dot: f64 = (k..n).map(|i| v[i] * r[(i, j)]).sum();
                for i in k..n {
                    r[(i, j)] -= tau * dot * v[i];
                }
            }
            r[(k, k)] = beta;
            for i in k + 1..n {
                r[(i, k)] = 0.0;
            }
            reflectors.push((v, tau));
        }
        PivotedQr {
            r,
            perm,
            reflectors,
        }
    }
}
