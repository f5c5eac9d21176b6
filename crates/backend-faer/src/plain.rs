//! A row-major LU with partial pivoting for small matrices, where faer's
//! blocked machinery costs more than it saves (see the crate docs for the
//! measured crossover): a blocked right-looking `getrf` whose updates all go
//! through one SIMD kernel ([`crate::kernel`]), and an inverse from the
//! factors, `A⁻¹ = U⁻¹ L⁻¹ P`, in `≈ 4n³/3` flops. Rows are stored padded
//! with zeros to a multiple of [`PAD`] columns, so that the updates of the
//! factorisation and of the inverse are whole SIMD vectors.

use pulp::{Arch, Simd, WithSimd};
use spantree_core::Matrix;

use crate::kernel::{arch, update, update_rows, Rows, PAD, ROWS};

/// Columns per panel. A trailing row is updated by `BLOCK` pivot rows at
/// once, its registers loaded and stored once per panel.
const BLOCK: usize = 8;

/// The largest `n` that [`PlainLu::new`] factorises unblocked
/// ([`factorise_unblocked`]): up to it the blocked factorisation's fixed costs (the
/// panel's column-major copy, the row swaps outside the panel, one kernel
/// call per row with masked tails) outweigh its register blocking.
/// Measured (the `lu` phase of `cargo run --release -p spantree-bench
/// --example kernels -- phases N`, a non-LTO build, AVX2, minimum of 300
/// groups, µs, on a loaded machine; callgrind instructions per call):
/// `n = 10` 0.74–0.77 against 0.81–0.85 (6.0k against 10.7k
/// instructions), `n = 12` 0.92 against 0.96–1.01, `n = 14` even
/// (1.30–1.33 against 1.28–1.31), `n = 16` slower (1.49 against 1.28,
/// though 10.2k against 16.8k instructions: the scalar pivot search and
/// divisions sit on the critical path), `n = 24` 3.38 against 2.38.
const UNBLOCKED_UP_TO: usize = 12;
const _: () = assert!(SCRATCH >= UNBLOCKED_UP_TO);

/// The row stride of the scratch in which [`factorise_unblocked`] factorises an
/// unpadded matrix (`n < 16`, whose rows are not whole vectors): a multiple
/// of every vector width, at least [`UNBLOCKED_UP_TO`].
const SCRATCH: usize = 16;

/// `P A = L U`, LAPACK-style: `L` unit lower triangular strictly below the
/// diagonal of `lu`, `U` on and above it; step `k` swapped rows `k` and
/// `swaps[k] ≥ k`. A zero pivot is recorded and its elimination step
/// skipped (its column below the diagonal is already zero, so its
/// multipliers are zero), so the factors stay valid for singular matrices.
#[derive(Clone, Debug)]
pub(crate) struct PlainLu {
    n: usize,
    /// The row stride of `lu`: `n` rounded up to a multiple of [`PAD`].
    stride: usize,
    /// `n × stride`, the padding columns zero.
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
    /// call per row. The same arithmetic as the column-by-column `getf2`
    /// (with fused multiply-adds), summed in another order.
    pub(crate) fn new(n: usize, a: &[f64]) -> Self {
        debug_assert_eq!(a.len(), n * n);
        let stride = stride(n);
        let mut lu = vec![0.0; n * stride];
        if n > 0 {
            for (dst, src) in lu.chunks_exact_mut(stride).zip(a.chunks_exact(n)) {
                dst[..n].copy_from_slice(src);
            }
        }
        let arch = arch();
        let mut swaps = Vec::with_capacity(n);
        arch.dispatch(Factorise {
            n,
            stride,
            lu: &mut lu,
            swaps: &mut swaps,
            unblocked: n <= UNBLOCKED_UP_TO,
        });
        PlainLu {
            n,
            stride,
            lu,
            swaps,
            arch,
        }
    }

    /// The diagonal of `U`.
    pub(crate) fn pivots(&self) -> Vec<f64> {
        (0..self.n).map(|i| self.lu[i * self.stride + i]).collect()
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
        &self.lu[i * self.stride..i * self.stride + self.n]
    }

    /// `u_ii`, and `1 / u_ii` where it is normal (see [`scale`]).
    fn diagonal(&self, i: usize) -> (f64, Option<f64>) {
        let d = self.lu[i * self.stride + i];
        (d, reciprocal(d))
    }

