//! Every fast algorithm against the literature's baseline for the same
//! quantity (`ln Z` by LU vs by minors, marginals by the inverse vs
//! McDonald–Satta zeroing, entropy from marginals vs Smith–Eisner, the GE
//! gradient by reverse mode vs the covariance route), single-root on
//! `ShiftedF64` at `n ∈ {10, 20, 36, 50, 80}`; then the Jacobian–vector route of
//! `Cov[r, s]` against the Hessian route as `R = S ∈ {1, 4, 16, 64}` grows at
//! `n = 36`. Sample counts are small: McDonald–Satta is `O(n⁵)`, about a
//! second per run at `n = 80`. The slopes against `n` are fitted by
//! `cargo run --release -p spantree-bench --example slopes`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::timed::{Inputs, SIZES, TIMED};
use spantree_bench::{normal_graph, sparse_features};
use spantree_core::{Model, Rooting, SecondOrder};
use spantree_faer::ShiftedF64;

fn baselines(c: &mut Criterion) {
    let inputs: Vec<(usize, Inputs)> = SIZES.iter().map(|&n| (n, Inputs::new(n, 3))).collect();
    let quantities = ["log_z", "marginals", "entropy", "grad_ge"];
    for quantity in quantities {
        let mut group = c.benchmark_group(format!("baselines/{quantity}"));
        group.sample_size(10);
        for timed in TIMED.iter().filter(|t| t.quantity == quantity) {
            for (n, input) in &inputs {
                group.bench_with_input(BenchmarkId::new(timed.name, n), input, |b, i| {
                    b.iter(|| (timed.run)(i))
                });
            }
        }
        group.finish();
    }
}

fn second_order(c: &mut Criterion) {
    let n = 36;
    let graph = normal_graph(n, 1.0, 3);
    let mut group = c.benchmark_group(format!("covariance/n={n}"));
    group.sample_size(10);
    for r in [1, 4, 16, 64] {
        let f = sparse_features(n, r, 11);
        for (name, algorithm) in [
            ("jacobian-vector", SecondOrder::JacobianVector),
            ("hessian", SecondOrder::Hessian),
        ] {
            group.bench_with_input(BenchmarkId::new(name, r), &f, |b, f| {
                b.iter(|| {
                    let model = Model::new(ShiftedF64, &graph, Rooting::Single).unwrap();
                    model.covariance(f, f, algorithm).unwrap()[(0, 0)]
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500));
    targets = baselines, second_order
}
criterion_main!(benches);
