//! Typed errors. Every variant names the offending arc or node, in the
//! `(n+1) × (n+1)` layout where node `0` is the root and `1..=n` are words.

use std::fmt;

/// An arc `head → dependent`, optionally one label of it; nodes numbered as
/// in the input layout (`0` is the root, words are `1..=n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArcRef {
    /// The head node (`0` for the root).
    pub head: usize,
    /// The dependent node (a word, `1..=n`, unless the input was malformed).
    pub dependent: usize,
    /// The label index, for labeled graphs.
    pub label: Option<usize>,
}

impl fmt::Display for ArcRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.label {
            Some(l) => write!(f, "label {l} of arc {} → {}", self.head, self.dependent),
            None => write!(f, "arc {} → {}", self.head, self.dependent),
        }
    }
}

/// Why a graph has no spanning tree (`Z = 0`), decided combinatorially on the
/// support of the positive weights, identically on every backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NoTree {
    /// No arc leaves the root.
    NoRootArc,
    /// This word cannot be reached from the root (multi-root), or from any
    /// word the root can attach to (single-root).
    Unreachable {
        /// The word, `1..=n`.
        word: usize,
    },
    /// Single-root only: every word is reachable from the root, but no single
    /// word with a root arc reaches all the others.
    NoSingleRoot,
}

impl fmt::Display for NoTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoTree::NoRootArc => write!(f, "no arc leaves the root"),
            NoTree::Unreachable { word } => {
                write!(f, "word {word} cannot be reached from the root")
            }
            NoTree::NoSingleRoot => write!(
                f,
                "no single word that the root can attach to reaches every other word"
            ),
        }
    }
}

/// A failure of floating-point linear algebra on a graph that does have trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Numerical {
    /// The factorisation met a zero pivot at this (0-based) step although a
    /// spanning tree exists: the Laplacian is singular to working precision.
    Singular {
        /// The elimination step, `0..n`.
        pivot: usize,
    },
    /// The determinant came out negative, which only rounding can cause (`Z ≥ 0`).
    NegativeDeterminant,
    /// A result was NaN or infinite.
    NotFinite,
    /// A dense factorisation's own a-posteriori check
    /// ([`Factorization::ln_det_error`](crate::Factorization::ln_det_error),
    /// and for derivatives [`VjpAccuracy`](crate::engine::VjpAccuracy))
    /// finds that it has lost the answer: it keeps about `bits` correct bits
    /// where more are needed. The cancellation-free `accurate` engine
    /// answers such inputs.
    Inaccurate {
        /// Why the factorisation lost accuracy.
        cause: Inaccuracy,
        /// The estimated correct bits (`0..=53`) of `ln Z`, or of the
        /// derivative ([`Inaccuracy::SmallDerivative`], norm-wise).
        bits: u32,
    },
    /// The `f64` weight `e^{θ − c_m}` of arc `head → dependent` fell below
    /// `f64`'s normal range in the preparation (its score lies more than
    /// about 708 below the best arc into `dependent`), and the trees through
    /// such arcs may weigh more than one rounding of `Z`: no engine on
    /// `f64` weights can answer. The exact or high-precision backends can.
    Underflow {
        /// The head of the arc (`0` the root).
        head: usize,
        /// Its dependent.
        dependent: usize,
    },
}

/// Why a dense factorisation lost accuracy ([`Numerical::Inaccurate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Inaccuracy {
    /// A Laplacian diagonal `ρ_m + Σ_h A[h][m]` was formed from weights so
    /// far apart that a root or arc weight was lost to rounding.
    LostWeight {
        /// The word whose diagonal lost a weight.
        word: usize,
    },
    /// The pivots of the LU are small differences of large numbers.
    Cancellation,
    /// A derivative read from the dense inverse (a gradient, a
    /// vector–Jacobian product) is a small difference of large parts, by
    /// the estimate
    /// [`VjpAccuracy`](crate::engine::VjpAccuracy): typically a word nearly
    /// certain of its head, whose covariances are `O(u)` but are formed from
    /// `O(1)` parts.
    SmallDerivative {
        /// The least certain word below
        /// [`DENSE_UNCERTAINTY`](crate::engine::DENSE_UNCERTAINTY), if any
        /// (`0`: the root's row, or multi-root the number of root arcs).
        word: Option<usize>,
    },
    /// A derivative from the cancellation-free elimination (the
    /// vector–Jacobian product of `accurate`'s elimination route) whose
    /// tangents cancel inside the elimination by more than `f64` holds, by
    /// the product's own running error estimate (see
    /// [`Eliminated`](crate::engine::Eliminated)): typically a seed whose
    /// covariance with the marginals is far below `μ · |seed|` on a nearly
    /// deterministic graph (arc scores spread over `±50`, the seed the
    /// indicator of an unlikely tree). The arc is the one of largest
    /// estimated error.
    EliminationCancellation {
        /// The head of that arc (`0` the root).
        head: usize,
        /// Its dependent.
        dependent: usize,
    },
}

