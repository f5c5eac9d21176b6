//! The per-sentence speed table as one criterion group: every op on the
//! default and the dense engines at `n ∈ {10, 20, 36, 50, 100, 200}`, and in
//! the same run the bare kernels (exponentials + LU, + inverse, + 2 solves)
//! through faer and through `spantree_faer::Lu`. `spantree-report speed`
//! prints the same cells as a table with the ratios op ÷ kernel.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use spantree_bench::speed::{run_kernel, run_op, Inputs, Kernel, KernelEngine, Op, SIZES};
use spantree_faer::{Accurate, ShiftedF64, F64};

fn speed(c: &mut Criterion) {
    let mut group = c.benchmark_group("speed");
    for n in SIZES {
        let i = Inputs::new(n, 2021 + n as u64);
        for k in Kernel::ALL {
            for (name, engine) in [("faer", KernelEngine::Faer), ("lu", KernelEngine::Spantree)] {
                let id = BenchmarkId::new(format!("kernel/{}/{name}", k.name()), n);
                group.bench_with_input(id, &i, |b, i| b.iter(|| run_kernel(k, engine, i)));
            }
        }
        for op in Op::ALL {
            let id = |e: &str| BenchmarkId::new(format!("{}/{e}", op.name()), n);
            group.bench_with_input(id("accurate"), &i, |b, i| {
                b.iter(|| run_op(&Accurate, op, i))
            });
            group.bench_with_input(id("log"), &i, |b, i| b.iter(|| run_op(&ShiftedF64, op, i)));
            group.bench_with_input(id("f64"), &i, |b, i| b.iter(|| run_op(&F64, op, i)));
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_millis(200)).measurement_time(std::time::Duration::from_millis(500));
    targets = speed
}
criterion_main!(benches);
