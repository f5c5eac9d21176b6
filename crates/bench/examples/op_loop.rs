//! Runs one op of the speed table in a loop, for a profiler:
//! `op_loop [OP] [N] [REPS] [ROOT_SHIFT] [ENGINE]`, e.g.
//! `cargo run --release -p spantree-bench --example op_loop -- grad_entropy 36 20000 0 log`
//! (defaults: `grad_entropy 100 1000 0 accurate`; engines `accurate`, `log`, `f64`).
//!
//! `op_loop kernel/KERNEL [N] [REPS] [ROOT_SHIFT] [faer|lu]` runs a bare
//! kernel of the table instead (e.g. `kernel/exp+lu+inv`), for callgrind
//! counts of op ÷ kernel.
//!
//! `op_loop OP N REPS ROOT_SHIFT ENGINE LABELS` with `LABELS ≥ 1` runs the
//! op on a labeled graph of `LABELS` labels (every label's score drawn from
//! `N(0, 2²)`, seeded; the model built inside, as in the table): e.g.
//! `op_loop grad_entropy 36 2000 0 f64 37` (UD has about 37 labels).
//! `log_z+marginals` then takes the label marginals, `kl` a second labeled
//! graph. `REPS = 0` prints every number of one call instead (`{:e}`, all
//! digits), to compare two builds on a fixed labeled graph.
//!
//! `op_loop corpus DIR [PASSES]` runs the whole-corpus pass (entropy +
//! gradient of every sentence of the treebanks under `DIR`, `accurate`, one
//! thread) `PASSES` times (default 20), e.g. under `perf record`.

use spantree_bench::speed::{run_kernel, run_op, Inputs, Kernel, KernelEngine, Op};
use spantree_bruteforce::random::SplitMix64;
use spantree_core::{Divergence, Engine, Graph, Model, Rooting};
use spantree_faer::{Accurate, ShiftedF64, F64};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("corpus") {
        let dir = std::path::Path::new(args.get(2).expect("op_loop corpus DIR [PASSES]"));
        let passes: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20);
        let (graphs, _) = spantree_bench::speed::corpus_graphs(dir, 2021).expect("treebanks");
        let pool = spantree_bench::speed::corpus_pool(1);
        let start = std::time::Instant::now();
        let mut sum = 0.0;
        for _ in 0..passes {
            sum += spantree_bench::speed::corpus_pass(&graphs, &pool);
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
    let labels: usize = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(0);
    if labels > 0 {
        let seed = 2021 + n as u64 + 1000 * labels as u64;
        let p = labeled_graph(n, labels, seed, shift);
        let q = labeled_graph(n, labels, seed + 1, shift);
        let label = |engine: &str| format!("{engine} {} ({labels} labels)", op.name());
        return match engine.unwrap_or("accurate") {
            "log" => labeled(&label("log"), &ShiftedF64, op, &p, &q, n, reps),
            "f64" => labeled(&label("f64"), &F64, op, &p, &q, n, reps),
            "accurate" => labeled(&label("accurate"), &Accurate, op, &p, &q, n, reps),
            other => panic!("unknown engine {other}: accurate, log or f64"),
        };
    }
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

/// A complete labeled graph over `n` words, every label's score drawn from
/// `N(0, 2²)` (seeded), the root arcs' moved by `root_shift`.
fn labeled_graph(n: usize, labels: usize, seed: u64, root_shift: f64) -> Graph {
    let mut rng = SplitMix64::new(seed);
    let rows: Vec<Vec<Vec<f64>>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|_| {
                    let shift = if h == 0 { root_shift } else { 0.0 };
                    (0..labels).map(|_| 2.0 * rng.normal() + shift).collect()
                })
                .collect()
        })
        .collect();
    Graph::from_labeled_scores(&rows).expect("generated scores are valid")
}

/// Every number one labeled op returns, row-major per label (`all`), or
/// only the first matrix's entry `(0, 1)` (for timing: no copy).
fn labeled_op<E: Engine<Scalar = f64>>(
    engine: &E,
    op: Op,
    p: &Graph,
    q: &Graph,
    all: bool,
) -> Vec<f64> {
    let model = || Model::new(engine.clone(), p, Rooting::Single).expect("valid graph");
    let flat = |g: spantree_core::PerLabel<f64>| -> Vec<f64> {
        if all {
            g.iter().flat_map(|m| m.as_slice().to_vec()).collect()
        } else {
            vec![g[0][(0, 1)]]
        }
    };
    match op {
        Op::LogZ => vec![model().log_partition().expect("ln Z")],
        Op::LogZMarginals => {
            let m = model();
            let mut out = vec![m.log_partition().expect("ln Z")];
            out.extend(flat(m.label_marginals().expect("label marginals")));
            out
        }
        Op::Entropy => vec![model().entropy().expect("entropy")],
        Op::GradEntropy => flat(model().grad_entropy().expect("gradient")),
        Op::GradGe => {
            let n = p.n();
            let features = spantree_bench::sparse_features(n, 20, 7);
            let targets = vec![0.5; 20];
            flat(
                model()
                    .grad_ge_objective(&features, &targets)
                    .expect("gradient"),
            )
        }
        Op::Kl => {
            let q = Model::new(engine.clone(), q, Rooting::Single).expect("valid graph");
            match model().kl_divergence(&q).expect("KL") {
                Divergence::Finite(x) => vec![x],
                Divergence::Infinite { .. } => vec![f64::INFINITY],
            }
        }
    }
}

/// Times a labeled op (`reps ≥ 1`), or prints every number of one call
/// (`reps = 0`).
fn labeled<E: Engine<Scalar = f64>>(
    name: &str,
    engine: &E,
    op: Op,
    p: &Graph,
    q: &Graph,
    n: usize,
    reps: usize,
) {
    if reps == 0 {
        for x in labeled_op(engine, op, p, q, true) {
            println!("{x:e}");
        }
        return;
    }
    time(name, n, reps, || labeled_op(engine, op, p, q, false)[0]);
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
