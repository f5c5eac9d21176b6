//! Runs one op of the speed table in a loop, for a profiler:
//! `op_loop [OP] [N] [REPS] [ROOT_SHIFT] [ENGINE]`, e.g.
//! `cargo run --release -p spantree-bench --example op_loop -- grad_entropy 36 20000 0 log`
//! (defaults: `grad_entropy 100 1000 0 accurate`; engines `accurate`, `log`, `f64`).

use spantree_bench::speed::{run_op, Inputs, Op};
use spantree_core::Engine;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = Op::ALL
        .into_iter()
        .find(|o| o.name() == args.get(1).map_or("grad_entropy", String::as_str))
        .expect("an op of the speed table");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let reps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let shift: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let i = Inputs::new(n, 2021 + n as u64).with_root_shift(shift);
    match args.get(5).map_or("accurate", String::as_str) {
        "log" => time(&spantree_faer::ShiftedF64, op, &i, reps),
        "f64" => time(&spantree_faer::F64, op, &i, reps),
        "accurate" => time(&spantree_faer::Accurate, op, &i, reps),
        other => panic!("unknown engine {other}: accurate, log or f64"),
    }
}

fn time<E: Engine<Scalar = f64>>(engine: &E, op: Op, i: &Inputs, reps: usize) {
    let start = std::time::Instant::now();
    let mut sum = 0.0;
    for _ in 0..reps {
        sum += run_op(engine, op, i);
    }
    let per = start.elapsed().as_secs_f64() / reps as f64;
    println!(
        "{} {} n = {}: {:.1} µs per call ({sum})",
        engine.name(),
        op.name(),
        i.n,
        per * 1e6
    );
}
