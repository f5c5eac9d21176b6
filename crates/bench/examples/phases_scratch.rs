use spantree_bench::speed::{median_time, Inputs};
use spantree_core::{laplacian::laplacian, Factorization, Model, Prepared, Rooting};
use spantree_faer::{Accurate, Lu};
fn main() {
    if let Ok(dir) = std::env::var("CORPUS") {
        use spantree_bench::report::data::{load_treebanks, sentence_seed, ScoreModel};
        let seed = 2021;
        let banks = load_treebanks(std::path::Path::new(&dir)).unwrap();
        let model = ScoreModel {
            sigma: 1.0,
            bonus: 3.0,
            seed,
        };
        let graphs: Vec<spantree_core::Graph> = banks
            .iter()
            .enumerate()
            .flat_map(|(b, bank)| {
                bank.sentences
                    .iter()
                    .enumerate()
                    .map(move |(k, s)| model.graph(&s.heads(), sentence_seed(seed, b, k)))
            })
            .collect();
        let mut hist = std::collections::BTreeMap::new();
        for g in &graphs {
            *hist.entry(g.n() / 10 * 10).or_insert(0usize) += 1;
        }
        eprintln!("{hist:?}");
        let engine = std::env::var("ENGINE").unwrap_or_default();
        let reps: usize = std::env::var("REPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5);
        for _ in 0..reps {
            let start = std::time::Instant::now();
            let s: f64 = graphs
                .iter()
                .map(|g| {
                    let run = |m: f64| m;
                    if engine == "log" {
                        let m = Model::new(spantree_faer::ShiftedF64, g, Rooting::Single).unwrap();
                        run(m.entropy().unwrap() + m.grad_entropy().unwrap()[0][(0, 1)])
                    } else {
                        let m = Model::new(Accurate, g, Rooting::Single).unwrap();
                        run(m.entropy().unwrap() + m.grad_entropy().unwrap()[0][(0, 1)])
                    }
                })
                .sum();
            eprintln!(
                "{engine} corpus 1 thread: {:.1} ms ({s})",
                start.elapsed().as_secs_f64() * 1e3
            );
        }
        return;
    }
    if std::env::var("GRAD_ONLY").is_ok() {
        let i = Inputs::new(36, 2057);
        let m = Model::new(Accurate, &i.p, Rooting::Single).unwrap();
        let mut s = 0.0;
        for _ in 0..100000 {
            s += m.grad_entropy().unwrap()[0][(0, 1)];
        }
        println!("{s}");
        return;
    }
    exp_only(
        std::env::args()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(36),
    );
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(36);
    let i = Inputs::new(n, 2021 + n as u64);
    let g = &i.p;
    let t = |name: &str, s: f64| println!("{name:>20}: {:.2} µs", s * 1e6);
    let p = Prepared::shifted(g, |&w| w);
    t(
        "prepare shifted",
        median_time(21, || Prepared::shifted(g, |&w| w)),
    );
    t(
        "prepare as_given",
        median_time(21, || Prepared::as_given(g, |&w| w).unwrap()),
    );
    t("weights clone", median_time(21, || p.weights().clone()));
    t("graph clone", median_time(21, || g.clone()));
    t(
        "spanning_tree",
        median_time(21, || g.spanning_tree(Rooting::Single)),
    );
    t(
        "laplacian",
        median_time(21, || laplacian(p.weights(), Rooting::Single)),
    );
    let l = laplacian(p.weights(), Rooting::Single);
    t("lu", median_time(21, || Lu::new(l.clone())));
    let lu = Lu::new(l.clone());
    t("ln_det_error", median_time(21, || lu.ln_det_error()));
    t("inverse", median_time(21, || lu.inverse().unwrap()));
    let x = lu.inverse().unwrap();
    t(
        "solve n rhs",
        median_time(21, || {
            let mut b = x.clone();
            lu.solve(&mut b).unwrap();
            b
        }),
    );
    t(
        "solve_t n rhs",
        median_time(21, || {
            let mut b = x.clone();
            lu.solve_transpose(&mut b).unwrap();
            b
        }),
    );
    t(
        "sandwich",
        median_time(21, || lu.inverse_sandwich(&x, x.clone()).unwrap()),
    );
    t(
        "Model::new",
        median_time(21, || Model::new(Accurate, g, Rooting::Single).unwrap()),
    );
    t(
        "log_z",
        median_time(21, || {
            Model::new(Accurate, g, Rooting::Single)
                .unwrap()
                .log_partition()
                .unwrap()
        }),
    );
    let m = Model::new(Accurate, g, Rooting::Single).unwrap();
    t(
        "marginals (model)",
        median_time(21, || m.marginals().unwrap()),
    );
    t("entropy (model)", median_time(21, || m.entropy().unwrap()));
    t(
        "grad_entropy (model)",
        median_time(21, || m.grad_entropy().unwrap()),
    );
}
#[allow(dead_code)]
fn unused() {}
pub fn exp_only(n: usize) {
    let i = Inputs::new(n, 2021 + n as u64);
    let s = &i.scores;
    let n1 = n + 1;
    let c = vec![0.5; n1];
    let mut w = vec![0.0; n1 * n1];
    let t = median_time(21, || {
        for (out, row) in w.chunks_exact_mut(n1).zip(s.as_slice().chunks_exact(n1)) {
            spantree_core::linalg::exp_differences(row, &c, out);
        }
        w[3]
    });
    println!("exp_differences whole matrix: {:.2} µs", t * 1e6);
    let fin: Vec<f64> = s
        .as_slice()
        .iter()
        .map(|&x| if x.is_finite() { x } else { 0.0 })
        .collect();
    let t = median_time(21, || {
        for (out, row) in w.chunks_exact_mut(n1).zip(fin.chunks_exact(n1)) {
            spantree_core::linalg::exp_differences(row, &c, out);
        }
        w[3]
    });
    println!("exp_differences all finite: {:.2} µs", t * 1e6);
}
