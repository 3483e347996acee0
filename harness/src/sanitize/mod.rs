//! The sanitizer detector, one file per stage:
//! run ([`runner`]; [`globalcheck`] for global memory) -> XML ([`xml`]) -> findings and normalized text ([`normalize`]) ->
//! snapshot ([`snapshot`]).

pub mod globalcheck;
pub mod normalize;
pub mod runner;
pub mod snapshot;
pub mod tool;
pub mod xml;

pub use tool::{Outcome, SanitizeConfig, SanitizerRun, Tool, SANITIZE_SEED};
