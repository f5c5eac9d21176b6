//! Accuracy of the GE gradient `∂‖E[f] − t‖²/∂θ` in f64 (`ShiftedF64`) by the
//! two routes, reverse mode ([`Model::grad_ge_objective`]) and the
//! covariance of arc indicators with the features
//! ([`baseline::grad_ge_by_covariance`], Druck & Smith 2009), against the
//! exact rational gradient of the same inputs: the f64 weights `e^θ` that
//! the float model reads, 20 sparse binary features and f64 targets, each
//! converted exactly (`Rational::from_f64`). Single-root, random complete
//! graphs at `n ∈ {10, 20, 40}`, scores from `N(0, 1)` and `N(0, 5²)`.
//!
//! Errors per graph: norm-wise `max_e |g_e − g*_e| / max_e |g*_e|`, and the
//! worst entrywise `|g_e − g*_e| / |g*_e|` over entries with
//! `|g*_e| > 1e-8 · max |g*|`; the table gives the worst over the graphs and
//! correct bits `−log2` of it. A graph whose f64 route refuses with a typed
//! error (`ShiftedF64`'s derivative check) is counted in the `refused`
//! column and left out of that route's worst.
//!
//! ```sh
//! cargo run --release -p spantree-bench --example ge_accuracy
//! ```

use spantree_bench::sparse_features;
use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_core::{baseline, ArcFeatures, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::{Exact, Rational};
use spantree_faer::ShiftedF64;

/// Norm-wise and worst entrywise relative error of `g` against `exact`.
fn errors(g: &Matrix<f64>, exact: &Matrix<Rational>) -> (f64, f64) {
    let n1 = g.rows();
    let mut max_exact = 0.0f64;
    let mut max_diff = 0.0f64;
    let mut entries = Vec::new();
    for h in 0..n1 {
        for m in 0..n1 {
            let e = exact[(h, m)].clone();
            // The difference in exact arithmetic, rounded once.
            let diff = (Rational::from_f64(g[(h, m)]) - e.clone()).to_f64().abs();
            let e = e.to_f64().abs();
            max_exact = max_exact.max(e);
            max_diff = max_diff.max(diff);
            entries.push((diff, e));
        }
    }
    let worst = entries
        .iter()
        .filter(|(_, e)| *e > 1e-8 * max_exact)
        .map(|(d, e)| d / e)
        .fold(0.0f64, f64::max);
    (max_diff / max_exact, worst)
}

fn bits(err: f64) -> String {
    if err == 0.0 {
        "exact".into()
    } else {
        format!("{:.1}", -err.log2())
    }
}

fn main() {
    println!(
        "GE gradient in f64 (`ShiftedF64`) against the exact rational gradient; single-root, \
         20 sparse binary features, worst over the graphs.\n"
    );
    println!(
        "| n | σ | graphs | route | refused | norm-wise rel. error | bits | worst entrywise rel. error | bits |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (n, graphs) in [(10, 20), (20, 10), (40, 5)] {
        for sigma in [1.0, 5.0] {
            let mut worst = [(0.0f64, 0.0f64); 2];
            // Products the route refused with a typed error (the derivative
            // check of `ShiftedF64`), per route: counted, not compared.
            let mut refused = [0usize; 2];
            for k in 0..graphs {
                let seed = 1000 * n as u64 + 10 * sigma as u64 + k as u64;
                let mut rng = SplitMix64::new(seed);
                let scores = normal_scores(&mut rng, n, sigma, 0.0);
                // The f64 weights both models read.
                let rows: Vec<Vec<f64>> = (0..=n)
                    .map(|h| scores.row(h).iter().map(|s| s.exp()).collect())
                    .collect();
                let graph = Graph::from_weights(&rows).expect("finite positive weights");
                let features = sparse_features(n, 20, seed + 1);
                let targets: Vec<f64> = (0..20)
                    .map(|_| rng.uniform_in(0.0, n as f64 / 5.0))
                    .collect();

                let float = Model::new(ShiftedF64, &graph, Rooting::Single).expect("a valid graph");
                let reverse = float.grad_ge_objective(&features, &targets);
                let covariance = baseline::grad_ge_by_covariance(&float, &features, &targets);

                let exact = Model::new(Exact, &graph, Rooting::Single).expect("a valid graph");
                let exact_features: ArcFeatures<Rational> =
                    features.map(|&x| Rational::from_f64(x));
                let exact_targets: Vec<Rational> =
                    targets.iter().map(|&t| Rational::from_f64(t)).collect();
                let truth = exact
                    .grad_ge_objective(&exact_features, &exact_targets)
                    .expect("a tree exists");

                let routes = [&reverse, &covariance];
                for ((w, r), g) in worst.iter_mut().zip(&mut refused).zip(routes) {
                    match g {
                        Ok(g) => {
                            let (a, b) = errors(&g[0], &truth[0]);
                            *w = (w.0.max(a), w.1.max(b));
                        }
                        Err(e) => {
                            eprintln!("n = {n}, σ = {sigma}, graph {k}: refused ({e})");
                            *r += 1;
                        }
                    }
                }
                eprintln!("n = {n}, σ = {sigma}, graph {k} done");
            }
            let routes = ["reverse mode", "covariance"].iter().zip(refused);
            for ((route, refused), (norm, entry)) in routes.zip(worst) {
                println!(
                    "| {n} | {sigma} | {graphs} | {route} | {refused} | {norm:.2e} | {} | {entry:.2e} | {} |",
                    bits(norm),
                    bits(entry)
                );
            }
        }
    }
}
