//! Exercise families: for each, the argument layout, a seeded input generator, the legal
//! geometry and the exact expected outputs. A case's `//@ exercise:` header names its family.
//!
//! `problem.rs` holds the `Exercise` trait and what a family hands the launcher; each family
//! file implements the trait; `registry.rs` lists the families.

mod counter;
mod handoff;
mod histogram;
mod lastblock;
mod matmul;
mod problem;
mod reduce;
mod registry;
mod stencil;
mod transpose;

pub use problem::{
    f32_bytes, Arg, Bits, Buffer, Compare, Dim3, Elem, Exercise, Init, LaunchStep, Problem,
    SizeChoice, Tolerance,
};
pub use registry::{by_name, names};
