//! The command line. Usage errors (unknown options or quantities, bad
//! numbers) are clap's, with exit status 2.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use spantree_core::{Rooting, SecondOrder};

/// Inference over distributions of spanning trees (dependency trees) by the
/// matrix-tree theorem.
#[derive(Debug, Parser)]
#[command(name = "spantree", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run on a built-in example sentence and print a readable report
    /// (needs no input).
    Demo(DemoArgs),
    /// Read graphs as JSON lines, write one JSON line of results per input line.
    #[command(after_long_help = INFER_HELP)]
    Infer(InferArgs),
}

/// Options of `spantree demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The rooting of the marginal table (`log Z` is shown for both).
    #[arg(long, value_enum, default_value_t = RootingArg::Single)]
    pub rooting: RootingArg,
}

/// Options of `spantree infer`.
#[derive(Debug, Args)]
pub struct InferArgs {
    /// JSON-lines input file; - or absent reads standard input.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Single-root trees (exactly one word attaches to the root, as in
    /// Universal Dependencies) or multi-root trees.
    #[arg(long, value_enum, default_value_t = RootingArg::Single)]
    pub rooting: RootingArg,

    /// Number type and linear algebra (see EXACT BACKEND below for the
    /// conversions of the exact one).
    #[arg(long, value_enum, default_value_t = BackendArg::Accurate)]
    pub backend: BackendArg,

    /// Comma-separated quantities to compute: log_z, marginals,
    /// label_marginals, entropy, cross_entropy, kl, renyi:ALPHA, lp_norm:K,
    /// expected_attachment, ge, covariance, and the gradients grad_entropy,
    /// grad_cross_entropy, grad_kl, grad_expected_attachment, grad_ge (see
    /// QUANTITIES below for the line fields they read). label_marginals is
    /// only produced for labeled input, and is added there automatically
    /// when marginals are requested.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "LIST",
        value_parser = parse_quantity,
        default_value = "log_z,marginals"
    )]
    pub quantities: Vec<Quantity>,

    /// Choose the algorithm of a quantity that has more than one, as
    /// QUANTITY=NAME; repeatable (or comma-separated). The default is the
    /// fast one; the others are the literature's slower routes, kept as
    /// baselines (see ALGORITHMS below): log_z=lu|minors (minors:
    /// single-root only), marginals=inverse|mcdonald-satta,
    /// entropy=expectation|smith-eisner, grad_ge=reverse-mode|covariance,
    /// covariance=auto|jacobian-vector|hessian.
    #[arg(
        long = "algorithm",
        value_name = "QUANTITY=NAME",
        value_delimiter = ',',
        value_parser = parse_algorithm
    )]
    pub algorithms: Vec<AlgorithmChoice>,

    /// Worker threads for parsing and computing (default: all cores).
    /// Output is identical for every thread count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,

    /// Write the results to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// With --backend exact: print marginals, expected_attachment, ge,
    /// covariance and gradients as exact rational strings ("p/q", or "p" for integers)
    /// instead of the nearest f64.
    #[arg(long)]
    pub exact_output: bool,
}

/// `--rooting`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RootingArg {
    /// Exactly one word attaches to the root.
    Single,
    /// Any non-zero number of words attach to the root.
    Multi,
}

impl From<RootingArg> for Rooting {
    fn from(r: RootingArg) -> Rooting {
        match r {
            RootingArg::Single => Rooting::Single,
            RootingArg::Multi => Rooting::Multi,
        }
    }
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// Cancellation-free elimination of the Laplacian in f64, falling back to
    /// log space outside f64's safe range: accurate whatever the scales of
    /// the scores (spantree_faer::Accurate).
    Accurate,
    /// f64 LU on the weights as given (spantree_faer::F64).
    F64,
    /// f64 LU on column-shifted weights: ln Z never overflows (spantree_faer::ShiftedF64).
    Log,
    /// Exact rationals (spantree_exact::Exact); slow beyond a few dozen words.
    Exact,
}

