//! The quantity registry: one table ([`REGISTRY`]) that names every quantity
//! a front end can compute, says what it is (help written once, for the
//! command's help and the Python docstrings), which backends can give it
//! ([`Needs`]), which fields of an input record it reads, and what parameter
//! follows its name (`renyi:2`).
//!
//! Adding a first-order quantity to the front end is: a variant of
//! [`Quantity`] (its place among the variants is its place in the output),
//! its row in [`REGISTRY`], and its arm in the evaluation
//! (`record::eval`, or `record::eval_logarithmic` when it needs logarithms).

use std::fmt;
use std::str::FromStr;

use crate::backend::BackendKind;
use crate::error::UsageError;

/// A quantity a front end can compute; its output field has the name of
/// [`Quantity::name`] (gradients of two-model quantities add a `_q` field).
///
/// The order of the variants is the order of the output fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quantity {
    /// `log_z`.
    LogZ,
    /// `marginals`.
    Marginals,
    /// `label_marginals`.
    LabelMarginals,
    /// `entropy`.
    Entropy,
    /// `grad_entropy`.
    GradEntropy,
    /// `cross_entropy`.
    CrossEntropy,
    /// `grad_cross_entropy`.
    GradCrossEntropy,
    /// `kl`.
    Kl,
    /// `grad_kl`.
    GradKl,
    /// `renyi:ALPHA`.
    Renyi(Order),
    /// `lp_norm:K`.
    LpNorm(Order),
    /// `expected_attachment`.
    ExpectedAttachment,
    /// `grad_expected_attachment`.
    GradExpectedAttachment,
    /// `ge`.
    Ge,
    /// `grad_ge`.
    GradGe,
    /// `covariance`.
    Covariance,
    /// `best_tree`.
    BestTree,
    /// `mbr_tree`.
    MbrTree,
    /// `samples:K`.
    Samples(Order),
    /// `kbest:K`.
    KBest(Order),
}

/// Which trees the distribution ranges over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Structure {
    /// All spanning trees: the matrix-tree theorem and the maximum spanning
    /// arborescence.
    #[default]
    Nonprojective,
    /// Projective trees only (no crossing arcs): Eisner's chart for `ln Z`,
    /// marginals, entropy, their gradients and the best tree.
    Projective,
}

impl Structure {
    /// `"nonprojective"` or `"projective"`.
    pub fn name(self) -> &'static str {
        match self {
            Structure::Nonprojective => "nonprojective",
            Structure::Projective => "projective",
        }
    }

    /// Whether `quantity` is defined for this structure.
    pub fn has(self, quantity: Quantity) -> bool {
        match self {
            Structure::Nonprojective => true,
            Structure::Projective => matches!(
                quantity,
                Quantity::LogZ
                    | Quantity::Marginals
                    | Quantity::LabelMarginals
                    | Quantity::Entropy
                    | Quantity::GradEntropy
                    | Quantity::BestTree
                    | Quantity::MbrTree
            ),
        }
    }
}

/// What a quantity's name may be followed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Nothing: `entropy`.
    None,
    /// `:ALPHA`, finite and `≥ 0`; the placeholder.
    NonNegative(&'static str),
    /// `:ALPHA`, `≥ 0` or `inf` (Rényi orders: `∞` is the min-entropy); the
    /// placeholder.
    NonNegativeOrInfinite(&'static str),
    /// `:K`, finite and `> 0` (norm orders); the placeholder.
    Positive(&'static str),
    /// `:K`, a whole number `≥ 1` (how many trees); the placeholder.
    Count(&'static str),
}

/// What a backend's numbers must be able to do for a quantity: the
/// capability check of [`Quantity::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Field operations only: every backend.
    Field,
    /// `ln` and `exp` ([`spantree_core::Transcendental`]): not exact rationals.
    Logarithms,
}

/// A row of [`REGISTRY`].
#[derive(Clone, Copy, Debug)]
pub struct QuantityInfo {
    /// The name on the command line, in Python and as output field.
    pub name: &'static str,
    /// The parameter after `:`.
    pub param: Param,
    /// What the value is and which fields of the record it reads, for a
    /// person (one paragraph, plain text).
    pub help: &'static str,
    /// What the backend must be able to do.
    pub needs: Needs,
    /// The fields of an input record it reads beyond the graph (one of
    /// `"scores_q"`/`"weights_q"` when it lists both).
    pub reads: &'static [&'static str],
    /// The quantity it is the gradient of (with respect to the scores).
    pub gradient_of: Option<&'static str>,
    make: fn(Order) -> Quantity,
}

impl QuantityInfo {
    /// Whether it needs a second distribution `q` (`"scores_q"` or `"weights_q"`).
    pub fn needs_second_graph(&self) -> bool {
        self.reads.contains(&"scores_q")
    }

    /// Whether it reads arc features.
    pub fn needs_features(&self) -> bool {
        self.reads.contains(&"features")
    }

    /// The name with its parameter placeholder: `renyi:ALPHA`.
    pub fn usage(&self) -> String {
        match self.param {
            Param::None => self.name.to_owned(),
            Param::NonNegative(p)
            | Param::NonNegativeOrInfinite(p)
            | Param::Positive(p)
            | Param::Count(p) => {
                format!("{}:{p}", self.name)
            }
        }
    }
}

const fn row(
    name: &'static str,
    param: Param,
    needs: Needs,
    reads: &'static [&'static str],
    gradient_of: Option<&'static str>,
    make: fn(Order) -> Quantity,
    help: &'static str,
) -> QuantityInfo {
    QuantityInfo {
        name,
        param,
        help,
        needs,
        reads,
        gradient_of,
        make,
    }
}

