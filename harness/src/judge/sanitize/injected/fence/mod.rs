//! fencecheck: handoffs between blocks checked for the fences the memory model needs.
//! Part of `judge/`: may import the stages below `judge/` and `judge::sanitize`.
//!
//! The handoffs globalcheck's rule takes as ordering are checked in [`handoffs`] (its
//! [`Handoffs`]), on the module's SASS and control-flow graph read from nvdisasm ([`sass`]).

pub mod handoffs;
pub mod sass;
