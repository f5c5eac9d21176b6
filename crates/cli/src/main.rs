//! The `spantree` command; see `spantree --help` and `crates/cli/README.md`.

use std::io::{self, ErrorKind};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use spantree_api::BatchError;
use spantree_cli::args::{Cli, Command};
use spantree_cli::demo::{self, DemoError};
use spantree_cli::{evaluate, infer, parse, train};

/// mimalloc rather than glibc's malloc, which hands the freed top of the heap
/// back to the system after every sentence above 128 KiB (`n ≳ 60`) and
/// page-faults it in again: at n = 100 that was 60% of a KL divergence.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Train(args) => report(train::run(&args).map(|()| ExitCode::SUCCESS)),
        Command::Parse(args) => {
            report(parse::run(&args).map(|skipped| ExitCode::from(u8::from(skipped > 0))))
        }
        Command::Evaluate(args) => report(evaluate::run(&args).map(|scores| {
            print!("{}", evaluate::format_scores(&scores));
            ExitCode::SUCCESS
        })),
        Command::Demo(args) => match demo::run(args.rooting, &mut io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(DemoError::Io(e)) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("spantree: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Infer(args) => {
            let request = match args.request() {
                Ok(request) => request,
                Err(e) => {
                    let mut cli = Cli::command();
                    cli.build();
                    let mut command = cli.find_subcommand("infer").cloned().unwrap_or(cli);
                    command
                        .error(clap::error::ErrorKind::ArgumentConflict, e)
                        .exit();
                }
            };
            // Without the handler Ctrl-C still ends the run, only silently.
            let _ = infer::handle_ctrl_c();
            let output = args
                .output
                .as_ref()
                .map_or_else(|| "standard output".to_owned(), |p| p.display().to_string());
            match infer::run(&args, &request) {
                Ok(summary) if summary.interrupted => {
                    eprintln!(
                        "spantree: interrupted: wrote {} records ({} failed) for the first {} input lines \
                         to {output}; the rest starts at line {}",
                        summary.written,
                        summary.failed,
                        summary.lines,
                        summary.lines + 1
                    );
                    ExitCode::from(130)
                }
                Ok(summary) if summary.failed == 0 => ExitCode::SUCCESS,
                Ok(summary) => {
                    eprintln!(
                        "spantree: {} of {} lines failed (see their error records)",
                        summary.failed, summary.lines
                    );
                    ExitCode::from(1)
                }
                // A reader that closed the pipe (`| head`) wants no more: not an error.
                Err(BatchError::Output(_, e)) if e.kind() == ErrorKind::BrokenPipe => {
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("spantree: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// Exit status 2 with the message for a parser command's error.
fn report(result: Result<ExitCode, spantree_parser::ParserError>) -> ExitCode {
    result.unwrap_or_else(|e| {
        eprintln!("spantree: {e}");
        ExitCode::from(2)
    })
}
