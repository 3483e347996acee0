//! A kernel entry point and the family parameters it is launched with.
//!
//! Its own file because three stages share it and none of them owns it: the catalog parses it
//! from `//@ entry:` headers, the exercise families read its parameters when they draw a
//! problem, and grading specs name one. Keeping it here lets each of them import it without
//! importing the others.

use std::collections::BTreeMap;

use serde::Serialize;

/// A kernel entry point and the family parameters it is launched with.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub name: String,
    pub params: BTreeMap<String, i64>,
}

impl Entry {
    /// A family parameter, which the catalog has checked is present and in 1..=1024.
    pub fn param(&self, key: &str) -> u32 {
        u32::try_from(self.params[key]).expect("the catalog checks parameters are in 1..=1024")
    }
}