    /// Solves `A X = B` in place (`B` row-major `n × k`); `A` must be
    /// nonsingular. `2n²k` flops.
    pub(crate) fn solve(&self, rhs: &mut Matrix<f64>) {
        let k = rhs.cols();
        self.run(Task::Solve {
            b: rhs.as_mut_slice(),
            k,
        });
    }

    /// Solves `Aᵀ X = B` in place; `A` must be nonsingular. With `A = Pᵀ L U`,
    /// `Aᵀ = Uᵀ Lᵀ P`: forward with `Uᵀ`, backward with `Lᵀ`, then `Pᵀ`.
    /// The coefficients (columns of `U` and `L`) are gathered into a buffer
    /// once per row. `2n²k` flops.
    pub(crate) fn solve_transpose(&self, rhs: &mut Matrix<f64>) {
        let k = rhs.cols();
        self.run(Task::SolveTranspose {
            b: rhs.as_mut_slice(),
            k,
        });
    }

    /// `A⁻¹ = U⁻¹ L⁻¹ P`; `A` must be nonsingular. `L⁻¹` by forward
    /// substitution on `I`, row `i` only over its nonzero columns `0..i`
    /// rounded up to whole vectors (`≈ n³/3` flops), then `U⁻¹ L⁻¹` by
    /// backward substitution (`n³`), then the column swaps of `P` in
    /// reverse order. Computed in rows padded like the factors (whole
    /// vectors), and compacted in place at the end.
    pub(crate) fn inverse(&self) -> Matrix<f64> {
        // `I` from a zeroed buffer (a memset) rather than element by element
        // through `Matrix::identity`, which cost a quarter of the inverse at
        // `n = 36`.
        let (n, stride) = (self.n, self.stride);
        let mut x = vec![0.0; n * stride];
        x.iter_mut().step_by(stride + 1).for_each(|d| *d = 1.0);
        self.run(Task::Inverse { x: &mut x });
        for i in 1..n {
            x.copy_within(i * stride..i * stride + n, i * n);
        }
        x.truncate(n * n);
        Matrix::from_row_major(n, n, x)
    }

    /// `B X` for row-major `B` (`r × n`) and `X` (`n × c`): each row of the
    /// product is one kernel call over the rows of `X`. `2rnc` flops.
    pub(crate) fn matmul(&self, b: &Matrix<f64>, x: &Matrix<f64>) -> Matrix<f64> {
        let mut out = Matrix::zeros(b.rows(), x.cols());
        self.run(Task::Product {
            out: out.as_mut_slice(),
            b: b.as_slice(),
            inner: b.cols(),
            x: x.as_slice(),
            cols: x.cols(),
        });
        out
    }

    /// One dispatch per operation: the kernel is inlined into the whole
    /// loop for the detected instruction set.
    fn run(&self, task: Task<'_>) {
        self.arch.dispatch(Run { lu: self, task });
    }

    /// `L y = b` in place, `b` row-major with `k` columns. Rows of whole
    /// [`PAD`] blocks go [`ROWS`] at a time: first the rows before the
    /// block (independent updates, through the multi-row kernel), then the
    /// block's own earlier rows; every element sees its terms in ascending
    /// order either way, as in row-by-row substitution, so the same bits.
    #[inline(always)]
    fn forward_unit_lower<S: Simd>(&self, simd: S, b: &mut [f64], k: usize) {
        let n = self.n;
        if k % PAD != 0 {
            for i in 1..n {
                let (done, rest) = b.split_at_mut(i * k);
                update(simd, &mut rest[..k], &self.row(i)[..i], rows(done, k), true);
            }
            return;
        }
        let mut start = 0;
        while start < n {
            let end = (start + ROWS).min(n);
            let (done, rest) = b.split_at_mut(start * k);
            let items = rest[..(end - start) * k]
                .chunks_exact_mut(k)
                .zip(start..end)
                .map(|(row, i)| (row, &self.row(i)[..start]));
            update_rows(simd, items, rows(done, k), true);
            for i in start + 1..end {
                let (done, rest) = b.split_at_mut(i * k);
                let src = rows(&done[start * k..], k);
                update(simd, &mut rest[..k], &self.row(i)[start..i], src, true);
            }
            start = end;
        }
    }

