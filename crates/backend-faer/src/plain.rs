//! A row-major LU with partial pivoting for small matrices, where faer's
//! blocked machinery costs more than it saves (see the crate docs for the
//! measured crossover): a blocked right-looking `getrf` whose updates all go
//! through one SIMD kernel ([`crate::kernel`]), and an inverse from the
//! factors, `A⁻¹ = U⁻¹ L⁻¹ P`, in `≈ 4n³/3` flops. Rows are stored padded
//! with zeros to a multiple of [`PAD`] columns, so that the updates of the
//! factorisation and of the inverse are whole SIMD vectors.

use pulp::{Arch, Simd, WithSimd};
use spantree_core::matrix::Scratch;
use spantree_core::Matrix;

use crate::kernel::{arch, update, update_rows, Rows, PAD, ROWS};

/// Columns per panel. A trailing row is updated by `BLOCK` pivot rows at
/// once, its registers loaded and stored once per panel.
const BLOCK: usize = 8;

/// The largest `n` that [`PlainLu::new`] factorises unblocked
/// ([`factorise_unblocked`]): up to it the blocked factorisation's fixed costs (the
/// panel's column-major copy, the row swaps outside the panel, one kernel
/// call per row) outweigh its register blocking.
/// Measured (the `lu` phase of `cargo run --release -p spantree-bench
/// --example kernels -- phases N`, AVX-512, median of 300 groups, µs,
/// unblocked against blocked, two runs each on a loaded machine):
/// `n = 16` 0.52 against 0.81, `20` 0.97 against 1.17, `24` 1.22 against
/// 1.45–1.51, `28` 2.07–2.10 against 2.03–2.08 (even), `32` 2.13 against
/// 2.33, `36` 3.30–3.53 against 3.16–3.21 (five vectors a row: blocked
/// wins from here). (Before the multiplier's store was moved after the
/// row's vector update, a vector load waiting on that store made the
/// unblocked loop the slower one from `n = 14` on.)
const UNBLOCKED_UP_TO: usize = 32;

