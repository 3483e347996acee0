//! The process boundary of a grade: the child worker and the parent's retry loop around it.
//! Part of `grade/`: may import the stages (`proc/` .. `judge/`) and the rest of `grade/`.
//!
//! The child is what `racegate __grade-worker` runs; the parent's side spawns it and starts a
//! fresh one after a fault or a hang.
//!
//! The submission only ever runs in the child, and the child only ever sees inputs: it uploads
//! them, poisons outputs and shared memory, launches, and writes every buffer back to the
//! response file ([`super::wire`]). Nothing the kernel prints can reach the grade (the child's
//! stdout is read for progress lines and otherwise dropped), and a deadline with a process-group
//! kill ends infinite loops and deadlocks.
//!
//! The request, response and PTX files live in a [`Scratch`] folder, a [`tempfile::TempDir`]
//! that is removed when the grade ends, early `?` returns included. No worker outlives it: every
//! spawn goes through [`watchdog::run`], which returns only once the child has exited or its
//! whole process group has been killed.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::config::GradeConfig;
pub(super) use super::wire::Place;
use super::wire::{self, Bytes, Record};
use crate::build::compile;
use crate::errors::{Error, Result};
use crate::proc::watchdog::{self, Deadline, Exit, Spawn};
use crate::run::launch::{Gpu, RunOptions};
use crate::source::exercises::Problem;

/// A private scratch folder for one grade's PTX, request and response files, inside racegate's
/// cache folder (so `RACEGATE_CACHE` moves it too).
pub(super) struct Scratch(tempfile::TempDir);

impl Scratch {
    pub(super) fn new() -> Result<Scratch> {
        let cache = compile::cache_dir()?;
        std::fs::create_dir_all(&cache).map_err(|e| Error::io("creating", &cache, e))?;
        let dir = tempfile::Builder::new()
            .prefix("grade-")
            .tempdir_in(&cache)
            .map_err(|e| Error::io("creating a scratch folder in", &cache, e))?;
        Ok(Scratch(dir))
    }

    pub(super) fn path(&self) -> &Path {
        self.0.path()
    }

    pub(super) fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let p = self.path().join(name);
        std::fs::write(&p, bytes).map_err(|e| Error::io("writing", &p, e))?;
        Ok(p)
    }

    /// Writes the request `TAG.req` for `problems` and returns the `__grade-worker` arguments:
    /// with `--time` when `time`, else with a fresh response file `TAG.resp`, whose path comes
    /// back too.
    pub(super) fn worker_call(
        &self,
        tag: &str,
        ptx: &Path,
        problems: &[Problem],
        jitter: bool,
        time: bool,
        place: &Place,
    ) -> Result<(Vec<OsString>, PathBuf)> {
        let request = self.write(
            &format!("{tag}.req"),
            &wire::encode_request(problems, jitter, place),
        )?;
        let response = self.path().join(format!("{tag}.resp"));
        // An earlier response left there would be read as this run's.
        match std::fs::remove_file(&response) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io("removing", &response, e))
            }
            _ => {}
        }
        let mut args: Vec<OsString> = vec![
            crate::proc::subcommands::GRADE_WORKER.into(),
            "--ptx".into(),
            ptx.into(),
            "--request".into(),
            request.into(),
        ];
        // The response file is the worker's one channel back, for timings too: stdout and
        // stderr carry the kernel's printf and are never read for results.
        args.extend(["--response".into(), response.clone().into()]);
        if time {
            args.push("--time".into());
        }
        Ok((args, response))
    }
}

/// How the fault of a module the driver would not load begins (the kernel never ran).
pub(super) const LOAD_FAULT: &str = "the kernel's module did not load: ";

/// The fault a response file holds for a module that did not load, if it holds one.
pub(super) fn load_fault(response: &Path) -> Option<String> {
    let bytes = std::fs::read(response).ok()?;
    wire::decode_response(&bytes)
        .into_iter()
        .find_map(|r| match r {
            Record::Fault(f) if f.starts_with(LOAD_FAULT) => Some(f),
            _ => None,
        })
}

