//! Times ways to form |X|ᵀ of an `n × n` row-major matrix (the first step
//! of the `f64` derivative check's estimate): `abs_transpose [N] [REPS]`.

use std::hint::black_box;
use std::time::Instant;

/// The scatter: rows of `x` read in turn, written down the columns.
fn scatter(x: &[f64], xt: &mut [f64], n: usize) {
    for (j, xr) in x.chunks_exact(n).enumerate() {
        for (i, &e) in xr.iter().enumerate() {
            xt[i * n + j] = e.abs();
        }
    }
}

/// The gather: rows of `xt` written in turn, read down the columns.
fn gather(x: &[f64], xt: &mut [f64], n: usize) {
    for (i, out) in xt.chunks_exact_mut(n).enumerate() {
        for (o, xr) in out.iter_mut().zip(x.chunks_exact(n)) {
            *o = xr[i].abs();
        }
    }
}

/// `T × T` tiles through a fixed-size array, the edges entry by entry.
fn tiles<const T: usize>(x: &[f64], xt: &mut [f64], n: usize) {
    let full = n / T * T;
    for i0 in (0..full).step_by(T) {
        for j0 in (0..full).step_by(T) {
            let mut tile = [[0.0f64; T]; T];
            for (r, row) in tile.iter_mut().enumerate() {
                row.copy_from_slice(&x[(j0 + r) * n + i0..][..T]);
            }
            for c in 0..T {
                let out: &mut [f64; T] = (&mut xt[(i0 + c) * n + j0..][..T]).try_into().unwrap();
                for r in 0..T {
                    out[r] = tile[r][c].abs();
                }
            }
        }
    }
    for i in 0..n {
        let js = if i < full { full } else { 0 };
        for j in js..n {
            xt[i * n + j] = x[j * n + i].abs();
        }
    }
}

/// Four rows of `xt` at a time, each row of `x` read four entries at once.
fn gather4(x: &[f64], xt: &mut [f64], n: usize) {
    let full = n / 4 * 4;
    for i0 in (0..full).step_by(4) {
        let (a, rest) = xt[i0 * n..].split_at_mut(n);
        let (b, rest) = rest.split_at_mut(n);
        let (c, d) = rest.split_at_mut(n);
        let d = &mut d[..n];
        for (j, xr) in x.chunks_exact(n).enumerate() {
            let r = &xr[i0..i0 + 4];
            a[j] = r[0].abs();
            b[j] = r[1].abs();
            c[j] = r[2].abs();
            d[j] = r[3].abs();
        }
    }
    for (i, out) in xt.chunks_exact_mut(n).enumerate().skip(full) {
        for (o, xr) in out.iter_mut().zip(x.chunks_exact(n)) {
            *o = xr[i].abs();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(36);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let x: Vec<f64> = (0..n * n).map(|k| (k as f64).sin()).collect();
    let mut reference = vec![0.0; n * n];
    scatter(&x, &mut reference, n);
    type Way = fn(&[f64], &mut [f64], usize);
    let ways: [(&str, Way); 5] = [
        ("scatter", scatter),
        ("gather", gather),
        ("gather4", gather4),
        ("tiles8", tiles::<8>),
        ("tiles4", tiles::<4>),
    ];
    for (name, f) in ways {
        let mut xt = vec![0.0; n * n];
        f(&x, &mut xt, n);
        assert_eq!(xt, reference, "{name}");
        let start = Instant::now();
        for _ in 0..reps {
            f(black_box(&x), black_box(&mut xt), n);
        }
        let per = start.elapsed().as_secs_f64() / reps as f64 * 1e9;
        println!("{name}: {per:.0} ns");
    }
}
