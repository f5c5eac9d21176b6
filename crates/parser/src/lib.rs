//! # spantree-parser
//!
//! A first-order, edge-factored dependency parser trained with spantree:
//! every expectation, gradient and decode is the library's.
//!
//! * **Features** ([`features`]): the first-order templates of McDonald,
//!   Crammer & Pereira (2005) — forms, lemmas and UPOS of head and
//!   dependent, the UPOS in between and around, direction and binned
//!   distance — hashed into `2^bits` weights; arc scores `θ = w · f`.
//! * **Objectives** ([`objective`]): the CRF `ln Z − θ(gold)` (gradient
//!   marginals − gold, Koo et al. 2007), the structured hinge with Hamming
//!   loss by loss-augmented decoding (subgradient), the averaged perceptron,
//!   and GE (Druck, Mann & McCallum 2009) with optional entropy
//!   regularisation as the semi-supervised option.
//! * **Structures**: non-projective (matrix-tree theorem, maximum spanning
//!   arborescence) and projective (inside–outside, Eisner), single- or
//!   multi-root.
//! * **Training** ([`train()`]): AdaGrad on mini-batches computed in parallel,
//!   deterministic for a seed whatever the thread count.
//! * **Model file** ([`model`]): versioned JSON.
//! * **Evaluation** ([`eval`]) and **baselines** ([`baseline`]).
//!
//! ```
//! use spantree_parser::{train, Objective, TrainConfig};
//!
//! let text = "1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n\
//!             2\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_\n\n\
//!             1\tCats\tcat\tNOUN\t_\t_\t2\tnsubj\t_\t_\n\
//!             2\tsleep\tsleep\tVERB\t_\t_\t0\troot\t_\t_\n\n";
//! let sentences = spantree_conllu::parse(text)?;
//! let config = TrainConfig { objective: Objective::Crf, epochs: 3, bits: 16, ..TrainConfig::default() };
//! let trained = train(&sentences, &[], &config, |_| {})?;
//! let (heads, labels) = trained.parser.parse(&sentences[0])?;
//! assert_eq!(heads, vec![2, 0]);
//! assert_eq!(labels, vec!["nsubj", "root"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod baseline;
pub mod error;
pub mod eval;
pub mod features;
pub mod labeler;
pub mod model;
pub mod objective;
pub mod train;

pub use error::{ParserError, Result};

/// This crate's README, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
pub use eval::{evaluate, evaluate_treebanks, Scores};
pub use features::SentenceFeatures;
pub use model::{Parser, FORMAT_VERSION};
pub use objective::{Objective, RootingChoice, Structure};
pub use spantree_conllu::Sentence;

/// A parse of one sentence: the head of every word (`0` the root) and its
/// relation (empty when no labeler ran).
pub type Parsed = (Vec<usize>, Vec<String>);
pub use train::{parse_all, train, EpochStats, TrainConfig, Trained};

/// Writes `sentence` as CoNLL-U with the given heads and relations in
/// columns 7 and 8 (the other columns as read; multiword-token lines and
/// empty nodes, which the reader drops, are not written). `O(n)`.
pub fn write_conllu(
    out: &mut impl std::io::Write,
    sentence: &Sentence,
    heads: &[usize],
    labels: &[String],
) -> std::io::Result<()> {
    for c in &sentence.comments {
        writeln!(out, "# {c}")?;
    }
    for (i, w) in sentence.words.iter().enumerate() {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t_\t{}",
            i + 1,
            w.form,
            w.lemma,
            w.upos,
            w.xpos,
            w.feats,
            heads[i],
            labels.get(i).map_or("dep", String::as_str),
            w.misc
        )?;
    }
    writeln!(out)
}
