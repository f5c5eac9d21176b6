//! A row-major LU with partial pivoting for small matrices, where faer's
//! blocked machinery costs more than it saves (see the crate docs for the
//! measured crossover): a blocked right-looking `getrf` whose updates all go
//! through one SIMD kernel ([`crate::kernel`]), and an inverse from the
//! factors, `A⁻¹ = U⁻¹ L⁻¹ P`, in `≈ 4n³/3` flops.

use pulp::Arch;
use spantree_core::Matrix;

use crate::kernel::{add_rows, arch, sub_rows, Rows};

/// Columns per panel. A trailing row is updated by `BLOCK` pivot rows at
/// once, its registers loaded and stored once per panel.
const BLOCK: usize = 8;

/// `P A = L U`, LAPACK-style: `L` unit lower triangular strictly below the
/// diagonal of `lu`, `U` on and above it; step `k` swapped rows `k` and
/// `swaps[k] ≥ k`. A zero pivot is recorded and its elimination step
/// skipped (its column below the diagonal is already zero, so its
/// multipliers are zero), so the factors stay valid for singular matrices.
#[derive(Clone, Debug)]
pub(crate) struct PlainLu {
    n: usize,
    lu: Vec<f64>,
    swaps: Vec<usize>,
    arch: Arch,
}

