//! Bad inputs give their typed `Error`, naming the offending arc. These are
//! properties of `spantree_core::Graph`'s constructors, the same for every
//! backend, so they run once here rather than in the per-backend suite.

use spantree_core::{ArcRef, Error, Graph};

const NINF: f64 = f64::NEG_INFINITY;

fn arc(head: usize, dependent: usize) -> ArcRef {
    ArcRef {
        head,
        dependent,
        label: None,
    }
}

/// Valid weights over 3 words, to be spoilt one cell at a time.
fn weights() -> Vec<Vec<f64>> {
    vec![
        vec![0.0, 1.0, 2.0, 0.5],
        vec![0.0, 0.0, 3.0, 1.0],
        vec![0.0, 4.0, 0.0, 2.0],
        vec![0.0, 1.5, 0.25, 0.0],
    ]
}

/// The same graph as scores.
fn scores() -> Vec<Vec<f64>> {
    weights()
        .into_iter()
        .map(|r| r.into_iter().map(f64::ln).collect())
        .collect()
}

fn with(mut rows: Vec<Vec<f64>>, h: usize, m: usize, v: f64) -> Vec<Vec<f64>> {
    rows[h][m] = v;
    rows
}

#[test]
fn valid_inputs_are_accepted() {
    assert!(Graph::from_weights(&weights()).is_ok());
    assert!(Graph::from_scores(&scores()).is_ok());
    // Zero weights and −∞ scores forbid arcs; that is not an error.
    assert!(Graph::from_weights(&with(weights(), 1, 2, 0.0)).is_ok());
    assert!(Graph::from_scores(&with(scores(), 1, 2, NINF)).is_ok());
}

#[test]
fn nan_is_rejected_with_its_arc() {
    let e = Graph::from_weights(&with(weights(), 2, 3, f64::NAN));
    assert_eq!(
        e,
        Err(Error::NotANumber {
            arc: arc(2, 3),
            what: "weight"
        })
    );
    let e = Graph::from_scores(&with(scores(), 0, 1, f64::NAN));
    assert_eq!(
        e,
        Err(Error::NotANumber {
            arc: arc(0, 1),
            what: "score"
        })
    );
}

#[test]
fn negative_weight_is_rejected_with_its_arc() {
    let e = Graph::from_weights(&with(weights(), 3, 1, -0.5));
    assert_eq!(
        e,
        Err(Error::NegativeWeight {
            arc: arc(3, 1),
            value: -0.5
        })
    );
}

#[test]
fn infinite_weights_are_rejected_with_their_arc() {
    for v in [f64::INFINITY, NINF] {
        let e = Graph::from_weights(&with(weights(), 1, 3, v));
        assert_eq!(
            e,
            Err(Error::Infinite {
                arc: arc(1, 3),
                what: "weight",
                value: v
            }),
            "weight {v}"
        );
    }
}

#[test]
fn infinite_score_is_rejected_with_its_arc() {
    let e = Graph::from_scores(&with(scores(), 2, 1, f64::INFINITY));
    assert_eq!(
        e,
        Err(Error::Infinite {
            arc: arc(2, 1),
            what: "score",
            value: f64::INFINITY
        })
    );
}

#[test]
fn wrong_shape_is_rejected_with_its_row() {
    let mut rows = weights();
    rows[2].pop();
    assert_eq!(
        Graph::from_weights(&rows),
        Err(Error::Shape {
            row: 2,
            found: 3,
            expected: 4
        })
    );
    // A missing row makes every row one too long.
    let mut rows = scores();
    rows.pop();
    assert_eq!(
        Graph::from_scores(&rows),
        Err(Error::Shape {
            row: 0,
            found: 4,
            expected: 3
        })
    );
}

#[test]
fn no_words_is_rejected() {
    assert_eq!(Graph::from_weights(&[[0.0]]), Err(Error::Empty));
    assert_eq!(
        Graph::<f64>::from_weights::<[f64; 0]>(&[]),
        Err(Error::Empty)
    );
    assert_eq!(Graph::from_scores(&[[NINF]]), Err(Error::Empty));
}

#[test]
fn nonexistent_arcs_must_be_empty() {
    // Self-loop with a non-zero weight.
    assert_eq!(
        Graph::from_weights(&with(weights(), 2, 2, 1.0)),
        Err(Error::NonexistentArc {
            arc: arc(2, 2),
            value: 1.0
        })
    );
    // Self-loop with a finite score: its weight is e^0 = 1.
    assert_eq!(
        Graph::from_scores(&with(scores(), 3, 3, 0.0)),
        Err(Error::NonexistentArc {
            arc: arc(3, 3),
            value: 1.0
        })
    );
    // An arc into the root.
    assert_eq!(
        Graph::from_weights(&with(weights(), 1, 0, 2.0)),
        Err(Error::NonexistentArc {
            arc: arc(1, 0),
            value: 2.0
        })
    );
}

#[test]
fn labeled_inputs_are_checked_per_label() {
    let cell = |v: f64| vec![v, 2.0 * v];
    let rows: Vec<Vec<Vec<f64>>> = weights()
        .into_iter()
        .map(|r| r.into_iter().map(cell).collect())
        .collect();
    assert!(Graph::from_labeled_weights(&rows).is_ok());

    let mut bad = rows.clone();
    bad[0][2][1] = -1.0;
    assert_eq!(
        Graph::from_labeled_weights(&bad),
        Err(Error::NegativeWeight {
            arc: ArcRef {
                head: 0,
                dependent: 2,
                label: Some(1)
            },
            value: -1.0
        })
    );

    let mut bad = rows.clone();
    bad[1][3].push(1.0);
    assert_eq!(
        Graph::from_labeled_weights(&bad),
        Err(Error::LabelCount {
            arc: arc(1, 3),
            found: 3,
            expected: 2
        })
    );

    let empty: Vec<Vec<Vec<f64>>> = vec![vec![vec![]; 2]; 2];
    assert_eq!(Graph::from_labeled_weights(&empty), Err(Error::NoLabels));
}
