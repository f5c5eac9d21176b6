//! Where faer's blocked LU starts to beat the plain LU.
//!
//! `cargo bench -p spantree-faer --bench crossover` prints, for each `n`, the
//! median time of (a) factorisation alone and (b) factorisation plus inverse
//! (what `Model::marginals` costs) on random multi-root Laplacians, for both
//! engines. A plain timing loop rather than criterion: one table, no extra
//! build. The result sets [`spantree_faer::CROSSOVER`].

use std::hint::black_box;
use std::time::{Duration, Instant};

use spantree_core::{laplacian::laplacian, Factorization, Matrix, Rooting};
use spantree_faer::{Lu, LuKernel};

/// xorshift64*: reproducible weights without a `rand` build.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random_laplacian(n: usize, rng: &mut Rng) -> Matrix<f64> {
    let w = Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            0.0
        } else {
            (4.0 * rng.uniform() - 2.0).exp()
        }
    });
    laplacian(&w, Rooting::Multi)
}

/// Median over `batches` of the mean time of one call, batches sized to ~2 ms.
fn median_time(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut reps = 0u32;
    while start.elapsed() < Duration::from_millis(2) {
        f();
        reps += 1;
    }
    let mut times: Vec<Duration> = (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed() / reps
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    println!(
        "{:>5} {:>12} {:>12} {:>6} {:>14} {:>14} {:>6}",
        "n", "plain LU", "faer LU", "ratio", "plain LU+inv", "faer LU+inv", "ratio"
    );
    for n in [4, 8, 16, 24, 32, 48, 64, 96, 128] {
        let l = random_laplacian(n, &mut rng);
        let lu = |e: LuKernel| {
            median_time(|| {
                black_box(Lu::with_kernel(black_box(l.clone()), e).det());
            })
        };
        let lu_inv = |e: LuKernel| {
            median_time(|| {
                black_box(Lu::with_kernel(black_box(l.clone()), e).inverse().unwrap());
            })
        };
        let (p, f) = (lu(LuKernel::Plain), lu(LuKernel::Faer));
        let (pi, fi) = (lu_inv(LuKernel::Plain), lu_inv(LuKernel::Faer));
        println!(
            "{n:>5} {:>12.2?} {:>12.2?} {:>6.2} {:>14.2?} {:>14.2?} {:>6.2}",
            p,
            f,
            f.as_secs_f64() / p.as_secs_f64(),
            pi,
            fi,
            fi.as_secs_f64() / pi.as_secs_f64()
        );
    }
}
