//! k-best: `kbest:K` for `K ∈ {1, 10, 100}` at `n ∈ {10, 36, 100}`, both
//! rootings, by Camerini et al.'s swaps (`O(n²)` per tree, `Graph::k_best`)
//! and, for comparison, by the plain partitioning scheme that decodes every
//! subproblem (`O(n³)` per tree). Scores `N(0, 1)`, one graph per `n`.
//!
//! ```sh
//! cargo bench -p spantree-bench --bench kbest
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::normal_graph;
use spantree_core::decode::kbest::k_best_arborescences_lawler;
use spantree_core::Rooting;

fn kbest(c: &mut Criterion) {
    for rooting in Rooting::ALL {
        for k in [1usize, 10, 100] {
            let mut group = c.benchmark_group(format!("kbest/{}/K={k}", rooting.name()));
            for n in [10, 36, 100] {
                let graph = normal_graph(n, 1.0, n as u64);
                group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
                    b.iter(|| g.k_best(rooting, k).unwrap())
                });
            }
            group.finish();
        }
    }
}

fn kbest_plain(c: &mut Criterion) {
    for rooting in Rooting::ALL {
        for k in [10usize, 100] {
            let mut group = c.benchmark_group(format!("kbest_plain/{}/K={k}", rooting.name()));
            for n in [36, 100] {
                let graph = normal_graph(n, 1.0, n as u64);
                group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
                    b.iter(|| {
                        k_best_arborescences_lawler(n, 1, rooting, k, |h, m, _| {
                            let s = g.values(h, m)[0];
                            (s > f64::NEG_INFINITY).then_some(s)
                        })
                        .unwrap()
                    })
                });
            }
            group.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_millis(200)).measurement_time(std::time::Duration::from_millis(800));
    targets = kbest, kbest_plain
}
criterion_main!(benches);
