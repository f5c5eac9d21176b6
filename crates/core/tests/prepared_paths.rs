//! The preparation of unlabeled scores (`Prepared::as_given` and
//! `Prepared::shifted`): the vectorised exponentials over the whole matrix
//! (as given) or row by row against the column maxima (shifted), the
//! `f64` path that reads the scores and writes the weights in place and the
//! generic path of the other scalar types, and the arcs reported when a
//! weight leaves the normal range. Oracle: the platform's `f64::exp`
//! (< 1 ulp), through the scalar `exp_difference` for shifted weights, and
//! the order of the per-arc loop the documentation states (column by column
//! as given).

#![allow(clippy::needless_range_loop)] // (h, m) index both the scores and the weights

use num_complex::Complex64;
use spantree_core::linalg::exp_difference;
use spantree_core::{ArcRef, Error, Graph, Prepared};

const NINF: f64 = f64::NEG_INFINITY;

/// `n + 1` rows of seeded scores in `[−40, 40]` (`−∞` on column `0`
/// and the diagonal), with a few arcs moved to `special`.
fn scores(n: usize, seed: u64, special: &[(usize, usize, f64)]) -> Vec<Vec<f64>> {
    let mut s = seed | 1;
    let mut rows: Vec<Vec<f64>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|m| {
                    s ^= s >> 12;
                    s ^= s << 25;
                    s ^= s >> 27;
                    let u =
                        (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
                    if m == 0 || h == m {
                        NINF
                    } else {
                        80.0 * u - 40.0
                    }
                })
                .collect()
        })
        .collect();
    for &(h, m, x) in special {
        rows[h][m] = x;
    }
    rows
}

/// `|x − e| ≤ 6 ε e` (the vector path: polynomial and reduction ≤ 3 ulps,
/// the oracle < 1 ulp, the correction 1 ulp each), or equal (zeros,
/// subnormals: the scalar path, `f64::exp` itself).
fn close(x: f64, e: f64) -> bool {
    x == e || (x - e).abs() <= 6.0 * f64::EPSILON * e
}

/// As given, every length from 1 to 40 words (every vector remainder of
/// the single run over the matrix): `e^θ` to a few ulps, `0` off the arcs,
/// on `f64` (in place) and on `Complex64` (through `f64`, the same bits).
#[test]
fn as_given_weights_are_exp_of_the_scores() {
    for n in 1..=40 {
        let rows = scores(n, 7 + n as u64, &[]);
        let g = Graph::from_scores(&rows).expect("valid scores");
        let p = Prepared::<f64>::as_given(&g, |&w| w).expect("no overflow");
        assert_eq!(p.ln_scale(), 0.0);
        for h in 0..=n {
            for m in 0..=n {
                let x = p.weights()[(h, m)];
                let e = if rows[h][m] == NINF {
                    0.0
                } else {
                    rows[h][m].exp()
                };
                assert!(close(x, e), "n = {n}, {h} → {m}: {x} against {e}");
            }
        }
    }
}

/// Shifted, every length from 2 to 40 words (every vector remainder of
/// the single run over the matrix and every offset of the shift in a vector),
/// on `f64` (in place, one run) and on `Complex64` (the generic path, row by row):
/// `e^{θ − c_m}` with `c_m` the column's best score, to a few ulps, the
/// two paths bit for bit alike, `Σ c_m` in `ln_scale`, and scores far
/// below their column's best (underflowing, subnormal, zero) as `f64::exp`
/// gives them.
#[test]
fn shifted_weights_against_the_column_maxima() {
    for n in 2..=40 {
        let far = [
            (0, 1, -690.0),
            (n, 1, -740.0),
            (1, n, -1000.0),
            (0, n, 300.0),
        ];
        let rows = scores(n, 100 + n as u64, &far);
        let g = Graph::from_scores(&rows).expect("valid scores");
        let p = Prepared::<f64>::shifted(&g, |&w| w);
        let c = Prepared::<Complex64>::shifted(&g, |&w| Complex64::new(w, 0.0));
        let mut ln_scale = 0.0;
        for m in 1..=n {
            let best = (0..=n).map(|h| rows[h][m]).fold(NINF, f64::max);
            ln_scale += best;
            for h in 0..=n {
                let x = p.weights()[(h, m)];
                let e = if h == m {
                    0.0
                } else {
                    exp_difference(rows[h][m], best)
                };
                assert!(close(x, e), "n = {n}, {h} → {m}: {x} against {e}");
                assert_eq!(x.to_bits(), c.weights()[(h, m)].re.to_bits());
            }
        }
        assert_eq!(p.ln_scale(), ln_scale);
    }
}

/// As given, two scores whose weights overflow `f64`: the one reported is
/// the first in the per-arc loop's order, column by column (`2 → 1`
/// before `1 → 2`), whatever the order of the vectorised pass.
#[test]
fn as_given_reports_the_first_overflow_column_by_column() {
    let rows = scores(3, 5, &[(1, 2, 800.0), (2, 1, 750.0), (3, 2, -800.0)]);
    let g = Graph::from_scores(&rows).expect("valid scores");
    match Prepared::<f64>::as_given(&g, |&w| w) {
        Err(Error::Overflow { arc, score }) => {
            assert_eq!(
                arc,
                ArcRef {
                    head: 2,
                    dependent: 1,
                    label: None
                }
            );
            assert_eq!(score, 750.0);
        }
        other => panic!("expected an overflow, got {other:?}"),
    }
}

/// As given, an underflowing weight (score `−800`) among normal ones:
/// zero, as `f64::exp` gives it, with no error (the loss is judged by
/// `ln Z`, `tests/underflow.rs`).
#[test]
fn as_given_underflow_is_exp_itself() {
    let rows = scores(4, 11, &[(3, 2, -800.0), (0, 4, -745.0)]);
    let g = Graph::from_scores(&rows).expect("valid scores");
    let p = Prepared::<f64>::as_given(&g, |&w| w).expect("no overflow");
    assert_eq!(p.weights()[(3, 2)], (-800f64).exp());
    assert_eq!(p.weights()[(0, 4)], (-745f64).exp());
}
