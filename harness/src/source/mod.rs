//! Where cases come from: catalog, manifests, exercises, the token scanner, expressions, values.
//! Layer 1, beside `proc/`: may import `errors` only.

pub mod case;
pub mod catalog;
pub mod cscan;
pub mod entry;
pub mod exercises;
pub mod expr;
pub mod files;
pub mod manifest;
pub mod names;
pub mod partition;
pub mod paths;
pub mod values;
