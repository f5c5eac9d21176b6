//! The gradient of the GE objective by reverse mode against `ln Z` plus
//! marginals, at `n ∈ {20, 50, 100}` and `F ∈ {1, 10, 100}` features: the
//! claim is a constant factor (≤ 4×) that does not grow with `F`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::{normal_graph, sparse_features};
use spantree_core::{Model, Rooting};
use spantree_faer::ShiftedF64;

fn gradients(c: &mut Criterion) {
    for n in [20, 50, 100] {
        let graph = normal_graph(n, 1.0, n as u64);
        let mut group = c.benchmark_group(format!("ge/n={n}"));
        group.bench_function("log_z+marginals", |b| {
            b.iter(|| {
                let model = Model::new(ShiftedF64, &graph, Rooting::Single).unwrap();
                (model.log_partition().unwrap(), model.marginals().unwrap())
            })
        });
        for features in [1, 10, 100] {
            let f = sparse_features(n, features, 7);
            let targets = vec![0.5; features];
            group.bench_with_input(
                BenchmarkId::new("grad_ge", features),
                &(f, targets),
                |b, (f, t)| {
                    b.iter(|| {
                        let model = Model::new(ShiftedF64, &graph, Rooting::Single).unwrap();
                        model.grad_ge_objective(f, t).unwrap()
                    })
                },
            );
        }
        group.bench_function("grad_entropy", |b| {
            b.iter(|| {
                let model = Model::new(ShiftedF64, &graph, Rooting::Single).unwrap();
                model.grad_entropy().unwrap()
            })
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = gradients
}
criterion_main!(benches);
