//! Batch execution: read a chunk of records, parse and compute them in
//! parallel with rayon, write the results in input order, repeat. Line and
//! output buffers are kept from chunk to chunk, so memory stays bounded for
//! any input length. The output does not depend on the number of threads.

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use rayon::ThreadPool;

use crate::backend::{Backend, WithBackend};
use crate::input::read_line_limited;
use crate::record::{process_line, too_long, Outcome, Request};

/// At most this many records per chunk…
pub const CHUNK_LINES: usize = 2048;
/// …and about this many bytes, so that memory stays bounded for long sentences.
pub const CHUNK_BYTES: usize = 8 << 20;

/// Line and output buffers up to this capacity are kept for the next
/// chunk; larger ones (a long sentence) are freed, so that the memory kept
/// between chunks stays below `2 × CHUNK_LINES × KEEP_BYTES` whatever lines
/// came before.
pub const KEEP_BYTES: usize = 16 << 10;

/// Counts of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Lines read, blank ones included.
    pub lines: usize,
    /// Lines that became error records.
    pub failed: usize,
    /// Output lines written (result and error records).
    pub written: usize,
    /// Whether the run stopped early on request ([`run_until`]): the output
    /// then holds the records of the first `lines` input lines, complete.
    pub interrupted: bool,
}

impl Summary {
    /// Input lines that became result records.
    pub fn succeeded(&self) -> usize {
        self.written - self.failed
    }
}

/// The progress of a run, reported after every chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tick {
    /// Bytes read by the last chunk.
    pub bytes: u64,
    /// The counts so far.
    pub summary: Summary,
}

/// A failure that stops the whole run (as opposed to one bad record, which
/// becomes an error record).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The input could not be read (its name, the cause).
    #[error("cannot read {0}: {1}")]
    Input(String, #[source] io::Error),
    /// The output could not be written (its name, the cause).
    #[error("cannot write {0}: {1}")]
    Output(String, #[source] io::Error),
    /// The thread pool could not be built.
    #[error("cannot start the worker threads: {0}")]
    Threads(String),
}

/// A rayon pool of `threads` workers (`None`: one per core).
///
/// # Errors
/// [`BatchError::Threads`] when the threads cannot be started.
pub fn thread_pool(threads: Option<usize>) -> Result<ThreadPool, BatchError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| BatchError::Threads(e.to_string()))
}

/// The streams of one run, with names for messages.
pub struct Streams<'a> {
    /// Where the JSON lines come from.
    pub input: &'a mut dyn BufRead,
    /// Its name for messages.
    pub input_name: &'a str,
    /// Where the results go.
    pub output: &'a mut dyn Write,
    /// Its name for messages.
    pub output_name: &'a str,
}

/// Reusable buffers of one chunk of records.
#[derive(Default)]
struct Chunk {
    lines: Vec<Vec<u8>>,
    outputs: Vec<Vec<u8>>,
    outcomes: Vec<Outcome>,
    /// Whether the record was processed (not skipped after a stop request).
    done: Vec<bool>,
    /// Whether the line was longer than the limit (and dropped unread).
    oversize: Vec<bool>,
    len: usize,
}

impl Chunk {
    /// Reads up to [`CHUNK_LINES`] lines or about [`CHUNK_BYTES`], keeping
    /// lines of at most `max_line` bytes; returns the bytes read.
    fn fill(&mut self, input: &mut dyn BufRead, max_line: usize) -> io::Result<usize> {
        self.len = 0;
        let mut bytes = 0;
        while self.len < CHUNK_LINES && bytes < CHUNK_BYTES {
            if self.len == self.lines.len() {
                self.lines.push(Vec::new());
                self.outputs.push(Vec::new());
                self.outcomes.push(Outcome::Blank);
                self.done.push(false);
                self.oversize.push(false);
            }
            for buffer in [&mut self.lines[self.len], &mut self.outputs[self.len]] {
                if buffer.capacity() > KEEP_BYTES {
                    *buffer = Vec::new();
                }
            }
            let (read, oversize) = read_line_limited(input, &mut self.lines[self.len], max_line)?;
            if read == 0 {
                break;
            }
            self.oversize[self.len] = oversize;
            bytes += read;
            self.len += 1;
        }
        Ok(bytes)
    }
}

