//! Dense linear algebra written against [`Scalar`](crate::Scalar) alone, so
//! that every number type (floats, MPFR floats, exact rationals, complex
//! numbers) can use it without an engine crate.
//!
//! * [`PartialPivLu`]: `P A = L U` with partial pivoting, a
//!   [`Factorization`](crate::Factorization) for any scalar; the
//!   factorisation of the high-precision float backend.
//! * [`bordered_adjugate`]: the adjugate of a matrix of rank exactly
//!   `n − 1`, from one non-singular bordered matrix, without dividing by a
//!   vanishing pivot; every factorisation that finds the rank (this LU, the
//!   exact fraction-free LU of `spantree-exact`) calls it.
//! * [`RowEchelon`]: the pivoting bookkeeping (permutation, rank, the
//!   border for the adjugate) of a row-echelon elimination, shared by both
//!   LUs, which supply only their pivot rule and row update.
//! * [`exp_differences`]: `e^{a − b}` over whole rows, vectorised, to a
//!   few ulps with the low bits of `a − b` kept (the weights of the
//!   preparation, one transcendental per arc); [`exp_difference`] is its
//!   scalar twin.
//! * `column_blocks`, `load_lanes`, `store_lanes` (crate-private): blocks of
//!   columns as whole vectors, for the vectorised `O(n²)` passes.
//!
//! Engines with their own kernels (faer's blocked LU, exact Bareiss
//! elimination over the integers) stay in their backend crates.

mod adjugate;
mod echelon;
mod exp;
mod lanes;
mod partial_piv_lu;
pub(crate) mod refine;

pub use adjugate::bordered_adjugate;
pub use echelon::RowEchelon;
pub use exp::{exp_difference, exp_differences};
pub(crate) use exp::{exp_row, exp_rows};
pub(crate) use lanes::{column_blocks, load_lanes, store_lanes, ColumnBody, Narrow};
pub use partial_piv_lu::PartialPivLu;
