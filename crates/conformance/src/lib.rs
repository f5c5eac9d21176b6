//! # spantree-conformance
//!
//! The one conformance suite of spantree: every engine, every quantity,
//! against an independent oracle. Not published; `cargo test -p
//! spantree-conformance` runs it.
//!
//! * [`suite`], tier 1: `Z`, the marginals and `∇Z` against brute-force
//!   enumeration (`n ≤ 6`), identities up to `n = 60` (marginals sum to 1,
//!   column scaling, relabeling, Cayley's counts), graphs without spanning
//!   tree, and extreme scales (weights `1e±300`, scores `±1e4`).
//! * [`quantities`], tier 2: every expectation, entropy, cross-entropy, KL
//!   (both gradients), Rényi entropy, `ℓ_k` norm, expected attachment, GE,
//!   the marginals' VJPs, covariance and pair marginals, against
//!   enumeration over (labeled) trees ([`spantree_bruteforce::Distribution`]),
//!   and every gradient against complex-step differentiation on the
//!   [`spantree_faer::Complex`] engine.
//! * [`cases`]: proptest strategies for conformance cases (graph size, score
//!   scale, root shift, forbidden arcs, labels) that shrink a failure to a
//!   minimal graph, and [`cases::against_brute_force`], the property run on
//!   every engine.
//! * Two engines written here, independent of faer and rug: [`naive`]
//!   (textbook Gaussian elimination, cofactor adjugate) and [`nalgebra`]
//!   (nalgebra's dense LU), the second one for differential tests of the
//!   faer engines.
//!
//! `tests/engines.rs` stamps the whole suite on every engine with
//! [`stamp_suite!`]; an engine that cannot give a quantity (no logarithm in
//! exact rationals) excludes that test by name, with the reason, in its
//! stamp. A new quantity adds one generic function to [`quantities`] and one
//! line to [`stamp_suite!`].

pub mod cases;
pub mod naive;
pub mod nalgebra;
pub mod quantities;
pub mod suite;

pub use suite::Tolerance;

/// What an engine's stamp promises: one tolerance per kind of test and the
/// largest `n` of the identities.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Tier 1 against brute force (`n ≤ 6`) and `n = 1`.
    pub small: Tolerance,
    /// Tier 1 identities up to [`Config::max_n`].
    pub large: Tolerance,
    /// Weights `1e±300`, scores `±1e4` (against the log-space oracle).
    pub extreme: Tolerance,
    /// Tier 2 against brute force and complex step: relative to
    /// `1 + |expected|` for values, to the largest entry for gradients.
    pub quantities: Tolerance,
    /// The largest `n` of the identities.
    pub max_n: usize,
}

