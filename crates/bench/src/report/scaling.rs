//! Part 3: time against `n` on log–log axes, with fitted slopes.

use indicatif::ProgressBar;
use spantree_core::baseline::{
    entropy_by_columns, grad_ge_by_covariance, marginals_by_zeroing, partition_by_minors,
};
use spantree_core::{ArcFeatures, Graph, Model, Rooting};
use spantree_faer::{Accurate, F64};

use super::data::{random_heads, ScoreModel};
use super::speedup::ge_problem;
use super::util::{fmt_time, log_log_slope, time_adaptive, Table, Timing};
use super::{Options, ReportError};
use spantree_bruteforce::random::SplitMix64;

type Run = fn(&Graph, &ArcFeatures<f64>, &[f64]) -> Result<(), ReportError>;

/// An algorithm of the scaling study.
pub struct Algorithm {
    /// Its name in the table and the legend.
    pub name: &'static str,
    /// Its cost exponent in `n`, for predicting whether the next size fits.
    pub order: i32,
    /// Whether it is a literature baseline.
    pub baseline: bool,
    run: Run,
}

/// The measured series of one algorithm.
pub struct Series {
    /// The algorithm's name.
    pub name: &'static str,
    /// Whether it is a baseline.
    pub baseline: bool,
    /// `(n, timing)`.
    pub points: Vec<(usize, Timing)>,
    /// The fitted slope over `n ≥ 20` (all points if fewer than two there).
    pub slope: Option<f64>,
    /// The first size skipped because it would exceed the budget.
    pub stopped_at: Option<usize>,
}

fn algorithms() -> Vec<Algorithm> {
    vec![
        Algorithm {
            name: "ln Z (LU)",
            order: 3,
            baseline: false,
            run: |g, _, _| {
                Model::new(F64, g, Rooting::Single)?.log_partition()?;
                Ok(())
            },
        },
        Algorithm {
            name: "marginals (LU + inverse)",
            order: 3,
            baseline: false,
            run: |g, _, _| {
                Model::new(F64, g, Rooting::Single)?.marginals()?;
                Ok(())
            },
        },
        Algorithm {
            name: "marginals (Accurate elimination)",
            order: 3,
            baseline: false,
            run: |g, _, _| {
                Model::new(Accurate, g, Rooting::Single)?.marginals()?;
                Ok(())
            },
        },
        Algorithm {
            name: "entropy (fast)",
            order: 3,
            baseline: false,
            run: |g, _, _| {
                Model::new(F64, g, Rooting::Single)?.entropy()?;
                Ok(())
            },
        },
        Algorithm {
            name: "GE gradient, reverse mode",
            order: 3,
            baseline: false,
            run: |g, f, t| {
                Model::new(F64, g, Rooting::Single)?.grad_ge_objective(f, t)?;
                Ok(())
            },
        },
        Algorithm {
            name: "Z by n minors (Koo et al.)",
            order: 4,
            baseline: true,
            run: |g, _, _| {
                partition_by_minors(&Model::new(F64, g, Rooting::Single)?)?;
                Ok(())
            },
        },
        Algorithm {
            name: "entropy, Smith–Eisner",
            order: 4,
            baseline: true,
            run: |g, _, _| {
                entropy_by_columns(&Model::new(F64, g, Rooting::Single)?)?;
                Ok(())
            },
        },
        Algorithm {
            name: "GE gradient, covariance",
            order: 4,
            baseline: true,
            run: |g, f, t| {
                grad_ge_by_covariance(&Model::new(F64, g, Rooting::Single)?, f, t)?;
                Ok(())
            },
        },
        Algorithm {
            name: "marginals by zeroing (McDonald & Satta)",
            order: 5,
            baseline: true,
            run: |g, _, _| {
                marginals_by_zeroing(&Model::new(F64, g, Rooting::Single)?)?;
                Ok(())
            },
        },
    ]
}

/// The sizes measured: 5 … `max_n`, roughly geometric.
pub fn sizes(max_n: usize) -> Vec<usize> {
    [5, 10, 20, 35, 50, 75, 100, 150, 200, 300, 500]
        .into_iter()
        .filter(|&n| n <= max_n)
        .collect()
}

/// Runs every algorithm at every size until one run would exceed
/// `opts.scaling_budget` seconds.
pub fn run(
    model: &ScoreModel,
    opts: &Options,
    bar: &ProgressBar,
) -> Result<Vec<Series>, ReportError> {
    let ns = sizes(opts.scaling_max_n);
    let mut rng = SplitMix64::new(model.seed ^ 0x5ca1);
    let inputs: Vec<(usize, Graph, ArcFeatures<f64>, Vec<f64>)> = ns
        .iter()
        .map(|&n| {
            let heads = random_heads(n, &mut rng);
            let g = model.graph(&heads, rng.next_u64());
            let (f, t) = ge_problem(&heads, opts.features, rng.next_u64());
            (n, g, f, t)
        })
        .collect();
    let mut out = Vec::new();
    for alg in algorithms() {
        let mut points = Vec::new();
        let mut stopped_at = None;
        for (n, g, f, t) in &inputs {
            if let Some(&(n0, t0)) = points
                .last()
                .map(|(n, t): &(usize, Timing)| (n, t))
                .as_ref()
            {
                let predicted = t0.median * (*n as f64 / *n0 as f64).powi(alg.order);
                if predicted > opts.scaling_budget {
                    stopped_at = Some(*n);
                    bar.inc(1);
                    break;
                }
            }
            (alg.run)(g, f, t)?;
            let timing = time_adaptive(3, 25, 0.2, || (alg.run)(g, f, t));
            points.push((*n, timing));
            bar.inc(1);
        }
        let fit: Vec<(f64, f64)> = points
            .iter()
            .filter(|(n, _)| *n >= 20)
            .map(|(n, t)| (*n as f64, t.median))
            .collect();
        let slope = if fit.len() >= 2 {
            log_log_slope(&fit)
        } else {
            log_log_slope(
                &points
                    .iter()
                    .map(|(n, t)| (*n as f64, t.median))
                    .collect::<Vec<_>>(),
            )
        };
        out.push(Series {
            name: alg.name,
            baseline: alg.baseline,
            points,
            slope,
            stopped_at,
        });
    }
    Ok(out)
}

/// The table: one row per algorithm, median time per size and the slope.
pub fn table(series: &[Series], max_n: usize) -> Table {
    let ns = sizes(max_n);
    let mut header: Vec<String> = vec!["algorithm".into()];
    header.extend(ns.iter().map(|n| format!("n = {n}")));
    header.push("fitted slope (n ≥ 20)".into());
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header_refs);
    for s in series {
        let mut row = vec![format!("{}{}", s.name, if s.baseline { " †" } else { "" })];
        for n in &ns {
            row.push(match s.points.iter().find(|(m, _)| m == n) {
                Some((_, t)) => fmt_time(t.median),
                None => "—".into(),
            });
        }
        row.push(s.slope.map_or("—".into(), |v| format!("{v:.2}")));
        table.row(row);
    }
    table
}
