//! Decoding: the maximum spanning arborescence (Chu–Liu–Edmonds, dense
//! `O(n²)`) for both rootings at `n ∈ {10, 36, 100, 200, 1000}`, and Eisner's
//! `O(n³)` best projective tree and projective `ln Z` + entropy at
//! `n ∈ {10, 36, 100}`. Scores `N(0, 1)`, one graph per `n`
//! (`normal_graph(n, 1.0, seed = n)`). The example `mst_scores` prints the
//! best tree's score on each of these graphs, which
//! `crates/bench/peers/mst_peer.py` checks a compiled peer against.
//!
//! ```sh
//! cargo bench -p spantree-bench --bench decode
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::normal_graph;
use spantree_core::decode::projective::Projective;
use spantree_core::Rooting;

fn mst(c: &mut Criterion) {
    for rooting in Rooting::ALL {
        let mut group = c.benchmark_group(format!("best_tree/{}", rooting.name()));
        for n in [10, 36, 100, 200, 1000] {
            let graph = normal_graph(n, 1.0, n as u64);
            group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
                b.iter(|| g.best_tree(rooting).unwrap())
            });
        }
        group.finish();
    }
}

fn eisner(c: &mut Criterion) {
    for rooting in Rooting::ALL {
        let mut group = c.benchmark_group(format!("best_projective_tree/{}", rooting.name()));
        for n in [10, 36, 100] {
            let graph = normal_graph(n, 1.0, n as u64);
            group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
                b.iter(|| g.best_projective_tree(rooting).unwrap())
            });
        }
        group.finish();
    }
    let mut group = c.benchmark_group("projective_log_z+entropy/single");
    for n in [10, 36, 100] {
        let graph = normal_graph(n, 1.0, n as u64);
        group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
            b.iter(|| {
                let p = Projective::new(g, Rooting::Single).unwrap();
                (p.log_partition().unwrap(), p.entropy().unwrap())
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = mst, eisner
}
criterion_main!(benches);
