//! Does the elimination order matter? Relabeling the words permutes the order
//! in which [`Accurate`] eliminates them, so running it on permuted copies of
//! one graph measures the order's effect on accuracy (correct bits against
//! exact rationals) and on time.
//!
//! `cargo run --release -p spantree-faer --example elimination_order`:
//! `n = 20, 40`, word-arc scores `N(0, 1)`, root scores `N(0, 1) + shift`,
//! both rootings, 12 seeded orders (the natural one first).

use spantree_bruteforce::bits::correct_bits as bits;
use std::time::Instant;

use spantree_bruteforce::random::{self, SplitMix64};
use spantree_core::{Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::Exact;
use spantree_faer::Accurate;

fn summary(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    format!(
        "{:.1} / {:.1} / {:.1}",
        v[0],
        v[v.len() / 2],
        v[v.len() - 1]
    )
}

fn main() {
    println!("| n | rooting | root shift | ln Z bits (min / median / max over orders) | fewest marginal bits (min / median / max) | time (ln Z + marginals) natural / mean of others |");
    println!("|---|---|---|---|---|---|");
    for n in [20, 40] {
        for rooting in Rooting::ALL {
            for shift in [0.0, -40.0, -300.0] {
                let mut rng = SplitMix64::new(4242 + n as u64);
                let mut s = random::normal_scores(&mut rng, n, 1.0, 0.0);
                for m in 1..=n {
                    s[(0, m)] = rng.normal() + shift;
                }
                let graph = Graph::from_scores(&random::rows(&s)).expect("valid scores");
                let exact = Model::new(Exact, &graph, rooting).expect("exact model");
                let log_z = exact.partition().expect("Z").ln_abs();
                let mu = exact.marginals().expect("marginals").map(Scalar::to_f64);
                let (mut z_bits, mut mu_bits, mut times) = (Vec::new(), Vec::new(), Vec::new());
                for k in 0..12 {
                    // π maps old node labels to new ones; the natural order first.
                    let p: Vec<usize> = if k == 0 {
                        (0..=n).collect()
                    } else {
                        rng.word_permutation(n)
                    };
                    let mut t = Matrix::from_fn(n + 1, n + 1, |_, _| f64::NEG_INFINITY);
                    for h in 0..=n {
                        for m in 1..=n {
                            t[(p[h], p[m])] = s[(h, m)];
                        }
                    }
                    let g = Graph::from_scores(&random::rows(&t)).expect("valid scores");
                    // The fastest of 5 runs, so the first (cold) one does not count.
                    let mut best = f64::INFINITY;
                    for _ in 0..5 {
                        let start = Instant::now();
                        let model = Model::new(Accurate, &g, rooting).expect("model");
                        let _ = model.marginals();
                        best = best.min(start.elapsed().as_secs_f64());
                    }
                    times.push(best);
                    let model = Model::new(Accurate, &g, rooting).expect("model");
                    let (z, found) = (model.log_partition(), model.marginals());
                    let (Ok(z), Ok(found)) = (z, found) else {
                        z_bits.push(0.0);
                        mu_bits.push(0.0);
                        continue;
                    };
                    z_bits.push(bits(z, log_z));
                    let mut fewest = 53.0_f64;
                    for h in 0..=n {
                        for m in 1..=n {
                            if mu[(h, m)] >= 1e-300 {
                                fewest = fewest.min(bits(found[(p[h], p[m])], mu[(h, m)]));
                            }
                        }
                    }
                    mu_bits.push(fewest);
                }
                let others = times[1..].iter().sum::<f64>() / (times.len() - 1) as f64;
                println!(
                    "| {n} | {} | {shift} | {} | {} | {:.0} µs / {:.0} µs |",
                    rooting.name(),
                    summary(z_bits),
                    summary(mu_bits),
                    times[0] * 1e6,
                    others * 1e6
                );
            }
        }
    }
}
