//! One submission's grade, from file to [`Grade`]: the order of the items, what is skipped when
//! an earlier one fails, and the GPU lock around the part that runs on the device.
//!
//! The parent (this process) owns everything that decides the grade: it draws the problems from
//! the public seed mixed with a secret, computes the exact expected results, and compares
//! ([`super::items`]). The submission itself runs in a child ([`super::worker()`]) that only ever
//! sees inputs, and the parent compares those inputs with its own copy afterwards.
//!
//! What the grading machine cannot do (no CUDA device, no NVRTC, a sanitizer missing or
//! refusing, a worker lost) is never the submission's grade: the grade is then
//! [`Grade::not_graded`], which every output format turns into "not graded".

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::config::GradeConfig;
use super::items::Items;
use super::lock::{Access, GpuTurn};
use super::rubric::Rubric;
use super::score::{self, Item, ItemResult};
use super::spec::Spec;
use super::worker::Scratch;
use crate::build::{compile, compile_child};
use crate::errors::{exit, Error, Result};
use crate::judge::sanitize::Tool;

/// The grade of one submission. Read back (a shard of a batch, `racegate merge`) as JSON writes
/// it: a grade not given has no score there (null).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Grade {
    pub exercise: String,
    pub submission: String,
    #[serde(deserialize_with = "zero_if_null")]
    pub score: f64,
    #[serde(deserialize_with = "zero_if_null")]
    pub max_score: f64,
    pub items: Vec<ItemResult>,
    pub seed: u64,
    /// Wall time of this grade, without the time spent waiting for the GPU.
    pub execution_seconds: f64,
    /// Set when no grade may be given: the grading machine failed (no CUDA device, no NVRTC,
    /// a sanitizer missing or refusing, a worker lost), not the submission. The items that ran
    /// are kept for the instructor; no score may be posted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_graded: Option<NotGraded>,
    /// What confined the submission's compile (the kernel-level layers racegate's probe saw
    /// apply and hold), as [`GradeConfig::confinement`] says.
    pub confinement: String,
}

/// A score written as null (a grade not given) read as 0.
fn zero_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Option::<f64>::deserialize(d).map(|v| v.unwrap_or(0.0))
}

/// Why a submission was not graded, and the exit code that says so (3 or 4).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NotGraded {
    pub reason: String,
    pub exit_code: u8,
}

impl Grade {
    /// This grade's exit code by the one table: its [`NotGraded`] code, 1 when the submission
    /// lost points, 0 when it earned them all.
    pub fn exit_code(&self) -> u8 {
        match &self.not_graded {
            Some(n) => n.exit_code,
            None if self.score < self.max_score => exit::FOUND,
            None => exit::OK,
        }
    }
}

/// The items graded once the submission compiles.
const AFTER_COMPILE: [Item; 8] = [
    Item::Correct,
    Item::Racecheck,
    Item::Synccheck,
    Item::Memcheck,
    Item::Initcheck,
    Item::Globalcheck,
    Item::Sharedcheck,
    Item::Performance,
];

/// The name findings and compile errors use for the submission: its file name, made safe to
/// show ([`compile_child::safe_name`]).
fn program_name(path: &Path) -> String {
    compile_child::safe_name(
        &path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    )
}

/// What every file of a grading run is graded against: the course folder, the exercise's spec
/// and rubric, the grading settings and the racegate binary the compile and worker children
/// run.
#[derive(Clone, Copy)]
struct Grader<'a> {
    root: &'a Path,
    spec: &'a Spec,
    rubric: &'a Rubric,
    cfg: &'a GradeConfig,
    exe: &'a Path,
}

/// Grades one file. Never fails: what the grading machine could not do is the grade's
/// [`Grade::not_graded`].
pub fn grade(
    root: &Path,
    spec: &Spec,
    rubric: &Rubric,
    path: &Path,
    cfg: &GradeConfig,
    exe: &Path,
) -> Grade {
    let start = Instant::now();
    let _span = crate::proc::timeline::span("job", || format!("grade {}", path.display()));
    // Time spent waiting for another submission to leave the GPU is not this one's.
    let waited = Cell::new(Duration::ZERO);
    let mut items = Vec::new();
    let grader = Grader {
        root,
        spec,
        rubric,
        cfg,
        exe,
    };
    let outcome = grade_items(&grader, path, &mut items, &waited);
    let not_graded = match outcome {
        Ok(()) => None,
        Err(e) => Some(NotGraded {
            reason: e.to_string(),
            exit_code: e.exit_code().max(exit::INCONCLUSIVE),
        }),
    };
    let (score, max) = score::total(&items);
    Grade {
        exercise: spec.name.clone(),
        submission: path.display().to_string(),
        score,
        max_score: max,
        items,
        seed: cfg.seed,
        execution_seconds: start.elapsed().saturating_sub(waited.get()).as_secs_f64(),
        not_graded,
        confinement: cfg.confinement.clone(),
    }
}

