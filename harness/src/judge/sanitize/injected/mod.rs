//! racegate's injected tool and the four detectors it hosts, one folder or file each.
//! Part of `judge/`: may import the stages below `judge/` (the tool is built by
//! `build/globalcheck.rs`).
//!
//! One Sanitizer-API tool (`harness/globalcheck/`: a C++ host part and CUDA device patches) is
//! injected into the target through `CUDA_INJECTION64_PATH`, whatever set of racegate's own
//! detectors is chosen: one run, one [`Report`] read once per detector. The stages:
//! run the target under the tool ([`run`]; one process: [`target`]) -> read its report
//! ([`report`]), with program counters mapped to source lines through nvdisasm ([`lines`]) ->
//! what each detector concludes ([`decide`] for what they share, then [`global`], [`shared`],
//! [`fence`], [`streams`]) -> the same [`crate::judge::sanitize::normalize::Finding`]s as the compute-sanitizer tools. A batch
//! of cases in one run is judged per case ([`split`]).
//!
//! - [`global`]: globalcheck, races on global memory between warps and blocks.
//! - [`shared`]: sharedcheck, reads of unwritten shared memory and atomic/plain mixes.
//! - [`fence`]: fencecheck, handoffs between blocks missing the fences the memory model needs.
//! - [`streams`]: streamcheck, races between streams, copies and the host.

pub mod decide;
pub mod fence;
pub mod global;
pub mod lines;
pub mod report;
pub mod run;
pub mod shared;
pub mod split;
pub mod streams;
pub mod target;

pub use run::run_target;
