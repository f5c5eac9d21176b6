//! How pessimistic the default engine's first entry-wise test is: for every
//! dense marginal `μ = w (a − b)` read from the unrefined inverse of the
//! (root-scaled) Laplacian, the true relative error against a 128-bit
//! reference (MPFR LU of the same `f64` weights), the error the test
//! estimates, `e (|a| + |b|) / |a − b|` with `e = ln_det_error + 8 n ε`,
//! and their ratio; per column, whether it fails the test. `N(0, σ²)`
//! scores, `σ ∈ {1, 2, 4}`, root shifts `0` and `−10`, both rootings, and
//! multi-root the row-sum form's test where the Laplacian's LU is not
//! certified (`multi-rowsum`: `M⁻¹` read as `arc_reads` says)
//! (`cargo run --release -p spantree-bench --example entry_wise_calibration
//! -- [--graphs G] [--csv PATH] [--first S] [--shifts 0,-10] [n…]`, default `n = 20 36 50 100`, 20
//! graphs). With `--csv`, one row per column (graph, column, largest
//! amplification `(|a| + |b|) / |a − b|`, largest implied entry error
//! `true / amplification` and fewest true bits, for the arcs that read two
//! entries and for those that read one) for the candidate rules to be
//! evaluated offline. On standard error, one line per graph: the fewest
//! bits of the engine's own marginals, whether they came from the dense
//! inverse, how many columns it refined and recomputed, and the least
//! uncertainty of a word by the reference marginals (single-root, below
//! `2⁻⁵` the elimination answers whatever the test says).

use std::io::Write;

use spantree_bench::{normal_graph, root_shifted};
use spantree_core::laplacian::laplacian;
use spantree_core::linalg::PartialPivLu;
use spantree_core::{Dense, Engine, Factorization, Factors, Graph, Matrix, Rooting, Scalar};
use spantree_exact::{BigFloat, Exact};
use spantree_faer::{Accurate, Lu};

type Big = BigFloat<128>;

/// The entries an arc `h → j + 1` reads (`μ = w (a − b)`), as the test's
/// definition: `(a, b)` indices into row `j` of `X`, `None` for zero.
fn reads(h: usize, j: usize, single: bool) -> (Option<usize>, Option<usize>) {
    let a = match (h, single) {
        (0, true) => Some(0),
        _ if single && j == 0 => None,
        _ => Some(j),
    };
    let b = match (h, single) {
        (0, _) | (1, true) => None,
        _ => Some(h - 1),
    };
    (a, b)
}

/// The marginals of `w` from the 128-bit inverse of its Laplacian.
fn reference(w: &Matrix<f64>, rooting: Rooting) -> Matrix<f64> {
    let n1 = w.rows();
    let wb = Matrix::from_fn(n1, n1, |h, m| Big::from_f64(w[(h, m)]));
    let x = PartialPivLu::new(laplacian(&wb, rooting))
        .inverse()
        .expect("reference inverse");
    let single = rooting == Rooting::Single;
    Matrix::from_fn(n1, n1, |h, m| {
        if m == 0 || h == m || w[(h, m)] == 0.0 {
            return 0.0;
        }
        let j = m - 1;
        let (a, b) = reads(h, j, single);
        let at = |i: Option<usize>| i.map_or(Big::zero(), |i| x[(j, i)].clone());
        (wb[(h, m)].clone() * (at(a) - at(b))).to_f64()
    })
}