    /// `U x = y` in place, `y` row-major with `k` columns. Rows of whole
    /// [`PAD`] blocks go [`ROWS`] at a time: the rows after the block
    /// through the multi-row kernel, then the block's own later rows, then
    /// the division by the pivot. (Row `i` then sums its terms in the order
    /// `end..n`, then `i + 1..end`: another order than row-by-row
    /// substitution, the same on every instruction set.)
    #[inline(always)]
    fn backward_upper<S: Simd>(&self, simd: S, b: &mut [f64], k: usize) {
        if k % PAD != 0 {
            for i in (0..self.n).rev() {
                let (head, done) = b.split_at_mut((i + 1) * k);
                let row = &mut head[i * k..];
                update(simd, row, &self.row(i)[i + 1..], rows(done, k), true);
                scale(row, self.diagonal(i));
            }
            return;
        }
        let mut end = self.n;
        while end > 0 {
            let start = end.saturating_sub(ROWS);
            let (head, done) = b.split_at_mut(end * k);
            let items = head[start * k..]
                .chunks_exact_mut(k)
                .zip(start..end)
                .map(|(row, i)| (row, &self.row(i)[end..]));
            update_rows(simd, items, rows(done, k), true);
            for i in (start..end).rev() {
                let (head, done) = b.split_at_mut((i + 1) * k);
                let row = &mut head[i * k..];
                let src = rows(&done[..(end - i - 1) * k], k);
                update(simd, row, &self.row(i)[i + 1..end], src, true);
                scale(row, self.diagonal(i));
            }
            end = start;
        }
    }

    /// `Aᵀ X = B` in place (see [`PlainLu::solve_transpose`]). Right-hand
    /// sides of whole [`PAD`] blocks go [`ROWS`] rows at a time, as
    /// [`PlainLu::forward_unit_lower`] and [`PlainLu::backward_upper`] do,
    /// with the coefficients (columns of `U` and `L`) of the block's rows
    /// gathered once per block; others row by row.
    #[inline(always)]
    fn solve_transpose_with<S: Simd>(&self, simd: S, b: &mut [f64], k: usize) {
        if k % PAD == 0 {
            self.solve_transpose_blocked(simd, b, k);
            return;
        }
        let (n, stride) = (self.n, self.stride);
        let mut column = Vec::with_capacity(n);
        for i in 0..n {
            let (done, rest) = b.split_at_mut(i * k);
            let row = &mut rest[..k];
            column.clear();
            column.extend((0..i).map(|j| self.lu[j * stride + i]));
            update(simd, row, &column, rows(done, k), true);
            scale(row, self.diagonal(i));
        }
        for i in (0..n).rev() {
            let (head, done) = b.split_at_mut((i + 1) * k);
            let row = &mut head[i * k..];
            column.clear();
            column.extend((i + 1..n).map(|j| self.lu[j * stride + i]));
            update(simd, row, &column, rows(done, k), true);
        }
        for (i, &p) in self.swaps.iter().enumerate().rev() {
            swap_rows(b, k, i, p);
        }
    }

    /// The blocked [`PlainLu::solve_transpose_with`] (`k` a multiple of
    /// [`PAD`]). Forward with `Uᵀ`: the rows of a block take the terms of
    /// the rows before it through the multi-row kernel, then those of the
    /// block's own earlier rows, then the division by the pivot: every
    /// element sees its terms in ascending order, as row by row, so the
    /// same bits. Backward with `Lᵀ`: the rows after the block first, then
    /// the block's own later rows (another order than row by row, as in
    /// [`PlainLu::backward_upper`]). Then `Pᵀ`. `2n²k` flops.
    #[inline(always)]
    fn solve_transpose_blocked<S: Simd>(&self, simd: S, b: &mut [f64], k: usize) {
        let (n, stride) = (self.n, self.stride);
        // Row `q` of the block: the column of `U` (or `L`) of its row,
        // all `n` entries, gathered once.
        let mut columns = vec![0.0; ROWS * n];
        let gather = |columns: &mut [f64], start: usize, end: usize| {
            for (column, i) in columns.chunks_exact_mut(n.max(1)).zip(start..end) {
                for (c, j) in column.iter_mut().zip(0..n) {
                    *c = self.lu[j * stride + i];
                }
            }
        };
        let mut start = 0;
        while start < n {
            let end = (start + ROWS).min(n);
            gather(&mut columns, start, end);
            let (done, rest) = b.split_at_mut(start * k);
            let items = rest[..(end - start) * k]
                .chunks_exact_mut(k)
                .zip(columns.chunks_exact(n))
                .map(|(row, column)| (row, &column[..start]));
            update_rows(simd, items, rows(done, k), true);
            for (i, column) in (start..end).zip(columns.chunks_exact(n)) {
                let (done, rest) = b.split_at_mut(i * k);
                let row = &mut rest[..k];
                let src = rows(&done[start * k..], k);
                update(simd, row, &column[start..i], src, true);
                scale(row, self.diagonal(i));
            }
            start = end;
        }
        let mut end = n;
        while end > 0 {
            let start = end.saturating_sub(ROWS);
            gather(&mut columns, start, end);
            let (head, done) = b.split_at_mut(end * k);
            let items = head[start * k..]
                .chunks_exact_mut(k)
                .zip(columns.chunks_exact(n))
                .map(|(row, column)| (row, &column[end..]));
            update_rows(simd, items, rows(done, k), true);
            for (i, column) in (start..end).zip(columns.chunks_exact(n)).rev() {
                let (head, done) = b.split_at_mut((i + 1) * k);
                let row = &mut head[i * k..];
                let src = rows(&done[..(end - i - 1) * k], k);
                update(simd, row, &column[i + 1..end], src, true);
            }
            end = start;
        }
        for (i, &p) in self.swaps.iter().enumerate().rev() {
            swap_rows(b, k, i, p);
        }
    }

