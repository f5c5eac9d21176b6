//! Honest numbers (the cheap version of the `honest_accuracy` example of
//! `spantree-faer`): every gradient, covariance and pair marginal of the
//! cancellation-free engines keeps its bits when root scores drop far below
//! the arcs', and the dense engines either stay accurate or refuse with a
//! typed error. Oracle: `HighPrecision<1216>` (MPFR at 1216 bits: root
//! shift −300 puts `Z` and the Laplacian's smallest entries `e^{−300}`
//! ≈ `2^{−433}` below the largest, and dense LU at this precision keeps
//! `1216 − 2·433 > 300` bits there).

use spantree_bruteforce::bits::normwise_and_entrywise_bits as bits;
use spantree_bruteforce::random::{self, SplitMix64};
use spantree_core::{
    ArcFeatures, ArcRef, Engine, Error, Graph, Inaccuracy, Matrix, Model, Numerical, Rooting,
    Scalar, SecondOrder, Transcendental,
};
use spantree_exact::HighPrecision;
use spantree_faer::{Accurate, LogAccurate, ShiftedF64, F64};

type Reference = HighPrecision<1216>;

/// The `shift` of [`graph`] that asks for arc scores spread over `±50`.
const SPREAD: f64 = f64::INFINITY;

fn arc(h: usize, m: usize) -> ArcRef {
    ArcRef {
        head: h,
        dependent: m,
        label: None,
    }
}

/// `N(0, 1)` arc scores, root scores `N(0, 1) + shift`, with `labels`
/// labels per arc (one: unlabeled). With `rounded`, the graph holds the
/// weights `e^θ` rounded to `f64` instead of the scores: the same
/// distribution moved by the relative `2⁻⁵³` that preparing weights in
/// `f64` costs every engine (the conditioning floor).
///
/// `shift = SPREAD` gives the nearly deterministic family instead: word-arc
/// scores uniform in `±50`, root scores `N(0, 1)`.
fn graph(rng: &mut SplitMix64, n: usize, shift: f64, labels: usize, rounded: bool) -> Graph {
    let mut scores = || {
        let mut s = if shift == SPREAD {
            random::uniform_scores(rng, n, 50.0)
        } else {
            random::normal_scores(rng, n, 1.0, 0.0)
        };
        for m in 1..=n {
            s[(0, m)] = if shift == SPREAD {
                rng.normal()
            } else {
                s[(0, m)] + shift
            };
        }
        s
    };
    let per: Vec<Matrix<f64>> = (0..labels).map(|_| scores()).collect();
    let rows: Vec<Vec<Vec<f64>>> = (0..=n)
        .map(|h| {
            (0..=n)
                .map(|m| {
                    per.iter()
                        .map(|s| if rounded { s[(h, m)].exp() } else { s[(h, m)] })
                        .collect()
                })
                .collect()
        })
        .collect();
    let flat: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| r.iter().map(|c| c[0]).collect())
        .collect();
    match (labels, rounded) {
        (1, false) => Graph::from_scores(&flat).expect("valid"),
        (1, true) => Graph::from_weights(&flat).expect("valid"),
        (_, false) => Graph::from_labeled_scores(&rows).expect("valid"),
        (_, true) => Graph::from_labeled_weights(&rows).expect("valid"),
    }
}

struct Case {
    p: Graph,
    q: Graph,
    heads: Vec<usize>,
    features: Vec<(usize, usize, [f64; 2])>,
    pairs: Vec<(ArcRef, ArcRef)>,
}

fn case(n: usize, shift: f64, labels: usize, seed: u64, rounded: bool) -> Case {
    let mut rng = SplitMix64::new(seed);
    let p = graph(&mut rng, n, shift, labels, rounded);
    let q = graph(&mut rng, n, shift, labels, rounded);
    let heads = (1..=n).map(|m| rng.below(n + 1 - 1).min(m - 1)).collect();
    let mut features = Vec::new();
    for h in 0..=n {
        for m in (1..=n).filter(|&m| m != h) {
            if rng.chance(0.4) {
                features.push((h, m, [rng.normal(), rng.normal()]));
            }
        }
    }
    let pairs = (1..n)
        .map(|m| (arc(0, m), arc(m, m + 1)))
        .chain((2..=n).map(|m| (arc(m - 1, m), arc(0, 1))))
        .collect();
    Case {
        p,
        q,
        heads,
        features,
        pairs,
    }
}