/// Per column: largest amplification and implied entry error, fewest true
/// bits, over the arcs reading two entries (`pair`) and one (`alone`).
#[derive(Clone, Copy, Default)]
struct Column {
    amp: f64,
    q_pair: f64,
    q_alone: f64,
    bits_pair: f64,
    bits_alone: f64,
    ratio_pair: f64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut sizes, mut graphs, mut csv, mut first) = (Vec::new(), 20u64, None, 0u64);
    let mut shifts = vec![0.0, -10.0];
    while let Some(a) = args.next() {
        match a.as_str() {
            "--graphs" => graphs = args.next().and_then(|g| g.parse().ok()).unwrap_or(20),
            "--csv" => csv = args.next(),
            "--shifts" => {
                let list = args.next().unwrap_or_default();
                shifts = list.split(',').filter_map(|v| v.parse().ok()).collect();
            }
            // Seeds from `first + n` on (`2021` gives op_loop's graph first).
            "--first" => first = args.next().and_then(|g| g.parse().ok()).unwrap_or(0),
            _ => sizes.extend(a.parse::<usize>().ok()),
        }
    }
    if sizes.is_empty() {
        sizes = vec![20, 36, 50, 100];
    }
    let mut out = csv.map(|p| std::fs::File::create(p).expect("csv"));
    if let Some(f) = &mut out {
        writeln!(f, "n,sigma,shift,rooting,seed,lde,m,failed,amp,q_pair,q_alone,bits_pair,bits_alone,ratio_pair").expect("csv");
    }
    // The reference against exact rationals (n = 12 and 30, σ = 2 and 4
    // with root shift −10, both rootings): the same `f64`s.
    for (rooting, (n, sigma, shift)) in Rooting::ALL
        .into_iter()
        .flat_map(|r| [(12, 2.0, 0.0), (30, 4.0, -10.0)].map(|c| (r, c)))
    {
        let w = Accurate
            .prepare(&root_shifted(&normal_graph(n, sigma, 3), shift), |&w| w)
            .expect("prepared")
            .weights()
            .clone();
        let rows: Vec<Vec<f64>> = (0..w.rows()).map(|h| w.row(h).to_vec()).collect();
        let exact = spantree_core::Model::new(
            Exact,
            &Graph::from_weights(&rows).expect("weights"),
            rooting,
        )
        .and_then(|m| m.marginals())
        .expect("exact");
        let r = reference(&w, rooting);
        for (a, e) in r.as_slice().iter().zip(exact.as_slice()) {
            assert_eq!(*a, e.to_f64(), "128-bit reference against rationals");
        }
    }
    println!("| n | σ | shift | rooting | graphs | failing columns (mean) | fewest true bits, failing cols | fewest predicted bits, failing cols | largest true/estimated, pair | largest true/estimated, alone | fewest true bits, alone (w1 col / X[j][0] / X[j][j]) | refined (engine) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let eps = f64::EPSILON;
    for &n in &sizes {
        for sigma in [1.0, 2.0, 4.0] {
            for &shift in &shifts {
                // Multi-root twice: the Laplacian's LU where it is certified,
                // and the row-sum form's where it is not and that one is.
                for (rooting, row_sum) in [
                    (Rooting::Single, false),
                    (Rooting::Multi, false),
                    (Rooting::Multi, true),
                ] {
                    let single = rooting == Rooting::Single;
                    // The arcs read one entry, or a sum: as single-root.
                    let single_like = single || row_sum;
                    let name = if row_sum {
                        "multi-rowsum"
                    } else {
                        rooting.name()
                    };
                    let mut failing = 0usize;
                    let mut certified_graphs = 0;
                    let mut fewest_failing = 64.0f64;
                    let mut fewest_predicted = 64.0f64;
                    let (mut ratio_pair, mut ratio_alone) = (0.0f64, 0.0f64);
                    let mut fewest_alone = [64.0f64; 3];
                    let mut refined_engine = 0usize;
                    let seeds = if first == 0 {
                        0..graphs
                    } else {
                        first + n as u64..first + n as u64 + graphs
                    };
                    for seed in seeds {
                        let g = root_shifted(&normal_graph(n, sigma, seed), shift);
                        let w = Accurate
                            .prepare(&g, |&w| w)
                            .expect("prepared")
                            .weights()
                            .clone();
                        let f = Accurate.factorize(w.clone(), rooting);
                        if f.is_certified() == row_sum || (row_sum && !f.row_sum_certified()) {
                            continue;
                        }
                        certified_graphs += 1;
                        f.marginals().expect("marginals");
                        refined_engine += f.refined_columns();
                        // The root row scaled as `Certified` does.
                        let n1 = n + 1;
                        let top = (1..n1).map(|m| w[(0, m)]).fold(0.0f64, f64::max);
                        let k = if single_like && top > 0.0 && top < 1.0 {
                            -(top.log2().floor() as i32)
                        } else {
                            0
                        };
                        let k = if k <= 64 { k } else { 0 };
                        let mut ws = w.clone();
                        for m in 0..n1 {
                            ws[(0, m)] *= 2f64.powi(k);
                        }
                        // The matrix factorised, its inverse, the weights the
                        // marginals multiply and the entries each arc reads.
                        let (lde, x, wmu) = if row_sum {
                            // `M`: the first row replaced by `2^k ρ`.
                            let mut m = laplacian(&w, Rooting::Multi);
                            for j in 0..n {
                                m[(0, j)] = w[(0, j + 1)] * 2f64.powi(k);
                            }
                            let lu = Lu::new(m);
                            let y = lu.inverse().expect("inverse");
                            (lu.ln_det_error(), y, w.clone())
                        } else {
                            let dense = Dense::new(ws.clone(), rooting, Lu::new);
                            let x = dense.inverse().expect("inverse").clone();
                            (dense.lu().ln_det_error(), x, ws.clone())
                        };
                        let arc = |h: usize, j: usize| -> [Option<(usize, f64)>; 2] {
                            if row_sum {
                                let diagonal = (j != 0).then_some((j, 1.0));
                                return match h {
                                    0 => [Some((0, 2f64.powi(k))), diagonal],
                                    1 => [diagonal, None],
                                    _ => [diagonal, Some((h - 1, -1.0))],
                                };
                            }
                            let (a, b) = reads(h, j, single);
                            [a.map(|i| (i, 1.0)), b.map(|i| (i, -1.0))]
                        };
                        let e = lde + 8.0 * n as f64 * eps;
                        let bound = 2f64.powi(-40) / e;
                        let exact = reference(&w, rooting);
                        // The engine's own answer, end to end.
                        let engine = f.marginals().expect("marginals");
                        let engine_bits = spantree_bruteforce::bits::fewest_bits(
                            engine.as_slice(),
                            exact.as_slice(),
                        );
                        // A word nearly certain of its head by the reference
                        // marginals (`u < 2⁻⁵`; single-root the root's row too):
                        // the elimination answers single-root whatever the test.
                        let uncertainty = |v: Vec<f64>| {
                            let top = v.iter().copied().fold(0.0f64, f64::max);
                            (v.len() > 1).then(|| v.iter().sum::<f64>() - top)
                        };
                        let mut least = f64::INFINITY;
                        for m in 1..=n {
                            let v = (0..=n).filter(|&h| h != m).map(|h| exact[(h, m)]).collect();
                            least = least.min(uncertainty(v).unwrap_or(f64::INFINITY));
                        }
                        if single_like {
                            let v = (1..=n).map(|m| exact[(0, m)]).collect();
                            least = least.min(uncertainty(v).unwrap_or(f64::INFINITY));
                        }
                        eprintln!(
                            "graph,{n},{sigma},{shift},{name},{seed},{engine_bits:.2},{},{},{},{least:e}",
                            f.dense_marginals_used(),
                            f.refined_columns(),
                            f.eliminated_columns()
                        );
                        let mut columns = vec![Column::default(); n1];
                        for m in 1..n1 {
                            let j = m - 1;
                            let c = &mut columns[m];
                            c.bits_pair = 64.0;
                            c.bits_alone = 64.0;
                            for h in (0..n1).filter(|&h| h != m && wmu[(h, m)] != 0.0) {
                                let reads = arc(h, j);
                                let (mut value, mut size) = (0.0, 0.0);
                                for (i, s) in reads.into_iter().flatten() {
                                    value += s * x[(j, i)];
                                    size += (s * x[(j, i)]).abs();
                                }
                                let mu = wmu[(h, m)] * value;
                                let amp = size / value.abs();
                                let truth = exact[(h, m)];
                                let rel = if mu == truth {
                                    2f64.powi(-60)
                                } else {
                                    ((mu - truth) / truth).abs()
                                };
                                let bits = -rel.log2();
                                let q = rel / amp;
                                let is_pair = reads.iter().all(Option::is_some);
                                c.amp = c.amp.max(if amp.is_nan() { f64::INFINITY } else { amp });
                                if is_pair {
                                    c.q_pair = c.q_pair.max(q);
                                    c.bits_pair = c.bits_pair.min(bits);
                                    c.ratio_pair = c.ratio_pair.max(q / e);
                                } else {
                                    c.q_alone = c.q_alone.max(q);
                                    c.bits_alone = c.bits_alone.min(bits);
                                    if single_like {
                                        let class = if m == 1 {
                                            0
                                        } else if h == 0 {
                                            1
                                        } else {
                                            2
                                        };
                                        fewest_alone[class] = fewest_alone[class].min(bits);
                                    }
                                }
                            }
                            // (A NaN amplification was counted as infinite.)
                            let failed = c.amp > bound;
                            if failed {
                                failing += 1;
                                fewest_failing = fewest_failing.min(c.bits_pair);
                                fewest_predicted = fewest_predicted.min(-(e * c.amp).log2());
                            }
                            ratio_pair = ratio_pair.max(c.ratio_pair);
                            ratio_alone = ratio_alone.max(c.q_alone / e);
                            if let Some(f) = &mut out {
                                writeln!(
                                    f,
                                    "{n},{sigma},{shift},{name},{seed},{lde:e},{m},{},{:e},{:e},{:e},{:.2},{:.2},{:e}",
                                    u8::from(failed),
                                    c.amp,
                                    c.q_pair,
                                    c.q_alone,
                                    c.bits_pair,
                                    c.bits_alone,
                                    c.ratio_pair
                                )
                                .expect("csv");
                            }
                        }
                    }
                    let alone = if single_like {
                        format!(
                            "{:.1} / {:.1} / {:.1}",
                            fewest_alone[0], fewest_alone[1], fewest_alone[2]
                        )
                    } else {
                        "—".into()
                    };
                    println!(
                        "| {n} | {sigma} | {shift} | {name} | {certified_graphs}/{graphs} | {:.1} | {:.1} | {:.1} | 2^{:.1} | 2^{:.1} | {alone} | {:.1} |",
                        failing as f64 / certified_graphs.max(1) as f64,
                        fewest_failing,
                        fewest_predicted,
                        ratio_pair.log2(),
                        ratio_alone.log2(),
                        refined_engine as f64 / certified_graphs.max(1) as f64,
                    );
                }
            }
        }
    }
}