const Q: &[&str] = &["scores_q", "weights_q"];
const TREE: &[&str] = &["heads", "labels"];
const GE: &[&str] = &["features", "targets"];

/// Every quantity, in the order of [`Quantity`]'s variants.
#[rustfmt::skip]
pub static REGISTRY: &[QuantityInfo] = &[
    row("log_z", Param::None, Needs::Field, &[], None, |_| Quantity::LogZ,
        "ln Z, a number; on the exact backend followed by \"z\", Z as a rational string \
         (\"p/q\", or \"p\" when the denominator is 1)"),
    row("marginals", Param::None, Needs::Field, &[], None, |_| Quantity::Marginals,
        "P(h -> m in the tree), (n+1)x(n+1) in the input layout, 0 on non-arcs; brings \
         label_marginals along on labeled input"),
    row("label_marginals", Param::None, Needs::Field, &[], None, |_| Quantity::LabelMarginals,
        "P(h -> m with label l in the tree), [h][m][label]; labeled input only (absent \
         otherwise)"),
    row("entropy", Param::None, Needs::Logarithms, &[], None, |_| Quantity::Entropy,
        "the Shannon entropy H(p) = -sum_d p(d) ln p(d), a number"),
    row("grad_entropy", Param::None, Needs::Logarithms, &[], Some("entropy"),
        |_| Quantity::GradEntropy,
        "the gradient of entropy"),
    row("cross_entropy", Param::None, Needs::Logarithms, Q, None, |_| Quantity::CrossEntropy,
        "H(p, q) = -sum_d p(d) ln q(d), with q in the same line as \"scores_q\" or \
         \"weights_q\" (layout and null conventions of \"scores\" and \"weights\"; either \
         form, whatever the form of p). +infinity (p uses an arc that q forbids) prints as \
         null plus \"cross_entropy_infinite_arc\": [h, m] ([h, m, label] on labeled graphs)"),
    row("grad_cross_entropy", Param::None, Needs::Logarithms, Q, Some("cross_entropy"),
        |_| Quantity::GradCrossEntropy,
        "the gradient of cross_entropy with respect to p's scores, and with respect to q's \
         as grad_cross_entropy_q; where H(p, q) is +infinity an error record of kind \
         \"infinite_divergence\" naming the arc"),
    row("kl", Param::None, Needs::Logarithms, Q, None, |_| Quantity::Kl,
        "KL(p || q) = sum_d p(d) ln(p(d)/q(d)), with q as for cross_entropy; +infinity \
         prints as null plus \"kl_infinite_arc\""),
    row("grad_kl", Param::None, Needs::Logarithms, Q, Some("kl"), |_| Quantity::GradKl,
        "the gradient of kl with respect to p's scores, and with respect to q's as \
         grad_kl_q; where KL(p || q) is +infinity an error record of kind \
         \"infinite_divergence\" naming the arc"),
    row("renyi", Param::NonNegativeOrInfinite("ALPHA"), Needs::Logarithms, &[], None,
        Quantity::Renyi,
        "the Renyi entropy ln(sum_d p(d)^ALPHA) / (1 - ALPHA), ALPHA >= 0 (0: the log of \
         the number of trees; 1: entropy; inf: the min-entropy -ln p(best tree)), a \
         number; one order per run"),
    row("lp_norm", Param::Positive("K"), Needs::Logarithms, &[], None, Quantity::LpNorm,
        "(sum_d p(d)^K)^(1/K), K > 0, a number; one order per run"),
    row("expected_attachment", Param::None, Needs::Field, TREE, None,
        |_| Quantity::ExpectedAttachment,
        "(1/n) sum_m P(heads[m] -> m), with the reference tree in the line as \"heads\": \
         [h1, ..., hn] (0 is the root); with \"labels\": [l1, ..., ln] (0-based label \
         indices) the labeled score"),
    row("grad_expected_attachment", Param::None, Needs::Field, TREE,
        Some("expected_attachment"), |_| Quantity::GradExpectedAttachment,
        "the gradient of expected_attachment"),
    row("ge", Param::None, Needs::Field, GE, None, |_| Quantity::Ge,
        "the generalised-expectation objective ||E[f] - t||^2, with sparse arc features \
         \"features\": [[h, m, [v1, ..., vF]], ...] (arcs not listed are 0; entries for one \
         arc add up; [h, m, label, [v1, ..., vF]] for one label of a labeled graph) and \
         \"targets\": [t1, ..., tF]"),
    row("grad_ge", Param::None, Needs::Field, GE, Some("ge"), |_| Quantity::GradGe,
        "the gradient of ge"),
    row("covariance", Param::None, Needs::Field, &["features", "features_s"], None,
        |_| Quantity::Covariance,
        "Cov[f, g] = E[f g^T] - E[f] E[g]^T, an R x S matrix (rows of f, columns of g), with \
         f the line's \"features\" and g its \"features_s\" (same sparse format), or f \
         itself when the line has no \"features_s\"; R and S are the lengths of the \
         entries' value arrays (all equal within one field; an empty list has dimension 0); \
         \"targets\" is not read"),
    row("best_tree", Param::None, Needs::Field, &[], None, |_| Quantity::BestTree,
        "the highest-weight tree of the rooting (the maximum spanning arborescence, with \
         the single-root constraint enforced exactly): {\"heads\": [h1, ..., hn], \
         \"score\": s}, 0 the root, s the tree's log-weight (the sum of its arcs' scores); \
         on labeled input also \"labels\": [l1, ..., ln], the best label of each arc; \
         ties go to the lowest head (then label) index"),
    row("mbr_tree", Param::None, Needs::Field, &[], None, |_| Quantity::MbrTree,
        "the minimum-Bayes-risk tree: the tree of the rooting with the highest expected \
         attachment score, i.e. the maximum spanning arborescence under the marginals \
         (label marginals on labeled input): {\"heads\": [...], \"score\": s} with s the \
         expected number of correct attachments, sum_m P(h_m -> m)"),
    row("samples", Param::Count("K"), Needs::Field, &[], None, Quantity::Samples,
        "K trees drawn exactly from the distribution (the marginal sampler with rank-one \
         updates or Wilson's walk, chosen by their measured cost), a list of {\"heads\": \
         [...], \"log_prob\": ln p(tree)} (and \"labels\" on labeled input); reproducible \
         from --seed and the line number, the same for every --threads"),
    row("kbest", Param::Count("K"), Needs::Field, &[], None, Quantity::KBest,
        "the K highest-scoring trees of the rooting, best first, a list of {\"heads\": \
         [...], \"score\": s} (fewer when the graph has fewer trees; ties in a fixed order)"),
];