type Out = Result<Vec<f64>, Error>;

fn flat<S: Scalar>(m: &[Matrix<S>]) -> Vec<f64> {
    m.iter()
        .flat_map(|x| x.as_slice().iter().map(Scalar::to_f64))
        .collect()
}

/// `ln Z` first, then every derivative, as flat vectors.
fn quantities<E: Engine>(engine: E, c: &Case, rooting: Rooting) -> Vec<(&'static str, Out)>
where
    E::Scalar: Transcendental,
{
    let p = Model::new(engine.clone(), &c.p, rooting).expect("model");
    let q = Model::new(engine, &c.q, rooting).expect("model");
    let mut features = ArcFeatures::new(2);
    for (h, m, v) in &c.features {
        let values = v
            .iter()
            .map(|&x| E::Scalar::from_f64(x))
            .enumerate()
            .collect();
        features.push(arc(*h, *m), values).expect("arc");
    }
    let targets = [E::Scalar::from_f64(0.2), E::Scalar::from_f64(-0.1)];
    let n1 = p.n() + 1;
    let seed: Vec<Matrix<E::Scalar>> = (0..p.labels())
        .map(|l| {
            Matrix::from_fn(n1, n1, |h, m| {
                E::Scalar::from_f64(((h * 7 + m * 3 + l) % 5) as f64 - 2.0)
            })
        })
        .collect();
    vec![
        ("ln Z", p.log_partition().map(|x| vec![x])),
        ("entropy", p.grad_entropy().map(|g| flat(&g))),
        (
            "cross-entropy",
            p.grad_cross_entropy(&q)
                .map(|g| [flat(&g.wrt_p), flat(&g.wrt_q)].concat()),
        ),
        (
            "KL",
            p.grad_kl_divergence(&q)
                .map(|g| [flat(&g.wrt_p), flat(&g.wrt_q)].concat()),
        ),
        (
            "attachment",
            p.grad_expected_attachment(&c.heads, None).map(|g| flat(&g)),
        ),
        (
            "GE",
            p.grad_ge_objective(&features, &targets).map(|g| flat(&g)),
        ),
        ("grad Z", p.grad_partition().map(|g| flat(&[g]))),
        ("label VJP", p.label_marginals_vjp(&seed).map(|g| flat(&g))),
        (
            "covariance",
            p.covariance(&features, &features, SecondOrder::Auto)
                .map(|g| flat(&[g])),
        ),
        (
            "pairs",
            p.pair_marginals(&c.pairs)
                .map(|v| v.iter().map(Scalar::to_f64).collect()),
        ),
    ]
}

/// The bars of one engine: norm-wise bits of every derivative, and
/// entry-wise bits `min(entry, floor) − slack`, where `floor` is what the
/// reference itself keeps when the weights are rounded to `f64` once (no
/// route from `f64` weights can beat it); whether it may refuse with a
/// typed numerical error instead (then `ln Z` needs only 20 bits).
#[derive(Clone, Copy)]
struct Bar {
    norm: f64,
    entry: f64,
    slack: f64,
    may_refuse: bool,
}

/// Every quantity of `engine` against the reference: at least the bars,
/// or (when `may_refuse`) a typed numerical error.
fn check<E: Engine<Scalar = f64>>(
    engine: E,
    exact: &[(&'static str, Out)],
    floor: &[(&'static str, Out)],
    c: &Case,
    rooting: Rooting,
    bar: Bar,
    ctx: &str,
) {
    let found = quantities(engine.clone(), c, rooting);
    for (((name, a), (_, e)), (_, f)) in found.iter().zip(exact).zip(floor) {
        let e = e.as_ref().expect("reference");
        let floor = bits(f.as_ref().expect("reference"), e).1;
        match a {
            Ok(a) => {
                let (norm, entry) = bits(a, e);
                if std::env::var_os("HONEST_WORST").is_some() {
                    let mut v: Vec<(usize, f64, f64)> = a
                        .iter()
                        .zip(e)
                        .enumerate()
                        .map(|(i, (x, y))| (i, *x, *y))
                        .filter(|(_, x, y)| x != y)
                        .collect();
                    v.sort_by(|p, q| {
                        ((q.1 - q.2) / q.2)
                            .abs()
                            .total_cmp(&((p.1 - p.2) / p.2).abs())
                    });
                    for (i, x, y) in v.iter().take(4) {
                        println!("  {ctx} {name} [{i}] found {x:e} exact {y:e}");
                    }
                }
                if std::env::var_os("HONEST_PRINT").is_some() {
                    println!(
                        "{ctx} {} {name}: {norm:.1} / {entry:.1}, floor {floor:.1}",
                        engine.name()
                    );
                }
                let (need_norm, need_entry) = if *name == "ln Z" && bar.may_refuse {
                    (20.0, 0.0)
                } else {
                    (bar.norm, bar.entry.min(floor) - bar.slack)
                };
                assert!(
                    norm >= need_norm && entry >= need_entry,
                    "{ctx} {}: {name} keeps {norm:.1} / {entry:.1} bits < {need_norm} / {need_entry}",
                    engine.name()
                );
            }
            Err(Error::Numerical(_)) if bar.may_refuse => {}
            Err(err) => panic!("{ctx} {}: {name} failed: {err}", engine.name()),
        }
    }
}

/// The shifted families at small `n`: `accurate` keeps ≥ 45 bits
/// norm-wise, and in every entry at least `1e-8` of the largest the
/// issue's 40 bits or, where rounding the weights to `f64` alone leaves
/// fewer (the floor: an entry that is a small difference, measured down to
/// 39.4 bits here), within 4 bits of that floor (measured: within 3.2).
/// `log-accurate` is held to the same bars (one more bit of slack entry-wise):
/// its marginals and derivatives
/// run in `f64` like `accurate`'s elimination, and single-root its root row
/// is scaled by an exact power of two before the logarithms of `ln Z` are
/// taken (a weight `e^{shift}` held as its logarithm carries `|shift| ε`:
/// it lost `log₂ |shift|` bits, 35.7 entry-wise at −300 against a floor of
/// 48). The dense engines keep ≥ 20 bits of `ln Z` and ≥ 30 of every
/// derivative, or refuse.
#[test]
fn shifted_families_keep_their_bits_or_refuse() {
    let accurate = Bar {
        norm: 45.0,
        entry: 40.0,
        slack: 4.0,
        may_refuse: false,
    };
    // One bit more slack: at shift 0 `log-accurate` eliminates where
    // `accurate` is certified dense, measured 35.4 entry-wise (multi-root
    // GE, n = 5) against a floor of 39.4.
    let log = Bar {
        slack: 5.0,
        ..accurate
    };
    let dense = Bar {
        norm: 30.0,
        entry: 0.0,
        slack: 0.0,
        may_refuse: true,
    };
    for (n, labels) in [(5, 1), (5, 2), (9, 1)] {
        for shift in [0.0, -20.0, -300.0] {
            for rooting in Rooting::ALL {
                let ctx = format!("n={n} labels={labels} shift={shift} {}", rooting.name());
                let c = case(n, shift, labels, 11 + n as u64, false);
                let exact = quantities(Reference::default(), &c, rooting);
                let moved = case(n, shift, labels, 11 + n as u64, true);
                let floor = quantities(Reference::default(), &moved, rooting);
                for (engine, bar) in [(0, accurate), (1, log), (2, dense), (3, dense)] {
                    let (e, f) = (&exact, &floor);
                    match engine {
                        0 => check(Accurate, e, f, &c, rooting, bar, &ctx),
                        1 => check(LogAccurate, e, f, &c, rooting, bar, &ctx),
                        2 => check(F64, e, f, &c, rooting, bar, &ctx),
                        _ => check(ShiftedF64, e, f, &c, rooting, bar, &ctx),
                    }
                }
            }
        }
    }
}

/// Nearly deterministic graphs (word-arc scores uniform in `±50`, so most
/// marginals are within `1e-20` of 0 or 1, and the derivatives are tiny
/// differences such as `μ_e (E[g | e] − E[g])` with `E[g] ≈ 1e-22`): both
/// cancellation-free engines keep ≥ 45 bits norm-wise and, entry by entry,
/// 40 bits or within 4 of the floor (measured: ≥ 47.4 norm-wise, ≥ 41
/// entry-wise), where dual-number tangents kept 38.7 norm-wise (the
/// single-root attachment gradient: relative tangents `±1` cancelling to
/// `1e-22`). With two labels whose scores are spread as widely, one label
/// holds nearly all of an arc's weight; the label terms of
/// [`Model::label_marginals_vjp`], read as `ḡ_{eℓ} − ḡ̄_e`, then lost
/// `log₂ 1/(1 − s_ℓ)` bits: GE kept 29.4 bits entry-wise here (16.4 in an
/// earlier sweep) until they were formed from the other labels' shares
/// (now ≥ 51).
#[test]
fn spread_family_keeps_its_bits() {
    let accurate = Bar {
        norm: 45.0,
        entry: 40.0,
        slack: 4.0,
        may_refuse: false,
    };
    let log = accurate;
    for (n, labels) in [(5, 1), (5, 2), (7, 1)] {
        for rooting in Rooting::ALL {
            let ctx = format!("n={n} labels={labels} spread {}", rooting.name());
            let c = case(n, SPREAD, labels, 7_919 + n as u64, false);
            let exact = quantities(Reference::default(), &c, rooting);
            let moved = case(n, SPREAD, labels, 7_919 + n as u64, true);
            let floor = quantities(Reference::default(), &moved, rooting);
            check(Accurate, &exact, &floor, &c, rooting, accurate, &ctx);
            check(LogAccurate, &exact, &floor, &c, rooting, log, &ctx);
        }
    }
}

/// The issue's own case: multi-root, root scores −300 below `N(0, 1)` arcs.
/// Dense LU used to return `ln Z = −5.68` for `−269.39`: now a typed error.
#[test]
fn dense_lu_refuses_what_it_cannot_hold() {
    let mut rng = SplitMix64::new(5);
    let g = graph(&mut rng, 12, -300.0, 1, false);
    let truth = Model::new(Accurate, &g, Rooting::Multi)
        .unwrap()
        .log_partition()
        .unwrap();
    let reference = Model::new(Reference::default(), &g, Rooting::Multi)
        .unwrap()
        .log_partition()
        .unwrap();
    // rel 1e-14: the elimination's ln Z, a few roundings.
    assert!((truth - reference).abs() < 1e-14 * reference.abs());
    for refused in [
        Model::new(F64, &g, Rooting::Multi).unwrap().log_partition(),
        Model::new(ShiftedF64, &g, Rooting::Multi)
            .unwrap()
            .log_partition(),
    ] {
        match refused {
            Err(Error::Numerical(Numerical::Inaccurate { cause, bits })) => {
                assert!(bits < 20, "{cause}: {bits} bits");
            }
            Err(Error::Numerical(Numerical::Singular { .. })) => {}
            Ok(z) => panic!("dense LU returned {z} for {reference}"),
            Err(other) => panic!("unexpected {other}"),
        }
    }
    // The pivot check names the cause once the pivots survive: shift −40.
    let g = graph(&mut rng, 12, -40.0, 1, false);
    let err = Model::new(ShiftedF64, &g, Rooting::Multi)
        .unwrap()
        .marginals()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Numerical(Numerical::Inaccurate { .. } | Numerical::Singular { .. })
        ),
        "{err}"
    );
}

/// The dense engines on ordinary graphs (`N(0, 1)` and `N(0, 2²)` scores,
/// `n ≤ 40`, both rootings; the example measures `n ≤ 100`): `ln Z` and the
/// marginals are never refused, and every entropy gradient they return
/// keeps 45 bits norm-wise against `HighPrecision<256>` (no miss). A refused
/// gradient is a typed `SmallDerivative` error; it is a false refusal when
/// the unchecked gradient kept 45 bits anyway. The derivative estimate is
/// pessimistic, so false refusals happen and are counted: 3 of the 112
/// gradients here, all at `σ = 2`, `n = 4` (they kept 45.2–46.0 bits),
/// checked as "at most 3" so that a change which refuses more must say so
/// here (`cargo run --profile test -p spantree-faer --example
/// honest_accuracy refusals` reports the rate at `n ≤ 100`).
///
/// The small sizes `n = 2, 3, 6, 8` (with `4`) are where the single-root
/// check, which does not take the floor of `SINGLE_ROOT_LARGEST_FACTOR`,
/// let dense products through with 40.6–44.9 bits in the calibration
/// sweep: single-root, the dense engines now escalate to the elimination
/// the products that only the second opinion of the product's residuals
/// (`SINGLE_ROOT_RESIDUAL_FACTOR`, which replaced that floor) doubts. Those gradients are held to
/// the same 45 bits, and some must be escalated. Since the residuals are
/// weighted by their columns' `‖w‖₂ / ‖w‖₁`, no gradient of `σ ≤ 2` is
/// escalated here (1 of the 72 single-root ones was, at `n = 13`, keeping
/// 50.0 bits; 16 at `n = 4`–`22` with that floor), so `σ = 3` graphs cover
/// the escalation: 3 of its 36 single-root gradients, keeping 48.8–52.2
/// bits. Its false refusals (10 multi-root, 46.3–49.3 bits: the estimate
/// grows with the spread of the scores) are counted apart and bounded too;
/// those of `σ ≤ 2` did not grow (the same 3).
#[test]
fn dense_check_misses_nothing_on_ordinary_graphs() {
    let mut false_refusals = Vec::new();
    let mut escalated = Vec::new();
    for sigma in [1.0, 2.0, 3.0] {
        for n in (1..=40).step_by(3).chain([2, 3, 6, 8]) {
            let mut rng = SplitMix64::new(n as u64);
            let s = random::normal_scores(&mut rng, n, sigma, 0.0);
            let g = Graph::from_scores(&random::rows(&s)).unwrap();
            for rooting in Rooting::ALL {
                let exact = Model::new(HighPrecision::<256>, &g, rooting)
                    .and_then(|m| m.grad_entropy())
                    .unwrap_or_else(|e| panic!("σ={sigma} n={n}: {e}"));
                let exact: Vec<f64> = exact[0].as_slice().iter().map(Scalar::to_f64).collect();
                for shifted in [false, true] {
                    let ctx = format!("σ={sigma} n={n} {} shifted={shifted}", rooting.name());
                    let engine = |derivative_check| spantree_faer::DenseLu {
                        shifted,
                        derivative_check,
                    };
                    let model = Model::new(engine(true), &g, rooting).unwrap();
                    model
                        .log_partition()
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    model.marginals().unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    match model.grad_entropy() {
                        Ok(found) => {
                            let bits = spantree_bruteforce::bits::normwise_bits(
                                found[0].as_slice(),
                                &exact,
                            );
                            assert!(bits >= 45.0, "{ctx}: returned with {bits:.1} bits");
                            if model.factors().elimination_formed() {
                                escalated.push(format!("{ctx} ({bits:.1} bits)"));
                            }
                        }
                        Err(Error::Numerical(Numerical::Inaccurate {
                            cause: Inaccuracy::SmallDerivative { .. },
                            ..
                        })) => {
                            let found = Model::new(engine(false), &g, rooting)
                                .and_then(|m| m.grad_entropy())
                                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                            let bits = spantree_bruteforce::bits::normwise_bits(
                                found[0].as_slice(),
                                &exact,
                            );
                            if bits >= 45.0 {
                                false_refusals.push(format!("{ctx} ({bits:.1} bits)"));
                            }
                        }
                        Err(e) => panic!("{ctx}: {e}"),
                    }
                }
            }
        }
    }
    eprintln!("false refusals: {false_refusals:#?}");
    eprintln!("escalated to the elimination: {escalated:#?}");
    // The zone is one of small single-root graphs (the floor grows with the
    // largest arc only): it must be met here, or the sizes miss it.
    assert!(
        !escalated.is_empty() && escalated.iter().all(|c| c.contains("single")),
        "escalated: {escalated:#?}"
    );
    let (wide, ordinary): (Vec<_>, Vec<_>) =
        false_refusals.iter().partition(|c| c.starts_with("σ=3 "));
    assert!(
        wide.len() <= 10,
        "{} false refusals at σ = 3: {wide:#?}",
        wide.len()
    );
    assert!(
        ordinary.len() <= 3,
        "{} false refusals: {ordinary:#?}",
        ordinary.len()
    );
}

/// The derivative of `Z` for forbidden arcs and at `Z`'s own scale, from
/// the elimination: against the reference at 1e-14 relative (entry-wise:
/// `Z ν` multiplies non-negative numbers only, `n = 8` words give a few tens
/// of roundings, and the factor `e^{Σ c}` of the column shifts is taken
/// from their double-double sum, not from a sum rounded to `|Σ c| ε`).
#[test]
fn grad_partition_entrywise() {
    let mut rng = SplitMix64::new(77);
    let s = random::normal_scores(&mut rng, 8, 1.0, 0.3);
    let g = Graph::from_scores(&random::rows(&s)).unwrap();
    for rooting in Rooting::ALL {
        if g.spanning_tree(rooting).is_err() {
            continue;
        }
        let a = Model::new(Accurate, &g, rooting)
            .unwrap()
            .grad_partition()
            .unwrap();
        let e = Model::new(Reference::default(), &g, rooting)
            .unwrap()
            .grad_partition()
            .unwrap();
        for (x, y) in a.as_slice().iter().zip(e.as_slice()) {
            let y = y.to_f64();
            assert!((x - y).abs() <= 1e-14 * y.abs(), "{rooting:?}: {x} vs {y}");
        }
    }
}

/// Scores up to ±705 (the CLI's large-score test): `Z` overflows `f64`,
/// and `grad_partition` says so with a typed error instead of panicking in
/// the scaled product of the pivots.
#[test]
fn grad_partition_of_huge_scores_is_typed() {
    let mut rng = SplitMix64::new(4);
    for i in 0..20usize {
        let s = random::uniform_scores(&mut rng, 4 + i % 5, 705.0);
        let g = Graph::from_scores(&random::rows(&s)).unwrap();
        for rooting in Rooting::ALL {
            let model = Model::new(Accurate, &g, rooting).unwrap();
            match model.grad_partition() {
                Ok(grad) => assert!(grad.as_slice().iter().all(|x| x.is_finite())),
                Err(e) => assert_eq!(e, Error::Numerical(Numerical::NotFinite)),
            }
        }
    }
}

/// `J 1_root = Cov[1_e, #root arcs]` on graded numbers keeps its relative
/// accuracy entry by entry at root shifts where it is `e^{−30}` times
/// smaller than the marginals (a seed of `1` on the root arcs on dual
/// numbers keeps only `n ε μ_e` absolutely: ~7 bits at −30, none at −200).
/// Oracle: the
/// vector–Jacobian product of `HighPrecision<1216>` (dense LU; its second
/// order cancels twice the `289` bits that root weights `e^{−200}` put
/// between the Laplacian's entries) on the same `f64` weights; by symmetry of the Hessian of `ln Z`,
/// `Σ_e 1_root(e) ∂μ_e/∂θ_f = Cov[#root arcs, 1_f]`.
#[test]
fn root_scaling_keeps_relative_bits() {
    use spantree_core::elimination::{root_scaling_jvp, Graded, LnGraded};
    for n in [3, 6, 10] {
        for shift in [0.0, -30.0, -200.0] {
            let mut rng = SplitMix64::new(40 + n as u64);
            let mut s = random::normal_scores(&mut rng, n, 1.0, 0.0);
            for m in 1..=n {
                s[(0, m)] += shift;
            }
            let w = s.map(|x| x.exp());
            let g = Graph::from_weights(&random::rows(&w)).unwrap();
            let reference = Model::new(Reference::default(), &g, Rooting::Multi).unwrap();
            let ones = Matrix::from_fn(n + 1, n + 1, |h, m| {
                <Reference as Engine>::Scalar::from_f64(if h == 0 && m > 0 { 1.0 } else { 0.0 })
            });
            let e = reference.marginals_vjp(&ones).unwrap().map(Scalar::to_f64);
            let (a, tiny) = root_scaling_jvp::<Graded>(&w).unwrap();
            let (b, _) = root_scaling_jvp::<LnGraded>(&w).unwrap();
            for (h, m) in (0..=n)
                .flat_map(|h| (1..=n).map(move |m| (h, m)))
                .filter(|(h, m)| h != m)
            {
                let x = e[(h, m)];
                // rel 1e-12 (f64, n ≤ 10 roundings per path) and, in log
                // space, 1e-11 (1 + |shift|/30): each of the ~n logarithms
                // on a path carries |ln a| ε, and |ln a| grows with |shift|.
                let ctx = format!("n={n} shift={shift} {h}→{m}: {x:e}");
                if !tiny {
                    assert!(
                        (a[(h, m)] - x).abs() <= 1e-12 * x.abs(),
                        "{ctx}: {}",
                        a[(h, m)]
                    );
                }
                let tol = 1e-11 * (1.0 + shift.abs() / 30.0);
                assert!(
                    (b[(h, m)] - x).abs() <= tol * x.abs(),
                    "{ctx}: log {}",
                    b[(h, m)]
                );
            }
        }
    }
}

/// Single-root, the elimination first scales the root row by the power of
/// two that brings its largest weight (below 1) into `[1, 2)`: every tree has one
/// root arc, so the marginals and their derivatives do not move (the
/// identity is the oracle). Root weights that are multiples of `2⁻¹⁰⁷⁴`
/// (subnormal: the scaling is `2¹⁰⁷¹`, beyond one `f64` factor) give
/// *bit for bit* the answers of the same multiples of `2⁻⁴`, on dual
/// numbers and in log space, where without the scaling the subnormals
/// would lose bits (and, in log space, `|ln w| ≈ 744` times `ε`).
#[test]
fn single_root_answers_ignore_the_root_scale() {
    use spantree_core::elimination::{marginals_jvp, Dual, LnDual};
    let n = 4;
    let mut rng = SplitMix64::new(17);
    let s = random::normal_scores(&mut rng, n, 1.0, 0.0);
    let direction = s.map(|x| if x.is_finite() { -x } else { 0.0 });
    let unit = Matrix::from_fn(n + 1, n + 1, |h, m| match (h, m) {
        (_, 0) => 0.0,
        (0, m) => (2 * m + 1) as f64 / 16.0,
        (h, m) if h == m => 0.0,
        (h, m) => s[(h, m)].exp(),
    });
    let tiny = Matrix::from_fn(n + 1, n + 1, |h, m| {
        if h == 0 {
            unit[(h, m)] * 2f64.powi(-1070)
        } else {
            unit[(h, m)]
        }
    });
    assert!(tiny[(0, 1)] > 0.0 && tiny[(0, 1)] < f64::MIN_POSITIVE);
    let same = |a: &Matrix<f64>, b: &Matrix<f64>, what: &str| {
        for (x, y) in a.as_slice().iter().zip(b.as_slice()) {
            assert_eq!(x.to_bits(), y.to_bits(), "{what}: {x:e} against {y:e}");
        }
    };
    let dual = |w| {
        marginals_jvp::<Dual>(w, &direction, Rooting::Single)
            .unwrap()
            .0
    };
    let log = |w| {
        marginals_jvp::<LnDual>(w, &direction, Rooting::Single)
            .unwrap()
            .0
    };
    same(&dual(&tiny), &dual(&unit), "dual");
    same(&log(&tiny), &log(&unit), "log space");
}

/// The graph and reference heads of the `honest_accuracy` example's spread
/// family (word-arc and label scores uniform in `±50`, root scores
/// `N(0, 1)`, `labels` labels; the example's generator, seed and draw order:
/// `p`, then `q`, then the heads).
fn example_spread_case(n: usize, labels: usize, seed: u64, rounded: bool) -> (Graph, Vec<usize>) {
    let mut rng = SplitMix64::new(seed);
    let p = graph(&mut rng, n, SPREAD, labels, rounded);
    let _q = graph(&mut rng, n, SPREAD, labels, rounded);
    let heads = (1..=n)
        .map(|m| if m == 1 { 0 } else { rng.below(m - 1) + 1 })
        .collect();
    (p, heads)
}

/// The expected-attachment gradient of the example's labeled spread family
/// (two labels, `n = 5, 6`), entry by entry: every entry at least `1e-8` of
/// the largest keeps the 40 bits, or within 4 of the floor where that
/// is lower (the reference on the weights rounded to `f64`; measured
/// 51.7–52.1 here, so 40 bits are asked). Single-root, the worst
/// entries (`1e-6` of the largest, in two words torn between two heads) are
/// second-order effects of a root swap of probability `2.5e-22` on those
/// words, formed by the elimination as differences of first-order terms:
/// the dense route (certified norm-wise) and the elimination on anchored
/// numbers both kept 35 bits, double-double dual numbers alone lose 71 bits
/// of the nearly certain word's entries. Now: the elimination's entry-wise
/// estimate sends the product to double-double, and each entry is taken from
/// the run whose estimate of it is smaller. Measured (`HONEST_PRINT=1 cargo
/// test -p spantree-core --test honest spread_attachment -- --nocapture`):
/// 50.6 / 51.1 bits at `n = 5` (single / multi; 35.3 single-root before),
/// 43.3 / 44.4 at `n = 6`. Oracle: `HighPrecision<1216>`.
#[test]
fn spread_attachment_keeps_every_entry() {
    for n in [5, 6] {
        for rooting in Rooting::ALL {
            let (g, heads) = example_spread_case(n, 2, 7_919 + n as u64, false);
            let (moved, _) = example_spread_case(n, 2, 7_919 + n as u64, true);
            let grad = |g: &Graph| -> Vec<f64> {
                let m = Model::new(Reference::default(), g, rooting).expect("model");
                flat(&m.grad_expected_attachment(&heads, None).expect("reference"))
            };
            let (exact, floor) = (grad(&g), grad(&moved));
            let floor = bits(&floor, &exact).1;
            // The 40 bits, or 4 below the floor where it is lower.
            let need = 40f64.min(floor - 4.0);
            for (name, found) in [
                (
                    "accurate",
                    Model::new(Accurate, &g, rooting)
                        .and_then(|m| m.grad_expected_attachment(&heads, None)),
                ),
                (
                    "log-accurate",
                    Model::new(LogAccurate, &g, rooting)
                        .and_then(|m| m.grad_expected_attachment(&heads, None)),
                ),
            ] {
                let found = flat(&found.expect("gradient"));
                let (norm, entry) = bits(&found, &exact);
                if std::env::var_os("HONEST_PRINT").is_some() {
                    println!(
                        "n={n} {} {name}: {norm:.1} / {entry:.1}, floor {floor:.1}",
                        rooting.name()
                    );
                }
                assert!(
                    norm >= 45.0 && entry >= need,
                    "n={n} {} {name}: attachment keeps {norm:.1} / {entry:.1} bits < 45 / {need:.1}",
                    rooting.name()
                );
            }
        }
    }
}

/// The GE gradient of case `c` (its features, targets `0.2, −0.1`).
fn ge_gradient<E: Engine>(engine: E, c: &Case, rooting: Rooting) -> Vec<f64>
where
    E::Scalar: Transcendental,
{
    let mut features = ArcFeatures::new(2);
    for (h, m, v) in &c.features {
        let values = v.iter().map(|&x| E::Scalar::from_f64(x)).enumerate();
        features.push(arc(*h, *m), values.collect()).expect("arc");
    }
    let targets = [E::Scalar::from_f64(0.2), E::Scalar::from_f64(-0.1)];
    let g = Model::new(engine, &c.p, rooting)
        .and_then(|p| p.grad_ge_objective(&features, &targets))
        .expect("GE gradient");
    flat(&g)
}

/// The GE gradient on the spread family at `n = 60`, entry by entry. Most
/// words are nearly certain of their head: each `μ ≈ 1` is off by an ulp in
/// `f64`, and summed plainly into `E[f] = Σ_e μ_e f_e` those ulps cost the
/// residual `E[f] − t` 3–5 bits, which GE's seed amplified to the
/// gradient's worst entries. `expect_additive` now takes each word's certain
/// arc as `1 − Σ others`, compensated. Measured (`HONEST_PRINT=1 cargo test
/// -p spantree-core --test honest ge_of_nearly -- --nocapture`): worst entry
/// 43.9 bits on both seeds and rootings, 41.6 and 41.2 with the plain sum
/// (over seeds 1–8: 42.5–47.0 against 41.2–44.9; the bar asked here, 43,
/// is above the 40 to pin the gain). Oracle: `HighPrecision<1216>`.
#[test]
fn ge_of_nearly_certain_words_keeps_every_entry() {
    for (seed, rooting) in [1, 4]
        .into_iter()
        .flat_map(|s| Rooting::ALL.map(|r| (s, r)))
    {
        let c = case(60, SPREAD, 1, seed, false);
        let exact = ge_gradient(Reference::default(), &c, rooting);
        let (norm, entry) = bits(&ge_gradient(Accurate, &c, rooting), &exact);
        if std::env::var_os("HONEST_PRINT").is_some() {
            println!("seed {seed} {}: {norm:.1} / {entry:.1}", rooting.name());
        }
        assert!(
            norm >= 45.0 && entry >= 43.0,
            "seed {seed} {}: GE keeps {norm:.1} / {entry:.1} bits < 45 / 43",
            rooting.name()
        );
    }
}
