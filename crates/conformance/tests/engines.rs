//! The whole suite stamped on every engine: the seven of the workspace, the
//! textbook [`Naive`] pair and the [`Nalgebra`] engine of this crate. Every
//! number comes from the brute-force oracle, an identity, a count or complex
//! step. A test an engine cannot run is excluded by name in its `except`
//! list, with the reason next to it.

use spantree_conformance::naive::{Naive, NaiveShifted};
use spantree_conformance::nalgebra::Nalgebra;
use spantree_conformance::{suite, Config, Tolerance};
use spantree_exact::{Exact, HighPrecision};
use spantree_faer::{Accurate, Complex, LogAccurate, ShiftedF64, F64};

/// The `f64` engines. Tier 1: rel/abs 1e-12 for `n ≤ 6` (one LU of a
/// Laplacian of log-normal weights, condition < 1e3, against sums of
/// positive products carrying ~1e-15); 1e-11 up to `n = 60` (rounding grows
/// about linearly with `n`, condition < 1e4 at 60); 1e-10 at extreme scales
/// (the log-space oracle adds `n` scores of size 1e4, ulp 2e-12 each). Tier
/// 2: 1e-11 on values (brute force sums up to 6⁴·2⁴ terms, both sides carry
/// a few 1e-14), 1e-10 on gradients (reverse mode does two solves more, each
/// losing up to condition × ε; gradients are differences of such sums).
const FLOAT: Config = Config {
    small: Tolerance::uniform(1e-12),
    large: Tolerance::uniform(1e-11),
    extreme: Tolerance::uniform(1e-10),
    quantities: Tolerance {
        log_z: 1e-11,
        marginal: 1e-11,
        gradient: 1e-10,
    },
    max_n: 60,
};

/// Exact rationals: every comparison is `==` against the oracle run in the
/// same rationals. Bareiss elimination on rationals of `O(n · 53)` bits stays
/// under a second per model at `n = 25`, the largest size of the identities.
const EXACT: Config = Config {
    small: Tolerance::EXACT,
    large: Tolerance::EXACT,
    extreme: Tolerance::EXACT,
    quantities: Tolerance::EXACT,
    max_n: 25,
};

/// 128-bit MPFR floats, compared through `f64` against `f64` oracles (the
/// oracle's own rounding dominates): the `f64` bounds; `n ≤ 25` for time.
const HIGH: Config = Config { max_n: 25, ..FLOAT };

/// The textbook engine: rel/abs 1e-11 for `n ≤ 6` (one LU of condition
/// < 1e4; the cofactor adjugate loses no more), 1e-10 up to `n = 60`.
const NAIVE: Config = Config {
    small: Tolerance::uniform(1e-11),
    large: Tolerance::uniform(1e-10),
    extreme: Tolerance::uniform(1e-11),
    quantities: Tolerance {
        log_z: 1e-11,
        marginal: 1e-11,
        gradient: 1e-10,
    },
    max_n: 60,
};

// `extreme_weights` (every arc 10^U(−300, 300), so 600 decades inside one
// column) is excluded on every dense-LU engine: single-root, n = 6, seed 1
// gives μ[6][2] = 0 where the oracle says 1, and multi-root n = 3, seed 1
// loses 8 digits of Z, without an error. Dense LU on shifted columns cannot
// hold a root weight tiny next to the arcs of its column (the multi-root
// diagonal absorbs it); that is what the accurate engines are for.

// `extreme_score_scales` is excluded on the engines that take weights as
// given (`F64`, `Naive`, `Complex`): a column offset of −1e4 makes every
// weight of that column e^θ = 0 in f64, so the Laplacian is singular and the
// engine says so with a typed `Numerical::Singular` (single-root, n = 1,
// seed 0) — the right answer for an unshifted engine, but not the oracle's
// value, which the test demands of every engine that accepts the graph.

mod f64 {
    use super::*;
    spantree_conformance::stamp_suite!(F64, FLOAT, except: [extreme_weights, extreme_score_scales]);

    /// The acceptance test: rel 1e-12 on ln Z, abs 1e-12 on marginals
    /// against exact rationals, `n ≤ 30`, `N(0, 1)` scores (one LU of
    /// condition < 1e3 at n = 30; the exact answer is correctly rounded).
    #[test]
    fn agrees_with_exact() {
        suite::agrees_with_reference(F64, Exact, Tolerance::uniform(1e-12), 30);
    }
}

mod shifted_f64 {
    use super::*;
    spantree_conformance::stamp_suite!(ShiftedF64, FLOAT, except: [extreme_weights]);

    /// The acceptance test: `n = 1000`, scores `N(0, 20²)`: finite `ln Z` and
    /// every word's marginals (and single-root root marginals) summing to 1.
    /// abs 1e-9: one 1000 × 1000 LU whose column sums carry ~n·ε·condition.
    #[test]
    fn thousand_words_with_large_scores() {
        suite::large_scores_stay_finite(ShiftedF64, Tolerance::uniform(1e-9), 1000, 20.0);
    }

