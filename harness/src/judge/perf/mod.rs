//! `racegate perf`: kernels timed beside their family's reference, Nsight Compute's counters.
//! Part of `judge/`: may import the stages below `judge/` (`proc/`, `source/`, `build/`, `run/`).
//!
//! Timing with CUDA events runs in the perf worker (`run/perf.rs`); here: ncu as a child with a
//! deadline and its `--csv` parsed (`ncu`), `//@ perf:` expectations judged with a lint line per
//! finding (`expect`), one kernel end to end (`runner`), and the course tables (`table`).

pub mod check;
pub mod expect;
pub mod ncu;
pub mod runner;
pub mod table;
