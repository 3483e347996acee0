//! The top-level parser and the dispatch: global options, one variant per command, and the
//! hidden worker subcommands (named by `crate::proc::subcommands`, shared with the parents that
//! spawn them).

use crate::errors::exit;
use crate::Result;
use clap::{Parser, Subcommand};

use super::settings::Global;
use super::{
    bench, check, compile, doctor, gate, grade, internal, list, merge, mutate, perf, report,
    sanitize, setup, stress,
};

#[derive(Parser)]
#[command(
    name = "racegate",
    version,
    // Printed as written, never wrapped to the terminal: a wrapped example command breaks
    // copy-paste. `-h` stays within 100 columns by its short helps (`help`), `--help` keeps
    // each paragraph on its lines.
    term_width = 0,
    about = "Proves CUDA kernels correct or catches them racing.",
    long_about = "racegate builds the kernels under kernels/ and their deliberately broken twins under \
buggy_variants/ with NVRTC, runs them many times on random sizes and inputs with schedule jitter \
(stress), runs NVIDIA compute-sanitizer on them, and checks that every bug is caught by the \
detectors its header names and that every correct kernel is clean.",
    after_help = super::help::wrapped(concat!(
        "Exit codes: 0 everything held, 1 something was found, 2 bad input, 3 inconclusive (a tool \
missing or failing), 4 no CUDA device.\n",
        "Start with a racegate.toml for your own kernels (see examples/gate/racegate.toml): \
`racegate list` shows them, `racegate gate` checks them; `--manifest FILE` names another manifest. \
In racegate's own checkout, `racegate list` shows the kernels/ catalog."
    ), 100)
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Print the catalog: every correct kernel and buggy variant, the detectors that must
    /// flag each variant, and the line its bug is on.
    #[command(after_help = exit_codes_of(list::HELP), after_long_help = exit_codes_last(list::HELP))]
    List(list::ListArgs),
    /// Compile every kernel and variant with NVRTC (-lineinfo), and with --load also load each
    /// module on the device and look up its kernels. Needs no GPU without --load.
    #[command(after_help = exit_codes_of(compile::HELP), after_long_help = exit_codes_last(compile::HELP))]
    Compile(compile::CompileArgs),
    /// Run a case many times on random sizes, geometry and inputs; every output element is
    /// checked against an exact oracle. Each trial runs in a worker process with a deadline.
    #[command(after_help = exit_codes_of(stress::HELP), after_long_help = exit_codes_last(stress::HELP))]
    Stress(stress::StressArgs),
    /// Run one sanitizer tool (compute-sanitizer's or racegate's own; --help lists them) on a
    /// case, on the family's small sanitizer geometry (every loop and branch runs), or on an
    /// existing program given after `--`, and print the normalized findings.
    #[command(after_help = exit_codes_of(sanitize::HELP), after_long_help = exit_codes_last(sanitize::HELP))]
    Sanitize(sanitize::SanitizeArgs),
    /// Run the detection matrix: every case under stress (with and without jitter), under the
    /// watchdog and under each sanitizer tool that judges kernels (every one but streamcheck;
    /// `racegate sanitize --help` lists them), judged against each header's `expect`.
    /// Without a GPU it compiles every kernel, says what it could not run, and exits 4.
    #[command(after_help = exit_codes_of(check::HELP), after_long_help = exit_codes_last(check::HELP))]
    Check(check::CheckArgs),
    /// Measure, side by side in one run, the full stress path (upload, poison, launch, read
    /// back, check every element) against a bare cudarc launch loop, per kernel. Prints ratios.
    #[command(after_help = exit_codes_of(bench::HELP), after_long_help = exit_codes_last(bench::HELP))]
    Bench(bench::BenchArgs),
    /// Time kernels with CUDA events beside their family's reference, read Nsight Compute's
    /// counters (bank conflicts, sectors per request, occupancy, branch efficiency) and check
    /// the `//@ perf:` expectations; `--table` writes the course tables.
    #[command(after_help = exit_codes_of(perf::HELP), after_long_help = exit_codes_last(perf::HELP))]
    Perf(perf::PerfArgs),
    /// Gate a merge on your own kernels or CUDA program. With a manifest (./racegate.toml or
    /// --manifest FILE): every kernel under stress (its oracle: a reference kernel or
    /// determinism) and every sanitizer tool but streamcheck (compute-sanitizer's and racegate's
    /// own: --help lists them). With `-- PROGRAM ARGS`: the program under each of them and
    /// streamcheck (streams, copies and the host), and run several times plainly, with schedule
    /// jitter injected. New findings (not in the baseline) fail.
    #[command(after_help = exit_codes_of(gate::HELP), after_long_help = exit_codes_last(gate::HELP))]
    Gate(gate::GateArgs),
    /// Merge the shards of a `gate`, `check`, `grade` or `mutate --run` run with `--partition
    /// K/N` (N CI jobs) into the one result: the verdict, exit code and reports a single run
    /// would have given. Shards of different commits, settings or manifests, a duplicated or a
    /// missing shard are refused before anything is written.
    #[command(after_help = exit_codes_of(merge::HELP), after_long_help = exit_codes_last(merge::HELP))]
    Merge(merge::MergeArgs),
    /// Grade course exercise submissions: compile (device code only), check the kernel's name
    /// and signature, then score correctness on randomized sizes with jitter and the sanitizer
    /// tools the rubric gives points to, against the rubric. One file prints its grade; several
    /// files or a folder give a summary (CSV or JSON).
    #[command(after_help = exit_codes_of(grade::HELP), after_long_help = exit_codes_last(grade::HELP))]
    Grade(grade::GradeArgs),
    /// Mutation testing: small named changes to a correct kernel (a barrier removed, an atomic
    /// made plain, a bound off by one, ...), listed with their diffs; with --run, the battery
    /// (stress with jitter, then the sanitizers) on each, and the kill rate per operator.
    #[command(after_help = exit_codes_of(mutate::HELP), after_long_help = exit_codes_last(mutate::HELP))]
    Mutate(mutate::MutateArgs),
    /// Install what racegate needs on a machine without a CUDA toolkit: the pinned NVRTC 13.0
    /// wheels from PyPI into racegate's user cache, where every command finds them.
    #[command(after_help = exit_codes_of(&setup::help()), after_long_help = exit_codes_last(&setup::help()))]
    Setup(setup::SetupArgs),
    /// Say what racegate found on this machine (CUDA driver, GPU, NVRTC, compute-sanitizer,
    /// ncu, with versions) and, for each thing missing, how to get it.
    #[command(after_help = exit_codes_of(doctor::HELP), after_long_help = exit_codes_last(doctor::HELP))]
    Doctor(doctor::DoctorArgs),
    /// Render a saved result (`check --json`, `gate --json`, `grade --json`) as an HTML report:
    /// an index with the verdict and the matrix or findings, a page per finding with the source,
    /// the explanation and fix hint (English or Korean), and the repro command.
    #[command(after_help = exit_codes_of(report::HELP), after_long_help = exit_codes_last(report::HELP))]
    Report(report::ReportArgs),
    #[command(flatten)]
    Internal(internal::Internal),
}

