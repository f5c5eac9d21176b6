//! The generic backend suite (`spantree_bruteforce::suite`) on [`Exact`]:
//! every comparison is `==` on exact rationals ([`Tolerance::EXACT`]), so the
//! brute-force oracle, run in the same rationals, must agree to the last bit.
//! Rationals are slow: the large-`n` identities stop at `n = 25`.

use spantree_bruteforce::suite::{self, Tolerance};
use spantree_exact::Exact;

const EXACT: Tolerance = Tolerance::EXACT;
/// Largest `n` for the identities: Bareiss elimination on rationals of
/// `O(n · 53)` bits stays well under a second per model at 25.
const MAX_N: usize = 25;

macro_rules! stamp {
    ($backend:expr; $($name:ident($($arg:expr),*);)*) => {
        $(
            #[test]
            fn $name() {
                suite::$name($backend $(, $arg)*);
            }
        )*
    };
}

stamp! { Exact;
    against_brute_force(EXACT);
    labeled_against_brute_force(EXACT);
    marginals_sum_to_one(EXACT, MAX_N);
    column_scaling(EXACT, MAX_N);
    permutation(EXACT, MAX_N);
    cayley(EXACT, MAX_N);
    single_word(EXACT);
    no_spanning_tree();
    no_root_arc();
    extreme_column_scales(EXACT);
    extreme_score_scales(EXACT);
    extreme_scores(EXACT);
    extreme_weights(EXACT);
    overflow_is_typed(EXACT);
}
