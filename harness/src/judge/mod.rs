//! The detectors: sanitizer runs from XML to findings to snapshots, the battery, the check matrix.
//! Layer 4: may import every stage below it (`proc/`, `source/`, `build/`, `run/`).

pub mod battery;
pub mod check;
pub mod perf;
pub mod sanitize;
