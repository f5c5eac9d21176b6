//! The generic backend suite (`spantree_bruteforce::suite`) on [`Exact`]:
//! every comparison is `==` on exact rationals ([`Tolerance::EXACT`]), so the
//! brute-force oracle, run in the same rationals, must agree to the last bit.
//! Rationals are slow: the large-`n` identities stop at `n = 25`.

use spantree_bruteforce::suite::Tolerance;
use spantree_exact::Exact;

const EXACT: Tolerance = Tolerance::EXACT;
/// Largest `n` for the identities: Bareiss elimination on rationals of
/// `O(n · 53)` bits stays well under a second per model at 25.
const MAX_N: usize = 25;

spantree_bruteforce::stamp_suite!(Exact, small: EXACT, large: EXACT, extreme: EXACT, max_n: MAX_N, extra: [extreme_weights]);
