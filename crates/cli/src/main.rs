//! The `spantree` command; see `spantree --help` and `crates/cli/README.md`.

use std::io::{self, ErrorKind};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use spantree_api::BatchError;
use spantree_cli::args::{Cli, Command};
use spantree_cli::demo::{self, DemoError};
use spantree_cli::infer;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
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
            match infer::run(&args, &request) {
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
