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
// column) is excluded on the dense-LU engines of this crate (`Naive`,
// `NaiveShifted`, `Nalgebra`), which do not estimate their own error:
// single-root, n = 6, seed 1 gives μ[6][2] = 0 where the oracle says 1,
// without an error. Dense LU cannot hold a root weight tiny next to the
// arcs of its column (the multi-root diagonal absorbs it); the engines of
// the workspace (`F64`, `ShiftedF64`, `Complex`, `HighPrecision`) refuse
// such graphs with `Numerical::Inaccurate` from the LU's own estimate.

// `extreme_score_scales` is excluded on the engines that take weights as
// given (`F64`, `Naive`, `Complex`): a column offset of −1e4 makes every
// weight of that column e^θ = 0 in f64, so the Laplacian is singular and the
// engine says so with a typed `Numerical::Singular` (single-root, n = 1,
// seed 0) — the right answer for an unshifted engine, but not the oracle's
// value, which the test demands of every engine that accepts the graph.

mod f64 {
    use super::*;
    spantree_conformance::stamp_suite!(F64, FLOAT, except: [extreme_score_scales]);

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
    spantree_conformance::stamp_suite!(ShiftedF64, FLOAT, except: []);

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
    // `extreme_weights` runs too: 128 bits cannot hold 600 decades in one
    // column, and the LU's own estimate at 2^-128 refuses those graphs
    // (`Numerical::Inaccurate`) instead of answering μ = 0 for 1.
    spantree_conformance::stamp_suite!(HighPrecision::<128>, HIGH, except: []);
}

mod complex {
    use super::*;
    // Weights as given (a complex perturbation must reach the Laplacian
    // untouched): `extreme_score_scales` as for `F64`. Column scales 1e±290
    // run: the LU scales columns by powers of two (exact), and refuses with
    // `Numerical::Inaccurate` what its pivots cannot hold.
    spantree_conformance::stamp_suite!(Complex, FLOAT, except: [extreme_score_scales]);
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

/// The single-root graph on which `Complex` used to return wrong marginals
/// silently (`μ[0][1] = 1`: the multiplier `−1e290 / 1e290` came out `0`,
/// faer dividing through `|b|² = ∞`). Trees `0→1→2` and `0→2→1` both weigh
/// `1`, so every arc has marginal `1/2`; the scaled LU gets it.
#[test]
fn complex_is_right_on_column_scales() {
    use spantree_core::{Graph, Model, Rooting};
    let w = [[0.0, 1e290, 1e-290], [0.0, 0.0, 1e-290], [0.0, 1e290, 0.0]];
    let graph = Graph::from_weights(&w).expect("valid weights");
    let model = Model::new(Complex, &graph, Rooting::Single).expect("model");
    let mu = model.marginals().expect("marginals");
    for (h, m) in [(0, 1), (0, 2), (1, 2), (2, 1)] {
        // abs 1e-15: one LU of a 2 × 2 matrix scaled to unit columns.
        let x = mu[(h, m)];
        assert!(
            (x.re - 0.5).abs() < 1e-15 && x.im == 0.0,
            "μ[{h}][{m}] = {x}"
        );
    }
    // abs 1e-12: ln Z sums logarithms of pivots and scales near ±668,
    // each with an ulp of 1e-13.
    assert!((model.log_partition().expect("ln Z") - 2f64.ln()).abs() < 1e-12);
}
