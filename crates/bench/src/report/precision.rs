//! Part 5: time and correct bits per backend against `HighPrecision<256>`.

use indicatif::ProgressBar;
use spantree_bruteforce::random::SplitMix64;
use spantree_core::{Engine, Graph, Matrix, Model, Rooting, Transcendental};
use spantree_exact::rug::Float;
use spantree_exact::{Exact, HighPrecision};
use spantree_faer::{Accurate, LogAccurate, ShiftedF64, F64};

use super::data::{random_heads, ScoreModel};
use super::util::{bits_against, fmt_time, time_adaptive, Table, ToReference, REFERENCE_BITS};
use super::{Options, ReportError};

/// The reference values of one graph.
struct Reference {
    ln_z: Float,
    marginals: Matrix<Float>,
    entropy: Float,
}

/// What one backend gives on one graph, as 256-bit floats.
struct Answer {
    ln_z: Float,
    marginals: Matrix<Float>,
    entropy: Option<Float>,
}

fn reference(g: &Graph) -> Result<Reference, ReportError> {
    let m = Model::new(HighPrecision::<REFERENCE_BITS>, g, Rooting::Single)?;
    Ok(Reference {
        ln_z: m.log_partition_scalar()?.to_reference(),
        marginals: m.marginals()?.map(ToReference::to_reference),
        entropy: m.entropy()?.to_reference(),
    })
}

fn float_answer<B>(backend: B, g: &Graph) -> Result<Answer, ReportError>
where
    B: Engine,
    B::Scalar: Transcendental + ToReference,
{
    let m = Model::new(backend, g, Rooting::Single)?;
    Ok(Answer {
        ln_z: m.log_partition_scalar()?.to_reference(),
        marginals: m.marginals()?.map(ToReference::to_reference),
        entropy: Some(m.entropy()?.to_reference()),
    })
}

fn float_work<B>(backend: B, g: &Graph) -> Result<(), ReportError>
where
    B: Engine,
    B::Scalar: Transcendental,
{
    let m = Model::new(backend, g, Rooting::Single)?;
    m.log_partition()?;
    m.marginals()?;
    m.entropy()?;
    Ok(())
}

fn exact_answer(g: &Graph) -> Result<Answer, ReportError> {
    let m = Model::new(Exact, g, Rooting::Single)?;
    let z = m.partition()?.to_reference();
    Ok(Answer {
        ln_z: z.ln(),
        marginals: m.marginals()?.map(ToReference::to_reference),
        entropy: None,
    })
}

fn exact_work(g: &Graph) -> Result<(), ReportError> {
    let m = Model::new(Exact, g, Rooting::Single)?;
    m.partition()?;
    m.marginals()?;
    Ok(())
}

/// `(ln Z, worst marginal, entropy)` bits.
fn score(a: &Answer, r: &Reference) -> (f64, f64, Option<f64>) {
    let cap = f64::from(REFERENCE_BITS) - 8.0;
    let ln_z = bits_against(&a.ln_z, &r.ln_z, cap);
    let worst = a
        .marginals
        .as_slice()
        .iter()
        .zip(r.marginals.as_slice())
        .filter(|(_, r)| !r.is_zero())
        .map(|(x, r)| bits_against(x, r, cap))
        .fold(cap, f64::min);
    let entropy = a.entropy.as_ref().map(|e| bits_against(e, &r.entropy, cap));
    (ln_z, worst, entropy)
}

type Backend = (
    &'static str,
    fn(&Graph) -> Result<Answer, ReportError>,
    fn(&Graph) -> Result<(), ReportError>,
);

fn backends() -> Vec<Backend> {
    vec![
        ("F64", |g| float_answer(F64, g), |g| float_work(F64, g)),
        (
            "ShiftedF64",
            |g| float_answer(ShiftedF64, g),
            |g| float_work(ShiftedF64, g),
        ),
        (
            "Accurate",
            |g| float_answer(Accurate, g),
            |g| float_work(Accurate, g),
        ),
        (
            "LogAccurate",
            |g| float_answer(LogAccurate, g),
            |g| float_work(LogAccurate, g),
        ),
        (
            "HighPrecision<128>",
            |g| float_answer(HighPrecision::<128>, g),
            |g| float_work(HighPrecision::<128>, g),
        ),
        ("Exact (rationals)", exact_answer, exact_work),
    ]
}

/// The number of (backend, size) cells, for the progress bar.
pub fn cells(opts: &Options) -> u64 {
    (backends().len() * opts.precision_sizes.len()) as u64
}

/// The table: per backend and size, the median time of `ln Z` + marginals +
/// entropy, and the fewest correct bits over the graphs.
pub fn table(model: &ScoreModel, opts: &Options, bar: &ProgressBar) -> Result<Table, ReportError> {
    let mut table = Table::new(&[
        "backend",
        "n",
        "time / sentence (median, range)",
        "bits ln Z",
        "bits marginals (worst entry)",
        "bits entropy",
    ]);
    let mut rng = SplitMix64::new(model.seed ^ 0x9e37);
    let graphs: Vec<(usize, Vec<Graph>)> = opts
        .precision_sizes
        .iter()
        .map(|&n| {
            let gs = (0..opts.precision_graphs)
                .map(|_| {
                    let heads = random_heads(n, &mut rng);
                    model.graph(&heads, rng.next_u64())
                })
                .collect();
            (n, gs)
        })
        .collect();
    let refs: Vec<Vec<Reference>> = graphs
        .iter()
        .map(|(_, gs)| gs.iter().map(reference).collect::<Result<Vec<_>, _>>())
        .collect::<Result<_, _>>()?;
    for (name, answer, work) in backends() {
        for ((n, gs), rs) in graphs.iter().zip(&refs) {
            let (mut lz, mut mu, mut h) = (f64::INFINITY, f64::INFINITY, Some(f64::INFINITY));
            for (g, r) in gs.iter().zip(rs) {
                let (a, b, c) = score(&answer(g)?, r);
                lz = lz.min(a);
                mu = mu.min(b);
                h = match (h, c) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    _ => None,
                };
            }
            let slow = name.starts_with("Exact") || name.starts_with("High");
            let (min_reps, max_reps, budget) = if slow { (1, 3, 0.5) } else { (5, 200, 0.3) };
            let mut samples = Vec::new();
            for g in gs {
                let t = time_adaptive(min_reps, max_reps, budget, || work(g));
                samples.push(t.median);
            }
            let t = super::util::Timing::of(samples);
            table.row(vec![
                name.to_string(),
                n.to_string(),
                format!(
                    "{} ({}–{})",
                    fmt_time(t.median),
                    fmt_time(t.min),
                    fmt_time(t.max)
                ),
                format!("{lz:.0}"),
                format!("{mu:.0}"),
                h.map_or("— (no logarithm in ℚ)".into(), |h| format!("{h:.0}")),
            ]);
            bar.inc(1);
        }
    }
    Ok(table)
}