/// The command's own exit-code line of its help (`-h` shows it alone); the table of every
/// command where the help has none.
fn exit_codes_of(help: &str) -> String {
    let line = help
        .lines()
        .find(|l| l.starts_with("Exit codes:"))
        .unwrap_or(exit::HELP);
    super::help::wrapped(line, 100)
}

/// A command's long help (`--help`) as printed: its text with the exit codes last, after its
/// examples, so every command's help ends the same way. The exit codes are the line that opens
/// with `Exit codes:`.
fn exit_codes_last(help: &str) -> String {
    let lines: Vec<&str> = help.lines().collect();
    let Some(at) = lines.iter().position(|l| l.starts_with("Exit codes:")) else {
        return help.to_string();
    };
    let mut rest: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, l)| *l)
        .collect();
    while rest.last().is_some_and(|l| l.trim().is_empty()) {
        rest.pop();
    }
    while rest.first().is_some_and(|l| l.trim().is_empty()) {
        rest.remove(0);
    }
    // Wrapped as `-h` wraps it ([`exit_codes_of`]): both helps end with the same lines.
    let codes = super::help::wrapped(lines[at], 100);
    if rest.is_empty() {
        return codes;
    }
    format!("{}\n\n{codes}", rest.join("\n"))
}

/// Runs the parsed command; the `u8` is the exit code by the one table (`crate::errors`).
/// The `racegate` binary's whole body: parse the command line, run the command, and return its
/// exit code by the one table in [`crate::errors::exit`] (README, "Exit codes"). An error is
/// printed to stderr first.
pub fn main() -> std::process::ExitCode {
    // Every option gets a one-line `-h` and a heading before anything is parsed (`help`).
    let matches = super::help::shaped(<Cli as clap::CommandFactory>::command()).get_matches();
    let args =
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // What an earlier racegate killed outright (SIGKILL) left running is ended first, and this
    // run keeps a record of its own jobs should it be killed too. The hidden workers are part
    // of their parent's run.
    if !matches!(args.command, Command::Internal(_)) {
        let records = crate::build::cache::runs_dir().map_err(|e| e.to_string());
        let reaped = crate::proc::leftovers::reap(records.clone());
        if let Ok(dir) = &records {
            crate::proc::leftovers::record_in(dir);
        }
        // `doctor` reports it among its findings; any other command in a note.
        if !matches!(args.command, Command::Doctor(_)) {
            if let Some(line) = reaped.describe() {
                eprintln!("note: {}", crate::report::visible::visible(&line));
            }
        }
    }
    crate::proc::timeline::start(!matches!(args.command, Command::Internal(_)));
    // Every compile runs NVRTC in a child of this binary (`racegate __compile`), with a deadline
    // and limits: a compiler that hangs or crashes costs that compile, not the run.
    if let Ok(exe) = crate::judge::battery::current_worker() {
        crate::build::compile_child::compile_in_children(exe);
    }
    // The binary is a child subreaper: a job's grandchild whose parent exits becomes racegate's
    // child, so it is found by parent pid and killed with its job where no cgroup holds it
    // (the library opts in only on `Gate::adopt_orphans(true)`).
    crate::proc::adopt_orphans();
    // Ctrl-C and SIGTERM end every job before racegate exits (130, 143). The hidden worker
    // subcommands keep the default actions: their parent ends them and all they started.
    if !matches!(args.command, Command::Internal(_)) {
        if let Err(e) = crate::proc::signals::forward() {
            eprintln!("warning: SIGINT and SIGTERM will not reach racegate's children: {e}");
        }
    }
    let result = run(args);
    // Stopping on a signal, the signal's handler exits (130, 143), not the command.
    crate::proc::signals::wait_if_stopping();
    let code = match result {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            // The whole cause chain, OS error text included (`reading /tmp: Is a directory
            // (os error 21)`): one presentation for every error.
            // Control characters of a file name or an NVRTC log shown as `\xNN`.
            eprintln!(
                "error: {}",
                crate::report::visible::visible(&e.chain().to_string())
            );
            std::process::ExitCode::from(e.exit_code())
        }
    };
    // No job is left: any orphan one left behind is killed before racegate goes.
    crate::proc::jobs::before_exit();
    crate::proc::timeline::finish();
    code
}