/// Streams every line of `io.input` through the request's backend, in
/// parallel on `pool`, writing one output line per non-blank input line, in
/// input order; `progress` is told the bytes read after each chunk.
///
/// # Errors
/// [`BatchError`] when reading or writing fails; bad records are not errors
/// here but error records, counted in the [`Summary`].
pub fn run(
    request: &Request,
    pool: &ThreadPool,
    io: Streams<'_>,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, BatchError> {
    let never = AtomicBool::new(false);
    run_until(request, pool, io, &mut |t: Tick| progress(t.bytes), &never)
}

/// [`run`], reporting the counts after every chunk, and stopping early once
/// `stop` is set (by a Ctrl-C handler, say): records already computed are
/// written in order up to the first one that was not, the output is
/// flushed, and the summary says `interrupted`.
///
/// # Errors
/// As [`run`].
pub fn run_until(
    request: &Request,
    pool: &ThreadPool,
    io: Streams<'_>,
    progress: &mut dyn FnMut(Tick),
    stop: &AtomicBool,
) -> Result<Summary, BatchError> {
    struct Task<'a, 'b> {
        request: &'a Request,
        pool: &'a ThreadPool,
        io: Streams<'b>,
        progress: &'a mut dyn FnMut(Tick),
        stop: &'a AtomicBool,
    }
    impl WithBackend for Task<'_, '_> {
        type Output = Result<Summary, BatchError>;
        fn run<B: Backend>(self, backend: &B) -> Self::Output {
            stream_until(
                backend,
                self.request,
                self.pool,
                self.io,
                self.progress,
                self.stop,
            )
        }
    }
    request.backend.dispatch(Task {
        request,
        pool,
        io,
        progress,
        stop,
    })
}

/// [`run`] on a backend given as a type (`backend` must be the one of
/// `request.backend`).
///
/// # Errors
/// As [`run`].
pub fn stream<B: Backend>(
    backend: &B,
    request: &Request,
    pool: &ThreadPool,
    io: Streams<'_>,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, BatchError> {
    let never = AtomicBool::new(false);
    let progress = &mut |t: Tick| progress(t.bytes);
    stream_until(backend, request, pool, io, progress, &never)
}

/// [`run_until`] on a backend given as a type.
///
/// # Errors
/// As [`run`].
pub fn stream_until<B: Backend>(
    backend: &B,
    request: &Request,
    pool: &ThreadPool,
    io: Streams<'_>,
    progress: &mut dyn FnMut(Tick),
    stop: &AtomicBool,
) -> Result<Summary, BatchError> {
    let mut chunk = Chunk::default();
    let mut summary = Summary::default();
    let write_err = |e| BatchError::Output(io.output_name.to_owned(), e);
    loop {
        let bytes = chunk
            .fill(io.input, request.limits.max_line_bytes)
            .map_err(|e| BatchError::Input(io.input_name.to_owned(), e))?;
        if chunk.len == 0 || stop.load(Ordering::Relaxed) {
            summary.interrupted = stop.load(Ordering::Relaxed);
            break;
        }
        let first = summary.lines;
        let Chunk {
            lines,
            outputs,
            outcomes,
            done,
            oversize,
            len,
        } = &mut chunk;
        // The longest lines (the longest sentences) first, as
        // `compute_ragged` runs its sentences; each writes its own slot.
        let jobs: Vec<_> = lines[..*len]
            .iter()
            .zip(&mut outputs[..*len])
            .zip(&mut outcomes[..*len])
            .zip(&mut done[..*len])
            .zip(&oversize[..*len])
            .collect();
        let bytes_of: Vec<usize> = lines[..*len].iter().map(Vec::len).collect();
        pool.install(|| {
            by_length(jobs, &bytes_of).into_par_iter().for_each(
                |(i, ((((line, out), outcome), done), &oversize))| {
                    *done = !stop.load(Ordering::Relaxed);
                    if *done && oversize {
                        *outcome = too_long(request, first + i + 1, out);
                    } else if *done {
                        *outcome = process_line(backend, request, first + i + 1, line, out);
                    }
                },
            );
        });
        for ((out, outcome), &done) in outputs[..*len]
            .iter()
            .zip(&outcomes[..*len])
            .zip(&done[..*len])
        {
            if !done {
                summary.interrupted = true;
                break;
            }
            summary.lines += 1;
            match outcome {
                Outcome::Blank => continue,
                Outcome::Done => {}
                Outcome::Failed => summary.failed += 1,
            }
            io.output.write_all(out).map_err(write_err)?;
            io.output.write_all(b"\n").map_err(write_err)?;
            summary.written += 1;
        }
        progress(Tick {
            bytes: bytes as u64,
            summary,
        });
        if summary.interrupted {
            break;
        }
    }
    io.output.flush().map_err(write_err)?;
    Ok(summary)
}

