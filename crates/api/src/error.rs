//! The two kinds of failure of the front end: a request that cannot be run
//! at all ([`UsageError`], before any input is read) and one input record
//! that produced no result ([`LineError`], written in its place).

use std::fmt;

use spantree_core::{Error, NoTree, Numerical};

use crate::algorithm::known_algorithms;
use crate::quantity::{known_quantities, REGISTRY};

/// A request that cannot run: an unknown or malformed name, a quantity the
/// backend cannot give, options that contradict each other. The command
/// turns these into usage errors (exit status 2) before reading input.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum UsageError {
    /// No quantity has this name.
    #[error("unknown quantity {name:?}{}; known: {}", did_you_mean(name, REGISTRY.iter().map(|q| q.name)), known_quantities())]
    UnknownQuantity {
        /// The name as given.
        name: String,
    },
    /// A quantity without parameter was given one (`entropy:2`).
    #[error("{name} takes no parameter (got {name}:{value})")]
    UnexpectedParameter {
        /// The quantity.
        name: &'static str,
        /// The parameter as given.
        value: String,
    },
    /// A quantity that needs a parameter was given none (`renyi`).
    #[error("{name} needs its order: {name}:{placeholder}, where {placeholder} is {domain} (e.g. {name}:2)")]
    MissingParameter {
        /// The quantity.
        name: &'static str,
        /// The parameter's placeholder (`ALPHA`).
        placeholder: &'static str,
        /// Its domain, in words.
        domain: &'static str,
    },
    /// The parameter is not a number.
    #[error("{name}:{placeholder}: {value:?} is not a number")]
    ParameterNotANumber {
        /// The quantity.
        name: &'static str,
        /// The parameter's placeholder.
        placeholder: &'static str,
        /// The parameter as given.
        value: String,
    },
    /// The parameter is outside its domain (`renyi:-1`, `lp_norm:0`).
    #[error("{name}:{placeholder}: {placeholder} must be {domain}, got {value}")]
    ParameterDomain {
        /// The quantity.
        name: &'static str,
        /// The parameter's placeholder.
        placeholder: &'static str,
        /// Its domain, in words.
        domain: &'static str,
        /// The parameter as given.
        value: String,
    },
    /// One parameterised quantity asked with two parameters: it has one
    /// output field.
    #[error("{name} is asked with two orders ({first} and {second}); it has one output field, so give one order per run")]
    TwoOrders {
        /// The quantity.
        name: &'static str,
        /// The first order.
        first: f64,
        /// The second order.
        second: f64,
    },
    /// The backend cannot give this quantity: its numbers lack an ability
    /// the quantity needs (see [`crate::quantity::Needs`]).
    #[error("{quantity} needs logarithms, which exact rationals do not have; use --backend accurate, log or f64 for it (on --backend exact: log_z, marginals, label_marginals, expected_attachment, ge, covariance and their gradients)")]
    Unsupported {
        /// The quantity.
        quantity: &'static str,
        /// The backend's name.
        backend: &'static str,
    },
    /// A quantity that projective trees do not have (`--structure projective`).
    #[error("{quantity} is not available for projective trees; with --structure projective: log_z, marginals, label_marginals, entropy, grad_entropy and best_tree")]
    NotProjective {
        /// The quantity.
        quantity: &'static str,
    },
    /// Projective trees on the exact backend: the chart runs in `f64` log space.
    #[error("--structure projective runs Eisner's chart in f64 log space; use a floating-point --backend")]
    ProjectiveNeedsFloat,
    /// Exact rational output asked of a floating-point backend.
    #[error("--exact-output needs --backend exact")]
    ExactOutputNeedsExact,
    /// `--algorithm` without `=`.
    #[error(
        "expected QUANTITY=NAME (e.g. entropy=smith-eisner), got {text:?}; choices: {}",
        known_algorithms()
    )]
    AlgorithmSyntax {
        /// The text as given.
        text: String,
    },
    /// `--algorithm` for a quantity that has one algorithm.
    #[error(
        "{quantity:?} has no choice of algorithm; choices: {}",
        known_algorithms()
    )]
    NoChoiceOfAlgorithm {
        /// The quantity as given.
        quantity: String,
    },
    /// `--algorithm` with an unknown name.
    #[error("unknown algorithm {name:?} for {quantity}; known: {known}")]
    UnknownAlgorithm {
        /// The quantity.
        quantity: &'static str,
        /// The name as given.
        name: String,
        /// The known names, default marked.
        known: String,
    },
    /// One quantity given two different algorithms.
    #[error("--algorithm gives {quantity} two algorithms ({first} and {second}); give one")]
    TwoAlgorithms {
        /// The quantity.
        quantity: &'static str,
        /// The first algorithm.
        first: &'static str,
        /// The second algorithm.
        second: &'static str,
    },
    /// `log_z=minors` asked for multi-root trees.
    #[error("log_z=minors is a single-root algorithm (Z = Σ_r ρ_r det L⁰ without row and column r); use it with --rooting single, or log_z=lu for multi-root trees")]
    MinorsNeedSingleRoot,
    /// No backend has this name.
    #[error(
        "unknown backend {name:?}{}; known: {}",
        not_built(name),
        crate::backend::BackendKind::known()
    )]
    UnknownBackend {
        /// The name as given.
        name: String,
    },
    /// No rooting has this name.
    #[error("unknown rooting {name:?}; known: single, multi")]
    UnknownRooting {
        /// The name as given.
        name: String,
    },
}

