//! The calibration of the dense derivative check
//! ([`VjpAccuracy`](spantree_core::engine::VjpAccuracy)): for every
//! vector–Jacobian product of the marginals, the correct bits norm-wise of
//! the dense product against `HighPrecision<512>`, and whether the check
//! refuses it.
//!
//! `cargo run --profile test -p spantree-faer --example vjp_calibration [n…]`
//! (default `n = 3 4 5 6 8`, 40 graphs each; larger `n` take 4 graphs).
//! Families: `N(0, σ²)` scores, `σ = 1, 2, 4`, and uniform ones in `±5`,
//! `±10`, `±20`, `±50`; root scores shifted by `0, −5, −10, −20`; both
//! rootings. Seeds: an entropy seed `−θ`, a random `N(0, 1)` one and the
//! indicator of a random tree. Engines: dense LU on the weights as given
//! (`f64`) and on shifted columns (`log`), with the check, and `accurate`
//! (the default), whose dense product is kept only where the estimate
//! leaves `CERTIFY_DERIVATIVE_MARGIN` bits to spare. Only products whose
//! `ln Z` the dense check accepts count (the others are refused before any
//! derivative).
//!
//! `… --example vjp_calibration timing`: the GE gradient of `accurate` on
//! `N(0, 2²)` graphs at `n = 36, 100` (the inputs of `spantree-report
//! speed`): how often its dense product is kept, and its median time
//! against `ShiftedF64`'s.
//!
//! Per rooting and engine: the products, those that kept fewer than 45
//! bits, the refusals, the misses (returned with fewer than 45 bits), the
//! false refusals (45 bits or more, refused), the median, 99th percentile
//! and largest of true minus estimated bits (the estimate's pessimism) over the products the check saw, and the fewest and median
//! true bits of what is returned. For the dense engines the first columns
//! judge the dense product (without the check); what is returned is the
//! checked engine's answer, which single-root may be the elimination's
//! product (`escalated`: the check accepted the dense product, its second
//! opinion from the product's residuals did not, `SINGLE_ROOT_RESIDUAL_FACTOR`;
//! see `Dense::with_derivative_check`), and `returned`
//! counts the products answered. `accurate` reports the products its dense
//! route answered and the fewest bits it returned (a refusal counts as
//! false when the elimination's own product kept 45 bits); `elimination
//! alone` is `Eliminated`'s `f64` product before escalation, with its
//! running error estimate (`Eliminated::estimated_vjp`) as the check.
//! `CALIBRATION_DUMP=1` prints one line per elimination product: truth and
//! estimate.
//!
//! `… --example vjp_calibration gate [n…]` (default `n = 5 10 36`): the
//! entry-wise gate of the elimination (`ENTRY_BITS`) on `N(0, σ²)` graphs
//! (`σ = 1, 2, 4`) and uniform ones in `±20`, `±50`, root shifts `0, −5,
//! −10, −20`, the three seeds (20 graphs at `n ≤ 10`, 3 above): how often
//! it applies and escalates, and the fewest correct bits of an entry
//! `≥ 1e-8` of the largest that `Accurate` returns. Measured at `n = 5, 10,
//! 36`: it never applies on the `N(0, σ²)` graphs; at `n = 36` it escalates
//! 27–36 of 36 products of the `±20` and `±50` families and lifts their
//! fewest entry bits from 34.5–37.6 to 43.5–44.8.

#[path = "../tests/common/calibration.rs"]
mod calibration;

use calibration::{calibration_case, reference_product};
use spantree_bruteforce::bits::entrywise_bits;
use spantree_bruteforce::random::{normal_scores, rows, SplitMix64};
use spantree_core::engine::{VjpAccuracy, DERIVATIVE_BITS, ENTRY_BITS};
use spantree_core::Eliminated;
use spantree_core::{Engine, Error, Factors, Graph, Matrix, Model, Numerical, Rooting, Scalar};
use spantree_exact::HighPrecision;
use spantree_faer::{Accurate, DenseLu, Lu};

