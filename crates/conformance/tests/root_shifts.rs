//! The accurate engines ([`Accurate`], [`LogAccurate`]) against the exact
//! engine at root scores shifted down to −300 and arc scores spread over
//! ±50, both rootings, labeled and unlabeled: what the cancellation-free
//! elimination is for, and what dense LU cannot do (so not in the suite).

use spantree_bruteforce::bits::correct_bits as bits;
use spantree_bruteforce::random::{self, SplitMix64};
use spantree_core::{Engine, Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::Exact;
use spantree_faer::{Accurate, LogAccurate};

/// Word-arc scores `N(0, 1)` (or uniform in `±spread`), root scores
/// `N(0, 1) + shift`; `labels` scores per arc when labeled.
fn shifted_graph(
    rng: &mut SplitMix64,
    n: usize,
    shift: f64,
    spread: Option<f64>,
    labels: Option<usize>,
) -> Graph {
    let one = |rng: &mut SplitMix64| {
        let mut s = match spread {
            Some(b) => random::uniform_scores(rng, n, b),
            None => random::normal_scores(rng, n, 1.0, 0.0),
        };
        for m in 1..=n {
            s[(0, m)] = rng.normal() + shift;
        }
        s
    };
    match labels {
        None => Graph::from_scores(&random::rows(&one(rng))).unwrap(),
        Some(k) => {
            let per: Vec<Matrix<f64>> = (0..k).map(|_| one(rng)).collect();
            let rows: Vec<Vec<Vec<f64>>> = (0..=n)
                .map(|h| {
                    (0..=n)
                        .map(|m| per.iter().map(|s| s[(h, m)]).collect())
                        .collect()
                })
                .collect();
            Graph::from_labeled_scores(&rows).unwrap()
        }
    }
}

/// Against the exact backend on the same graph (its weights are `e^θ`
/// rounded once, the accurate backends' `e^{θ−c}` rounded once: the inputs
/// differ by an ulp, which moves ln Z by ~1e-16 relative):
/// ln Z to rel 1e-13 (the bound), every label marginal ≥ 1e-300 to
/// 40 bits, columns and the single-root root row summing to 1 within 1e-12.
fn extreme_root_shifts<B: Engine<Scalar = f64>>(backend: B, sizes: &[usize]) {
    for &n in sizes {
        for shift in [0.0, -20.0, -40.0, -80.0, -300.0] {
            for spread in [None, Some(50.0)] {
                for labels in [None, Some(3)] {
                    let seed = 12_000 + 100 * n as u64 + (-shift) as u64;
                    let graph = shifted_graph(&mut SplitMix64::new(seed), n, shift, spread, labels);
                    for rooting in Rooting::ALL {
                        let ctx = format!(
                            "{} {rooting:?} n={n} shift={shift} spread={spread:?} labels={labels:?}",
                            backend.name()
                        );
                        let exact = Model::new(Exact, &graph, rooting).unwrap();
                        let model = Model::new(backend.clone(), &graph, rooting).unwrap();
                        let truth = exact.partition().unwrap().ln_abs();
                        let log_z = model.log_partition().unwrap();
                        assert!(
                            (log_z - truth).abs() <= 1e-13 * truth.abs(),
                            "{ctx}: ln Z = {log_z}, exact {truth}"
                        );
                        let expected = exact.label_marginals().unwrap();
                        let found = model.label_marginals().unwrap();
                        for (e, a) in expected.iter().zip(&found) {
                            for (x, y) in e.as_slice().iter().zip(a.as_slice()) {
                                let x = x.to_f64();
                                if x >= 1e-300 {
                                    let b = bits(*y, x);
                                    assert!(b >= 40.0, "{ctx}: {y} vs {x}: {b} bits");
                                }
                            }
                        }
                        let mu = model.marginals().unwrap();
                        for m in 1..=n {
                            let s: f64 = (0..=n).map(|h| mu[(h, m)]).sum();
                            assert!((s - 1.0).abs() <= 1e-12, "{ctx}: column {m} sums to {s}");
                        }
                        if rooting == Rooting::Single {
                            let s: f64 = (1..=n).map(|m| mu[(0, m)]).sum();
                            assert!((s - 1.0).abs() <= 1e-12, "{ctx}: root row sums to {s}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn accurate_at_extreme_root_shifts() {
    extreme_root_shifts(Accurate, &[1, 4, 12, 40]);
}

#[test]
fn log_accurate_at_extreme_root_shifts() {
    extreme_root_shifts(LogAccurate, &[1, 5, 30]);
}
