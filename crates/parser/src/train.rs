//! The training loop: shuffled mini-batches whose sentence gradients are
//! computed in parallel (rayon) and summed in sentence order, so a run is
//! deterministic for a seed whatever the thread count; AdaGrad steps (Duchi,
//! Hazan & Singer 2011) for the CRF, hinge and GE objectives, mini-batch
//! averaged perceptron updates (applied in sentence order after the batch
//! is decoded in parallel) for the perceptron.

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use spantree_core::ArcFeatures;

use crate::error::{ParserError, Result};
use crate::eval::{evaluate, Scores};
use crate::features::SentenceFeatures;
use crate::labeler::Labeler;
use crate::model::Parser;
use crate::objective::{self, Objective, RootingChoice, SentenceLoss, Structure};
use crate::Sentence;

/// The options of a training run.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// The objective.
    pub objective: Objective,
    /// The structure trained and decoded.
    pub structure: Structure,
    /// The rooting trained and decoded.
    pub rooting: RootingChoice,
    /// Passes over the training sentences.
    pub epochs: usize,
    /// Sentences per mini-batch.
    pub batch: usize,
    /// AdaGrad's step size `η` (`w −= η g / √(Σ g²)`).
    pub learning_rate: f64,
    /// L2 strength `λ` in `mean loss + λ/2 ‖w‖²` (CRF, hinge, GE).
    pub l2: f64,
    /// Hash width of the arc features (`2^bits` weights).
    pub bits: u32,
    /// Hash width of the label features.
    pub label_bits: u32,
    /// The shuffling seed.
    pub seed: u64,
    /// GE: how many training sentences keep their trees (the first ones in
    /// file order); the others are unlabeled. Ignored by other objectives.
    pub labeled: usize,
    /// GE: the weight of `‖E[f] − t‖²` per unlabeled sentence.
    pub ge_weight: f64,
    /// GE: the weight of the entropy term per unlabeled sentence (`0` off).
    pub entropy_weight: f64,
    /// Draw an indicatif progress bar on standard error.
    pub progress: bool,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            objective: Objective::Crf,
            structure: Structure::Nonprojective,
            rooting: RootingChoice::Single,
            epochs: 5,
            batch: 32,
            learning_rate: 0.1,
            l2: 1e-5,
            bits: 21,
            label_bits: 19,
            seed: 1,
            labeled: 100,
            ge_weight: 0.01,
            entropy_weight: 0.0,
            progress: false,
        }
    }
}

/// What one epoch did.
#[derive(Clone, Debug)]
pub struct EpochStats {
    /// 1-based epoch.
    pub epoch: usize,
    /// Mean training loss over the sentences used (before the L2 term).
    pub objective: f64,
    /// Dev scores after the epoch (with the averaged weights for the perceptron).
    pub dev: Option<Scores>,
    /// Wall-clock seconds of the epoch's training (dev evaluation excluded).
    pub seconds: f64,
    /// Sentences whose loss could not be computed this epoch (for example
    /// a non-projective gold tree under the projective CRF).
    pub skipped: usize,
}

/// The result of [`train`].
#[derive(Clone, Debug)]
pub struct Trained {
    /// The parser.
    pub parser: Parser,
    /// One entry per epoch.
    pub epochs: Vec<EpochStats>,
    /// Sentences that entered training (after skipping single-word ones).
    pub sentences: usize,
    /// Wall-clock seconds of the whole run: features, epochs, labeler.
    pub seconds: f64,
}

/// What one training sentence carries through the epochs.
struct Item<'a> {
    sentence: &'a Sentence,
    feats: SentenceFeatures,
    gold: Vec<usize>,
    /// GE: constraint features and targets for an unlabeled sentence.
    ge: Option<(ArcFeatures<f64>, Vec<f64>)>,
}

/// The UPOS classes of the GE constraints (the 17 UD tags, the root, other).
const UPOS: [&str; 17] = [
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN",
    "PUNCT", "SCONJ", "SYM", "VERB", "X",
];
const CLASSES: usize = UPOS.len() + 2;

fn upos_classes(s: &Sentence) -> Vec<usize> {
    std::iter::once(UPOS.len())
        .chain(s.words.iter().map(|w| {
            UPOS.iter()
                .position(|&u| u == w.upos)
                .unwrap_or(UPOS.len() + 1)
        }))
        .collect()
}

