//! `spantree infer`: open the input and output, show a progress bar, and run
//! the batch of `spantree-api` on them; Ctrl-C stops between records.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use spantree_api::batch::{self, BatchError, Streams, Summary, Tick};
use spantree_api::Request;

use crate::args::InferArgs;

/// Set by the first Ctrl-C: the batch stops between records.
static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler: the first Ctrl-C asks the run to stop after
/// the records in flight (their output is complete and flushed); a second
/// one exits at once with status 130. Call once, before [`run`].
///
/// # Errors
/// The handler could not be installed (then Ctrl-C kills as usual).
pub fn handle_ctrl_c() -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("\nspantree: interrupted again: stopping now");
            std::process::exit(130);
        }
    })
}

/// Runs `spantree infer` with parsed arguments and their checked request.
/// On Ctrl-C (with [`handle_ctrl_c`]) it returns early with
/// [`Summary::interrupted`] set.
///
/// # Errors
/// [`BatchError`] when the input, the output or the threads fail; bad lines
/// are not errors here but error records, counted in the [`Summary`].
pub fn run(args: &InferArgs, request: &Request) -> Result<Summary, BatchError> {
    let start = Instant::now();
    let pool = batch::thread_pool(args.threads.map(usize::from))?;

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
                let file = File::open(p).map_err(|e| BatchError::Input(name.clone(), e))?;
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
            let file = File::create(p).map_err(|e| BatchError::Output(name.clone(), e))?;
            (Box::new(file), name)
        }
    };
    let mut output = BufWriter::with_capacity(1 << 16, output);

    let streams = Streams {
        input: &mut input,
        input_name: &input_name,
        output: &mut output,
        output_name: &output_name,
    };
    let shown = !progress.is_hidden();
    let summary = batch::run_until(
        request,
        &pool,
        streams,
        &mut |t: Tick| {
            progress.inc(t.bytes);
            progress.set_message(counts(&t.summary));
        },
        &STOP,
    );
    progress.finish_and_clear();
    if let (true, Ok(summary)) = (shown, &summary) {
        eprintln!("spantree: {}", summary_line(summary, start.elapsed()));
    }
    summary
}

/// `"1200 sentences, 3 failed"`: the counts of the progress bar.
pub fn counts(summary: &Summary) -> String {
    let plural = if summary.written == 1 { "" } else { "s" };
    format!(
        "{} sentence{plural}, {} failed",
        summary.written, summary.failed
    )
}

/// The one-line summary after a run shown with a progress bar:
/// `"1200 sentences, 3 failed, in 2.5 s (480 sentences/s)"`.
///
/// ```
/// use std::time::Duration;
/// use spantree_api::Summary;
/// let s = Summary { lines: 5, failed: 1, written: 4, interrupted: false };
/// assert_eq!(
///     spantree_cli::infer::summary_line(&s, Duration::from_secs(2)),
///     "4 sentences, 1 failed, in 2.0 s (2 sentences/s)"
/// );
/// ```
pub fn summary_line(summary: &Summary, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    let rate = if seconds > 0.0 {
        format!(" ({:.0} sentences/s)", summary.written as f64 / seconds)
    } else {
        String::new()
    };
    format!("{}, in {seconds:.1} s{rate}", counts(summary))
}

fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:40} {bytes}/{total_bytes} {msg} ({bytes_per_sec}, {eta} left)",
    ) {
        bar.set_style(style);
    }
    bar
}