    #[inline(always)]
    fn inverse_with<S: Simd>(&self, simd: S, x: &mut [f64]) {
        let (n, stride) = (self.n, self.stride);
        if stride % PAD != 0 {
            // Small and unpadded: row by row (fewer, longer kernel calls).
            for i in 1..n {
                let (done, rest) = x.split_at_mut(i * stride);
                update(
                    simd,
                    &mut rest[..i],
                    &self.row(i)[..i],
                    rows(done, stride),
                    true,
                );
            }
            self.backward_upper(simd, x, stride);
            self.swap_columns(x);
            return;
        }
        // `L⁻¹`, forward, [`ROWS`] rows at a time: first the rows before the
        // block (independent updates, through the multi-row kernel), then
        // the block's own earlier rows; every element sees its terms in
        // ascending order, as in row-by-row forward substitution. Row `i`
        // of `L⁻¹` is zero right of column `i`, and so are the earlier rows
        // it is updated with: up to the next multiple of `PAD` columns it
        // stays `0 − Σ l · 0 = 0` (and `1` at `i`).
        let mut b = 1;
        while b < n {
            let e = (b + ROWS).min(n);
            let (done, rest) = x.split_at_mut(b * stride);
            let width = b.next_multiple_of(PAD).min(stride);
            let items = rest[..(e - b) * stride]
                .chunks_exact_mut(stride)
                .zip(b..e)
                .map(|(row, i)| (&mut row[..width], &self.row(i)[..b]));
            update_rows(simd, items, rows(done, stride), true);
            for i in b + 1..e {
                let (done, rest) = x.split_at_mut(i * stride);
                let width = i.next_multiple_of(PAD).min(stride);
                let src = rows(&done[b * stride..], stride);
                update(simd, &mut rest[..width], &self.row(i)[b..i], src, true);
            }
            b = e;
        }
        // `U⁻¹ L⁻¹`, backward (whole padded rows).
        self.backward_upper(simd, x, stride);
        self.swap_columns(x);
    }

    /// `X ← X P`: the column swaps of `P` in reverse order.
    fn swap_columns(&self, x: &mut [f64]) {
        for (k, &p) in self.swaps.iter().enumerate().rev() {
            if p != k {
                for row in x.chunks_exact_mut(self.stride) {
                    row.swap(k, p);
                }
            }
        }
    }
}

/// Row `r` of a row-major buffer with `k` columns, from column 0.
fn rows(rows: &[f64], stride: usize) -> Rows<'_> {
    Rows {
        rows,
        stride,
        offset: 0,
    }
}

/// An operation on the factors, run under one dispatch.
enum Task<'a> {
    Solve {
        b: &'a mut [f64],
        k: usize,
    },
    SolveTranspose {
        b: &'a mut [f64],
        k: usize,
    },
    Inverse {
        x: &'a mut [f64],
    },
    Product {
        out: &'a mut [f64],
        b: &'a [f64],
        inner: usize,
        x: &'a [f64],
        cols: usize,
    },
}

struct Run<'a> {
    lu: &'a PlainLu,
    task: Task<'a>,
}