/// The row stride of the scratch in which [`factorise_unblocked`] factorises an
/// unpadded matrix (`n < 16`, whose rows are not whole vectors): a multiple
/// of every vector width, at least `16` (padded rows from there on).
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
    /// `n × stride`, the padding columns zero, then the `n` pivots `u_ii`
    /// (the diagonal, contiguous for [`PlainLu::pivots`]), then the `n`
    /// swaps `swaps[k]` (integers below `n`, exact in `f64`): one
    /// allocation for the three.
    lu: Vec<f64>,
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
        // Row by row with its padding, rather than a zeroed buffer and a
        // copy: every entry written once. The pivots and swaps after them.
        let mut lu = Vec::with_capacity(n * stride + 2 * n);
        if stride == n {
            // Unpadded (`n < 16` or whole vectors): one copy.
            lu.extend_from_slice(a);
        } else {
            for row in a.chunks_exact(n.max(1)) {
                lu.extend_from_slice(row);
                lu.resize(lu.len() + stride - n, 0.0);
            }
        }
        lu.resize(n * stride + 2 * n, 0.0);
        let (factors, tail) = lu.split_at_mut(n * stride);
        let (pivots, swaps) = tail.split_at_mut(n);
        let arch = arch();
        arch.dispatch(Factorise {
            n,
            stride,
            lu: factors,
            swaps,
            unblocked: n <= UNBLOCKED_UP_TO,
        });
        for (i, p) in pivots.iter_mut().enumerate() {
            *p = factors[i * stride + i];
        }
        PlainLu {
            n,
            stride,
            lu,
            arch,
        }
    }

    /// The diagonal of `U`, kept after the factors.
    pub(crate) fn pivots(&self) -> &[f64] {
        &self.lu[self.n * self.stride..self.n * (self.stride + 1)]
    }

    /// The row swaps `swaps[k] ≥ k` of step `k`, in order.
    fn swaps(&self) -> impl DoubleEndedIterator<Item = usize> + ExactSizeIterator + '_ {
        let at = self.n * (self.stride + 1);
        self.lu[at..].iter().map(|&p| p as usize)
    }

    /// Whether `P` is an odd permutation.
    pub(crate) fn odd(&self) -> bool {
        self.swaps().enumerate().filter(|&(k, p)| p != k).count() % 2 == 1
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
        // Unpadded rows are already in place.
        if stride != n {
            for i in 1..n {
                x.copy_within(i * stride..i * stride + n, i * n);
            }
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
            transposed: false,
        });
        out
    }

    /// `(B X)ᵀ` for row-major `B` (`r × n`) and `X` (`n × c`), written
    /// transposed (`c × r`) as it is formed: [`ROWS`] rows of `B X` at a
    /// time through the kernel of [`PlainLu::matmul`] into a scratch of
    /// `ROWS · c` (one allocation), then stored as `ROWS` adjacent entries of each row of the
    /// result. The same sums as [`PlainLu::matmul`], bit for bit, with no
    /// transpose after it. `2rnc` flops.
    pub(crate) fn matmul_transposed(&self, b: &Matrix<f64>, x: &Matrix<f64>) -> Matrix<f64> {
        let (r, cols) = (b.rows(), x.cols());
        let mut out = vec![0.0; r * cols];
        self.run(Task::Product {
            out: &mut out,
            b: b.as_slice(),
            inner: b.cols(),
            x: x.as_slice(),
            cols,
            transposed: true,
        });
        Matrix::from_row_major(cols, r, out)
    }

    /// `B X` for square `B` and `X` (`n × n`, `n` the rows of `B`), or
    /// `(B X)ᵀ` (`transposed`), in place of `B`: up to [`SMALL_PRODUCT`]
    /// rows entry by entry ([`small_in_place`]), else [`ROWS`] rows of `B X` at
    /// a time through the kernel of [`PlainLu::matmul`] into a scratch,
    /// copied back over the rows of `B` they were formed from (no other
    /// row reads them), then transposed in place. The same sums as
    /// [`PlainLu::matmul`] bit for bit, with no result allocated. Returns
    /// `false`, leaving `B` as it was, when the shapes are not square and
    /// equal. `2n³` flops.
    pub(crate) fn matmul_in_place(
        &self,
        b: &mut Matrix<f64>,
        x: &Matrix<f64>,
        transposed: bool,
    ) -> bool {
        let n = b.rows();
        if b.cols() != n || x.rows() != n || x.cols() != n {
            return false;
        }
        if n <= SMALL_PRODUCT {
            // Its own dispatch: [`Run`]'s body (the solves, the inverse)
            // stays as it was compiled without it.
            self.arch.dispatch(SmallInPlace {
                b: b.as_mut_slice(),
                x: x.as_slice(),
                n,
            });
        } else {
            self.run(Task::InPlace {
                b: b.as_mut_slice(),
                x: x.as_slice(),
                n,
            });
        }
        if transposed {
            let b = b.as_mut_slice();
            for i in 0..n {
                for j in i + 1..n {
                    b.swap(i * n + j, j * n + i);
                }
            }
        }
        true
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
        for (i, p) in self.swaps().enumerate().rev() {
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
        for (i, p) in self.swaps().enumerate().rev() {
            swap_rows(b, k, i, p);
        }
    }

    #[inline(always)]
    fn inverse_with<S: Simd>(&self, simd: S, x: &mut [f64]) {
        let (n, stride) = (self.n, self.stride);
        if stride % S::F64_LANES == 0 {
            self.inverse_blocks(simd, x);
            return;
        }
        // Small and unpadded rows that are not whole vectors: row by row
        // (fewer, longer kernel calls).
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
    }

    /// [`PlainLu::inverse`] on padded rows of whole vectors, [`ROWS`] rows
    /// at a time held in registers from the first term to the last: per
    /// block and per pass over at most a register tile of columns
    /// ([`block`]), the terms of the rows outside the block, then the
    /// block's own triangle, then (backward) the division by the pivots.
    /// Every entry sees the same operations in the same order as the row
    /// by row [`update`] path (forward ascending; backward the rows after
    /// the block, then the block's own later rows), except that rows whose
    /// coefficients are all zero are not skipped (`x + 0 · s = x`, up to
    /// the sign of a zero). `≈ 4n³/3` flops.
    #[inline(always)]
    fn inverse_blocks<S: Simd>(&self, simd: S, x: &mut [f64]) {
        let (n, stride) = (self.n, self.stride);
        let lanes = S::F64_LANES;
        let (xv, _) = S::as_mut_simd_f64s(x);
        let geometry = Geometry {
            lu: &self.lu[..n * stride],
            stride,
            vectors: stride / lanes,
            n,
        };
        // `R · V` accumulators, `R` broadcast coefficients and a source
        // vector: 4 · 6 + 4 + 1 of AVX-512's 32 registers, 4 · 2 + 4 + 1 of
        // AVX2's 16.
        let max = if lanes >= 8 { 6 } else { 2 };
        // `L⁻¹`, forward: row `i` of `L⁻¹` is zero right of column `i`, so
        // the rows `b..e` need the columns up to `e` only (rounded up to
        // whole vectors; the others stay zero).
        let mut b = 0;
        while b < n {
            let e = (b + ROWS).min(n);
            let width = e.next_multiple_of(PAD).min(stride) / lanes;
            passes(simd, xv, geometry, (b, e), width, max, &[]);
            b = e;
        }
        // `U⁻¹ L⁻¹`, backward, whole rows.
        let mut diagonal = [(0.0, None); ROWS];
        let mut end = n;
        while end > 0 {
            let start = end.saturating_sub(ROWS);
            for (d, i) in diagonal.iter_mut().zip(start..end) {
                *d = self.diagonal(i);
            }
            let width = geometry.vectors;
            passes(
                simd,
                xv,
                geometry,
                (start, end),
                width,
                max,
                &diagonal[..end - start],
            );
            end = start;
        }
        self.swap_columns(x);
    }

    /// `X ← X P`: the column swaps of `P` in reverse order.
    fn swap_columns(&self, x: &mut [f64]) {
        for (k, p) in self.swaps().enumerate().rev() {
            if p != k {
                for row in x.chunks_exact_mut(self.stride) {
                    row.swap(k, p);
                }
            }
        }
    }
}

/// The factors and the layout of the inverse's rows, for [`block`].
#[derive(Clone, Copy)]
struct Geometry<'a> {
    /// The factors, `n × stride`.
    lu: &'a [f64],
    stride: usize,
    /// Vectors per row of the inverse (`stride / lanes`).
    vectors: usize,
    /// Rows of the inverse.
    n: usize,
}

/// Rows `b..e` of the inverse over their first `width` vectors, in
/// passes of at most `max` vectors (as even as possible), each one
/// [`block`]: forward (`L⁻¹`) when `diagonal` is empty, else backward
/// with the pivots of the rows.
#[inline(always)]
fn passes<S: Simd>(
    simd: S,
    x: &mut [S::f64s],
    g: Geometry<'_>,
    rows: (usize, usize),
    width: usize,
    max: usize,
    diagonal: &[(f64, Option<f64>)],
) {
    if width == 0 {
        return;
    }
    let count = width.div_ceil(max);
    let mut start = 0;
    for pass in 0..count {
        let v = if pass + 1 == count {
            width - start
        } else {
            (width - start) / (count - pass)
        };
        match v {
            1 => rows_of::<S, 1>(simd, x, g, rows, start, diagonal),
            2 => rows_of::<S, 2>(simd, x, g, rows, start, diagonal),
            3 => rows_of::<S, 3>(simd, x, g, rows, start, diagonal),
            4 => rows_of::<S, 4>(simd, x, g, rows, start, diagonal),
            5 => rows_of::<S, 5>(simd, x, g, rows, start, diagonal),
            _ => rows_of::<S, 6>(simd, x, g, rows, start, diagonal),
        }
        start += v;
    }
}

