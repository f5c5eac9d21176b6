//! `spantree evaluate`: attachment scores of a predicted CoNLL-U file
//! against a gold one.

use std::path::PathBuf;

use clap::Args;
use spantree_parser::{evaluate_treebanks, ParserError, Scores};

/// Options of `spantree evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The gold treebank (CoNLL-U).
    #[arg(value_name = "GOLD")]
    pub gold: PathBuf,
    /// The predicted treebank, sentence for sentence.
    #[arg(value_name = "PRED")]
    pub predicted: PathBuf,
}

/// The report printed by `spantree evaluate`.
pub fn format_scores(s: &Scores) -> String {
    format!(
        "sentences {}\nwords {} ({} without punctuation)\n\
         UAS {:.2}%\nLAS {:.2}%\nUAS without punctuation {:.2}%\nLAS without punctuation {:.2}%\n\
         well-formed single-root trees {:.2}%\n",
        s.sentences,
        s.words,
        s.words_no_punct,
        100.0 * s.uas,
        100.0 * s.las,
        100.0 * s.uas_no_punct,
        100.0 * s.las_no_punct,
        100.0 * s.well_formed_single_root
    )
}

/// Runs `spantree evaluate`.
///
/// # Errors
/// Unreadable or malformed files (every malformed sentence is reported;
/// the treebanks must then still align), misaligned treebanks.
pub fn run(args: &EvaluateArgs) -> Result<Scores, ParserError> {
    let read = |p: &PathBuf| -> Result<_, ParserError> {
        let (good, bad) = spantree_conllu::read_file(p)?;
        for e in &bad {
            eprintln!("spantree: {}: {e} (sentence skipped)", p.display());
        }
        Ok(good)
    };
    let gold = read(&args.gold)?;
    let predicted = read(&args.predicted)?;
    evaluate_treebanks(&gold, &predicted)
}
