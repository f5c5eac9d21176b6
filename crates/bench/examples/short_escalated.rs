//! The short sentences whose entropy gradient `Accurate` escalates to the
//! elimination (route `product eliminated`, `spantree_bench::speed::route_of`)
//! against the short sentences of the dense route: entropy + gradient on
//! `Accurate`, per sentence.
//!
//! `cargo run --release -p spantree-bench --example short_escalated -- DIR MODE [ARGS]`
//! (`DIR` the UD corpus, one subdirectory of `.conllu` files per treebank):
//!
//! * `time [MOST]`: the sentences of at most `MOST` words (default 10) per
//!   route, and the median time (21 groups) of one pass over each route's
//!   sentences: per sentence, escalated against dense, and their ratio;
//!   then, for the escalated sentences, the elimination's product alone
//!   (`Eliminated::new` + `marginals_vjp` of the entropy seed `−θ`).
//! * `loop SECONDS [ROUTE] [MOST]`: entropy + gradient over the sentences of
//!   `ROUTE` (`product`, the default, or `dense`) looped for `SECONDS` (for
//!   `perf record`).
//! * `count PASSES [ROUTE] [MOST]`: `PASSES` passes (for
//!   `valgrind --tool=callgrind`: run it with `0` too and subtract; divide
//!   by the passes and the sentences).
//! * `digest [ROUTE] [MOST]`: a checksum of every bit of the entropy
//!   gradients of the sentences of `ROUTE`.
//!
//! Measured (callgrind, `valgrind --tool=callgrind
//! --toggle-collect='*entropy_and_gradient*' … short_escalated DIR count 1
//! product 10`, and `… count 1 dense 10`; `main` at `c11b088`, seed 2021):
//! the 1,705 escalated sentences of at most 10 words (5.8 on average) cost
//! 163k instructions each, the 544 dense ones (6.3 words) 50.7k. Of the
//! 163k, the elimination's product driver (`Eliminated::sized_vjp`) takes
//! 97k: its `f64` marginal pass 39k on average (the whole pass, 50k, run
//! for the 637 sentences whose dense marginals were certified, only to
//! centre the seed; the other 1,068 need it for their marginals anyway),
//! the product on dual numbers 59k, its running estimate 10.5k, the
//! centring 4.9k; the dense product spent before the escalation (sandwich,
//! glue, its estimate, its centring) about 15k. At these sizes the
//! elimination's arithmetic is a small part of its cost: about 16 steps per
//! pass at `n = 6`, each about 1.3k instructions of loop and bookkeeping
//! for a few dozen multiply-adds, plus the divide and conquer's branches.
//! The trims of branch `short13` (same bits, `digest` unchanged) took the
//! escalated pass from 277.4M to 272.0M instructions (−1.9%; the `count 1
//! product 10` pass, with the `mimalloc` allocator the bench links).
//! Branch `elim13` (`main` at `47d0253`: 274.4M, 161k per sentence): the
//! elimination's per-step loops trimmed (same bits), 267.5M; then the
//! certified dense marginals handed to the elimination's product (no `f64`
//! marginal pass for the 637 sentences whose dense marginals were
//! certified), 237.8M (139k per sentence, −13% in all); `digest product
//! 1000` unchanged (`1d0d0c4f2238ad7c`, 2,017 sentences).
//! Branch `base13` (`main` at `006a75a`: 238.0M, 139.6k per sentence; the
//! dense route 28.4M, 52.3k): the running estimate's logarithms only near
//! its worst entry (`Accuracy::of`), 234.8M; the divide and conquer's
//! two-word subgraphs in locals (`elimination::gradient_pair`: 4 of the 16
//! steps at `n = 6`, no graph copy, reduction or recursion) and no block
//! sweep onto a single word, 213.9M; row `k`, column `k` and the block's
//! rows read in place instead of copied, 211.2M; the product's outputs and
//! `nearly_certain` without `Matrix` indexing or a needless pass, 210.7M
//! (123.5k per sentence, −11.5%; escalated ÷ dense 2.67 → 2.36 in
//! instructions). Same bits: `digest product 10` `240ff34ae23f4ae8`,
//! `digest dense 10` `aa4e322d66440d47`, `digest product 1000`
//! `1d0d0c4f2238ad7c` and `elimination_ratio -- digest`
//! `2886a592b72e675f`, unchanged. Wall time (`time 10`, load average 7 on
//! 2 cores, two alternated runs each): the product alone 21.6–21.9 µs on
//! `main`, 17.0–18.0 µs on the branch; the whole escalated gradient moved
//! within the noise.

use std::hint::black_box;
use std::time::{Duration, Instant};

use spantree_bench::speed::{corpus_graphs, median_time, route_of, score_matrix_of, Route};
use spantree_core::{Eliminated, Engine, Factors, Graph, Matrix, Model, Rooting};
use spantree_faer::Lu;

