//! How often the default engine answers from dense LU: the share of graphs
//! whose factors are certified and whose marginals pass the entry-wise test,
//! for `N(0, σ²)` scores and for root scores shifted down
//! (`cargo run --release -p spantree-bench --example certified [n…]`).

use spantree_bench::normal_graph;
use spantree_core::{Engine, Factors, Graph, Rooting};
use spantree_faer::Accurate;

fn shifted(g: &Graph, shift: f64) -> Graph {
    let n = g.n();
    let rows: Vec<Vec<f64>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|m| {
                    let v = *g.value(h, m, 0);
                    if h == 0 {
                        v + shift
                    } else {
                        v
                    }
                })
                .collect()
        })
        .collect();
    Graph::from_scores(&rows).expect("valid")
}

fn main() {
    println!("| n | σ | root shift | rooting | certified | dense marginals |");
    println!("|---|---|---|---|---|---|");
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
                    let (mut certified, mut dense) = (0, 0);
                    let graphs = 20;
                    for seed in 0..graphs {
                        let g = shifted(&normal_graph(n, sigma, seed), shift);
                        let prepared = Accurate.prepare(&g, |&w| w).expect("prepared");
                        let f = Accurate.factorize(prepared.weights().clone(), rooting);
                        if f.is_certified() {
                            certified += 1;
                            // The inverse first: the entry-wise test then runs
                            // at every n (the engine skips it above
                            // `DENSE_MARGINALS_UP_TO` words otherwise).
                            f.inverse().expect("inverse");
                            f.marginals().expect("marginals");
                            if f.dense_marginals_used() {
                                dense += 1;
                            }
                        }
                    }
                    println!(
                        "| {n} | {sigma} | {shift} | {} | {certified}/{graphs} | {dense}/{graphs} |",
                        rooting.name()
                    );
                }
            }
        }
    }
}
