//! Where the accurate default's slow routes spend their time: loops one
//! route's work for a profiler or a stopwatch.
//!
//! `cargo run --release -p spantree-bench --example route_profile -- MODE [ARGS]`
//!
//! * `multi N SECONDS`: `ln Z` + marginals on `accurate`, the speed table's
//!   `N(0, 2²)` graph with multi-root root scores shifted by −40 (the
//!   elimination route), looped for `SECONDS`; prints the median time of
//!   the op and of its parts (dense LU, forward elimination, marginal pass).
//! * `corpus DIR SECONDS [ROUTE]`: entropy + gradient on `accurate` for the
//!   UD sentences whose route (`spantree_bench::speed::route_of`) is `ROUTE`
//!   (`dense`, `marginals`, `product`, `uncertified`; all by default),
//!   looped for `SECONDS`; prints the sentences per route and the time per
//!   pass.

use std::time::{Duration, Instant};

use spantree_bench::speed::{corpus_graphs, median_time, route_of, Inputs, Route};
use spantree_core::elimination::{checked_marginals, Elimination};
use spantree_core::{Engine, Graph, Model, Rooting};

fn op(g: &Graph, rooting: Rooting) -> f64 {
    let m = Model::new(spantree_faer::Accurate, g, rooting).expect("valid graph");
    m.log_partition().expect("ln Z") + m.marginals().expect("marginals")[(0, 1)]
}

fn entropy_and_gradient(g: &Graph) -> f64 {
    let m = Model::new(spantree_faer::Accurate, g, Rooting::Single).expect("valid");
    m.entropy().expect("entropy") + m.grad_entropy().expect("gradient")[0][(0, 1)]
}

fn multi(n: usize, seconds: f64) {
    let g = Inputs::new(n, 2021).with_root_shift(-40.0).p;
    let weights = spantree_faer::Accurate
        .prepare(&g, |&w| w)
        .expect("prepared")
        .weights()
        .clone();
    let whole = median_time(21, || op(&g, Rooting::Multi));
    let forward = median_time(21, || {
        Elimination::keeping_half(&weights, Rooting::Multi).log_partition()
    });
    let pass = median_time(21, || {
        checked_marginals(&weights, Rooting::Multi)
            .expect("marginals")
            .0[(0, 1)]
    });
    let e = Elimination::keeping_half(&weights, Rooting::Multi);
    let from_head = median_time(21, || {
        e.checked_marginals(&weights).expect("marginals").0[(0, 1)]
    });
    println!(
        "n = {n}: accurate ln Z + marginals {:.1} µs; forward (keeping half) {:.1} µs; \
         whole marginal pass {:.1} µs; marginal pass from the head {:.1} µs",
        whole * 1e6,
        forward * 1e6,
        pass * 1e6,
        from_head * 1e6
    );
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        std::hint::black_box(op(&g, Rooting::Multi));
    }
}

fn corpus(dir: &str, seconds: f64, route: Option<&str>) {
    let (graphs, _) = corpus_graphs(std::path::Path::new(dir), 2021).expect("corpus");
    let wanted = |r: Route| match route {
        None => true,
        Some("dense") => r == Route::Dense,
        Some("marginals") => r == Route::MarginalsEliminated,
        Some("product") => r == Route::ProductEliminated,
        Some("uncertified") => r == Route::NotCertified,
        Some(other) => panic!("unknown route {other}"),
    };
    let mut counts = [0usize; Route::ALL.len()];
    let picked: Vec<Graph> = graphs
        .into_iter()
        .filter(|g| {
            let r = route_of(g);
            counts[Route::ALL.iter().position(|&x| x == r).expect("a route")] += 1;
            wanted(r)
        })
        .collect();
    for (r, c) in Route::ALL.iter().zip(counts) {
        println!("{}: {c} sentences", r.name());
    }
    let pass = median_time(5, || picked.iter().map(entropy_and_gradient).sum::<f64>());
    println!(
        "{} sentences picked: {:.2} ms a pass",
        picked.len(),
        pass * 1e3
    );
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        std::hint::black_box(picked.iter().map(entropy_and_gradient).sum::<f64>());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match arg(0) {
        Some("multi") => multi(
            arg(1).and_then(|s| s.parse().ok()).unwrap_or(36),
            arg(2).and_then(|s| s.parse().ok()).unwrap_or(0.0),
        ),
        Some("corpus") => corpus(
            arg(1).expect("corpus directory"),
            arg(2).and_then(|s| s.parse().ok()).unwrap_or(0.0),
            arg(3),
        ),
        _ => eprintln!("usage: route_profile multi [N] [SECONDS] | corpus DIR [SECONDS] [ROUTE]"),
    }
}
