//! The course's exercise families: how each problem is built and checked.
//! Part of `source/`: may import `errors` and the rest of `source/`.
//!
//! For each family: the argument layout, a seeded input generator, the legal
//! geometry and the exact expected outputs. A case's `//@ exercise:` header names its family.
//!
//! `problem.rs` holds the `Exercise` trait and what a family hands the launcher; each family
//! file implements the trait; `registry.rs` lists the families.

pub mod counter;
pub mod handoff;
pub mod histogram;
pub mod lastblock;
pub mod matmul;
pub mod problem;
pub mod reduce;
pub mod registry;
pub mod stencil;
pub mod transpose;

pub use problem::{
    Arg, Bits, Buffer, Compare, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
    Tolerance,
};
pub use registry::{by_name, names};
