//! streamcheck: races between streams, copies and the host, from the recorder's trace.
//! Part of `judge/`: may import the stages below `judge/` and `judge::sanitize`.
//!
//! The recorder's trace, one [`Op`] per
//! line ([`trace`]) -> the happens-before model of vector clocks ([`model`]) -> the outcome of a
//! run, with both call sites of each race ([`verdict`]); a race resting on what a kernel may
//! touch is measured by one more run before it is reported ([`confirm`]).

pub mod confirm;
pub mod history;
pub mod model;
pub mod trace;
pub mod verdict;