/// The fault a response file holds for a kernel that ran and faulted (an illegal address, say),
/// if it holds one; a module that did not load is [`load_fault`]'s.
pub(super) fn run_fault(response: &Path) -> Option<String> {
    let bytes = std::fs::read(response).ok()?;
    wire::decode_response(&bytes)
        .into_iter()
        .find_map(|r| match r {
            Record::Fault(f) if !f.starts_with(LOAD_FAULT) => Some(f),
            _ => None,
        })
}

/// What became of one problem, as the parent sees it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum WorkerResult {
    /// Every buffer's bytes after the launch.
    Ran(Vec<Vec<u8>>),
    Fault(String),
    /// The worker passed its deadline on this problem and was killed.
    Hang,
    NotRun,
}

impl WorkerResult {
    /// Whether what other submissions do on the GPU could have made this result: a missed
    /// deadline (they slow the kernel down), or memory the device did not have (they hold
    /// some). Such a result beside others is taken again alone ([`run_worker`]).
    fn may_be_a_neighbours(&self) -> bool {
        match self {
            WorkerResult::Hang => true,
            WorkerResult::Fault(e) => e.contains("OUT_OF_MEMORY"),
            WorkerResult::Ran(_) | WorkerResult::NotRun => false,
        }
    }
}

impl From<Record> for WorkerResult {
    fn from(r: Record) -> Self {
        match r {
            Record::Ran(bufs) => WorkerResult::Ran(bufs.into_iter().map(|b| b.0).collect()),
            Record::Fault(e) => WorkerResult::Fault(e),
        }
    }
}

/// One worker process on the problems given (the first at the index given among the item's),
/// alone on the GPU when the flag says so. Called from several threads at once when a kernel
/// keeps faulting ([`run_worker`]).
pub(super) type RunWorker<'a> =
    dyn Fn(usize, &[Problem], bool) -> Result<Vec<WorkerResult>> + Sync + 'a;

/// How many single-problem workers run side by side once a kernel has faulted at the first
/// problem of two workers in a row.
const FAULTING_AT_ONCE: usize = 4;