impl fmt::Display for Inaccuracy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inaccuracy::LostWeight { word } => write!(
                f,
                "the Laplacian diagonal of word {word} adds weights too far apart to keep the smaller"
            ),
            Inaccuracy::Cancellation => write!(f, "the LU pivots cancel"),
            Inaccuracy::SmallDerivative { word: Some(0) } => write!(
                f,
                "the derivative is a small difference of large parts: the root's arcs are \
                 nearly certain"
            ),
            Inaccuracy::SmallDerivative { word: Some(word) } => write!(
                f,
                "the derivative is a small difference of large parts: word {word} is nearly \
                 certain of its head"
            ),
            Inaccuracy::SmallDerivative { word: None } => write!(
                f,
                "the derivative is a small difference of large parts"
            ),
            Inaccuracy::EliminationCancellation { head, dependent } => write!(
                f,
                "the elimination's derivative of the marginal of arc {head} -> {dependent} is a \
                 small difference of large parts"
            ),
        }
    }
}

impl fmt::Display for Numerical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Numerical::Singular { pivot } => write!(
                f,
                "the Laplacian is singular to working precision (zero pivot at step {pivot}); \
                 try the log or exact backend"
            ),
            Numerical::NegativeDeterminant => write!(
                f,
                "rounding made the determinant negative; try the log or exact backend"
            ),
            Numerical::NotFinite => write!(
                f,
                "a result overflowed or became NaN; try the log or exact backend"
            ),
            Numerical::Underflow { head, dependent } => write!(
                f,
                "the weight of arc {head} -> {dependent} underflows f64 next to the best arc \
                 into {dependent}, and the trees through it may matter; try the exact backend"
            ),
            Numerical::Inaccurate {
                cause: cause @ Inaccuracy::EliminationCancellation { .. },
                bits,
            } => write!(
                f,
                "the derivative cannot be certified in f64 ({cause}: about {bits} correct \
                 bits estimated); use the high or exact backend"
            ),
            Numerical::Inaccurate { cause, bits } => write!(
                f,
                "dense LU cannot be trusted here ({cause}: about {bits} correct bits); \
                 use the accurate backend"
            ),
        }
    }
}

