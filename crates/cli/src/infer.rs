//! `spantree infer`: open the input and output, show a progress bar, and run
//! the batch of `spantree-api` on them.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use spantree_api::batch::{self, BatchError, Streams, Summary};
use spantree_api::Request;

use crate::args::InferArgs;

/// Runs `spantree infer` with parsed arguments and their checked request.
///
/// # Errors
/// [`BatchError`] when the input, the output or the threads fail; bad lines
/// are not errors here but error records, counted in the [`Summary`].
pub fn run(args: &InferArgs, request: &Request) -> Result<Summary, BatchError> {
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
    let summary = batch::run(request, &pool, streams, &mut |bytes| progress.inc(bytes));
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