#[inline(never)]
fn entropy_and_gradient(g: &Graph) -> f64 {
    let m = Model::new(spantree_faer::Accurate, g, Rooting::Single).expect("valid");
    m.entropy().expect("entropy") + m.grad_entropy().expect("gradient")[0][(0, 1)]
}

/// The elimination's product alone: the prepared weights, the entropy seed
/// `−θ` (zero off the arcs), a fresh elimination and its product.
fn product_alone(w: &Matrix<f64>, seed: &Matrix<f64>) -> f64 {
    let e = Eliminated::<f64, Lu>::new(w.clone(), Rooting::Single, Lu::new);
    e.marginals_vjp(seed).expect("product")[(0, 1)]
}

fn weights_and_seed(g: &Graph) -> (Matrix<f64>, Matrix<f64>) {
    let w = spantree_faer::Accurate
        .prepare(g, |&w| w)
        .expect("prepared")
        .weights()
        .clone();
    let s = score_matrix_of(g);
    let seed = s.map(|&x| if x.is_finite() { -x } else { 0.0 });
    (w, seed)
}

fn pick(graphs: &[Graph], route: Route, most: usize) -> Vec<Graph> {
    graphs
        .iter()
        .filter(|g| g.n() <= most && route_of(g) == route)
        .cloned()
        .collect()
}

fn route_named(name: Option<&str>) -> Route {
    match name {
        None | Some("product") => Route::ProductEliminated,
        Some("dense") => Route::Dense,
        Some(other) => panic!("unknown route {other}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let dir = arg(0).expect("corpus directory");
    let (graphs, _) = corpus_graphs(std::path::Path::new(dir), 2021).expect("corpus");
    let pass = |gs: &[Graph]| gs.iter().map(entropy_and_gradient).sum::<f64>();
    match arg(1) {
        Some("time") => {
            let most = arg(2).and_then(|s| s.parse().ok()).unwrap_or(10);
            let escalated = pick(&graphs, Route::ProductEliminated, most);
            let dense = pick(&graphs, Route::Dense, most);
            let words = |gs: &[Graph]| gs.iter().map(Graph::n).sum::<usize>() as f64 / gs.len() as f64;
            let inputs: Vec<_> = escalated.iter().map(weights_and_seed).collect();
            let (mut te, mut td, mut tp) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..3 {
                te.push(median_time(7, || pass(&escalated)) / escalated.len() as f64);
                td.push(median_time(7, || pass(&dense)) / dense.len() as f64);
                tp.push(
                    median_time(7, || {
                        inputs.iter().map(|(w, s)| product_alone(w, s)).sum::<f64>()
                    }) / escalated.len() as f64,
                );
            }
            let median = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (te, td, tp) = (median(te), median(td), median(tp));
            println!(
                "≤ {most} words: escalated {} sentences ({:.1} words) {:.2} µs each; dense {} ({:.1} words) {:.2} µs; escalated ÷ dense {:.2}; elimination product alone {:.2} µs",
                escalated.len(),
                words(&escalated),
                te * 1e6,
                dense.len(),
                words(&dense),
                td * 1e6,
                te / td,
                tp * 1e6
            );
        }
        Some("loop") => {
            let seconds: f64 = arg(2).and_then(|s| s.parse().ok()).unwrap_or(10.0);
            let most = arg(4).and_then(|s| s.parse().ok()).unwrap_or(10);
            let picked = pick(&graphs, route_named(arg(3)), most);
            let end = Instant::now() + Duration::from_secs_f64(seconds);
            while Instant::now() < end {
                black_box(pass(&picked));
            }
        }
        Some("count") => {
            let passes: usize = arg(2).and_then(|s| s.parse().ok()).unwrap_or(1);
            let most = arg(4).and_then(|s| s.parse().ok()).unwrap_or(10);
            let picked = pick(&graphs, route_named(arg(3)), most);
            let mut out = 0.0;
            for _ in 0..passes {
                out += black_box(pass(&picked));
            }
            println!("{} sentences, {out}", picked.len());
        }
        Some("digest") => {
            // Every bit of every gradient entry of the chosen sentences, as
            // one checksum (for a change meant to leave the numbers alone).
            let most = arg(3).and_then(|s| s.parse().ok()).unwrap_or(10);
            let picked = pick(&graphs, route_named(arg(2)), most);
            let mut digest = spantree_bench::BitDigest::default();
            for g in &picked {
                let m = Model::new(spantree_faer::Accurate, g, Rooting::Single).expect("valid");
                digest.eat(m.grad_entropy().expect("gradient")[0].as_slice());
            }
            println!("{} sentences, digest {:016x}", picked.len(), digest.0);
        }
        _ => eprintln!("usage: short_escalated DIR time [MOST] | loop SECONDS [ROUTE] [MOST] | count PASSES [ROUTE] [MOST]"),
    }
}
