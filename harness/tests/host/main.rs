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
mod header;
mod hostile;
mod html_flag;
mod ignored_errors;
mod inputs;
mod large_manifests;
mod layout;
mod leftovers;
mod manifest;
mod measured_deadlines;
mod mutate;
mod mutate_perf;
mod no_device_artifacts;
mod onboarding;
mod outputs_onto_inputs;
mod outside_target;
mod perf;
mod planted_library;
mod program_report;
mod progress_lines;
mod readme;
mod rubric;
mod sanitize_batch;
mod scanner_forms;
mod setup;
mod streamcheck;
mod unconfined;
mod variance;

use std::fmt::Debug;
use std::path::PathBuf;

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