/// Every error of the library.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The graph has no words (`n = 0`).
    #[error("the graph has no words (n = 0)")]
    Empty,
    /// The input is not an `(n+1) × (n+1)` matrix (times the label count).
    #[error("wrong shape: row {row} has {found} entries, expected {expected}")]
    Shape {
        /// The offending row of the input (`0` is the root row).
        row: usize,
        /// How many entries it has.
        found: usize,
        /// How many it should have.
        expected: usize,
    },
    /// A labeled graph declared zero labels.
    #[error("a labeled graph needs at least one label")]
    NoLabels,
    /// A cell of a labeled graph has the wrong number of labels.
    #[error("{arc} has {found} label values, expected {expected}")]
    LabelCount {
        /// Which arc.
        arc: ArcRef,
        /// How many values it has.
        found: usize,
        /// How many labels the graph has.
        expected: usize,
    },
    /// A weight or score is NaN.
    #[error("{what} of {arc} is NaN")]
    NotANumber {
        /// Which arc.
        arc: ArcRef,
        /// `"weight"` or `"score"`.
        what: &'static str,
    },
    /// A weight is infinite, or a score is `+∞`.
    #[error("{what} of {arc} is infinite ({value})")]
    Infinite {
        /// Which arc.
        arc: ArcRef,
        /// `"weight"` or `"score"`.
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// A weight is negative.
    #[error("weight of {arc} is negative ({value})")]
    NegativeWeight {
        /// Which arc.
        arc: ArcRef,
        /// The value (rounded to `f64` for exact inputs).
        value: f64,
    },
    /// A self-loop `m → m`, or an arc into the root, has a non-zero weight
    /// (a finite score). [`Graph`](crate::Graph) no longer raises it (those
    /// cells are ignored, whatever they hold); the variant and its kind
    /// `"nonexistent_arc"` stay for callers that check arcs themselves.
    #[error("{arc} does not exist (self-loop or arc into the root) but has weight {value}")]
    NonexistentArc {
        /// Which arc.
        arc: ArcRef,
        /// Its weight (`exp` of the score for score inputs).
        value: f64,
    },
    /// A weight overflowed the backend's number type (`exp` of a score above
    /// ~709 on a backend that does not shift scores).
    #[error("weight of {arc} overflows on this backend (score {score}); use the log backend")]
    Overflow {
        /// Which arc.
        arc: ArcRef,
        /// The score (log-weight).
        score: f64,
    },
    /// An arc named in features, a reference tree or a seed is not an arc of
    /// the graph (a node beyond `n`, a self-loop, an arc into the root, or a
    /// label beyond the label count).
    #[error("{arc} is not an arc of this graph of {n} words")]
    NoSuchArc {
        /// The arc as given.
        arc: ArcRef,
        /// The number of words of the graph.
        n: usize,
    },
    /// A feature index is not below the declared dimension.
    #[error("feature {index} of {arc} is out of range (dimension {dim})")]
    FeatureIndex {
        /// The arc the feature was given for.
        arc: ArcRef,
        /// The index given.
        index: usize,
        /// The declared dimension.
        dim: usize,
    },
    /// Two inputs that must agree in size do not (a second graph, targets
    /// against features, a reference tree against the sentence length).
    #[error("{what}: expected {expected}, found {found}")]
    Mismatch {
        /// What disagrees.
        what: &'static str,
        /// The size required.
        expected: usize,
        /// The size given.
        found: usize,
    },
    /// A parameter is outside its domain (a Rényi order `α < 0` or NaN, …).
    #[error("{what} must be {domain}, got {value}")]
    Parameter {
        /// The parameter.
        what: &'static str,
        /// Its domain, in words.
        domain: &'static str,
        /// The value given.
        value: f64,
    },
    /// A divergence (KL, cross-entropy) is `+∞` because `p` gives probability
    /// to an arc that `q` forbids, so it has no gradient.
    #[error("the divergence is +∞: p gives probability to {arc}, which q forbids")]
    InfiniteDivergence {
        /// The arc (or labeled arc).
        arc: ArcRef,
    },
    /// The quantity needs what this model does not keep (the `f64` graph of
    /// [`Model::new`](crate::Model::new) for zeroth-order quantities).
    #[error("{0} is not available for this model")]
    Unsupported(&'static str),
    /// The graph has no spanning tree: `Z = 0`, so probabilities are undefined.
    #[error("no spanning tree: {0}")]
    NoSpanningTree(NoTree),
    /// Floating-point linear algebra failed.
    #[error("numerical failure: {0}")]
    Numerical(Numerical),
    // Trees and decoding
    /// A head vector is not a tree over its words.
    #[error("not a tree: word {word}: {reason}")]
    InvalidTree {
        /// The offending word, `1..=n`.
        word: usize,
        /// What is wrong.
        reason: crate::tree::TreeDefect,
    },
    /// Spanning trees exist but none is projective (forbidden arcs leave only
    /// crossing trees), so the projective distribution is empty.
    #[error("no projective spanning tree: every tree the allowed arcs form has crossing arcs")]
    NoProjectiveTree,
}

impl From<Numerical> for Error {
    fn from(e: Numerical) -> Self {
        Error::Numerical(e)
    }
}

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A stable `snake_case` name of the variant, for machine-readable
    /// reports: the `"kind"` of the command's error records and of the
    /// Python exceptions. Names never change once published; a new variant
    /// gets a new name. `O(1)`.
    ///
    /// ```
    /// use spantree_core::{Error, NoTree};
    /// assert_eq!(Error::Empty.kind(), "empty");
    /// assert_eq!(Error::NoSpanningTree(NoTree::NoRootArc).kind(), "no_spanning_tree");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Empty => "empty",
            Error::Shape { .. } => "shape",
            Error::NoLabels => "no_labels",
            Error::LabelCount { .. } => "label_count",
            Error::NotANumber { .. } => "not_a_number",
            Error::Infinite { .. } => "infinite",
            Error::NegativeWeight { .. } => "negative_weight",
            Error::NonexistentArc { .. } => "nonexistent_arc",
            Error::Overflow { .. } => "overflow",
            Error::NoSuchArc { .. } => "no_such_arc",
            Error::FeatureIndex { .. } => "feature_index",
            Error::Mismatch { .. } => "mismatch",
            Error::Parameter { .. } => "parameter",
            Error::InfiniteDivergence { .. } => "infinite_divergence",
            Error::Unsupported(_) => "unsupported",
            Error::NoSpanningTree(_) => "no_spanning_tree",
            Error::Numerical(_) => "numerical",
            Error::InvalidTree { .. } => "invalid_tree",
            Error::NoProjectiveTree => "no_projective_tree",
        }
    }
}
