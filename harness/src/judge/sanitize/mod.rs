//! The sanitizer detectors: run -> XML -> findings -> normalized text -> snapshot.
//! Part of `judge/`: may import the stages below `judge/`.
//!
//! The sanitizer detector, one file per stage:
//! run ([`runner`]; [`batch`] for several cases in one process, [`own_batch`] for racegate's
//! own tools; [`globalcheck`] for global memory) -> XML ([`xml`]) -> findings and normalized text ([`normalize`]) ->
//! snapshot ([`snapshot`]).

pub mod batch;
pub mod globalcheck;
pub mod normalize;
pub mod own_batch;
pub mod runner;
/// Only the test target compares snapshots (insta is a dev-dependency).
#[cfg(any(test, feature = "internals"))]
pub mod snapshot;
pub mod tool;
pub mod xml;

pub use tool::{Outcome, SanitizeConfig, SanitizerRun, Tool, SANITIZE_SEED};