/// A ragged batch of sentences in one flat buffer: sentence `k` has
/// `lengths[k]` words and `(n_k+1)²` scores, row-major `[h][m]` (the
/// library's layout: row `0` the root; column `0` and the diagonal are
/// ignored), stored one sentence after the other in `scores`.
#[derive(Clone, Copy, Debug)]
pub struct Ragged<'a> {
    /// The number of words of each sentence.
    pub lengths: &'a [usize],
    /// The scores of every sentence, concatenated.
    pub scores: &'a [f64],
}

impl Ragged<'_> {
    /// Where sentence `k`'s cells start in `scores`: `lengths.len() + 1`
    /// offsets, the last one the total. `O(batch)`.
    pub fn offsets(&self) -> Vec<usize> {
        let mut offsets = Vec::with_capacity(self.lengths.len() + 1);
        let mut at = 0;
        offsets.push(at);
        for &n in self.lengths {
            at += (n + 1) * (n + 1);
            offsets.push(at);
        }
        offsets
    }
}

/// Caller-provided outputs of [`compute_ragged`]: `None` skips a quantity.
/// Per-sentence numbers have one slot per sentence; per-arc ones use the
/// cells of [`Ragged::scores`] (same length, same offsets). A sentence that
/// fails gets NaN in every slot it owns.
#[derive(Debug, Default)]
pub struct RaggedOutputs<'a> {
    /// `ln Z` per sentence.
    pub log_z: Option<&'a mut [f64]>,
    /// The entropy `H(p)` per sentence (nats).
    pub entropy: Option<&'a mut [f64]>,
    /// The arc marginals, per cell.
    pub marginals: Option<&'a mut [f64]>,
    /// `∇_θ H(p)`, per cell.
    pub grad_entropy: Option<&'a mut [f64]>,
}

/// Why [`compute_ragged`] refused a whole batch (per-sentence failures are
/// returned per sentence instead).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RaggedError {
    /// `scores` does not hold `Σ_k (n_k+1)²` cells.
    #[error("the scores hold {found} cells, the lengths need {expected}")]
    Scores {
        /// Cells given.
        found: usize,
        /// `Σ_k (n_k+1)²`.
        expected: usize,
    },
    /// An output buffer has the wrong length.
    #[error("output `{output}` holds {found} values, {expected} needed")]
    Output {
        /// Which output.
        output: &'static str,
        /// Its length.
        found: usize,
        /// The length needed.
        expected: usize,
    },
}

/// One sentence's share of the outputs.
#[derive(Default)]
struct SentenceOut<'a> {
    log_z: Option<&'a mut f64>,
    entropy: Option<&'a mut f64>,
    marginals: Option<&'a mut [f64]>,
    grad_entropy: Option<&'a mut [f64]>,
}

/// Splits a per-cell output by the batch's offsets.
fn split_cells<'a>(out: &'a mut [f64], offsets: &[usize]) -> Vec<&'a mut [f64]> {
    let mut rest = out;
    offsets
        .windows(2)
        .map(|w| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
            rest = tail;
            head
        })
        .collect()
}

