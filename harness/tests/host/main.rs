//! Plain `#[test]`s for the fixed tables of cases: the `//@` header parser (`header::<name>`),
//! the racegate.toml manifest parser (`manifest::<name>`), on good and bad input written here,
//! the exit-code table through the real binary (`exit_codes::<name>`), `racegate mutate`'s
//! operators, ids and report (`mutate::<name>`), paths a user gives handled as hostile
//! (`hostile::<name>`), and the shape of the source tree (`layout::<name>`: no import circle,
//! no long file).
//! Everything data-driven (one trial per `.cu`, fixture or sample) or needing a GPU is in the
//! libtest-mimic target, `tests/tests.rs`.

mod api;
mod atomic_write;
mod bounded_messages;
mod build_paths;
mod check_no_device;
mod clear_errors;
mod cli_help;
mod compile_child;
mod confinement;
mod containment;
mod edges;
mod edges_input;
mod error_chain;
mod exit_codes;
mod fencecheck;
mod formatting;
mod globalcheck;
mod group_write;
mod header;
mod hostile;
mod html_flag;
mod ignored_errors;
mod inputs;
mod large_manifests;
mod layout;
mod leftovers;
mod loader_path;
mod manifest;
mod measured_deadlines;
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
mod rubric;
mod sanitize_batch;
mod scalar_signedness;
mod scanner_forms;
mod setup;
mod streamcheck;
mod unconfined;
mod variance;

use std::ffi::OsStr;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

/// The package folder (`harness/`). Runtime first: a nextest archive run elsewhere remaps it.
fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
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

/// Runs racegate in `dir` with `args`, no GPU (`RACEGATE_NO_GPU`), `env` set (a `None` value
/// removes the variable): its exit code, and its standard output and error together.
fn run_in(dir: &Path, args: &[&str], env: &[(&str, Option<&OsStr>)]) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(racegate_exe());
    cmd.args(args).current_dir(dir).env("RACEGATE_NO_GPU", "1");
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().expect("racegate runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
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