pub(crate) fn run(cli: Cli) -> Result<u8> {
    let g = &cli.global;
    match cli.command {
        Command::List(a) => list::run(g, a),
        Command::Compile(a) => compile::run(g, a),
        Command::Stress(a) => stress::run(g, a),
        Command::Sanitize(a) => sanitize::run(g, a),
        Command::Check(a) => check::run(g, a),
        Command::Bench(a) => bench::run(g, a),
        Command::Perf(a) => perf::run(g, a),
        Command::Gate(a) => gate::run(g, a),
        Command::Merge(a) => merge::run(g, a),
        Command::Grade(a) => grade::run(g, a),
        Command::Mutate(a) => mutate::run(g, a),
        Command::Setup(a) => setup::run(g, a),
        Command::Doctor(a) => doctor::run(g, a),
        Command::Report(a) => report::run(g, a),
        Command::Internal(i) => internal::run(g, i),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;

    /// The arguments of the command `args` names, defaults filled in as clap parses them.
    fn parsed(args: &str) -> clap::ArgMatches {
        let argv = std::iter::once("racegate").chain(args.split_whitespace());
        let m = <Cli as clap::CommandFactory>::command()
            .try_get_matches_from(argv)
            .unwrap_or_else(|e| panic!("{args}: {e}"));
        m.subcommand().expect("a command").1.clone()
    }

    /// Each command's defaults of the shared flags (`flags`), parsed as they are when the flag
    /// is not given: one definition of each flag, one default per command.
    #[test]
    fn every_command_keeps_its_defaults() {
        let (stress, grade) = ("stress x", "grade --exercise x s.cu");
        let sanitize = "sanitize --tool racecheck x";
        for (args, n) in [
            (stress, 200),
            ("check", 50),
            ("gate", 100),
            ("mutate", 20),
            (grade, 8),
            ("bench", 100),
        ] {
            assert_eq!(parsed(args).get_one::<u32>("trials"), Some(&n), "{args}");
        }
        let seed = crate::judge::sanitize::SANITIZE_SEED;
        for (args, n) in [
            (stress, None),
            ("check", Some(1)),
            ("mutate", Some(1)),
            (grade, Some(1)),
            ("bench", Some(1)),
            (sanitize, Some(seed)),
        ] {
            assert_eq!(parsed(args).get_one::<u64>("seed").copied(), n, "{args}");
        }
        for args in ["check", "gate", "mutate"] {
            assert_eq!(parsed(args).get_one::<usize>("jobs"), None, "{args}");
        }
        for (args, flag, s) in [
            ("check", "stress_timeout", Some(5.0)),
            ("mutate", "stress_timeout", Some(5.0)),
            ("check", "sanitize_timeout", Some(20.0)),
            ("mutate", "sanitize_timeout", Some(20.0)),
            (grade, "sanitize_timeout", Some(60.0)),
            ("gate", "sanitize_timeout", None),
            (stress, "shrink_budget", Some(30.0)),
            ("gate", "shrink_budget", Some(20.0)),
        ] {
            assert_eq!(
                parsed(args).get_one::<f64>(flag).copied(),
                s,
                "{args} {flag}"
            );
        }
    }
}
