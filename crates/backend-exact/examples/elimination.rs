//! Times `det` + inverse of multi-root Laplacians of random `f64` weights:
//! the crate's fraction-free (Bareiss) integer LU against plain rational
//! Gauss–Jordan elimination (a GCD after every operation), which is what
//! the choice of method in `ExactLu` rests on.
//!
//! `cargo run --profile test -p spantree-exact --example elimination [n…]`

use std::time::{Duration, Instant};

use spantree_core::laplacian::laplacian;
use spantree_core::{Engine, Factorization, Matrix, Rooting, Scalar};
use spantree_exact::{Exact, Rational};

/// SplitMix64: seeded, reproducible weights.
fn weights(n: usize, mut seed: u64) -> Matrix<Rational> {
    let mut next = move || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        if m == 0 || h == m {
            Rational::zero()
        } else {
            Rational::from_f64((next() >> 11) as f64 / (1u64 << 53) as f64)
        }
    })
}

/// Gauss–Jordan on `[A | I]` in rationals, pivot with the fewest bits.
fn rational_gauss_jordan(a: &Matrix<Rational>) -> (Rational, Matrix<Rational>) {
    let n = a.rows();
    let mut w: Vec<Vec<Rational>> = (0..n)
        .map(|i| {
            let mut row = a.row(i).to_vec();
            row.extend((0..n).map(|j| {
                if i == j {
                    Rational::one()
                } else {
                    Rational::zero()
                }
            }));
            row
        })
        .collect();
    let mut det = Rational::one();
    for k in 0..n {
        let bits = |x: &Rational| x.numer().significant_bits() + x.denom().significant_bits();
        let p = (k..n)
            .filter(|&i| !w[i][k].is_zero())
            .min_by_key(|&i| bits(&w[i][k]))
            .expect("non-singular");
        if p != k {
            w.swap(p, k);
            det = -det;
        }
        let pivot = w[k][k].clone();
        det *= &pivot;
        for x in w[k].iter_mut() {
            *x /= &pivot;
        }
        let pivot_row = w[k].clone();
        for (i, row) in w.iter_mut().enumerate() {
            if i == k || row[k].is_zero() {
                continue;
            }
            let f = row[k].clone();
            for (x, y) in row.iter_mut().zip(&pivot_row).skip(k) {
                *x -= &f * y;
            }
        }
    }
    let inv = Matrix::from_fn(n, n, |i, j| w[i][n + j].clone());
    (det, inv)
}

fn best_of(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("reps > 0")
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("sizes are integers"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10, 20, 30, 40]
    } else {
        sizes
    };
    println!(
        "{:>4} {:>12} {:>14} {:>14} {:>8}",
        "n", "det (ms)", "det+inv (ms)", "rational (ms)", "ratio"
    );
    for n in sizes {
        let l = laplacian(&weights(n, 0x1a9 + n as u64), Rooting::Multi);
        let reps = if n <= 20 { 5 } else { 2 };
        let t_det = best_of(reps, || {
            Exact.lu(l.clone()).det();
        });
        let mut ours = None;
        let t_bareiss = best_of(reps, || {
            let lu = Exact.lu(l.clone());
            ours = Some((lu.det(), lu.inverse().expect("non-singular")));
        });
        let mut theirs = None;
        let t_rational = best_of(reps, || theirs = Some(rational_gauss_jordan(&l)));
        assert_eq!(ours, theirs, "the two eliminations disagree at n = {n}");
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{n:>4} {:>12.2} {:>14.2} {:>14.2} {:>8.1}",
            ms(t_det),
            ms(t_bareiss),
            ms(t_rational),
            ms(t_rational) / ms(t_bareiss)
        );
    }
}
