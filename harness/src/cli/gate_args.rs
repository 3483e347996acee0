//! `racegate gate`'s options for a program's oracle (`--expect`, `--check`, CTest's regexes),
//! for CTest suites and for reports inside a library's own code, and the oracle they make.

use std::path::PathBuf;

use super::values;
use crate::gate;
use crate::Result;

/// A CTest suite as the programs to gate.
#[derive(clap::Args)]
pub(super) struct CtestArgs {
    /// Gate the tests of this CMake build folder (found with `ctest --show-only=json-v1`;
    /// $RACEGATE_CTEST names another ctest): each test's command under the sanitizers and
    /// plainly, with its PASS/FAIL_REGULAR_EXPRESSION, WILL_FAIL, TIMEOUT, WORKING_DIRECTORY
    /// and ENVIRONMENT.
    #[arg(long, value_name = "BUILD_DIR", conflicts_with = "program")]
    pub(super) ctest: Option<PathBuf>,
    /// Only the tests whose names match, as ctest's -R.
    #[arg(
        short = 'R',
        long = "tests-regex",
        value_name = "REGEX",
        requires = "ctest"
    )]
    pub(super) tests_regex: Option<String>,
}

/// What the gate does with the reports the tools make inside a library's own code.
#[derive(clap::Args)]
pub(super) struct LibraryArgs {
    /// Count CUB's known initcheck false positives as findings.
    ///
    /// By default an initcheck read of uninitialized global memory reported inside CUB's own
    /// code (the CUDA toolkit's CCCL headers, under thrust and cub algorithms), at the functions
    /// of a built-in list that names the upstream issue of each (NVIDIA/cccl#2104, #8054, ...),
    /// is set aside: CUB reads its own temporary storage there before writing it, by design. A
    /// note names each one; a never-written input the program hands CUB would be reported at
    /// the same lines, and this flag counts them again.
    #[arg(long)]
    pub(super) keep_library_reports: bool,
}

/// What judges a program's runs besides exit code, hang and variance.
#[derive(clap::Args)]
pub(super) struct OracleArgs {
    /// The golden output: each run's stdout, after masks, must equal this file. A mismatch is
    /// a finding with a diff, and the run's output is left in FILE.new to accept.
    #[arg(long, value_name = "FILE")]
    pub(super) expect: Option<PathBuf>,
    /// Write the --expect file from this run's output (after masks) instead of comparing.
    #[arg(long, requires = "expect")]
    pub(super) bless: bool,
    /// A checker: a shell command (`sh -c`) given each run's stdout in a file named by
    /// $RACEGATE_OUTPUT and on stdin; exit 0 accepts, anything else is a finding with its
    /// message.
    #[arg(long, value_name = "CMD")]
    pub(super) check: Option<String>,
    /// Deadline of one checker run, in seconds; past it the checker is inconclusive.
    #[arg(long, default_value_t = 60.0, value_parser = values::seconds)]
    pub(super) check_timeout: f64,
    /// CTest's PASS_REGULAR_EXPRESSION: a run passes when its output (stdout and stderr)
    /// matches any, whatever its exit code. Repeatable.
    #[arg(long, value_name = "REGEX")]
    pub(super) pass_regex: Vec<String>,
    /// CTest's FAIL_REGULAR_EXPRESSION: a run whose output matches any fails. Repeatable.
    #[arg(long, value_name = "REGEX")]
    pub(super) fail_regex: Vec<String>,
    /// CTest's WILL_FAIL: a run that exits is passed when it would fail and failed when it
    /// would pass (a signal or a deadline still fails).
    #[arg(long)]
    pub(super) will_fail: bool,
}

/// The oracles beyond exit code, hang and variance, from the flags.
pub(super) fn oracles(a: &OracleArgs) -> Result<gate::oracles::Oracles> {
    // The command that blesses: this one with --bless added after `gate`.
    let mut argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(i) = argv.iter().position(|x| x == "gate") {
        argv.insert(i + 1, "--bless".into());
    }
    let o = gate::oracles::Oracles {
        expect: a.expect.clone(),
        bless: a.bless,
        check: a.check.clone(),
        check_timeout: std::time::Duration::from_secs_f64(a.check_timeout),
        bless_command: argv.join(" "),
        ..Default::default()
    };
    o.with_regexes(&a.pass_regex, &a.fail_regex, a.will_fail)
}
