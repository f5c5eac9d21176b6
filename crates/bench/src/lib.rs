//! # spantree-bench
//!
//! Benchmarks and reports. The criterion benches live in `benches/`:
//!
//! * `partition`: `ln Z` plus all marginals per sentence, by backend and `n`
//!   (`cargo bench -p spantree-bench --bench partition`);
//! * `gradients`: the reverse-mode gradient of the GE objective against
//!   `ln Z` plus marginals, as the number of features grows
//!   (`cargo bench -p spantree-bench --bench gradients`).
//!
//! This library holds what they share: seeded inputs that look like a
//! parser's scores. It also holds a small [`conllu`] reader.

pub mod conllu;

use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_core::{ArcFeatures, ArcRef, Graph};

/// A complete graph over `n` words with scores drawn from `N(0, σ²)`, seeded.
pub fn normal_graph(n: usize, sigma: f64, seed: u64) -> Graph {
    let mut rng = SplitMix64::new(seed);
    let s = normal_scores(&mut rng, n, sigma, 0.0);
    let rows: Vec<Vec<f64>> = (0..=n).map(|h| s.row(h).to_vec()).collect();
    Graph::from_scores(&rows).expect("generated scores are valid")
}

/// `features` sparse binary arc features: each arc fires about two of them.
pub fn sparse_features(n: usize, features: usize, seed: u64) -> ArcFeatures<f64> {
    let mut rng = SplitMix64::new(seed);
    let mut f = ArcFeatures::new(features);
    for h in 0..=n {
        for m in (1..=n).filter(|&m| m != h) {
            let values = (0..2).map(|_| (rng.below(features), 1.0)).collect();
            f.push(
                ArcRef {
                    head: h,
                    dependent: m,
                    label: None,
                },
                values,
            )
            .expect("indices are below the dimension");
        }
    }
    f
}