/// GE targets from labeled sentences: `P(head class, direction | dependent
/// class)` with add-0.1 smoothing, indexed as in [`objective::ge_features`].
fn ge_table(labeled: &[&Sentence]) -> Vec<f64> {
    let mut counts = vec![0.1; CLASSES * CLASSES * 2];
    for s in labeled {
        let c = upos_classes(s);
        for (i, w) in s.words.iter().enumerate() {
            let m = i + 1;
            counts[c[m] * CLASSES * 2 + c[w.head] * 2 + usize::from(w.head < m)] += 1.0;
        }
    }
    for row in counts.chunks_mut(CLASSES * 2) {
        let total: f64 = row.iter().sum();
        row.iter_mut().for_each(|v| *v /= total);
    }
    counts
}

fn ge_targets(table: &[f64], classes: &[usize]) -> Vec<f64> {
    let mut t = vec![0.0; table.len()];
    for &cm in &classes[1..] {
        let row = cm * CLASSES * 2;
        for k in 0..CLASSES * 2 {
            t[row + k] += table[row + k];
        }
    }
    t
}

/// The loss and `∂/∂θ` of one sentence under `config`.
fn sentence_loss(item: &Item, w: &[f64], config: &TrainConfig) -> Result<SentenceLoss> {
    let theta = item.feats.scores(w);
    let (s, r, line) = (
        config.structure,
        config.rooting.rooting(),
        item.sentence.line,
    );
    match (config.objective, &item.ge) {
        (Objective::Ge, Some((f, t))) => objective::ge(
            &theta,
            f,
            t,
            config.ge_weight,
            config.entropy_weight,
            s,
            r,
            line,
        ),
        (Objective::Crf | Objective::Ge, _) => objective::crf(&theta, &item.gold, s, r, line),
        (Objective::Hinge, _) => objective::hinge(&theta, &item.gold, s, r, line),
        (Objective::Perceptron, _) => objective::perceptron(&theta, &item.gold, s, r, line),
    }
}

