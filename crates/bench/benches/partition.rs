//! `ln Z` plus all arc marginals for one sentence: factorise, invert, read
//! off `μ`, on the default engine (`Accurate`), the dense ones and exact
//! rationals. Issue: the foundation's first bench; the README's table.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::normal_graph;
use spantree_core::{Engine, Model, Rooting};
use spantree_exact::Exact;
use spantree_faer::{Accurate, ShiftedF64, F64};

fn run<B: Engine + Copy>(c: &mut Criterion, backend: B, sizes: &[usize]) {
    let mut group = c.benchmark_group(format!("log_z+marginals/{}", backend.name()));
    for &n in sizes {
        let graph = normal_graph(n, 1.0, n as u64);
        group.bench_with_input(BenchmarkId::from_parameter(n), &graph, |b, g| {
            b.iter(|| {
                let model = Model::new(backend, g, Rooting::Single).unwrap();
                (model.log_partition().unwrap(), model.marginals().unwrap())
            })
        });
    }
    group.finish();
}

fn partition(c: &mut Criterion) {
    let sizes = [10, 20, 36, 50, 100, 200, 500];
    run(c, Accurate, &sizes);
    run(c, F64, &sizes);
    run(c, ShiftedF64, &sizes);
    run(c, Exact, &[5, 10, 20, 40]);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = partition
}
criterion_main!(benches);
