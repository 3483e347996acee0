//! How to grade: the settings one batch shares, read by the orchestration, the graded items and
//! the worker's parent alike (a file of its own so none of them imports another for it).

use std::path::PathBuf;
use std::time::Duration;

use crate::build::compile_child::Limits;

/// How to grade.
#[derive(Clone, Debug)]
pub struct GradeConfig {
    pub trials: u32,
    /// The public seed (printed in reports).
    pub seed: u64,
    /// Mixed into the seed; never printed, never given to the child.
    pub secret: u64,
    pub timeout: Duration,
    pub sanitize_timeout: Duration,
    pub arch: String,
    pub sanitizer: Option<PathBuf>,
    /// Whether a CUDA device is there (without one, only the host checks and compilation run,
    /// and no grade is given).
    pub device: bool,
    /// What a submission's compile may use.
    pub compile: Limits,
    /// A compile whose child could apply no kernel-level confinement is not graded (exit 3)
    /// instead of compiled with the token scanner alone.
    pub require_confinement: bool,
    /// One line on what confines a submission's compile here (from the probe), kept in each
    /// grade's JSON.
    pub confinement: String,
    /// How long to wait for another grader to leave the GPU before giving up (not graded).
    pub gpu_wait: Duration,
    /// Where notes for the person running the grader go (waiting for the GPU, say).
    pub note: fn(&str),
}
