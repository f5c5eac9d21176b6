//! A plain dense row-major matrix: the currency between the core and the
//! backends, so that no engine type appears in the core's signatures.

use std::cell::Cell;
use std::ops::{Index, IndexMut};

use crate::Scalar;

thread_local! {
    /// The per-thread buffer of [`Scratch`].
    static SCRATCH: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

/// A scratch buffer of at most this many `f64` values (8 MB) is kept
/// between calls; a larger one is freed after its call.
const RETAIN: usize = 1 << 20;

/// This thread's scratch vector, taken out of its cell until dropped (when
/// it is put back, or freed if it grew past `RETAIN`, 8 MB): for the buffers
/// that live for one call, which a corpus of short sentences allocated
/// per sentence, in sizes that change from sentence to sentence, keeping
/// the allocator in its slow path (pages retired and formed again).
/// Empty when taken, with the capacity that earlier calls left; a nested
/// take (or one while the thread is torn down) starts from a fresh
/// vector, and the last one put back is kept. A guard rather than a
/// closure, so that the vector bodies that take it keep their instruction
/// set (a closure inside a `pulp` body is compiled without it). One per
/// thread for the core and the backends alike. `O(1)` to take and give
/// back.
///
/// ```
/// use spantree_core::matrix::Scratch;
/// let mut buf = Scratch::take();
/// buf.extend([1.0, 2.0]);
/// assert_eq!(buf.len(), 2);
/// drop(buf);
/// assert!(Scratch::take().is_empty());
/// ```
pub struct Scratch(Vec<f64>);

impl Scratch {
    /// Takes this thread's scratch, emptied.
    pub fn take() -> Self {
        let mut buf = SCRATCH.try_with(Cell::take).unwrap_or_default();
        buf.clear();
        Scratch(buf)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Vec<f64>;
    fn deref(&self) -> &Vec<f64> {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Vec<f64> {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.0.capacity() <= RETAIN {
            let buf = std::mem::take(&mut self.0);
            // Fails only while the thread is torn down: the buffer is dropped.
            let _ = SCRATCH.try_with(|cell| cell.set(buf));
        }
    }
}

thread_local! {
    /// The per-thread buffers of [`Spare`].
    static SPARES: Cell<Vec<Vec<f64>>> = const { Cell::new(Vec::new()) };
}

/// At most this many buffers are kept per thread by [`Spare::give_back`].
const SPARES_KEPT: usize = 8;

/// A buffer of at most this many `f64` values (256 KB, a graph of about
/// 180 words) is kept by [`Spare::give_back`]: at most 2 MB per thread.
const SPARE_RETAIN: usize = 1 << 15;

/// Buffers of fewer `f64` values than this (1 KB, mimalloc's small
/// objects: a graph of at most 10 words) are neither taken from the spares
/// nor kept: the allocator's fast path costs less than the thread-local
/// pool. Measured (task-clock, medians of 3, `op_loop grad_entropy 10
/// 300000 0 accurate`): every size through the spares, +1.7%.
const SPARE_FROM: usize = 128;

/// This thread's spare `f64` buffers, for the matrices of one sentence
/// whose lifetime ends where the code that formed them can see it (the
/// weighted adjoint of a product once its glue has read it; the inverse,
/// marginals and `G(X)` a dense factorisation keeps, when it is dropped):
/// a corpus of short sentences allocated each afresh, zeroed, per
/// sentence. A buffer taken holds what it held before (only what it grew
/// by is zero): the caller writes every entry before it reads it. At most
/// `SPARES_KEPT` (8) buffers of `SPARE_FROM` (1 KB) to `SPARE_RETAIN`
/// (256 KB) each are kept; smaller ones are allocated and freed as before.
/// `O(1)` to take (up to the grown part) and to give back.
///
/// ```
/// use spantree_core::matrix::Spare;
/// let mut v = Spare::take(3);
/// v.copy_from_slice(&[1.0, 2.0, 3.0]);
/// Spare::give_back(v);
/// assert_eq!(Spare::take(2).len(), 2);
/// ```
pub struct Spare;

impl Spare {
    /// A vector of `len` entries: a kept buffer with room for them (else
    /// the last kept, grown), its old entries left in place, or a new
    /// zeroed one when none is kept.
    pub fn take(len: usize) -> Vec<f64> {
        if len < SPARE_FROM {
            return vec![0.0; len];
        }
        match Spare::kept(len) {
            Some(mut v) => {
                v.resize(len, 0.0);
                v
            }
            None => vec![0.0; len],
        }
    }

    /// A kept buffer with room for `len` entries, else the last kept.
    fn kept(len: usize) -> Option<Vec<f64>> {
        SPARES
            .try_with(|cell| {
                let mut spares = cell.take();
                let fits = spares.iter().rposition(|v| v.capacity() >= len);
                let found = match fits {
                    Some(i) => Some(spares.swap_remove(i)),
                    None => spares.pop(),
                };
                cell.set(spares);
                found
            })
            .ok()
            .flatten()
    }

    /// Keeps `v` for a later [`Spare::take`] on this thread (dropped if
    /// `SPARES_KEPT` are kept already, or if it is larger than `SPARE_RETAIN`).
    pub fn give_back(v: Vec<f64>) {
        if v.capacity() < SPARE_FROM || v.capacity() > SPARE_RETAIN {
            return;
        }
        keep_on_thread(&SPARES, v, SPARES_KEPT);
    }
}

/// Pushes `item` onto this thread's list `kept` unless it holds `most`
/// already (then `item` is dropped), and drops it too while the thread is
/// being torn down: the keeping of [`Spare`] and of the elimination's
/// passes. `O(1)`.
pub(crate) fn keep_on_thread<T: 'static>(
    kept: &'static std::thread::LocalKey<Cell<Vec<T>>>,
    item: T,
    most: usize,
) {
    let _ = kept.try_with(|cell| {
        let mut list = cell.take();
        if list.len() < most {
            list.push(item);
        }
        cell.set(list);
    });
}

/// A dense `rows × cols` matrix stored row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix<S> {
    rows: usize,
    cols: usize,
    data: Vec<S>,
}

impl<S> Matrix<S> {
    /// A matrix from its entries, row by row.
    ///
    /// # Panics
    /// If `data.len() != rows * cols` (a programming error, not user input).
    pub fn from_row_major(rows: usize, cols: usize, data: Vec<S>) -> Self {
        assert_eq!(data.len(), rows * cols, "matrix data has the wrong length");
        Matrix { rows, cols, data }
    }

    /// A matrix whose entry `(i, j)` is `f(i, j)`.
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> S) -> Self {
        let mut data = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            for j in 0..cols {
                data.push(f(i, j));
            }
        }
        Matrix { rows, cols, data }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The entries, row by row.
    pub fn as_slice(&self) -> &[S] {
        &self.data
    }

    /// The entries, row by row, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [S] {
        &mut self.data
    }

    /// The entries, row by row, by value.
    pub fn into_vec(self) -> Vec<S> {
        self.data
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[S] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Applies `f` to every entry.
    pub fn map<T>(&self, f: impl FnMut(&S) -> T) -> Matrix<T> {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(f).collect(),
        }
    }
}

