//! The `racegate` binary: parse, dispatch to `cli/`, and turn the outcome into an exit code by the
//! one table in `racegate::errors` (README, "Exit codes").

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    // Every compile runs NVRTC in a child of this binary (`racegate __compile`), with a deadline
    // and limits: a compiler that hangs or crashes costs that compile, not the run.
    if let Ok(exe) = racegate::battery::current_worker() {
        racegate::compile_child::compile_in_children(exe);
    }
    match cli::run(args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
