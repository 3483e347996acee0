//! Exercise families: for each, the argument layout, a seeded input generator, the legal
//! geometry and an exact oracle. A case's `//@ exercise:` header names its family.

mod counter;
mod handoff;
mod histogram;
mod matmul;
mod problem;
mod reduce;
mod transpose;

pub use problem::{
    by_name, f32_bytes, names, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem,
    SizeChoice,
};
