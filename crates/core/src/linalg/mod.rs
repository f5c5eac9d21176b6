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
//!
//! Engines with their own kernels (faer's blocked LU, exact Bareiss
//! elimination over the integers) stay in their backend crates.

mod adjugate;
mod partial_piv_lu;

pub use adjugate::bordered_adjugate;
pub use partial_piv_lu::PartialPivLu;