/// `ln Z`, entropy, marginals and the entropy gradient of every sentence of
/// a ragged batch in one call, in parallel over sentences on the current
/// rayon pool (wrap the call in [`thread_pool`]`(..).install(..)` to choose
/// the threads), written into the caller's buffers. Scores are
/// validated like [`Graph::from_scores`](spantree_core::Graph::from_scores).
/// Each sentence builds one [`Model`](spantree_core::Model) (one
/// factorisation, `O(n³)`) and answers every quantity asked from it. The
/// sentences run longest first ([`longest_first`]); the results depend
/// neither on that order nor on the number of threads.
///
/// Returns one entry per sentence: `None` on success, the typed error
/// otherwise (its slots are then NaN).
///
/// # Errors
/// [`RaggedError`] when a buffer's length does not match the lengths.
///
/// ```
/// use spantree_api::batch::{compute_ragged, Ragged, RaggedOutputs};
/// use spantree_core::Rooting;
/// use spantree_faer::Accurate;
/// let ninf = f64::NEG_INFINITY;
/// // Two sentences: one word (Z = e^0.5), and two words.
/// let scores = [
///     ninf, 0.5, ninf, ninf, // n = 1
///     ninf, 0.0, 0.0, ninf, ninf, 0.0, ninf, 0.0, ninf, // n = 2, unit weights
/// ];
/// let mut log_z = [0.0; 2];
/// let outputs = RaggedOutputs { log_z: Some(&mut log_z), ..Default::default() };
/// let failed = compute_ragged(&Accurate, Rooting::Single, Ragged { lengths: &[1, 2], scores: &scores }, outputs)?;
/// assert!(failed.iter().all(Option::is_none));
/// // Single-root trees on two words with unit weights: 0→1→2 and 0→2→1.
/// assert!((log_z[0] - 0.5).abs() < 1e-15 && (log_z[1] - 2f64.ln()).abs() < 1e-15);
/// # Ok::<(), spantree_api::batch::RaggedError>(())
/// ```
pub fn compute_ragged<E: spantree_core::Engine<Scalar = f64>>(
    engine: &E,
    rooting: spantree_core::Rooting,
    batch: Ragged<'_>,
    outputs: RaggedOutputs<'_>,
) -> Result<Vec<Option<spantree_core::Error>>, RaggedError> {
    let offsets = batch.offsets();
    let (k, cells) = (batch.lengths.len(), offsets[batch.lengths.len()]);
    if batch.scores.len() != cells {
        return Err(RaggedError::Scores {
            found: batch.scores.len(),
            expected: cells,
        });
    }
    let check = |output: &'static str, found: usize, expected: usize| {
        if found == expected {
            Ok(())
        } else {
            Err(RaggedError::Output {
                output,
                found,
                expected,
            })
        }
    };
    let RaggedOutputs {
        log_z,
        entropy,
        marginals,
        grad_entropy,
    } = outputs;
    let mut per: Vec<SentenceOut<'_>> = (0..k).map(|_| SentenceOut::default()).collect();
    if let Some(out) = log_z {
        check("log_z", out.len(), k)?;
        per.iter_mut().zip(out).for_each(|(p, x)| p.log_z = Some(x));
    }
    if let Some(out) = entropy {
        check("entropy", out.len(), k)?;
        per.iter_mut()
            .zip(out)
            .for_each(|(p, x)| p.entropy = Some(x));
    }
    if let Some(out) = marginals {
        check("marginals", out.len(), cells)?;
        let parts = split_cells(out, &offsets);
        per.iter_mut()
            .zip(parts)
            .for_each(|(p, x)| p.marginals = Some(x));
    }
    if let Some(out) = grad_entropy {
        check("grad_entropy", out.len(), cells)?;
        let parts = split_cells(out, &offsets);
        per.iter_mut()
            .zip(parts)
            .for_each(|(p, x)| p.grad_entropy = Some(x));
    }
    // Longest first (the results do not depend on the order), each answer
    // back to its sentence's slot.
    let answers = by_length(per, batch.lengths)
        .into_par_iter()
        .map(|(s, mut out)| {
            let n = batch.lengths[s];
            let scores = &batch.scores[offsets[s]..offsets[s + 1]];
            let result = one_sentence(engine, rooting, n, scores, &mut out);
            if result.is_err() {
                out.fill_nan();
            }
            (s, result.err())
        })
        .collect();
    Ok(in_input_order(answers))
}

