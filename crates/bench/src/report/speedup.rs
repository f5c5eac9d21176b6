//! Parts 1 and 2: the entropy speed-up over Smith & Eisner (2007) and the GE
//! gradient by reverse mode against the covariance route (Druck & Smith 2009).

use std::hint::black_box;
use std::time::Instant;

use indicatif::ProgressBar;
use spantree_core::baseline::{entropy_by_columns, grad_ge_by_covariance};
use spantree_core::{ArcFeatures, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::{Exact, Rational};
use spantree_faer::F64;

use super::data::ScoreModel;
use super::util::{fmt_sci, fmt_time, Table, Timing};
use super::{Options, ReportError};
use crate::sparse_features;

/// One treebank's sentences turned into score graphs.
pub struct Prepared {
    /// The treebank's name.
    pub name: String,
    /// The score model calibrated on this treebank.
    pub model: ScoreModel,
    /// `(gold heads, graph)` per sentence.
    pub graphs: Vec<(Vec<usize>, Graph)>,
}

/// Entropy rows per treebank and rooting.
pub fn entropy_table(
    prepared: &[Prepared],
    opts: &Options,
    bar: &ProgressBar,
) -> Result<(Table, Vec<(f64, f64)>), ReportError> {
    let mut speedups = Vec::new();
    let mut table = Table::new(&[
        "treebank",
        "rooting",
        "sentences",
        "mean n",
        "bonus β",
        "entropy (bits/word)",
        "fast entropy / sentence",
        "Smith–Eisner / sentence",
        "speed-up",
        "model build (shared)",
        "speed-up excl. build",
        "max abs(ΔH) (nats)",
        "spread (fast, SE)",
    ]);
    for p in prepared {
        for rooting in [Rooting::Single, Rooting::Multi] {
            let k = p.graphs.len();
            let mut fast = Vec::new();
            let mut se = Vec::new();
            let mut build = Vec::new();
            let mut bits = 0.0;
            let mut words = 0;
            let mut max_diff = 0.0_f64;
            for (heads, g) in &p.graphs {
                let m = Model::new(F64, g, rooting)?;
                let h = m.entropy()?;
                max_diff = max_diff.max((h - entropy_by_columns(&m)?).abs());
                bits += h / std::f64::consts::LN_2;
                words += heads.len();
            }
            for _ in 0..opts.repetitions {
                // Interleaved passes, so drift of a shared machine hits both.
                let start = Instant::now();
                for (_, g) in &p.graphs {
                    black_box(Model::new(F64, g, rooting)?.entropy()?);
                }
                fast.push(start.elapsed().as_secs_f64());
                let start = Instant::now();
                for (_, g) in &p.graphs {
                    black_box(entropy_by_columns(&Model::new(F64, g, rooting)?)?);
                }
                se.push(start.elapsed().as_secs_f64());
                let start = Instant::now();
                for (_, g) in &p.graphs {
                    black_box(Model::new(F64, g, rooting)?);
                }
                build.push(start.elapsed().as_secs_f64());
                bar.inc(1);
            }
            let fast = Timing::of(fast).per(k);
            let se = Timing::of(se).per(k);
            let build = Timing::of(build).per(k);
            let net = (se.median - build.median) / (fast.median - build.median);
            speedups.push((se.median / fast.median, net));
            table.row(vec![
                p.name.clone(),
                rooting.name().to_string(),
                k.to_string(),
                format!("{:.1}", words as f64 / k.max(1) as f64),
                format!("{:.2}", p.model.bonus),
                format!("{:.3}", bits / words.max(1) as f64),
                fmt_time(fast.median),
                fmt_time(se.median),
                format!("{:.1}×", se.median / fast.median),
                fmt_time(build.median),
                format!("{net:.1}×"),
                fmt_sci(max_diff),
                format!(
                    "±{:.0}%, ±{:.0}%",
                    fast.spread_percent() / 2.0,
                    se.spread_percent() / 2.0
                ),
            ]);
        }
    }
    Ok((table, speedups))
}

/// The features and targets of one sentence for the GE objective: 20 sparse
/// binary features (each arc fires two, drawn with the sentence's seed), and
/// targets the feature counts of the gold tree.
pub fn ge_problem(heads: &[usize], features: usize, seed: u64) -> (ArcFeatures<f64>, Vec<f64>) {
    let n = heads.len();
    let f = sparse_features(n, features, seed);
    let mut t = vec![0.0; features];
    for (arc, values) in f.entries() {
        if heads[arc.dependent - 1] == arc.head {
            for &(k, v) in values {
                t[k] += v;
            }
        }
    }
    (f, t)
}

/// Max abs and max relative (norm-wise: over the larger entry) difference.
fn difference(a: &[Matrix<f64>], b: &[Matrix<f64>]) -> (f64, f64) {
    let mut abs = 0.0_f64;
    let mut scale = 0.0_f64;
    for (x, y) in a.iter().zip(b) {
        for (u, v) in x.as_slice().iter().zip(y.as_slice()) {
            abs = abs.max((u - v).abs());
            scale = scale.max(u.abs()).max(v.abs());
        }
    }
    (abs, if scale > 0.0 { abs / scale } else { 0.0 })
}

/// Norm-wise relative error `max |g − g*| / max |g*|` against exact values.
fn exact_error(g: &[Matrix<f64>], exact: &[Matrix<Rational>]) -> f64 {
    let mut num = 0.0_f64;
    let mut den = 0.0_f64;
    for (x, e) in g.iter().zip(exact) {
        for (u, v) in x.as_slice().iter().zip(e.as_slice()) {
            let d = Rational::from_f64(*u) - v.clone();
            num = num.max(d.to_f64().abs());
            den = den.max(v.to_f64().abs());
        }
    }
    if !g.iter().all(|m| m.as_slice().iter().all(|v| v.is_finite())) {
        return f64::INFINITY;
    }
    if den > 0.0 {
        num / den
    } else {
        num
    }
}

/// The GE table, single-root, per treebank.
pub fn ge_table(
    prepared: &[Prepared],
    opts: &Options,
    bar: &ProgressBar,
) -> Result<(Table, Vec<f64>), ReportError> {
    let mut speedups = Vec::new();
    let mut table = Table::new(&[
        "treebank",
        "sentences",
        "mean n",
        "reverse mode / sentence",
        "covariance / sentence",
        "speed-up",
        "max abs diff",
        "max rel diff",
        "exact subsample",
        "reverse-mode error",
        "covariance error",
    ]);
    for (b, p) in prepared.iter().enumerate() {
        let graphs: Vec<&(Vec<usize>, Graph)> =
            p.graphs.iter().take(opts.ge_max_sentences).collect();
        let k = graphs.len();
        let problems: Vec<(ArcFeatures<f64>, Vec<f64>)> = graphs
            .iter()
            .enumerate()
            .map(|(i, (heads, _))| {
                ge_problem(
                    heads,
                    opts.features,
                    p.model.seed ^ ((b as u64) << 20) ^ (i as u64),
                )
            })
            .collect();
        let (mut max_abs, mut max_rel) = (0.0_f64, 0.0_f64);
        for ((_, g), (f, t)) in graphs.iter().zip(&problems) {
            let m = Model::new(F64, g, Rooting::Single)?;
            let (a, r) = difference(
                &m.grad_ge_objective(f, t)?,
                &grad_ge_by_covariance(&m, f, t)?,
            );
            max_abs = max_abs.max(a);
            max_rel = max_rel.max(r);
        }
        let (mut rev, mut cov) = (Vec::new(), Vec::new());
        for _ in 0..opts.ge_repetitions {
            let start = Instant::now();
            for ((_, g), (f, t)) in graphs.iter().zip(&problems) {
                black_box(Model::new(F64, g, Rooting::Single)?.grad_ge_objective(f, t)?);
            }
            rev.push(start.elapsed().as_secs_f64());
            let start = Instant::now();
            for ((_, g), (f, t)) in graphs.iter().zip(&problems) {
                black_box(grad_ge_by_covariance(
                    &Model::new(F64, g, Rooting::Single)?,
                    f,
                    t,
                )?);
            }
            cov.push(start.elapsed().as_secs_f64());
            bar.inc(1);
        }
        // Exact rational gradients of the same f64 weights: F64 does not
        // shift columns, so both see identical inputs.
        let (mut err_rev, mut err_cov, mut exact_count) = (0.0_f64, 0.0_f64, 0);
        for ((heads, g), (f, t)) in graphs.iter().zip(&problems) {
            if exact_count >= opts.exact_sentences || heads.len() > opts.exact_max_len {
                continue;
            }
            let exact_model = Model::new(Exact, g, Rooting::Single)?;
            let fe = f.map(|&v| Rational::from_f64(v));
            let te: Vec<Rational> = t.iter().map(|&v| Rational::from_f64(v)).collect();
            let exact = exact_model.grad_ge_objective(&fe, &te)?;
            let m = Model::new(F64, g, Rooting::Single)?;
            err_rev = err_rev.max(exact_error(&m.grad_ge_objective(f, t)?, &exact));
            err_cov = err_cov.max(exact_error(&grad_ge_by_covariance(&m, f, t)?, &exact));
            exact_count += 1;
        }
        bar.inc(1);
        let words: usize = graphs.iter().map(|(h, _)| h.len()).sum();
        let rev = Timing::of(rev).per(k);
        let cov = Timing::of(cov).per(k);
        speedups.push(cov.median / rev.median);
        table.row(vec![
            p.name.clone(),
            k.to_string(),
            format!("{:.1}", words as f64 / k.max(1) as f64),
            fmt_time(rev.median),
            fmt_time(cov.median),
            format!("{:.1}×", cov.median / rev.median),
            fmt_sci(max_abs),
            fmt_sci(max_rel),
            format!("{exact_count} (n ≤ {})", opts.exact_max_len),
            fmt_sci(err_rev),
            fmt_sci(err_cov),
        ]);
    }
    Ok((table, speedups))
}
