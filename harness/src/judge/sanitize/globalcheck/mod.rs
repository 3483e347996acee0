//! globalcheck: racegate's own Sanitizer-API race detector for global memory.
//! Part of `judge/`: may import the stages below `judge/` (its tool is built by `build/globalcheck.rs`).
//!
//! globalcheck, racegate's own race detector for global memory (compute-sanitizer's racecheck
//! sees shared memory only). A Sanitizer API tool (`harness/globalcheck/`: a C++ host part and
//! CUDA device patches) is injected into the target through `CUDA_INJECTION64_PATH`; it keeps
//! shadow memory per launch and writes what it found as JSON lines. One file per stage:
//! build the tool ([`crate::build::globalcheck`]) -> run the target under it ([`run`]) -> read its report
//! ([`report`]), with program counters mapped to source lines through nvdisasm ([`lines`]) ->
//! the same [`crate::judge::sanitize::normalize::Finding`]s as the compute-sanitizer tools.

pub mod confirm;
pub mod decide;
pub mod fence;
pub mod lines;
pub mod never_written;
pub mod report;
pub mod run;
pub mod sass;
pub mod shared;
pub mod split;
pub mod streams;
pub mod streams_trace;
pub mod streams_verdict;

pub use run::run_target;
