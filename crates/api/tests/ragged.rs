//! The ragged batch API against brute-force enumeration (`ln Z`, marginals),
//! the entropy identity `H = ln Z − Σ_e μ_e θ_e` on enumerated marginals, the
//! entropy gradient against central differences of that entropy, and the
//! batch's own contract (typed per-sentence errors, NaN slots, shape errors,
//! the same bits on 1 and 2 threads).

use spantree_api::batch::{compute_ragged, thread_pool, Ragged, RaggedError, RaggedOutputs};
use spantree_bruteforce::random::{normal_scores, SplitMix64};
use spantree_bruteforce::{log_partition_from_scores, marginals_from_scores};
use spantree_core::{Error, Matrix, Rooting};
use spantree_faer::{Accurate, ShiftedF64};

/// Sentences of 1 to 6 words with `N(0, 1.5²)` scores, some arcs forbidden.
fn batch(seed: u64) -> (Vec<usize>, Vec<f64>) {
    let mut rng = SplitMix64::new(seed);
    let lengths = vec![3, 1, 6, 2, 5, 4];
    let scores = lengths
        .iter()
        .flat_map(|&n| normal_scores(&mut rng, n, 1.5, 0.1).into_vec())
        .collect();
    (lengths, scores)
}

struct All {
    log_z: Vec<f64>,
    entropy: Vec<f64>,
    marginals: Vec<f64>,
    grad: Vec<f64>,
    failed: Vec<Option<Error>>,
}

fn all(lengths: &[usize], scores: &[f64], rooting: Rooting, threads: usize) -> All {
    let k = lengths.len();
    let mut a = All {
        log_z: vec![0.0; k],
        entropy: vec![0.0; k],
        marginals: vec![0.0; scores.len()],
        grad: vec![0.0; scores.len()],
        failed: Vec::new(),
    };
    let outputs = RaggedOutputs {
        log_z: Some(&mut a.log_z),
        entropy: Some(&mut a.entropy),
        marginals: Some(&mut a.marginals),
        grad_entropy: Some(&mut a.grad),
    };
    let batch = Ragged { lengths, scores };
    a.failed = thread_pool(Some(threads))
        .expect("pool")
        .install(|| compute_ragged(&Accurate, rooting, batch, outputs))
        .expect("shapes match");
    a
}

/// `H = ln Z − Σ μ θ` on enumerated marginals (finite scores only).
fn entropy_by_enumeration(scores: &Matrix<f64>, rooting: Rooting) -> f64 {
    let mu = marginals_from_scores(scores, rooting).expect("a tree exists");
    let expected: f64 = mu
        .as_slice()
        .iter()
        .zip(scores.as_slice())
        .filter(|(m, _)| **m > 0.0)
        .map(|(m, s)| m * s)
        .sum();
    log_partition_from_scores(scores, rooting) - expected
}

#[test]
fn ragged_batch_matches_enumeration() {
    let (lengths, scores) = batch(3);
    for rooting in Rooting::ALL {
        let a = all(&lengths, &scores, rooting, 2);
        let mut at = 0;
        for (k, &n) in lengths.iter().enumerate() {
            let cells = (n + 1) * (n + 1);
            let s = Matrix::from_row_major(n + 1, n + 1, scores[at..at + cells].to_vec());
            let Some(mu) = marginals_from_scores(&s, rooting) else {
                // No tree: the sentence fails with a typed error, NaN slots.
                assert!(matches!(a.failed[k], Some(Error::NoSpanningTree(_))));
                assert!(a.entropy[k].is_nan());
                at += cells;
                continue;
            };
            assert!(a.failed[k].is_none(), "{k}: {:?}", a.failed[k]);
            // rel 1e-12: one factorisation of a ≤ 6-word Laplacian against
            // sums over ≤ 7⁵ trees.
            let z = log_partition_from_scores(&s, rooting);
            assert!((a.log_z[k] - z).abs() <= 1e-12 * z.abs().max(1.0));
            for (x, e) in a.marginals[at..at + cells].iter().zip(mu.as_slice()) {
                assert!((x - e).abs() <= 1e-12, "{k}: {x} vs {e}");
            }
            let h = entropy_by_enumeration(&s, rooting);
            assert!((a.entropy[k] - h).abs() <= 1e-11 * h.abs().max(1.0));
            // Central differences of the enumerated entropy, step 1e-5:
            // truncation ~1e-10, rounding ~1e-11 · |H| / 1e-5.
            for c in (0..cells).filter(|&c| s.as_slice()[c].is_finite()) {
                let step = 1e-5;
                let mut plus = s.clone();
                plus.as_mut_slice()[c] += step;
                let mut minus = s.clone();
                minus.as_mut_slice()[c] -= step;
                let fd = (entropy_by_enumeration(&plus, rooting)
                    - entropy_by_enumeration(&minus, rooting))
                    / (2.0 * step);
                assert!((a.grad[at + c] - fd).abs() <= 1e-6, "{k} cell {c}");
            }
            at += cells;
        }
    }
}

#[test]
fn ragged_batch_is_the_same_on_one_and_two_threads() {
    let (lengths, scores) = batch(8);
    let (one, two) = (
        all(&lengths, &scores, Rooting::Single, 1),
        all(&lengths, &scores, Rooting::Single, 2),
    );
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&one.log_z), bits(&two.log_z));
    assert_eq!(bits(&one.marginals), bits(&two.marginals));
    assert_eq!(bits(&one.grad), bits(&two.grad));
}

#[test]
fn ragged_batch_reports_bad_sentences_and_shapes() {
    let (lengths, mut scores) = batch(5);
    // A NaN score on arc 0 → 1 of the second sentence (1 word, cells 16..20).
    scores[16 + 1] = f64::NAN;
    let mut log_z = vec![0.0; lengths.len()];
    let failed = compute_ragged(
        &ShiftedF64,
        Rooting::Multi,
        Ragged {
            lengths: &lengths,
            scores: &scores,
        },
        RaggedOutputs {
            log_z: Some(&mut log_z),
            ..Default::default()
        },
    )
    .expect("shapes match");
    // The sentences run longest first; each answer is back in its slot.
    assert!(matches!(failed[1], Some(Error::NotANumber { .. })));
    assert!(failed
        .iter()
        .enumerate()
        .all(|(s, e)| (s == 1) == e.is_some()));
    assert!(
        log_z[1].is_nan()
            && log_z
                .iter()
                .enumerate()
                .all(|(s, x)| s == 1 || x.is_finite())
    );
    let short = compute_ragged(
        &ShiftedF64,
        Rooting::Multi,
        Ragged {
            lengths: &lengths,
            scores: &scores[1..],
        },
        RaggedOutputs::default(),
    );
    assert_eq!(
        short.unwrap_err(),
        RaggedError::Scores {
            found: scores.len() - 1,
            expected: scores.len()
        }
    );
    let mut wrong = vec![0.0; 2];
    let bad = compute_ragged(
        &ShiftedF64,
        Rooting::Multi,
        Ragged {
            lengths: &lengths,
            scores: &scores,
        },
        RaggedOutputs {
            entropy: Some(&mut wrong),
            ..Default::default()
        },
    );
    assert_eq!(
        bad.unwrap_err(),
        RaggedError::Output {
            output: "entropy",
            found: 2,
            expected: lengths.len()
        }
    );
}
