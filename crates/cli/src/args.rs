//! The command line (clap derive). Names, help and parsing of backends,
//! rootings, quantities and algorithms come from `spantree-api`, written
//! once there. Usage errors (unknown options or quantities, bad numbers,
//! contradictions) exit with status 2.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use spantree_api::algorithm::{known_algorithms, ALGORITHMS};
use spantree_api::backend::{layout_parser, rooting_parser};
use spantree_api::input::Limits;
use spantree_api::quantity::{quantities_summary, REGISTRY};
use spantree_api::{AlgorithmChoice, BackendKind, Quantity, Request, Structure, UsageError};
use spantree_core::{Layout, Rooting};

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
    #[command(after_long_help = infer_help())]
    Infer(InferArgs),
    /// Train a first-order dependency parser on a CoNLL-U treebank.
    Train(crate::train::TrainArgs),
    /// Parse a CoNLL-U file with a trained model (writes CoNLL-U).
    Parse(crate::parse::ParseArgs),
    /// UAS and LAS of a predicted CoNLL-U file against a gold one.
    Evaluate(crate::evaluate::EvaluateArgs),
}

/// Options of `spantree demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The rooting of the marginal table (`log Z` is shown for both).
    #[arg(long, value_parser = rooting_parser(), default_value = "single")]
    pub rooting: Rooting,
}

/// Options of `spantree infer`.
#[derive(Debug, Args)]
pub struct InferArgs {
    /// JSON-lines input file; - or absent reads standard input.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Single-root trees (exactly one word attaches to the root, as in
    /// Universal Dependencies) or multi-root trees.
    #[arg(long, value_parser = rooting_parser(), default_value = "single")]
    pub rooting: Rooting,

    /// Number type and linear algebra (see EXACT BACKEND below for the
    /// conversions of the exact one).
    #[arg(long, value_enum, default_value_t = BackendKind::Accurate)]
    pub backend: BackendKind,

    /// All spanning trees, or projective trees only (Eisner's chart: log_z,
    /// marginals, entropy, grad_entropy, best_tree).
    #[arg(long, value_enum, default_value_t = Structure::Nonprojective)]
    pub structure: Structure,

    /// The seed of samples:K: line k draws from the stream (seed, k), so the
    /// output is the same for every --threads.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,

    /// The quantities (help from the registry).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "LIST",
        value_parser = |s: &str| s.parse::<Quantity>(),
        default_value = "log_z,marginals",
        help = quantities_summary()
    )]
    pub quantities: Vec<Quantity>,

    /// The algorithm choices (help from the algorithm table).
    #[arg(
        long = "algorithm",
        value_name = "QUANTITY=NAME",
        value_delimiter = ',',
        value_parser = |s: &str| s.parse::<AlgorithmChoice>(),
        help = format!(
            "Choose the algorithm of a quantity that has more than one, as QUANTITY=NAME; \
             repeatable (or comma-separated). The default is the fast one; the others are \
             the literature's slower routes, kept as baselines (see ALGORITHMS below): {}",
            known_algorithms()
        )
    )]
    pub algorithms: Vec<AlgorithmChoice>,

    /// The layout of the input matrices (see LAYOUTS below); results are
    /// always in spantree's layout.
    #[arg(long, value_parser = layout_parser(), default_value = "spantree")]
    pub layout: Layout,

    /// Worker threads for parsing and computing (default: all cores).
    /// Output is identical for every thread count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,

    /// Write the results to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The longest input line read, in bytes: a longer line becomes an
    /// error record of kind "line_too_long" (it is skipped without being
    /// held in memory).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::MAX_LINE_BYTES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_line_bytes: usize,

    /// The most words per sentence: a larger matrix becomes an error record
    /// of kind "sentence_too_long".
    #[arg(long, value_name = "N", default_value_t = Limits::MAX_WORDS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_words: usize,

    /// With --backend exact: print marginals, expected_attachment, ge,
    /// covariance and gradients as exact rational strings ("p/q", or "p" for integers)
    /// instead of the nearest f64.
    #[arg(long)]
    pub exact_output: bool,
}

impl InferArgs {
    /// The checked request of these options: what clap cannot check
    /// (`--exact-output` needs the exact backend, the exact backend cannot
    /// take logarithms, one order per parameterised quantity, …).
    ///
    /// # Errors
    /// A [`UsageError`] (exit status 2).
    pub fn request(&self) -> Result<Request, UsageError> {
        Request::new(
            self.backend,
            self.rooting,
            &self.quantities,
            &self.algorithms,
            self.exact_output,
        )?
        .with_layout(self.layout)
        .with_seed(self.seed)
        .with_limits(Limits {
            max_line_bytes: self.max_line_bytes,
            max_words: self.max_words,
        })
        .with_structure(self.structure)
    }
}

