//! The `kind` strings of error records are a stable interface (the command's
//! README lists them): every library error keeps its documented name.

use spantree_api::LineError;
use spantree_core::{ArcRef, Error, NoTree, Numerical};

#[test]
fn every_library_error_has_its_documented_kind() {
    let arc = ArcRef {
        head: 0,
        dependent: 1,
        label: None,
    };
    // The names as the README's table of kinds spells them.
    let cases = [
        (Error::Empty, "empty"),
        (
            Error::Shape {
                row: 1,
                found: 2,
                expected: 3,
            },
            "shape",
        ),
        (Error::NoLabels, "no_labels"),
        (
            Error::LabelCount {
                arc,
                found: 1,
                expected: 2,
            },
            "label_count",
        ),
        (Error::NotANumber { arc, what: "score" }, "not_a_number"),
        (
            Error::Infinite {
                arc,
                what: "weight",
                value: f64::INFINITY,
            },
            "infinite",
        ),
        (
            Error::NegativeWeight { arc, value: -1.0 },
            "negative_weight",
        ),
        (Error::NonexistentArc { arc, value: 2.0 }, "nonexistent_arc"),
        (Error::Overflow { arc, score: 800.0 }, "overflow"),
        (Error::NoSuchArc { arc, n: 1 }, "no_such_arc"),
        (
            Error::FeatureIndex {
                arc,
                index: 3,
                dim: 2,
            },
            "feature_index",
        ),
        (
            Error::Mismatch {
                what: "heads",
                expected: 2,
                found: 3,
            },
            "mismatch",
        ),
        (
            Error::Parameter {
                what: "alpha",
                domain: "≥ 0",
                value: -1.0,
            },
            "parameter",
        ),
        (Error::InfiniteDivergence { arc }, "infinite_divergence"),
        (Error::Unsupported("renyi"), "unsupported"),
        (Error::NoSpanningTree(NoTree::NoRootArc), "no_spanning_tree"),
        (Error::Numerical(Numerical::NotFinite), "numerical"),
    ];
    for (error, kind) in cases {
        assert_eq!(error.kind(), kind, "{error:?}");
        let line = LineError::from(error.clone());
        assert_eq!(line.kind, kind);
        assert_eq!(line.message, error.to_string());
    }
}
