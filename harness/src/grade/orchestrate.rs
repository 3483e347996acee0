//! One submission's grade, from file to [`Grade`]: the order of the items, what is skipped when
//! an earlier one fails, and the GPU lock around the part that runs on the device.
//!
//! The parent (this process) owns everything that decides the grade: it draws the problems from
//! the public seed mixed with a secret, computes the exact expected results, and compares
//! ([`super::items`]). The submission itself runs in a child ([`super::worker()`]) that only ever
//! sees inputs, and the parent compares those inputs with its own copy afterwards.

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::config::GradeConfig;
use super::items::{self, Items};
use super::lock::GpuLock;
use super::score::{self, Item, ItemResult};
use super::spec::{Rubric, Spec};
use super::worker::Scratch;
use crate::errors::Result;
use crate::sanitize::Tool;

/// The grade of one submission.
#[derive(Clone, Debug, Serialize)]
pub struct Grade {
    pub exercise: String,
    pub submission: String,
    pub score: f64,
    pub max_score: f64,
    pub items: Vec<ItemResult>,
    pub seed: u64,
    /// Wall time of this grade, without the time spent waiting for the GPU.
    pub execution_seconds: f64,
}

/// The items graded once the submission compiles.
const AFTER_COMPILE: [Item; 6] = [
    Item::Correct,
    Item::Racecheck,
    Item::Synccheck,
    Item::Memcheck,
    Item::Initcheck,
    Item::Performance,
];

/// The name findings and compile errors use for the submission: its file name.
fn program_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "submission.cu".into())
}

/// Grades one file.
pub fn grade(
    root: &Path,
    spec: &Spec,
    rubric: &Rubric,
    path: &Path,
    cfg: &GradeConfig,
    exe: &Path,
) -> Result<Grade> {
    let start = Instant::now();
    let name = program_name(path);
    // Time spent waiting for another submission to leave the GPU is not this one's.
    let waited = Cell::new(Duration::ZERO);
    let finish = |items: Vec<ItemResult>| {
        let (score, max) = score::total(&items);
        Grade {
            exercise: spec.name.clone(),
            submission: path.display().to_string(),
            score,
            max_score: max,
            items,
            seed: cfg.seed,
            execution_seconds: start.elapsed().saturating_sub(waited.get()).as_secs_f64(),
        }
    };
    // 1-2. The file, the kernel's name and signature, and compilation.
    let (compiled, built) = items::compiles(root, spec, rubric, cfg, path, &name);
    let mut items = vec![compiled];
    let Some((plain, jittered)) = built else {
        items.extend(score::not_run(
            rubric,
            &AFTER_COMPILE,
            "not graded: the submission has to compile first",
        ));
        return Ok(finish(items));
    };
    if !cfg.device {
        items.extend(score::not_run(
            rubric,
            &AFTER_COMPILE,
            "not graded: no CUDA device on the grading machine",
        ));
        return Ok(finish(items));
    }
    let work = Scratch::new()?;
    // From here on the submission runs on the GPU: one submission at a time.
    let queued = Instant::now();
    let _gpu = GpuLock::acquire()?;
    waited.set(queued.elapsed());
    let ptx_plain = work.write("plain.ptx", plain.ptx.as_bytes())?;
    let ptx_jitter = work.write("jitter.ptx", jittered.ptx.as_bytes())?;
    let on_gpu = Items {
        root,
        spec,
        rubric,
        cfg,
        exe,
        work: &work,
        name: &name,
    };
    // 3. Correctness on random sizes, with jitter.
    items.push(on_gpu.correctness(&ptx_jitter)?);
    // 4. The sanitizers, on the small geometry, side by side.
    let sanitizer_items = crate::pool::run_all(
        Tool::ALL.to_vec(),
        4,
        |tool| on_gpu.sanitizer(&ptx_plain, tool),
        |_| {},
    );
    for it in sanitizer_items {
        items.push(it?);
    }
    // 5. Performance against the course's reference, when the rubric gives it points.
    if rubric.performance > 0.0 {
        items.push(on_gpu.performance(&ptx_plain)?);
    }
    Ok(finish(items))
}

#[cfg(test)]
impl GradeConfig {
    /// For unit tests: three trials of `timeout` each, a short sanitizer deadline, no sanitizer.
    pub(super) fn for_tests(timeout: Duration) -> GradeConfig {
        GradeConfig {
            trials: 3,
            seed: 1,
            secret: 2,
            timeout,
            sanitize_timeout: Duration::from_secs(1),
            arch: String::new(),
            sanitizer: None,
            device: true,
        }
    }
}
