//! Runs one op of the speed table in a loop, for a profiler:
//! `op_loop [OP] [N] [REPS] [ROOT_SHIFT] [ENGINE]`, e.g.
//! `cargo run --release -p spantree-bench --example op_loop -- grad_entropy 36 20000 0 log`
//! (defaults: `grad_entropy 100 1000 0 accurate`; engines `accurate`, `log`, `f64`).
//!
//! `op_loop kernel/KERNEL [N] [REPS] [ROOT_SHIFT] [faer|lu]` runs a bare
//! kernel of the table instead (e.g. `kernel/exp+lu+inv`), for callgrind
//! counts of op ÷ kernel.
//!
//! `op_loop corpus DIR [PASSES]` runs the whole-corpus pass (entropy +
//! gradient of every sentence of the treebanks under `DIR`, `accurate`, one
//! thread) `PASSES` times (default 20), e.g. under `perf record`.

use spantree_bench::speed::{run_kernel, run_op, Inputs, Kernel, KernelEngine, Op};
use spantree_core::Engine;
use spantree_faer::{Accurate, ShiftedF64, F64};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("corpus") {
        let dir = std::path::Path::new(args.get(2).expect("op_loop corpus DIR [PASSES]"));
        let passes: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20);
        let (graphs, _) = spantree_bench::speed::corpus_graphs(dir, 2021).expect("treebanks");
        let start = std::time::Instant::now();
        let mut sum = 0.0;
        for _ in 0..passes {
            sum += spantree_bench::speed::corpus_pass(&graphs, 1);
        }
        let per = start.elapsed().as_secs_f64() / passes as f64;
        println!("corpus: {:.1} ms per pass ({sum})", per * 1e3);
        return;
    }
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let shift: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let i = Inputs::new(n, 2021 + n as u64).with_root_shift(shift);
    let engine = args.get(5).map(String::as_str);
    let name = args.get(1).map_or("grad_entropy", String::as_str);
    if let Some(kernel) = name.strip_prefix("kernel/") {
        let k = Kernel::ALL
            .into_iter()
            .find(|k| k.name() == kernel)
            .expect("a kernel of the speed table");
        let e = match engine.unwrap_or("lu") {
            "faer" => KernelEngine::Faer,
            "lu" => KernelEngine::Spantree,
            other => panic!("unknown kernel engine {other}: faer or lu"),
        };
        return time(&format!("{kernel} {e:?}"), n, reps, || run_kernel(k, e, &i));
    }
    let op = Op::ALL
        .into_iter()
        .find(|o| o.name() == name)
        .expect("an op of the speed table");
    let label = |engine: &str| format!("{engine} {}", op.name());
    match engine.unwrap_or("accurate") {
        "log" => time(&label(ShiftedF64.name()), n, reps, || {
            run_op(&ShiftedF64, op, &i)
        }),
        "f64" => time(&label(F64.name()), n, reps, || run_op(&F64, op, &i)),
        "accurate" => time(&label(Accurate.name()), n, reps, || {
            run_op(&Accurate, op, &i)
        }),
        other => panic!("unknown engine {other}: accurate, log or f64"),
    }
}

/// Calls `f` `reps` times and prints the time per call (and the sum of the
/// results, so that the calls are not optimised away).
fn time(label: &str, n: usize, reps: usize, mut f: impl FnMut() -> f64) {
    let start = std::time::Instant::now();
    let mut sum = 0.0;
    for _ in 0..reps {
        sum += f();
    }
    let per = start.elapsed().as_secs_f64() / reps as f64;
    println!("{label} n = {n}: {:.1} µs per call ({sum})", per * 1e6);
}
