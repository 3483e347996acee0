//! The hidden subcommands racegate runs itself through, as one contract between the parent that
//! spawns a child and the command line that parses it (nextest's `__double-spawn` shape). The
//! parent passes these names as the child's first argument; `cli/internal.rs` declares them with
//! the same constants, so the two cannot drift apart.

/// Runs stress trials on the device and prints one JSON line per trial (`stress.rs` spawns it).
pub const STRESS_WORKER: &str = "__worker";
/// The program compute-sanitizer runs: one launch on the sanitizer geometry (`judge/sanitize/runner/mod.rs`).
pub const SANITIZE_TARGET: &str = "__sanitize-target";
/// Runs a graded submission on problems from a request file (`grade/`).
pub const GRADE_WORKER: &str = "__grade-worker";
/// Times one kernel with CUDA events and prints one JSON line (`judge/perf/runner.rs`); also the
/// program Nsight Compute profiles.
pub const PERF_WORKER: &str = "__perf-worker";
/// Compiles code racegate does not trust, under limits (`compile_child.rs`).
pub const COMPILE_CHILD: &str = "__compile";

/// Whether `program args` is this executable (the same file, after links) running one of
/// `subcommands`. A user's program that names a subcommand among its arguments is not this
/// executable, whatever it is called.
pub fn is_own(
    program: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
    subcommands: &[&str],
) -> bool {
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize())
    {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    std::env::current_exe().is_ok_and(|me| same(std::path::Path::new(program), &me))
        && args.iter().any(|a| subcommands.iter().any(|s| a == *s))
}
