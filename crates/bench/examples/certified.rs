//! How often the default engine answers from dense LU: the share of graphs
//! whose factors are certified, whose marginals pass the entry-wise test in
//! every column, whose failing columns all pass after refinement, and whose
//! marginals pass in all but a few columns, which the elimination
//! recomputes (with the mean numbers of refined and recomputed columns), for
//! `N(0, σ²)` scores and for root scores shifted down
//! (`cargo run --release -p spantree-bench --example certified [n…]`).
//!
//! With `time` first (`… --example certified time [n…]`), it times instead
//! the default engine's `ln Z` + marginals on inputs that need the
//! elimination (single-root, root scores shifted by `−40`) against the dense
//! path on the unshifted graph, median of 31 groups, and the parts of the
//! elimination: the forward pass for `ln Z` and the marginal pass alone.
//! Then, on unshifted `N(0, 2²)` graphs (10 seeds, median), the two routes
//! the share `REFINE_COLUMNS_UP_TO` chooses between: dense LU + inverse +
//! the entry-wise test + the failing columns refined (or the elimination,
//! for what still fails or when too many fail), against dense LU + the
//! elimination's marginal pass.

use spantree_bench::{normal_graph, root_shifted};
use spantree_core::{Engine, Factors, Rooting};
use spantree_faer::Accurate;

/// Median µs of the default's `ln Z` + marginals at root shift `−40` against
/// the dense path, and of the elimination's parts.
fn time(sizes: &[usize]) {
    use spantree_bench::speed::{elimination_against_dense, median_time};
    use spantree_core::elimination::{marginals, Elimination};
    println!(
        "| n | accurate, shift −40 (µs) | dense (µs) | ratio | forward (µs) | marginal pass (µs) |"
    );
    println!("|---|---|---|---|---|---|");
    for &n in sizes {
        let p = elimination_against_dense(n, -40.0, Rooting::Single, 31, 1);
        let g = root_shifted(&normal_graph(n, 2.0, 1), -40.0);
        let w = Accurate
            .prepare(&g, |&w| w)
            .expect("prepared")
            .weights()
            .clone();
        let forward = median_time(31, || Elimination::new(&w, Rooting::Single).log_partition());
        let pass = median_time(31, || {
            marginals(&w, Rooting::Single).expect("marginals")[(0, 1)]
        });
        println!(
            "| {n} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} |",
            p.first * 1e6,
            p.second * 1e6,
            p.ratio,
            forward * 1e6,
            pass * 1e6
        );
    }
    println!();
    println!("| n | rooting | dense + refined (µs) | elimination (µs) | ratio |");
    println!("|---|---|---|---|---|");
    for &n in sizes {
        for rooting in Rooting::ALL {
            let (mut tried, mut eliminated) = (Vec::new(), Vec::new());
            for seed in 0..10 {
                let g = normal_graph(n, 2.0, seed);
                let w = Accurate
                    .prepare(&g, |&w| w)
                    .expect("prepared")
                    .weights()
                    .clone();
                tried.push(median_time(11, || {
                    let f = Accurate.factorize(w.clone(), rooting);
                    f.inverse().expect("inverse");
                    f.marginals().expect("marginals")[(0, 1)]
                }));
                eliminated.push(median_time(11, || {
                    let f = Accurate.factorize(w.clone(), rooting);
                    f.ln_abs_det().1 + marginals(&w, rooting).expect("marginals")[(0, 1)]
                }));
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (a, b) = (median(&mut tried), median(&mut eliminated));
            println!(
                "| {n} | {} | {:.1} | {:.1} | {:.2} |",
                rooting.name(),
                a * 1e6,
                b * 1e6,
                a / b
            );
        }
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("time") {
        let sizes: Vec<usize> = std::env::args()
            .skip(2)
            .filter_map(|a| a.parse().ok())
            .collect();
        time(if sizes.is_empty() { &[36] } else { &sizes });
        return;
    }
    println!(
        "| n | σ | root shift | rooting | certified | dense marginals | dense, refined | dense + columns | refined columns | eliminated columns |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10, 36, 100, 200]
    } else {
        sizes
    };
    for n in sizes {
        for sigma in [1.0, 2.0, 4.0] {
            for shift in [0.0, -10.0, -40.0] {
                for rooting in Rooting::ALL {
                    let (mut certified, mut dense, mut refined, mut repaired) = (0, 0, 0, 0);
                    let (mut refined_columns, mut columns) = (0, 0);
                    let graphs = 20;
                    for seed in 0..graphs {
                        let g = root_shifted(&normal_graph(n, sigma, seed), shift);
                        let prepared = Accurate.prepare(&g, |&w| w).expect("prepared");
                        let f = Accurate.factorize(prepared.weights().clone(), rooting);
                        if f.is_certified() {
                            certified += 1;
                            f.marginals().expect("marginals");
                            refined_columns += f.refined_columns();
                            let used = f.dense_marginals_used();
                            if used && f.refined_columns() == 0 {
                                dense += 1;
                            } else if used && f.eliminated_columns() == 0 {
                                refined += 1;
                            } else if used {
                                repaired += 1;
                                columns += f.eliminated_columns();
                            }
                        }
                    }
                    println!(
                        "| {n} | {sigma} | {shift} | {} | {certified}/{graphs} | {dense}/{graphs} | {refined}/{graphs} | {repaired}/{graphs} | {:.1} | {:.1} |",
                        rooting.name(),
                        refined_columns as f64 / certified.max(1) as f64,
                        columns as f64 / repaired.max(1) as f64
                    );
                }
            }
        }
    }
}
