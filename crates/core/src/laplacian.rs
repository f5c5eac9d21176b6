//! The Laplacians of the matrix-tree theorem ([§1.1](crate::mathematics)), and how their
//! entries depend on the arc weights.
//!
//! All take the collapsed weights in the `(n+1) × (n+1)` layout and return an
//! `n × n` matrix indexed by words `1..=n`, stored 0-based. Cost `O(n²)`.

use crate::graph::Rooting;
use crate::matrix::Matrix;
use crate::scalar::Scalar;

/// The Laplacian whose determinant is `Z` for `rooting`.
///
/// * Multi-root (Tutte): `L[m][m] = ρ[m] + Σ_{h≠m} A[h][m]`, `L[h][m] = −A[h][m]`,
///   so `Z = det L`.
/// * Single-root (Koo et al. 2007): the root-free Laplacian with its first row
///   replaced by the root weights, `L̂[1][m] = ρ[m]`, so `Z = det L̂`.
///
/// ```
/// use spantree_core::{laplacian::laplacian, Matrix, Rooting};
/// let w = Matrix::from_row_major(3, 3, vec![0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 0.0]);
/// let l = laplacian(&w, Rooting::Multi);
/// // det [[1+4, -3], [-4, 2+3]] = 25 - 12 = 13 trees' weight.
/// assert_eq!(l[(0, 0)] * l[(1, 1)] - l[(0, 1)] * l[(1, 0)], 13.0);
/// ```
pub fn laplacian<S: Scalar>(weights: &Matrix<S>, rooting: Rooting) -> Matrix<S> {
    let n = weights.rows() - 1;
    let mut l = Matrix::zeros(n, n);
    for m in 1..=n {
        let mut diagonal = match rooting {
            Rooting::Multi => weights[(0, m)].clone(),
            Rooting::Single => S::zero(),
        };
        for h in 1..=n {
            if h != m {
                let w = &weights[(h, m)];
                diagonal += w;
                l[(h - 1, m - 1)] = -w.clone();
            }
        }
        l[(m - 1, m - 1)] = diagonal;
    }
    if rooting == Rooting::Single {
        for m in 1..=n {
            l[(0, m - 1)] = weights[(0, m)].clone();
        }
    }
    l
}

/// The entries `(i, j, sign)` of the `n × n` Laplacian (0-based words) that
/// the weight of arc `h → m` enters, with `sign = ±1`: `L = Σ_e w_e Σ sign · E_ij`.
///
/// * multi-root: `ρ[m]` enters `(m, m)`; `A[h][m]` enters `(m, m)` with `+`
///   and `(h, m)` with `−`;
/// * single-root: as multi-root, except that row `0` (word 1) holds the root
///   weights, `ρ[m]` entering `(0, m)`, and word arcs do not enter row `0`.
///
/// Every arc touches at most two entries, both in column `m`: `Z` is linear
/// in each column ([§1.1](crate::mathematics)). Cost `O(1)`.
pub fn arc_entries(rooting: Rooting, h: usize, m: usize) -> [Option<(usize, usize, i8)>; 2] {
    let j = m - 1;
    if h == 0 {
        return match rooting {
            Rooting::Multi => [Some((j, j, 1)), None],
            Rooting::Single => [Some((0, j, 1)), None],
        };
    }
    let i = h - 1;
    let single = rooting == Rooting::Single;
    [
        (!single || j != 0).then_some((j, j, 1)),
        (!single || i != 0).then_some((i, j, -1)),
    ]
}

/// `Σ_{(i,j,σ) ∈ arc_entries(h, m)} σ · M[j][i]`: the arc's share of
/// `⟨Mᵀ, dL⟩`, or `∂Z/∂w_{hm}` when `M = adj L` (Jacobi). `O(1)`.
pub(crate) fn read_entries<S: Scalar>(m_: &Matrix<S>, rooting: Rooting, h: usize, m: usize) -> S {
    let mut d = S::zero();
    for (i, j, sign) in arc_entries(rooting, h, m).into_iter().flatten() {
        if sign > 0 {
            d += &m_[(j, i)];
        } else {
            d -= &m_[(j, i)];
        }
    }
    d
}