/// The order in which a batch runs its sentences: the longest first, ties
/// in input order. `O(k log k)` for `k` sentences.
///
/// The results do not depend on it (each sentence is computed alone); the
/// time does. Sentences of one length in a row keep the branch predictors
/// trained on the loops' trip counts and vector tails, and the per-thread
/// spare buffers ([`spantree_core::matrix::Spare`]), sized by the first
/// sentences, fit every later one without growing. Longest first also
/// balances the threads: the last tasks to be scheduled are the shortest.
/// On the 6,025 sentences of the UD test sets (entropy and gradient,
/// `Accurate`, one thread), a loop of models takes 13% less time longest
/// first than in input order, and the bare kernels 18% less
/// (`spantree-report speed --corpus`).
///
/// ```
/// use spantree_api::batch::longest_first;
/// assert_eq!(longest_first(&[3, 7, 1, 7]), vec![1, 3, 0, 2]);
/// ```
pub fn longest_first(lengths: &[usize]) -> Vec<usize> {
    by_length(vec![(); lengths.len()], lengths)
        .into_iter()
        .map(|(i, ())| i)
        .collect()
}

/// `items` paired with their indices, in the order of [`longest_first`]
/// (`lengths[i]` is item `i`'s sentence length): the jobs of a batch, for a
/// sequential or parallel map whose answers [`in_input_order`] puts back.
/// `O(k log k)`.
pub fn by_length<I>(items: Vec<I>, lengths: &[usize]) -> Vec<(usize, I)> {
    let mut jobs: Vec<(usize, I)> = items.into_iter().enumerate().collect();
    jobs.sort_by_key(|&(i, _)| std::cmp::Reverse(lengths.get(i).copied().unwrap_or(0)));
    jobs
}

/// The answers of the jobs of [`by_length`], each `(index, answer)`, in
/// index order. `O(k log k)`.
pub fn in_input_order<T>(mut answers: Vec<(usize, T)>) -> Vec<T> {
    answers.sort_by_key(|&(i, _)| i);
    answers.into_iter().map(|(_, t)| t).collect()
}

impl SentenceOut<'_> {
    fn fill_nan(&mut self) {
        for x in [&mut self.log_z, &mut self.entropy].into_iter().flatten() {
            **x = f64::NAN;
        }
        for m in [&mut self.marginals, &mut self.grad_entropy]
            .into_iter()
            .flatten()
        {
            m.fill(f64::NAN);
        }
    }
}

fn one_sentence<E: spantree_core::Engine<Scalar = f64>>(
    engine: &E,
    rooting: spantree_core::Rooting,
    n: usize,
    scores: &[f64],
    out: &mut SentenceOut<'_>,
) -> spantree_core::Result<()> {
    let rows: Vec<&[f64]> = scores.chunks_exact(n + 1).collect();
    let graph = spantree_core::Graph::from_scores(&rows)?;
    let model = spantree_core::Model::new(engine.clone(), &graph, rooting)?;
    if let Some(x) = out.log_z.as_deref_mut() {
        *x = model.log_partition()?;
    }
    if let Some(x) = out.entropy.as_deref_mut() {
        *x = model.entropy()?;
    }
    if let Some(m) = out.marginals.as_deref_mut() {
        m.copy_from_slice(model.marginals()?.as_slice());
    }
    if let Some(m) = out.grad_entropy.as_deref_mut() {
        m.copy_from_slice(model.grad_entropy()?[0].as_slice());
    }
    Ok(())
}
