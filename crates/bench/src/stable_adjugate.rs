//! The adjugate from a rank-revealing factorisation, never dividing by the
//! smallest pivot (Stewart 1998, "On the adjugate matrix").
//!
//! The `f64` backend's adjugate (`spantree_faer::Lu`) is `det A · A⁻¹` unless
//! `A` is singular to working precision, where it switches to an SVD. Between
//! the two, `det A · A⁻¹` divides by the smallest pivot and multiplies it
//! back, and the report measures what that costs. This module is the route
//! that avoids the division for every `A`; it lives here so the report can
//! compare it, and should move into the backend as its adjugate.
//!
//! Householder QR with column pivoting gives `A P = Q R` with
//! `|r_11| ≥ |r_22| ≥ … ≥ |r_nn|`. Then
//! `adj A = det P · det Q · P · adj R · Qᵀ` (`adj(XY) = adj Y adj X`,
//! `adj Q = det Q · Qᵀ` for orthogonal `Q`), and with `R = [R₁ r; 0 ρ]`
//!
//! `adj R = det R₁ · [ρ R₁⁻¹, −R₁⁻¹ r; 0, 1]`,
//!
//! in which the small `ρ` only multiplies. `R₁` is well conditioned when `A`
//! has rank at least `n − 1` (the pivoting puts the near-dependence in `ρ`),
//! so the error is about `n ε` relative to `‖adj A‖`, including at exact
//! singularity. `det R₁` is kept as mantissa and binary exponent, so it
//! never overflows on the way; the products `ρ R₁⁻¹` are formed in plain
//! `f64` and underflow only when the entries of `A` span more than ~10³⁰⁰.

use spantree_core::Matrix;

/// `adj A` of a square `f64` matrix by column-pivoted QR (Stewart 1998):
/// `A · adj A = det A · I`, defined and accurate also for singular `A` of
/// rank `n − 1`. `≈ 4n³/3 + 2n³` flops, `O(n²)` memory.
///
/// ```
/// use spantree_bench::stable_adjugate::adjugate;
/// use spantree_core::Matrix;
/// // Rank one: adj [[1, 2], [2, 4]] = [[4, −2], [−2, 1]].
/// let adj = adjugate(&Matrix::from_row_major(2, 2, vec![1.0, 2.0, 2.0, 4.0]));
/// let expected = [4.0, -2.0, -2.0, 1.0];
/// for (a, e) in adj.as_slice().iter().zip(expected) {
///     assert!((a - e).abs() < 1e-14);
/// }
/// ```
///
/// # Panics
/// If `a` is not square (a programming error).
pub fn adjugate(a: &Matrix<f64>) -> Matrix<f64> {
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
    // det R₁ as mantissa and exponent.
    let mut det_mant = 1.0_f64;
    let mut det_exp = 0_i64;
    for i in 0..n - 1 {
        let (m, e) = frexp(det_mant * r[(i, i)]);
        det_mant = m;
        det_exp += e;
    }
    // R₁⁻¹ by back substitution, then y = R₁⁻¹ r.
    let k = n - 1;
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
    let negative = qr.reflectors.len() % 2 == 1; // det Q = (−1)^{reflectors}
    let negative = negative != permutation_is_odd(&qr.perm);
    let sign = if negative { -1.0 } else { 1.0 };
    // (P M)[perm[j]] = M[j]; scale by det R₁ last.
    let mut out = Matrix::zeros(n, n);
    for j in 0..n {
        for l in 0..n {
            out[(qr.perm[j], l)] = scale2(sign * det_mant * m[(j, l)], det_exp);
        }
    }
    out
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

fn permutation_is_odd(p: &[usize]) -> bool {
    let mut seen = vec![false; p.len()];
    let mut odd = false;
    for start in 0..p.len() {
        let mut len = 0;
        let mut i = start;
        while !seen[i] {
            seen[i] = true;
            i = p[i];
            len += 1;
        }
        if len > 0 && len % 2 == 0 {
            odd = !odd;
        }
    }
    odd
}

/// `(m, e)` with `x = m · 2^e`, `|m|` in `[0.5, 1)`; `(x, 0)` for zero and non-finite `x`.
fn frexp(x: f64) -> (f64, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    if biased == 0 {
        let (m, e) = frexp(x * 2f64.powi(64));
        return (m, e - 64);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, biased - 1022)
}

/// `x · 2^e`, exact unless the result over- or underflows.
fn scale2(mut x: f64, mut e: i64) -> f64 {
    while e > 1000 && x.is_finite() && x != 0.0 {
        x *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 && x != 0.0 {
        x *= 2f64.powi(-1000);
        e += 1000;
    }
    x * 2f64.powi(e as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spantree_bruteforce::random::SplitMix64;
    use spantree_core::{Engine, Factorization, Scalar};
    use spantree_exact::{Exact, Rational};

    /// Norm-wise relative error of `a` against the exact adjugate of `m`.
    fn error(m: &Matrix<f64>, a: &Matrix<f64>) -> f64 {
        let exact = Exact.lu(m.map(|&x| Rational::from_f64(x))).adjugate();
        let (mut num, mut den) = (0.0_f64, 0.0_f64);
        for (x, e) in a.as_slice().iter().zip(exact.as_slice()) {
            num = num.max((Rational::from_f64(*x) - e.clone()).to_f64().abs());
            den = den.max(e.to_f64().abs());
        }
        num / den
    }

    #[test]
    fn matches_exact_adjugate_on_random_and_singular_matrices() {
        let mut rng = SplitMix64::new(3);
        for n in [2, 3, 5, 9] {
            let m = Matrix::from_fn(n, n, |_, _| rng.normal());
            // rel 1e-13: a few QR roundings, condition < 1e3 for these sizes.
            assert!(error(&m, &adjugate(&m)) < 1e-13, "random n = {n}");
            // Rank n − 1 (almost surely): last column the sum of the others,
            // exact in f64 for multiples of 1/8; adj ≠ 0.
            let mut s = Matrix::from_fn(n, n, |_, _| (rng.normal() * 64.0).round() / 8.0);
            for i in 0..n {
                s[(i, n - 1)] = (0..n - 1).map(|l| s[(i, l)]).sum();
            }
            let e = error(&s, &adjugate(&s));
            assert!(e < 1e-13, "singular n = {n}: {e}");
        }
    }

    #[test]
    fn large_determinants_and_n_1() {
        // diag(1e200, 1e200, 1e-100): det R₁ = 1e400 overflows f64 on the
        // way, the adjugate diag(1e100, 1e100, 1e400 → ∞) only where it must.
        let m = Matrix::from_fn(3, 3, |i, j| match (i, j) {
            (0, 0) | (1, 1) => 1e200,
            (2, 2) => 1e-100,
            _ => 0.0,
        });
        let a = adjugate(&m);
        assert!((a[(0, 0)] / 1e100 - 1.0).abs() < 1e-14);
        assert!(a[(2, 2)].is_infinite());
        assert_eq!(
            adjugate(&Matrix::from_row_major(1, 1, vec![0.0]))[(0, 0)],
            1.0
        );
    }
}
