//! The cancellation-free elimination against the brute-force oracle and the
//! exact (Bareiss) backend: exactly, on rationals; to the last bits, on `f64`
//! and in log space, with root scores shifted down to −300.

use spantree_bruteforce::random::{self, SplitMix64};
use spantree_bruteforce::{marginals as brute_marginals, partition as brute_partition};
use spantree_core::elimination::{marginals, Elimination, LnPositive, NonNegative};
use spantree_core::{Graph, Matrix, Model, Rooting, Scalar};
use spantree_exact::{Exact, Rational};

fn rational(weights: &Matrix<f64>) -> Matrix<Rational> {
    weights.map(|&w| Rational::from_f64(w))
}

/// Scores: `N(0, 1)` on word arcs (or uniform in `±spread` when given), root
/// scores `N(0, 1) + shift`.
fn shifted_scores(rng: &mut SplitMix64, n: usize, shift: f64, spread: Option<f64>) -> Matrix<f64> {
    let mut s = match spread {
        Some(b) => random::uniform_scores(rng, n, b),
        None => random::normal_scores(rng, n, 1.0, 0.0),
    };
    for m in 1..=n {
        s[(0, m)] = rng.normal() + shift;
    }
    s
}

#[test]
fn rationals_match_brute_force_exactly() {
    for n in 1..=6 {
        for seed in 0..4u64 {
            for forbid in [0.0, 0.3, 0.6] {
                let mut rng = SplitMix64::new(7_000 + 100 * n as u64 + seed);
                let w = rational(&random::normal_weights(&mut rng, n, 1.0, forbid));
                for rooting in Rooting::ALL {
                    let ctx = format!("{rooting:?} n={n} seed={seed} forbid={forbid}");
                    let z = brute_partition(&w, rooting);
                    let e = Elimination::new(&w, rooting);
                    assert_eq!(e.partition(), z, "{ctx}: Z");
                    assert_eq!(e.zero_pivot().is_none(), !z.is_zero(), "{ctx}");
                    match brute_marginals(&w, rooting) {
                        Some(mu) => assert_eq!(marginals(&w, rooting).unwrap(), mu, "{ctx}: μ"),
                        None => assert!(marginals(&w, rooting).is_err(), "{ctx}: no tree"),
                    }
                }
            }
        }
    }
}

#[test]
fn rationals_match_the_exact_backend_at_extreme_root_shifts() {
    for shift in [0.0, -20.0, -40.0, -80.0, -300.0] {
        for spread in [None, Some(50.0)] {
            let n = 9;
            let mut rng = SplitMix64::new(8_000 + (-shift) as u64);
            let weights = random::weights_of(&shifted_scores(&mut rng, n, shift, spread));
            let graph = Graph::from_weights(&random::rows(&weights)).unwrap();
            let w = rational(&weights);
            for rooting in Rooting::ALL {
                let ctx = format!("{rooting:?} shift={shift} spread={spread:?}");
                let exact = Model::new(Exact, &graph, rooting).unwrap();
                assert_eq!(
                    Elimination::new(&w, rooting).partition(),
                    exact.partition().unwrap(),
                    "{ctx}: Z"
                );
                assert_eq!(
                    marginals(&w, rooting).unwrap(),
                    exact.marginals().unwrap(),
                    "{ctx}: μ"
                );
            }
        }
    }
}

/// Correct bits of `a` against `e` (53 when equal).
fn bits(a: f64, e: f64) -> f64 {
    if a == e {
        return 53.0;
    }
    (-((a - e).abs() / e.abs()).log2()).clamp(0.0, 53.0)
}

