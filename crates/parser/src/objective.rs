//! Training objectives of one sentence, as a loss and its gradient with
//! respect to the arc scores `θ[h][m]`; the chain rule to the weights is
//! `∂L/∂w = Σ_{h,m} (∂L/∂θ[h][m]) f(h → m)` ([`SentenceFeatures::accumulate`](crate::SentenceFeatures::accumulate)).
//!
//! Every expectation and decode comes from spantree: matrix-tree marginals
//! and the Chu–Liu–Edmonds / Tarjan maximum arborescence for non-projective
//! trees, inside–outside and Eisner's algorithm for projective ones, each
//! single- or multi-root.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use spantree_core::decode::projective::Projective;
use spantree_core::{ArcFeatures, ArcRef, Graph, Model, Rooting, Tree};
use spantree_faer::Accurate;

use crate::error::{ParserError, Result};

/// The training objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Conditional log-likelihood (Koo et al. 2007; Smith & Smith 2007):
    /// `ln Z − θ(gold)`, gradient `μ − 1[gold]`, plus L2.
    Crf,
    /// Structured hinge with Hamming loss (Taskar et al. 2004):
    /// `max_y [θ(y) + Δ(y, gold)] − θ(gold)` by loss-augmented decoding,
    /// minimised by subgradient steps (not Koo et al.'s exponentiated
    /// gradient), plus L2.
    Hinge,
    /// The averaged structured perceptron (Collins 2002): `w += f(gold) − f(ŷ)`.
    Perceptron,
    /// Semi-supervised: the CRF on a few labeled sentences plus the
    /// generalised-expectation objective `‖E[f] − t‖²` (Druck, Mann &
    /// McCallum 2009) on the others, optionally with entropy regularisation.
    Ge,
}

/// The tree structure trained and decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Structure {
    /// All arborescences: matrix-tree theorem and maximum spanning arborescence.
    Nonprojective,
    /// Projective trees only: inside–outside and Eisner (1996).
    Projective,
}

/// The rooting as stored in a model file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RootingChoice {
    /// Exactly one word attached to the root (Universal Dependencies).
    Single,
    /// Any number of root children.
    Multi,
}

impl RootingChoice {
    /// The library's rooting.
    pub fn rooting(self) -> Rooting {
        match self {
            RootingChoice::Single => Rooting::Single,
            RootingChoice::Multi => Rooting::Multi,
        }
    }
}

macro_rules! choice {
    ($ty:ty, $what:literal, $($name:literal => $v:path),+) => {
        impl FromStr for $ty {
            type Err = ParserError;
            fn from_str(s: &str) -> Result<Self> {
                match s {
                    $($name => Ok($v),)+
                    _ => Err(ParserError::UnknownChoice {
                        what: $what,
                        value: s.to_string(),
                        expected: concat!($($name, " "),+),
                    }),
                }
            }
        }
        impl $ty {
            /// The name on the command line and in model files.
            pub fn name(self) -> &'static str {
                match self {
                    $($v => $name,)+
                }
            }
        }
    };
}

choice!(Objective, "objective", "crf" => Objective::Crf, "hinge" => Objective::Hinge,
    "perceptron" => Objective::Perceptron, "ge" => Objective::Ge);
choice!(Structure, "structure", "nonprojective" => Structure::Nonprojective,
    "projective" => Structure::Projective);
choice!(RootingChoice, "rooting", "single" => RootingChoice::Single, "multi" => RootingChoice::Multi);

/// The graph of arc scores `θ` (`(n+1) × (n+1)`, non-arcs ignored).
fn graph(theta: &[Vec<f64>], line: usize) -> Result<Graph> {
    Graph::from_scores(theta).map_err(|source| ParserError::Core { line, source })
}

fn core(line: usize) -> impl Fn(spantree_core::Error) -> ParserError {
    move |source| ParserError::Core { line, source }
}

/// The highest-scoring tree of `structure` and `rooting` under scores `θ`:
/// maximum spanning arborescence (`O(n²)`) or Eisner's algorithm (`O(n³)`).
///
/// # Errors
/// [`ParserError::Core`] when the library refuses the scores (`NaN`).
pub fn decode(
    theta: &[Vec<f64>],
    structure: Structure,
    rooting: Rooting,
    line: usize,
) -> Result<Tree> {
    let g = graph(theta, line)?;
    match structure {
        Structure::Nonprojective => g.best_tree(rooting),
        Structure::Projective => g.best_projective_tree(rooting),
    }
    .map_err(core(line))
}

