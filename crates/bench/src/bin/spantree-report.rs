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
    /// The per-sentence speed table (ops against their bare kernels, µs,
    /// medians) and, with `--corpus`, the whole-corpus time; markdown on
    /// standard output.
    Speed {
        /// Sentence lengths, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = spantree_bench::speed::SIZES)]
        sizes: Vec<usize>,
        /// Timing groups per cell (the median is reported).
        #[arg(long, default_value_t = 11)]
        groups: usize,
        /// Runs of the whole table, one size after another in each; every
        /// cell is the median of the runs (the corpus: passes of each
        /// variant, `5 × runs` rounds).
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Treebank directory: time entropy + gradient of every sentence
        /// of its test sets on 1 and 2 threads.
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// Base seed.
        #[arg(long, default_value_t = 2021)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    let command = Cli::parse().command;
    if let Command::Speed {
        sizes,
        groups,
        runs,
        corpus,
        seed,
    } = command
    {
        return speed(&sizes, groups, runs.max(1), corpus.as_deref(), seed);
    }
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
    } = command
    else {
        unreachable!("handled above")
    };
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

/// `spantree-report speed`: `groups` timing groups per cell, `runs` runs of
/// the table (`5 × runs` rounds of the corpus).
fn speed(
    sizes: &[usize],
    groups: usize,
    runs: usize,
    corpus: Option<&std::path::Path>,
    seed: u64,
) -> ExitCode {
    use spantree_bench::report::machine;
    use spantree_bench::speed;
    if sizes.contains(&0) {
        eprintln!("spantree-report: --sizes: a sentence has at least one word (got 0)");
        return ExitCode::FAILURE;
    }
    println!(
        "Machine: {}, {} logical CPUs, kernels on {}; {} run(s) of {} timing groups, {}.\n\n\
         Each cell is the median of the runs; each ratio the median, over the groups, of \
         the op and its bare kernel timed in alternating groups of about a millisecond.\n",
        machine::cpu_model(),
        machine::threads(),
        machine::simd(),
        runs,
        groups,
        machine::today()
    );
    let mut by_size: Vec<Vec<speed::Measured>> = vec![Vec::new(); sizes.len()];
    for run in 0..runs {
        for (&n, measured) in sizes.iter().zip(&mut by_size) {
            eprintln!("run {} of {runs}, n = {n}", run + 1);
            measured.push(speed::measure(n, groups, seed + n as u64));
        }
    }
    let rows: Vec<speed::Measured> = by_size
        .iter()
        .filter_map(|r| speed::Measured::median_of(r))
        .collect();
    println!("{}", speed::markdown(&rows));
    for n in [36, 100] {
        for rooting in spantree_core::Rooting::ALL {
            let p = speed::elimination_against_dense(n, -40.0, rooting, groups, seed);
            println!(
                "Root scores −40, {}-root, n = {n}: ln Z + marginals on accurate {} µs, \
                 against {} µs on the dense path (log, unshifted): {:.2}× (paired groups).\n",
                rooting.name(),
                (p.first * 1e6).round(),
                (p.second * 1e6).round(),
                p.ratio
            );
        }
    }
    let Some(dir) = corpus else {
        return ExitCode::SUCCESS;
    };
    let (graphs, banks) = match speed::corpus_graphs(dir, seed) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("spantree-report: {e}");
            return ExitCode::FAILURE;
        }
    };
    let words: usize = graphs.iter().map(spantree_core::Graph::n).sum();
    println!(
        "\nWhole corpus: {} sentences, {} words, {} treebanks; entropy + gradient, accurate, single-root.\n",
        graphs.len(),
        words,
        banks
    );
    let scores: Vec<_> = graphs.iter().map(speed::score_matrix_of).collect();
    // The kernel floor in the order the batch API runs the sentences.
    let lengths: Vec<usize> = graphs.iter().map(spantree_core::Graph::n).collect();
    let by_length: Vec<_> = spantree_api::batch::longest_first(&lengths)
        .into_iter()
        .map(|s| scores[s].clone())
        .collect();
    let batch = std::cell::RefCell::new(speed::CorpusBatch::new(&graphs));
    let rounds = 5 * runs;
    println!(
        "Medians of {rounds} rounds on one kept pool, each round one pass of every column \
         in turn (so that a drift of the machine's speed reaches every column alike), after \
         one untimed pass of each, ms. The batch API (`compute_ragged`) validates the \
         scores, runs the sentences longest first and writes every entropy and gradient into \
         kept buffers; the loop builds one `Model` per sentence in input order. Kernel floor: \
         exp + LU + inverse + 2 solves per sentence, spantree `Lu` (faer's in input order).\n\n\
         | threads | batch API | `Model` loop, input order | kernel floor, longest first | kernel floor, input order | faer kernel |\n\
         |---|---|---|---|---|---|"
    );
    for threads in [1, 2] {
        // One pool per thread count, kept across passes; the first pass of
        // each (threads starting, the allocator's first pages) is not timed.
        let pool = speed::corpus_pool(threads);
        let kernel =
            |s: &[spantree_core::Matrix<f64>], engine| speed::corpus_kernel_pass(s, engine, &pool);
        let columns: [&dyn Fn() -> f64; 5] = [
            &|| batch.borrow_mut().pass(&pool),
            &|| speed::corpus_pass(&graphs, &pool),
            &|| kernel(&by_length, speed::KernelEngine::Spantree),
            &|| kernel(&scores, speed::KernelEngine::Spantree),
            &|| kernel(&scores, speed::KernelEngine::Faer),
        ];
        for column in &columns {
            std::hint::black_box(column());
        }
        let mut times = vec![Vec::with_capacity(rounds); columns.len()];
        for _ in 0..rounds {
            for (column, t) in columns.iter().zip(&mut times) {
                let start = std::time::Instant::now();
                std::hint::black_box(column());
                t.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        let [batched, op, sorted, floor, faer] =
            std::array::from_fn(|c| speed::median(times[c].clone()));
        println!("| {threads} | {batched:.1} | {op:.1} | {sorted:.1} | {floor:.1} | {faer:.1} |");
    }
    println!(
        "\nRoutes of `accurate`, 1 thread, each sentence timed alone (median of 3; \
         `log` = the same sentences on `ShiftedF64`):\n\n{}",
        speed::route_table(&graphs, 3)
    );
    ExitCode::SUCCESS
}