/// `" (did you mean \"x\"?)"` for the known name closest to `name` in
/// edit distance, when it is close (at most a third of its length, at least
/// 1); `""` otherwise. `O(Σ |name| · |known|)`.
///
/// ```
/// use spantree_api::error::did_you_mean;
/// assert_eq!(did_you_mean("entropie", ["entropy", "marginals"]), " (did you mean \"entropy\"?)");
/// assert_eq!(did_you_mean("xyz", ["entropy"]), "");
/// ```
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let best = known
        .into_iter()
        .map(|k| (edit_distance(name, k), k))
        .min_by_key(|&(d, _)| d);
    match best {
        Some((d, k)) if d <= (k.chars().count() / 3).max(1) => format!(" (did you mean {k:?}?)"),
        _ => String::new(),
    }
}

/// Levenshtein distance over chars, `O(|a| · |b|)`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Why a backend name is unknown when it is one this build left out.
fn not_built(name: &str) -> &'static str {
    if name == "exact" && !cfg!(feature = "exact") {
        " (this build has no exact backend: it was built without the `exact` feature)"
    } else {
        ""
    }
}

/// Why one input record produced no result: a stable snake_case `kind` and
/// a message that names the offending arc where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// Stable machine-readable name: [`Error::kind`] for the library's
    /// errors, and `"parse"`, `"missing_field"`, `"mismatch"`,
    /// `"nonexistent_arc"`, `"unsupported"`, `"infinite_divergence"` for the
    /// front end's own.
    pub kind: &'static str,
    /// A sentence for a person.
    pub message: String,
}

impl LineError {
    /// A record that is not valid JSON or not of the expected form.
    pub fn parse(message: impl Into<String>) -> Self {
        LineError {
            kind: "parse",
            message: message.into(),
        }
    }

    /// A field the requested quantities need is absent (or `null`).
    pub fn missing(field: &str, why: &str) -> Self {
        LineError {
            kind: "missing_field",
            message: format!("missing {field:?}: {why}"),
        }
    }

    /// The same error with `context` before its message.
    pub fn within(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for LineError {}

impl From<Error> for LineError {
    fn from(e: Error) -> Self {
        LineError {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl From<NoTree> for LineError {
    fn from(e: NoTree) -> Self {
        Error::NoSpanningTree(e).into()
    }
}

impl From<Numerical> for LineError {
    fn from(e: Numerical) -> Self {
        Error::Numerical(e).into()
    }
}