/// [`block`] for the number of rows `e − b` (`1..=ROWS`).
#[inline(always)]
fn rows_of<S: Simd, const V: usize>(
    simd: S,
    x: &mut [S::f64s],
    g: Geometry<'_>,
    (b, e): (usize, usize),
    start: usize,
    diagonal: &[(f64, Option<f64>)],
) {
    match e - b {
        1 => block::<S, 1, V>(simd, x, g, b, start, diagonal),
        2 => block::<S, 2, V>(simd, x, g, b, start, diagonal),
        3 => block::<S, 3, V>(simd, x, g, b, start, diagonal),
        _ => block::<S, 4, V>(simd, x, g, b, start, diagonal),
    }
}

/// Rows `b..b + R` of the inverse, vectors `start..start + V`, in `R · V`
/// registers. Forward (`diagonal` empty): `x_i −= Σ_{r < b} l_ir x_r`,
/// then the block's triangle `x_i −= Σ_{b ≤ r < i} l_ir x_r`, ascending.
/// Backward: `x_i −= Σ_{r ≥ b + R} u_ir x_r`, then from the block's last
/// row up, `x_i −= Σ_{i < r < b + R} u_ir x_r` and `x_i ← x_i / u_ii`
/// ([`scale`]'s correctly rounded division). Every term one fused
/// multiply-add; `2 R V · lanes` flops per source row.
#[inline(always)]
fn block<S: Simd, const R: usize, const V: usize>(
    simd: S,
    x: &mut [S::f64s],
    g: Geometry<'_>,
    b: usize,
    start: usize,
    diagonal: &[(f64, Option<f64>)],
) {
    let backward = !diagonal.is_empty();
    let n = g.n;
    let at = |i: usize| i * g.vectors + start;
    let mut acc = [[simd.splat_f64s(0.0); V]; R];
    for (q, acc) in acc.iter_mut().enumerate() {
        let d: &[S::f64s; V] = x[at(b + q)..at(b + q) + V].try_into().expect("V vectors");
        *acc = *d;
    }
    // The coefficients of row `b + q`: `lu[(b + q) · stride ..]`.
    let sources = if backward { b + R..n } else { 0..b };
    let mut coefs = [&g.lu[..0]; R];
    for (q, c) in coefs.iter_mut().enumerate() {
        let row = (b + q) * g.stride;
        *c = &g.lu[row + sources.start..row + sources.end];
    }
    const { assert!(R <= ROWS && ROWS == 4) };
    let zero = simd.splat_f64s(0.0);
    for (k, r) in sources.enumerate() {
        let s: &[S::f64s; V] = x[at(r)..at(r) + V].try_into().expect("V vectors");
        let mut c = [zero; R];
        for q in 0..R {
            c[q] = simd.splat_f64s(-coefs[q][k]);
        }
        for v in 0..V {
            for q in 0..R {
                acc[q][v] = simd.mul_add_f64s(c[q], s[v], acc[q][v]);
            }
        }
    }
    // The block's own triangle, written out row by row (`R ≤ ROWS = 4`):
    // every index a constant, so that the rows stay in registers (as loops
    // over `q` and `p`, the array went to memory and every step waited on
    // a store: a quarter of the inverse at `n = 36` in `perf record` of the
    // `inverse` phase of `cargo run --release -p spantree-bench --example
    // kernels -- phases 36`).
    let tri = |q: usize, p: usize| g.lu[(b + q) * g.stride + b + p];
    if backward {
        divide_row(simd, &mut acc, R - 1, diagonal[R - 1]);
        if R >= 2 {
            fnma_row(simd, &mut acc, R - 2, R - 1, tri(R - 2, R - 1));
            divide_row(simd, &mut acc, R - 2, diagonal[R - 2]);
        }
        if R >= 3 {
            fnma_row(simd, &mut acc, R - 3, R - 2, tri(R - 3, R - 2));
            fnma_row(simd, &mut acc, R - 3, R - 1, tri(R - 3, R - 1));
            divide_row(simd, &mut acc, R - 3, diagonal[R - 3]);
        }
        if R >= 4 {
            fnma_row(simd, &mut acc, R - 4, R - 3, tri(R - 4, R - 3));
            fnma_row(simd, &mut acc, R - 4, R - 2, tri(R - 4, R - 2));
            fnma_row(simd, &mut acc, R - 4, R - 1, tri(R - 4, R - 1));
            divide_row(simd, &mut acc, R - 4, diagonal[R - 4]);
        }
    } else {
        if R >= 2 {
            fnma_row(simd, &mut acc, 1, 0, tri(1, 0));
        }
        if R >= 3 {
            fnma_row(simd, &mut acc, 2, 0, tri(2, 0));
            fnma_row(simd, &mut acc, 2, 1, tri(2, 1));
        }
        if R >= 4 {
            fnma_row(simd, &mut acc, 3, 0, tri(3, 0));
            fnma_row(simd, &mut acc, 3, 1, tri(3, 1));
            fnma_row(simd, &mut acc, 3, 2, tri(3, 2));
        }
    }
    for (q, acc) in acc.iter().enumerate() {
        let d: &mut [S::f64s; V] = (&mut x[at(b + q)..at(b + q) + V])
            .try_into()
            .expect("V vectors");
        *d = *acc;
    }
}

/// `acc[q] ← acc[q] − c · acc[p]`, one fused multiply-add per vector.
#[inline(always)]
fn fnma_row<S: Simd, const R: usize, const V: usize>(
    simd: S,
    acc: &mut [[S::f64s; V]; R],
    q: usize,
    p: usize,
    c: f64,
) {
    let c = simd.splat_f64s(-c);
    let src = acc[p];
    for (x, &s) in acc[q].iter_mut().zip(&src) {
        *x = simd.mul_add_f64s(c, s, *x);
    }
}