impl WithSimd for Run<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let lu = self.lu;
        match self.task {
            Task::Solve { b, k } => {
                for (i, &p) in lu.swaps.iter().enumerate() {
                    swap_rows(b, k, i, p);
                }
                lu.forward_unit_lower(simd, b, k);
                lu.backward_upper(simd, b, k);
            }
            Task::SolveTranspose { b, k } => lu.solve_transpose_with(simd, b, k),
            Task::Inverse { x } => lu.inverse_with(simd, x),
            Task::Product {
                out,
                b,
                inner,
                x,
                cols,
            } => {
                if cols == 0 || inner == 0 {
                    return;
                }
                let items = out.chunks_exact_mut(cols).zip(b.chunks_exact(inner));
                update_rows(simd, items, rows(x, cols), false);
            }
        }
    }
}

/// The row stride of the factors of an `n × n` matrix: `n` rounded up to
/// a multiple of [`PAD`], so that the updates are whole vectors, from
/// `n = SMALL` on; below, padding costs more than the masked tails it
/// saves (`n = 10` would be padded by 60%).
fn stride(n: usize) -> usize {
    const SMALL: usize = 16;
    if n < SMALL {
        n
    } else {
        n.next_multiple_of(PAD)
    }
}

/// `1 / d` where it is finite and `d` is normal, for [`scale`].
fn reciprocal(d: f64) -> Option<f64> {
    (d.abs() >= f64::MIN_POSITIVE && d.is_finite()).then(|| 1.0 / d)
}

/// `row ← row / d`, correctly rounded, without a division per entry
/// (`vdivpd` has a fraction of the throughput of `vfmadd`): with
/// `r = 1 / d` rounded, `q = x r`, the residual `e = x − q d` (exact, one
/// fused multiply-add) and `q + e r` rounded is `x / d` correctly rounded
/// (Markstein's theorem: `r` within half an ulp of `1 / d`, `q` within one
/// of `x / d`; Muller et al., *Handbook of Floating-Point Arithmetic*, on
/// FMA-based division), so the same bits as a division wherever the
/// quotient is a normal number, on every instruction set (tested against
/// `/` below).
/// (`x · r` alone rounds twice, and cost 2.7 bits in an entry of the GE
/// gradient of `crates/core/tests/honest.rs`, below its bar.) A pivot whose
/// reciprocal is not a normal number is divided by. `O(len)`.
fn scale(row: &mut [f64], (d, r): (f64, Option<f64>)) {
    match r {
        Some(r) => row.iter_mut().for_each(|x| {
            let q = *x * r;
            let e = (-q).mul_add(d, *x);
            *x = e.mul_add(r, q);
        }),
        None => row.iter_mut().for_each(|x| *x /= d),
    }
}

fn swap_rows(b: &mut [f64], k: usize, i: usize, p: usize) {
    if i != p {
        let (top, bottom) = b.split_at_mut(p * k);
        top[i * k..(i + 1) * k].swap_with_slice(&mut bottom[..k]);
    }
}

/// The factorisation of [`PlainLu::new`]: blocked, or with `unblocked`
/// [`factorise_unblocked`].
struct Factorise<'a> {
    n: usize,
    stride: usize,
    lu: &'a mut [f64],
    swaps: &'a mut Vec<usize>,
    unblocked: bool,
}

impl WithSimd for Factorise<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Factorise {
            n,
            stride,
            lu,
            swaps,
            unblocked,
        } = self;
        if unblocked {
            factorise_unblocked(simd, n, stride, lu, swaps);
            return;
        }
        let mut panel = vec![0.0; n * BLOCK];
        let mut k0 = 0;
        // Every panel boundary `k1 < n` is a multiple of `BLOCK = PAD`, so
        // the updated columns `k1..stride` are whole vectors.
        while k0 < n {
            let k1 = (k0 + BLOCK).min(n);
            factorise_panel(simd, n, stride, lu, swaps, &mut panel, (k0, k1));
            if k1 < n {
                // U₁₂ = L₁₁⁻¹ A₁₂, row by row (L₁₁ unit lower triangular).
                for k in k0 + 1..k1 {
                    let (top, rest) = lu.split_at_mut(k * stride);
                    let (left, right) = rest[..stride].split_at_mut(k1);
                    let src = Rows {
                        rows: &top[k0 * stride..],
                        stride,
                        offset: k1,
                    };
                    update(simd, right, &left[k0..k], src, true);
                }
                // A₂₂ −= L₂₁ U₁₂.
                let (top, bottom) = lu.split_at_mut(k1 * stride);
                let src = Rows {
                    rows: &top[k0 * stride..],
                    stride,
                    offset: k1,
                };
                let items = bottom.chunks_exact_mut(stride).map(|row| {
                    let (left, right) = row.split_at_mut(k1);
                    let left: &[f64] = left;
                    (right, &left[k0..k1])
                });
                update_rows(simd, items, src, true);
            }
            k0 = k1;
        }
    }
}