/// `∂Z/∂w` for every arc, in the `(n+1) × (n+1)` layout, from `adj(L)` read
/// through Jacobi's formula `∂Z/∂L[i][j] = adj(L)[j][i]` ([§1.2](crate::mathematics)).
///
/// With `adj` the adjugate (or `Z · X` for `X = L⁻¹`), 0-based words `i, j`:
/// * multi-root: `∂Z/∂ρ[m] = adj[m][m]`, `∂Z/∂A[h][m] = adj[m][m] − adj[m][h]`;
/// * single-root: `∂Z/∂ρ[m] = adj[m][0]`,
///   `∂Z/∂A[h][m] = [m≠0] adj[m][m] − [h≠0] adj[m][h]`.
///
/// Cost `O(n²)`.
pub fn weight_gradient<S: Scalar>(adj: &Matrix<S>, rooting: Rooting) -> Matrix<S> {
    let n = adj.rows();
    let mut g = Matrix::zeros(n + 1, n + 1);
    for m in 1..=n {
        for h in (0..=n).filter(|&h| h != m) {
            g[(h, m)] = read_entries(adj, rooting, h, m);
        }
    }
    g
}

/// The adjoint (transpose) of the linear map `M ↦ weight_gradient(M)`: the
/// `n × n` matrix `C` with `⟨C, M⟩ = Σ_e seed_e · weight_gradient(M)_e` for
/// every `M`. Reverse mode through the marginals uses it to collect the
/// adjoint of `X = L⁻¹` ([§1.5](crate::mathematics), step 3). Cost `O(n²)`.
pub fn weight_gradient_adjoint<S: Scalar>(seed: &Matrix<S>, rooting: Rooting) -> Matrix<S> {
    let n = seed.rows() - 1;
    let mut c = Matrix::zeros(n, n);
    for m in 1..=n {
        for h in (0..=n).filter(|&h| h != m && !seed[(h, m)].is_zero()) {
            for (i, j, sign) in arc_entries(rooting, h, m).into_iter().flatten() {
                if sign > 0 {
                    c[(j, i)] += &seed[(h, m)];
                } else {
                    c[(j, i)] -= &seed[(h, m)];
                }
            }
        }
    }
    c
}

/// `Cᵀ` for `C = weight_gradient_adjoint(seed ⊙ weights)`, written
/// transposed directly (what a solve `X Cᵀ` needs), skipping arcs of weight
/// or seed zero. Cost `O(n²)`.
#[cfg(test)]
pub(crate) fn weighted_adjoint_transposed<S: Scalar>(
    seed: &Matrix<S>,
    weights: &Matrix<S>,
    rooting: Rooting,
) -> Matrix<S> {
    let n = weights.rows() - 1;
    let mut ct = Matrix::zeros(n, n);
    for h in 0..=n {
        for m in (1..=n).filter(|&m| m != h) {
            let (s, w) = (&seed[(h, m)], &weights[(h, m)]);
            if s.is_zero() || w.is_zero() {
                continue;
            }
            let sw = s.clone() * w.clone();
            for (i, j, sign) in arc_entries(rooting, h, m).into_iter().flatten() {
                if sign > 0 {
                    ct[(i, j)] += &sw;
                } else {
                    ct[(i, j)] -= &sw;
                }
            }
        }
    }
    ct
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed pseudo-random matrix, entries in [-1, 1].
    fn matrix(rows: usize, cols: usize, seed: u64) -> Matrix<f64> {
        let mut s = seed;
        Matrix::from_fn(rows, cols, |_, _| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
    }

    fn dot(a: &Matrix<f64>, b: &Matrix<f64>) -> f64 {
        a.as_slice()
            .iter()
            .zip(b.as_slice())
            .map(|(x, y)| x * y)
            .sum()
    }

    #[test]
    fn adjoint_is_the_transpose_of_weight_gradient() {
        // ⟨C(seed), M⟩ = ⟨seed, weight_gradient(M)⟩ is the definition of the
        // adjoint; both sides are sums of the same ≤ 3n² products, so they
        // agree to a few ulps of the sum (rel 1e-12).
        for n in 1..=6 {
            for rooting in Rooting::ALL {
                let mut seed = matrix(n + 1, n + 1, 7 + n as u64);
                for k in 0..=n {
                    seed[(k, 0)] = 0.0;
                    seed[(k, k)] = 0.0;
                }
                let m = matrix(n, n, 99 + n as u64);
                let lhs = dot(&weight_gradient_adjoint(&seed, rooting), &m);
                let rhs = dot(&seed, &weight_gradient(&m, rooting));
                assert!(
                    (lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()),
                    "{n} {rooting:?}"
                );
            }
        }
    }
}
