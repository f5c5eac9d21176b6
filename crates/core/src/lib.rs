//! # spantree-core
//!
//! Inference over edge-factored distributions of spanning trees: the
//! non-projective dependency trees of natural-language parsing.
//!
//! A sentence of `n` words is a graph on nodes `0..=n`, where `0` is the root.
//! Every arc `h → m` has a weight `w ≥ 0` (or a score `θ = ln w`), a tree's
//! weight is the product of its arcs', and `p(d) = w(d) / Z`. Trees are
//! *multi-root* (the root may have several children) or *single-root* (exactly
//! one, as in Universal Dependencies): see [`Rooting`]. The matrix-tree
//! theorem turns `Z` into a determinant of a [`laplacian`], and marginals into
//! its inverse (Koo et al. 2007; Smith & Smith 2007; McDonald & Satta 2007).
//!
//! The core names no linear-algebra library: every algorithm is generic over
//! an [`Engine`], which prepares the weights, factorises the Laplacian once and
//! answers `ln Z`, marginals, solves and vector–Jacobian products
//! ([`engine`]). Pick one per use:
//!
//! * `spantree_faer::Accurate` (the command's default): dense LU where its
//!   own `O(n²)` checks certify every number, the cancellation-free
//!   elimination of the Laplacian ([`elimination`]) where they do not: `ln Z`
//!   and the marginals keep their digits whatever the scales of the scores,
//!   at 1–2× the cost of a dense LU up to 200 words (4.5× at 500; the README's
//!   table); `spantree_faer::LogAccurate` always eliminates, in log space;
//! * `spantree_faer::ShiftedF64`: dense LU on column-shifted weights, so that
//!   `ln Z` never overflows; fast, but digits are lost when one column's
//!   weights span many orders of magnitude;
//! * `spantree_faer::F64`: dense LU on the weights as given;
//! * `spantree_exact::Exact`: exact rationals, to measure the true error of
//!   every float result; `spantree_exact::HighPrecision<BITS>`: MPFR floats
//!   for references of quantities with logarithms;
//! * `spantree_faer::Complex`: complex numbers for complex-step derivatives.
//!
//! ## Where things are
//!
//! | what | where |
//! |---|---|
//! | graphs, validation, `Z = 0` decided combinatorially | [`graph`] |
//! | the layouts of other parsers (torch-struct, SuPar) | [`layout`] |
//! | the Laplacians and how arcs enter them | [`laplacian`] |
//! | engines: preparation, [`Dense`] and [`Eliminated`] factors | [`engine`], [`elimination`] |
//! | the model: `Z`, `ln Z`, marginals, `∇Z` | [`model`] |
//! | first-order expectations; second order | [`expectation`]; [`second_order`] |
//! | entropies and divergences; attachment and GE | [`information`]; [`attachment`] |
//! | reverse mode (`O(n³)` gradients) | [`gradient`] |
//! | the best, MBR and projective trees; the [`Tree`] type | [`decode`], [`tree`] |
//! | exact sampling; the `K` best trees | [`decode::sample`]; [`decode::kbest`] |
//! | the literature's slower algorithms | [`baseline`] |
//! | the mathematics, with the proofs' section numbers | [`mathematics`] |
//!
//! A new decoder or sampler goes in [`decode`] and returns a [`Tree`].
//! A new engine implements [`Engine`] (a number type, a preparation and one
//! of the two [`Factors`]) in its own crate; a new quantity is a method of
//! [`Model`] in the module of its kind, plus its entry in the front end's
//! registry (`spantree-api`) and its conformance test (`spantree-conformance`).
//!
//! **Errors.** Input is validated once, when a [`Graph`] is built: NaN,
//! infinite or negative weights, wrong shapes and `n = 0` are typed
//! [`Error`]s. Whether `Z = 0` is decided combinatorially
//! ([`Graph::spanning_tree`]), the same on every backend; floating-point
//! failures are [`Error::Numerical`]. Nothing panics on user input.
//!
//! ```
//! use spantree_core::{Graph, Model, Rooting};
//! use spantree_faer::Accurate;
//!
//! let ninf = f64::NEG_INFINITY;
//! // Scores of arcs h → m; row 0 is the root, column 0 and the diagonal do not exist.
//! let scores = [
//!     [ninf, 1.0, -2.0, 0.5],
//!     [ninf, ninf, 3.0, 0.0],
//!     [ninf, 0.2, ninf, 1.5],
//!     [ninf, -1.0, 0.7, ninf],
//! ];
//! let graph = Graph::from_scores(&scores)?;
//! let model = Model::new(Accurate, &graph, Rooting::Single)?;
//! let log_z = model.log_partition()?;
//! let mu = model.marginals()?;
//! // Exactly one word attaches to the root.
//! let root_mass: f64 = (1..=3).map(|m| mu[(0, m)]).sum();
//! assert!((root_mass - 1.0).abs() < 1e-12 && log_z.is_finite());
//! # Ok::<(), spantree_core::Error>(())
//! ```

pub mod attachment;
pub mod baseline;
pub mod decode;
pub mod elimination;
pub mod engine;
pub mod error;
pub mod expectation;
pub mod gradient;
pub mod graph;
pub mod information;
pub mod laplacian;
pub mod layout;
pub mod linalg;
pub mod matrix;
#[doc = include_str!("../docs/mathematics.md")]
pub mod mathematics {}
pub mod model;
pub mod scalar;
pub mod second_order;
pub mod tree;

pub use engine::{
    Certified, Dense, Eliminated, Engine, Factorization, Factors, PerLabel, Prepared, WithTangent,
};
pub use error::{ArcRef, Error, Inaccuracy, NoTree, Numerical, Result};
pub use expectation::ArcFeatures;
pub use graph::{Graph, Potentials, Rooting};
pub use information::{Divergence, GradientPair};
pub use layout::Layout;
pub use matrix::Matrix;
pub use model::{arc_marginals, log_partition, Model};
pub use scalar::{log_sum_exp, FromScore, Scalar, Sign, Transcendental};
pub use second_order::SecondOrder;
pub use tree::{Tree, TreeDefect};

/// This crate's README, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The workspace README's library snippet, compiled and run as a doctest
/// (in the workspace only: the packaged crate does not carry that file).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct WorkspaceReadmeDoctests;

/// Helpers shared by the unit tests.
#[cfg(test)]
pub(crate) mod testing {
    /// Numbers uniform in `[-1, 1)`, deterministic per seed (the oracle
    /// crate's generator, `spantree_bruteforce::random::SplitMix64`).
    pub(crate) fn stream(seed: u64) -> impl FnMut() -> f64 {
        let mut random = spantree_bruteforce::random::SplitMix64::new(seed);
        move || random.uniform_in(-1.0, 1.0)
    }

    /// An `f64` body under the scalar instruction set and each one of the
    /// machine (`V3`, 4 lanes; `V4`, 8): the whole and overlapping blocks
    /// of every width, and the scalar path below one vector.
    pub(crate) fn by_lanes<Op: pulp::WithSimd + Copy>(op: Op) -> Vec<Op::Output> {
        use pulp::Simd;
        #[allow(unused_mut)]
        let mut out = vec![Simd::vectorize(pulp::Scalar::new(), op)];
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(simd) = pulp::x86::V3::try_new() {
                out.push(Simd::vectorize(simd, op));
            }
            if let Some(simd) = pulp::x86::V4::try_new() {
                out.push(Simd::vectorize(simd, op));
            }
        }
        out
    }
}
