//! The literature's baselines (`spantree_core::baseline`) against brute
//! force, and the core's routes against each other exactly. Second-order
//! expectations, covariance and pair marginals against brute force run on
//! every engine in the conformance crate (`quantities::second_order`).

use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_bruteforce::{trees, Tree};
use spantree_core::baseline::{
    entropy_by_columns, grad_ge_by_covariance, log_partition_by_minors, marginals_by_zeroing,
    partition_by_minors,
};
use spantree_core::{ArcFeatures, ArcRef, Graph, Matrix, Model, Rooting, Scalar, SecondOrder};
use spantree_exact::{Exact, HighPrecision, Rational};
use spantree_faer::{ShiftedF64, F64};

fn arc(h: usize, m: usize) -> ArcRef {
    ArcRef {
        head: h,
        dependent: m,
        label: None,
    }
}

/// N(0,1) weights with a fifth of the arcs forbidden and trees under both rootings.
fn weights(rng: &mut SplitMix64, n: usize) -> Matrix<f64> {
    loop {
        let w = normal_scores(rng, n, 1.0, 0.2).map(|&s| s.exp());
        // Decided combinatorially: enumeration would take forever at n = 25.
        if Rooting::ALL
            .iter()
            .all(|&r| graph(&w).spanning_tree(r).is_ok())
        {
            return w;
        }
    }
}

fn graph(w: &Matrix<f64>) -> Graph {
    let rows: Vec<Vec<f64>> = (0..w.rows()).map(|h| w.row(h).to_vec()).collect();
    Graph::from_weights(&rows).unwrap()
}

/// Two small feature sets: `r` (3 coordinates) and `s` (2), seeded, sparse.
fn features(rng: &mut SplitMix64, n: usize) -> (ArcFeatures<f64>, ArcFeatures<f64>) {
    let mut r = ArcFeatures::new(3);
    let mut s = ArcFeatures::new(2);
    for h in 0..=n {
        for m in (1..=n).filter(|&m| m != h) {
            if rng.chance(0.7) {
                r.push(arc(h, m), vec![(rng.below(3), (rng.below(4) as f64) - 1.0)])
                    .unwrap();
            }
            if rng.chance(0.5) {
                s.push(arc(h, m), vec![(0, 0.5), (1, rng.below(3) as f64)])
                    .unwrap();
            }
        }
    }
    (r, s)
}

/// Absolute 1e-11: brute-force sums of ≤ 6⁵ terms, one LU of condition < 1e3,
/// and a difference of such sums for covariances.
fn close(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-11 * (1.0 + b.abs()),
        "{what}: {a} vs oracle {b}"
    );
}

#[test]
fn baselines_match_brute_force() {
    let mut rng = SplitMix64::new(5);
    for n in 1..=5 {
        for rooting in Rooting::ALL {
            let w = weights(&mut rng, n);
            let (r, _) = features(&mut rng, n);
            let model = Model::new(F64, &graph(&w), rooting).unwrap();
            let all: Vec<Tree> = trees(&w, rooting).collect();
            let z: f64 = all.iter().map(|t| t.weight(&w)).sum();
            let p: Vec<f64> = all.iter().map(|t| t.weight(&w) / z).collect();

            // Baselines.
            let mu = spantree_bruteforce::marginals(&w, rooting).unwrap();
            let zeroed = marginals_by_zeroing(&model).unwrap();
            for (a, b) in zeroed.as_slice().iter().zip(mu.as_slice()) {
                close(*a, *b, "McDonald & Satta marginals");
            }
            let entropy: f64 = p.iter().map(|pt| -pt * pt.ln()).sum();
            close(
                entropy_by_columns(&model).unwrap(),
                entropy,
                "Smith & Eisner entropy",
            );
            if rooting == Rooting::Single {
                close(partition_by_minors(&model).unwrap(), z, "Z by minors");
                close(
                    log_partition_by_minors(&model).unwrap(),
                    z.ln(),
                    "ln Z by minors",
                );
            } else {
                assert!(partition_by_minors(&model).is_err());
            }
            let targets = [0.5, -1.0, 2.0];
            let fast = model.grad_ge_objective(&r, &targets).unwrap();
            let slow = grad_ge_by_covariance(&model, &r, &targets).unwrap();
            for (a, b) in slow[0].as_slice().iter().zip(fast[0].as_slice()) {
                close(*a, *b, "GE gradient by covariance");
            }
        }
    }
}

