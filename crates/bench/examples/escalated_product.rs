//! The cost of one escalated vector–Jacobian product: the elimination's
//! `marginals_vjp` (`Eliminated::certified_vjp`, what `accurate` and the
//! dense `f64` engines run when the accuracy check doubts dense LU), on
//! single-root graphs of the escalation zone (arc scores `N(0, 1)`, root
//! scores shifted by `−10`, the entropy seed `−θ`), against the bare kernel
//! (exponentials + LU + inverse, the faster of faer's and spantree's LU)
//! timed in the same run.
//!
//! `cargo run --release -p spantree-bench --example escalated_product -- [n…]`
//! (default `5 10 20 36`): per `n`, medians over 8 graphs of the median
//! time of 11 groups: the kernel, the elimination's marginal pass
//! (`elimination::checked_marginals`, once per factors), the product alone
//! (marginals cached), and both against the kernel; with the products
//! whose `f64` run kept fewer than `DERIVATIVE_BITS` by its estimate (those
//! are recomputed in double-double) and those run on anchored numbers.
//!
//! `… --example escalated_product -- count N PRODUCTS`: builds the factors
//! of the first graph at `N` and runs the product `PRODUCTS` times and the
//! kernel `PRODUCTS` times, for an instruction count under
//! `valgrind --tool=callgrind` (run it with `PRODUCTS = 0` too and subtract:
//! the difference over `PRODUCTS` is one product plus one kernel; the
//! `kernel` and `product` arguments, `count N PRODUCTS product`, run one
//! of them only).
//!
//! Measured (callgrind, instructions per product, 40 products minus 0, by
//! a stand-alone copy of the `count` loop linked once to `main` and once to
//! this change, glibc's allocator, weights not column-shifted; the kernel
//! by `count N 40 kernel` minus `count N 0 kernel`): before and after the
//! buffer-free glue and the presized pass buffers (same bits),
//! `n = 5`: 65.6k → 57.8k (kernel 7.6k), `n = 10`: 215k → 192k (17.9k),
//! `n = 20`: 849k → 786k (69k), `n = 36`: 3.05M → 2.87M (201k).

use std::hint::black_box;

use spantree_bench::speed::{kernel_of, median, median_time, KernelEngine};
use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_core::elimination::checked_marginals;
use spantree_core::engine::DERIVATIVE_BITS;
use spantree_core::{Eliminated, Factors, Matrix, Rooting};
use spantree_faer::Lu;

/// The scores of graph `g` at `n`: arcs `N(0, 1)`, root arcs shifted by −10.
fn scores(n: usize, g: u64) -> Matrix<f64> {
    let mut rng = SplitMix64::new(1013 + 31 * g + n as u64);
    let mut s = normal_scores(&mut rng, n, 1.0, 0.0);
    for m in 1..=n {
        s[(0, m)] -= 10.0;
    }
    s
}

/// The weights `e^θ` with every column divided by its largest weight (as
/// the shifted dense engine prepares them), and the entropy seed `−θ`.
fn weights_and_seed(s: &Matrix<f64>) -> (Matrix<f64>, Matrix<f64>) {
    let n1 = s.rows();
    let top: Vec<f64> = (0..n1)
        .map(|m| (0..n1).map(|h| s[(h, m)]).fold(f64::NEG_INFINITY, f64::max))
        .collect();
    let w = Matrix::from_fn(n1, n1, |h, m| (s[(h, m)] - top[m]).exp());
    let seed = Matrix::from_fn(n1, n1, |h, m| {
        if s[(h, m)].is_finite() {
            -s[(h, m)]
        } else {
            0.0
        }
    });
    (w, seed)
}

fn factors(w: &Matrix<f64>) -> Eliminated<f64, Lu> {
    let e = Eliminated::new(w.clone(), Rooting::Single, Lu::new);
    e.marginals().expect("a tree");
    e
}

fn kernel(s: &Matrix<f64>) -> f64 {
    kernel_of(s, KernelEngine::Spantree, true, false)
}

fn count(n: usize, products: usize, which: &str) {
    let s = scores(n, 0);
    let (w, seed) = weights_and_seed(&s);
    let e = factors(&w);
    let mut out = 0.0;
    for _ in 0..products {
        if which != "kernel" {
            out += black_box(e.marginals_vjp(black_box(&seed)).expect("product"))[(0, 1)];
        }
        if which != "product" {
            out += black_box(kernel(black_box(&s)));
        }
    }
    println!("{out}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("count") {
        let n = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
        let products = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
        let which = args.get(3).map_or("both", String::as_str);
        return count(n, products, which);
    }
    let sizes: Vec<usize> = if args.is_empty() {
        vec![5, 10, 20, 36]
    } else {
        args.iter().map(|a| a.parse().expect("n")).collect()
    };
    println!("| n | kernel | marginal pass | product | pass ÷ kernel | product ÷ kernel | below {DERIVATIVE_BITS} bits in f64 | anchored |");
    println!("|---|---|---|---|---|---|---|---|");
    for n in sizes {
        let (mut k, mut pass, mut product) = (Vec::new(), Vec::new(), Vec::new());
        let (mut wide, mut anchored) = (0, 0);
        for g in 0..8 {
            let s = scores(n, g);
            let (w, seed) = weights_and_seed(&s);
            let e = factors(&w);
            let (_, bits) = e.estimated_vjp(&seed).expect("product");
            wide += usize::from(bits < DERIVATIVE_BITS);
            let mu = e.marginals().expect("a tree");
            anchored +=
                usize::from((1..=n).any(|m| (0..=n).any(|h| mu[(h, m)] > 1.0 - 2f64.powi(-26))));
            k.push(median_time(11, || kernel(&s)));
            pass.push(median_time(11, || {
                checked_marginals(&w, Rooting::Single).map(|m| m.0[(0, 1)])
            }));
            product.push(median_time(11, || {
                e.marginals_vjp(&seed).map(|v| v[(0, 1)])
            }));
            k.push(median_time(11, || kernel(&s)));
        }
        let (k, pass, product) = (median(k), median(pass), median(product));
        println!(
            "| {n} | {:.2} µs | {:.2} µs | {:.2} µs | {:.2} | {:.2} | {wide} of 8 | {anchored} of 8 |",
            k * 1e6,
            pass * 1e6,
            product * 1e6,
            pass / k,
            product / k
        );
    }
}