    /// As for `F64`: rel/abs 1e-12 against exact rationals, `n ≤ 30`.
    #[test]
    fn agrees_with_exact() {
        suite::agrees_with_reference(ShiftedF64, Exact, Tolerance::uniform(1e-12), 30);
    }
}

mod accurate {
    use super::*;
    spantree_conformance::stamp_suite!(Accurate, FLOAT, except: []);

    /// rel 1e-12 on ln Z and abs 1e-12 on marginals against exact
    /// rationals, n ≤ 25, N(0, 1) scores.
    #[test]
    fn agrees_with_exact() {
        suite::agrees_with_reference(Accurate, Exact, Tolerance::uniform(1e-12), 25);
    }

    /// The acceptance test of `ShiftedF64` (n = 1000, scores N(0, 20²)).
    #[test]
    fn thousand_words_with_large_scores() {
        suite::large_scores_stay_finite(Accurate, Tolerance::uniform(1e-9), 1000, 20.0);
    }
}

mod log_accurate {
    use super::*;
    spantree_conformance::stamp_suite!(LogAccurate, FLOAT, except: []);

    /// As for `Accurate`: rel/abs 1e-12 against exact rationals, n ≤ 25.
    #[test]
    fn agrees_with_exact() {
        suite::agrees_with_reference(LogAccurate, Exact, Tolerance::uniform(1e-12), 25);
    }
}

mod exact {
    use super::*;
    // Rationals have no logarithm (`Rational` is not `Transcendental`): the
    // entropies, divergences, Rényi entropies and their complex-step checks
    // do not exist on this engine.
    spantree_conformance::stamp_suite!(Exact, EXACT, except: [
        entropy, divergences, infinite_divergence, renyi_and_norms,
        information_identities, complex_step_information,
    ]);
}

mod high_precision {
    use super::*;
    // `extreme_weights`: 128 bits (38 digits) cannot hold 600 decades in one
    // column either; single-root, n = 5, seed 0 gives μ[3][2] = 0 where the
    // oracle says 1, without an error (dense LU, weights as given).
    spantree_conformance::stamp_suite!(HighPrecision::<128>, HIGH, except: [extreme_weights]);
}

mod complex {
    use super::*;
    // Weights as given (a complex perturbation must reach the Laplacian
    // untouched): `extreme_score_scales` as for `F64`; `extreme_column_scales`
    // overflows inside the inverse, a typed `NotFinite`
    // (`complex_marginals_overflow_is_typed` below).
    spantree_conformance::stamp_suite!(Complex, FLOAT, except: [
        extreme_weights, extreme_score_scales, extreme_column_scales,
    ]);
}

mod naive {
    use super::*;
    spantree_conformance::stamp_suite!(Naive, NAIVE, except: [extreme_weights, extreme_score_scales]);
}

mod naive_shifted {
    use super::*;
    spantree_conformance::stamp_suite!(NaiveShifted, NAIVE, except: [extreme_weights]);
}

mod nalgebra {
    use super::*;
    spantree_conformance::stamp_suite!(Nalgebra, FLOAT, except: [extreme_weights]);

    /// As for `F64`: rel/abs 1e-12 against exact rationals, `n ≤ 30`.
    #[test]
    fn agrees_with_exact() {
        suite::agrees_with_reference(Nalgebra, Exact, Tolerance::uniform(1e-12), 30);
    }
}

/// Why `Complex` skips `extreme_column_scales`, by behaviour: it takes the
/// weights as given (a complex perturbation must reach the Laplacian
/// untouched), so column scales of `1e±290` overflow inside the inverse, and
/// the marginals are a typed `Numerical::NotFinite` instead of a NaN. The
/// case is the suite's own (single-root, `n = 2`, seed 0).
#[test]
fn complex_marginals_overflow_is_typed() {
    use spantree_bruteforce::random::{self, SplitMix64};
    use spantree_core::{Error, Graph, Model, Numerical, Rooting};
    let n = 2;
    let mut rng = SplitMix64::new(60_000 + 10 * n as u64);
    let weights = random::normal_weights(&mut rng, n, 1.0, 0.2);
    let factors: Vec<f64> = (0..=n)
        .map(|_| 10f64.powf(rng.uniform_in(-290.0, 290.0)))
        .collect();
    let scaled = random::scale_columns(&weights, &factors);
    let graph = Graph::from_weights(&random::rows(&scaled)).expect("valid weights");
    let model = Model::new(Complex, &graph, Rooting::Single).expect("model");
    assert_eq!(
        model.marginals(),
        Err(Error::Numerical(Numerical::NotFinite))
    );
    // An engine that shifts columns answers the same graph: the log-space
    // oracle's marginals to abs 1e-10 (its own error, as for `extreme`).
    let mu = Model::new(ShiftedF64, &graph, Rooting::Single)
        .and_then(|m| m.marginals())
        .expect("shifted marginals");
    let expected =
        spantree_bruteforce::marginals_from_scores(&random::scores_of(&scaled), Rooting::Single)
            .expect("a tree");
    for (a, e) in mu.as_slice().iter().zip(expected.as_slice()) {
        assert!((a - e).abs() <= 1e-10, "{a} vs {e}");
    }
}
