//! The accuracy table of the accurate backends: correct bits of `ln Z` and
//! of the marginals against exact rationals, as the root scores drop.
//!
//! `cargo run --release -p spantree-faer --example accuracy [n…]` (default
//! `n = 20 100`): word-arc scores `N(0, 1)`, root scores `N(0, 1) + shift`,
//! both rootings. For each backend: bits of `ln Z` (relative error), and the
//! fewest and the median bits over all marginals `≥ 1e-300` (relative
//! error of each). `err` marks a typed numerical error.

use spantree_bruteforce::bits::correct_bits as bits;
use spantree_bruteforce::random::{self, SplitMix64};
use spantree_core::{Engine, Graph, Model, Rooting, Scalar};
use spantree_exact::Exact;
use spantree_faer::{Accurate, LogAccurate, ShiftedF64};

fn row<B: Engine<Scalar = f64>>(
    backend: B,
    graph: &Graph,
    rooting: Rooting,
    log_z: f64,
    mu: &[f64],
) -> String {
    let model = match Model::new(backend, graph, rooting) {
        Ok(m) => m,
        Err(_) => return "err | err | err".into(),
    };
    let z = match model.log_partition() {
        Ok(z) => format!("{:.1}", bits(z, log_z)),
        Err(_) => "err".into(),
    };
    let Ok(found) = model.marginals() else {
        return format!("{z} | err | err");
    };
    let mut b: Vec<f64> = mu
        .iter()
        .zip(found.as_slice())
        .filter(|(e, _)| **e >= 1e-300)
        .map(|(e, a)| if a.is_nan() { 0.0 } else { bits(*a, *e) })
        .collect();
    b.sort_by(f64::total_cmp);
    format!("{z} | {:.1} | {:.1}", b[0], b[b.len() / 2])
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![20, 100]
    } else {
        sizes
    };
    println!("| n | rooting | root shift | dense LU (`log`): ln Z / μ min / μ median | `accurate` | `log-accurate` |");
    println!("|---|---|---|---|---|---|");
    for n in sizes {
        for rooting in Rooting::ALL {
            for shift in [0.0, -20.0, -40.0, -80.0, -300.0] {
                let mut rng = SplitMix64::new(31_337 + n as u64);
                let mut s = random::normal_scores(&mut rng, n, 1.0, 0.0);
                for m in 1..=n {
                    s[(0, m)] = rng.normal() + shift;
                }
                let graph = Graph::from_scores(&random::rows(&s)).expect("valid");
                let exact = Model::new(Exact, &graph, rooting).expect("exact model");
                let log_z = exact.partition().expect("Z").ln_abs();
                let mu: Vec<f64> = exact
                    .marginals()
                    .expect("marginals")
                    .as_slice()
                    .iter()
                    .map(Scalar::to_f64)
                    .collect();
                println!(
                    "| {n} | {} | {shift} | {} | {} | {} |",
                    rooting.name(),
                    row(ShiftedF64, &graph, rooting, log_z, &mu),
                    row(Accurate, &graph, rooting, log_z, &mu),
                    row(LogAccurate, &graph, rooting, log_z, &mu),
                );
            }
        }
    }
}