/// `ln Z` and the arc marginals `μ` over the trees of `structure`:
/// matrix-tree theorem on the cancellation-free elimination, or inside–outside.
/// `O(n³)`.
///
/// # Errors
/// [`ParserError::Core`] for a numerical failure or no tree of the structure.
pub fn log_partition_and_marginals(
    theta: &[Vec<f64>],
    structure: Structure,
    rooting: Rooting,
    line: usize,
) -> Result<(f64, Vec<Vec<f64>>)> {
    let g = graph(theta, line)?;
    let n1 = theta.len();
    let (ln_z, mu) = match structure {
        Structure::Nonprojective => {
            let model = Model::new(Accurate, &g, rooting).map_err(core(line))?;
            (
                model.log_partition().map_err(core(line))?,
                model.marginals().map_err(core(line))?,
            )
        }
        Structure::Projective => {
            let p = Projective::new(&g, rooting).map_err(core(line))?;
            (
                p.log_partition().map_err(core(line))?,
                p.marginals().map_err(core(line))?,
            )
        }
    };
    let mu = (0..n1)
        .map(|h| {
            (0..n1)
                .map(|m| if m == 0 || h == m { 0.0 } else { mu[(h, m)] })
                .collect()
        })
        .collect();
    Ok((ln_z, mu))
}

/// `θ(d) = Σ_m θ[heads[m−1]][m]`.
pub fn tree_score(theta: &[Vec<f64>], heads: &[usize]) -> f64 {
    heads
        .iter()
        .enumerate()
        .map(|(i, &h)| theta[h][i + 1])
        .sum()
}

fn indicator(n1: usize, heads: &[usize], sign: f64, g: &mut [Vec<f64>]) {
    debug_assert_eq!(g.len(), n1);
    for (i, &h) in heads.iter().enumerate() {
        g[h][i + 1] += sign;
    }
}

/// One sentence's loss and `∂loss/∂θ` (`(n+1) × (n+1)`).
#[derive(Clone, Debug)]
pub struct SentenceLoss {
    /// The loss.
    pub loss: f64,
    /// `∂loss/∂θ[h][m]`; all zeros when the loss is flat there.
    pub grad: Vec<Vec<f64>>,
}

/// The CRF loss `ln Z − θ(gold)` and its gradient `μ − 1[gold]`. `O(n³)`.
///
/// # Errors
/// As [`log_partition_and_marginals`]; [`ParserError::Core`] with
/// `NoProjectiveTree`-like failures are the caller's to skip.
pub fn crf(
    theta: &[Vec<f64>],
    gold: &[usize],
    structure: Structure,
    rooting: Rooting,
    line: usize,
) -> Result<SentenceLoss> {
    let (ln_z, mut grad) = log_partition_and_marginals(theta, structure, rooting, line)?;
    indicator(theta.len(), gold, -1.0, &mut grad);
    Ok(SentenceLoss {
        loss: ln_z - tree_score(theta, gold),
        grad,
    })
}

/// The structured hinge `max_y [θ(y) + Δ(y, gold)] − θ(gold)` with the
/// Hamming loss `Δ` (words with a wrong head), by loss-augmented decoding
/// (add 1 to every non-gold arc); its subgradient `1[ŷ] − 1[gold]`.
/// `O(n²)` non-projective, `O(n³)` projective.
///
/// # Errors
/// As [`decode`].
pub fn hinge(
    theta: &[Vec<f64>],
    gold: &[usize],
    structure: Structure,
    rooting: Rooting,
    line: usize,
) -> Result<SentenceLoss> {
    let n1 = theta.len();
    let mut augmented = theta.to_vec();
    for (h, row) in augmented.iter_mut().enumerate() {
        for (m, v) in row.iter_mut().enumerate() {
            if m != 0 && h != m && gold[m - 1] != h {
                *v += 1.0;
            }
        }
    }
    let best = decode(&augmented, structure, rooting, line)?;
    let loss = tree_score(&augmented, best.heads()) - tree_score(theta, gold);
    Ok(SentenceLoss {
        loss: loss.max(0.0),
        grad: difference(n1, best.heads(), gold, loss > 0.0),
    })
}

