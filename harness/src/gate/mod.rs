//! The merge gate for a team's own kernels and programs, with its baseline.
//! Product layer: may import the stages (`proc/` .. `judge/`), not `grade/`, `mutate/`, `report/`, `cli/`.
//!
//! It gates manifest kernels (stress with their oracle, and the sanitizers) or an existing CUDA
//! program (`gate -- PROGRAM ARGS`: the sanitizers and repeated plain runs). Findings are matched with a baseline of accepted ones by fingerprint (no line
//! numbers): new findings fail the gate, accepted ones are listed, fixed and stale ones are
//! reported so the baseline can shrink. The run and its [`Diff`] are rendered by
//! `report/`: text, JSON, JUnit, SARIF 2.1.0, GitHub annotations and a markdown summary.
//!
//! One file per role: [`finding`] (what a run holds), [`fingerprint`] (a finding's identity),
//! [`baseline`] (accepted findings, the diff), [`manifest_run`] and [`program`] (the two modes),
//! [`sanitizers`] (sanitizer runs as findings), [`initcheck_confirm`] (initcheck's reports
//! from sampled passes confirmed by a run of every launch), [`library_reports`] (known false positives
//! inside a library's own code, set aside and noted), `stress_state` (what the stress runs said, for
//! the jobs after them), [`masks`] (what may vary between runs),
//! [`oracles`] and [`judge`] (regexes, golden outputs and checkers judging a program's runs),
//! [`variance`] (outputs that differ: jitter's races told from run-to-run noise),
//! [`frozen_clock`] (lines that follow the program's speed, measured with the clock held
//! still), [`jitter`] (the jitter injection of the plain runs),
//! [`ctest`] (CTest suites as programs), [`manifest_programs`] (`[[program]]` tables).

pub mod baseline;
pub mod ctest;
pub mod deadlines;
pub mod finding;
pub mod fingerprint;
pub mod frozen_clock;
pub mod initcheck_confirm;
pub mod jitter;
pub mod judge;
pub mod library_reports;
pub mod manifest_programs;
pub mod manifest_run;
pub mod masks;
pub mod measure;
pub mod noise;
pub mod oracles;
pub mod plain_run;
pub mod program;
pub mod sampled_runs;
pub mod sampling;
pub mod sanitizers;
pub mod shared_free;
mod stress_state;
pub mod target;
pub mod variance;

pub use baseline::{diff, Accepted, Baseline, Diff, Relabelled, BASELINE, PROGRAM_BASELINE};
pub use finding::{Checked, Detection, GateConfig, GateEvent, GateFinding, GateRun, Inconclusive};
pub use fingerprint::Identity;
pub use manifest_run::run_manifest;
pub use program::run_program;
