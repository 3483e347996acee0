//! The compile item of a grade: the submission's file, compiled by NVRTC in a child plainly and
//! with schedule jitter, and the kernel's name and signature checked in what it built.

use std::path::Path;

use super::config::GradeConfig;
use super::rubric::Rubric;
use super::score::{self, Item, ItemResult};
use super::signature;
use super::spec::Spec;
use super::submission;
use crate::build::compile::{BuildOptions, Built};
use crate::build::compile_child::{self, Outcome as Compiled, Request};
use crate::errors::Result;
use crate::proc::confine::Wanted;
use crate::{build::headers, build::toolchain};

/// The compile item: the file, then NVRTC in a child ([`compile_child`]), once plainly and
/// once with schedule jitter, and the kernel's name and signature in what it built
/// ([`signature`]). The built PTX (plain, jittered) comes back only when it passed. An error
/// is the grading machine's (no NVRTC, a child that could not start), never the submission's.
pub(super) fn compiles(
    spec: &Spec,
    rubric: &Rubric,
    cfg: &GradeConfig,
    exe: &Path,
    path: &Path,
    name: &str,
) -> Result<(ItemResult, Option<(Built, Built)>)> {
    let failed = |detail: String| Ok((score::item(rubric, Item::Compiles, 0.0, detail), None));
    let source = match submission::read(path) {
        Ok(s) => s,
        Err(p) => return failed(p.to_string()),
    };
    // Refused here already (the child refuses too), so no process starts for it.
    if let Some(a) = compile_child::forbidden_access(&source, &spec.headers) {
        return failed(Compiled::Refused(a).to_string());
    }
    let headers = if spec.headers.is_empty() {
        Vec::new()
    } else {
        headers::serve(&spec.headers, &toolchain::cuda_include_dirs())?
    };
    let build = |jitter| {
        let req = Request {
            name: name.to_string(),
            source: source.clone(),
            options: BuildOptions {
                arch: cfg.arch.clone(),
                jitter,
                extra: vec![],
            },
            headers: headers.clone(),
            refuse_file_access: true,
            allowed_includes: spec.headers.clone(),
            trusted_cwd: None,
            confine: Some(Wanted::default()),
            require_confinement: cfg.require_confinement,
            scanner: true,
        };
        compile_child::compile(exe, &req, &cfg.compile).map(|c| c.outcome)
    };
    let plain = match build(false)? {
        Compiled::Built(b) => b,
        other => return failed(other.to_string()),
    };
    if let Err(r) = signature::check(spec, &source, &plain.ptx) {
        return failed(r.to_string());
    }
    let jittered = match build(true)? {
        Compiled::Built(b) => b,
        other => return failed(format!("with schedule jitter on: {other}")),
    };
    let detail = format!(
        "compiles; `{}` has the required signature ({})",
        spec.entry, spec.signature
    );
    Ok((
        score::item(rubric, Item::Compiles, 1.0, detail),
        Some((plain, jittered)),
    ))
}