/// The model's column identities (`gradient::balance`, crate-private): in
/// each column the arc whose marginal exceeds `1/2` gets minus the sum of
/// the others; single-root, the same for the root arc above `1/2` unless
/// its column fixed it. Exact arithmetic is unchanged. `O(n²)`.
fn balance(v: &mut Matrix<f64>, mu: &Matrix<f64>, rooting: Rooting) {
    let n1 = v.rows();
    let mut fixed = None;
    for m in 1..n1 {
        if let Some(t) = (0..n1).find(|&h| h != m && mu[(h, m)] > 0.5) {
            v[(t, m)] = -(0..n1).filter(|&h| h != t).map(|h| v[(h, m)]).sum::<f64>();
            if t == 0 {
                fixed = Some(m);
            }
        }
    }
    if rooting == Rooting::Single {
        if let Some(m) = (1..n1).find(|&m| mu[(0, m)] > 0.5) {
            if fixed != Some(m) {
                v[(0, m)] = -(1..n1).filter(|&j| j != m).map(|j| v[(0, j)]).sum::<f64>();
            }
        }
    }
}

/// Norm-wise correct bits of `found` against `exact`, `0..=53`.
fn bits(found: &Matrix<f64>, exact: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (a, e) in found.as_slice().iter().zip(exact) {
        diff += (a - e) * (a - e);
        norm += e * e;
    }
    if diff == 0.0 {
        53.0
    } else if norm == 0.0 || diff.is_nan() {
        0.0
    } else {
        (-(diff.sqrt() / norm.sqrt()).log2()).clamp(0.0, 53.0)
    }
}

#[derive(Default)]
struct Tally {
    products: usize,
    below: usize,
    refused: usize,
    missed: usize,
    false_refusals: usize,
    pessimism: Vec<f64>,
    returned: Vec<f64>,
    dense: usize,
    /// Dense engines: products escalated to the elimination.
    escalated: usize,
}