impl BackendArg {
    /// The name used on the command line and in the output's `"backend"` field.
    pub fn name(self) -> &'static str {
        match self {
            BackendArg::Accurate => "accurate",
            BackendArg::F64 => "f64",
            BackendArg::Log => "log",
            BackendArg::Exact => "exact",
        }
    }
}

/// A quantity `infer` can compute; its output field has the name of
/// [`Quantity::name`] (gradients of two-model quantities add a `_q` field).
///
/// The order of the variants is the order of the output fields. A new
/// quantity becomes a variant here, a row of [`QUANTITIES`] (its command-line
/// name and parameter) and an arm in [`crate::record`]; parameters are parsed
/// and checked here, so that a bad one is a usage error before any input is
/// read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quantity {
    /// ln Z as a number (plus z, an exact rational string, on the exact backend).
    LogZ,
    /// Arc marginals P(h → m in the tree), (n+1)×(n+1), 0 on non-arcs.
    Marginals,
    /// Label marginals P(h → m with label l in the tree), `[h][m][l]`; labeled input only.
    LabelMarginals,
    /// Shannon entropy H(p) in nats.
    Entropy,
    /// ∂H(p)/∂θ.
    GradEntropy,
    /// Cross-entropy H(p, q) in nats; q from the line's `scores_q`/`weights_q`.
    CrossEntropy,
    /// ∂H(p, q)/∂θ_p and ∂H(p, q)/∂θ_q.
    GradCrossEntropy,
    /// KL(p ‖ q) in nats.
    Kl,
    /// ∂KL(p ‖ q)/∂θ_p and ∂KL(p ‖ q)/∂θ_q.
    GradKl,
    /// Rényi entropy of order α in nats.
    Renyi(Order),
    /// `‖p‖_k = (Σ_d p(d)^k)^{1/k}`.
    LpNorm(Order),
    /// Expected (labeled) attachment score against the line's `heads` (and `labels`).
    ExpectedAttachment,
    /// Its gradient.
    GradExpectedAttachment,
    /// The generalised-expectation objective `‖E[f] − t‖²` of the line's
    /// `features` and `targets`.
    Ge,
    /// Its gradient.
    GradGe,
    /// `Cov[f, g]` of the line's `features` against themselves or against
    /// `features_s`, an `R × S` matrix.
    Covariance,
}

