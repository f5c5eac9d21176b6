//! The `infer` loop: read a chunk of lines, parse and compute them in
//! parallel, write the results in input order, repeat. Line and output
//! buffers are kept from chunk to chunk.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use rayon::ThreadPool;

use crate::args::{BackendArg, InferArgs};
use crate::engine::Backend;
use crate::record::{process_line, Outcome, Settings};

/// At most this many lines per chunk…
const CHUNK_LINES: usize = 2048;
/// …and about this many bytes, so that memory stays bounded for long sentences.
const CHUNK_BYTES: usize = 8 << 20;

/// Counts of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Lines read, blank ones included.
    pub lines: usize,
    /// Lines that became error records.
    pub failed: usize,
}

/// A failure that stops the whole run (as opposed to one bad line).
#[derive(Debug)]
pub enum RunError {
    /// The input could not be opened or read.
    Input(String, io::Error),
    /// The output could not be created or written.
    Output(String, io::Error),
    /// The thread pool could not be built.
    Threads(String),
    /// The options contradict each other ([`InferArgs::check`] reports
    /// these before running; this is for callers that skip it).
    Usage(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Input(what, e) => write!(f, "cannot read {what}: {e}"),
            RunError::Output(what, e) => write!(f, "cannot write {what}: {e}"),
            RunError::Threads(e) => write!(f, "cannot start the worker threads: {e}"),
            RunError::Usage(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Runs `spantree infer` with parsed arguments.
///
/// # Errors
/// [`RunError`] when the input, the output or the threads fail; bad lines are
/// not errors here but error records, counted in the [`Summary`].
pub fn run(args: &InferArgs) -> Result<Summary, RunError> {
    let settings = Settings::new(
        args.rooting.into(),
        args.backend.name(),
        &args.quantities,
        args.exact_output,
    )
    .with_algorithms(args.algorithms().map_err(RunError::Usage)?);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.map_or(0, usize::from))
        .build()
        .map_err(|e| RunError::Threads(e.to_string()))?;

    let (input, input_name, progress): (Box<dyn Read>, String, ProgressBar) =
        match args.input.as_deref() {
            None => (
                Box::new(io::stdin().lock()),
                "standard input".into(),
                ProgressBar::hidden(),
            ),
            Some(p) if p == Path::new("-") => (
                Box::new(io::stdin().lock()),
                "standard input".into(),
                ProgressBar::hidden(),
            ),
            Some(p) => {
                let name = p.display().to_string();
                let file = File::open(p).map_err(|e| RunError::Input(name.clone(), e))?;
                let progress = if io::stderr().is_terminal() {
                    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                    progress_bar(len)
                } else {
                    ProgressBar::hidden()
                };
                (Box::new(file), name, progress)
            }
        };
    let mut input = BufReader::with_capacity(1 << 16, input);

    let (output, output_name): (Box<dyn Write>, String) = match &args.output {
        None => (Box::new(io::stdout().lock()), "standard output".into()),
        Some(p) => {
            let name = p.display().to_string();
            let file = File::create(p).map_err(|e| RunError::Output(name.clone(), e))?;
            (Box::new(file), name)
        }
    };
    let mut output = BufWriter::with_capacity(1 << 16, output);

    let io = Io {
        input: &mut input,
        input_name: &input_name,
        output: &mut output,
        output_name: &output_name,
        progress: &progress,
    };
    let summary = match args.backend {
        BackendArg::Accurate => stream(&spantree_faer::Accurate, &settings, &pool, io),
        BackendArg::F64 => stream(&spantree_faer::F64, &settings, &pool, io),
        BackendArg::Log => stream(&spantree_faer::ShiftedF64, &settings, &pool, io),
        BackendArg::Exact => stream(&spantree_exact::Exact, &settings, &pool, io),
    };
    progress.finish_and_clear();
    summary
}

fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)")
    {
        bar.set_style(style);
    }
    bar
}

/// The streams of one run, with names for messages.
pub struct Io<'a> {
    /// Where the JSON lines come from.
    pub input: &'a mut dyn BufRead,
    /// Its name for messages.
    pub input_name: &'a str,
    /// Where the results go.
    pub output: &'a mut dyn Write,
    /// Its name for messages.
    pub output_name: &'a str,
    /// Advanced by the bytes read (hidden unless stderr is a terminal and the input a file).
    pub progress: &'a ProgressBar,
}

/// Reusable buffers of one chunk of lines.
#[derive(Default)]
struct Chunk {
    lines: Vec<Vec<u8>>,
    outputs: Vec<Vec<u8>>,
    outcomes: Vec<Outcome>,
    len: usize,
}

impl Chunk {
    /// Reads up to [`CHUNK_LINES`] lines or about [`CHUNK_BYTES`]; returns the bytes read.
    fn fill(&mut self, input: &mut dyn BufRead) -> io::Result<usize> {
        self.len = 0;
        let mut bytes = 0;
        while self.len < CHUNK_LINES && bytes < CHUNK_BYTES {
            if self.len == self.lines.len() {
                self.lines.push(Vec::new());
                self.outputs.push(Vec::new());
                self.outcomes.push(Outcome::Blank);
            }
            let line = &mut self.lines[self.len];
            line.clear();
            let read = input.read_until(b'\n', line)?;
            if read == 0 {
                break;
            }
            bytes += read;
            self.len += 1;
        }
        Ok(bytes)
    }
}

/// Streams every line of `io.input` through `engine`, in parallel on `pool`,
/// writing one output line per non-blank input line, in input order. The
/// output does not depend on the number of threads.
///
/// # Errors
/// [`RunError`] when reading or writing fails.
pub fn stream<E: Backend>(
    engine: &E,
    settings: &Settings,
    pool: &ThreadPool,
    io: Io<'_>,
) -> Result<Summary, RunError> {
    let mut chunk = Chunk::default();
    let mut summary = Summary::default();
    let write_err = |e| RunError::Output(io.output_name.to_owned(), e);
    loop {
        let bytes = chunk
            .fill(io.input)
            .map_err(|e| RunError::Input(io.input_name.to_owned(), e))?;
        if chunk.len == 0 {
            break;
        }
        let first = summary.lines;
        let Chunk {
            lines,
            outputs,
            outcomes,
            len,
        } = &mut chunk;
        pool.install(|| {
            lines[..*len]
                .par_iter()
                .zip(outputs[..*len].par_iter_mut())
                .zip(outcomes[..*len].par_iter_mut())
                .enumerate()
                .for_each(|(i, ((line, out), outcome))| {
                    *outcome = process_line(engine, settings, first + i + 1, line, out);
                });
        });
        for (out, outcome) in outputs[..*len].iter().zip(&outcomes[..*len]) {
            match outcome {
                Outcome::Blank => continue,
                Outcome::Done => {}
                Outcome::Failed => summary.failed += 1,
            }
            io.output.write_all(out).map_err(write_err)?;
            io.output.write_all(b"\n").map_err(write_err)?;
        }
        summary.lines += *len;
        io.progress.inc(bytes as u64);
    }
    io.output.flush().map_err(write_err)?;
    Ok(summary)
}
