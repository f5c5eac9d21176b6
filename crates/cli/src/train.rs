//! `spantree train`: trains a first-order parser on a CoNLL-U treebank and
//! writes its model file (see `spantree-parser`).

use std::path::{Path, PathBuf};

use clap::Args;
use spantree_parser::{
    train, Objective, ParserError, RootingChoice, Sentence, Structure, TrainConfig,
};

/// Options of `spantree train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Training treebank (CoNLL-U); malformed sentences are reported and skipped.
    #[arg(long, value_name = "FILE")]
    pub train: PathBuf,
    /// Development treebank, scored after every epoch (no model selection).
    #[arg(long, value_name = "FILE")]
    pub dev: Option<PathBuf>,
    /// crf (log-likelihood), hinge (max-margin, subgradient), perceptron
    /// (averaged), ge (a few labeled sentences plus generalised expectation).
    #[arg(long, default_value = "crf", value_parser = ["crf", "hinge", "perceptron", "ge"])]
    pub objective: String,
    /// nonprojective (matrix-tree, MST) or projective (inside–outside, Eisner).
    #[arg(long, default_value = "nonprojective", value_parser = ["nonprojective", "projective"])]
    pub structure: String,
    /// single (exactly one root child, as in UD) or multi.
    #[arg(long, default_value = "single", value_parser = ["single", "multi"])]
    pub rooting: String,
    /// Passes over the training sentences.
    #[arg(long, default_value_t = 5)]
    pub epochs: usize,
    /// Where to write the model file (versioned JSON).
    #[arg(long, value_name = "MODEL")]
    pub out: PathBuf,
    /// Shuffling seed (runs are deterministic for a seed and thread count).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sentences per mini-batch.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// AdaGrad step size.
    #[arg(long, default_value_t = 0.1)]
    pub learning_rate: f64,
    /// L2 strength.
    #[arg(long, default_value_t = 1e-5)]
    pub l2: f64,
    /// Hash width: 2^bits arc weights (at most 26: 512 MiB).
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(8..=26))]
    pub bits: u32,
    /// GE: how many sentences (the first in the file) keep their trees.
    #[arg(long, default_value_t = 100)]
    pub labeled: usize,
    /// GE: weight of the GE term `‖E[f] − t‖²` per unlabeled sentence.
    #[arg(long, default_value_t = 0.01)]
    pub ge_weight: f64,
    /// GE: weight of the entropy regulariser on unlabeled sentences.
    #[arg(long, default_value_t = 0.0)]
    pub entropy: f64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Reads a treebank, printing every malformed sentence's error (with its
/// line) to standard error and keeping the others.
///
/// # Errors
/// [`ParserError::Conllu`] when the file cannot be read at all.
pub fn read_treebank(path: &Path) -> Result<Vec<Sentence>, ParserError> {
    let (good, bad) = spantree_conllu::read_file(path)?;
    for e in &bad {
        eprintln!("spantree: {}: {e} (sentence skipped)", path.display());
    }
    Ok(good)
}

/// Runs `spantree train`.
///
/// # Errors
/// Unreadable files, no usable sentence, an unwritable model file.
pub fn run(args: &TrainArgs) -> Result<(), ParserError> {
    let config = TrainConfig {
        objective: args.objective.parse::<Objective>()?,
        structure: args.structure.parse::<Structure>()?,
        rooting: args.rooting.parse::<RootingChoice>()?,
        epochs: args.epochs,
        batch: args.batch,
        learning_rate: args.learning_rate,
        l2: args.l2,
        bits: args.bits,
        seed: args.seed,
        labeled: args.labeled,
        ge_weight: args.ge_weight,
        entropy_weight: args.entropy,
        progress: !args.quiet,
        ..TrainConfig::default()
    };
    let train_set = read_treebank(&args.train)?;
    let dev = match &args.dev {
        Some(p) => read_treebank(p)?,
        None => Vec::new(),
    };
    let trained = train(&train_set, &dev, &config, |e| {
        let dev = e.dev.map_or(String::new(), |d| {
            format!(
                ", dev UAS {:.2}% ({:.2}% without punctuation)",
                100.0 * d.uas,
                100.0 * d.uas_no_punct
            )
        });
        eprintln!(
            "epoch {}: objective {:.4}, {:.1} s{}{dev}",
            e.epoch,
            e.objective,
            e.seconds,
            if e.skipped > 0 {
                format!(", {} sentences skipped", e.skipped)
            } else {
                String::new()
            }
        );
    })?;
    trained.parser.save(&args.out)?;
    eprintln!(
        "trained on {} sentences in {:.1} s; model written to {}",
        trained.sentences,
        trained.seconds,
        args.out.display()
    );
    Ok(())
}
