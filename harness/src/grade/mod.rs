//! Grading course exercises: exercise specs and rubrics ([`spec`]), checks on the submitted file
//! ([`submission`]), the graded run ([`run`]) and scoring ([`score`]). The output formats are in
//! [`crate::report::grade`] and [`crate::report::junit`].

pub mod run;
pub mod score;
pub mod spec;
pub mod submission;
