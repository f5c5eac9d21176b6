//! How often `accurate` takes the single-root entropy gradient from the
//! elimination (its dense product not kept: `derivative_check`'s route),
//! and what the gradient it returns keeps against `HighPrecision<512>`.
//!
//! `cargo run --release -p spantree-faer --example escalation_count [LO HI SEEDS]`
//! (default `10 50 5`): for every `n` in `LO..=HI`, `SEEDS` graphs with
//! `N(0, 2²)` scores (the first is the speed table's graph, seed
//! `2021 + n`, as `spantree-bench`'s `Inputs::new` and `op_loop`), the
//! gradient of the entropy single-root on `Accurate`: per `n`, the graphs
//! whose product went to the elimination, the fewest norm-wise correct bits
//! of the gradient returned, and the fewest bits of an entry `≥ 1e-8` of
//! the largest. Then the totals. `n` of the speed-table graphs escalated
//! are listed.

use spantree_bruteforce::bits::{entrywise_bits, normwise_bits};
use spantree_bruteforce::random::{normal_scores, rows, SplitMix64};
use spantree_core::{Graph, Model, Rooting, Scalar};
use spantree_exact::HighPrecision;
use spantree_faer::Accurate;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (lo, hi, seeds) = match args[..] {
        [lo, hi, seeds] => (lo, hi, seeds as u64),
        _ => (10, 50, 5),
    };
    println!("| n | graphs | escalated | fewest bits | fewest entry bits |");
    println!("|---|---|---|---|---|");
    let (mut total, mut escalated, mut table) = (0, 0, Vec::new());
    let (mut fewest, mut fewest_entry) = (53.0f64, 53.0f64);
    for n in lo..=hi {
        let (mut esc, mut few, mut few_entry) = (0, 53.0f64, 53.0f64);
        for s in 0..seeds {
            let mut rng = SplitMix64::new(2021 + n as u64 + 7919 * s);
            let graph =
                Graph::from_scores(&rows(&normal_scores(&mut rng, n, 2.0, 0.0))).expect("valid");
            let model = Model::new(Accurate, &graph, Rooting::Single).expect("model");
            let Ok(found) = model.grad_entropy() else {
                println!("n = {n} graph {s}: refused");
                continue;
            };
            let up = model.factors().elimination_formed();
            esc += usize::from(up);
            if up && s == 0 {
                table.push(n);
            }
            let exact = Model::new(HighPrecision::<512>, &graph, Rooting::Single)
                .and_then(|m| m.grad_entropy())
                .expect("reference");
            let exact: Vec<f64> = exact[0].as_slice().iter().map(Scalar::to_f64).collect();
            // A NaN product keeps 0 bits.
            let b = normwise_bits(found[0].as_slice(), &exact);
            few = few.min(if b.is_nan() { 0.0 } else { b.clamp(0.0, 53.0) });
            few_entry = few_entry.min(entrywise_bits(found[0].as_slice(), &exact));
        }
        println!("| {n} | {seeds} | {esc} | {few:.1} | {few_entry:.1} |");
        total += seeds as usize;
        escalated += esc;
        fewest = fewest.min(few);
        fewest_entry = fewest_entry.min(few_entry);
    }
    println!(
        "total: {escalated} of {total} escalated; fewest {fewest:.1} bits, entries {fewest_entry:.1}; \
         speed-table graphs escalated at n = {table:?}"
    );
}