impl Quantity {
    /// Its row of [`REGISTRY`].
    pub fn info(self) -> &'static QuantityInfo {
        let index = match self {
            Quantity::LogZ => 0,
            Quantity::Marginals => 1,
            Quantity::LabelMarginals => 2,
            Quantity::Entropy => 3,
            Quantity::GradEntropy => 4,
            Quantity::CrossEntropy => 5,
            Quantity::GradCrossEntropy => 6,
            Quantity::Kl => 7,
            Quantity::GradKl => 8,
            Quantity::Renyi(_) => 9,
            Quantity::LpNorm(_) => 10,
            Quantity::ExpectedAttachment => 11,
            Quantity::GradExpectedAttachment => 12,
            Quantity::Ge => 13,
            Quantity::GradGe => 14,
            Quantity::Covariance => 15,
            Quantity::BestTree => 16,
            Quantity::MbrTree => 17,
            Quantity::Samples(_) => 18,
            Quantity::KBest(_) => 19,
        };
        &REGISTRY[index]
    }

    /// The output field (and name, without its parameter).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether it needs `ln`/`exp` of the backend's scalar
    /// ([`spantree_core::Transcendental`]), which exact rationals lack.
    pub fn needs_logarithms(self) -> bool {
        self.info().needs == Needs::Logarithms
    }

    /// The order of `renyi:ALPHA` or `lp_norm:K`.
    pub fn order(self) -> Option<f64> {
        match self {
            Quantity::Renyi(o)
            | Quantity::LpNorm(o)
            | Quantity::Samples(o)
            | Quantity::KBest(o) => Some(o.0),
            _ => None,
        }
    }

    /// Whether `backend` can give this quantity.
    pub fn supported_on(self, backend: BackendKind) -> bool {
        match self.info().needs {
            Needs::Field => true,
            Needs::Logarithms => backend.has_logarithms(),
        }
    }

    /// The capability check.
    ///
    /// # Errors
    /// [`UsageError::Unsupported`] when `backend` cannot give it.
    pub fn check(self, backend: BackendKind) -> Result<(), UsageError> {
        if self.supported_on(backend) {
            Ok(())
        } else {
            Err(UsageError::Unsupported {
                quantity: self.name(),
                backend: backend.name(),
            })
        }
    }
}