/// The items of `path` in order, pushed as they are graded; `Err` when the machine failed.
fn grade_items(
    grader: &Grader,
    path: &Path,
    items: &mut Vec<ItemResult>,
    waited: &Cell<Duration>,
) -> Result<()> {
    let Grader {
        spec,
        rubric,
        cfg,
        exe,
        ..
    } = *grader;
    let name = program_name(path);
    // 1-2. The file, compilation, and the kernel's name and signature in what was built.
    let (compiled, built) = super::compile_item::compiles(spec, rubric, cfg, exe, path, &name)?;
    items.push(compiled);
    if !cfg.device {
        // Decided without a GPU or not, a grade without the GPU items is no grade.
        return Err(Error::NoDevice(
            "not on this grading machine; only the file checks and compilation ran".into(),
        ));
    }
    let Some((plain, jittered)) = built else {
        items.extend(score::not_run(
            rubric,
            &AFTER_COMPILE,
            "not graded: the submission has to compile first",
        ));
        return Ok(());
    };
    let work = Scratch::new()?;
    // From here on the submission runs on the GPU: beside other submissions, or alone with
    // `--exclusive-gpu`; the verdicts that depend on time are taken alone either way.
    let access = if cfg.share_gpu {
        Access::Shared
    } else {
        Access::Exclusive
    };
    let gpu = GpuTurn::take(access, cfg.gpu_wait, cfg.note)?;
    let outcome = on_gpu_items(grader, &work, &name, (&plain, &jittered), &gpu, items);
    waited.set(gpu.waited());
    outcome
}

/// The items that run on the GPU, in order, with the GPU held as `gpu` says.
fn on_gpu_items(
    grader: &Grader,
    work: &Scratch,
    name: &str,
    (plain, jittered): (&compile::Built, &compile::Built),
    gpu: &GpuTurn,
    items: &mut Vec<ItemResult>,
) -> Result<()> {
    let Grader {
        root,
        spec,
        rubric,
        cfg,
        exe,
    } = *grader;
    let ptx_plain = work.write("plain.ptx", plain.ptx.as_bytes())?;
    let ptx_jitter = work.write("jitter.ptx", jittered.ptx.as_bytes())?;
    let on_gpu = Items {
        root,
        spec,
        rubric,
        cfg,
        exe,
        work,
        name,
        code: compile::fingerprint(&plain.ptx),
    };
    // 3. Correctness on random sizes, with jitter; a trial that missed its deadline beside
    // other submissions is run again alone before it counts.
    let (correct, hung) = on_gpu.correctness(&ptx_jitter, gpu)?;
    items.push(correct);
    let deadline = super::items::sanitize_deadline(cfg.sanitize_timeout, hung);
    // 4. The sanitizers, on the small geometry, side by side. globalcheck and sharedcheck are
    // optional items: each runs only when the rubric gives it points. A tool whose item
    // requires one that did not pass (`[requires]`, e.g. correctness) is not run: it scores 0,
    // saying why, since a clean run of a kernel that does not work vouches for nothing.
    let mut skipped = Vec::new();
    let tools: Vec<Tool> = Tool::ALL
        .into_iter()
        .filter(|t| match t {
            Tool::Globalcheck => rubric.globalcheck > 0.0,
            Tool::Sharedcheck => rubric.sharedcheck > 0.0,
            _ => true,
        })
        .filter(|t| {
            let Some(it) = Item::of_tool(*t) else {
                return false;
            };
            let unmet = score::unmet(rubric, it, items);
            if !unmet.is_empty() {
                skipped.push(score::not_judged(rubric, it, &unmet));
            }
            unmet.is_empty()
        })
        .collect();
    // Each run holds the shared lock while it runs (`run`), or nothing more when alone.
    let sanitize = |tools: Vec<Tool>,
                    each: &(dyn Fn(Tool) -> Result<(ItemResult, bool)> + Sync)| {
        crate::proc::pool::run_all(tools, 4, each, |_| {})
    };
    let beside = |tool| gpu.run(|| on_gpu.sanitizer(&ptx_plain, tool, deadline))?;
    let mut judged = Vec::new();
    for it in sanitize(tools.clone(), &beside) {
        judged.push(it?);
    }
    // A tool that missed its deadline beside other submissions runs again alone, and that run
    // is the item. Not after the kernel finished none of its correctness trials (each of
    // those hangs was taken alone): the deadline was cut because a hang is what is expected.
    let again: Vec<usize> = (0..judged.len())
        .filter(|&i| gpu.shared() && !hung && judged[i].1)
        .collect();
    if !again.is_empty() {
        let by_itself = |tool| on_gpu.sanitizer(&ptx_plain, tool, deadline);
        let redo = gpu.alone(|| sanitize(again.iter().map(|&i| tools[i]).collect(), &by_itself))?;
        for (&i, it) in again.iter().zip(redo) {
            judged[i] = it?;
        }
    }
    items.extend(judged.into_iter().map(|(item, _)| item));
    items.extend(skipped);
    items.sort_by_key(|r| Item::ALL.iter().position(|i| *i == r.item));
    // 5. Performance against the course's reference, when the rubric gives it points: a
    // timing, so alone; not when an item it requires did not pass.
    if rubric.performance > 0.0 {
        let unmet = score::unmet(rubric, Item::Performance, items);
        if unmet.is_empty() {
            items.push(gpu.alone(|| on_gpu.performance(&ptx_plain))??);
        } else {
            items.push(score::not_judged(rubric, Item::Performance, &unmet));
        }
    }
    Ok(())
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
            compile: Default::default(),
            gpu_wait: Duration::from_secs(1),
            note: |_| {},
            shrink: false,
            share_gpu: false,
            require_confinement: false,
            confinement: String::new(),
        }
    }
}
