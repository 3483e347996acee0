//! The `racegate` binary: everything is in the library's [`racegate::cli`]; this file only hands
//! over and returns its exit code (README, "Exit codes").

fn main() -> std::process::ExitCode {
    racegate::cli::main()
}