impl PlainLu {
    /// Factorises the row-major `n × n` matrix `a`; `2n³/3` flops.
    ///
    /// Panels of [`BLOCK`] columns: the panel is eliminated column by
    /// column (pivot search, full-row swap, multipliers, update of the
    /// panel's own columns), then the panel's rows of `U` right of it
    /// (`L₁₁⁻¹ A₁₂`) and the trailing rows (`A₂₂ − L₂₁ U₁₂`) get one kernel
    /// call per row. The same arithmetic as the column-by-column `getf2`,
    /// summed in another order.
    pub(crate) fn new(n: usize, mut lu: Vec<f64>) -> Self {
        debug_assert_eq!(lu.len(), n * n);
        let arch = arch();
        let mut swaps = Vec::with_capacity(n);
        let mut k0 = 0;
        while k0 < n {
            let k1 = (k0 + BLOCK).min(n);
            for k in k0..k1 {
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
                let pivot_row = &top[k * n + k + 1..k * n + k1];
                for row in bottom.chunks_exact_mut(n) {
                    let l = row[k] / pivot;
                    row[k] = l;
                    if l != 0.0 {
                        for (x, u) in row[k + 1..k1].iter_mut().zip(pivot_row) {
                            *x -= l * u;
                        }
                    }
                }
            }
            if k1 < n {
                // U₁₂ = L₁₁⁻¹ A₁₂, row by row (L₁₁ unit lower triangular).
                for k in k0 + 1..k1 {
                    let (top, rest) = lu.split_at_mut(k * n);
                    let (left, right) = rest[..n].split_at_mut(k1);
                    let src = Rows {
                        rows: &top[k0 * n..],
                        stride: n,
                        offset: k1,
                    };
                    sub_rows(arch, right, &left[k0..k], src);
                }
                // A₂₂ −= L₂₁ U₁₂.
                let (top, bottom) = lu.split_at_mut(k1 * n);
                let src = Rows {
                    rows: &top[k0 * n..],
                    stride: n,
                    offset: k1,
                };
                for row in bottom.chunks_exact_mut(n) {
                    let (left, right) = row.split_at_mut(k1);
                    sub_rows(arch, right, &left[k0..k1], src);
                }
            }
            k0 = k1;
        }
        PlainLu { n, lu, swaps, arch }
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

    fn row(&self, i: usize) -> &[f64] {
        &self.lu[i * self.n..(i + 1) * self.n]
    }

    /// Solves `A X = B` in place (`B` row-major `n × k`); `A` must be
    /// nonsingular. `2n²k` flops.
    pub(crate) fn solve(&self, rhs: &mut Matrix<f64>) {
        let k = rhs.cols();
        let b = rhs.as_mut_slice();
        for (i, &p) in self.swaps.iter().enumerate() {
            swap_rows(b, k, i, p);
        }
        self.forward_unit_lower(b, k);
        self.backward_upper(b, k);
    }

    /// `L y = b` in place, `b` row-major with `k` columns.
    fn forward_unit_lower(&self, b: &mut [f64], k: usize) {
        for i in 1..self.n {
            let (done, rest) = b.split_at_mut(i * k);
            let src = Rows {
                rows: done,
                stride: k,
                offset: 0,
            };
            sub_rows(self.arch, &mut rest[..k], &self.row(i)[..i], src);
        }
    }

    /// `U x = y` in place, `y` row-major with `k` columns.
    fn backward_upper(&self, b: &mut [f64], k: usize) {
        let n = self.n;
        for i in (0..n).rev() {
            let (head, done) = b.split_at_mut((i + 1) * k);
            let row = &mut head[i * k..];
            let src = Rows {
                rows: done,
                stride: k,
                offset: 0,
            };
            sub_rows(self.arch, row, &self.row(i)[i + 1..], src);
            let d = self.lu[i * n + i];
            row.iter_mut().for_each(|x| *x /= d);
        }
    }

    /// Solves `Aᵀ X = B` in place; `A` must be nonsingular. With `A = Pᵀ L U`,
    /// `Aᵀ = Uᵀ Lᵀ P`: forward with `Uᵀ`, backward with `Lᵀ`, then `Pᵀ`.
    /// The coefficients (columns of `U` and `L`) are gathered into a buffer
    /// once per row. `2n²k` flops.
    pub(crate) fn solve_transpose(&self, rhs: &mut Matrix<f64>) {
        let n = self.n;
        let k = rhs.cols();
        let b = rhs.as_mut_slice();
        let mut column = Vec::with_capacity(n);
        for i in 0..n {
            let (done, rest) = b.split_at_mut(i * k);
            let row = &mut rest[..k];
            column.clear();
            column.extend((0..i).map(|j| self.lu[j * n + i]));
            let src = Rows {
                rows: done,
                stride: k,
                offset: 0,
            };
            sub_rows(self.arch, row, &column, src);
            let d = self.lu[i * n + i];
            row.iter_mut().for_each(|x| *x /= d);
        }
        for i in (0..n).rev() {
            let (head, done) = b.split_at_mut((i + 1) * k);
            let row = &mut head[i * k..];
            column.clear();
            column.extend((i + 1..n).map(|j| self.lu[j * n + i]));
            let src = Rows {
                rows: done,
                stride: k,
                offset: 0,
            };
            sub_rows(self.arch, row, &column, src);
        }
        for (i, &p) in self.swaps.iter().enumerate().rev() {
            swap_rows(b, k, i, p);
        }
    }

    /// `A⁻¹ = U⁻¹ L⁻¹ P`; `A` must be nonsingular. `L⁻¹` by forward
    /// substitution on `I`, row `i` only over its nonzero columns `0..i`
    /// (`≈ n³/3` flops), then `U⁻¹ L⁻¹` by backward substitution (`n³`),
    /// then the column swaps of `P` in reverse order.
    pub(crate) fn inverse(&self) -> Matrix<f64> {
        let n = self.n;
        let mut x = Matrix::identity(n);
        let b = x.as_mut_slice();
        for i in 1..n {
            let (done, rest) = b.split_at_mut(i * n);
            let src = Rows {
                rows: done,
                stride: n,
                offset: 0,
            };
            sub_rows(self.arch, &mut rest[..i], &self.row(i)[..i], src);
        }
        self.backward_upper(b, n);
        for (k, &p) in self.swaps.iter().enumerate().rev() {
            if p != k {
                for row in b.chunks_exact_mut(n) {
                    row.swap(k, p);
                }
            }
        }
        x
    }

    /// `B X` for row-major `B` (`r × n`) and `X` (`n × c`): each row of the
    /// product is one kernel call over the rows of `X`. `2rnc` flops.
    pub(crate) fn matmul(&self, b: &Matrix<f64>, x: &Matrix<f64>) -> Matrix<f64> {
        let c = x.cols();
        let mut out = Matrix::zeros(b.rows(), c);
        let src = Rows {
            rows: x.as_slice(),
            stride: c,
            offset: 0,
        };
        for (row, coefs) in out
            .as_mut_slice()
            .chunks_exact_mut(c.max(1))
            .zip(b.as_slice().chunks_exact(b.cols().max(1)))
        {
            add_rows(self.arch, row, coefs, src);
        }
        out
    }
}

fn swap_rows(b: &mut [f64], k: usize, i: usize, p: usize) {
    if i != p {
        let (top, bottom) = b.split_at_mut(p * k);
        top[i * k..(i + 1) * k].swap_with_slice(&mut bottom[..k]);
    }
}
