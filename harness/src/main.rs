//! The `racegate` binary: parse, dispatch to `cli/`, and turn the outcome into an exit code by the
//! one table in `racegate::errors` (README, "Exit codes").

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
