//! The floating-point backends against the exact one (the issue's
//! acceptance): `n ≤ 30`, `N(0, 1)` scores, both rootings.

use spantree_bruteforce::suite::{self, Tolerance};
use spantree_exact::Exact;
use spantree_faer::{ShiftedF64, F64};

// rel 1e-12 on ln Z, abs 1e-12 on marginals: the bound. One LU of a
// Laplacian of N(0, 1) scores (condition < 1e3 at n = 30); the exact
// backend's answer is correctly rounded.
const ACCEPTANCE: Tolerance = Tolerance::uniform(1e-12);

#[test]
fn f64_agrees_with_exact() {
    suite::agrees_with_reference(F64, Exact, ACCEPTANCE, 30);
}

#[test]
fn log_agrees_with_exact() {
    suite::agrees_with_reference(ShiftedF64, Exact, ACCEPTANCE, 30);
}