/// Appends `text` wrapped to 78 columns: `first` (ending in a space, or
/// empty) before its first line, `indent` spaces before the others.
fn wrap(out: &mut String, first: &str, indent: usize, text: &str) {
    const WIDTH: usize = 78;
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
}

/// The long help of `infer`: formats, the quantities and algorithms (from
/// their tables), exit statuses and conversions.
fn infer_help() -> String {
    let mut help = String::from(INFER_HELP_INPUT);
    help.push_str(
        "QUANTITIES: each output field has the quantity's name; entropies are in nats.\n",
    );
    wrap(
        &mut help,
        "",
        0,
        "Gradients (grad_*) are with respect to the scores θ = ln w of p (also for weight \
         input), in the (n+1)x(n+1) layout of marginals, [h][m][label] for labeled graphs.",
    );
    for q in REGISTRY {
        wrap(&mut help, &format!("  {}: ", q.usage()), 6, q.help);
    }
    help.push_str("ALGORITHMS (--algorithm QUANTITY=NAME, repeatable; default first):\n");
    for a in ALGORITHMS {
        let default = if a.default { " (default)" } else { "" };
        wrap(
            &mut help,
            &format!("  {}={}{default}: ", a.quantity, a.name),
            6,
            a.help,
        );
    }
    help.push_str(INFER_HELP_REST);
    help
}

/// The long help of `infer` before the quantities.
const INFER_HELP_INPUT: &str = "\
INPUT: one JSON object per line (JSON lines, not a JSON array, not
pretty-printed), with an optional \"id\" (string or number) and exactly one of
  \"scores\":  an (n+1)x(n+1) matrix of log-potentials; scores[h][m] is the arc
             h -> m, index 0 is the root, words are 1..=n; null or -Infinity
             forbids an arc;
  \"weights\": the same layout with non-negative weights; 0 or null forbids.
Column 0 and the diagonal are not arcs: whatever they hold is ignored (a
zero-initialised or masked matrix works as it is). Python's json.dumps tokens
-Infinity, Infinity and NaN are read (NaN and +Infinity are errors naming the
arc); a UTF-8 byte-order mark is skipped. Labeled graphs give an array with one
value per label in every arc's cell, [h][m][label] (null inside forbids that
label; a single null or -Infinity forbids them all). Other fields are ignored.
Blank lines are skipped (they still count for line numbers).

LAYOUTS (--layout; the same converters are spantree_core::layout):
  spantree:     (n+1)x(n+1), cell [h][m] is the arc h -> m, row 0 the root;
  torch-struct: n x n over the words, cell [h-1][m-1] is the arc h -> m, the
                root arc 0 -> m on the diagonal [m-1][m-1];
  supar:        (n+1)x(n+1), cell [m][h] is the arc h -> m ([dependent][head]).
Labels are the last index in all three. Output is in spantree's layout.

OUTPUT: one JSON line per non-blank input line, in input order:
  {\"id\":…,\"n\":…,\"rooting\":…,\"backend\":…,\"log_z\":…,\"marginals\":[[…]]}
\"id\" is null when the input has none. marginals use the input layout with 0
on non-arcs; label_marginals are [h][m][label]. A line that cannot be read,
is invalid, has no spanning tree, lacks a field a quantity needs, or fails
numerically becomes
  {\"id\":…,\"line\":k,\"error\":{\"kind\":\"…\",\"message\":\"…\"}}
(k 1-based) and processing goes on. NaN or infinite results are never printed:
they are errors of kind \"numerical\".

";

/// The long help of `infer` after the algorithms.
const INFER_HELP_REST: &str = "\
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

LIMITS: a line longer than --max-line-bytes (default 64 MiB) or a matrix of
more than --max-words words (default 2000) becomes an error record of kind
\"line_too_long\" or \"sentence_too_long\"; the oversize line is never held in
memory whole.

EXIT STATUS: 0 when every line succeeded (also when the reader of the output
closes the pipe early, as `| head -1` does: the run ends quietly), 1 when some
line became an error record (stderr says how many), 2 for usage errors (an
unknown quantity, a bad or repeated order, an entropy-type quantity on the
exact backend, an unknown --algorithm or log_z=minors with --rooting multi, …)
and unreadable input or unwritable output (a full disk), 130 when interrupted
by Ctrl-C.";
