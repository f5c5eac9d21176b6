//! The layouts of other libraries (`spantree_core::layout`): the same graph
//! given in each layout is the same graph, with the same `ln Z` and
//! marginals as brute-force enumeration.

use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_bruteforce::{log_partition_from_scores, marginals_from_scores};
use spantree_core::layout::{suspect, Layout};
use spantree_core::{Error, Graph, Matrix, Model, Rooting};
use spantree_faer::Accurate;

const NINF: f64 = f64::NEG_INFINITY;

fn rows_of(m: &Matrix<f64>) -> Vec<Vec<f64>> {
    (0..m.rows())
        .map(|h| (0..m.cols()).map(|j| m[(h, j)]).collect())
        .collect()
}

#[test]
fn three_layouts_give_the_same_graph_and_results() {
    for n in 1..=6 {
        let mut rng = SplitMix64::new(4_200 + n as u64);
        let scores = normal_scores(&mut rng, n, 1.0, 0.0);
        let spantree = rows_of(&scores);
        let reference = Graph::from_scores(&spantree).unwrap();
        for layout in Layout::ALL {
            // Written by hand for the layout's convention, not by the converter.
            let given: Vec<Vec<f64>> = match layout {
                Layout::Spantree => spantree.clone(),
                Layout::Supar => (0..=n)
                    .map(|d| (0..=n).map(|h| spantree[h][d]).collect())
                    .collect(),
                Layout::TorchStruct => (1..=n)
                    .map(|h| {
                        (1..=n)
                            .map(|m| {
                                if h == m {
                                    spantree[0][m]
                                } else {
                                    spantree[h][m]
                                }
                            })
                            .collect()
                    })
                    .collect(),
            };
            let rows = layout.to_spantree(&given, NINF).unwrap();
            let g = Graph::from_scores(&rows).unwrap();
            assert_eq!(g, reference, "{layout} n={n}");
            // Back to the layout: the arcs come back as given.
            let back = layout.from_spantree(&rows, 0.0).unwrap();
            for (i, row) in given.iter().enumerate() {
                for (j, &x) in row.iter().enumerate() {
                    let non_arc = match layout {
                        Layout::Spantree => j == 0 || i == j,
                        Layout::Supar => i == 0 || i == j,
                        Layout::TorchStruct => false,
                    };
                    if !non_arc {
                        assert_eq!(back[i][j], x, "{layout} n={n} [{i}][{j}]");
                    }
                }
            }
            for rooting in Rooting::ALL {
                let model = Model::new(Accurate, &g, rooting).unwrap();
                // Oracle: enumeration of every tree of the spantree-layout matrix.
                let want = log_partition_from_scores(&scores, rooting);
                // Tolerance: ln Z is O(n) and Accurate keeps ≥ 47 bits.
                assert!((model.log_partition().unwrap() - want).abs() < 1e-12);
                let mu = model.marginals().unwrap();
                let want = marginals_from_scores(&scores, rooting).unwrap();
                for h in 0..=n {
                    for m in 0..=n {
                        assert!((mu[(h, m)] - want[(h, m)]).abs() < 1e-12);
                    }
                }
            }
        }
    }
}

#[test]
fn labeled_cells_convert_as_units() {
    let torch = vec![
        vec![vec![0.5, 0.1], vec![2.0, -1.0]],
        vec![vec![1.0, 0.0], vec![-0.5, 0.25]],
    ];
    let rows = Layout::TorchStruct.to_spantree(&torch, vec![]).unwrap();
    assert_eq!(rows[0][1], vec![0.5, 0.1]); // root → 1: torch [0][0]
    assert_eq!(rows[0][2], vec![-0.5, 0.25]); // root → 2: torch [1][1]
    assert_eq!(rows[1][2], vec![2.0, -1.0]);
    assert_eq!(rows[2][1], vec![1.0, 0.0]);
    // The empty fill of the non-arcs is accepted: non-arc cells are ignored.
    let g = Graph::from_labeled_scores(&rows).unwrap();
    assert_eq!(g.labels(), 2);
}

#[test]
fn shapes_are_checked_in_the_layout_given() {
    assert_eq!(
        Layout::Supar.to_spantree(&[vec![0.0, 1.0], vec![2.0]], 0.0),
        Err(Error::Shape {
            row: 1,
            found: 1,
            expected: 2
        })
    );
    assert_eq!(
        Layout::TorchStruct.to_spantree::<f64, Vec<f64>>(&[], 0.0),
        Err(Error::Empty)
    );
    // One word in torch-struct's layout is a 1×1 matrix: its root score.
    let rows = Layout::TorchStruct.to_spantree(&[[3.0]], NINF).unwrap();
    assert_eq!(Graph::from_scores(&rows).unwrap().n(), 1);
}

#[test]
fn names_round_trip() {
    for layout in Layout::ALL {
        assert_eq!(layout.name().parse::<Layout>(), Ok(layout));
    }
    assert!("conll".parse::<Layout>().is_err());
}

#[test]
fn other_layouts_read_as_spantree_are_suspected() {
    let mut rng = SplitMix64::new(77);
    let scores = rows_of(&normal_scores(&mut rng, 4, 1.0, 0.0));
    // Spantree's own layout with masked non-arcs, or zeros there: no suspicion.
    assert_eq!(suspect(&scores), None);
    let zeros: Vec<Vec<f64>> = scores
        .iter()
        .enumerate()
        .map(|(h, r)| {
            r.iter()
                .enumerate()
                .map(|(m, &x)| if m == 0 || m == h { 0.0 } else { x })
                .collect()
        })
        .collect();
    assert_eq!(suspect(&zeros), None);
    // SuPar's layout (row 0 masked, root scores in column 0).
    let supar = Layout::Supar.from_spantree(&scores, NINF).unwrap();
    assert_eq!(suspect(&supar).map(|s| s.0), Some(Layout::Supar));
    // torch-struct's (root scores on the diagonal).
    let torch = Layout::TorchStruct.from_spantree(&scores, NINF).unwrap();
    assert_eq!(suspect(&torch).map(|s| s.0), Some(Layout::TorchStruct));
}
