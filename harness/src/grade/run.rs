//! The graded run. The parent (this process) owns everything that decides the grade: it draws
//! the problems from the public seed mixed with a secret, computes the exact expected results,
//! and compares. The submission runs in a child racegate process (`__grade-worker`) that only
//! ever sees inputs: it uploads them, poisons outputs and shared memory, launches, and writes
//! every buffer back to a file. Nothing the kernel prints can reach the grade (the child's
//! stdout is ignored), expected results never exist in device memory, inputs are compared with
//! the parent's copy afterwards, and a deadline with a process-group kill ends infinite loops
//! and deadlocks.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::SeedableRng;
use serde::Serialize;

use super::score::{self, Item, ItemResult};
use super::spec::{Rubric, Spec};
use super::submission;
use crate::compile::{self, BuildOptions};
use crate::errors::{Error, Result};
use crate::exercises::{self, Buffer, Init, LaunchStep, SizeChoice};
use crate::launch::{Gpu, RunOptions};
use crate::sanitize::{self, Outcome, SanitizeConfig, Tool};
use crate::watchdog::{self, Deadline, Exit};

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
    /// Whether a CUDA device is there (without one, only the host checks and compilation run).
    pub device: bool,
}

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
    let start = std::time::Instant::now();
    let name = program_name(path);
    let mut items = Vec::new();
    // Time spent waiting for another submission to leave the GPU is not this one's.
    let waited = std::cell::Cell::new(Duration::ZERO);
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
    // 1. The file and the kernel's name and signature.
    let source =
        match submission::read(path).and_then(|s| submission::check_kernels(spec, &s).map(|_| s)) {
            Ok(s) => s,
            Err(p) => {
                items.push(score::item(rubric, Item::Compiles, 0.0, p.to_string()));
                items.extend(score::not_run(
                    rubric,
                    &AFTER_COMPILE,
                    "not graded: the submission has to compile first",
                ));
                return Ok(finish(items));
            }
        };
    // 2. Compilation (device code only; the grader owns all host code).
    let build = |jitter| {
        compile::compile_source(
            root,
            &name,
            &source,
            &BuildOptions {
                arch: cfg.arch.clone(),
                jitter,
                extra: vec![],
            },
        )
    };
    let (plain, jittered) = match (build(false), build(true)) {
        (Ok(p), Ok(j)) => (p, j),
        (Err(e), _) | (_, Err(e)) => {
            let log = match e {
                Error::Compile { log, .. } => log,
                other => other.to_string(),
            };
            items.push(score::item(
                rubric,
                Item::Compiles,
                0.0,
                format!("NVRTC could not compile it:\n{log}"),
            ));
            items.extend(score::not_run(
                rubric,
                &AFTER_COMPILE,
                "not graded: the submission has to compile first",
            ));
            return Ok(finish(items));
        }
    };
    items.push(score::item(
        rubric,
        Item::Compiles,
        1.0,
        format!(
            "compiles; `{}` has the required signature ({})",
            spec.entry, spec.signature
        ),
    ));
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
    let queued = std::time::Instant::now();
    let _gpu = GpuLock::acquire()?;
    waited.set(queued.elapsed());
    let ptx_plain = work.write("plain.ptx", plain.ptx.as_bytes())?;
    let ptx_jitter = work.write("jitter.ptx", jittered.ptx.as_bytes())?;
    // 3. Correctness on random sizes, with jitter.
    items.push(correctness(spec, rubric, cfg, exe, &work, &ptx_jitter)?);
    // 4. The sanitizers, on the small geometry, side by side.
    let sanitizer_items = crate::pool::run_all(
        Tool::ALL.to_vec(),
        4,
        |tool| sanitizer_item(spec, rubric, cfg, exe, &work, &ptx_plain, root, &name, tool),
        |_| {},
    );
    for it in sanitizer_items {
        items.push(it?);
    }
    // 5. Performance against the course's reference, when the rubric gives it points.
    if rubric.performance > 0.0 {
        items.push(performance(
            root, spec, rubric, cfg, exe, &work, &ptx_plain,
        )?);
    }
    Ok(finish(items))
}

