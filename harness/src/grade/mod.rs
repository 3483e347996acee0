//! Grading course exercises: exercise specs and rubrics ([`spec`]), checks on the submitted file
//! ([`submission`]), the graded run ([`run`]), scoring ([`score`]) and the output formats
//! ([`output`]).

pub mod output;
pub mod run;
pub mod score;
pub mod spec;
pub mod submission;