/// `1[ŷ] − 1[gold]` in the `(n+1) × (n+1)` layout, or zeros when not `active`.
fn difference(n1: usize, best: &[usize], gold: &[usize], active: bool) -> Vec<Vec<f64>> {
    let mut grad = vec![vec![0.0; n1]; n1];
    if active {
        indicator(n1, best, 1.0, &mut grad);
        indicator(n1, gold, -1.0, &mut grad);
    }
    grad
}

/// The perceptron's update direction: `1[ŷ] − 1[gold]` for the best tree `ŷ`
/// (zero when `ŷ` is gold), and the number of wrong heads as the "loss".
///
/// # Errors
/// As [`decode`].
pub fn perceptron(
    theta: &[Vec<f64>],
    gold: &[usize],
    structure: Structure,
    rooting: Rooting,
    line: usize,
) -> Result<SentenceLoss> {
    let n1 = theta.len();
    let best = decode(theta, structure, rooting, line)?;
    let wrong = best
        .heads()
        .iter()
        .zip(gold)
        .filter(|(a, b)| a != b)
        .count();
    Ok(SentenceLoss {
        loss: wrong as f64,
        grad: difference(n1, best.heads(), gold, wrong > 0),
    })
}

/// GE constraint features of one sentence: arc `h → m` fires coordinate
/// `class[m] · (classes · 2) + class[h] · 2 + [h < m]` (the head's tag and
/// the direction, given the dependent's tag), with `classes` tag classes.
pub fn ge_features(classes: &[usize], class_count: usize) -> Result<ArcFeatures<f64>> {
    let n1 = classes.len();
    let mut f = ArcFeatures::new(class_count * class_count * 2);
    for h in 0..n1 {
        for (m, &cm) in classes.iter().enumerate().skip(1) {
            if h != m {
                let k = cm * class_count * 2 + classes[h] * 2 + usize::from(h < m);
                f.push(
                    ArcRef {
                        head: h,
                        dependent: m,
                        label: None,
                    },
                    vec![(k, 1.0)],
                )
                .map_err(core(0))?;
            }
        }
    }
    Ok(f)
}

/// The GE objective `weight · ‖E[f] − t‖² + entropy · H` of one unlabeled
/// sentence and its gradient in `O(n³)` by spantree's reverse mode
/// (`grad_ge_objective`, `grad_entropy`). Non-projective structures only.
///
/// # Errors
/// [`ParserError::Unsupported`] for the projective structure;
/// [`ParserError::Core`] from the library.
#[allow(clippy::too_many_arguments)]
pub fn ge(
    theta: &[Vec<f64>],
    features: &ArcFeatures<f64>,
    targets: &[f64],
    weight: f64,
    entropy: f64,
    structure: Structure,
    rooting: Rooting,
    line: usize,
) -> Result<SentenceLoss> {
    if structure != Structure::Nonprojective {
        return Err(ParserError::Unsupported {
            what: "the GE objective with the projective structure",
        });
    }
    let g = graph(theta, line)?;
    let model = Model::new(Accurate, &g, rooting).map_err(core(line))?;
    let n1 = theta.len();
    let mut loss = weight * model.ge_objective(features, targets).map_err(core(line))?;
    let dg = model
        .grad_ge_objective(features, targets)
        .map_err(core(line))?;
    let mut grad: Vec<Vec<f64>> = (0..n1)
        .map(|h| (0..n1).map(|m| weight * dg[0][(h, m)]).collect())
        .collect();
    if entropy != 0.0 {
        loss += entropy * model.entropy().map_err(core(line))?;
        let dh = model.grad_entropy().map_err(core(line))?;
        for (h, row) in grad.iter_mut().enumerate() {
            for (m, v) in row.iter_mut().enumerate() {
                *v += entropy * dh[0][(h, m)];
            }
        }
    }
    for (h, row) in grad.iter_mut().enumerate() {
        for (m, v) in row.iter_mut().enumerate() {
            if m == 0 || h == m {
                *v = 0.0;
            }
        }
    }
    Ok(SentenceLoss { loss, grad })
}