/// Runs `problems` through workers (`run`: one worker process on the problems given, alone on
/// the GPU when asked): after a fault (the CUDA context is gone) or a hang, a fresh worker takes
/// the remaining problems, so one bad size costs one trial, not the rest. After two hangs the
/// remaining trials are not run: a kernel that never ends would otherwise cost a full deadline
/// per trial. Sharing the GPU, after two workers in a row that each ended at a fault on their
/// first problem, the remaining problems run one per worker, a few side by side: each would end its worker
/// anyway, and one after another they cost a worker's start each (H200 run 29: a submission
/// that traps on every trial took eight workers, 14 s, at the grading batch's end).
///
/// When the GPU is `shared` with other submissions, a missed deadline (a verdict that depends on
/// time) or a fault for memory the device did not have (others hold some) is not final: the
/// problem runs again alone, and that run is its result. After a hang taken alone
/// the next problems run alone one at a time until one finishes (a kernel that hangs would
/// otherwise pay a deadline beside others and another alone for each), then beside others again.
/// Side by side, each problem's result is taken in order as if it had run next: one that
/// finished stands, one that hung beside others runs again alone, and after the second hang
/// the rest count as not run.
pub(super) fn run_worker(
    problems: &[Problem],
    shared: bool,
    run: &RunWorker<'_>,
) -> Result<Vec<WorkerResult>> {
    let mut results = Vec::with_capacity(problems.len());
    let mut hangs = 0;
    // Whether the next run is alone (in a batch that shares the GPU, after a hang).
    let mut alone = false;
    // Workers in a row that ended at a fault on their first problem.
    let mut faulted_first = 0;
    while results.len() < problems.len() && hangs < 2 {
        let first = results.len();
        let rest = &problems[first..];
        let ran_alone = alone;
        // Only beside others: a run alone from the start has no rerun alone for a hang its
        // own workers beside it could have caused.
        let split = shared && faulted_first >= 2 && !alone;
        let (rest, part) = if split {
            let each = crate::proc::pool::run_all(
                (0..rest.len()).collect(),
                FAULTING_AT_ONCE,
                |k| run(first + k, &rest[k..=k], false),
                |_| {},
            );
            // Up to the first that could not run (a worker that did not start): the loop goes
            // on from it one worker at a time, as without the side-by-side runs, and that run's
            // error, if it comes again, is the item's.
            let part: Vec<WorkerResult> = each
                .into_iter()
                .map_while(|r| {
                    r.ok()
                        .map(|p| p.into_iter().next().unwrap_or(WorkerResult::NotRun))
                })
                .collect();
            (rest, part)
        } else {
            let rest = if alone { &rest[..1] } else { rest };
            (rest, run(first, rest, alone)?)
        };
        if split && part.is_empty() {
            faulted_first = 0;
            continue; // the first could not run side by side: again, one worker at a time
        }
        let done = part
            .iter()
            .position(|r| *r == WorkerResult::NotRun)
            .unwrap_or(part.len());
        if done == 0 {
            break; // the worker ended cleanly without running anything: do not spin
        }
        faulted_first = match &part[..] {
            _ if split => 0,
            [WorkerResult::Fault(_), WorkerResult::NotRun, ..] | [WorkerResult::Fault(_)] => {
                faulted_first + 1
            }
            _ => 0,
        };
        for (k, (p, mut r)) in rest.iter().zip(part.into_iter().take(done)).enumerate() {
            if hangs >= 2 {
                break;
            }
            if shared && !ran_alone && r.may_be_a_neighbours() {
                r = run(first + k, std::slice::from_ref(p), true)?
                    .into_iter()
                    .next()
                    .unwrap_or(WorkerResult::NotRun);
            }
            match r {
                WorkerResult::Hang => {
                    hangs += 1;
                    alone = shared;
                }
                WorkerResult::Ran(_) | WorkerResult::Fault(_) => alone = false,
                WorkerResult::NotRun => {}
            }
            results.push(r);
        }
    }
    results.resize(problems.len(), WorkerResult::NotRun);
    Ok(results)
}

/// The files a grading worker runs with: the racegate binary it is (as `__grade-worker`), the
/// scratch folder its request and response files go in, and the submission's PTX it loads.
#[derive(Clone, Copy)]
pub(super) struct WorkerFiles<'a> {
    pub exe: &'a Path,
    pub work: &'a Scratch,
    pub ptx: &'a Path,
}

/// What one worker process is asked to run: its problems, whether under jitter (schedule and
/// poison), their place among their item's problems, and the tag that names its request and
/// response files (workers side by side need tags of their own).
#[derive(Clone, Copy)]
pub(super) struct WorkerRequest<'a> {
    pub problems: &'a [Problem],
    pub jitter: bool,
    pub place: &'a Place,
    pub tag: &'a str,
}

/// One worker process on `files` and `request`; its response file read back. The first
/// problem without a record is where the worker hung or died, unless it exited cleanly after
/// a fault.
pub(super) fn run_worker_once(
    cfg: &GradeConfig,
    files: &WorkerFiles,
    request: &WorkerRequest,
) -> Result<Vec<WorkerResult>> {
    let total = cfg.timeout.saturating_mul(
        u32::try_from(request.problems.len())
            .unwrap_or(u32::MAX)
            .saturating_add(1),
    );
    run_worker_within(files, request, cfg.timeout, total)
}

