//! Fixtures shared by the tests of [`super::batch`] and [`super::own_batch`] (findings, the
//! lines a batch's target prints for each case, a finished batch run, the cases' files) and by
//! the tests that settle a tool's findings ([`found`]).

use super::normalize::Finding;
use super::runner::RESULT;
use super::tool::{Outcome, SanitizerRun, Tool};

pub(crate) fn finding(location: &str) -> Finding {
    Finding {
        kind: "Analysis".into(),
        level: "Error".into(),
        kernel: "k".into(),
        location: location.into(),
        accesses: String::new(),
        what: "Race condition".into(),
    }
}

pub(crate) const NONCE: &str = "0123456789abcdef";

/// A host API error record as the normalizer makes it (no source line).
pub(crate) fn api(what: &str) -> Finding {
    Finding {
        kind: "Api".into(),
        kernel: "cuModuleLoadData".into(),
        location: "<host>".into(),
        what: what.into(),
        ..finding("")
    }
}

pub(crate) fn result_line(name: &str, said: &str) -> String {
    format!("{RESULT}{name} (n=64 grid=1 block=64): {said} [run {NONCE}]\n")
}

pub(crate) const OK: &str = "results correct; buffers digest 0123456789abcdef";
pub(crate) const WRONG: &str = "3 of 64 elements of `out` wrong; buffers digest 0123456789abcdef";

pub(crate) fn batch_run(outcome: Outcome, log: &str) -> SanitizerRun {
    SanitizerRun {
        case: "a+b+c".into(),
        tool: Tool::Racecheck,
        outcome,
        exit: "exit 0".into(),
        seconds: 3.0,
        log: log.into(),
        command: String::new(),
    }
}

/// A finished run of `tool` on `case` that found `findings` (compute-sanitizer's exit code for
/// errors, 86).
pub(crate) fn found(case: &str, tool: Tool, findings: Vec<Finding>) -> SanitizerRun {
    SanitizerRun {
        case: case.into(),
        tool,
        outcome: Outcome::Findings(findings),
        exit: "exit 86".into(),
        seconds: 1.0,
        log: String::new(),
        command: String::new(),
    }
}

pub(crate) fn files() -> Vec<Vec<String>> {
    vec![
        vec!["racegate_prelude.cuh".into(), "kernels/a.cu".into()],
        // b's file includes c's: c's lines are in b's code too.
        vec!["kernels/b.cu".into(), "kernels/c.cu".into()],
        vec!["kernels/c.cu".into()],
    ]
}

pub(crate) const NAMES: [&str; 3] = ["a", "b", "c"];
