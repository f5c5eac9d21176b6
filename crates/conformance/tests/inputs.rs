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
fn non_arc_cells_are_ignored_whatever_they_hold() {
    // The diagonal and column 0 are not arcs: any value there (a weight, a
    // zero score, a parser's mask, NaN, ±∞) gives the same graph as the
    // clean matrix, cell for cell.
    let spoilers = [1.0, 0.0, -1e9, -1e32, f64::NAN, f64::INFINITY, NINF, -3.5];
    for v in spoilers {
        for (h, m) in [(2, 2), (1, 0), (0, 0), (3, 0), (3, 3)] {
            assert_eq!(
                Graph::from_weights(&with(weights(), h, m, v)),
                Graph::from_weights(&weights()),
                "weight {v} at [{h}][{m}]"
            );
            assert_eq!(
                Graph::from_scores(&with(scores(), h, m, v)),
                Graph::from_scores(&scores()),
                "score {v} at [{h}][{m}]"
            );
        }
    }
}

#[test]
fn a_zero_initialised_score_matrix_works() {
    // A tensor made with zeros and then filled in on the arcs (what
    // `torch.zeros` plus a scorer gives): its non-arcs hold score 0.
    let zeros: Vec<Vec<f64>> = scores()
        .into_iter()
        .enumerate()
        .map(|(h, r)| {
            r.into_iter()
                .enumerate()
                .map(|(m, x)| if m == 0 || m == h { 0.0 } else { x })
                .collect()
        })
        .collect();
    let g = Graph::from_scores(&zeros).expect("zeros off the arcs are ignored");
    assert_eq!(g, Graph::from_scores(&scores()).unwrap());
    // Oracle: ln Z by enumerating every tree, against the matrix with -∞ off the arcs.
    let clean = spantree_core::Matrix::from_fn(4, 4, |h, m| scores()[h][m]);
    let model =
        spantree_core::Model::new(spantree_faer::Accurate, &g, spantree_core::Rooting::Single)
            .unwrap();
    let want =
        spantree_bruteforce::log_partition_from_scores(&clean, spantree_core::Rooting::Single);
    // Tolerance: a few ulps of ln Z ≈ 2 for a 3-word graph.
    assert!((model.log_partition().unwrap() - want).abs() < 1e-13);
}

#[test]
fn errors_report_the_score_as_given() {
    // An arc's +∞ score is reported as the score, not as a weight.
    assert_eq!(
        Graph::from_scores(&with(scores(), 1, 2, f64::INFINITY)),
        Err(Error::Infinite {
            arc: arc(1, 2),
            what: "score",
            value: f64::INFINITY
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

    // An empty cell on an arc names the arc.
    let mut bad = rows.clone();
    bad[2][3].clear();
    assert_eq!(
        Graph::from_labeled_weights(&bad),
        Err(Error::LabelCount {
            arc: arc(2, 3),
            found: 0,
            expected: 2
        })
    );

    // Non-arc cells may have any length (empty, one value, too many): ignored.
    let mut loose = rows.clone();
    loose[0][0].clear();
    loose[1][1] = vec![f64::NAN];
    loose[2][0] = vec![1.0, 2.0, 3.0];
    assert_eq!(
        Graph::from_labeled_weights(&loose),
        Graph::from_labeled_weights(&rows)
    );
}

/// The documented rule, written out arc by arc in `[h][m][ℓ]` order: the
/// first invalid value's error, else whether every arc has an allowed label.
fn by_definition(rows: &[Vec<Vec<f64>>], scores: bool) -> Result<bool, Error> {
    let n = rows.len() - 1;
    let mut complete = true;
    for (h, row) in rows.iter().enumerate() {
        for (m, cell) in row.iter().enumerate() {
            if m == 0 || m == h {
                continue;
            }
            let mut allowed = false;
            for (l, &x) in cell.iter().enumerate() {
                let arc = ArcRef {
                    head: h,
                    dependent: m,
                    label: (cell.len() > 1).then_some(l),
                };
                let what = if scores { "score" } else { "weight" };
                if x.is_nan() {
                    return Err(Error::NotANumber { arc, what });
                }
                if x == f64::INFINITY || (!scores && x == NINF) {
                    return Err(Error::Infinite {
                        arc,
                        what,
                        value: x,
                    });
                }
                if !scores && x < 0.0 {
                    return Err(Error::NegativeWeight { arc, value: x });
                }
                allowed |= if scores { x != NINF } else { x != 0.0 };
            }
            complete &= allowed;
        }
    }
    debug_assert!(n >= 1);
    Ok(complete)
}

proptest::proptest! {
    /// Random graphs of 1–7 words and 1–3 labels, each cell drawn from
    /// ordinary values, forbidding ones and invalid ones (NaN, ±∞, negative
    /// weights), non-arc cells included: the constructors' verdict (the
    /// first invalid arc's error, or completeness) is the definition's.
    #[test]
    fn the_verdict_is_the_definition(
        n in 1usize..8,
        labels in 1usize..4,
        scores in proptest::bool::ANY,
        picks in proptest::collection::vec(0usize..40, 8 * 8 * 3),
    ) {
        let pool = [0.5, 2.0, -1.5, 0.0, NINF, f64::NAN, f64::INFINITY, 3.0];
        let mut next = picks.into_iter().cycle();
        // Mostly ordinary values; one pick in five is a special one.
        let mut value = || {
            let k = next.next().unwrap_or(0);
            if k < 32 { [0.5, 2.0, 1.25, 3.0][k % 4] } else { pool[k - 32] }
        };
        let rows: Vec<Vec<Vec<f64>>> = (0..=n)
            .map(|_| (0..=n).map(|_| (0..labels).map(|_| value()).collect()).collect())
            .collect();
        let expected = by_definition(&rows, scores);
        let found = if labels == 1 {
            let flat: Vec<Vec<f64>> = rows.iter().map(|r| r.iter().map(|c| c[0]).collect()).collect();
            if scores { Graph::from_scores(&flat) } else { Graph::from_weights(&flat) }
        } else if scores {
            Graph::from_labeled_scores(&rows)
        } else {
            Graph::from_labeled_weights(&rows)
        };
        match (found, expected) {
            (Ok(g), Ok(complete)) => proptest::prop_assert_eq!(g.is_complete(), complete),
            (Err(e), Err(d)) => proptest::prop_assert_eq!(format!("{e:?}"), format!("{d:?}")),
            (found, expected) => proptest::prop_assert!(
                false,
                "found {:?}, expected {:?}",
                found.map(|g| g.is_complete()),
                expected
            ),
        }
    }
}