/// One worker process on `files` and `request` with explicit deadlines: `idle` per problem,
/// `total` for the whole call (the minimal-repro search's time budget). Past either, the
/// problem in hand is a hang and the rest are not run; a fault ends the call the same way. No
/// fresh worker.
pub(super) fn run_worker_within(
    files: &WorkerFiles,
    request: &WorkerRequest,
    idle: std::time::Duration,
    total: std::time::Duration,
) -> Result<Vec<WorkerResult>> {
    let WorkerFiles { exe, work, ptx } = *files;
    let WorkerRequest {
        problems,
        jitter,
        place,
        tag,
    } = *request;
    let (args, response) = work.worker_call(tag, ptx, problems, jitter, false, place)?;
    // The child's stdout is the submission's printf: read and dropped, it never reaches the
    // grade. The child needs no secret (it gets inputs, not seeds): it does not get the
    // variable at all. The worker prints a line after each problem, so the idle deadline is
    // per problem.
    // One stream: one hardware queue (`device::one_queue`).
    let spawn = Spawn {
        env: crate::run::device::one_queue(),
        remove: vec!["RACEGATE_GRADE_SECRET".into()],
        ..Spawn::default()
    };
    let finished = watchdog::run(
        exe,
        &args,
        &spawn,
        Deadline {
            idle,
            total: Some(total),
        },
        |_| {},
    )?;
    // ignored: a worker that died before writing leaves none; every problem then reads as not run, judged below
    let bytes = std::fs::read(&response).unwrap_or_default();
    let mut results = read_response(&bytes, problems.len());
    let after_fault = results.iter().any(|r| matches!(r, WorkerResult::Fault(_)));
    if let Some(i) = results.iter().position(|r| *r == WorkerResult::NotRun) {
        // A kernel's fault is a record and a clean exit; a hang is ours to end. Anything else
        // (an exit code, a signal: the worker could not open the GPU or read its files) is
        // the grading machine's failure, not the submission's.
        let last = finished.stderr.lines().last().unwrap_or("").to_string();
        results[i] = match finished.exit {
            Exit::TimedOut => WorkerResult::Hang,
            Exit::Code(0) if after_fault => return Ok(results),
            Exit::Code(c) => {
                return Err(Error::Child(format!(
                    "the grading worker exited with code {c} before finishing: {last}"
                )))
            }
            Exit::Signal(s) => {
                return Err(Error::Child(format!(
                    "the grading worker was killed by signal {s}: {last}"
                )))
            }
        };
    }
    Ok(results)
}

/// The results of `n` problems from a response file: problems past its last whole record were
/// not run (yet).
fn read_response(bytes: &[u8], n: usize) -> Vec<WorkerResult> {
    let mut out: Vec<WorkerResult> = wire::decode_response(bytes)
        .into_iter()
        .map(WorkerResult::from)
        .collect();
    out.resize(n, WorkerResult::NotRun);
    out
}