/// The unblocked factorisation of small matrices, `getf2` itself row by
/// row: for each column, the pivot search, the full-row swap, and for each
/// row below the multiplier `l = a / pivot` and the update
/// `a ← fma(−l, u, a)` of the row right of the column in whole vectors, the
/// first one masked so that the columns up to the pivot's keep their
/// values; rows with `l = 0` are skipped, as `getf2` skips them. Every
/// entry sees the same operations in the same order as in `getf2`, so the
/// same bits (and the same as the blocked factorisation's). Rows that are not whole
/// vectors (`n < 16`, unpadded) are factorised in a [`SCRATCH`]-strided
/// copy on the stack and copied back. `2n³/3` flops.
#[inline(always)]
fn factorise_unblocked<S: Simd>(
    simd: S,
    n: usize,
    stride: usize,
    lu: &mut [f64],
    swaps: &mut Vec<usize>,
) {
    if stride % S::F64_LANES == 0 {
        getf2_rows(simd, n, stride, lu, swaps);
        return;
    }
    debug_assert!(n <= SCRATCH);
    let mut scratch = [0.0; SCRATCH * SCRATCH];
    for (dst, src) in scratch
        .chunks_exact_mut(SCRATCH)
        .zip(lu.chunks_exact(stride))
    {
        dst[..n].copy_from_slice(&src[..n]);
    }
    getf2_rows(simd, n, SCRATCH, &mut scratch, swaps);
    for (dst, src) in lu
        .chunks_exact_mut(stride)
        .zip(scratch.chunks_exact(SCRATCH))
    {
        dst[..n].copy_from_slice(&src[..n]);
    }
}

/// `0, 1, 2, …`: the lane indices of a vector (up to 8 lanes).
const LANES: [f64; 8] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];

/// [`factorise_unblocked`] on rows of `stride` columns, a multiple of the vector
/// width, zero beyond column `n`. `2n³/3` flops.
#[inline(always)]
fn getf2_rows<S: Simd>(simd: S, n: usize, stride: usize, a: &mut [f64], swaps: &mut Vec<usize>) {
    let lanes = S::F64_LANES;
    debug_assert!(stride % lanes == 0 && a.len() >= n * stride);
    let width = n.next_multiple_of(lanes);
    let (lane, _) = S::as_simd_f64s(&LANES[..lanes]);
    let lane = lane[0];
    for k in 0..n {
        // The first entry of largest magnitude, as `getf2`'s scan.
        let mut p = k;
        let mut max = a[k * stride + k].abs();
        for i in k + 1..n {
            let x = a[i * stride + k].abs();
            if x > max {
                (p, max) = (i, x);
            }
        }
        swaps.push(p);
        if p != k {
            let (top, bottom) = a.split_at_mut(p * stride);
            top[k * stride..k * stride + width].swap_with_slice(&mut bottom[..width]);
        }
        let pivot = a[k * stride + k];
        if pivot == 0.0 || k + 1 == n {
            continue;
        }
        // Whole vectors from the one holding column `k + 1`; in it, only
        // the lanes right of column `k` take the update.
        let first = (k + 1) / lanes * lanes;
        let right = simd.greater_than_f64s(lane, simd.splat_f64s(k as f64 - first as f64));
        let (top, rest) = a.split_at_mut((k + 1) * stride);
        let (u, _) = S::as_simd_f64s(&top[k * stride + first..k * stride + width]);
        for row in rest.chunks_exact_mut(stride).take(n - k - 1) {
            let l = row[k] / pivot;
            row[k] = l;
            if l == 0.0 {
                continue;
            }
            let minus_l = simd.splat_f64s(-l);
            let (x, _) = S::as_mut_simd_f64s(&mut row[first..width]);
            let t = simd.mul_add_f64s(minus_l, u[0], x[0]);
            x[0] = simd.select_f64s(right, t, x[0]);
            for (x, &u) in x[1..].iter_mut().zip(&u[1..]) {
                *x = simd.mul_add_f64s(minus_l, u, *x);
            }
        }
    }
}

