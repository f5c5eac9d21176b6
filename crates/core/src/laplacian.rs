//! The Laplacians of the matrix-tree theorem ([§1.1](crate::mathematics)), and how their
//! entries depend on the arc weights.
//!
//! All take the collapsed weights in the `(n+1) × (n+1)` layout and return an
//! `n × n` matrix indexed by words `1..=n`, stored 0-based. Cost `O(n²)`.

use std::any::Any;

use pulp::{Arch, Simd, WithSimd};

use crate::graph::Rooting;
use crate::linalg::{exp_row, load_lanes, store_lanes, ColumnBody, Narrow};
use crate::matrix::{from_f64, Matrix};
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
    if let Some(w) = (weights as &dyn Any).downcast_ref::<Matrix<f64>>() {
        // `f64`: the same sums in vector registers, compiled for the
        // detected instruction set.
        let rows = Arch::new().dispatch(Narrow(LaplacianRows {
            weights: w.as_slice(),
            n,
            rooting,
        }));
        if let Some(l) = from_f64(Matrix::from_row_major(n, n, rows)) {
            return l;
        }
    }
    let mut l = Matrix::zeros(n, n);
    laplacian_rows(weights.as_slice(), n, rooting, l.as_mut_slice());
    l
}

/// [`laplacian`] of `f64` weights (`(n+1)²`, row-major) under one
/// instruction-set dispatch: returns the `n × n` Laplacian row-major.
#[derive(Clone, Copy)]
struct LaplacianRows<'a> {
    weights: &'a [f64],
    n: usize,
    rooting: Rooting,
}

/// How many blocks of columns [`LaplacianRows`] keeps in vector registers
/// down the rows: `4` (32 columns with AVX-512, 16 with AVX2).
const STRIP_BLOCKS: usize = 4;

impl ColumnBody for LaplacianRows<'_> {
    type Output = Vec<f64>;

    fn columns(&self) -> usize {
        self.n
    }

    /// Strips of up to [`STRIP_BLOCKS`] blocks of columns
    /// ([`column_blocks`](crate::linalg::column_blocks)), each strip's column sums held in vector
    /// registers down the rows (no store and reload of the sums from one
    /// row to the next, no partial vector: the last block moved back over
    /// columns it computes again the same way), each row's negation stored
    /// into its Laplacian row. The diagonal lane (a self-loop) is replaced
    /// by `−0` (`x + (−0) = x` for every `x`: the sums of the definition,
    /// bit for bit, the root weight first multi-root, then `h = 1, 2, …`),
    /// and overwritten by its column's sum after the strip.
    #[inline(always)]
    fn body<Sm: Simd>(self, simd: Sm) -> Vec<f64> {
        let LaplacianRows {
            weights,
            n,
            rooting,
        } = self;
        // One of this thread's spares: every entry is written below (row
        // `0` single-root copied, the other rows stored, the diagonal after).
        let mut out = crate::matrix::Spare::take(n * n);
        if n == 0 {
            return out;
        }
        let multi = rooting == Rooting::Multi;
        if !multi {
            // Row 0 of the single-root Laplacian holds the root weights.
            out[..n].copy_from_slice(&weights[1..n + 1]);
        }
        let blocks = n.div_ceil(Sm::F64_LANES);
        let mut first = 0;
        while first < blocks {
            let strip = (blocks - first).min(STRIP_BLOCKS);
            let args = (simd, weights, n, multi, first, &mut out[..]);
            match strip {
                1 => laplacian_strip::<Sm, 1>(args),
                2 => laplacian_strip::<Sm, 2>(args),
                3 => laplacian_strip::<Sm, 3>(args),
                _ => laplacian_strip::<Sm, STRIP_BLOCKS>(args),
            }
            first += strip;
        }
        out
    }
}

