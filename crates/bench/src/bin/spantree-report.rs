//! `spantree-report`: regenerates the reproduction report.
//!
//! ```text
//! spantree-report reproduce --treebanks ../shared/ud --out docs/report
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spantree_bench::report::{reproduce, Options};

#[derive(Parser)]
#[command(
    name = "spantree-report",
    version,
    about = "Reproduction reports for spantree"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure everything and write report.md plus SVG plots.
    Reproduce {
        /// Directory of treebanks: one subdirectory of .conllu files each.
        #[arg(long)]
        treebanks: PathBuf,
        /// Output directory (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// At most this many sentences per treebank in the entropy table.
        #[arg(long)]
        max_sentences: Option<usize>,
        /// At most this many sentences per treebank in the GE table.
        #[arg(long, default_value_t = 200)]
        ge_max_sentences: usize,
        /// Sentences per treebank with exact rational GE gradients.
        #[arg(long, default_value_t = 10)]
        exact_sentences: usize,
        /// Timed passes in the entropy table.
        #[arg(long, default_value_t = 5)]
        repetitions: usize,
        /// Timed passes in the GE table.
        #[arg(long, default_value_t = 3)]
        ge_repetitions: usize,
        /// Largest n of the scaling plot.
        #[arg(long, default_value_t = 500)]
        scaling_max_n: usize,
        /// Skip a size when one run is predicted to take longer (seconds).
        #[arg(long, default_value_t = 1.0)]
        scaling_budget: f64,
        /// Sentence lengths of the precision table, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [10, 36, 100])]
        precision_sizes: Vec<usize>,
        /// Graphs per length in the precision table.
        #[arg(long, default_value_t = 3)]
        precision_graphs: usize,
        /// Words of the adjugate study's graphs.
        #[arg(long, default_value_t = 12)]
        adjugate_n: usize,
        /// Base seed.
        #[arg(long, default_value_t = 2021)]
        seed: u64,
        /// No progress bars.
        #[arg(long)]
        quiet: bool,
    },
}

fn main() -> ExitCode {
    let Command::Reproduce {
        treebanks,
        out,
        max_sentences,
        ge_max_sentences,
        exact_sentences,
        repetitions,
        ge_repetitions,
        scaling_max_n,
        scaling_budget,
        precision_sizes,
        precision_graphs,
        adjugate_n,
        seed,
        quiet,
    } = Cli::parse().command;
    let mut opts = Options::new(treebanks, out);
    opts.max_sentences = max_sentences;
    opts.ge_max_sentences = ge_max_sentences;
    opts.exact_sentences = exact_sentences;
    opts.repetitions = repetitions.max(1);
    opts.ge_repetitions = ge_repetitions.max(1);
    opts.scaling_max_n = scaling_max_n;
    opts.scaling_budget = scaling_budget;
    opts.precision_sizes = precision_sizes;
    opts.precision_graphs = precision_graphs.max(1);
    opts.adjugate_n = adjugate_n.max(2);
    opts.seed = seed;
    opts.progress = !quiet;
    match reproduce(&opts) {
        Ok(w) => {
            eprintln!("wrote {} and {} plots", w.report.display(), w.plots.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("spantree-report: {e}");
            ExitCode::FAILURE
        }
    }
}