/// `acc[q] ← acc[q] / d`, correctly rounded: [`scale`] on vectors.
#[inline(always)]
fn divide_row<S: Simd, const R: usize, const V: usize>(
    simd: S,
    acc: &mut [[S::f64s; V]; R],
    q: usize,
    (d, r): (f64, Option<f64>),
) {
    match r {
        Some(r) => {
            let (minus_d, r) = (simd.splat_f64s(-d), simd.splat_f64s(r));
            for y in acc[q].iter_mut() {
                let t = simd.mul_f64s(*y, r);
                let e = simd.mul_add_f64s(t, minus_d, *y);
                *y = simd.mul_add_f64s(e, r, t);
            }
        }
        None => {
            let d = simd.splat_f64s(d);
            for y in acc[q].iter_mut() {
                *y = simd.div_f64s(*y, d);
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
    /// `B X` in place of `B`, both `n × n` ([`PlainLu::matmul_in_place`]).
    InPlace {
        b: &'a mut [f64],
        x: &'a [f64],
        n: usize,
    },
    /// `B X`, stored row by row, or `(B X)ᵀ` (`transposed`).
    Product {
        out: &'a mut [f64],
        b: &'a [f64],
        inner: usize,
        x: &'a [f64],
        cols: usize,
        transposed: bool,
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
                for (i, p) in lu.swaps().enumerate() {
                    swap_rows(b, k, i, p);
                }
                lu.forward_unit_lower(simd, b, k);
                lu.backward_upper(simd, b, k);
            }
            Task::SolveTranspose { b, k } => lu.solve_transpose_with(simd, b, k),
            Task::Inverse { x } => lu.inverse_with(simd, x),
            Task::InPlace { b, x, n } => {
                if n == 0 {
                    return;
                }
                // As `Product`'s groups, `X` padded once if its rows are
                // not whole vectors.
                let mut buf = Scratch::take();
                let (xs, padded, scratch) = padded_with_scratch::<S>(x, n, &mut buf);
                for group in b.chunks_mut(ROWS * n) {
                    let scratch = &mut scratch[..group.len() / n * padded];
                    scratch.fill(0.0);
                    let items = scratch.chunks_exact_mut(padded).zip(group.chunks_exact(n));
                    update_rows(simd, items, rows(xs, padded), false);
                    for (o, y) in group.chunks_exact_mut(n).zip(scratch.chunks_exact(padded)) {
                        o.copy_from_slice(&y[..n]);
                    }
                }
            }
            Task::Product {
                out,
                b,
                inner,
                x,
                cols,
                transposed,
            } => {
                if cols == 0 || inner == 0 {
                    return;
                }
                let whole = cols % S::F64_LANES == 0;
                if whole && !transposed {
                    let items = out.chunks_exact_mut(cols).zip(b.chunks_exact(inner));
                    update_rows(simd, items, rows(x, cols), false);
                    return;
                }
                // `ROWS` rows of `B X` at a time in a scratch through the
                // multi-row tiles, `X` padded with zeros to whole vectors
                // once if its rows are not (no masked tails; the same sums
                // per entry as row by row), then stored as rows of the
                // result or, transposed, as its columns.
                let mut buf = Scratch::take();
                let (xs, padded, scratch) = padded_with_scratch::<S>(x, cols, &mut buf);
                product_groups(simd, out, b, inner, (xs, cols, padded), transposed, scratch);
            }
        }
    }
}

/// Up to this many rows, [`Task::InPlace`] forms `B X` entry by entry in
/// scalar fused multiply-adds ([`small_in_place`]) rather than through the
/// multi-row tiles, whose set-up (the scratch, `X` padded to whole vectors,
/// the groups and their copies back) costs more than the `n³` products
/// at these sizes (below [`PAD`], where AVX-512 pads every row). Measured,
/// `op_loop grad_entropy N REPS 0 accurate` (the sandwich of every
/// product): callgrind instructions per call (AVX2) `n = 2` 15.8k → 14.9k,
/// `4` 17.6k → 16.8k, `5` 24.6k → 23.1k, `6` 28.4k → 26.7k, `7` 32.4k →
/// 30.7k (`10`, `20`, `36` within 0.04%: its own dispatch,
/// [`SmallInPlace`], leaves [`Run`] as it was; inlined into `Run`, the
/// larger sizes lost 0.2–0.5%); task-clock (AVX-512, 200,000 calls,
/// medians of 3) `n = 3` −7.4%, `7` −6.3%.
const SMALL_PRODUCT: usize = 7;

/// [`PlainLu::matmul_in_place`] up to [`SMALL_PRODUCT`] rows
/// ([`small_in_place`] for the size `n`), under one instruction-set
/// dispatch.
struct SmallInPlace<'a> {
    b: &'a mut [f64],
    x: &'a [f64],
    n: usize,
}

impl WithSimd for SmallInPlace<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let (b, x) = (self.b, self.x);
        match self.n {
            0 => {}
            1 => small_in_place::<1>(b, x),
            2 => small_in_place::<2>(b, x),
            3 => small_in_place::<3>(b, x),
            4 => small_in_place::<4>(b, x),
            5 => small_in_place::<5>(b, x),
            6 => small_in_place::<6>(b, x),
            _ => small_in_place::<SMALL_PRODUCT>(b, x),
        }
    }
}

