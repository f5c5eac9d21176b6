//! What the default engine's dense marginals keep on `N(0, 2²)` graphs: the
//! fewest correct bits over all marginals `≥ 1e-300` of dense LU (`log` =
//! `ShiftedF64`) and of `accurate`, against exact rationals, both rootings,
//! with the smallest marginal, whether `accurate` answered from the dense
//! inverse, and how many of its columns were refined
//! (`cargo run --release -p spantree-bench --example dense_marginal_bits [n…]`,
//! default `n = 20 36 50 100`).

use spantree_bench::normal_graph;
use spantree_bruteforce::bits::fewest_bits;
use spantree_core::{Engine, Factors, Model, Rooting, Scalar};
use spantree_exact::Exact;
use spantree_faer::{Accurate, ShiftedF64};

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![20, 36, 50, 100]
    } else {
        sizes
    };
    println!("| n | rooting | seed | smallest μ | dense LU: fewest bits | `accurate`: fewest bits | `accurate` used the dense inverse | refined columns |");
    println!("|---|---|---|---|---|---|---|---|");
    for n in sizes {
        for (rooting, seed) in Rooting::ALL
            .into_iter()
            .flat_map(|r| (0..4).map(move |s| (r, s)))
        {
            let g = normal_graph(n, 2.0, seed);
            let exact: Vec<f64> = Model::new(Exact, &g, rooting)
                .and_then(|m| m.marginals())
                .expect("exact marginals")
                .as_slice()
                .iter()
                .map(Scalar::to_f64)
                .collect();
            let smallest = exact
                .iter()
                .filter(|&&e| e > 0.0)
                .fold(f64::INFINITY, |a, &e| a.min(e));
            let dense = Model::new(ShiftedF64, &g, rooting)
                .and_then(|m| m.marginals())
                .expect("dense marginals");
            let accurate = Model::new(Accurate, &g, rooting)
                .and_then(|m| m.marginals())
                .expect("accurate marginals");
            let prepared = Accurate.prepare(&g, |&w| w).expect("prepared");
            let f = Accurate.factorize(prepared.weights().clone(), rooting);
            f.marginals().expect("marginals");
            println!(
                "| {n} | {} | {seed} | {smallest:.1e} | {:.1} | {:.1} | {} | {} |",
                rooting.name(),
                fewest_bits(dense.as_slice(), &exact),
                fewest_bits(accurate.as_slice(), &exact),
                f.dense_marginals_used(),
                f.refined_columns()
            );
        }
    }
}