/// Eliminates the panel of columns `k0..k1` (rows `k0..n`) column by
/// column, as `getf2` does: pivot search, row swap, multipliers
/// `l = a / pivot`, and the update `a −= l · u` of the panel's later
/// columns (`a ← fma(−l, u, a)`), skipped where `l = 0`. The panel is copied into `scratch`
/// column-major first, so that every step runs down contiguous columns
/// (vectorised divisions and updates rather than one short row at a time),
/// and copied back; the panel's row swaps are then applied to the columns
/// outside it, which the elimination does not read. The same operations in
/// the same order per entry as the row-major loop, so the same bits.
/// The index of the first entry of largest magnitude (`0` if there is
/// none larger than `0`): a vector max, then a search for it, rather than
/// one scalar loop carrying an index. The same choice as `getf2`'s
/// `|a_ik| > max` scan unless the column holds a NaN (the factors are NaN
/// then either way). `O(len)`.
#[inline(always)]
fn first_largest<S: Simd>(simd: S, col: &[f64]) -> usize {
    let (head, tail) = S::as_simd_f64s(col);
    let mut m = simd.splat_f64s(0.0);
    for &v in head {
        m = simd.max_f64s(m, simd.abs_f64s(v));
    }
    let mut max = simd.reduce_max_f64s(m);
    for x in tail {
        max = if x.abs() > max { x.abs() } else { max };
    }
    col.iter().position(|x| x.abs() == max).unwrap_or(0)
}