/// `B X` in place of `B` (both `N × N`, `N ≤ SMALL_PRODUCT`), entry by
/// entry, each `fma(b_il, x_lk, ·)` in the order of `l` from `+0`: the sums
/// of the kernel's tiles, lane by lane, bit for bit; a row of `B` whose
/// entries are all zero becomes `+0`, as the tiles skip it and leave their
/// zeroed scratch. Inlined into [`SmallInPlace`]'s dispatch (the fused
/// multiply-add of the instruction set), its loops unrolled for the size.
/// `O(N³)`.
#[inline(always)]
fn small_in_place<const N: usize>(b: &mut [f64], x: &[f64]) {
    let x = &x[..N * N];
    for row in b.chunks_exact_mut(N) {
        let mut coefs = [0.0; N];
        coefs.copy_from_slice(row);
        if coefs.iter().all(|&c| c == 0.0) {
            row.fill(0.0);
            continue;
        }
        for (k, y) in row.iter_mut().enumerate() {
            let mut acc = 0.0;
            for (l, c) in coefs.iter().enumerate() {
                acc = c.mul_add(x[l * N + k], acc);
            }
            *y = acc;
        }
    }
}

/// The rows of `B X` ([`Task::Product`]), [`ROWS`] at a time through the
/// multi-row tiles into `scratch` (`ROWS · padded`), `xs` the rows of `X`
/// (`cols` values padded with zeros to `padded`), stored as rows of `out`
/// or, `transposed`, as its columns.
#[inline(always)]
fn product_groups<S: Simd>(
    simd: S,
    out: &mut [f64],
    b: &[f64],
    inner: usize,
    (xs, cols, padded): (&[f64], usize, usize),
    transposed: bool,
    scratch: &mut [f64],
) {
    let r = b.len() / inner;
    for (g, group) in b.chunks(ROWS * inner).enumerate() {
        let scratch = &mut scratch[..group.len() / inner * padded];
        scratch.fill(0.0);
        let items = scratch
            .chunks_exact_mut(padded)
            .zip(group.chunks_exact(inner));
        update_rows(simd, items, rows(xs, padded), false);
        let at = g * ROWS;
        if !transposed {
            let out = out[at * cols..].chunks_exact_mut(cols);
            for (o, y) in out.zip(scratch.chunks_exact(padded)) {
                o.copy_from_slice(&y[..cols]);
            }
        } else if scratch.len() == ROWS * padded {
            // Row `at + t` of `B X` is column `at + t` of the
            // result: a whole group fills `ROWS` adjacent
            // entries of each of its rows.
            let (ab, cd) = scratch.split_at(2 * padded);
            let ((a, b), (c, d)) = (ab.split_at(padded), cd.split_at(padded));
            let columns = a.iter().zip(b).zip(c.iter().zip(d));
            for (o, ((a, b), (c, d))) in out.chunks_exact_mut(r).zip(columns) {
                o[at..at + ROWS].copy_from_slice(&[*a, *b, *c, *d]);
            }
        } else {
            for (t, y) in scratch.chunks_exact(padded).enumerate() {
                for (o, y) in out[at + t..].iter_mut().step_by(r).zip(&y[..cols]) {
                    *o = *y;
                }
            }
        }
    }
}

/// `X` (row-major, rows of `cols`) as rows of whole vectors for the
/// multi-row tiles, and a scratch of [`ROWS`] such rows after it, both in
/// `buf` (this thread's [`Scratch`]): `x` itself when its rows are whole
/// vectors, else padded with zeros ([`padded_rows`]). Returns `X`, its
/// padded width and the scratch. `O(|x|)`.
fn padded_with_scratch<'a, S: Simd>(
    x: &'a [f64],
    cols: usize,
    buf: &'a mut Vec<f64>,
) -> (&'a [f64], usize, &'a mut [f64]) {
    let whole = cols % S::F64_LANES == 0;
    let padded = if whole {
        cols
    } else {
        padded_rows(x, cols, buf)
    };
    let at = buf.len();
    buf.resize(at + ROWS * padded, 0.0);
    let (xs, scratch) = buf.split_at_mut(at);
    (if whole { x } else { xs }, padded, scratch)
}

/// The row-major `x` (rows of `cols`) with each row padded with zeros to
/// a multiple of [`PAD`] columns, appended to `xs`; returns that padded
/// width. `O(|x|)`.
fn padded_rows(x: &[f64], cols: usize, xs: &mut Vec<f64>) -> usize {
    let padded = cols.next_multiple_of(PAD);
    xs.reserve(x.len() / cols * padded + ROWS * padded);
    for row in x.chunks_exact(cols) {
        xs.extend_from_slice(row);
        xs.resize(xs.len() + padded - cols, 0.0);
    }
    padded
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

/// `row ← row / d` without a division per entry (`vdivpd` has a fraction
/// of the throughput of `vfmadd`): with `r = 1 / d` rounded, `q = x r`
/// rounded, the residual `e = x − q d` (one fused multiply-add) and
/// `q + e r` rounded. Markstein's theorem (Muller et al., *Handbook of
/// Floating-Point Arithmetic*, on FMA-based division) makes that `x / d`
/// correctly rounded when `q` is within one ulp of `x / d`, but
/// `RN(x · RN(1/d))` is not always (about 0.2% of significand pairs; then
/// `e` is rounded too). The whole scheme is checked instead: exhaustively
/// at precisions 3–16 in `tests/reciprocal_division.rs` (every quotient
/// correctly rounded), and at 53 bits against `/` by `scale_is_division`
/// below (random operands over the whole normal range, on every
/// instruction set): evidence, not a proof, that it gives the bits of a
/// division wherever the quotient is a normal number.
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
    /// `swaps[k]`, the row swapped with row `k` at step `k`.
    swaps: &'a mut [f64],
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
        // The panel's column-major copy in this thread's scratch (every
        // entry it reads written by `factorise_panel` first).
        let mut panel = Scratch::take();
        panel.resize(n.next_multiple_of(PAD) * BLOCK, 0.0);
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
    swaps: &mut [f64],
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
fn getf2_rows<S: Simd>(simd: S, n: usize, stride: usize, a: &mut [f64], swaps: &mut [f64]) {
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
        swaps[k] = p as f64;
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
        // By index: `chunks_exact_mut(stride)` divides by `stride` per step.
        for i in 0..n - k - 1 {
            let row = &mut rest[i * stride..(i + 1) * stride];
            let l = row[k] / pivot;
            if l != 0.0 {
                let minus_l = simd.splat_f64s(-l);
                let (x, _) = S::as_mut_simd_f64s(&mut row[first..width]);
                let t = simd.mul_add_f64s(minus_l, u[0], x[0]);
                x[0] = simd.select_f64s(right, t, x[0]);
                for (x, &u) in x[1..].iter_mut().zip(&u[1..]) {
                    *x = simd.mul_add_f64s(minus_l, u, *x);
                }
            }
            // After the vector update (which keeps column `k`): a vector
            // load of the row right after this narrower store would wait
            // for it to retire.
            row[k] = l;
        }
    }
}

