//! The crashes the fuzz targets found, one regular test each (the
//! minimised input is also in `fuzz/artifacts/`, which
//! `tests/fuzz_corpus.rs` replays through the fuzz property).

use spantree_api::arrays::Padded;
use spantree_core::{Model, Rooting};
use spantree_faer::Accurate;

/// `arrays`, crash-6bac0e29: three words with scores near `f64::MAX`.
/// Every tree's score is a sum of 3 such scores, above `f64::MAX`, and
/// `ln Z` is at least the score of any tree (a sum of positive terms at
/// least as large as one of them), so `ln Z` is not representable: the
/// result must be a numerical error, not `Ok(+∞)` (which it was).
#[test]
fn scores_near_f64_max_are_a_numerical_error_not_an_infinite_log_z() {
    let big = f64::MAX;
    let scores = [
        [0.0, big, big, big],
        [0.0, 0.0, big, big],
        [0.0, big, 0.0, big],
        [0.0, big, big, 0.0],
    ];
    let flat: Vec<f64> = scores.iter().flatten().copied().collect();
    let padded = Padded::new(&[1, 4, 4, 1], &[3], false, flat.len()).expect("a valid shape");
    let graph = padded.graph(&flat, 0, 3).expect("finite scores validate");
    for rooting in [Rooting::Single, Rooting::Multi] {
        let model = Model::new(Accurate, &graph, rooting).expect("a model");
        let e = model.log_partition().expect_err("ln Z overflows f64");
        assert_eq!(e.kind(), "numerical", "{e}");
    }
    // The stored crasher through the fuzz property.
    let crasher = [
        1, 255, 255, 255, 255, 255, 255, 255, 251, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 17, 215, 200, 2,
    ];
    assert_eq!(spantree_api::check::arrays(&crasher), Ok(()));
}

/// `arrays`, `fuzz/artifacts/arrays/arrays-order-minus-1`: unlabeled
/// single-root graphs whose scores mix `-∞`, the `exp` underflow threshold
/// (`-745.2`) and small values. The best tree goes through an arc whose
/// `f64` weight `e^{θ − c_m}` underflowed in the preparation: the engines
/// returned `ln Z` without it (17.75 off), and the `accurate` engine's
/// elimination met a leading term of order −1 (a debug assertion). Now a
/// numerical error (`Numerical::Underflow`); the graph itself is checked
/// against brute force in `spantree-core`'s `tests/underflow.rs`.
#[test]
fn mixed_underflow_scores_keep_the_elimination_orders_non_negative() {
    let crasher = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/artifacts/arrays/arrays-order-minus-1"),
    )
    .expect("the stored crasher");
    assert_eq!(spantree_api::check::arrays(&crasher), Ok(()));
}
