//! Grading course exercises: exercise specs and rubrics ([`spec`]), checks on the submitted file
//! ([`submission`]), one submission's graded run ([`grade()`], [`GradeConfig`], [`Grade`]), the
//! child process it runs the submission in ([`worker()`]) and scoring ([`score`]). The output
//! formats are in [`crate::report::grade`] and [`crate::report::junit`].
//!
//! The graded run is split by role: `config.rs` holds the settings, `orchestrate.rs` orders the items, `items.rs` grades each
//! one, `worker.rs` holds the child worker and the parent's retry loop around it, `wire.rs` the
//! private file format between the two, and `lock.rs` the GPU lock.

mod config;
mod items;
mod lock;
mod orchestrate;
pub mod score;
pub mod spec;
pub mod submission;
mod wire;
mod worker;

pub use config::GradeConfig;
pub use orchestrate::{grade, Grade};
pub use worker::worker;
