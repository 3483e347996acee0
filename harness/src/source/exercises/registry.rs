//! The list of exercise families, and lookup by the name a `//@ exercise:` header gives.
//!
//! The list lives apart from the `Exercise` trait (in `problem.rs`) so that the dependencies
//! point one way: each family imports the trait, and only this file imports the families.

use super::counter::Counter;
use super::handoff::Handoff;
use super::histogram::Histogram;
use super::lastblock::LastBlock;
use super::matmul::Matmul;
use super::problem::Exercise;
use super::reduce::Reduce;
use super::stencil::Stencil;
use super::transpose::Transpose;

/// In the order error messages list them (`names`).
static FAMILIES: &[&dyn Exercise] = &[
    &Matmul, &Transpose, &Reduce, &Histogram, &Counter, &Handoff, &Stencil, &LastBlock,
];

/// The family of this name.
pub fn by_name(name: &str) -> Option<&'static dyn Exercise> {
    FAMILIES.iter().copied().find(|f| f.name() == name)
}

/// The names of all families.
pub fn names() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.name()).collect()
}
