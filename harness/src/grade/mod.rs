//! Grading course exercises: specs, rubrics, the submission's confined run, scores.
//! Product layer: may import the stages (`proc/` .. `judge/`) and `gate/`, not `report/` or `cli/`.
//!
//! Exercise specs and rubrics ([`spec`]), checks on the submitted file
//! ([`submission`]), one submission's graded run ([`grade()`], [`GradeConfig`], [`Grade`]), the
//! child process it runs the submission in ([`worker()`]) and scoring ([`score`]). The output
//! formats are in `report/grade.rs` and `report/junit.rs`.
//!
//! The graded run is split by role: `config.rs` holds the settings, `orchestrate.rs` orders the
//! items, `items.rs` grades each one, `signature.rs` checks the kernels against the exercise,
//! `worker/` holds the child worker and the parent's retry loop around it, `wire.rs` the
//! private file format between the two, and `lock.rs` the GPU lock. Submissions compile in a
//! child ([`crate::build::compile_child`]) with file access refused.

pub mod compile_item;
pub mod config;
pub mod course;
pub mod items;
pub mod lock;
pub mod orchestrate;
pub mod rubric;
pub mod score;
pub mod shrink;
pub mod signature;
pub mod spec;
pub mod submission;
pub mod wire;
pub mod worker;

pub use config::GradeConfig;
pub use orchestrate::{grade, Grade};
pub use worker::worker;