/// Stamps one `#[test]` per test of the suite for an engine, except the
/// tests named in `except` (say why next to the stamp). The bodies are the
/// generic functions of [`suite`], [`quantities`] and [`cases`]; this macro
/// only names them, and the tests an `except` names are not even compiled
/// (so an engine whose scalar has no logarithm can skip the entropies).
/// Use it inside a module of a test target:
///
/// ```text
/// mod accurate {
///     spantree_conformance::stamp_suite!(spantree_faer::Accurate, CONFIG, except: []);
/// }
/// ```
#[macro_export]
macro_rules! stamp_suite {
    ($engine:expr, $config:expr, except: [$($skip:ident),* $(,)?]) => {
        macro_rules! __stamp_one {
            $( ($skip) => {}; )*
            // Tier 1: Z, marginals, ∇Z.
            (against_brute_force) => { #[test] fn against_brute_force() { $crate::suite::against_brute_force($engine, $config.small) } };
            (labeled_against_brute_force) => { #[test] fn labeled_against_brute_force() { $crate::suite::labeled_against_brute_force($engine, $config.small) } };
            (marginals_sum_to_one) => { #[test] fn marginals_sum_to_one() { $crate::suite::marginals_sum_to_one($engine, $config.large, $config.max_n) } };
            (column_scaling) => { #[test] fn column_scaling() { $crate::suite::column_scaling($engine, $config.large, $config.max_n) } };
            (permutation) => { #[test] fn permutation() { $crate::suite::permutation($engine, $config.large, $config.max_n) } };
            (cayley) => { #[test] fn cayley() { $crate::suite::cayley($engine, $config.large, $config.max_n) } };
            (single_word) => { #[test] fn single_word() { $crate::suite::single_word($engine, $config.small) } };
            (no_spanning_tree) => { #[test] fn no_spanning_tree() { $crate::suite::no_spanning_tree($engine) } };
            (no_root_arc) => { #[test] fn no_root_arc() { $crate::suite::no_root_arc($engine) } };
            (extreme_column_scales) => { #[test] fn extreme_column_scales() { $crate::suite::extreme_column_scales($engine, $config.extreme) } };
            (extreme_score_scales) => { #[test] fn extreme_score_scales() { $crate::suite::extreme_score_scales($engine, $config.extreme) } };
            (extreme_scores) => { #[test] fn extreme_scores() { $crate::suite::extreme_scores($engine, $config.extreme) } };
            (extreme_weights) => { #[test] fn extreme_weights() { $crate::suite::extreme_weights($engine, $config.extreme) } };
            (overflow_is_typed) => { #[test] fn overflow_is_typed() { $crate::suite::overflow_is_typed($engine, $config.extreme) } };
            (property_against_brute_force) => { #[test] fn property_against_brute_force() { $crate::cases::against_brute_force($engine, $config.small) } };
            // Tier 2: every other quantity.
            (expectations) => { #[test] fn expectations() { $crate::quantities::expectations($engine, $config.quantities) } };
            (marginals_vjp) => { #[test] fn marginals_vjp() { $crate::quantities::marginals_vjp($engine, $config.quantities) } };
            (second_order) => { #[test] fn second_order() { $crate::quantities::second_order($engine, $config.quantities) } };
            (entropy) => { #[test] fn entropy() { $crate::quantities::entropy($engine, $config.quantities) } };
            (divergences) => { #[test] fn divergences() { $crate::quantities::divergences($engine, $config.quantities) } };
            (infinite_divergence) => { #[test] fn infinite_divergence() { $crate::quantities::infinite_divergence($engine) } };
            (renyi_and_norms) => { #[test] fn renyi_and_norms() { $crate::quantities::renyi_and_norms($engine, $config.quantities) } };
            (information_identities) => { #[test] fn information_identities() { $crate::quantities::information_identities($engine, $config.quantities, $config.max_n) } };
            (complex_step_expectations) => { #[test] fn complex_step_expectations() { $crate::quantities::complex_step_expectations($engine, $config.quantities, $config.max_n) } };
            (complex_step_information) => { #[test] fn complex_step_information() { $crate::quantities::complex_step_information($engine, $config.quantities, $config.max_n) } };
        }
        __stamp_one!(against_brute_force);
        __stamp_one!(labeled_against_brute_force);
        __stamp_one!(marginals_sum_to_one);
        __stamp_one!(column_scaling);
        __stamp_one!(permutation);
        __stamp_one!(cayley);
        __stamp_one!(single_word);
        __stamp_one!(no_spanning_tree);
        __stamp_one!(no_root_arc);
        __stamp_one!(extreme_column_scales);
        __stamp_one!(extreme_score_scales);
        __stamp_one!(extreme_scores);
        __stamp_one!(extreme_weights);
        __stamp_one!(overflow_is_typed);
        __stamp_one!(property_against_brute_force);
        __stamp_one!(expectations);
        __stamp_one!(marginals_vjp);
        __stamp_one!(second_order);
        __stamp_one!(entropy);
        __stamp_one!(divergences);
        __stamp_one!(infinite_divergence);
        __stamp_one!(renyi_and_norms);
        __stamp_one!(information_identities);
        __stamp_one!(complex_step_expectations);
        __stamp_one!(complex_step_information);
    };
}