/// What a quantity's command-line name may be followed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Nothing: `entropy`.
    None,
    /// `:ALPHA`, finite and `≥ 0` (Rényi orders).
    NonNegative(&'static str),
    /// `:K`, finite and `> 0` (norm orders).
    Positive(&'static str),
}

/// A row of [`QUANTITIES`]: command-line name, parameter, constructor (its
/// argument is the parsed parameter, `0` when there is none).
pub type QuantityName = (&'static str, Param, fn(Order) -> Quantity);

/// Every quantity by command-line name.
pub const QUANTITIES: &[QuantityName] = &[
    ("log_z", Param::None, |_| Quantity::LogZ),
    ("marginals", Param::None, |_| Quantity::Marginals),
    ("label_marginals", Param::None, |_| Quantity::LabelMarginals),
    ("entropy", Param::None, |_| Quantity::Entropy),
    ("grad_entropy", Param::None, |_| Quantity::GradEntropy),
    ("cross_entropy", Param::None, |_| Quantity::CrossEntropy),
    ("grad_cross_entropy", Param::None, |_| {
        Quantity::GradCrossEntropy
    }),
    ("kl", Param::None, |_| Quantity::Kl),
    ("grad_kl", Param::None, |_| Quantity::GradKl),
    ("renyi", Param::NonNegative("ALPHA"), Quantity::Renyi),
    ("lp_norm", Param::Positive("K"), Quantity::LpNorm),
    ("expected_attachment", Param::None, |_| {
        Quantity::ExpectedAttachment
    }),
    ("grad_expected_attachment", Param::None, |_| {
        Quantity::GradExpectedAttachment
    }),
    ("ge", Param::None, |_| Quantity::Ge),
    ("grad_ge", Param::None, |_| Quantity::GradGe),
    ("covariance", Param::None, |_| Quantity::Covariance),
];

impl Quantity {
    /// The output field (and command-line name, without its parameter).
    pub fn name(self) -> &'static str {
        match self {
            Quantity::LogZ => "log_z",
            Quantity::Marginals => "marginals",
            Quantity::LabelMarginals => "label_marginals",
            Quantity::Entropy => "entropy",
            Quantity::GradEntropy => "grad_entropy",
            Quantity::CrossEntropy => "cross_entropy",
            Quantity::GradCrossEntropy => "grad_cross_entropy",
            Quantity::Kl => "kl",
            Quantity::GradKl => "grad_kl",
            Quantity::Renyi(_) => "renyi",
            Quantity::LpNorm(_) => "lp_norm",
            Quantity::ExpectedAttachment => "expected_attachment",
            Quantity::GradExpectedAttachment => "grad_expected_attachment",
            Quantity::Ge => "ge",
            Quantity::GradGe => "grad_ge",
            Quantity::Covariance => "covariance",
        }
    }

    /// Whether the quantity needs `ln`/`exp` of the backend's scalar
    /// ([`spantree_core::Transcendental`]), which exact rationals lack.
    pub fn needs_logarithms(self) -> bool {
        matches!(
            self,
            Quantity::Entropy
                | Quantity::GradEntropy
                | Quantity::CrossEntropy
                | Quantity::GradCrossEntropy
                | Quantity::Kl
                | Quantity::GradKl
                | Quantity::Renyi(_)
                | Quantity::LpNorm(_)
        )
    }

    /// The order of `renyi:ALPHA` or `lp_norm:K`.
    pub fn order(self) -> Option<f64> {
        match self {
            Quantity::Renyi(o) | Quantity::LpNorm(o) => Some(o.0),
            _ => None,
        }
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
    QUANTITIES
        .iter()
        .map(|(name, param, _)| match param {
            Param::None => (*name).to_owned(),
            Param::NonNegative(p) | Param::Positive(p) => format!("{name}:{p}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses one item of `--quantities`: a name, and `:VALUE` for those that
/// take a parameter.
///
/// # Errors
/// A message for clap (exit status 2): an unknown name (listing the known
/// ones), a missing, unexpected or out-of-domain parameter.
pub fn parse_quantity(text: &str) -> Result<Quantity, String> {
    let text = text.trim();
    let (name, value) = match text.split_once(':') {
        Some((name, value)) => (name.trim(), Some(value.trim())),
        None => (text, None),
    };
    let Some(&(name, param, make)) = QUANTITIES.iter().find(|(n, _, _)| *n == name) else {
        return Err(format!(
            "unknown quantity {name:?}; known: {}",
            known_quantities()
        ));
    };
    let (placeholder, positive) = match param {
        Param::None => {
            return match value {
                None => Ok(make(Order(0.0))),
                Some(v) => Err(format!("{name} takes no parameter (got {name}:{v})")),
            };
        }
        Param::NonNegative(p) => (p, false),
        Param::Positive(p) => (p, true),
    };
    let domain = if positive {
        "a finite number > 0"
    } else {
        "a finite number ≥ 0"
    };
    let Some(value) = value else {
        return Err(format!(
            "{name} needs its order: {name}:{placeholder}, where {placeholder} is {domain} (e.g. {name}:2)"
        ));
    };
    let x: f64 = value
        .parse()
        .map_err(|_| format!("{name}:{placeholder}: {value:?} is not a number"))?;
    let ok = x.is_finite() && if positive { x > 0.0 } else { x >= 0.0 };
    if !ok {
        return Err(format!(
            "{name}:{placeholder}: {placeholder} must be {domain}, got {value}"
        ));
    }
    // `+ 0.0` turns -0 into 0, so that renyi:-0 and renyi:0 are one quantity.
    Ok(make(Order(x + 0.0)))
}

impl InferArgs {
    /// Checks the combinations of options that clap cannot: `--exact-output`
    /// needs the exact backend, the exact backend cannot take logarithms, and
    /// a parameterised quantity has one output field, so one order per run.
    ///
    /// # Errors
    /// A message for a usage error (exit status 2).
    pub fn check(&self) -> Result<(), String> {
        if self.exact_output && self.backend != BackendArg::Exact {
            return Err("--exact-output needs --backend exact".into());
        }
        if self.backend == BackendArg::Exact {
            if let Some(q) = self.quantities.iter().find(|q| q.needs_logarithms()) {
                return Err(format!(
                    "{} needs logarithms, which exact rationals do not have; \
                     use --backend accurate, log or f64 for it (on --backend exact: log_z, \
                     marginals, label_marginals, expected_attachment, ge, covariance \
                     and their gradients)",
                    q.name()
                ));
            }
        }
        let algorithms = self.algorithms()?;
        if algorithms.log_z == LogZBy::Minors && self.rooting == RootingArg::Multi {
            return Err(
                "log_z=minors is a single-root algorithm (Z = Σ_r ρ_r det L⁰ without row \
                 and column r); use it with --rooting single, or log_z=lu for multi-root trees"
                    .into(),
            );
        }
        for (i, a) in self.quantities.iter().enumerate() {
            for b in &self.quantities[i + 1..] {
                if a.name() == b.name() && a != b {
                    let (x, y) = (a.order().unwrap_or(0.0), b.order().unwrap_or(0.0));
                    return Err(format!(
                        "{} is asked with two orders ({x} and {y}); it has one output field, so give one order per run",
                        a.name()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The algorithm of `log_z`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LogZBy {
    /// One factorisation of the Laplacian (LU, or the backend's
    /// elimination): `O(n³)`.
    #[default]
    Lu,
    /// Single-root `Z = Σ_r ρ_r det L⁰_(r)`, `n` minors (Koo et al. 2007):
    /// `O(n⁴)` ([`spantree_core::baseline::partition_by_minors`]).
    Minors,
}

/// The algorithm of `marginals`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MarginalsBy {
    /// From `X = L⁻¹` (Koo et al. 2007): `O(n³)`.
    #[default]
    Inverse,
    /// `Z` with every competing arc zeroed, per arc (McDonald & Satta 2007):
    /// `O(n⁵)` ([`spantree_core::baseline::marginals_by_zeroing`]).
    McDonaldSatta,
}

/// The algorithm of `entropy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EntropyBy {
    /// `ln Z − Σ_e μ_e ln w_e` from the marginals: `O(n³)`.
    #[default]
    Expectation,
    /// `n` column-replaced determinants (Smith & Eisner 2007): `O(n⁴)`
    /// ([`spantree_core::baseline::entropy_by_columns`]).
    SmithEisner,
}

/// The algorithm of `grad_ge`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GradGeBy {
    /// One reverse-mode pass through the marginals: `O(n³)`.
    #[default]
    ReverseMode,
    /// Through the covariance of arc indicators with the features (Druck &
    /// Smith 2009): `O(n⁴)` ([`spantree_core::baseline::grad_ge_by_covariance`]).
    Covariance,
}

/// One `--algorithm QUANTITY=NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlgorithmChoice {
    /// `log_z=…`.
    LogZ(LogZBy),
    /// `marginals=…`.
    Marginals(MarginalsBy),
    /// `entropy=…`.
    Entropy(EntropyBy),
    /// `grad_ge=…`.
    GradGe(GradGeBy),
    /// `covariance=…`.
    Covariance(SecondOrder),
}

impl AlgorithmChoice {
    /// The quantity it is the algorithm of.
    pub fn quantity(self) -> &'static str {
        match self {
            AlgorithmChoice::LogZ(_) => "log_z",
            AlgorithmChoice::Marginals(_) => "marginals",
            AlgorithmChoice::Entropy(_) => "entropy",
            AlgorithmChoice::GradGe(_) => "grad_ge",
            AlgorithmChoice::Covariance(_) => "covariance",
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        ALGORITHMS
            .iter()
            .find(|a| a.choice == self)
            .map_or("?", |a| a.name)
    }
}

/// A row of [`ALGORITHMS`].
#[derive(Clone, Copy, Debug)]
pub struct AlgorithmName {
    /// The quantity's command-line name.
    pub quantity: &'static str,
    /// The algorithm's command-line name.
    pub name: &'static str,
    /// What it stands for.
    pub choice: AlgorithmChoice,
    /// Whether it is the default for its quantity.
    pub default: bool,
}

const fn algorithm(
    quantity: &'static str,
    name: &'static str,
    choice: AlgorithmChoice,
    default: bool,
) -> AlgorithmName {
    AlgorithmName {
        quantity,
        name,
        choice,
        default,
    }
}

/// Every `--algorithm QUANTITY=NAME`, defaults first within a quantity.
pub const ALGORITHMS: &[AlgorithmName] = &[
    algorithm("log_z", "lu", AlgorithmChoice::LogZ(LogZBy::Lu), true),
    algorithm(
        "log_z",
        "minors",
        AlgorithmChoice::LogZ(LogZBy::Minors),
        false,
    ),
    algorithm(
        "marginals",
        "inverse",
        AlgorithmChoice::Marginals(MarginalsBy::Inverse),
        true,
    ),
    algorithm(
        "marginals",
        "mcdonald-satta",
        AlgorithmChoice::Marginals(MarginalsBy::McDonaldSatta),
        false,
    ),
    algorithm(
        "entropy",
        "expectation",
        AlgorithmChoice::Entropy(EntropyBy::Expectation),
        true,
    ),
    algorithm(
        "entropy",
        "smith-eisner",
        AlgorithmChoice::Entropy(EntropyBy::SmithEisner),
        false,
    ),
    algorithm(
        "grad_ge",
        "reverse-mode",
        AlgorithmChoice::GradGe(GradGeBy::ReverseMode),
        true,
    ),
    algorithm(
        "grad_ge",
        "covariance",
        AlgorithmChoice::GradGe(GradGeBy::Covariance),
        false,
    ),
    algorithm(
        "covariance",
        "auto",
        AlgorithmChoice::Covariance(SecondOrder::Auto),
        true,
    ),
    algorithm(
        "covariance",
        "jacobian-vector",
        AlgorithmChoice::Covariance(SecondOrder::JacobianVector),
        false,
    ),
    algorithm(
        "covariance",
        "hessian",
        AlgorithmChoice::Covariance(SecondOrder::Hessian),
        false,
    ),
];

/// The choices for messages: `log_z=lu|minors, marginals=…`, defaults first.
pub fn known_algorithms() -> String {
    let mut out: Vec<String> = Vec::new();
    for a in ALGORITHMS {
        match out.last_mut() {
            Some(last) if last.starts_with(&format!("{}=", a.quantity)) => {
                last.push('|');
                last.push_str(a.name);
            }
            _ => out.push(format!("{}={}", a.quantity, a.name)),
        }
    }
    out.join(", ")
}

/// Parses one `--algorithm QUANTITY=NAME`.
///
/// # Errors
/// A message for clap (exit status 2): no `=`, a quantity without a choice
/// of algorithm, or an unknown name; each lists the valid choices.
pub fn parse_algorithm(text: &str) -> Result<AlgorithmChoice, String> {
    let Some((quantity, name)) = text.trim().split_once('=') else {
        return Err(format!(
            "expected QUANTITY=NAME (e.g. entropy=smith-eisner), got {text:?}; choices: {}",
            known_algorithms()
        ));
    };
    let (quantity, name) = (quantity.trim(), name.trim());
    let mut of_quantity = ALGORITHMS
        .iter()
        .filter(|a| a.quantity == quantity)
        .peekable();
    if of_quantity.peek().is_none() {
        return Err(format!(
            "{quantity:?} has no choice of algorithm; choices: {}",
            known_algorithms()
        ));
    }
    let names: Vec<&AlgorithmName> = of_quantity.collect();
    names
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.choice)
        .ok_or_else(|| {
            let known: Vec<String> = names
                .iter()
                .map(|a| {
                    if a.default {
                        format!("{} (default)", a.name)
                    } else {
                        a.name.to_owned()
                    }
                })
                .collect();
            format!(
                "unknown algorithm {name:?} for {quantity}; known: {}",
                known.join(", ")
            )
        })
}

/// The algorithm of every quantity that has a choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Algorithms {
    /// `log_z`.
    pub log_z: LogZBy,
    /// `marginals`.
    pub marginals: MarginalsBy,
    /// `entropy`.
    pub entropy: EntropyBy,
    /// `grad_ge`.
    pub grad_ge: GradGeBy,
    /// `covariance`.
    pub covariance: SecondOrder,
}

impl Algorithms {
    /// The defaults with `choices` applied in order.
    ///
    /// # Errors
    /// A message when one quantity is given two different algorithms.
    pub fn from_choices(choices: &[AlgorithmChoice]) -> Result<Self, String> {
        let mut out = Algorithms::default();
        for (i, a) in choices.iter().enumerate() {
            if let Some(b) = choices[..i]
                .iter()
                .find(|b| b.quantity() == a.quantity() && *b != a)
            {
                return Err(format!(
                    "--algorithm gives {} two algorithms ({} and {}); give one",
                    a.quantity(),
                    b.name(),
                    a.name()
                ));
            }
            match *a {
                AlgorithmChoice::LogZ(x) => out.log_z = x,
                AlgorithmChoice::Marginals(x) => out.marginals = x,
                AlgorithmChoice::Entropy(x) => out.entropy = x,
                AlgorithmChoice::GradGe(x) => out.grad_ge = x,
                AlgorithmChoice::Covariance(x) => out.covariance = x,
            }
        }
        Ok(out)
    }
}

impl InferArgs {
    /// The algorithms of `--algorithm`, defaults elsewhere.
    ///
    /// # Errors
    /// As [`Algorithms::from_choices`].
    pub fn algorithms(&self) -> Result<Algorithms, String> {
        Algorithms::from_choices(&self.algorithms)
    }
}

/// The long help of `infer`: formats, exit statuses and conversions.
const INFER_HELP: &str = "\
INPUT: one JSON object per line, with an optional \"id\" (string or number)
and exactly one of
  \"scores\":  an (n+1)x(n+1) matrix of log-potentials; scores[h][m] is the arc
             h -> m, index 0 is the root, words are 1..=n; null forbids an arc;
  \"weights\": the same layout with non-negative weights; 0 or null forbids.
Column 0 and the diagonal are not arcs: they must be null or 0. Labeled graphs
give an array with one value per label in every cell (null inside forbids that
label). Other fields are ignored. Blank lines are skipped (they still count for
line numbers).

OUTPUT: one JSON line per non-blank input line, in input order:
  {\"id\":…,\"n\":…,\"rooting\":…,\"backend\":…,\"log_z\":…,\"marginals\":[[…]]}
\"id\" is null when the input has none. marginals use the input layout with 0
on non-arcs; label_marginals are [h][m][label]. A line that cannot be read,
is invalid, has no spanning tree, lacks a field a quantity needs, or fails
numerically becomes
  {\"id\":…,\"line\":k,\"error\":{\"kind\":\"…\",\"message\":\"…\"}}
(k 1-based) and processing goes on. NaN or infinite results are never printed:
they are errors of kind \"numerical\".

QUANTITIES: each output field has the quantity's name; entropies are in nats.
  entropy, renyi:ALPHA (ALPHA >= 0), lp_norm:K (K > 0; (sum_d p(d)^K)^(1/K)):
      numbers. One order per run.
  cross_entropy, kl: H(p, q) and KL(p || q), with q in the same line as
      \"scores_q\" or \"weights_q\" (layout and null conventions of \"scores\"
      and \"weights\"; either form, whatever the form of p). +infinity (p uses
      an arc that q forbids) prints as null plus \"kl_infinite_arc\": [h, m]
      (\"cross_entropy_infinite_arc\"; [h, m, label] on labeled graphs).
  expected_attachment: (1/n) sum_m P(heads[m] -> m), with the reference tree
      in the line as \"heads\": [h1, …, hn] (0 is the root); with
      \"labels\": [l1, …, ln] (0-based label indices) the labeled score.
  ge: the generalised-expectation objective ||E[f] - t||^2, with sparse arc
      features \"features\": [[h, m, [v1, …, vF]], …] (arcs not listed are 0;
      [h, m, label, [v1, …, vF]] for one label of a labeled graph) and
      \"targets\": [t1, …, tF].
  covariance: Cov[f, g] = E[f gᵀ] - E[f] E[g]ᵀ, an R x S matrix (rows of
      f, columns of g), with f the line's \"features\" and g its
      \"features_s\" (same sparse format), or f itself when the line has no
      \"features_s\". R and S are the lengths of the entries' value arrays
      (all equal within one field; \"targets\" is not read; an empty list
      has dimension 0).
  grad_entropy, grad_cross_entropy, grad_kl, grad_expected_attachment,
  grad_ge: the gradient with respect to the scores θ = ln w of p (also for
      weight input), in the (n+1)x(n+1) layout of marginals, [h][m][label] for
      labeled graphs; grad_cross_entropy and grad_kl add the gradient with
      respect to q's scores as grad_cross_entropy_q and grad_kl_q. On a line
      where the divergence is +infinity they are an error record of kind
      \"infinite_divergence\" naming the arc.
ALGORITHMS (--algorithm QUANTITY=NAME, repeatable; default first):
  log_z=lu|minors              one factorisation, O(n^3) | single-root Z by
                               n minors (Koo et al. 2007), O(n^4); minors
                               with --rooting multi is a usage error
  marginals=inverse|mcdonald-satta
                               from L^-1, O(n^3) | Z per arc with the
                               competing arcs zeroed (McDonald & Satta
                               2007), O(n^5); label_marginals keep the fast
                               route
  entropy=expectation|smith-eisner
                               from the marginals, O(n^3) | n column-replaced
                               determinants (Smith & Eisner 2007), O(n^4)
  grad_ge=reverse-mode|covariance
                               reverse mode, O(n^3) | through arc-pair
                               covariances (Druck & Smith 2009), O(n^4)
  covariance=auto|jacobian-vector|hessian
                               the cheaper by operation count | R reverse
                               passes, O(R n^3 + R S' n^2) | arc-pair
                               marginals from L^-1 for every pair of feature
                               entries, O(n^4), no n^2 x n^2 matrix stored
The slow ones are baselines for timing and accuracy studies; all agree with
the defaults up to rounding (exactly on --backend exact). An algorithm for a
quantity that is not requested has no effect.

Fields a quantity needs but the line lacks are errors of kind
\"missing_field\"; fields no requested quantity reads are ignored. The exact
backend computes log_z, marginals, expected_attachment, ge and their
gradients and covariance exactly; the entropy-type quantities need logarithms and are a
usage error there.

EXACT BACKEND: a weight may also be a string, read exactly: a rational
\"3/7\", an integer \"12\" or a decimal \"0.1\" or \"1e-30\". JSON numbers are
read as f64 and each f64 converts exactly to a rational (so the number 0.1
means 3602879701896397/36028797018963968; write \"1/10\" or \"0.1\" for one
tenth). Scores become weights through f64 exp, then convert exactly.
Output adds \"z\", the exact partition function as a rational string
(\"p/q\", or \"p\" when the denominator is 1); marginals, expected_attachment,
ge, covariance and the gradients are the exact values rounded to the nearest f64, or
rational strings with --exact-output. Feature values and targets may be
rational strings too.

EXIT STATUS: 0 when every line succeeded, 1 when some line became an error
record (stderr says how many), 2 for usage errors (an unknown
quantity, a bad or repeated order, an entropy-type quantity on the exact
backend, an unknown --algorithm or log_z=minors with --rooting multi, …) and unreadable input or unwritable output.";
