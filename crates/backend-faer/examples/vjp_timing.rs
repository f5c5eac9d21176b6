//! The time of the default engine's gradients on nearly deterministic
//! graphs, where its derivatives come from the elimination: `Model::new`
//! plus `grad_entropy`, and plus the GE gradient (20 sparse binary
//! features, targets `0.5`), on `accurate`, arc and root scores uniform in
//! `±50` (both rootings) and `N(0, 1)` arcs with root scores `−20`
//! (multi-root), `n = 10, 36, 100`; medians of 11 runs on each of 5
//! graphs, then the median over the graphs; refusals counted (a refused
//! gradient is timed as the call that refuses).
//!
//! `cargo run --release -p spantree-faer --example vjp_timing`
//! (uses public API only, so the same file times an older checkout).

use spantree_bruteforce::random::{normal_scores, rows, uniform_scores, SplitMix64};
use spantree_core::{ArcFeatures, ArcRef, Graph, Model, Rooting};
use spantree_faer::Accurate;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!("| n | family | rooting | `grad_entropy` | refused | `grad_ge` | refused |");
    println!("|---|---|---|---|---|---|---|");
    for n in [10, 36, 100] {
        for (family, rooting) in [
            ("±50", Rooting::Single),
            ("±50", Rooting::Multi),
            ("N(0,1), roots −20", Rooting::Multi),
        ] {
            let (mut entropy, mut ge) = (Vec::new(), Vec::new());
            let (mut refused_entropy, mut refused_ge) = (0, 0);
            for g in 0..5u64 {
                let mut rng = SplitMix64::new(31 + 7 * g + n as u64);
                let s = if family == "±50" {
                    uniform_scores(&mut rng, n, 50.0)
                } else {
                    let mut s = normal_scores(&mut rng, n, 1.0, 0.0);
                    for m in 1..=n {
                        s[(0, m)] -= 20.0;
                    }
                    s
                };
                let graph = Graph::from_scores(&rows(&s)).expect("valid");
                let mut f = ArcFeatures::new(20);
                for h in 0..=n {
                    for m in (1..=n).filter(|&m| m != h) {
                        let values = (0..2).map(|_| (rng.below(20), 1.0)).collect();
                        let arc = ArcRef {
                            head: h,
                            dependent: m,
                            label: None,
                        };
                        f.push(arc, values).expect("arc");
                    }
                }
                let targets = vec![0.5; 20];
                let time = |run: &dyn Fn() -> bool| {
                    let mut refused = false;
                    let t = (0..11)
                        .map(|_| {
                            let start = std::time::Instant::now();
                            refused = run();
                            start.elapsed().as_secs_f64()
                        })
                        .collect();
                    (median(t), refused)
                };
                let (t, r) = time(&|| {
                    let m = Model::new(Accurate, &graph, rooting).expect("model");
                    std::hint::black_box(m.grad_entropy()).is_err()
                });
                entropy.push(t);
                refused_entropy += usize::from(r);
                let (t, r) = time(&|| {
                    let m = Model::new(Accurate, &graph, rooting).expect("model");
                    std::hint::black_box(m.grad_ge_objective(&f, &targets)).is_err()
                });
                ge.push(t);
                refused_ge += usize::from(r);
            }
            println!(
                "| {n} | {family} | {} | {:.3} ms | {refused_entropy} of 5 | {:.3} ms | {refused_ge} of 5 |",
                rooting.name(),
                median(entropy) * 1e3,
                median(ge) * 1e3
            );
        }
    }
}
