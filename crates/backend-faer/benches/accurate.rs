//! The cancellation-free elimination against dense LU, through the model.
//!
//! `cargo bench -p spantree-faer --bench accurate` prints, for
//! `n ∈ {10, 36, 100, 300}` and N(0, 1) scores with root scores 20 lower,
//! the median time of `Model::new` + `log_partition` and of `Model::new` +
//! `marginals` (both rootings alike; single-root shown), for `F64` and
//! `ShiftedF64` (dense LU; marginals through the inverse), [`Accurate`] and
//! [`LogAccurate`] (the elimination; marginals by its divide and conquer).
//! A plain timing loop: one table, no criterion build.

use std::hint::black_box;
use std::time::{Duration, Instant};

use spantree_core::{Engine, Graph, Model, Rooting};
use spantree_faer::{Accurate, LogAccurate, ShiftedF64, F64};

/// xorshift64* and Box–Muller: reproducible scores without a `rand` build.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

fn graph(n: usize, rng: &mut Rng) -> Graph {
    let rows: Vec<Vec<f64>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|m| match (h, m) {
                    (_, 0) => f64::NEG_INFINITY,
                    _ if h == m => f64::NEG_INFINITY,
                    (0, _) => rng.normal() - 20.0,
                    _ => rng.normal(),
                })
                .collect()
        })
        .collect();
    Graph::from_scores(&rows).expect("valid scores")
}

/// Median over batches of the mean time of one call, batches sized to ~20 ms.
fn median_time(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    let once = start.elapsed().max(Duration::from_nanos(50));
    let per_batch =
        (Duration::from_millis(20).as_nanos() / once.as_nanos()).clamp(1, 100_000) as u32;
    let batches = if once > Duration::from_millis(200) {
        3
    } else {
        9
    };
    let mut times: Vec<Duration> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            t.elapsed() / per_batch
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn times<B: Engine>(backend: B, g: &Graph) -> (Duration, Duration) {
    let rooting = Rooting::Single;
    let log_z = median_time(|| {
        let m = Model::new(backend.clone(), g, rooting).expect("model");
        black_box(m.log_partition().expect("ln Z"));
    });
    let marginals = median_time(|| {
        let m = Model::new(backend.clone(), g, rooting).expect("model");
        black_box(m.marginals().expect("marginals"));
    });
    (log_z, marginals)
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing.
    println!("| n   | backend      | ln Z       | ln Z + marginals |");
    println!("|-----|--------------|------------|------------------|");
    for n in [10, 36, 100, 300] {
        let g = graph(n, &mut Rng(0x9e37_79b9_7f4a_7c15 ^ n as u64));
        let mut rows: Vec<(&str, (Duration, Duration))> = vec![
            ("f64", times(F64, &g)),
            ("log", times(ShiftedF64, &g)),
            ("accurate", times(Accurate, &g)),
        ];
        if n <= 100 {
            rows.push(("log-accurate", times(LogAccurate, &g)));
        }
        for (name, (a, b)) in rows {
            println!("| {n:<3} | {name:<12} | {a:>10.2?} | {b:>16.2?} |");
        }
    }
}