impl fmt::Display for Quantity {
    /// The name with its parameter, as parsed: `renyi:2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.order() {
            Some(order) => write!(f, "{}:{order}", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

impl FromStr for Quantity {
    type Err = UsageError;

    /// A name, and `:VALUE` for those that take a parameter; spaces around
    /// either are ignored.
    ///
    /// # Errors
    /// [`UsageError`] for an unknown name (listing the known ones), a
    /// missing, unexpected, unreadable or out-of-domain parameter.
    fn from_str(text: &str) -> Result<Quantity, UsageError> {
        let text = text.trim();
        let (name, value) = match text.split_once(':') {
            Some((name, value)) => (name.trim(), Some(value.trim())),
            None => (text, None),
        };
        let Some(info) = REGISTRY.iter().find(|q| q.name == name) else {
            return Err(UsageError::UnknownQuantity {
                name: name.to_owned(),
            });
        };
        let name = info.name;
        let (placeholder, positive) = match info.param {
            Param::None => {
                return match value {
                    None => Ok((info.make)(Order(0.0))),
                    Some(v) => Err(UsageError::UnexpectedParameter {
                        name,
                        value: v.to_owned(),
                    }),
                };
            }
            Param::NonNegative(p) | Param::NonNegativeOrInfinite(p) => (p, false),
            Param::Positive(p) | Param::Count(p) => (p, true),
        };
        let whole = matches!(info.param, Param::Count(_));
        let infinite_ok = matches!(info.param, Param::NonNegativeOrInfinite(_));
        let domain = match (positive, infinite_ok) {
            (true, _) if whole => "a whole number from 1 to 1000000",
            (true, _) => "a finite number > 0",
            (false, false) => "a finite number ≥ 0",
            (false, true) => "a number ≥ 0, or inf",
        };
        let Some(value) = value else {
            return Err(UsageError::MissingParameter {
                name,
                placeholder,
                domain,
            });
        };
        let x: f64 = value.parse().map_err(|_| UsageError::ParameterNotANumber {
            name,
            placeholder,
            value: value.to_owned(),
        })?;
        let ok = (x.is_finite() || (infinite_ok && x == f64::INFINITY))
            && if positive { x > 0.0 } else { x >= 0.0 }
            && (!whole || (x.fract() == 0.0 && x <= 1e6));
        if !ok {
            return Err(UsageError::ParameterDomain {
                name,
                placeholder,
                domain,
                value: value.to_owned(),
            });
        }
        // `+ 0.0` turns -0 into 0, so that renyi:-0 and renyi:0 are one quantity.
        Ok((info.make)(Order(x + 0.0)))
    }
}

/// The numeric parameter of a quantity, ordered (and hashed) by value so that
/// quantities sort and deduplicate; `-0` is stored as `0`.
#[derive(Clone, Copy, Debug)]
pub struct Order(f64);

impl Order {
    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl PartialEq for Order {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0).is_eq()
    }
}

impl Eq for Order {}

impl PartialOrd for Order {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Order {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl std::hash::Hash for Order {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// The known names, for messages: `log_z, …, renyi:ALPHA, …`.
pub fn known_quantities() -> String {
    REGISTRY
        .iter()
        .map(QuantityInfo::usage)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One paragraph naming every quantity, the gradients last (the help of a
/// `--quantities` option).
pub fn quantities_summary() -> String {
    let (gradients, values): (Vec<&QuantityInfo>, Vec<&QuantityInfo>) =
        REGISTRY.iter().partition(|q| q.gradient_of.is_some());
    let names = |qs: &[&QuantityInfo]| qs.iter().map(|q| q.usage()).collect::<Vec<_>>().join(", ");
    format!(
        "Comma-separated quantities to compute: {}, and the gradients {} (see QUANTITIES \
         below for the line fields they read). label_marginals is only produced for labeled \
         input, and is added there automatically when marginals are requested",
        names(&values),
        names(&gradients)
    )
}
