//! `spantree parse`: parses a CoNLL-U file with a trained model and writes
//! CoNLL-U with the predicted HEAD and DEPREL.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use spantree_parser::{parse_all, write_conllu, Parser, ParserError};

/// Options of `spantree parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// The model file written by `spantree train`.
    #[arg(long, value_name = "MODEL")]
    pub model: PathBuf,
    /// The CoNLL-U input (its HEAD and DEPREL columns are replaced).
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Output file; standard output when absent.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `spantree parse`; returns how many sentences were skipped as malformed.
///
/// # Errors
/// An unreadable model or input, an unwritable output.
pub fn run(args: &ParseArgs) -> Result<usize, ParserError> {
    let parser = Parser::load(&args.model)?;
    let (good, bad) = spantree_conllu::read_file(&args.input)?;
    for e in &bad {
        eprintln!("spantree: {}: {e} (sentence skipped)", args.input.display());
    }
    let parsed = parse_all(&parser, &good);
    let io = |e: std::io::Error| ParserError::Io {
        path: args
            .output
            .as_ref()
            .map_or_else(|| "standard output".to_owned(), |p| p.display().to_string()),
        message: e.to_string(),
    };
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(io)?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    for (s, (heads, labels)) in good.iter().zip(&parsed) {
        write_conllu(&mut out, s, heads, labels).map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok(bad.len())
}
