//! The sanitizer detector, one file per stage:
//! run ([`runner`]) -> XML ([`xml`]) -> findings and normalized text ([`normalize`]) ->
//! snapshot ([`snapshot`]).

pub mod normalize;
pub mod runner;
pub mod snapshot;
pub mod xml;

pub use runner::{Outcome, SanitizeConfig, SanitizerRun, Tool};