/// `B` blocks of [`LaplacianRows`] from block `first` on: their column
/// sums in `B` vector registers down the rows `h = 1..=n`, then written
/// onto the diagonal.
#[inline(always)]
fn laplacian_strip<Sm: Simd, const B: usize>(
    (simd, weights, n, multi, first, out): (Sm, &[f64], usize, bool, usize, &mut [f64]),
) {
    let (n1, lanes) = (n + 1, Sm::F64_LANES);
    let at: [usize; B] = core::array::from_fn(|b| ((first + b) * lanes).min(n - lanes));
    let iota: [f64; 16] = core::array::from_fn(|i| i as f64);
    let iota = load_lanes(simd, &iota, 0);
    let column: [Sm::f64s; B] =
        core::array::from_fn(|b| simd.add_f64s(iota, simd.splat_f64s(at[b] as f64)));
    let minus_zero = simd.splat_f64s(-0.0);
    let root = &weights[1..n1];
    let mut sums: [Sm::f64s; B] = core::array::from_fn(|b| {
        if multi {
            load_lanes(simd, root, at[b])
        } else {
            simd.splat_f64s(0.0)
        }
    });
    for h in 1..=n {
        let row = &weights[h * n1 + 1..(h + 1) * n1];
        let diagonal = simd.splat_f64s((h - 1) as f64);
        let store = h > 1 || multi;
        let lr = &mut out[(h - 1) * n..h * n];
        for b in 0..B {
            let w = load_lanes(simd, row, at[b]);
            let w = simd.select_f64s(simd.equal_f64s(column[b], diagonal), minus_zero, w);
            sums[b] = simd.add_f64s(sums[b], w);
            if store {
                store_lanes(simd, lr, at[b], simd.neg_f64s(w));
            }
        }
    }
    for b in 0..B {
        let mut lane = [0.0f64; 16];
        store_lanes(simd, &mut lane, 0, sums[b]);
        for (i, &d) in lane[..lanes].iter().enumerate() {
            let m = at[b] + i;
            if multi || m > 0 {
                out[m * n + m] = d;
            }
        }
    }
}

/// The body of [`laplacian`]: `out` (`n × n`, zeros) from the `(n+1)²`
/// weights, row by row.
#[inline(always)]
fn laplacian_rows<S: Scalar>(weights: &[S], n: usize, rooting: Rooting, out: &mut [S]) {
    let n1 = n + 1;
    // Row by row in both matrices (no strided access); the diagonal sums
    // add their terms in the order of the column-by-column definition
    // (the root weight first, multi-root, then h = 1, 2, …): the same bits.
    let mut diagonal: Vec<S> = match rooting {
        Rooting::Multi => weights[1..n1].to_vec(),
        Rooting::Single => vec![S::zero(); n],
    };
    // Each row in two branch-free runs, left and right of its diagonal
    // entry (which is skipped: a self-loop is no arc), so that they vectorise.
    let run = |lr: &mut [S], diagonal: &mut [S], row: &[S]| {
        for ((o, d), w) in lr.iter_mut().zip(diagonal).zip(row) {
            *d += w;
            *o = -w.clone();
        }
    };
    for (h, row) in weights.chunks_exact(n1).enumerate().skip(1) {
        let lr = &mut out[(h - 1) * n..h * n];
        let (left, right) = lr.split_at_mut(h - 1);
        let (d_left, d_right) = diagonal.split_at_mut(h - 1);
        let row = &row[1..];
        run(left, d_left, &row[..h - 1]);
        run(&mut right[1..], &mut d_right[1..], &row[h..]);
    }
    for (m, d) in diagonal.into_iter().enumerate() {
        out[m * n + m] = d;
    }
    if rooting == Rooting::Single {
        out[..n].clone_from_slice(&weights[1..n1]);
    }
}

