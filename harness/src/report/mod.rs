//! Every output format racegate writes, rendered from the products' typed results.
//! Above the products: may import every stage and product, not `cli/`.
//!
//! One file per format. The engines ([`crate::judge::check`],
//! [`crate::gate`], [`crate::grade`], [`crate::run::stress`], [`crate::judge::sanitize`], [`crate::run::bench`])
//! return typed results; the functions here turn them into text and return it, and the CLI
//! decides where it goes. JSON of a result is serde's, except where a platform fixes the format.

pub mod codequality;
pub mod explain;
pub mod explain_text;
pub mod github;
pub mod grade;
pub mod html;
pub mod json;
pub mod junit;
pub mod manifest;
pub mod markdown;
pub mod mutate;
pub mod sarif;
pub mod shrink;
pub mod text;
pub mod timing;
pub mod visible;

#[cfg(test)]
pub mod fixtures;

// The text renderers most callers use, at the stage's top.
pub use text::{catalog_table, sanitizer, stress};
