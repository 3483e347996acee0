//! Plain `#[test]`s for the fixed tables of cases and the mechanisms tested through the binary,
//! one module per subject: the `//@` header parser (`header::<name>`), the racegate.toml
//! manifest parser (`manifest::<name>`), on good and bad input written here, the exit-code table
//! (`exit_codes::<name>`), `racegate gate -- PROGRAM` with fake sanitizers and programs
//! (`gate::<name>`), `racegate mutate`'s operators, ids and report (`mutate::<name>`), paths a
//! user gives handled as hostile (`hostile::<name>`), and the shape of the source tree
//! (`layout::<name>`: no import circle, no long file).
//! Every test that runs the racegate binary builds the run with `runner::racegate(ARGS)`, and
//! says there what the run needs (its folder, `RACEGATE_NO_GPU`, the other variables).
//! Everything data-driven (one trial per `.cu`, fixture or sample) or needing a GPU is in the
//! libtest-mimic target, `tests/tests.rs`.

mod api;
mod atomic_write;
mod bounded_messages;
mod build_paths;
mod check_no_device;
mod ci_templates;
mod clear_errors;
mod cli;
mod cli_help;
mod compile_child;
mod confinement;
mod containment;
mod device_children;
mod devices;
mod error_chain;
mod exit_codes;
mod fencecheck;
mod flag_values;
mod formatting;
mod gate;
mod globalcheck;
mod grade;
mod group_write;
mod header;
mod hostile;
mod html_flag;
mod ignored_errors;
mod large_manifests;
mod layout;
mod leftovers;
mod loader_path;
mod manifest;
mod measured_deadlines;
mod merge_shards;
mod mutate;
mod mutate_perf;
mod nearest_checkout;
mod no_device_artifacts;
mod onboarding;
mod outputs_onto_inputs;
mod outside_target;
mod partition;
mod perf;
mod planted_library;
mod program_report;
mod progress_lines;
mod readme;
mod relative_places;
mod report_outputs;
mod rubric;
mod runner;
mod sanitize;
mod sanitize_batch;
mod scalar_signedness;
mod scanner_forms;
mod setup;
mod streamcheck;
mod terminal_escapes;
mod unconfined;
mod variance;

use std::fmt::{self, Debug, Display};
use std::path::{Path, PathBuf};

/// The package folder (`harness/`). Runtime first: a nextest archive run elsewhere remaps it.
fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The repository root (the parent of `harness/`).
fn repo_root() -> PathBuf {
    package_dir()
        .parent()
        .expect("harness/ has a parent")
        .to_path_buf()
}

/// The racegate binary. Runtime first: a nextest archive carries it to another path.
fn racegate_exe() -> PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_racegate")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_racegate")))
}

/// Panics unless `r` parsed.
#[track_caller]
fn assert_parses<T: Debug>(r: Result<T, racegate::Error>) {
    if let Err(e) = r {
        panic!("expected success, got: {e}");
    }
}

/// Panics unless `r` is an error that starts with `at` (`file:line: `) and contains `want`.
#[track_caller]
fn assert_rejects<T: Debug>(r: Result<T, racegate::Error>, at: &str, want: &str) {
    match r {
        Ok(p) => panic!("expected an error containing `{want}`, parsed {p:?}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with(at) && msg.contains(want),
                "expected `{at}...{want}...`, got `{msg}`"
            );
        }
    }
}

/// Copies the folder `from` to `to`, recursively (an example project into a test's folder).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's folder");
    for e in std::fs::read_dir(from).expect("read the folder").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy a file");
        }
    }
}

/// Why a test that returns `Result<(), Failed>` failed: its message, printed as written (a
/// `#[test]` that returns `Err` prints the error's `Debug`, which here is the text itself).
struct Failed(String);

impl<T: Display> From<T> for Failed {
    fn from(why: T) -> Self {
        Failed(why.to_string())
    }
}

impl Debug for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether this is CI (`CI` set, and not to `false` or `0`), where what a test needs must be
/// there rather than the test not run.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether NVRTC loads, for a test that compiles: without it the test is not run (it says so
/// on stderr and passes), except under CI, where it fails.
#[track_caller]
fn nvrtc_or_not_run() -> bool {
    if racegate::build::toolchain::nvrtc().is_ok() {
        return true;
    }
    assert!(!in_ci(), "NVRTC is needed (CI=true)");
    eprintln!("NOT RUN: no NVRTC (racegate setup)");
    false
}

/// A temporary folder, removed when dropped; `prefix` names it so a leftover is recognizable.
fn temp_dir(prefix: &str) -> Result<tempfile::TempDir, Failed> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| Failed::from(format!("no temporary folder: {e}")))
}

/// Writes an executable shell script `dir/name` (a fake compute-sanitizer, a flaky program).
fn write_script(dir: &Path, name: &str, body: &str) -> Result<PathBuf, Failed> {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, body)?;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    Ok(p)
}
