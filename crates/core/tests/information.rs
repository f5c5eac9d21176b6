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

/// `KL(p ‖ q) = +∞` names the first arc, in row-major order, to which `p`
/// gives mass and `q` none; `q`'s forbidden arcs where `p` has no mass do
/// not count. Models built from scores take the one-pass route.
#[test]
fn kl_names_the_first_arc_q_forbids() {
    fn kl<E: spantree_core::Engine<Scalar = f64> + Copy>(
        e: E,
        p: &Graph,
        q: &Graph,
    ) -> spantree_core::Divergence<f64> {
        let mp = Model::new(e, p, Rooting::Single).unwrap();
        mp.kl_divergence(&Model::new(e, q, Rooting::Single).unwrap())
            .unwrap()
    }
    let ninf = f64::NEG_INFINITY;
    // Single-root with one root arc (0 → 1): p puts mass on 2 → 3 and
    // 3 → 2 (each in some tree), which q forbids, and none on 0 → 2.
    let p = Graph::from_scores(&[
        [ninf, 0.5, ninf, ninf],
        [ninf, ninf, 1.0, -0.5],
        [ninf, 0.25, ninf, 2.0],
        [ninf, 1.5, 0.75, ninf],
    ])
    .unwrap();
    let q = Graph::from_scores(&[
        [ninf, 0.0, 0.0, 0.0],
        [ninf, ninf, 0.0, 0.0],
        [ninf, 0.0, ninf, ninf],
        [ninf, 0.0, ninf, ninf],
    ])
    .unwrap();
    let first = ArcRef {
        head: 2,
        dependent: 3,
        label: None,
    };
    for d in [kl(F64, &p, &q), kl(ShiftedF64, &p, &q)] {
        assert_eq!(d, spantree_core::Divergence::Infinite { arc: first });
    }
}