/// Trains a parser on `train`, reporting dev scores after each epoch to
/// `on_epoch` (and on the progress bar). Sentences of one word carry no
/// arc decision and are left out. Per epoch: `O(Σ n³)` expectations or
/// decodes plus `O(F Σ n²)` feature work, and `O(2^bits)` per AdaGrad step.
///
/// # Errors
/// [`ParserError::NoData`] without a usable sentence;
/// [`ParserError::Unsupported`] for GE with the projective structure, or
/// for `bits` outside `1..=`[`MAX_BITS`](crate::model::MAX_BITS).
pub fn train(
    train: &[Sentence],
    dev: &[Sentence],
    config: &TrainConfig,
    mut on_epoch: impl FnMut(&EpochStats),
) -> Result<Trained> {
    let start = Instant::now();
    if !(1..=crate::model::MAX_BITS).contains(&config.bits) {
        return Err(ParserError::Unsupported {
            what: "a hash width outside 1..=MAX_BITS (26) bits",
        });
    }
    if config.objective == Objective::Ge && config.structure == Structure::Projective {
        return Err(ParserError::Unsupported {
            what: "the GE objective with the projective structure",
        });
    }
    let usable: Vec<&Sentence> = train.iter().filter(|s| s.len() >= 2).collect();
    if usable.is_empty() {
        return Err(ParserError::NoData { read: train.len() });
    }
    let labeled_count = if config.objective == Objective::Ge {
        config.labeled.min(usable.len())
    } else {
        usable.len()
    };
    let table = ge_table(&usable[..labeled_count]);
    let items: Vec<Item> = usable
        .par_iter()
        .enumerate()
        .map(|(i, s)| {
            let ge = (i >= labeled_count).then(|| {
                let c = upos_classes(s);
                let f = objective::ge_features(&c, CLASSES).expect("coordinates below dim");
                (f, ge_targets(&table, &c))
            });
            Item {
                sentence: s,
                feats: SentenceFeatures::new(s, config.bits),
                gold: s.heads(),
                ge,
            }
        })
        .collect();
    let size = 1usize << config.bits;
    let mut w = vec![0.0; size];
    // AdaGrad's running sum of squares; the perceptron's `Σ c Δ` for averaging.
    let mut acc = vec![0.0; size];
    let mut count = 1.0;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut order: Vec<usize> = (0..items.len()).collect();
    let bar = if config.progress {
        let bar = indicatif::ProgressBar::new((config.epochs * items.len()) as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} sentences  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut stats = Vec::new();
    let mut grad = vec![0.0; size];
    for epoch in 1..=config.epochs {
        let epoch_start = Instant::now();
        order.shuffle(&mut rng);
        let (mut total, mut used, mut skipped) = (0.0, 0usize, 0usize);
        for batch in order.chunks(config.batch.max(1)) {
            let losses: Vec<Result<SentenceLoss>> = batch
                .par_iter()
                .map(|&i| sentence_loss(&items[i], &w, config))
                .collect();
            let mut ok = 0usize;
            if config.objective == Objective::Perceptron {
                for (&i, l) in batch.iter().zip(losses) {
                    let Ok(l) = l else {
                        skipped += 1;
                        continue;
                    };
                    total += l.loss;
                    ok += 1;
                    let mut sparse = Vec::new();
                    items[i].feats.accumulate_sparse(&l.grad, 1.0, &mut sparse);
                    for (j, v) in sparse {
                        w[j as usize] -= v;
                        acc[j as usize] -= count * v;
                    }
                    count += 1.0;
                }
            } else {
                grad.iter_mut().for_each(|g| *g = 0.0);
                let mut sparse = Vec::new();
                for (&i, l) in batch.iter().zip(&losses) {
                    let Ok(l) = l else {
                        skipped += 1;
                        continue;
                    };
                    total += l.loss;
                    ok += 1;
                    sparse.clear();
                    items[i].feats.accumulate_sparse(&l.grad, 1.0, &mut sparse);
                    for &(j, v) in &sparse {
                        grad[j as usize] += v;
                    }
                }
                if ok > 0 {
                    let scale = 1.0 / ok as f64;
                    let eta = config.learning_rate;
                    let l2 = config.l2;
                    w.par_iter_mut()
                        .zip(acc.par_iter_mut())
                        .zip(grad.par_iter())
                        .for_each(|((w, a), &g)| {
                            let g = g * scale + l2 * *w;
                            if g != 0.0 {
                                *a += g * g;
                                *w -= eta * g / (a.sqrt() + 1e-8);
                            }
                        });
                }
            }
            used += ok;
            bar.inc(batch.len() as u64);
        }
        let seconds = epoch_start.elapsed().as_secs_f64();
        let current = if config.objective == Objective::Perceptron {
            averaged(&w, &acc, count)
        } else {
            w.clone()
        };
        let dev_scores = (!dev.is_empty()).then(|| {
            let parser = Parser {
                objective: config.objective,
                structure: config.structure,
                rooting: config.rooting,
                bits: config.bits,
                weights: current,
                labeler: Labeler {
                    bits: 1,
                    labels: Vec::new(),
                    w: Vec::new(),
                },
            };
            dev_scores(&parser, dev)
        });
        let e = EpochStats {
            epoch,
            objective: total / used.max(1) as f64,
            dev: dev_scores,
            seconds,
            skipped,
        };
        bar.set_message(format!(
            "epoch {epoch}: objective {:.4}{}",
            e.objective,
            e.dev.as_ref().map_or(String::new(), |d| format!(
                ", dev UAS {:.2}%",
                100.0 * d.uas
            ))
        ));
        on_epoch(&e);
        stats.push(e);
    }
    bar.finish();
    let weights = if config.objective == Objective::Perceptron {
        averaged(&w, &acc, count)
    } else {
        w
    };
    let labeler = Labeler::train(
        &usable[..labeled_count]
            .iter()
            .map(|s| (*s).clone())
            .collect::<Vec<_>>(),
        config.label_bits,
        config.epochs.clamp(1, 5),
    );
    Ok(Trained {
        parser: Parser {
            objective: config.objective,
            structure: config.structure,
            rooting: config.rooting,
            bits: config.bits,
            weights,
            labeler,
        },
        epochs: stats,
        sentences: items.len(),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The averaged perceptron's weights `w − (Σ c Δ) / c` (Daumé's trick).
fn averaged(w: &[f64], acc: &[f64], count: f64) -> Vec<f64> {
    w.iter().zip(acc).map(|(w, a)| w - a / count).collect()
}

/// Parses `sentences` in parallel (order kept). A sentence the library
/// refuses gets every head on the root.
pub fn parse_all(parser: &Parser, sentences: &[Sentence]) -> Vec<(Vec<usize>, Vec<String>)> {
    sentences
        .par_iter()
        .map(|s| {
            parser
                .parse(s)
                .unwrap_or_else(|_| (vec![0; s.len()], vec!["dep".to_string(); s.len()]))
        })
        .collect()
}

/// Unlabeled dev scores of a parser.
fn dev_scores(parser: &Parser, dev: &[Sentence]) -> Scores {
    let predicted = parse_all(parser, dev);
    evaluate(dev, &predicted)
}