/// Only one submission is on the GPU at a time, across threads and processes (a batch, or
/// several graders on one machine). A kernel that floods printf or spins slows every other
/// context on the device (the H200 showed a correct submission taking 60 s instead of 5 s next
/// to a printf flood, and timing out in a batch), and one student's deadlines must not pay for
/// another's kernel. An advisory lock on a file in racegate's cache folder, released on drop.
struct GpuLock(#[allow(dead_code)] std::fs::File);

impl GpuLock {
    fn acquire() -> Result<GpuLock> {
        let dir = compile::cache_dir();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        GpuLock::acquire_at(&dir.join("grade-gpu.lock"))
    }

    fn acquire_at(path: &Path) -> Result<GpuLock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io("opening", path, e))?;
        file.lock().map_err(|e| Error::io("locking", path, e))?;
        Ok(GpuLock(file))
    }
}

/// A private scratch folder for the request and response files.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        let dir = compile::cache_dir().join(format!(
            "grade-{}-{:x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        Ok(Scratch(dir))
    }

    fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).map_err(|e| Error::io("writing", &p, e))?;
        Ok(p)
    }

    /// Writes the request `TAG.req` for `problems` and returns the `__grade-worker` arguments:
    /// with `--time` when `time`, else with a fresh response file `TAG.resp`, whose path comes
    /// back too.
    fn worker_call(
        &self,
        tag: &str,
        ptx: &Path,
        problems: &[crate::exercises::Problem],
        jitter: bool,
        time: bool,
    ) -> Result<(Vec<OsString>, PathBuf)> {
        let request = self.write(&format!("{tag}.req"), &encode_request(problems, jitter))?;
        let response = self.0.join(format!("{tag}.resp"));
        let _ = std::fs::remove_file(&response);
        let mut args: Vec<OsString> = vec![
            crate::subcommands::GRADE_WORKER.into(),
            "--ptx".into(),
            ptx.into(),
            "--request".into(),
            request.into(),
        ];
        if time {
            args.push("--time".into());
        } else {
            args.extend(["--response".into(), response.clone().into()]);
        }
        Ok((args, response))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The seed of trial `t`: the public seed mixed with the secret, so students who know the
/// public seed still cannot know the inputs.
fn trial_seed(cfg: &GradeConfig, t: u32) -> u64 {
    let mut x =
        cfg.seed ^ cfg.secret.rotate_left(29) ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

fn correctness(
    spec: &Spec,
    rubric: &Rubric,
    cfg: &GradeConfig,
    exe: &Path,
    work: &Scratch,
    ptx: &Path,
) -> Result<ItemResult> {
    let family = exercises::by_name(&spec.family).expect("spec checked the family");
    let entry = spec.entry();
    let problems: Vec<_> = (0..cfg.trials)
        .map(|t| {
            let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(trial_seed(cfg, t));
            family.problem(
                &entry,
                SizeChoice::Random {
                    lo: spec.sizes.0,
                    hi: spec.sizes.1,
                },
                &mut rng,
            )
        })
        .collect();
    let results = run_worker(cfg, exe, work, ptx, &problems, true, "correct")?;
    let mut passed = 0;
    let mut lines = Vec::new();
    for (t, (p, r)) in problems.iter().zip(&results).enumerate() {
        match r {
            WorkerResult::Ran(actual) => match crate::oracle::check(&p.buffers, actual) {
                None => passed += 1,
                Some(w) => {
                    let what = if w.input_modified {
                        "modified its input"
                    } else {
                        "wrong elements"
                    };
                    let first = w
                        .first
                        .first()
                        .map(|m| {
                            format!(
                                " (first: [{}] expected {}, got {})",
                                m.index, m.expected, m.actual
                            )
                        })
                        .unwrap_or_default();
                    lines.push(format!(
                        "trial {t} ({}): {what} in `{}`: {} of {}{first}",
                        p.label, w.buffer, w.wrong, w.total
                    ));
                }
            },
            WorkerResult::Fault(e) => {
                lines.push(format!("trial {t} ({}): the kernel faulted: {e}", p.label))
            }
            WorkerResult::Hang => lines.push(format!(
                "trial {t} ({}): no result within {:.0} s (an infinite loop, a deadlock, or far too slow); killed",
                p.label,
                cfg.timeout.as_secs_f64()
            )),
            WorkerResult::NotRun => lines.push(format!(
                "trial {t} ({}): not run (the kernel already hung twice)",
                p.label
            )),
        }
    }
    let frac = passed as f64 / problems.len().max(1) as f64;
    let mut detail = format!(
        "{passed} of {} randomized trials correct (sizes {}..{}, schedule jitter on, seed {})",
        problems.len(),
        spec.sizes.0,
        spec.sizes.1,
        cfg.seed
    );
    for l in lines.iter().take(5) {
        detail.push_str(&format!("\n  {l}"));
    }
    if lines.len() > 5 {
        detail.push_str(&format!(
            "\n  ... and {} more failing trials",
            lines.len() - 5
        ));
    }
    Ok(score::item(rubric, Item::Correct, frac, detail))
}

#[allow(clippy::too_many_arguments)]
fn sanitizer_item(
    spec: &Spec,
    rubric: &Rubric,
    cfg: &GradeConfig,
    exe: &Path,
    work: &Scratch,
    ptx: &Path,
    root: &Path,
    name: &str,
    tool: Tool,
) -> Result<ItemResult> {
    let item = match tool {
        Tool::Racecheck => Item::Racecheck,
        Tool::Synccheck => Item::Synccheck,
        Tool::Memcheck => Item::Memcheck,
        Tool::Initcheck => Item::Initcheck,
    };
    let family = exercises::by_name(&spec.family).expect("checked");
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(trial_seed(cfg, 1_000_000));
    let problem = family.problem(&spec.entry(), SizeChoice::Sanitize, &mut rng);
    let (args, _) = work.worker_call(&tool.to_string(), ptx, &[problem], false, false)?;
    let target: Vec<OsString> = std::iter::once(exe.into()).chain(args).collect();
    let scfg = SanitizeConfig {
        tool,
        sanitizer: cfg.sanitizer.clone(),
        timeout: cfg.sanitize_timeout,
        arch: cfg.arch.clone(),
        keep_xml: None,
        seed: 0,
    };
    let r = sanitize::runner::run_target(name, &target, &scfg, root)?;
    Ok(match r.outcome {
        Outcome::Clean => score::item(rubric, item, 1.0, format!("{tool}: no finding")),
        Outcome::Findings(f) => {
            let mut d = format!("{tool} reported {} finding(s):", f.len());
            for x in f.iter().take(5) {
                let line = x.line();
                d.push_str(&format!("\n  {}", student_paths(&line, name)));
                if line.contains("Host API uninitialized memory access") {
                    d.push_str(" (the grader copied back an output your kernel never wrote)");
                }
            }
            score::item(rubric, item, 0.0, d)
        }
        Outcome::Hang { .. } => score::item(rubric, item, 0.0, format!("{tool}: the kernel never finished under the sanitizer (deadlock or infinite loop); killed after {:.0} s", cfg.sanitize_timeout.as_secs_f64())),
        Outcome::Inconclusive(why) => score::inconclusive(rubric, item, format!("{tool} could not decide ({why}); ask your instructor: this item is not counted against you")),
    })
}

/// Shows the submission's paths as its file name: NVRTC makes the program name absolute with
/// the grader's working directory, which means nothing to a student.
fn student_paths(line: &str, name: &str) -> String {
    line.split(' ')
        .map(|w| match w.find(&format!("/{name}")) {
            Some(i) if w.starts_with('/') => w[i + 1..].to_string(),
            _ => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn performance(
    root: &Path,
    spec: &Spec,
    rubric: &Rubric,
    cfg: &GradeConfig,
    exe: &Path,
    work: &Scratch,
    ptx: &Path,
) -> Result<ItemResult> {
    let Some((file, kernel)) = &spec.reference else {
        return Ok(score::not_run(
            rubric,
            &[Item::Performance],
            "the exercise names no reference kernel",
        )
        .remove(0));
    };
    let family = exercises::by_name(&spec.family).expect("checked");
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(trial_seed(cfg, 2_000_000));
    let problem = family.problem(&spec.entry(), SizeChoice::Fixed(spec.sizes.1), &mut rng);
    // The course's kernel: compiled once per process, however many submissions a batch holds.
    let ref_ptx = compile::compile_to_cache(
        root,
        file,
        &BuildOptions {
            arch: cfg.arch.clone(),
            jitter: false,
            extra: vec![],
        },
    )?;
    let mut ref_problem = problem.clone();
    for s in &mut ref_problem.launches {
        if s.kernel == spec.entry {
            s.kernel = kernel.clone();
        }
    }
    let time = |ptx: &Path, p: &crate::exercises::Problem, tag: &str| -> Result<Option<f64>> {
        let (args, _) = work.worker_call(tag, ptx, std::slice::from_ref(p), false, true)?;
        let mut us = None;
        watchdog::run(
            exe,
            &args,
            &[],
            Deadline {
                idle: cfg.timeout * 4,
                total: Some(cfg.timeout * 4),
            },
            |l| {
                if let Some(v) = l.strip_prefix("racegate-time-us ") {
                    us = v.trim().parse().ok();
                }
            },
        )?;
        Ok(us)
    };
    let (mine, theirs) = (
        time(ptx, &problem, "mine")?,
        time(&ref_ptx, &ref_problem, "reference")?,
    );
    Ok(match (mine, theirs) {
        (Some(m), Some(r)) => {
            let ratio = m / r;
            let rule = &rubric.performance_rule;
            let frac = ((rule.zero_at - ratio) / (rule.zero_at - rule.threshold)).clamp(0.0, 1.0);
            score::item(rubric, Item::Performance, frac, format!("{m:.1} us vs the reference's {r:.1} us ({ratio:.2}x; full points at <= {:.2}x, none at >= {:.2}x) on {}", rule.threshold, rule.zero_at, problem.label))
        }
        _ => score::item(
            rubric,
            Item::Performance,
            0.0,
            "could not be timed (the kernel faulted or hung)".into(),
        ),
    })
}

/// What the worker reported for one problem.
#[derive(Clone, Debug, PartialEq)]
enum WorkerResult {
    Ran(Vec<Vec<u8>>),
    Fault(String),
    Hang,
    NotRun,
}

/// Request file: for each problem its launches and its buffers' initial contents. Expected
/// outputs are never written. Little-endian, length-prefixed.
fn encode_request(problems: &[crate::exercises::Problem], jitter: bool) -> Vec<u8> {
    let mut w = Vec::new();
    put(&mut w, &[jitter as u8]);
    put(&mut w, &(problems.len() as u64).to_le_bytes());
    for p in problems {
        put_blob(
            &mut w,
            serde_json::to_string(&LaunchesWire::from(p))
                .expect("serializable")
                .as_bytes(),
        );
        for b in &p.buffers {
            match &b.init {
                Init::Data(d) => {
                    put(&mut w, &[0]);
                    put_blob(&mut w, d);
                }
                Init::Poison(n) => {
                    put(&mut w, &[1]);
                    put(&mut w, &(*n as u64).to_le_bytes());
                }
                Init::Zero(n) => {
                    put(&mut w, &[2]);
                    put(&mut w, &(*n as u64).to_le_bytes());
                }
            }
        }
    }
    w
}

/// One launch on the wire: kernel, grid, block, and arguments (buffer index or integer).
type LaunchWire = (String, [u32; 3], [u32; 3], Vec<(bool, i64)>);

#[derive(serde::Serialize, serde::Deserialize)]
struct LaunchesWire {
    label: String,
    buffers: usize,
    launches: Vec<LaunchWire>,
}

impl From<&crate::exercises::Problem> for LaunchesWire {
    fn from(p: &crate::exercises::Problem) -> Self {
        LaunchesWire {
            label: p.label.clone(),
            buffers: p.buffers.len(),
            launches: p
                .launches
                .iter()
                .map(|s| {
                    let args = s
                        .args
                        .iter()
                        .map(|a| match a {
                            exercises::Arg::Buf(i) => (true, *i as i64),
                            exercises::Arg::Int(v) => (false, *v as i64),
                        })
                        .collect();
                    (
                        s.kernel.clone(),
                        [s.grid.0, s.grid.1, s.grid.2],
                        [s.block.0, s.block.1, s.block.2],
                        args,
                    )
                })
                .collect(),
        }
    }
}

fn put(w: &mut Vec<u8>, b: &[u8]) {
    w.extend_from_slice(b);
}

fn put_blob(w: &mut Vec<u8>, b: &[u8]) {
    put(w, &(b.len() as u64).to_le_bytes());
    put(w, b);
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], String> {
        if self.0.len() < n {
            return Err("truncated file".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn blob(&mut self) -> std::result::Result<Vec<u8>, String> {
        let n = self.u64()? as usize;
        Ok(self.take(n)?.to_vec())
    }
}

fn decode_request(
    bytes: &[u8],
) -> std::result::Result<(bool, Vec<crate::exercises::Problem>), String> {
    let mut r = Reader(bytes);
    let jitter = r.take(1)?[0] != 0;
    let n = r.u64()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let wire: LaunchesWire = serde_json::from_slice(&r.blob()?).map_err(|e| e.to_string())?;
        let mut buffers = Vec::new();
        for _ in 0..wire.buffers {
            let init = match r.take(1)?[0] {
                0 => Init::Data(r.blob()?),
                1 => Init::Poison(r.u64()? as usize),
                _ => Init::Zero(r.u64()? as usize),
            };
            buffers.push(Buffer {
                name: "buffer".into(),
                elem: crate::exercises::Elem::U8,
                init,
                expected: None,
                judge_fills: false,
            });
        }
        let launches = wire
            .launches
            .into_iter()
            .map(|(kernel, g, b, args)| LaunchStep {
                kernel,
                grid: crate::exercises::Dim3(g[0], g[1], g[2]),
                block: crate::exercises::Dim3(b[0], b[1], b[2]),
                args: args
                    .into_iter()
                    .map(|(buf, v)| {
                        if buf {
                            exercises::Arg::Buf(v as usize)
                        } else {
                            exercises::Arg::Int(v as i32)
                        }
                    })
                    .collect(),
            })
            .collect();
        out.push(crate::exercises::Problem {
            label: wire.label,
            buffers,
            launches,
        });
    }
    Ok((jitter, out))
}

/// Runs `problems` through workers: after a fault (the CUDA context is gone) or a hang, a
/// fresh worker takes the remaining problems, so one bad size costs one trial, not the rest.
/// After two hangs the remaining trials are not run: a kernel that never ends would otherwise
/// cost a full deadline per trial.
fn run_worker(
    cfg: &GradeConfig,
    exe: &Path,
    work: &Scratch,
    ptx: &Path,
    problems: &[crate::exercises::Problem],
    jitter: bool,
    tag: &str,
) -> Result<Vec<WorkerResult>> {
    let mut results = Vec::with_capacity(problems.len());
    let mut hangs = 0;
    while results.len() < problems.len() && hangs < 2 {
        let rest = &problems[results.len()..];
        let part = run_worker_once(cfg, exe, work, ptx, rest, jitter, tag)?;
        let done = part
            .iter()
            .position(|r| *r == WorkerResult::NotRun)
            .unwrap_or(part.len());
        hangs += part[..done]
            .iter()
            .filter(|r| **r == WorkerResult::Hang)
            .count();
        if done == 0 {
            break; // the worker ended cleanly without running anything: do not spin
        }
        results.extend(part.into_iter().take(done));
    }
    results.resize(problems.len(), WorkerResult::NotRun);
    Ok(results)
}

/// One worker process on `problems`; its response file read back. The first problem without
/// a record is where the worker hung or died, unless it exited cleanly after a fault.
fn run_worker_once(
    cfg: &GradeConfig,
    exe: &Path,
    work: &Scratch,
    ptx: &Path,
    problems: &[crate::exercises::Problem],
    jitter: bool,
    tag: &str,
) -> Result<Vec<WorkerResult>> {
    let (args, response) = work.worker_call(tag, ptx, problems, jitter, false)?;
    let total = cfg.timeout * (problems.len() as u32 + 1);
    // The child's stdout is the submission's printf: read and dropped, it never reaches the
    // grade. The child needs no secret (it gets inputs, not seeds); the variable is blanked.
    // The worker prints a line after each problem, so the idle deadline is per problem.
    let finished = watchdog::run(
        exe,
        &args,
        &[("RACEGATE_GRADE_SECRET".into(), String::new())],
        Deadline {
            idle: cfg.timeout,
            total: Some(total),
        },
        |_| {},
    )?;
    let bytes = std::fs::read(&response).unwrap_or_default();
    let mut results = decode_response(&bytes, problems.len());
    let after_fault = results.iter().any(|r| matches!(r, WorkerResult::Fault(_)));
    if let Some(i) = results.iter().position(|r| *r == WorkerResult::NotRun) {
        results[i] = match finished.exit {
            Exit::TimedOut => WorkerResult::Hang,
            Exit::Code(0) if after_fault => return Ok(results),
            Exit::Code(c) => WorkerResult::Fault(format!(
                "the grader's worker exited with code {c}: {}",
                finished.stderr.lines().last().unwrap_or("")
            )),
            Exit::Signal(s) => {
                WorkerResult::Fault(format!("the grader's worker was killed by signal {s}"))
            }
        };
    }
    Ok(results)
}

fn decode_response(bytes: &[u8], n: usize) -> Vec<WorkerResult> {
    let mut out = vec![WorkerResult::NotRun; n];
    let mut r = Reader(bytes);
    for slot in out.iter_mut() {
        let Ok(status) = r.take(1).map(|s| s[0]) else {
            break;
        };
        let res = if status == 0 {
            let Ok(count) = r.u64() else { break };
            let mut bufs = Vec::new();
            for _ in 0..count {
                match r.blob() {
                    Ok(b) => bufs.push(b),
                    Err(_) => return out,
                }
            }
            WorkerResult::Ran(bufs)
        } else {
            match r.blob() {
                Ok(m) => WorkerResult::Fault(String::from_utf8_lossy(&m).into_owned()),
                Err(_) => break,
            }
        };
        *slot = res;
    }
    out
}

/// The worker: runs each requested problem and appends its buffers (or the fault) to the
/// response file, flushing after each, so a later hang keeps the earlier results. With `time`,
/// prints the median launch time of the first problem instead.
pub fn worker(ptx: &Path, request: &Path, response: Option<&Path>, time: bool) -> Result<()> {
    let bytes = std::fs::read(request).map_err(|e| Error::io("reading", request, e))?;
    let (jitter, problems) =
        decode_request(&bytes).map_err(|e| Error::Usage(format!("{}: {e}", request.display())))?;
    let text = std::fs::read_to_string(ptx).map_err(|e| Error::io("reading", ptx, e))?;
    let gpu = Gpu::open()?;
    let module = gpu.load(&text)?;
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
        println!("racegate-time-us {}", samples[samples.len() / 2]);
        return Ok(());
    }
    let response = response.ok_or_else(|| Error::Usage("--response is required".into()))?;
    let mut out =
        std::fs::File::create(response).map_err(|e| Error::io("creating", response, e))?;
    for (t, p) in problems.iter().enumerate() {
        let opts = RunOptions {
            jitter_seed: jitter.then_some(0x5eed ^ compile::fingerprint(&p.label)),
            poison_shared: jitter,
            poison_outputs: jitter,
        };
        let mut rec = Vec::new();
        let fault = match gpu.run(&module, p, opts) {
            Ok(bufs) => {
                rec.push(0);
                put(&mut rec, &(bufs.len() as u64).to_le_bytes());
                for b in &bufs {
                    put_blob(&mut rec, b);
                }
                false
            }
            Err(e) => {
                rec.push(1);
                put_blob(&mut rec, e.to_string().as_bytes());
                true
            }
        };
        out.write_all(&rec)
            .and_then(|_| out.flush())
            .map_err(|e| Error::io("writing", response, e))?;
        println!("racegate-grade-progress {t}");
        if fault {
            break; // the context is gone
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_without_expected_results() {
        let entry = crate::catalog::Entry {
            name: "k".into(),
            params: [("tile".to_string(), 16)].into(),
        };
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(3);
        let p =
            exercises::by_name("matmul")
                .unwrap()
                .problem(&entry, SizeChoice::Fixed(20), &mut rng);
        let bytes = encode_request(std::slice::from_ref(&p), true);
        let expected = p.buffers[2].expected.clone().unwrap();
        assert!(
            !bytes
                .windows(expected.len())
                .any(|w| w == expected.as_slice()),
            "expected results must not be in the request"
        );
        let (jitter, back) = decode_request(&bytes).unwrap();
        assert!(jitter);
        assert_eq!(back[0].launches[0].kernel, "k");
        assert_eq!(back[0].buffers.len(), 3);
        assert!(
            matches!(&back[0].buffers[0].init, Init::Data(d) if Some(d) == match &p.buffers[0].init { Init::Data(x) => Some(x), _ => None })
        );
    }

    #[test]
    fn a_truncated_response_marks_the_rest_not_run() {
        let mut w = Vec::new();
        w.push(0);
        put(&mut w, &1u64.to_le_bytes());
        put_blob(&mut w, &[1, 2, 3]);
        w.push(1);
        put_blob(&mut w, b"error 719");
        let r = decode_response(&w, 4);
        assert_eq!(
            r,
            vec![
                WorkerResult::Ran(vec![vec![1, 2, 3]]),
                WorkerResult::Fault("error 719".into()),
                WorkerResult::NotRun,
                WorkerResult::NotRun
            ]
        );
    }

    /// A stand-in for `racegate __grade-worker`: a shell script that gets the same arguments
    /// (the response file is the 7th).
    fn fake_worker(dir: &Path, script: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("fake-worker.sh");
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn three_problems() -> Vec<crate::exercises::Problem> {
        let entry = crate::catalog::Entry {
            name: "reduce".into(),
            params: [("block".to_string(), 256)].into(),
        };
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(1);
        (0..3)
            .map(|_| {
                exercises::by_name("reduce").unwrap().problem(
                    &entry,
                    SizeChoice::Fixed(300),
                    &mut rng,
                )
            })
            .collect()
    }

    fn config(timeout_ms: u64) -> GradeConfig {
        GradeConfig {
            trials: 3,
            seed: 1,
            secret: 2,
            timeout: Duration::from_millis(timeout_ms),
            sanitize_timeout: Duration::from_secs(1),
            arch: String::new(),
            sanitizer: None,
            device: true,
        }
    }

    /// Three problems through `run_worker`, with `script` standing in for every worker.
    fn run_fake(script: &str, timeout_ms: u64) -> Vec<WorkerResult> {
        let work = Scratch::new().unwrap();
        let exe = fake_worker(&work.0, script);
        let problems = three_problems();
        run_worker(
            &config(timeout_ms),
            &exe,
            &work,
            Path::new("x.ptx"),
            &problems,
            true,
            "t",
        )
        .unwrap()
    }

    #[test]
    fn after_a_fault_a_fresh_worker_takes_the_remaining_trials() {
        // Every worker faults on its first problem and exits cleanly, as the real one does.
        let r = run_fake(
            r"printf '\001\011\000\000\000\000\000\000\000error 719' > $7; echo progress",
            5000,
        );
        assert_eq!(r, vec![WorkerResult::Fault("error 719".into()); 3]);
    }

    #[test]
    fn after_two_hangs_the_remaining_trials_are_not_run() {
        let start = std::time::Instant::now();
        let r = run_fake("sleep 30", 300);
        assert_eq!(
            r,
            vec![WorkerResult::Hang, WorkerResult::Hang, WorkerResult::NotRun]
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn one_submission_at_a_time_holds_the_gpu() {
        // A lock of its own: real grades on this machine take the shared one.
        let work = Scratch::new().unwrap();
        let path = work.0.join("gpu.lock");
        let held = GpuLock::acquire_at(&path).unwrap();
        let other = std::fs::File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "a second grader got the GPU");
        drop(held);
        other.try_lock().expect("released when the grade ends");
    }

    #[test]
    fn findings_name_the_students_file() {
        assert_eq!(
            student_paths("Analysis Error reduce at /srv/grader/alice.cu:12 [Write -> Read /srv/grader/alice.cu:13]: Race", "alice.cu"),
            "Analysis Error reduce at alice.cu:12 [Write -> Read alice.cu:13]: Race"
        );
    }

    #[test]
    fn the_secret_changes_every_trial_seed() {
        let mut cfg = config(1000);
        cfg.secret = 0;
        let a = trial_seed(&cfg, 0);
        cfg.secret = 1;
        assert_ne!(a, trial_seed(&cfg, 0));
    }
}