impl<S: Scalar> Matrix<S> {
    /// The `rows × cols` zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: vec![S::zero(); rows * cols],
        }
    }

    /// The `n × n` identity.
    pub fn identity(n: usize) -> Self {
        Matrix::from_fn(n, n, |i, j| if i == j { S::one() } else { S::zero() })
    }

    /// The product `self · other`, row by row (`out[i] += a[i][k] · b[k]`,
    /// contiguous rows that the compiler vectorises for `f64`), skipping
    /// zero entries of `self`. `O(rows · cols · other.cols)`.
    ///
    /// # Panics
    /// If the inner dimensions differ (a programming error).
    ///
    /// ```
    /// use spantree_core::Matrix;
    /// let a = Matrix::from_row_major(2, 2, vec![1.0, 2.0, 3.0, 4.0]);
    /// let b = Matrix::from_row_major(2, 1, vec![5.0, 6.0]);
    /// assert_eq!(a.matmul(&b).into_vec(), vec![17.0, 39.0]);
    /// ```
    pub fn matmul(&self, other: &Matrix<S>) -> Matrix<S> {
        assert_eq!(self.cols, other.rows, "inner dimensions differ");
        let mut out = Matrix::zeros(self.rows, other.cols);
        if other.cols == 0 {
            return out;
        }
        for (row, a_row) in out
            .data
            .chunks_exact_mut(other.cols)
            .zip(self.data.chunks_exact(self.cols.max(1)))
        {
            for (a, b_row) in a_row.iter().zip(other.data.chunks_exact(other.cols)) {
                if a.is_zero() {
                    continue;
                }
                for (o, b) in row.iter_mut().zip(b_row) {
                    *o += a.clone() * b.clone();
                }
            }
        }
        out
    }

    /// The transpose, by blocks of `32 × 32` (both matrices touched a
    /// cache line at a time). `O(n²)`.
    pub fn transpose(&self) -> Self {
        const BLOCK: usize = 32;
        let (rows, cols) = (self.rows, self.cols);
        let mut t = vec![S::zero(); rows * cols];
        for i0 in (0..rows).step_by(BLOCK) {
            for j0 in (0..cols).step_by(BLOCK) {
                for i in i0..(i0 + BLOCK).min(rows) {
                    for j in j0..(j0 + BLOCK).min(cols) {
                        t[j * rows + i] = self[(i, j)].clone();
                    }
                }
            }
        }
        Matrix::from_row_major(cols, rows, t)
    }
}

