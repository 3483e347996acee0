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
    /// After wrong results, look for the smallest failing size (`grade::shrink`).
    pub shrink: bool,
    /// Submissions share the GPU ([`crate::grade::lock::Access::Shared`]); every verdict that
    /// depends on time is still taken alone. False: each submission is alone on it throughout.
    pub share_gpu: bool,
}

/// Before any submission is graded with limits other than the defaults (`--compile-memory`,
/// `--compile-timeout`): the exercise's own reference kernel must compile within them, as a
/// submission's compile would. One that hits a limit makes every correct submission fail
/// "compiles", which is the configuration's fault, not the students': bad input (exit 2),
/// and nothing is graded. Anything else that stops this compile (no NVRTC, no reference) is left
/// to the grading itself, which reports it as it always does.
pub fn check_limits(
    root: &std::path::Path,
    spec: &super::spec::Spec,
    limits: &Limits,
    exe: &std::path::Path,
    arch: &str,
) -> crate::errors::Result<()> {
    use crate::build::compile_child::{self, LimitHit, Outcome, Request};
    let default = Limits::default();
    if limits.memory_mib >= default.memory_mib && limits.deadline >= default.deadline {
        return Ok(());
    }
    let Some((file, _)) = &spec.reference else {
        return Ok(());
    };
    let path = root.join(file);
    let Ok(source) = super::submission::read(&path) else {
        // ignored: a reference that cannot be read is the performance item's to report
        return Ok(());
    };
    let mut req = Request::new_submission(file, &source);
    req.options.arch = arch.to_string();
    req.allowed_includes = spec.headers.clone();
    if !spec.headers.is_empty() {
        let dirs = crate::build::toolchain::cuda_include_dirs();
        match crate::build::headers::serve(&spec.headers, &dirs) {
            Ok(h) => req.headers = h,
            // ignored: headers that cannot be served fail every compile, and grading says so
            Err(_) => return Ok(()),
        }
    }
    let outcome = match compile_child::compile(exe, &req, limits) {
        Ok(c) => c.outcome,
        // ignored: no NVRTC (or no child): grading reports it as a tool failure (exit 3)
        Err(_) => return Ok(()),
    };
    let flag = match &outcome {
        Outcome::Limit(LimitHit::Memory(_) | LimitHit::Stack(_)) => "--compile-memory",
        Outcome::Limit(LimitHit::Deadline(_)) => "--compile-timeout",
        _ => return Ok(()),
    };
    Err(crate::errors::Error::Usage(format!(
        "{flag} is too small: the exercise's own reference {file} does not compile within these \
         limits ({} MiB of memory, {:.0} s): {outcome}. Every correct submission would fail \
         \"compiles\"; raise {flag} (default: {} MiB, {:.0} s). Nothing was graded",
        limits.memory_mib,
        limits.deadline.as_secs_f64(),
        default.memory_mib,
        default.deadline.as_secs_f64()
    )))
}
