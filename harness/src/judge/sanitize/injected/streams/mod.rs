//! streamcheck: races between streams, copies and the host, from the recorder's trace.
//! Part of `judge/`: may import the stages below `judge/` and `judge::sanitize`.
//!
//! The recorder's trace, one [`Op`] per
//! line ([`trace`]) -> the happens-before model of vector clocks ([`model`]) -> the outcome of a
//! run, with both call sites of each race ([`verdict`]).

pub mod history;
pub mod model;
pub mod trace;
pub mod verdict;
