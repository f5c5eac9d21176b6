use spantree_bench::normal_graph;
use spantree_core::{Engine, Factors, Rooting};
use spantree_faer::Accurate;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args[1].parse().unwrap();
    let rooting = if args[2] == "single" { Rooting::Single } else { Rooting::Multi };
    let reps: usize = args[3].parse().unwrap();
    let w = Accurate.prepare(&normal_graph(n, 2.0, 3), |&w| w).unwrap().weights().clone();
    let mut acc = 0.0;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        let f = Accurate.factorize(w.clone(), rooting);
        acc += f.marginals().unwrap()[(0, 1)];
    }
    println!("{:?} per rep {acc}", t.elapsed() / reps as u32);
}
