//! The sanitizer detectors: run -> XML -> findings -> normalized text -> snapshot.
//! Part of `judge/`: may import the stages below `judge/`.
//!
//! One file per stage: run ([`runner`]; [`batch`] for several cases in one process,
//! [`own_batch`] for racegate's own tools, [`injected`] for the detectors of racegate's injected
//! tool) -> XML ([`xml`]) -> findings and normalized text ([`normalize`]) -> snapshot
//! ([`snapshot`]). [`Tool`] names every detector; [`known_false_positives`] lists the reports
//! a tool makes inside a library's own code in correct programs (CUB's, under initcheck).

pub mod batch;
/// Fixtures for the batch tests and the tests that settle a tool's findings.
#[cfg(test)]
pub(crate) mod batch_fixtures;
pub mod injected;
pub mod known_false_positives;
pub mod normalize;
pub mod own_batch;
pub mod runner;
/// Only the test target compares snapshots (insta is a dev-dependency).
#[cfg(any(test, feature = "internals"))]
pub mod snapshot;
pub mod tool;
pub mod xml;

pub use tool::{Outcome, SanitizeConfig, SanitizerRun, Tool, SANITIZE_SEED};
