//! The objectives' gradients with respect to the weights against central
//! finite differences of the same objectives computed by brute-force
//! enumeration of every tree (`spantree-bruteforce`), on the tiny treebank
//! fixture `tests/data/tiny.conllu` (3, 4 and 5 words).
//!
//! Tolerance `1e-6` absolute: with `h = 1e-4` the central difference errs by
//! `h² |L'''| / 6 ≲ 1e-8` (third derivatives of a log-sum-exp of scores
//! are bounded by a few units here) plus rounding `1e-16 |L| / h ≲ 1e-11`.

use spantree_bruteforce as oracle;
use spantree_core::{Matrix, Rooting, Tree};
use spantree_parser::objective::{self, Structure};
use spantree_parser::{Sentence, SentenceFeatures};

const BITS: u32 = 12;

fn treebank() -> Vec<Sentence> {
    spantree_conllu::parse(include_str!("data/tiny.conllu")).expect("the fixture parses")
}

/// Deterministic pseudo-random weights in `[-0.5, 0.5)` (SplitMix64).
fn weights(seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..1usize << BITS)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// Every tree of the structure with its score, by enumeration.
fn enumerate(theta: &[Vec<f64>], rooting: Rooting, structure: Structure) -> Vec<(Vec<usize>, f64)> {
    let n1 = theta.len();
    let scores = Matrix::from_fn(n1, n1, |h, m| theta[h][m]);
    let unit = Matrix::from_fn(n1, n1, |h, m| if m == 0 || h == m { 0.0 } else { 1.0 });
    oracle::trees(&unit, rooting)
        .map(|t| (t.heads()[1..].to_vec(), t.score(&scores)))
        .filter(|(heads, _)| {
            structure == Structure::Nonprojective
                || Tree::new(heads.clone()).is_ok_and(|t| t.is_projective())
        })
        .collect()
}