/// The weights `w[h][m] = e^{θ[h][m] − c_m}` of a score matrix and their
/// Laplacian for `rooting`, in one pass: the same numbers, bit for bit, as
/// [`exp_differences`](crate::linalg::exp_differences) row by row followed
/// by [`laplacian`], without the intermediate weight matrix when `weights`
/// is `None`.
///
/// `scores` is `(n+1) × (n+1)` (row `0` the root, `−∞` for an absent arc;
/// column `0` and the diagonal are ignored), `shift` has `n + 1` entries
/// (`shift[m] = c_m`, entry `0` ignored), `laplacian` is `n × n` and is
/// overwritten; `weights`, if given, `(n+1) × (n+1)`, receives `w` with
/// zeros on column `0` and the diagonal. Each score row is exponentiated
/// once (vectorised, one instruction-set dispatch for the whole matrix),
/// its negation written straight into its Laplacian row and its entries
/// added to the column sums of the diagonal, while the row is in the
/// first-level cache. `O(n²)`, one exponential per arc.
///
/// # Panics
/// If the dimensions disagree (a programming error).
///
/// ```
/// use spantree_core::laplacian::{exp_laplacian, laplacian};
/// use spantree_core::{Matrix, Rooting};
///
/// let s = Matrix::from_row_major(3, 3, vec![0.0, 0.5, -1.0, 0.0, 0.0, 2.0, 0.0, 1.0, 0.0]);
/// let shift = [0.0, 1.0, 2.0];
/// let mut w = Matrix::zeros(3, 3);
/// let mut l = Matrix::zeros(2, 2);
/// exp_laplacian(&s, &shift, Rooting::Multi, Some(&mut w), &mut l);
/// assert_eq!(w[(1, 2)], 1.0); // e^{2 − 2}
/// assert_eq!(l, laplacian(&w, Rooting::Multi));
/// ```
pub fn exp_laplacian(
    scores: &Matrix<f64>,
    shift: &[f64],
    rooting: Rooting,
    weights: Option<&mut Matrix<f64>>,
    laplacian: &mut Matrix<f64>,
) {
    let n = laplacian.rows();
    assert!(laplacian.cols() == n && scores.rows() == n + 1 && scores.cols() == n + 1);
    assert_eq!(shift.len(), n + 1);
    if let Some(w) = &weights {
        assert!(w.rows() == n + 1 && w.cols() == n + 1);
    }
    Arch::new().dispatch(ExpLaplacian {
        n,
        scores: scores.as_slice(),
        shift,
        multi: rooting == Rooting::Multi,
        weights: weights.map(|w| w.as_mut_slice()),
        laplacian: laplacian.as_mut_slice(),
    });
}

struct ExpLaplacian<'a> {
    n: usize,
    scores: &'a [f64],
    shift: &'a [f64],
    multi: bool,
    weights: Option<&'a mut [f64]>,
    laplacian: &'a mut [f64],
}

