//! Times every fast algorithm and its literature baseline with a plain loop
//! (the median of `k` runs) at `n ∈ {10, 20, 36, 50, 80}`, fits the slope of
//! `log t` against `log n` by least squares, and prints markdown tables:
//! the slopes (over all sizes, and over the three largest where lower-order
//! terms weigh less), the speed-ups at each `n`, and the Jacobian–vector
//! against the Hessian route of `Cov[r, s]` as `R = S` grows at `n = 36`.
//!
//! ```sh
//! cargo run --release -p spantree-bench --example slopes
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use spantree_bench::timed::{log_log_slope, Inputs, SIZES, TIMED};
use spantree_bench::{normal_graph, sparse_features};
use spantree_core::{Model, Rooting, SecondOrder};
use spantree_faer::ShiftedF64;

/// The median wall time of `f`: at least 3 runs, more (up to 25) while the
/// total stays under 0.3 s.
fn median(mut f: impl FnMut() -> f64) -> Duration {
    black_box(f()); // warm-up: caches, page faults
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (times.len() < 25 && start.elapsed() < Duration::from_millis(300)) {
        let t = Instant::now();
        black_box(f());
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> String {
    let x = d.as_secs_f64() * 1e3;
    if x < 1.0 {
        format!("{x:.3}")
    } else if x < 100.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.0}")
    }
}

fn main() {
    let inputs: Vec<Inputs> = SIZES.iter().map(|&n| Inputs::new(n, 3)).collect();
    let times: Vec<Vec<Duration>> = TIMED
        .iter()
        .map(|timed| {
            eprintln!("timing {}", timed.name);
            inputs.iter().map(|i| median(|| (timed.run)(i))).collect()
        })
        .collect();

    println!("Single-root, `ShiftedF64`, N(0, 1) scores; median wall time in ms.\n");
    let sizes: Vec<String> = SIZES.iter().map(|n| format!("n = {n}")).collect();
    println!(
        "| algorithm | theory | slope (all n) | slope (n ≥ 36) | {} |",
        sizes.join(" | ")
    );
    println!("|---|---|---|---|{}", "---|".repeat(SIZES.len()));
    for (timed, t) in TIMED.iter().zip(&times) {
        let points: Vec<(f64, f64)> = SIZES
            .iter()
            .zip(t)
            .map(|(&n, d)| (n as f64, d.as_secs_f64()))
            .collect();
        let cells: Vec<String> = t.iter().map(|&d| ms(d)).collect();
        println!(
            "| {}{} | {} | {:.2} | {:.2} | {} |",
            timed.name,
            if timed.baseline && timed.quantity != "covariance" {
                " (baseline)"
            } else {
                ""
            },
            timed.exponent,
            log_log_slope(&points),
            log_log_slope(&points[2..]),
            cells.join(" | ")
        );
    }

    println!("\nSpeed-up of the fast algorithm over its baseline (time ratio).\n");
    println!("| quantity | {} |", sizes.join(" | "));
    println!("|---|{}", "---|".repeat(SIZES.len()));
    for (i, fast) in TIMED.iter().enumerate().filter(|(_, t)| !t.baseline) {
        if let Some(j) = TIMED
            .iter()
            .position(|t| t.baseline && t.quantity == fast.quantity)
        {
            let cells: Vec<String> = times[i]
                .iter()
                .zip(&times[j])
                .map(|(f, b)| format!("{:.1}×", b.as_secs_f64() / f.as_secs_f64()))
                .collect();
            println!("| {} | {} |", fast.quantity, cells.join(" | "));
        }
    }

    // At n ≤ 80 the O(n²) work around a vectorised O(n³) LU still weighs:
    // the fast algorithms again at larger n, where the cubic term dominates.
    let large = [80, 160, 320, 640];
    let inputs: Vec<Inputs> = large.iter().map(|&n| Inputs::new(n, 3)).collect();
    let large_sizes: Vec<String> = large.iter().map(|n| format!("n = {n}")).collect();
    println!("\nThe fast algorithms at larger n (ms).\n");
    println!(
        "| algorithm | theory | slope (all) | slope (last doubling) | {} |",
        large_sizes.join(" | ")
    );
    println!("|---|---|---|---|{}", "---|".repeat(large.len()));
    for timed in TIMED.iter().filter(|t| !t.baseline) {
        eprintln!("timing {} at large n", timed.name);
        let t: Vec<Duration> = inputs.iter().map(|i| median(|| (timed.run)(i))).collect();
        let points: Vec<(f64, f64)> = large
            .iter()
            .zip(&t)
            .map(|(&n, d)| (n as f64, d.as_secs_f64()))
            .collect();
        let cells: Vec<String> = t.iter().map(|&d| ms(d)).collect();
        println!(
            "| {} | {} | {:.2} | {:.2} | {} |",
            timed.name,
            timed.exponent,
            log_log_slope(&points),
            log_log_slope(&points[points.len() - 2..]),
            cells.join(" | ")
        );
    }

    let n = 36;
    let graph = normal_graph(n, 1.0, 3);
    println!("\n`Cov[r, s]` with `r = s` ({n} words, each arc fires about two of the R binary features); ms.\n");
    println!("| R = S | jacobian-vector | hessian | auto | auto's time is nearer |");
    println!("|---|---|---|---|---|");
    for r in [1, 4, 16, 64, 256, 1024] {
        let f = sparse_features(n, r, 11);
        let time = |algorithm| {
            median(|| {
                let model = Model::new(ShiftedF64, &graph, Rooting::Single).expect("a valid graph");
                model.covariance(&f, &f, algorithm).expect("a tree exists")[(0, 0)]
            })
        };
        let (jv, h) = (
            time(SecondOrder::JacobianVector),
            time(SecondOrder::Hessian),
        );
        let auto = time(SecondOrder::Auto);
        let picks = if (auto.as_secs_f64() - jv.as_secs_f64()).abs()
            < (auto.as_secs_f64() - h.as_secs_f64()).abs()
        {
            "jacobian-vector"
        } else {
            "hessian"
        };
        println!("| {r} | {} | {} | {} | {picks} |", ms(jv), ms(h), ms(auto));
    }
}