fn log_sum_exp(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// `Σ_s ln Z_s − θ_s(gold)` by enumeration.
fn crf_by_enumeration(
    w: &[f64],
    data: &[(Sentence, SentenceFeatures)],
    rooting: Rooting,
    structure: Structure,
) -> f64 {
    data.iter()
        .map(|(s, f)| {
            let theta = f.scores(w);
            let trees = enumerate(&theta, rooting, structure);
            let gold = objective::tree_score(&theta, &s.heads());
            log_sum_exp(trees.iter().map(|t| t.1)) - gold
        })
        .sum()
}

/// `Σ_s max_y [θ(y) + Δ(y, gold)] − θ(gold)` by enumeration.
fn hinge_by_enumeration(
    w: &[f64],
    data: &[(Sentence, SentenceFeatures)],
    rooting: Rooting,
    structure: Structure,
) -> f64 {
    data.iter()
        .map(|(s, f)| {
            let theta = f.scores(w);
            let gold = s.heads();
            let best = enumerate(&theta, rooting, structure)
                .iter()
                .map(|(h, score)| {
                    score + h.iter().zip(&gold).filter(|(a, b)| a != b).count() as f64
                })
                .fold(f64::NEG_INFINITY, f64::max);
            best - objective::tree_score(&theta, &gold)
        })
        .sum()
}

/// The coordinates to check: the first features of a few arcs of every sentence.
fn coordinates(data: &[(Sentence, SentenceFeatures)]) -> Vec<usize> {
    let mut c: Vec<usize> = data
        .iter()
        .flat_map(|(_, f)| {
            let n = f.n();
            [(0, 1), (1, 2), (2, 1), (n, 1), (1, n)]
                .into_iter()
                .flat_map(move |(h, m)| f.arc(h, m)[..3].to_vec())
        })
        .map(|i| i as usize)
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

type Data = [(Sentence, SentenceFeatures)];
type Loss = fn(
    &[Vec<f64>],
    &[usize],
    Structure,
    Rooting,
    usize,
) -> spantree_parser::Result<objective::SentenceLoss>;
type Oracle = fn(&[f64], &Data, Rooting, Structure) -> f64;

/// The summed loss and its gradient by the code under test against the
/// enumerated objective and its central differences with step `h`.
fn check(loss_of: Loss, oracle: Oracle, seed: u64, h: f64, rooting: Rooting, structure: Structure) {
    let data: Vec<_> = treebank()
        .into_iter()
        .map(|s| {
            let f = SentenceFeatures::new(&s, BITS);
            (s, f)
        })
        .collect();
    let w = weights(seed);
    let mut grad = vec![0.0; w.len()];
    let mut loss = 0.0;
    for (s, f) in &data {
        let l = loss_of(&f.scores(&w), &s.heads(), structure, rooting, s.line).expect("loss");
        loss += l.loss;
        f.accumulate(&l.grad, 1.0, &mut grad);
    }
    let reference = oracle(&w, &data, rooting, structure);
    assert!((loss - reference).abs() < 1e-10, "{loss} vs {reference}");
    for i in coordinates(&data) {
        let (mut plus, mut minus) = (w.clone(), w.clone());
        plus[i] += h;
        minus[i] -= h;
        let fd = (oracle(&plus, &data, rooting, structure)
            - oracle(&minus, &data, rooting, structure))
            / (2.0 * h);
        assert!((grad[i] - fd).abs() < 1e-6, "w[{i}]: {} vs {fd}", grad[i]);
    }
}

fn check_crf(rooting: Rooting, structure: Structure) {
    check(
        objective::crf,
        crf_by_enumeration,
        7,
        1e-4,
        rooting,
        structure,
    );
}

/// The hinge is piecewise linear: away from ties its subgradient is the
/// gradient, which finite differences see exactly (up to rounding).
fn check_hinge(rooting: Rooting, structure: Structure) {
    check(
        objective::hinge,
        hinge_by_enumeration,
        11,
        1e-6,
        rooting,
        structure,
    );
}

#[test]
fn crf_gradient_nonprojective_single_root() {
    check_crf(Rooting::Single, Structure::Nonprojective);
}

#[test]
fn crf_gradient_nonprojective_multi_root() {
    check_crf(Rooting::Multi, Structure::Nonprojective);
}

#[test]
fn crf_gradient_projective_single_root() {
    check_crf(Rooting::Single, Structure::Projective);
}

#[test]
fn crf_gradient_projective_multi_root() {
    check_crf(Rooting::Multi, Structure::Projective);
}

#[test]
fn hinge_subgradient_nonprojective() {
    check_hinge(Rooting::Single, Structure::Nonprojective);
    check_hinge(Rooting::Multi, Structure::Nonprojective);
}

#[test]
fn hinge_subgradient_projective() {
    check_hinge(Rooting::Single, Structure::Projective);
    check_hinge(Rooting::Multi, Structure::Projective);
}

/// GE: `‖E[f] − t‖²` with `E[f]` from the enumerated distribution.
#[test]
fn ge_gradient_against_enumeration() {
    ge_case(1.0, 0.0);
}

/// GE plus entropy regularisation `0.7 ‖E[f] − t‖² + 0.5 H`, `H = −Σ p ln p`
/// over the enumerated trees.
#[test]
fn ge_with_entropy_gradient_against_enumeration() {
    ge_case(0.7, 0.5);
}

fn ge_case(weight: f64, entropy: f64) {
    let s = treebank().remove(2);
    let f = SentenceFeatures::new(&s, BITS);
    let classes = [0usize, 1, 2, 3, 2, 2];
    let count = 4;
    let ge = objective::ge_features(&classes, count).expect("features");
    let dim = count * count * 2;
    let targets: Vec<f64> = (0..dim).map(|k| (k % 5) as f64 * 0.25).collect();
    let rooting = Rooting::Single;
    let by_enumeration = |w: &[f64]| -> f64 {
        let theta = f.scores(w);
        let trees = enumerate(&theta, rooting, Structure::Nonprojective);
        let ln_z = log_sum_exp(trees.iter().map(|t| t.1));
        let mut e = vec![0.0; dim];
        let mut h = 0.0;
        for (heads, score) in &trees {
            let p = (score - ln_z).exp();
            h -= p * (score - ln_z);
            for (i, &h) in heads.iter().enumerate() {
                let m = i + 1;
                e[classes[m] * count * 2 + classes[h] * 2 + usize::from(h < m)] += p;
            }
        }
        let g: f64 = e.iter().zip(&targets).map(|(a, b)| (a - b) * (a - b)).sum();
        weight * g + entropy * h
    };
    let w = weights(3);
    let l = objective::ge(
        &f.scores(&w),
        &ge,
        &targets,
        weight,
        entropy,
        Structure::Nonprojective,
        rooting,
        1,
    )
    .expect("GE");
    assert!((l.loss - by_enumeration(&w)).abs() < 1e-10);
    let mut grad = vec![0.0; w.len()];
    f.accumulate(&l.grad, 1.0, &mut grad);
    let h = 1e-4;
    for i in f
        .arc(0, 1)
        .iter()
        .chain(f.arc(2, 4))
        .take(20)
        .map(|&i| i as usize)
    {
        let (mut plus, mut minus) = (w.clone(), w.clone());
        plus[i] += h;
        minus[i] -= h;
        let fd = (by_enumeration(&plus) - by_enumeration(&minus)) / (2.0 * h);
        assert!((grad[i] - fd).abs() < 1e-6, "w[{i}]: {} vs {fd}", grad[i]);
    }
}

#[test]
fn ge_refuses_the_projective_structure() {
    let s = treebank().remove(0);
    let f = SentenceFeatures::new(&s, BITS);
    let ge = objective::ge_features(&[0, 1, 2, 1], 3).expect("features");
    let err = objective::ge(
        &f.scores(&weights(1)),
        &ge,
        &[0.0; 18],
        1.0,
        0.0,
        Structure::Projective,
        Rooting::Single,
        1,
    )
    .unwrap_err();
    assert!(
        matches!(err, spantree_parser::ParserError::Unsupported { .. }),
        "{err}"
    );
}