/// `ln Z` to rel 1e-13 (the bound) and every marginal ≥ 1e-300 to 40
/// bits against the exact backend, every column (and the single-root root
/// row) summing to 1 within 1e-12, for `P` = `f64` and log space.
fn keeps_every_digit<P: NonNegative>(n: usize, to_p: impl Fn(f64) -> P) {
    for shift in [0.0, -20.0, -40.0, -80.0, -300.0] {
        for spread in [None, Some(50.0)] {
            let mut rng = SplitMix64::new(9_000 + n as u64 + (-shift) as u64);
            let weights = random::weights_of(&shifted_scores(&mut rng, n, shift, spread));
            let graph = Graph::from_weights(&random::rows(&weights)).unwrap();
            let w = weights.map(|&x| to_p(x));
            for rooting in Rooting::ALL {
                let ctx = format!("{rooting:?} n={n} shift={shift} spread={spread:?}");
                let exact = Model::new(Exact, &graph, rooting).unwrap();
                let truth = exact.partition().unwrap().ln_abs();
                let log_z = Elimination::new(&w, rooting).log_partition();
                assert!(
                    (log_z - truth).abs() <= 1e-13 * truth.abs().max(1.0),
                    "{ctx}: ln Z = {log_z}, exact {truth}"
                );
                let expected = exact.marginals().unwrap().map(|x| x.to_f64());
                let mu = marginals(&w, rooting).unwrap().map(|x| x.to_weight());
                for h in 0..=n {
                    for m in 1..=n {
                        let e = expected[(h, m)];
                        if e >= 1e-300 {
                            let b = bits(mu[(h, m)], e);
                            assert!(
                                b >= 40.0,
                                "{ctx}: μ[{h}][{m}] {} vs {e}: {b} bits",
                                mu[(h, m)]
                            );
                        } else {
                            assert!(mu[(h, m)] <= 1e-290, "{ctx}: μ[{h}][{m}] = {}", mu[(h, m)]);
                        }
                    }
                }
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

#[test]
fn f64_keeps_every_digit_at_extreme_root_shifts() {
    for n in [1, 2, 5, 17, 40] {
        keeps_every_digit(n, |x| x);
    }
}

#[test]
fn log_space_keeps_every_digit_at_extreme_root_shifts() {
    for n in [1, 3, 16, 40] {
        keeps_every_digit(n, LnPositive::from_weight);
    }
}

/// The marginals of a few columns alone (the default engine's repair of
/// dense columns that fail their test), on rationals: exactly the
/// brute-force marginals in those columns and zero elsewhere, for every
/// subset of columns of small graphs, forbidden arcs included.
#[test]
fn column_marginals_match_brute_force_exactly() {
    use spantree_core::elimination::checked_column_marginals;
    for n in 1..=5 {
        for seed in 0..3u64 {
            let mut rng = SplitMix64::new(9_000 + 100 * n as u64 + seed);
            let w = rational(&random::normal_weights(&mut rng, n, 1.0, 0.3));
            for rooting in Rooting::ALL {
                let Some(mu) = brute_marginals(&w, rooting) else {
                    assert!(checked_column_marginals(&w, rooting, &[1]).is_err());
                    continue;
                };
                for subset in 1..1u32 << n {
                    let columns: Vec<usize> =
                        (1..=n).filter(|m| subset >> (m - 1) & 1 == 1).collect();
                    let ctx = format!("{rooting:?} n={n} seed={seed} columns={columns:?}");
                    let (some, tiny) = checked_column_marginals(&w, rooting, &columns).unwrap();
                    assert!(!tiny, "{ctx}");
                    for h in 0..=n {
                        for m in 1..=n {
                            let expected = if columns.contains(&m) {
                                mu[(h, m)].clone()
                            } else {
                                Rational::from(0)
                            };
                            assert_eq!(some[(h, m)], expected, "{ctx}: ({h}, {m})");
                        }
                    }
                }
            }
        }
    }
}

/// The marginals from the first half of a kept forward elimination
/// (`Elimination::keeping_half`, what the default engine does when it
/// eliminates): exactly the brute-force marginals on rationals, and the
/// same pivots as `Elimination::new`, for both rootings, forbidden arcs
/// included.
#[test]
fn marginals_after_a_kept_half_match_brute_force_exactly() {
    for n in 1..=6 {
        for seed in 0..4u64 {
            let mut rng = SplitMix64::new(9_500 + 100 * n as u64 + seed);
            let w = rational(&random::normal_weights(&mut rng, n, 1.0, 0.3));
            for rooting in Rooting::ALL {
                let ctx = format!("{rooting:?} n={n} seed={seed}");
                let kept = Elimination::keeping_half(&w, rooting);
                assert_eq!(
                    kept.partition(),
                    Elimination::new(&w, rooting).partition(),
                    "{ctx}"
                );
                match brute_marginals(&w, rooting) {
                    Some(mu) => assert_eq!(kept.checked_marginals(&w).unwrap().0, mu, "{ctx}: μ"),
                    None => assert!(kept.checked_marginals(&w).is_err(), "{ctx}: no tree"),
                }
            }
        }
    }
}
