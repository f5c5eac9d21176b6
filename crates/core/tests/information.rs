//! Information quantities: what is the core's own business (typed errors
//! for bad parameters, an overflowing `Z`). Every value and gradient is
//! checked against brute force and complex step on every engine in the
//! conformance crate (`spantree-conformance`, `quantities`).

use spantree_core::{ArcFeatures, ArcRef, Graph, Model, Rooting};
use spantree_faer::{ShiftedF64, F64};

#[test]
fn bad_parameters_are_typed_errors() {
    let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap();
    let m = Model::new(F64, &g, Rooting::Multi).unwrap();
    // α = ∞ is the min-entropy (tests/decode.rs); −∞ is not an order.
    for alpha in [-1.0, f64::NAN, f64::NEG_INFINITY] {
        assert!(matches!(
            m.renyi_entropy(alpha),
            Err(spantree_core::Error::Parameter { .. })
        ));
    }
    assert!(matches!(
        m.lp_norm(0.0),
        Err(spantree_core::Error::Parameter { .. })
    ));
    assert!(matches!(
        m.expected_attachment(&[0], None),
        Err(spantree_core::Error::Mismatch { .. })
    ));
    // A self-loop as the reference head of word 1.
    assert!(matches!(
        m.expected_attachment(&[1, 0], None),
        Err(spantree_core::Error::NoSuchArc { .. })
    ));
    let f = ArcFeatures::<f64>::new(2);
    assert!(matches!(
        m.ge_objective(&f, &[1.0]),
        Err(spantree_core::Error::Mismatch { .. })
    ));
    let mut bad = ArcFeatures::new(1);
    assert!(matches!(
        bad.push(
            ArcRef {
                head: 0,
                dependent: 1,
                label: None
            },
            vec![(1, 1.0)]
        ),
        Err(spantree_core::Error::FeatureIndex { .. })
    ));
    bad.push(
        ArcRef {
            head: 0,
            dependent: 3,
            label: None,
        },
        vec![(0, 1.0)],
    )
    .unwrap();
    assert!(matches!(
        m.expect_additive(&bad),
        Err(spantree_core::Error::NoSuchArc { .. })
    ));
}

#[test]
fn an_overflowing_partition_is_a_typed_error_not_infinity() {
    // Every arc score 800: Z = Σ_d e^{800 n} overflows f64, ln Z does not
    // (identity: ln Z = 800 n + ln #trees, Cayley: #trees = 3^1 for n = 2 multi-root).
    let ninf = f64::NEG_INFINITY;
    let g = Graph::from_scores(&[
        [ninf, 800.0, 800.0],
        [ninf, ninf, 800.0],
        [ninf, 800.0, ninf],
    ])
    .unwrap();
    let m = Model::new(ShiftedF64, &g, Rooting::Multi).unwrap();
    assert!((m.log_partition().unwrap() - (1600.0 + 3f64.ln())).abs() < 1e-12 * 1600.0);
    assert_eq!(
        m.partition().unwrap_err(),
        spantree_core::Error::Numerical(spantree_core::Numerical::NotFinite)
    );
}