impl<S> Index<(usize, usize)> for Matrix<S> {
    type Output = S;
    fn index(&self, (i, j): (usize, usize)) -> &S {
        debug_assert!(i < self.rows && j < self.cols);
        &self.data[i * self.cols + j]
    }
}

impl<S> IndexMut<(usize, usize)> for Matrix<S> {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut S {
        debug_assert!(i < self.rows && j < self.cols);
        &mut self.data[i * self.cols + j]
    }
}

/// `m` as a `Matrix<f64>` when `S` is `f64`: how the `O(n²)` passes take
/// their `f64` paths (whole `pulp` vectors) without a trait of their own.
pub(crate) fn as_f64<S: 'static>(m: &Matrix<S>) -> Option<&Matrix<f64>> {
    (m as &dyn std::any::Any).downcast_ref::<Matrix<f64>>()
}

/// `m` as a `Matrix<S>` when `S` is `f64` (the way back of [`as_f64`]).
pub(crate) fn from_f64<S: 'static>(m: Matrix<f64>) -> Option<Matrix<S>> {
    let mut out: Option<Matrix<S>> = None;
    if let Some(slot) = (&mut out as &mut dyn std::any::Any).downcast_mut::<Option<Matrix<f64>>>() {
        *slot = Some(m);
    }
    out
}

/// Fills this thread's spares with `SPARES_KEPT` buffers of NaN, of
/// `len` entries each: a body that reads an entry of a spare it did not
/// write first shows it.
#[cfg(test)]
pub(crate) fn poison_spares(len: usize) {
    let _ = SPARES.try_with(|cell| cell.set(vec![vec![f64::NAN; len]; SPARES_KEPT]));
}

/// Empties this thread's spares (a take then allocates a zeroed buffer).
#[cfg(test)]
pub(crate) fn clear_spares() {
    let _ = SPARES.try_with(Cell::take);
}

/// Gives the entries of `m` back to this thread's [`Spare`] buffers when
/// `S` is `f64` (otherwise drops them).
pub(crate) fn give_back<S: 'static>(m: Matrix<S>) {
    if let Some(m) = (&mut Some(m) as &mut dyn std::any::Any).downcast_mut::<Option<Matrix<f64>>>()
    {
        if let Some(m) = m.take() {
            Spare::give_back(m.data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Scratch, Spare};

    /// A spare taken has the length asked, keeps the entries it had up to
    /// it (the caller writes them), and is zero where it grew; buffers
    /// below `SPARE_FROM` are new and zeroed.
    #[test]
    fn spares_have_the_length_asked_and_zeros_where_they_grew() {
        super::clear_spares();
        let mut v = Spare::take(200);
        v.fill(1.0);
        Spare::give_back(v);
        let v = Spare::take(300);
        assert_eq!(v.len(), 300);
        assert!(v[..200].iter().all(|&x| x == 1.0));
        assert!(v[200..].iter().all(|&x| x == 0.0));
        Spare::give_back(v);
        let v = Spare::take(150);
        assert_eq!(v.len(), 150);
        assert!(v.iter().all(|&x| x == 1.0));
        let mut small = Spare::take(100);
        small.fill(2.0);
        Spare::give_back(small);
        assert!(Spare::take(100).iter().all(|&x| x == 0.0));
    }

    /// Each take starts from an empty buffer; a nested take gets a buffer
    /// of its own and leaves the outer one as it was; a later take reuses
    /// the capacity put back last.
    #[test]
    fn scratch_is_empty_and_nested_takes_get_their_own() {
        let mut outer = Scratch::take();
        assert!(outer.is_empty());
        outer.extend([1.0, 2.0, 3.0]);
        {
            let mut inner = Scratch::take();
            assert!(inner.is_empty());
            inner.push(-1.0);
        }
        assert_eq!(outer.as_slice(), &[1.0, 2.0, 3.0]);
        outer.reserve(1000);
        drop(outer);
        let again = Scratch::take();
        assert!(again.is_empty());
        assert!(again.capacity() >= 1000);
    }
}