/// Eliminates the panel of columns `k0..k1` (rows `k0..n`) column by
/// column, as `getf2` does: pivot search, row swap, multipliers
/// `l = a / pivot`, and the update `a −= l · u` of the panel's later
/// columns (`a ← fma(−l, u, a)`), skipped where `l = 0`. The panel is
/// copied into `scratch` column-major first, each column padded with zeros
/// to whole vectors (`mm` rows), so that every step runs down contiguous
/// columns in whole vectors from the one holding the step's row (the lanes
/// above it kept by a select), with no scalar tails; then copied back, and
/// the panel's row swaps applied to the columns outside it, which the
/// elimination does not read. The same operations in the same order per
/// entry as the row-major loop, so the same bits. (Against the unpadded
/// columns' scalar tails and autovectorised loops, with the integer
/// divisions taken out of the kernel calls: `lu` phase of `kernels phases
/// 36` 3.1 → 3.0 µs, release builds alternated.)
#[inline(always)]
fn factorise_panel<S: Simd>(
    simd: S,
    n: usize,
    stride: usize,
    lu: &mut [f64],
    swaps: &mut [f64],
    scratch: &mut [f64],
    (k0, k1): (usize, usize),
) {
    let lanes = S::F64_LANES;
    let (m, w) = (n - k0, k1 - k0);
    let mm = m.next_multiple_of(PAD);
    let buf = &mut scratch[..mm * w];
    for (c, col) in buf.chunks_exact_mut(mm).enumerate() {
        let src = lu[k0 * stride + k0 + c..].iter().step_by(stride);
        col[..m].iter_mut().zip(src).for_each(|(x, &v)| *x = v);
        col[m..].fill(0.0);
    }
    let (lane, _) = S::as_simd_f64s(&LANES[..lanes]);
    let lane = lane[0];
    let zero = simd.splat_f64s(0.0);
    for kk in 0..w {
        let (done, rest) = buf.split_at_mut((kk + 1) * mm);
        let col = &mut done[kk * mm..];
        // The pivot search: whole vectors from the one holding row `kk`,
        // the lanes above it zeroed.
        let first = kk / lanes * lanes;
        let below = simd.greater_than_f64s(lane, simd.splat_f64s(kk as f64 - first as f64 - 0.5));
        let p = {
            let (v, _) = S::as_simd_f64s(&col[first..]);
            let mut max = simd.select_f64s(below, simd.abs_f64s(v[0]), zero);
            for &x in &v[1..] {
                max = simd.max_f64s(max, simd.abs_f64s(x));
            }
            let max = simd.reduce_max_f64s(max);
            kk + col[kk..m].iter().position(|x| x.abs() == max).unwrap_or(0)
        };
        swaps[k0 + kk] = (k0 + p) as f64;
        if p != kk {
            col.swap(kk, p);
            for other in rest.chunks_exact_mut(mm) {
                other.swap(kk, p);
            }
            for other in done[..kk * mm].chunks_exact_mut(mm) {
                other.swap(kk, p);
            }
        }
        let col = &mut done[kk * mm..];
        let pivot = col[kk];
        if pivot == 0.0 || kk + 1 == m {
            continue;
        }
        // Multipliers and updates: whole vectors from the one holding row
        // `kk + 1`; in it only the lanes below row `kk` change.
        let first = (kk + 1) / lanes * lanes;
        let right = simd.greater_than_f64s(lane, simd.splat_f64s(kk as f64 - first as f64));
        {
            let (l, _) = S::as_mut_simd_f64s(&mut col[first..]);
            let d = simd.splat_f64s(pivot);
            let q = simd.div_f64s(l[0], d);
            l[0] = simd.select_f64s(right, q, l[0]);
            for x in l[1..].iter_mut() {
                *x = simd.div_f64s(*x, d);
            }
        }
        let (l, _) = S::as_simd_f64s(&col[first..]);
        // By index: `chunks_exact_mut(mm)` divides by `mm` per step.
        for c in 0..w - kk - 1 {
            let other = &mut rest[c * mm..(c + 1) * mm];
            let u = simd.splat_f64s(-other[kk]);
            let (x, _) = S::as_mut_simd_f64s(&mut other[first..]);
            // `getf2` skips the rows whose multiplier is zero.
            let t = simd.mul_add_f64s(l[0], u, x[0]);
            let t = simd.select_f64s(simd.equal_f64s(l[0], zero), x[0], t);
            x[0] = simd.select_f64s(right, t, x[0]);
            for (x, &l) in x[1..].iter_mut().zip(&l[1..]) {
                let t = simd.mul_add_f64s(l, u, *x);
                *x = simd.select_f64s(simd.equal_f64s(l, zero), *x, t);
            }
        }
    }
    for (c, col) in buf.chunks_exact(mm).enumerate() {
        let dst = lu[k0 * stride + k0 + c..].iter_mut().step_by(stride);
        dst.zip(&col[..m]).for_each(|(x, &v)| *x = v);
    }
    for (k, p) in (k0..k1).zip(swaps[k0..k1].iter().map(|&p| p as usize)) {
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

    /// Uniform numbers in `[0, 1)`, deterministic per seed.
    fn uniform(s: u64) -> impl FnMut() -> f64 {
        let mut random = spantree_bruteforce::random::SplitMix64::new(s);
        move || random.uniform()
    }

    /// The products store the plain loop's sums, bit for bit: every entry
    /// of `B X` and of `(B X)ᵀ` is `fma(b_il, x_lk, ·)` in the order of `l`
    /// from `+0` (the definition of the kernel's arithmetic), on widths
    /// that are whole vectors and on those that are not (padded through a
    /// scratch), with a last group of fewer than four rows and an all-zero
    /// row of `B` (skipped by the kernel), on the detected and the scalar
    /// instruction set.
    #[test]
    fn products_are_the_plain_loop() {
        for (r, n, c) in [
            (1, 1, 1),
            (3, 2, 5),
            (4, 4, 4),
            (10, 10, 10),
            (9, 16, 16),
            (36, 36, 36),
            (5, 5, 5),
            (8, 8, 8),
            (17, 17, 17),
            (37, 40, 40),
            (37, 40, 37),
            (13, 7, 24),
            (6, 5, 13),
        ] {
            let mut next = uniform(11 + (r * 100 + n * 10 + c) as u64);
            let lu = PlainLu::new(1, &[1.0]);
            let mut b = Matrix::from_fn(r, n, |_, _| next() - 0.5);
            for l in 0..n {
                b[(r / 2, l)] = 0.0;
            }
            let x = Matrix::from_fn(n, c, |_, _| next() - 0.5);
            let scalar = PlainLu {
                arch: Arch::Scalar,
                ..lu.clone()
            };
            for lu in [&lu, &scalar] {
                let (got, transposed) = (lu.matmul(&b, &x), lu.matmul_transposed(&b, &x));
                assert_eq!((transposed.rows(), transposed.cols()), (c, r));
                // In place where `B` and `X` are square and equal in size.
                let (mut in_place, mut in_place_t) = (b.clone(), b.clone());
                let square = lu.matmul_in_place(&mut in_place, &x, false);
                assert_eq!(square, r == n && n == c);
                assert_eq!(lu.matmul_in_place(&mut in_place_t, &x, true), square);
                if !square {
                    assert_eq!((&in_place, &in_place_t), (&b, &b));
                }
                for i in 0..r {
                    for k in 0..c {
                        let expected =
                            (0..n).fold(0.0f64, |acc, l| b[(i, l)].mul_add(x[(l, k)], acc));
                        let at = format!("{r}×{n}×{c} ({i}, {k}) {:?}", lu.arch);
                        assert_eq!(got[(i, k)].to_bits(), expected.to_bits(), "{at}");
                        assert_eq!(transposed[(k, i)].to_bits(), expected.to_bits(), "ᵀ {at}");
                        if square {
                            let (got, got_t) = (in_place[(i, k)], in_place_t[(k, i)]);
                            assert_eq!(got.to_bits(), expected.to_bits(), "in place {at}");
                            assert_eq!(got_t.to_bits(), expected.to_bits(), "in place ᵀ {at}");
                        }
                    }
                }
            }
        }
    }

    /// The product in place of a square `B` at every size from `1` to
    /// past [`SMALL_PRODUCT`] (entry by entry below it, through the tiles
    /// above) is its definition, bit for bit: `fma(b_il, x_lk, ·)` in the
    /// order of `l` from `+0`, a row of `B` whose entries are all zero
    /// (here `−0`) giving `+0`, on every instruction set of [`arches`].
    #[test]
    fn small_products_in_place_are_the_plain_loop() {
        for n in 0..=SMALL_PRODUCT + 3 {
            let mut next = uniform(0x5a11 + n as u64);
            let b = Matrix::from_fn(n, n, |i, _| if i == n / 2 { -0.0 } else { next() - 0.5 });
            let x = Matrix::from_fn(n, n, |_, _| next() - 0.5);
            for arch in arches() {
                let lu = PlainLu {
                    arch,
                    ..PlainLu::new(1, &[1.0])
                };
                for transposed in [false, true] {
                    let mut got = b.clone();
                    assert!(lu.matmul_in_place(&mut got, &x, transposed));
                    for i in 0..n {
                        for k in 0..n {
                            let expected =
                                (0..n).fold(0.0f64, |acc, l| b[(i, l)].mul_add(x[(l, k)], acc));
                            let got = if transposed { got[(k, i)] } else { got[(i, k)] };
                            let at = format!("n = {n} ({i}, {k}) {arch:?} {transposed}");
                            assert_eq!(got.to_bits(), expected.to_bits(), "{at}");
                        }
                    }
                }
            }
        }
    }

    /// The solve on right-hand sides that are not whole vectors is
    /// substitution row by row, bit for bit:
    /// the row swaps, forward `x_i −= l_ir x_r` for `r = 0..i`, backward
    /// `x_i −= u_ir x_r` for `r = i + 1..n` then `x_i / u_ii` (correctly
    /// rounded), each term one fused multiply-add, on dense random
    /// matrices (pivoting), on the detected and the scalar instruction set.
    #[test]
    fn solve_is_row_by_row_substitution() {
        let mut next = uniform(0x50_1e);
        for (n, k) in [(5, 3), (17, 9), (20, 1), (36, 36), (40, 37), (33, 13)] {
            let a: Vec<f64> = (0..n * n).map(|_| 2.0 * next() - 1.0).collect();
            let rhs = Matrix::from_fn(n, k, |_, _| next() - 0.5);
            let lu = PlainLu::new(n, &a);
            let (s, f) = (lu.stride, &lu.lu);
            let mut x = rhs.clone();
            for (i, p) in lu.swaps().enumerate() {
                for j in 0..k {
                    let (a, b) = (x[(i, j)], x[(p, j)]);
                    x[(i, j)] = b;
                    x[(p, j)] = a;
                }
            }
            for i in 0..n {
                for r in 0..i {
                    for j in 0..k {
                        x[(i, j)] = (-f[i * s + r]).mul_add(x[(r, j)], x[(i, j)]);
                    }
                }
            }
            for i in (0..n).rev() {
                for r in i + 1..n {
                    for j in 0..k {
                        x[(i, j)] = (-f[i * s + r]).mul_add(x[(r, j)], x[(i, j)]);
                    }
                }
                for j in 0..k {
                    x[(i, j)] /= f[i * s + i];
                }
            }
            let scalar = PlainLu {
                arch: Arch::Scalar,
                ..lu.clone()
            };
            for lu in [&lu, &scalar] {
                let mut got = rhs.clone();
                lu.solve(&mut got);
                let bits =
                    |m: &Matrix<f64>| m.as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&x), "n = {n}, k = {k}, {:?}", lu.arch);
            }
        }
    }

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

    /// `U⁻¹ L⁻¹ P` written plainly in the order the register blocks sum
    /// their terms: forward, row `i` of `L⁻¹` takes `−l_ir x_r` for
    /// `r = 0, 1, …, i − 1`; backward, in blocks of four rows from the
    /// bottom, row `i` of block `start..end` takes `−u_ir x_r` for
    /// `r = end, …, n − 1`, then `r = i + 1, …, end − 1`, then is divided by
    /// `u_ii`; then the column swaps in reverse.
    fn inverse_in_block_order(lu: &PlainLu) -> Vec<f64> {
        let (n, s) = (lu.n, lu.stride);
        let mut x = vec![0.0; n * n];
        for i in 0..n {
            x[i * n + i] = 1.0;
        }
        for i in 0..n {
            for r in 0..i {
                let c = -lu.lu[i * s + r];
                for j in 0..n {
                    x[i * n + j] = c.mul_add(x[r * n + j], x[i * n + j]);
                }
            }
        }
        let mut end = n;
        while end > 0 {
            let start = end.saturating_sub(4);
            for i in (start..end).rev() {
                for r in (end..n).chain(i + 1..end) {
                    let c = -lu.lu[i * s + r];
                    for j in 0..n {
                        x[i * n + j] = c.mul_add(x[r * n + j], x[i * n + j]);
                    }
                }
                for j in 0..n {
                    x[i * n + j] /= lu.lu[i * s + i];
                }
            }
            end = start;
        }
        for (k, p) in lu.swaps().enumerate().rev() {
            for row in x.chunks_exact_mut(n) {
                row.swap(k, p);
            }
        }
        x
    }

    /// The register-block inverse (rows of whole vectors: padded, or `n`
    /// a multiple of the vector width, and every `n` on the scalar
    /// instruction set) at every size 1..=70, dense random (pivoting) and
    /// sparse (zero coefficients, which it does not skip), gives the plain
    /// loop's values exactly (`==`: the same fused multiply-adds in the
    /// same order, and a correctly rounded division; a zero's sign may
    /// differ where a zero term is added).
    #[test]
    fn register_block_inverse_is_the_plain_loop() {
        let mut next = uniform(0x1_5eed);
        for n in 1..=70 {
            for sparse in [false, true] {
                let a: Vec<f64> = (0..n * n)
                    .map(|k| {
                        let x = if sparse && next() < 0.4 {
                            0.0
                        } else {
                            2.0 * next() - 1.0
                        };
                        x + if k % (n + 1) == 0 { 0.5 } else { 0.0 }
                    })
                    .collect();
                let lu = PlainLu::new(n, &a);
                let expected = inverse_in_block_order(&lu);
                let scalar = PlainLu {
                    arch: Arch::Scalar,
                    ..lu.clone()
                };
                let padded = lu.stride % PAD == 0;
                for (lu, run) in [(&lu, padded), (&scalar, true)] {
                    if !run {
                        continue;
                    }
                    let got = lu.inverse();
                    assert!(
                        got.as_slice().iter().zip(&expected).all(|(g, e)| g == e),
                        "n = {n}, sparse {sparse}, {:?}",
                        lu.arch
                    );
                }
            }
        }
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

    /// The detected instruction set, the scalar one, and on x86-64 AVX2
    /// where the CPU has it (four lanes: two vectors per [`PAD`] columns).
    fn arches() -> Vec<Arch> {
        let mut arches = vec![arch(), Arch::Scalar];
        #[cfg(target_arch = "x86_64")]
        arches.extend(pulp::x86::V3::try_new().map(Arch::V3));
        arches
    }

    /// Every size 0..=70 (every panel boundary and vector remainder), dense
    /// and with a third of the entries zero (zero multipliers, skipped
    /// updates), with ties and an exactly singular column: the blocked,
    /// column-major-panel factorisation and the unblocked one of small
    /// matrices give `getf2`'s factors and swaps bit for bit, on every
    /// instruction set of [`arches`].
    #[test]
    fn blocked_factors_are_getf2_bit_for_bit() {
        let mut next = uniform(0x5eed);
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
                for (arch, stride, unblocked) in arches()
                    .into_iter()
                    .flat_map(|a| [(a, n), (a, n.next_multiple_of(PAD))])
                    .flat_map(|(a, s)| [(a, s, false), (a, s, true)])
                    .filter(|&(_, s, unblocked)| !unblocked || s % PAD == 0 || n <= SCRATCH)
                {
                    let mut lu = vec![0.0; n * stride];
                    for (i, row) in a.chunks_exact(n.max(1)).enumerate() {
                        lu[i * stride..i * stride + n].copy_from_slice(row);
                    }
                    let mut swaps = vec![f64::NAN; n];
                    arch.dispatch(Factorise {
                        n,
                        stride,
                        lu: &mut lu,
                        swaps: &mut swaps,
                        unblocked,
                    });
                    let swaps: Vec<usize> = swaps.iter().map(|&p| p as usize).collect();
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
