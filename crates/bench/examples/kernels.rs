//! The bare kernels and two ops of the speed table, timed robustly on a
//! loaded machine: per cell, 300 groups of calls (each group about 50 µs),
//! and both the median and the minimum of the per-call group means (the
//! minimum is the time with the fewest interruptions by other processes).
//!
//! `cargo run --release -p spantree-bench --example kernels -- 10 36 200`
//!
//! With `crossover` as the first argument, it times instead the LU + inverse
//! of a random multi-root Laplacian on each engine (`spantree_faer::CROSSOVER`).

use std::hint::black_box;
use std::time::Instant;

use spantree_bench::speed::{run_kernel, run_op, Inputs, Kernel, KernelEngine, Op};
use spantree_core::{laplacian::laplacian, Factorization, Matrix, Rooting};
use spantree_faer::{Accurate, Lu, LuKernel, F64};

fn time(mut f: impl FnMut() -> f64) -> (f64, f64) {
    let start = Instant::now();
    black_box(f());
    let once = start.elapsed().as_secs_f64().max(1e-8);
    let per_group = ((50e-6 / once).ceil() as usize).clamp(1, 10_000);
    let mut samples: Vec<f64> = (0..300)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_group {
                black_box(f());
            }
            start.elapsed().as_secs_f64() / per_group as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 2], samples[0])
}

fn crossover() {
    let mut state = 0x5eed_u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for n in [
        24, 32, 40, 48, 56, 64, 80, 96, 128, 160, 200, 256, 320, 384, 512,
    ] {
        let w = Matrix::from_fn(n + 1, n + 1, |h, m| {
            if m == 0 || h == m {
                0.0
            } else {
                (4.0 * uniform() - 2.0).exp()
            }
        });
        let l = laplacian(&w, Rooting::Multi);
        let cell = |e: LuKernel| {
            time(|| {
                Lu::with_kernel(l.clone(), e)
                    .inverse()
                    .expect("nonsingular")[(0, 0)]
            })
        };
        let ((pm, pn), (fm, fnn)) = (cell(LuKernel::Plain), cell(LuKernel::Faer));
        println!(
            "{n} lu+inv plain {:.2} {:.2} faer {:.2} {:.2}",
            pm * 1e6,
            pn * 1e6,
            fm * 1e6,
            fnn * 1e6
        );
    }
}

/// Each phase of the bare kernel alone, for `n` words (µs, median and min).
fn phases(n: usize) {
    let i = Inputs::new(n, 2021 + n as u64);
    let scores = &i.scores;
    let n1 = n + 1;
    let best = |s: &Matrix<f64>| {
        let mut c = vec![f64::NEG_INFINITY; n1];
        for row in s.as_slice().chunks_exact(n1) {
            for (c, &x) in c.iter_mut().zip(row) {
                *c = c.max(x);
            }
        }
        c
    };
    let c = best(scores);
    let exps = |s: &Matrix<f64>, c: &[f64]| {
        let mut w = Matrix::zeros(n1, n1);
        for (out, row) in w
            .as_mut_slice()
            .chunks_exact_mut(n1)
            .zip(s.as_slice().chunks_exact(n1))
        {
            spantree_core::linalg::exp_differences(row, c, out);
        }
        w
    };
    let w = exps(scores, &c);
    let l = laplacian(&w, Rooting::Single);
    let lu = Lu::new(l.clone());
    let x = lu.inverse().expect("nonsingular");
    // `PHASE=lu` times only that phase (for `perf stat` cycle counts).
    let only = std::env::var("PHASE").ok();
    let show = |name: &str, f: &mut dyn FnMut() -> f64| {
        match only.as_deref() {
            None => {
                let (med, min) = time(f);
                println!("{n} phase/{name} {:.2} {:.2}", med * 1e6, min * 1e6)
            }
            // A fixed count of calls: `perf stat` task-clock / 10⁵ = time per call.
            Some(o) if o == name => (0..100_000).for_each(|_| {
                black_box(f());
            }),
            Some(_) => {}
        }
    };
    show("best", &mut || best(scores)[1]);
    show("exp", &mut || exps(scores, &c)[(1, 2)]);
    show("laplacian", &mut || laplacian(&w, Rooting::Single)[(0, 0)]);
    show("fused", &mut || {
        let mut out = Matrix::zeros(n, n);
        spantree_core::laplacian::exp_laplacian(scores, &c, Rooting::Single, None, &mut out);
        out[(0, 0)]
    });
    show("lu", &mut || Lu::new(l.clone()).pivots()[0]);
    show("inverse", &mut || {
        lu.inverse().expect("nonsingular")[(0, 0)]
    });
    show("solve", &mut || {
        let mut b = x.clone();
        lu.solve(&mut b).expect("nonsingular");
        b[(0, 0)]
    });
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("crossover") {
        crossover();
        return;
    }
    if std::env::args().nth(1).as_deref() == Some("phases") {
        for n in std::env::args().skip(2) {
            phases(n.parse().expect("a size"));
        }
        return;
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("a size"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10, 36, 200]
    } else {
        sizes
    };
    for n in sizes {
        let i = Inputs::new(n, 2021 + n as u64);
        for k in Kernel::ALL {
            for (name, e) in [("faer", KernelEngine::Faer), ("lu", KernelEngine::Spantree)] {
                let (med, min) = time(|| run_kernel(k, e, &i));
                println!(
                    "{n} kernel/{}/{name} {:.2} {:.2}",
                    k.name(),
                    med * 1e6,
                    min * 1e6
                );
            }
        }
        for op in [Op::LogZMarginals, Op::GradEntropy] {
            let (med, min) = time(|| run_op(&Accurate, op, &i));
            println!(
                "{n} {}/accurate {:.2} {:.2}",
                op.name(),
                med * 1e6,
                min * 1e6
            );
            let (med, min) = time(|| run_op(&F64, op, &i));
            println!("{n} {}/f64 {:.2} {:.2}", op.name(), med * 1e6, min * 1e6);
        }
    }
}