#[inline(always)]
fn factorise_panel<S: Simd>(
    simd: S,
    n: usize,
    stride: usize,
    lu: &mut [f64],
    swaps: &mut Vec<usize>,
    scratch: &mut [f64],
    (k0, k1): (usize, usize),
) {
    let (m, w) = (n - k0, k1 - k0);
    let buf = &mut scratch[..m * w];
    // Column `k0 + c` from row `k0` on is every `stride`-th entry from there.
    for (c, col) in buf.chunks_exact_mut(m).enumerate() {
        let src = lu[k0 * stride + k0 + c..].iter().step_by(stride);
        col.iter_mut().zip(src).for_each(|(x, &v)| *x = v);
    }
    for kk in 0..w {
        let (done, rest) = buf.split_at_mut((kk + 1) * m);
        let col = &mut done[kk * m..];
        let p = kk + first_largest(simd, &col[kk..]);
        swaps.push(k0 + p);
        if p != kk {
            col.swap(kk, p);
            for other in rest.chunks_exact_mut(m) {
                other.swap(kk, p);
            }
            for other in done[..kk * m].chunks_exact_mut(m) {
                other.swap(kk, p);
            }
        }
        let col = &mut done[kk * m..];
        let pivot = col[kk];
        if pivot == 0.0 {
            continue;
        }
        let l = &mut col[kk + 1..];
        l.iter_mut().for_each(|x| *x /= pivot);
        for other in rest.chunks_exact_mut(m) {
            let u = other[kk];
            for (x, &l) in other[kk + 1..].iter_mut().zip(&*l) {
                let t = (-l).mul_add(u, *x);
                *x = if l != 0.0 { t } else { *x };
            }
        }
    }
    for (c, col) in buf.chunks_exact(m).enumerate() {
        let dst = lu[k0 * stride + k0 + c..].iter_mut().step_by(stride);
        dst.zip(col).for_each(|(x, &v)| *x = v);
    }
    for (k, &p) in (k0..k1).zip(&swaps[k0..k1]) {
        if p != k {
            let (top, bottom) = lu.split_at_mut(p * stride);
            let (a, b) = (
                &mut top[k * stride..(k + 1) * stride],
                &mut bottom[..stride],
            );
            a[..k0].swap_with_slice(&mut b[..k0]);
            a[k1..].swap_with_slice(&mut b[k1..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook unblocked `getf2`, row-major, one column at a time,
    /// updates by fused multiply-adds: the definition the blocked
    /// factorisation must reproduce.
    fn getf2(n: usize, mut a: Vec<f64>) -> (Vec<f64>, Vec<usize>) {
        let mut swaps = Vec::new();
        for k in 0..n {
            let mut p = k;
            for i in k + 1..n {
                if a[i * n + k].abs() > a[p * n + k].abs() {
                    p = i;
                }
            }
            swaps.push(p);
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
            let pivot = a[k * n + k];
            if pivot == 0.0 {
                continue;
            }
            for i in k + 1..n {
                let l = a[i * n + k] / pivot;
                a[i * n + k] = l;
                if l != 0.0 {
                    for j in k + 1..n {
                        a[i * n + j] = (-l).mul_add(a[k * n + j], a[i * n + j]);
                    }
                }
            }
        }
        (a, swaps)
    }

    /// The division by reciprocal and one fused correction is the
    /// division, bit for bit (the oracle is `/`): pivots and entries over
    /// the whole normal range, random mantissas, and the pivots whose
    /// reciprocal is not normal (divided by directly).
    #[test]
    fn scale_is_division() {
        let mut s = 0xd1_u64.wrapping_add(0x5eed);
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut value = |exp: i32| {
            let mantissa = 1.0 + (next() >> 12) as f64 / (1u64 << 52) as f64;
            let sign = if next() & 1 == 0 { 1.0 } else { -1.0 };
            sign * mantissa * 2f64.powi(exp)
        };
        for round in 0..20_000 {
            let e = round % 41 - 20;
            let d = match round % 97 {
                0 => f64::MIN_POSITIVE / 3.0,
                1 => f64::MAX / 1.5,
                _ => value(e * 25),
            };
            let row: Vec<f64> = (0..13).map(|k: i32| value((k - 6) * 40 + e)).collect();
            let mut got = row.clone();
            scale(&mut got, (d, reciprocal(d)));
            for (g, x) in got.iter().zip(&row) {
                assert_eq!(g.to_bits(), (x / d).to_bits(), "{x:e} / {d:e}");
            }
        }
    }

    /// Every size 0..=70 (every panel boundary and vector remainder), dense
    /// and with a third of the entries zero (zero multipliers, skipped
    /// updates), with ties and an exactly singular column: the blocked,
    /// column-major-panel factorisation and the unblocked one of small
    /// matrices give `getf2`'s factors and swaps bit for bit, on the
    /// detected instruction set and on the scalar one.
    #[test]
    fn blocked_factors_are_getf2_bit_for_bit() {
        let mut s = 0x5eed_u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in 0..=70 {
            for kind in 0..3 {
                let a: Vec<f64> = (0..n * n)
                    .map(|k| match kind {
                        0 => 2.0 * next() - 1.0,
                        1 if next() < 0.35 => 0.0,
                        // Small integers: ties in the pivot search.
                        2 if k % n == n / 2 => 0.0,
                        2 => (4.0 * next()).floor() - 2.0,
                        _ => 2.0 * next() - 1.0,
                    })
                    .collect();
                let (expected, expected_swaps) = getf2(n, a.clone());
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                // Unpadded rows (masked tails) and the padded rows of
                // `PlainLu`, blocked and unblocked (unpadded: only up to
                // its scratch).
                for (arch, stride, unblocked) in [arch(), Arch::Scalar]
                    .into_iter()
                    .flat_map(|a| [(a, n), (a, n.next_multiple_of(PAD))])
                    .flat_map(|(a, s)| [(a, s, false), (a, s, true)])
                    .filter(|&(_, s, unblocked)| !unblocked || s % PAD == 0 || n <= SCRATCH)
                {
                    let mut lu = vec![0.0; n * stride];
                    for (i, row) in a.chunks_exact(n.max(1)).enumerate() {
                        lu[i * stride..i * stride + n].copy_from_slice(row);
                    }
                    let mut swaps = Vec::new();
                    arch.dispatch(Factorise {
                        n,
                        stride,
                        lu: &mut lu,
                        swaps: &mut swaps,
                        unblocked,
                    });
                    let got: Vec<f64> = (0..n * n).map(|k| lu[k / n * stride + k % n]).collect();
                    let what = format!("n = {n}, kind {kind}, stride {stride}, {unblocked}");
                    assert_eq!(bits(&got), bits(&expected), "{what}");
                    assert_eq!(swaps, expected_swaps, "{what}");
                    let padding = (0..n * stride).filter(|k| k % stride >= n);
                    assert!(padding.map(|k| lu[k]).all(|x| x == 0.0), "{what}");
                }
            }
        }
    }
}
