//! A straightforward LU with partial pivoting on a row-major buffer: the
//! engine for small matrices, where faer's blocked machinery costs more
//! than it saves (see the crate docs for the measured crossover).

use spantree_core::Matrix;

/// `P A = L U`, LAPACK-style (`getf2`): `L` unit lower triangular strictly
/// below the diagonal of `lu`, `U` on and above it; step `k` swapped rows `k`
/// and `swaps[k] ≥ k`. A zero pivot is recorded and its elimination step
/// skipped (its column below the diagonal is already zero), so the factors
/// stay valid for singular matrices.
#[derive(Clone, Debug)]
pub(crate) struct PlainLu {
    n: usize,
    lu: Vec<f64>,
    swaps: Vec<usize>,
}

impl PlainLu {
    /// Factorises the row-major `n × n` matrix `a`; `2n³/3` flops.
    pub(crate) fn new(n: usize, mut lu: Vec<f64>) -> Self {
        debug_assert_eq!(lu.len(), n * n);
        let mut swaps = Vec::with_capacity(n);
        for k in 0..n {
            let mut p = k;
            let mut max = lu[k * n + k].abs();
            for i in k + 1..n {
                let v = lu[i * n + k].abs();
                if v > max {
                    max = v;
                    p = i;
                }
            }
            swaps.push(p);
            if p != k {
                for j in 0..n {
                    lu.swap(k * n + j, p * n + j);
                }
            }
            let pivot = lu[k * n + k];
            if pivot == 0.0 {
                continue;
            }
            let (top, bottom) = lu.split_at_mut((k + 1) * n);
            let pivot_row = &top[k * n + k + 1..(k + 1) * n];
            for row in bottom.chunks_exact_mut(n) {
                let l = row[k] / pivot;
                row[k] = l;
                // Laplacians are often sparse: skip the update for zero multipliers.
                if l != 0.0 {
                    for (x, u) in row[k + 1..].iter_mut().zip(pivot_row) {
                        *x -= l * u;
                    }
                }
            }
        }
        PlainLu { n, lu, swaps }
    }

    /// The diagonal of `U`.
    pub(crate) fn pivots(&self) -> Vec<f64> {
        (0..self.n).map(|i| self.lu[i * self.n + i]).collect()
    }

    /// Whether `P` is an odd permutation.
    pub(crate) fn odd(&self) -> bool {
        self.swaps
            .iter()
            .enumerate()
            .filter(|&(k, &p)| p != k)
            .count()
            % 2
            == 1
    }

    fn l(&self, i: usize, j: usize) -> f64 {
        self.lu[i * self.n + j]
    }

    /// Solves `A X = B` in place (`B` row-major `n × k`); `A` must be nonsingular.
    pub(crate) fn solve(&self, rhs: &mut Matrix<f64>) {
        let n = self.n;
        let k = rhs.cols();
        let b = rhs.as_mut_slice();
        for (i, &p) in self.swaps.iter().enumerate() {
            swap_rows(b, k, i, p);
        }
        // L y = P b, forward.
        for i in 1..n {
            let (done, rest) = b.split_at_mut(i * k);
            let row = &mut rest[..k];
            for j in 0..i {
                axpy(row, -self.l(i, j), &done[j * k..(j + 1) * k]);
            }
        }
        // U x = y, backward.
        for i in (0..n).rev() {
            let (head, done) = b.split_at_mut((i + 1) * k);
            let row = &mut head[i * k..];
            for j in i + 1..n {
                axpy(row, -self.l(i, j), &done[(j - i - 1) * k..(j - i) * k]);
            }
            let d = self.l(i, i);
            row.iter_mut().for_each(|x| *x /= d);
        }
    }

    /// Solves `Aᵀ X = B` in place; `A` must be nonsingular. With `A = Pᵀ L U`,
    /// `Aᵀ = Uᵀ Lᵀ P`: forward with `Uᵀ`, backward with `Lᵀ`, then `Pᵀ`.
    pub(crate) fn solve_transpose(&self, rhs: &mut Matrix<f64>) {
        let n = self.n;
        let k = rhs.cols();
        let b = rhs.as_mut_slice();
        for i in 0..n {
            let (done, rest) = b.split_at_mut(i * k);
            let row = &mut rest[..k];
            for j in 0..i {
                axpy(row, -self.l(j, i), &done[j * k..(j + 1) * k]);
            }
            let d = self.l(i, i);
            row.iter_mut().for_each(|x| *x /= d);
        }
        for i in (0..n).rev() {
            let (head, done) = b.split_at_mut((i + 1) * k);
            let row = &mut head[i * k..];
            for j in i + 1..n {
                axpy(row, -self.l(j, i), &done[(j - i - 1) * k..(j - i) * k]);
            }
        }
        for (i, &p) in self.swaps.iter().enumerate().rev() {
            swap_rows(b, k, i, p);
        }
    }
}

/// `y += a · x`, skipping `a = 0` (sparse factors).
fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    if a != 0.0 {
        for (y, x) in y.iter_mut().zip(x) {
            *y += a * x;
        }
    }
}

fn swap_rows(b: &mut [f64], k: usize, i: usize, p: usize) {
    if i != p {
        for j in 0..k {
            b.swap(i * k + j, p * k + j);
        }
    }
}
