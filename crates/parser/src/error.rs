//! The parser's typed errors.

use spantree_conllu::ConlluError;

/// What went wrong while training, loading or applying a parser.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParserError {
    /// A malformed CoNLL-U sentence (with its line) or an unreadable file.
    #[error(transparent)]
    Conllu(#[from] ConlluError),
    /// spantree refused a sentence's graph (numerical failure, no tree).
    #[error("sentence at line {line}: {source}")]
    Core {
        /// The sentence's first line in its file (`0` when not from a file).
        line: usize,
        /// The library's error.
        source: spantree_core::Error,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A model file that is not JSON of the documented layout.
    #[error("{path}: not a spantree parser model: {message}")]
    BadModel {
        /// The path.
        path: String,
        /// What the JSON reader said.
        message: String,
    },
    /// A model file of another format version.
    #[error("{path}: model format version {found}; this build reads version {expected}")]
    Version {
        /// The path.
        path: String,
        /// The version in the file.
        found: u32,
        /// The version this build writes and reads.
        expected: u32,
    },
    /// A combination of options that has no implementation.
    #[error("unsupported: {what}")]
    Unsupported {
        /// The combination.
        what: &'static str,
    },
    /// An option value outside its set (`--objective crf|hinge|…`).
    #[error("unknown {what} {value:?}; expected one of {expected}")]
    UnknownChoice {
        /// The option.
        what: &'static str,
        /// The value given.
        value: String,
        /// The accepted values.
        expected: &'static str,
    },
    /// No usable training sentence.
    #[error("no training sentence left (of {read} read)")]
    NoData {
        /// The sentences read.
        read: usize,
    },
    /// Gold and predicted files that do not align.
    #[error(
        "sentence {index} (gold line {line}): {gold} gold words against {predicted} predicted"
    )]
    Misaligned {
        /// The 0-based sentence index.
        index: usize,
        /// The gold sentence's first line.
        line: usize,
        /// Gold words.
        gold: usize,
        /// Predicted words (`0` when the predicted file ended).
        predicted: usize,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, ParserError>;
