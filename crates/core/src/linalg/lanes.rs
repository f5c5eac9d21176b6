//! Whole vectors of `f64` lanes over blocks of columns: the pattern of the
//! `O(n²)` passes that keep a block of columns in vector registers down the
//! rows of a row-major matrix (the derivative check, the spread test of the
//! elimination's tangent, the column pass of `balance`).

use pulp::{Simd, WithSimd};

/// The starts of the blocks of `lanes` columns that cover `cols ≥ lanes`
/// columns: the last block moved back to end at `cols` when `lanes` does
/// not divide it (its first columns are computed twice, each column the
/// same way both times: a column's state depends on that column alone).
/// Fewer columns than lanes take the scalar instruction set instead
/// (`pulp::Scalar`, one lane), so that every load and store is a whole
/// vector.
pub(crate) fn column_blocks(cols: usize, lanes: usize) -> impl Iterator<Item = usize> {
    let count = if cols >= lanes {
        cols.div_ceil(lanes)
    } else {
        0
    };
    (0..count).map(move |b| (b * lanes).min(cols - lanes))
}

/// The `Sm::F64_LANES` values of `s` from `at`, as a vector.
#[inline(always)]
pub(crate) fn load_lanes<Sm: Simd>(_simd: Sm, s: &[f64], at: usize) -> Sm::f64s {
    Sm::as_simd_f64s(&s[at..at + Sm::F64_LANES]).0[0]
}

/// Stores `v` into `s` from `at` (the way back of [`load_lanes`]).
#[inline(always)]
pub(crate) fn store_lanes<Sm: Simd>(_simd: Sm, s: &mut [f64], at: usize, v: Sm::f64s) {
    Sm::as_mut_simd_f64s(&mut s[at..at + Sm::F64_LANES]).0[0] = v;
}

/// A vector body over blocks of `columns` columns ([`column_blocks`]),
/// run under one instruction-set dispatch by [`Narrow`].
pub(crate) trait ColumnBody: Sized {
    /// What the body returns.
    type Output;
    /// The number of columns its blocks cover.
    fn columns(&self) -> usize;
    /// The body under `simd`, whose lanes the columns fill.
    fn body<Sm: Simd>(self, simd: Sm) -> Self::Output;
}

/// A [`ColumnBody`] as a `pulp` operation: under the dispatched instruction
/// set, or under `pulp::Scalar` (one lane) when its columns do not fill one
/// of that set's vectors, so that each load and store is a whole vector.
#[derive(Clone, Copy)]
pub(crate) struct Narrow<B>(pub(crate) B);

impl<B: ColumnBody> WithSimd for Narrow<B> {
    type Output = B::Output;

    #[inline(always)]
    fn with_simd<Sm: Simd>(self, simd: Sm) -> B::Output {
        if self.0.columns() < Sm::F64_LANES {
            self.0.body(pulp::Scalar::new())
        } else {
            self.0.body(simd)
        }
    }
}