impl WithSimd for ExpLaplacian<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let ExpLaplacian {
            n,
            scores,
            shift,
            multi,
            mut weights,
            laplacian,
        } = self;
        let n1 = n + 1;
        // Column sums, in the order of `laplacian`: the root weight first
        // (multi-root), then the word rows in increasing order.
        let mut sums = vec![0.0; n];
        let mut scratch = vec![0.0; if weights.is_some() { 0 } else { n }];
        for h in 0..=n {
            let row = match weights.as_deref_mut() {
                Some(w) => {
                    w[h * n1] = 0.0;
                    &mut w[h * n1 + 1..(h + 1) * n1]
                }
                None => &mut scratch[..],
            };
            exp_row(
                simd,
                &scores[h * n1 + 1..(h + 1) * n1],
                Some(&shift[1..]),
                row,
            );
            if h == 0 {
                if multi {
                    sums.copy_from_slice(row);
                } else {
                    laplacian[..n].copy_from_slice(row);
                }
                continue;
            }
            row[h - 1] = 0.0;
            if h == 1 && !multi {
                // Row 0 of the single-root Laplacian holds the root weights.
                sums.iter_mut().zip(&*row).for_each(|(s, &w)| *s += w);
            } else {
                let out = &mut laplacian[(h - 1) * n..h * n];
                for ((o, s), &w) in out.iter_mut().zip(sums.iter_mut()).zip(&*row) {
                    *o = -w;
                    *s += w;
                }
            }
        }
        let first = usize::from(!multi);
        for (m, &s) in sums.iter().enumerate().skip(first) {
            laplacian[m * n + m] = s;
        }
    }
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

    /// Seeded scores: `−∞` for a fifth of the arcs, otherwise spread over
    /// `[−800, 300]` so that some weights underflow and some lanes leave the
    /// vector range.
    fn scores(n: usize, seed: u64) -> Matrix<f64> {
        let mut u = matrix(n + 1, n + 1, seed);
        for (k, x) in u.as_mut_slice().iter_mut().enumerate() {
            *x = match k % 5 {
                0 => f64::NEG_INFINITY,
                1 => 1100.0 * *x - 500.0,
                _ => 4.0 * *x,
            };
        }
        u
    }

    /// The fused pass against its definition, the row-by-row
    /// `exp_differences` and `laplacian`: the same roundings in the same
    /// order, so bit for bit, for every `n` up to 21 (every vector
    /// remainder) and both rootings, with and without the weights.
    /// `l` against the Laplacian's definition, column by column (the root
    /// weight first multi-root, then `h = 1, 2, …`), bit for bit.
    fn assert_definition(w: &Matrix<f64>, rooting: Rooting, l: &Matrix<f64>) {
        let n = w.rows() - 1;
        for m in 1..=n {
            let mut d = match rooting {
                Rooting::Multi => w[(0, m)],
                Rooting::Single => 0.0,
            };
            for h in (1..=n).filter(|&h| h != m) {
                d += w[(h, m)];
                // Single-root, row `0` holds the root weights.
                if rooting == Rooting::Multi || h > 1 {
                    assert_eq!(l[(h - 1, m - 1)].to_bits(), (-w[(h, m)]).to_bits());
                }
            }
            if rooting == Rooting::Multi || m > 1 {
                assert_eq!(l[(m - 1, m - 1)].to_bits(), d.to_bits(), "{n} {rooting:?}");
            }
            if rooting == Rooting::Single {
                assert_eq!(l[(0, m - 1)], w[(0, m)]);
            }
        }
    }

    /// The definition, bit for bit, on weights whose diagonal and column
    /// `0` are not zero (a self-loop is no arc and is ignored), for every
    /// `n` up to 19, under the dispatched instruction set.
    #[test]
    fn laplacian_is_its_definition() {
        for n in 1..=19 {
            let w = matrix(n + 1, n + 1, 5 + n as u64).map(|x| x.abs());
            for rooting in Rooting::ALL {
                assert_definition(&w, rooting, &laplacian(&w, rooting));
            }
        }
    }

    /// The `f64` body under every instruction set (scalar, 4 and 8 lanes),
    /// bit for bit the definition: every strip width, the block moved
    /// back over columns already summed, several strips (`n` up to 70),
    /// the scalar path below one vector.
    #[test]
    fn laplacian_rows_are_the_definition_at_every_width() {
        for n in (1..=40).chain([63, 64, 65, 70]) {
            let w = matrix(n + 1, n + 1, 17 + n as u64).map(|x| x.abs());
            for rooting in Rooting::ALL {
                let op = Narrow(LaplacianRows {
                    weights: w.as_slice(),
                    n,
                    rooting,
                });
                // Spares of NaN: every entry is written (`Spare`).
                crate::matrix::poison_spares(5000);
                for rows in crate::testing::by_lanes(op) {
                    assert_definition(&w, rooting, &Matrix::from_row_major(n, n, rows));
                }
            }
        }
    }

    #[test]
    fn exp_laplacian_is_exp_differences_then_laplacian() {
        use crate::linalg::exp_differences;
        for n in 0..=21 {
            let s = scores(n, 3 + n as u64);
            let mut shift: Vec<f64> = matrix(1, n + 1, 11).as_slice().to_vec();
            shift.iter_mut().for_each(|c| *c *= 3.0);
            let mut w = Matrix::zeros(n + 1, n + 1);
            for h in 0..=n {
                let mut row = s.row(h).to_vec();
                row[0] = f64::NEG_INFINITY;
                row[h] = f64::NEG_INFINITY;
                let mut out = vec![0.0; n + 1];
                exp_differences(&row, &shift, &mut out);
                for m in 1..=n {
                    w[(h, m)] = out[m];
                }
            }
            for rooting in Rooting::ALL {
                let expected = laplacian(&w, rooting);
                let bits =
                    |m: &Matrix<f64>| m.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let mut l = Matrix::from_fn(n, n, |_, _| f64::NAN);
                let mut got_w = Matrix::from_fn(n + 1, n + 1, |_, _| f64::NAN);
                exp_laplacian(&s, &shift, rooting, Some(&mut got_w), &mut l);
                assert_eq!(bits(&l), bits(&expected), "n = {n}, {rooting:?}");
                assert_eq!(bits(&got_w), bits(&w), "n = {n}, {rooting:?}");
                let mut l = Matrix::from_fn(n, n, |_, _| f64::NAN);
                exp_laplacian(&s, &shift, rooting, None, &mut l);
                assert_eq!(bits(&l), bits(&expected), "n = {n}, {rooting:?}");
            }
        }
    }
}