/// The worker: runs each requested problem and appends its buffers (or the fault) to the
/// response file, flushing after each, so a later hang keeps the earlier results. With `time`,
/// writes the median launch time of the first problem (µs, as text) there instead.
pub fn worker(ptx: &Path, request: &Path, response: Option<&Path>, time: bool) -> Result<()> {
    let bytes = std::fs::read(request).map_err(|e| Error::io("reading", request, e))?;
    let (jitter, problems, place) =
        wire::decode_request(&bytes).map_err(|e| Error::input(request.display().to_string(), e))?;
    let text = std::fs::read_to_string(ptx).map_err(|e| Error::io("reading", ptx, e))?;
    let gpu = Gpu::open()?;
    let module = match gpu.load(&text) {
        Ok(m) => m,
        // The driver refusing the submission's code (too much shared memory, say) is the
        // submission's fault: a record, and a clean exit. A PTX too new for the driver is ours.
        Err(Error::Cuda { source, during }) if !time && !machine_fault(&source) => {
            let response = response.ok_or_else(|| Error::Usage("--response is required".into()))?;
            let record = Record::Fault(format!("{LOAD_FAULT}CUDA error during {during}: {source}"));
            return std::fs::write(response, wire::encode_record(&record))
                .map_err(|e| Error::io("writing", response, e));
        }
        Err(e) => return Err(e),
    };
    if time {
        let p = problems
            .first()
            .ok_or_else(|| Error::Usage("empty request".into()))?;
        let mut samples = Vec::new();
        gpu.bare_loop(&module, p, 3)?;
        for _ in 0..7 {
            samples.push(gpu.bare_loop(&module, p, 10)?.as_secs_f64() * 1e5);
        }
        samples.sort_by(f64::total_cmp);
        let response = response.ok_or_else(|| Error::Usage("--response is required".into()))?;
        let median = samples[samples.len() / 2].to_string();
        return std::fs::write(response, median).map_err(|e| Error::io("writing", response, e));
    }
    let response = response.ok_or_else(|| Error::Usage("--response is required".into()))?;
    let mut out =
        std::fs::File::create(response).map_err(|e| Error::io("creating", response, e))?;
    let keys = trial_keys(&place, &problems);
    for (t, (p, (seed, poison))) in problems.iter().zip(keys).enumerate() {
        let opts = RunOptions {
            jitter_seed: jitter.then_some(seed),
            poison_shared: jitter,
            poison_outputs: jitter,
            poison,
        };
        let record = match gpu.run(&module, p, opts) {
            Ok(bufs) => Record::Ran(bufs.into_iter().map(Bytes).collect()),
            Err(e) => Record::Fault(e.to_string()),
        };
        out.write_all(&wire::encode_record(&record))
            .and_then(|_| out.flush())
            .map_err(|e| Error::io("writing", response, e))?;
        println!("racegate-grade-progress {t}");
        if matches!(record, Record::Fault(_)) {
            break; // the context is gone
        }
    }
    Ok(())
}

/// A module load error that says the machine, not the code, is at fault.
fn machine_fault(e: &cudarc::driver::DriverError) -> bool {
    use cudarc::driver::sys::CUresult::*;
    matches!(
        e.0,
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUDA_ERROR_JIT_COMPILER_NOT_FOUND
            | CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUDA_ERROR_OUT_OF_MEMORY
            | CUDA_ERROR_NOT_INITIALIZED
            | CUDA_ERROR_DEINITIALIZED
            | CUDA_ERROR_NO_DEVICE
            | CUDA_ERROR_INVALID_CONTEXT
    )
}

/// Each problem's jitter seed and poison in a request at `place` ([`trial_key`]).
fn trial_keys(place: &Place, problems: &[Problem]) -> Vec<(u64, u32)> {
    let base = place
        .base
        .clone()
        .or_else(|| problems.first().map(|p| p.label.clone()))
        .unwrap_or_default();
    problems
        .iter()
        .enumerate()
        .map(|(t, p)| trial_key(&base, place.first as usize + t, &p.label))
        .collect()
}

/// The jitter seed and the poison of the problem labelled `label` at place `at` of an item
/// whose first problem is labelled `base`: from its place in the item, whatever request it
/// came in. The seed mixes the label and the place: two problems of one size (the minimal-repro
/// search runs each size more than once) get different schedules.
fn trial_key(base: &str, at: usize, label: &str) -> (u64, u32) {
    let seed =
        0x5eed ^ compile::fingerprint(label) ^ (at as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (seed, problem_poison(base, at))
}

/// The poison of the problem at place `at` of an item: one base for the whole item (`base`,
/// its first problem's label), then the trial rotation of [`crate::run::poison::poison`], so
/// consecutive problems take 0xFFFFFFFF, zero and a random word in turn: an unwritten element
/// reads differently in each, whatever sizes the labels name (a base per problem made the turn
/// a coin toss).
fn problem_poison(base: &str, at: usize) -> u32 {
    crate::run::poison::poison(
        compile::fingerprint(base),
        u32::try_from(at).unwrap_or(u32::MAX),
    )
}

// The tests: the retry loop with stand-in workers, the scratch folder, the wire's edges.
#[cfg(test)]
mod tests;
