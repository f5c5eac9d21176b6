//! Part 4: `∇Z` three ways on graphs driven towards singularity, against
//! exact rationals.

use indicatif::ProgressBar;
use spantree_bruteforce::random::SplitMix64;
use spantree_core::laplacian::{laplacian, weight_gradient};
use spantree_core::{Engine, Factorization, Matrix, Rooting, Scalar};
use spantree_exact::{Exact, Rational};
use spantree_faer::F64;

use super::util::{bits_from_relative, ln_abs_error, Table};
use super::{Options, ReportError};
use crate::stable_adjugate;

/// The float routes compared, in table order.
pub const ROUTES: [&str; 4] = [
    "Z · L⁻¹",
    "backend adjugate (F64)",
    "stable adjugate (pivoted QR)",
    "exact adj of rounded L",
];

/// Correct bits of each route at one `ε`.
#[derive(Clone, Debug)]
pub struct Point {
    /// The rooting.
    pub rooting: Rooting,
    /// The case: `ε`, or a named exactly-singular graph.
    pub case: Case,
    /// `(norm-wise, worst entry, median entry)` bits per route of [`ROUTES`].
    pub bits: Vec<(f64, f64, f64)>,
    /// The exact `Z` as `ln Z` (`-∞` when zero).
    pub ln_z: f64,
}

/// A test graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Case {
    /// The arcs from the rest into the group have weight `ε` (`0` included).
    Epsilon(f64),
    /// Word 1 has no incoming arc at all: `Z = 0`, adjugate non-zero.
    NoHead,
}

/// The `ε` grid, from `1` to `1e-300`, then exactly `0`.
pub fn epsilons() -> Vec<f64> {
    let mut e: Vec<f64> = [
        0, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64, 100, 150, 200, 250, 300,
    ]
    .iter()
    .map(|&k| 10f64.powi(-k))
    .collect();
    e.push(0.0);
    e
}

/// The weights: `N(0, 1)` scores, words `1..=group` a group whose arcs from
/// the root and the other words have weight `ε`.
pub fn weights(n: usize, group: usize, case: Case, seed: u64) -> Matrix<f64> {
    let mut rng = SplitMix64::new(seed);
    Matrix::from_fn(n + 1, n + 1, |h, m| {
        let w = rng.normal().exp();
        if m == 0 || h == m {
            return 0.0;
        }
        match case {
            Case::Epsilon(eps) if m <= group && (h == 0 || h > group) => eps,
            Case::NoHead if m == 1 => 0.0,
            _ => w,
        }
    })
}

/// `(norm-wise, worst entry, median entry)` correct bits of `g` against `exact`.
fn bits(g: &Matrix<f64>, exact: &Matrix<Rational>) -> (f64, f64, f64) {
    let finite = g.as_slice().iter().all(|v| v.is_finite());
    let mut worst_err = f64::NEG_INFINITY;
    let mut largest = f64::NEG_INFINITY;
    let mut entry = Vec::new();
    for (x, e) in g.as_slice().iter().zip(exact.as_slice()) {
        largest = largest.max(e.ln_abs());
        worst_err = worst_err.max(ln_abs_error(*x, e));
        if !e.is_zero() {
            entry.push(bits_from_relative(
                (ln_abs_error(*x, e) - e.ln_abs()).exp(),
                53.0,
            ));
        }
    }
    if !finite {
        return (0.0, 0.0, 0.0);
    }
    let norm = if worst_err == f64::NEG_INFINITY {
        53.0
    } else {
        bits_from_relative((worst_err - largest).exp(), 53.0)
    };
    entry.sort_by(f64::total_cmp);
    let worst = entry.first().copied().unwrap_or(53.0);
    let median = entry.get(entry.len() / 2).copied().unwrap_or(53.0);
    (norm, worst, median)
}

/// Every case for both rootings.
pub fn run(opts: &Options, bar: &ProgressBar) -> Result<Vec<Point>, ReportError> {
    let n = opts.adjugate_n;
    let group = (n / 3).max(1);
    let mut cases: Vec<Case> = epsilons().into_iter().map(Case::Epsilon).collect();
    cases.push(Case::NoHead);
    let mut out = Vec::new();
    for rooting in [Rooting::Multi, Rooting::Single] {
        for &case in &cases {
            let w = weights(n, group, case, 0xad1);
            let l = laplacian(&w, rooting);
            let exact_w = w.map(|&x| Rational::from_f64(x));
            let exact_l = laplacian(&exact_w, rooting);
            let exact_lu = Exact.lu(exact_l);
            let reference = weight_gradient(&exact_lu.adjugate(), rooting);
            let lu = F64.lu(l.clone());
            let by_inverse = match lu.inverse() {
                Ok(mut x) => {
                    let z = lu.det();
                    x.as_mut_slice().iter_mut().for_each(|v| *v *= z);
                    x
                }
                Err(_) => Matrix::from_fn(n, n, |_, _| f64::NAN),
            };
            let rounded = Exact
                .lu(l.map(|&x| Rational::from_f64(x)))
                .adjugate()
                .map(|r| r.to_f64());
            let routes = [
                by_inverse,
                lu.adjugate(),
                stable_adjugate::adjugate(&l),
                rounded,
            ];
            let bits = routes
                .iter()
                .map(|adj| bits(&weight_gradient(adj, rooting), &reference))
                .collect();
            out.push(Point {
                rooting,
                case,
                bits,
                ln_z: exact_lu.det().ln_abs(),
            });
            bar.inc(1);
        }
    }
    Ok(out)
}

/// One table per rooting: norm-wise / worst entry bits per route.
pub fn table(points: &[Point], rooting: Rooting) -> Table {
    let mut header = vec!["ε", "ln Z (exact)"];
    header.extend(ROUTES);
    let mut table = Table::new(&header);
    for p in points.iter().filter(|p| p.rooting == rooting) {
        let label = match p.case {
            Case::Epsilon(0.0) => "0 (Z = 0)".to_string(),
            Case::Epsilon(e) => format!("{e:.0e}"),
            Case::NoHead => "word without head (Z = 0)".to_string(),
        };
        let mut row = vec![label, format!("{:.1}", p.ln_z)];
        row.extend(
            p.bits
                .iter()
                .map(|(norm, worst, median)| format!("{norm:.0} / {worst:.0} / {median:.0}")),
        );
        table.row(row);
    }
    table
}