/// On exact rationals the two second-order algorithms, the two GE-gradient
/// routes and every baseline must agree to the last bit, up to n = 20.
#[test]
fn exact_routes_agree_exactly() {
    let mut rng = SplitMix64::new(9);
    for n in [3, 8, 14, 20] {
        for rooting in Rooting::ALL {
            let w = weights(&mut rng, n);
            let (r, s) = features(&mut rng, n);
            let (rq, sq) = (
                r.map(|&x| Rational::from_f64(x)),
                s.map(|&x| Rational::from_f64(x)),
            );
            let model = Model::new(Exact, &graph(&w), rooting).unwrap();
            assert_eq!(
                model
                    .covariance(&rq, &sq, SecondOrder::JacobianVector)
                    .unwrap(),
                model.covariance(&rq, &sq, SecondOrder::Hessian).unwrap(),
                "covariance routes, n = {n}"
            );
            let t: Vec<Rational> = [0.5, -1.0, 2.0]
                .iter()
                .map(|&x| Rational::from_f64(x))
                .collect();
            assert_eq!(
                model.grad_ge_objective(&rq, &t).unwrap(),
                grad_ge_by_covariance(&model, &rq, &t).unwrap(),
                "GE gradient routes, n = {n}"
            );
            if n <= 14 {
                assert_eq!(
                    marginals_by_zeroing(&model).unwrap(),
                    model.marginals().unwrap()
                );
            }
            if rooting == Rooting::Single {
                assert_eq!(
                    partition_by_minors(&model).unwrap(),
                    model.partition().unwrap()
                );
            }
        }
    }
}

#[test]
fn smith_eisner_entropy_agrees_at_high_precision() {
    // 256-bit floats: both routes are exact up to ~1e-70 relative rounding.
    let mut rng = SplitMix64::new(11);
    for n in [4, 12, 25] {
        for rooting in Rooting::ALL {
            let w = weights(&mut rng, n);
            let model = Model::new(HighPrecision::<256>, &graph(&w), rooting).unwrap();
            let fast = model.entropy().unwrap();
            let slow = entropy_by_columns(&model).unwrap();
            let diff = (fast.clone() - slow).ln_abs() - fast.ln_abs();
            assert!(diff < -150.0, "relative difference e^{diff} at n = {n}");
            // And the log backend's baseline agrees with its fast entropy (rel 1e-12).
            let log_model = Model::new(ShiftedF64, &graph(&w), rooting).unwrap();
            let (a, b) = (
                log_model.entropy().unwrap(),
                entropy_by_columns(&log_model).unwrap(),
            );
            assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{a} {b}");
        }
    }
}

#[test]
fn a_feature_on_no_arc_is_a_typed_error_on_every_route() {
    let g = Graph::from_weights(&[[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 4.0, 0.0]]).unwrap();
    let model = Model::new(F64, &g, Rooting::Multi).unwrap();
    let mut bad = ArcFeatures::new(1);
    bad.push(arc(1, 1), vec![(0, 1.0)]).unwrap();
    let mut good = ArcFeatures::new(1);
    good.push(arc(0, 1), vec![(0, 1.0)]).unwrap();
    for algorithm in [
        SecondOrder::Auto,
        SecondOrder::JacobianVector,
        SecondOrder::Hessian,
    ] {
        for (r, s) in [(&bad, &good), (&good, &bad)] {
            assert!(matches!(
                model.covariance(r, s, algorithm),
                Err(spantree_core::Error::NoSuchArc { .. })
            ));
            assert!(matches!(
                model.expect_second_order(r, s, algorithm),
                Err(spantree_core::Error::NoSuchArc { .. })
            ));
        }
    }
}