impl Tally {
    fn row(&mut self, rooting: Rooting, engine: &str) {
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let fewest = self.returned.iter().copied().fold(53.0, f64::min);
        let returned = median(&mut self.returned);
        let pessimism = median(&mut self.pessimism);
        let quantile = |q: f64| {
            self.pessimism
                .get(((self.pessimism.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        let tail = format!("{:.1} / {:.1}", quantile(0.99), quantile(1.0));
        println!(
            "| {} | {engine} | {} | {} | {} | {} | {} | {pessimism:.1} | {tail} | {fewest:.1} | {returned:.1} | {} | {} | {} |",
            rooting.name(),
            self.products,
            self.below,
            self.refused,
            self.missed,
            self.false_refusals,
            self.dense,
            self.escalated,
            self.returned.len()
        );
    }
}

/// `Model::new` plus the GE gradient (20 sparse binary features, each arc
/// firing about two, targets `0.5`) on `N(0, 2²)` graphs, the inputs of
/// `spantree-report speed`: how many of 20 graphs `accurate` answers from
/// its dense product, and the median time of `accurate` against `ShiftedF64`
/// (the bare dense route), per rooting; and the norm-wise bits of
/// `accurate`'s gradient against `HighPrecision<256>` on 3 of the graphs.
fn timing(n: usize) {
    use spantree_core::{ArcFeatures, ArcRef};
    use spantree_faer::ShiftedF64;
    println!("| n | rooting | dense route (of 20) | `log` refused | `accurate` median | `log` median | ratio | `accurate` bits, fewest of 3 |");
    println!("|---|---|---|---|---|---|---|---|");
    for rooting in Rooting::ALL {
        let (mut dense, mut refused, mut worst) = (0, 0, 53.0f64);
        let (mut accurate, mut plain) = (Vec::new(), Vec::new());
        for g in 0..20u64 {
            let mut rng = SplitMix64::new(7 + g);
            let graph =
                Graph::from_scores(&rows(&normal_scores(&mut rng, n, 2.0, 0.0))).expect("valid");
            let mut f = ArcFeatures::new(20);
            for h in 0..=n {
                for m in (1..=n).filter(|&m| m != h) {
                    let values = (0..2).map(|_| (rng.below(20), 1.0)).collect();
                    let arc = ArcRef {
                        head: h,
                        dependent: m,
                        label: None,
                    };
                    f.push(arc, values).expect("arc");
                }
            }
            let targets = vec![0.5; 20];
            let model = Model::new(Accurate, &graph, rooting).expect("model");
            let found = model.grad_ge_objective(&f, &targets).expect("GE");
            if g < 3 {
                // The kept product against HighPrecision<256>.
                let fh = f.map(|&x| Scalar::from_f64(x));
                let th: Vec<_> = targets.iter().map(|&x| Scalar::from_f64(x)).collect();
                let exact = Model::new(HighPrecision::<256>, &graph, rooting)
                    .and_then(|m| m.grad_ge_objective(&fh, &th))
                    .expect("reference");
                let exact: Vec<f64> = exact[0].as_slice().iter().map(Scalar::to_f64).collect();
                worst = worst.min(bits(&found[0], &exact));
            }
            dense += usize::from(
                model.factors().is_certified() && !model.factors().elimination_formed(),
            );
            refused += usize::from(
                Model::new(ShiftedF64, &graph, rooting)
                    .and_then(|m| m.grad_ge_objective(&f, &targets))
                    .is_err(),
            );
            let time = |run: &dyn Fn()| {
                let mut t: Vec<f64> = (0..7)
                    .map(|_| {
                        let start = std::time::Instant::now();
                        run();
                        start.elapsed().as_secs_f64()
                    })
                    .collect();
                t.sort_by(f64::total_cmp);
                t[3]
            };
            // Interleaved, so that both see the same load.
            accurate.push(time(&|| {
                let m = Model::new(Accurate, &graph, rooting).expect("model");
                std::hint::black_box(m.grad_ge_objective(&f, &targets).ok());
            }));
            plain.push(time(&|| {
                let m = Model::new(ShiftedF64, &graph, rooting).expect("model");
                std::hint::black_box(m.grad_ge_objective(&f, &targets).ok());
            }));
        }
        accurate.sort_by(f64::total_cmp);
        plain.sort_by(f64::total_cmp);
        let (a, p) = (accurate[10], plain[10]);
        println!(
            "| {n} | {} | {dense} | {refused} | {:.2} ms | {:.2} ms | {:.1}× | {worst:.1} |",
            rooting.name(),
            a * 1e3,
            p * 1e3,
            a / p
        );
    }
}

/// The entry-wise gate of the elimination (`ENTRY_BITS`): per family and
/// rooting, on how many products the gate applies (`anchored`: some arc
/// certain to `2⁻²⁶`, or word-arc weights into a word more than `2⁵³`
/// apart), how many products the elimination recomputes in double-double
/// (`escalated`, `≈ 10×` the product's time; norm-wise or by the gate), how
/// many products' entry-wise estimate is below `ENTRY_BITS` (what a gate
/// on every graph would escalate), and the fewest correct bits of an entry
/// `≥ 1e-8` of the largest that `Accurate` returns, against
/// `HighPrecision<512>`.
fn gate(sizes: &[usize]) {
    println!("| rooting | family | n | products | anchored | escalated | entry estimate < ENTRY_BITS | fewest entry bits returned |");
    println!("|---|---|---|---|---|---|---|---|");
    let names = ["N(0,1)", "N(0,2²)", "N(0,4²)", "±5", "±10", "±20", "±50"];
    for rooting in Rooting::ALL {
        for family in [0u64, 1, 2, 5, 6] {
            for &n in sizes {
                let graphs = if n <= 10 { 20 } else { 3 };
                let (mut products, mut anchored, mut escalated, mut fewest) = (0, 0, 0, 53.0f64);
                let mut low = 0;
                for shift in [0.0, -5.0, -10.0, -20.0] {
                    for g in 0..graphs {
                        let (graph, seeds) = calibration_case(n, family, shift, g);
                        let Ok(reference) = Model::new(HighPrecision::<512>, &graph, rooting)
                        else {
                            continue;
                        };
                        let Ok(model) = Model::new(Accurate, &graph, rooting) else {
                            continue;
                        };
                        let weights = model.factors().weights().clone();
                        let eliminated = Eliminated::<f64, Lu>::new(weights, rooting, Lu::new);
                        for seed in &seeds {
                            let Ok(truth) = reference_product(&reference, seed) else {
                                continue;
                            };
                            let Ok((_, estimate)) = eliminated.estimated_vjp_entrywise(seed) else {
                                continue;
                            };
                            products += 1;
                            anchored += usize::from(estimate.anchored);
                            escalated += usize::from(estimate.escalates);
                            low += usize::from(estimate.entry_bits < ENTRY_BITS);
                            if let Ok(v) = model.marginals_vjp(seed) {
                                fewest = fewest.min(entrywise_bits(v.as_slice(), &truth));
                            }
                        }
                    }
                }
                println!(
                    "| {} | {} | {n} | {products} | {anchored} | {escalated} | {low} | {fewest:.1} |",
                    rooting.name(),
                    names[family as usize]
                );
            }
        }
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("gate") {
        let sizes: Vec<usize> = std::env::args()
            .skip(2)
            .filter_map(|a| a.parse().ok())
            .collect();
        gate(if sizes.is_empty() {
            &[5, 10, 36]
        } else {
            &sizes
        });
        return;
    }
    if std::env::args().nth(1).as_deref() == Some("timing") {
        for n in [36, 100] {
            timing(n);
        }
        return;
    }
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![3, 4, 5, 6, 8]
    } else {
        sizes
    };
    let verbose = std::env::var_os("CALIBRATION_VERBOSE").is_some();
    // One line per elimination product: truth and estimate (for the factor).
    let dump = std::env::var_os("CALIBRATION_DUMP").is_some();
    println!("| rooting | engine | products | < 45 bits | refused | missed | false refusals | median truth − estimate | 99th percentile / max | fewest returned | median returned | dense route | escalated | returned |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for rooting in Rooting::ALL {
        let mut tallies: [Tally; 4] = Default::default();
        for &n in &sizes {
            let graphs = if n <= 10 { 40 } else { 4 };
            for family in 0..7u64 {
                for shift in [0.0, -5.0, -10.0, -20.0] {
                    for g in 0..graphs {
                        let (graph, [entropy, random, tree]) =
                            calibration_case(n, family, shift, g);
                        let Ok(reference) = Model::new(HighPrecision::<512>, &graph, rooting)
                        else {
                            continue;
                        };
                        for (what, seed) in
                            [("entropy", &entropy), ("random", &random), ("tree", &tree)]
                        {
                            let Ok(truth) = reference_product(&reference, seed) else {
                                continue;
                            };
                            for (k, shifted) in [false, true].into_iter().enumerate() {
                                let plain = DenseLu {
                                    shifted,
                                    derivative_check: false,
                                };
                                let checked = DenseLu {
                                    shifted,
                                    derivative_check: true,
                                };
                                let Ok(model) = Model::new(plain, &graph, rooting) else {
                                    continue;
                                };
                                let Ok(v) = model.marginals_vjp(seed) else {
                                    continue;
                                };
                                let truth_bits = bits(&v, &truth);
                                let factors = model.factors();
                                let estimate = VjpAccuracy::of(
                                    seed,
                                    factors.weights(),
                                    factors.inverse().expect("inverse"),
                                    &v,
                                    rooting,
                                );
                                // The checked engine's answer: the dense
                                // product, refused, or (single-root, where
                                // only the residuals doubt it) escalated to
                                // the elimination.
                                let answer = Model::new(checked, &graph, rooting).and_then(|m| {
                                    let v = m.marginals_vjp(seed)?;
                                    Ok((v, m.factors().elimination_formed()))
                                });
                                let refused = matches!(
                                    answer,
                                    Err(Error::Numerical(Numerical::Inaccurate { .. }))
                                );
                                let t = &mut tallies[k];
                                t.products += 1;
                                t.pessimism.push(truth_bits - estimate.bits());
                                let below = truth_bits < DERIVATIVE_BITS;
                                t.below += usize::from(below);
                                t.refused += usize::from(refused);
                                t.false_refusals += usize::from(!below && refused);
                                let mut returned_bits = None;
                                if let Ok((v, escalated)) = &answer {
                                    let b = bits(v, &truth);
                                    t.escalated += usize::from(*escalated);
                                    t.missed += usize::from(b < DERIVATIVE_BITS);
                                    t.returned.push(b);
                                    returned_bits = Some(b);
                                }
                                let missed = returned_bits.is_some_and(|b| b < DERIVATIVE_BITS);
                                // Misses, false refusals, and the dense
                                // products below 45 bits that the checked
                                // engine answered (escalated or missed).
                                if verbose && (missed || (!below && refused) || (below && !refused))
                                {
                                    println!(
                                        "  {} {} n = {n} family {family} shift {shift} graph {g} {what}: {truth_bits:.1} bits, estimate {:.1}, refused {refused}, returned {returned_bits:?}",
                                        rooting.name(),
                                        plain.name(),
                                        estimate.bits()
                                    );
                                }
                            }
                            let Ok(model) = Model::new(Accurate, &graph, rooting) else {
                                continue;
                            };
                            // The elimination alone (what `accurate` answers
                            // with when its dense product is not certified):
                            // its product before the running error estimate
                            // refuses, against the truth, and the estimate.
                            let weights = model.factors().weights().clone();
                            let eliminated = Eliminated::<f64, Lu>::new(weights, rooting, Lu::new);
                            let mu = model.marginals().expect("marginals");
                            let mut elimination_bits = None;
                            if let Ok((mut v, estimate)) = eliminated.estimated_vjp(seed) {
                                balance(&mut v, &mu, rooting);
                                let truth_bits = bits(&v, &truth);
                                let t = &mut tallies[3];
                                let below = truth_bits < DERIVATIVE_BITS;
                                let refused = estimate < DERIVATIVE_BITS;
                                t.products += 1;
                                t.pessimism.push(truth_bits - estimate);
                                t.below += usize::from(below);
                                t.refused += usize::from(refused);
                                t.missed += usize::from(below && !refused);
                                t.false_refusals += usize::from(!below && refused);
                                if !refused {
                                    t.returned.push(truth_bits);
                                }
                                elimination_bits = Some(truth_bits);
                                if dump {
                                    println!("dump {} {n} {family} {shift} {g} {what} {truth_bits:.2} {estimate:.2}", rooting.name());
                                }
                                if verbose && below != refused {
                                    println!(
                                        "  {} elimination n = {n} family {family} shift {shift} graph {g} {what}: {truth_bits:.1} bits, estimate {estimate:.1}",
                                        rooting.name(),
                                    );
                                }
                            }
                            let t = &mut tallies[2];
                            match model.marginals_vjp(seed) {
                                Ok(v) => {
                                    let truth_bits = bits(&v, &truth);
                                    t.products += 1;
                                    t.below += usize::from(truth_bits < DERIVATIVE_BITS);
                                    t.missed += usize::from(truth_bits < DERIVATIVE_BITS);
                                    t.returned.push(truth_bits);
                                    if verbose && truth_bits < DERIVATIVE_BITS {
                                        let norm = truth.iter().map(|x| x * x).sum::<f64>().sqrt();
                                        println!(
                                            "  {} accurate n = {n} family {family} shift {shift} graph {g} {what}: {truth_bits:.1} bits, ‖v‖ = {norm:.1e}, certified {}, eliminated {}",
                                            rooting.name(),
                                            model.factors().is_certified(),
                                            model.factors().elimination_formed()
                                        );
                                    }
                                    t.dense += usize::from(
                                        model.factors().is_certified()
                                            && !model.factors().elimination_formed(),
                                    );
                                }
                                Err(Error::Numerical(Numerical::Inaccurate { .. })) => {
                                    // Refused: judged by what the elimination
                                    // would have returned.
                                    t.products += 1;
                                    t.refused += 1;
                                    let below =
                                        elimination_bits.is_none_or(|b| b < DERIVATIVE_BITS);
                                    t.below += usize::from(below);
                                    t.false_refusals += usize::from(!below);
                                }
                                Err(_) => {}
                            }
                        }
                    }
                }
            }
        }
        for (t, engine) in tallies
            .iter_mut()
            .zip(["f64", "log", "accurate", "elimination alone"])
        {
            t.row(rooting, engine);
        }
    }
}
