//! Sampling: time for one model, its sampler and `k ∈ {1, 100}`
//! samples (one factorisation shared by the `k` samples) at
//! `n ∈ {10, 36, 100}`, both rootings, each sampler (`auto`, `marginal`,
//! `wilson`). Scores `N(0, 1)`, one graph per `n`. Prints `E[T]`, the expected walk steps,
//! from which the constants of the automatic choice were measured.
//!
//! ```sh
//! cargo bench -p spantree-bench --bench sample
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::normal_graph;
use spantree_core::decode::sample::{rng, Method};
use spantree_core::{Model, Rooting};
use spantree_faer::Accurate;

fn sampling(c: &mut Criterion) {
    for rooting in Rooting::ALL {
        for (name, method) in [
            ("auto", Method::Auto),
            ("marginal", Method::Marginal),
            ("wilson", Method::Wilson),
        ] {
            for k in [1usize, 100] {
                let mut group =
                    c.benchmark_group(format!("samples/{}/{name}/k={k}", rooting.name()));
                for n in [10, 36, 100] {
                    let graph = normal_graph(n, 1.0, n as u64);
                    let model = Model::new(Accurate, &graph, rooting).unwrap();
                    let s = model.sampler(method).unwrap();
                    eprintln!(
                        "{} n = {n}: auto picks {:?}, E[T] = {:.0}",
                        rooting.name(),
                        model.sampler(Method::Auto).unwrap().method(),
                        s.expected_walk_steps()
                            .min(model.sampler(Method::Wilson).unwrap().expected_walk_steps())
                    );
                    group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
                        b.iter(|| {
                            let model = Model::new(Accurate, g, rooting).unwrap();
                            let sampler = model.sampler(method).unwrap();
                            sampler.samples(k, &mut rng(1, 0)).unwrap()
                        })
                    });
                }
                group.finish();
            }
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_millis(200)).measurement_time(std::time::Duration::from_millis(800));
    targets = sampling
}
criterion_main!(benches);
