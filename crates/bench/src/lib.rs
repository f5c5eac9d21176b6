//! # spantree-bench
//!
//! Benchmarks and reports. The criterion benches live in `benches/`:
//!
//! * `partition`: `ln Z` plus all marginals per sentence, by backend and `n`
//!   (`cargo bench -p spantree-bench --bench partition`);
//! * `gradients`: the reverse-mode gradient of the GE objective against
//!   `ln Z` plus marginals, as the number of features grows
//!   (`cargo bench -p spantree-bench --bench gradients`);
//! * `baselines`: every fast algorithm against the literature's baseline for
//!   the same quantity at `n ∈ {10, 20, 36, 50, 80}`, and the Jacobian–vector
//!   route of the covariance against the Hessian route as `R = S` grows
//!   (`cargo bench -p spantree-bench --bench baselines`).
//!
//! * `speed`: every op per sentence on the default and the dense engines
//!   next to its bare kernels (exponentials, LU, inverse, solves), at
//!   `n ∈ {10, …, 200}` ([`speed`]; the same table with ratios and the
//!   whole-corpus time: `spantree-report speed --corpus ../shared/ud`).
//!
//! Two examples print the tables of the speed and accuracy claims:
//! `slopes` times the same algorithms with a plain loop and fits the slope
//! of `log t` against `log n`; `ge_accuracy` compares the GE gradient by
//! reverse mode and by the covariance route with the exact rational
//! gradient (`cargo run --release -p spantree-bench --example slopes`,
//! `… --example ge_accuracy`).
//!
//! This library holds what they share: seeded inputs that look like a
//! parser's scores, and the table of timed algorithms ([`timed::TIMED`]).
//! Treebanks are read with `spantree-conllu`.

/// The allocator of every benchmark, example and report of this crate (and
/// of the `spantree` command, which sets the same): mimalloc rather than
/// glibc's malloc, which hands the freed top of the heap back to the system
/// after every sentence above 128 KiB (`n ≳ 60`) and page-faults it in
/// again: at n = 100 that was 60% of a KL divergence.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod report;
pub mod speed;
pub mod timed;

use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_core::{ArcFeatures, ArcRef, Graph};

/// A complete graph over `n` words with scores drawn from `N(0, σ²)`, seeded.
pub fn normal_graph(n: usize, sigma: f64, seed: u64) -> Graph {
    let mut rng = SplitMix64::new(seed);
    let s = normal_scores(&mut rng, n, sigma, 0.0);
    let rows: Vec<Vec<f64>> = (0..=n).map(|h| s.row(h).to_vec()).collect();
    Graph::from_scores(&rows).expect("generated scores are valid")
}

/// `g` with its root scores (row `0`) moved by `shift`, its other scores as
/// they are (`−10`, `−40`: graphs whose dense LU loses its root weights).
///
/// # Panics
/// If the shifted scores are invalid (they are not, for a finite shift).
pub fn root_shifted(g: &Graph, shift: f64) -> Graph {
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

/// A checksum of every bit of the numbers fed to it, in order: the
/// examples' `digest` modes print it before and after a change meant to
/// leave the numbers alone. Not cryptographic; `O(1)` per number.
#[derive(Clone, Copy, Debug, Default)]
pub struct BitDigest(pub u64);

impl BitDigest {
    /// Mixes in each number's bits.
    pub fn eat(&mut self, xs: &[f64]) {
        for x in xs {
            self.0 = (self.0.rotate_left(7) ^ x.to_bits()).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
}
