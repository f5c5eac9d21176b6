//! The command line. Usage errors (unknown options or quantities, bad
//! numbers) are clap's, with exit status 2.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use spantree_core::Rooting;

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
    #[arg(long, value_enum, default_value_t = BackendArg::Log)]
    pub backend: BackendArg,

    /// Comma-separated quantities to compute. label_marginals is only
    /// produced for labeled input, and is added there automatically when
    /// marginals are requested.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "LIST",
        default_value = "log_z,marginals"
    )]
    pub quantities: Vec<Quantity>,

    /// Worker threads for parsing and computing (default: all cores).
    /// Output is identical for every thread count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,

    /// Write the results to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// With --backend exact: print marginals as exact rational strings
    /// ("p/q", or "p" for integers) instead of the nearest f64.
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
    /// f64 LU on the weights as given (spantree_faer::F64).
    F64,
    /// f64 LU on column-shifted weights: ln Z never overflows (spantree_faer::LogF64).
    Log,
    /// Exact rationals (spantree_exact::Exact); slow beyond a few dozen words.
    Exact,
}

impl BackendArg {
    /// The name used on the command line and in the output's `"backend"` field.
    pub fn name(self) -> &'static str {
        match self {
            BackendArg::F64 => "f64",
            BackendArg::Log => "log",
            BackendArg::Exact => "exact",
        }
    }
}

/// A quantity `infer` can compute; the output field has the same name.
///
/// New quantities (entropy, best tree, samples) become new variants here and
/// new arms in [`crate::record`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Quantity {
    /// ln Z as a number (plus z, an exact rational string, on the exact backend).
    LogZ,
    /// Arc marginals P(h → m in the tree), (n+1)×(n+1), 0 on non-arcs.
    Marginals,
    /// Label marginals P(h → m with label l in the tree), [h][m][l]; labeled input only.
    LabelMarginals,
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
is invalid, has no spanning tree or fails numerically becomes
  {\"id\":…,\"line\":k,\"error\":{\"kind\":\"…\",\"message\":\"…\"}}
(k 1-based) and processing goes on. NaN or infinite results are never printed:
they are errors of kind \"numerical\".

EXACT BACKEND: a weight may also be a string, read exactly: a rational
\"3/7\", an integer \"12\" or a decimal \"0.1\" or \"1e-30\". JSON numbers are
read as f64 and each f64 converts exactly to a rational (so the number 0.1
means 3602879701896397/36028797018963968; write \"1/10\" or \"0.1\" for one
tenth). Scores become weights through f64 exp, then convert exactly.
Output adds \"z\", the exact partition function as a rational string
(\"p/q\", or \"p\" when the denominator is 1); marginals are the exact values
rounded to the nearest f64, or rational strings with --exact-output.

EXIT STATUS: 0 when every line succeeded, 1 when some line became an error
record (stderr says how many), 2 for usage errors and unreadable input or
unwritable output.";
