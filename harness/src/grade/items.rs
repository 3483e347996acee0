//! The graded items of one submission, each turned into an [`ItemResult`] with the detail a
//! student reads: compilation, correctness on randomized trials, the sanitizers the rubric scores, and
//! performance against the course's reference kernel. An item returns `Err` only for what is
//! not the submission's fault (a tool missing or failing, a worker lost): the grade is then not
//! given at all ([`super::Grade::not_graded`]).
//!
//! Every problem an item runs is drawn here, in the parent, from the public seed mixed with the
//! secret ([`trial_seed`]), and every comparison with the exact expected results happens here
//! too: the worker ([`super::worker()`]) only ever gets inputs.

use std::ffi::OsString;
use std::path::Path;

use rand::SeedableRng;

use super::config::GradeConfig;
use super::lock::GpuTurn;
use super::rubric::{CorrectCredit, Rubric};
use super::score::{self, Item, ItemResult};
use super::spec::Spec;
use super::worker::{
    self, run_worker, run_worker_once, Place, Scratch, WorkerFiles, WorkerRequest, WorkerResult,
};
use crate::build::compile::{self, BuildOptions};
use crate::errors::{Error, Result};
use crate::judge::sanitize::{self, Outcome, SanitizeConfig, Tool};
use crate::proc::watchdog::{self, Deadline};
use crate::source::exercises::{self, Problem, SizeChoice};

/// The median launch time a timing worker wrote to its response file, in µs; `None` when it
/// wrote none or something else.
fn timing(response: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(response).ok()?;
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// What the items after compilation share: one submission, compiled, about to run on the GPU.
pub(super) struct Items<'a> {
    pub root: &'a Path,
    pub spec: &'a Spec,
    pub rubric: &'a Rubric,
    pub cfg: &'a GradeConfig,
    /// The racegate binary, run as `__grade-worker`.
    pub exe: &'a Path,
    pub work: &'a Scratch,
    /// The submission's file name, as findings and compile errors show it.
    pub name: &'a str,
    /// A hash of the submission's compiled code: mixed into every trial's seed.
    pub code: u64,
}

/// Whether the kernel hung and finished no correctness trial at all (every trial it ran hung,
/// the rest were not run): an infinite loop or a deadlock at every size. A kernel that finished
/// some trials and hung on others (one too slow at the largest sizes) keeps the sanitizers'
/// whole deadline: their small geometry may still finish.
pub(super) fn finished_none(results: &[WorkerResult]) -> bool {
    results.iter().any(|r| matches!(r, WorkerResult::Hang))
        && !results
            .iter()
            .any(|r| matches!(r, WorkerResult::Ran(_) | WorkerResult::Fault(_)))
}

/// The deadline the sanitizer items run under: the configured one, or at most
/// [`crate::judge::sanitize::tool::AFTER_HANG`] when the kernel finished no correctness trial
/// ([`finished_none`]), as the gate cuts its tools.
pub(super) fn sanitize_deadline(
    configured: std::time::Duration,
    hung: bool,
) -> std::time::Duration {
    if hung {
        crate::judge::sanitize::tool::after_hang_deadline(configured, std::time::Duration::ZERO)
    } else {
        configured
    }
}

/// The seed of trial `t`: the public seed mixed with the secret, so students who know the
/// public seed still cannot know the inputs, and with the submission's code (`code`, a hash
/// of its PTX), so the expected values one submission's feedback shows are not the inputs of
/// the next: answers collected from feedback and written into a kernel meet other inputs. The
/// same code gets the same inputs on a regrade.
fn trial_seed(cfg: &GradeConfig, code: u64, t: u32) -> u64 {
    let mut x = cfg.seed
        ^ cfg.secret.rotate_left(29)
        ^ code.rotate_left(7)
        ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

impl Items<'_> {
    /// A problem of the exercise's family, drawn with the seed of trial `t`.
    pub(super) fn problem(&self, t: u32, size: SizeChoice) -> Problem {
        let family = exercises::by_name(&self.spec.family).expect("spec checked the family");
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(trial_seed(self.cfg, self.code, t));
        family.problem(&self.spec.entry(), size, &mut rng)
    }

    /// Correctness on random sizes, with jitter (`ptx` is the jittered build); also whether
    /// the kernel hung without finishing a single trial (the sanitizer items then get a
    /// shorter deadline). A trial that missed its deadline while `gpu` was shared with other
    /// submissions runs again alone, and that run is the trial's result.
    pub(super) fn correctness(&self, ptx: &Path, gpu: &GpuTurn) -> Result<(ItemResult, bool)> {
        let (spec, cfg) = (self.spec, self.cfg);
        let problems: Vec<_> = (0..cfg.trials)
            .map(|t| {
                self.problem(
                    t,
                    SizeChoice::Random {
                        lo: spec.sizes.0,
                        hi: spec.sizes.1,
                    },
                )
            })
            .collect();
        // One worker run on `rest`, whose first trial is trial `first`: beside other submissions
        // (holding the shared lock), or alone when `run_worker` says so. Each trial's schedule
        // and poison come from its place among all the trials, so one run again alone is the
        // same trial.
        let base = problems.first().map(|p| p.label.clone());
        let files = WorkerFiles {
            exe: self.exe,
            work: self.work,
            ptx,
        };
        let run = |first: usize, rest: &[Problem], alone: bool| -> Result<Vec<WorkerResult>> {
            let place = Place {
                first: u32::try_from(first).unwrap_or(u32::MAX),
                base: base.clone(),
            };
            // Its own request and response files: workers may run side by side.
            let tag = format!("correct-{first}");
            let request = WorkerRequest {
                problems: rest,
                jitter: true,
                place: &place,
                tag: &tag,
            };
            let once = || run_worker_once(cfg, &files, &request);
            if alone {
                // Kept until the next run: after a hang the next trial runs alone too.
                gpu.alone_kept(once)?
            } else {
                gpu.run(once)?
            }
        };
        let results = run_worker(&problems, gpu.shared(), &run);
        gpu.give_back();
        let results = results?;
        let mut passed = 0;
        let mut lines = Vec::new();
        let mut wrong_results = false;
        for (t, (p, r)) in problems.iter().zip(&results).enumerate() {
            match r {
                WorkerResult::Ran(actual) => match crate::run::oracle::check(&p.buffers, actual) {
                    None => passed += 1,
                    Some(w) => {
                        wrong_results = true;
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
        let n = problems.len();
        // All-or-nothing unless the rubric opts into proportional credit: a kernel wrong in
        // some runs is a wrong kernel (intermittent wrong results are what races look like).
        let frac = score::correct_fraction(self.rubric.correct_credit, passed, n);
        let mut detail = if passed < n && self.rubric.correct_credit == CorrectCredit::AllOrNothing
        {
            // The smallest failing problem by its size in bytes: the one to try first.
            let smallest = problems
                .iter()
                .zip(&results)
                .filter(|(p, r)| match r {
                    WorkerResult::Ran(actual) => {
                        crate::run::oracle::check(&p.buffers, actual).is_some()
                    }
                    _ => true,
                })
                .min_by_key(|(p, _)| p.buffers.iter().map(|b| b.len_bytes()).sum::<usize>())
                .map(|(p, _)| p.label.clone())
                .unwrap_or_default();
            let why = if passed > 0 {
                ": an intermittent wrong result is a wrong result"
            } else {
                ""
            };
            format!(
                "wrong in {} of {n} runs{why} (smallest failing: {smallest}; sizes {}..{}, \
                 schedule jitter on, seed {})",
                n - passed,
                spec.sizes.0,
                spec.sizes.1,
                cfg.seed
            )
        } else {
            format!(
                "{passed} of {n} randomized trials correct (sizes {}..{}, schedule jitter on, seed {})",
                spec.sizes.0, spec.sizes.1, cfg.seed
            )
        };
        for l in lines.iter().take(5) {
            detail.push_str(&format!("\n  {l}"));
        }
        if lines.len() > 5 {
            detail.push_str(&format!(
                "\n  ... and {} more failing trials",
                lines.len() - 5
            ));
        }
        // The smallest input that shows wrong results: feedback only, the score is above. A
        // search the grading machine cannot run is a note for its operator, not feedback.
        // Not after a hang or a fault: the item names those, and the search would pay for them.
        let stuck = results
            .iter()
            .any(|r| matches!(r, WorkerResult::Hang | WorkerResult::Fault(_)));
        if wrong_results && cfg.shrink && !stuck {
            match gpu.run(|| self.shrink(ptx)) {
                Ok(Some(found)) => detail.push_str(&format!("\n  {found}")),
                Ok(None) => {}
                // Feedback only: the grade stands without it, as for any search that could not run.
                Err(e) => (cfg.note)(&format!(
                    "{}: the search for a smaller failing input could not run: {e}",
                    self.name
                )),
            }
        }
        Ok((
            score::item(self.rubric, Item::Correct, frac, detail),
            finished_none(&results),
        ))
    }

    /// One sanitizer on the small geometry (`ptx` is the plain build), within `timeout`; also
    /// whether it missed that deadline (a verdict that depends on time).
    pub(super) fn sanitizer(
        &self,
        ptx: &Path,
        tool: Tool,
        timeout: std::time::Duration,
    ) -> Result<(ItemResult, bool)> {
        let (rubric, cfg, name) = (self.rubric, self.cfg, self.name);
        let shortened = timeout < cfg.sanitize_timeout;
        // Grading runs only the tools that grade an item (`Tool::ALL` less fencecheck and
        // streamcheck); another is judged as globalcheck's item, whose class it shares.
        let item = Item::of_tool(tool).unwrap_or(Item::Globalcheck);
        let problem = self.problem(1_000_000, SizeChoice::Sanitize);
        let (args, response) = self.work.worker_call(
            &tool.to_string(),
            ptx,
            &[problem],
            false,
            false,
            &Place::default(),
        )?;
        let target: Vec<OsString> = std::iter::once(self.exe.into()).chain(args).collect();
        // The worker takes its inputs from the request, not from a seed.
        // The worker writes its results to `response`, which the grade reads after the run:
        // sharedcheck's confirm runs would overwrite it, so a read of unwritten shared memory
        // stays a finding in grading (the item is optional and worth 0 by default).
        let scfg = SanitizeConfig {
            seed: 0,
            confirm: false,
            ..SanitizeConfig::new(tool, cfg.sanitizer.clone(), timeout, &cfg.arch)
        };
        let r = sanitize::runner::run_target(name, &target, &scfg, self.root)?;
        // A kernel the driver would not load never ran: nothing to pass.
        if let Some(fault) = worker::load_fault(&response) {
            return Ok((
                score::item(rubric, item, 0.0, format!("{tool}: {fault}")),
                false,
            ));
        }
        // A kernel that faulted leaves globalcheck nothing to read back, and it cannot be shown
        // free of races: no points, as for a hang (memcheck names the faulting line).
        if tool.is_own() && matches!(r.outcome, Outcome::Inconclusive(_)) {
            if let Some(fault) = worker::run_fault(&response) {
                return Ok((
                    score::item(
                        rubric,
                        item,
                        0.0,
                        format!(
                            "{tool}: the kernel faulted under it ({fault}); memcheck names the line"
                        ),
                    ),
                    false,
                ));
            }
        }
        let hang = matches!(r.outcome, Outcome::Hang { .. });
        let mut judged = judge_sanitizer(rubric, item, tool, r.outcome, timeout, name)?;
        if hang && shortened {
            judged.detail.push_str(&format!(
                " (the deadline was cut from {:.0} s: the kernel finished none of its correctness trials)",
                cfg.sanitize_timeout.as_secs_f64()
            ));
        }
        Ok((judged, hang))
    }

    /// Performance against the course's reference kernel, on the largest size (`ptx` is the
    /// plain build).
    pub(super) fn performance(&self, ptx: &Path) -> Result<ItemResult> {
        let (spec, rubric, cfg) = (self.spec, self.rubric, self.cfg);
        let Some((file, kernel)) = &spec.reference else {
            return Ok(score::not_run(
                rubric,
                &[Item::Performance],
                "the exercise names no reference kernel",
            )
            .remove(0));
        };
        let problem = self.problem(2_000_000, SizeChoice::Fixed(spec.sizes.1));
        // The course's kernel: compiled once per process, however many submissions a batch holds.
        let ref_ptx = compile::compile_to_cache(
            self.root,
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
        let time = |ptx: &Path, p: &Problem, tag: &str| -> Result<Option<f64>> {
            let (args, response) = self.work.worker_call(
                tag,
                ptx,
                std::slice::from_ref(p),
                false,
                true,
                &Place::default(),
            )?;
            // What the kernel prints (stdout, stderr) is never read: the timing comes back in
            // the response file only.
            watchdog::run(
                self.exe,
                &args,
                &watchdog::Spawn::default(),
                Deadline {
                    idle: cfg.timeout * 4,
                    total: Some(cfg.timeout * 4),
                },
                |_| {},
            )?;
            Ok(timing(&response))
        };
        let (mine, theirs) = (
            time(ptx, &problem, "mine")?,
            time(&ref_ptx, &ref_problem, "reference")?,
        );
        Ok(match (mine, theirs) {
            (Some(m), Some(r)) => {
                let ratio = m / r;
                let rule = &rubric.performance_rule;
                let frac =
                    ((rule.zero_at - ratio) / (rule.zero_at - rule.threshold)).clamp(0.0, 1.0);
                score::item(rubric, Item::Performance, frac, format!("{m:.1} us vs the reference's {r:.1} us ({ratio:.2}x; full points at <= {:.2}x, none at >= {:.2}x) on {}", rule.threshold, rule.zero_at, problem.label))
            }
            (_, None) => {
                return Err(Error::Child(
                    "the course's reference kernel could not be timed".into(),
                ))
            }
            (None, Some(_)) => score::item(
                rubric,
                Item::Performance,
                0.0,
                "could not be timed (the kernel faulted or hung)".into(),
            ),
        })
    }
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

/// A sanitizer item's score from its run. Nothing found is full marks, a finding or a hang
/// none, and an undecided run is the grader's failure (not graded: a person looks). That
/// includes globalcheck's judged limits: leaving the item out instead would let a submission
/// dodge it by adding one volatile access.
fn judge_sanitizer(
    rubric: &Rubric,
    item: Item,
    tool: Tool,
    outcome: Outcome,
    timeout: std::time::Duration,
    name: &str,
) -> Result<ItemResult> {
    Ok(match outcome {
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
        Outcome::Hang { .. } => score::item(rubric, item, 0.0, format!("{tool}: the kernel never finished under the sanitizer (deadlock or infinite loop); killed after {:.0} s", timeout.as_secs_f64())),
        Outcome::Inconclusive(why) => {
            return Err(Error::Child(format!("compute-sanitizer {tool} could not decide: {why}")))
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Only a kernel that never finished a trial counts: one hang among finished trials (too
    /// slow at the largest size) does not, nor a fault, nor nothing run.
    #[test]
    fn a_kernel_finished_no_trial_only_when_every_trial_it_ran_hung() {
        use WorkerResult::*;
        assert!(finished_none(&[Hang, Hang, NotRun, NotRun]));
        assert!(finished_none(&[Hang]));
        assert!(!finished_none(&[Ran(vec![]), Hang, Hang, NotRun]));
        assert!(!finished_none(&[Hang, Ran(vec![]), Hang]));
        assert!(!finished_none(&[Fault("x".into()), Hang]));
        assert!(!finished_none(&[Ran(vec![]), Ran(vec![])]));
        assert!(!finished_none(&[]));
        assert!(!finished_none(&[NotRun]));
    }

    #[test]
    fn only_a_hang_shortens_the_sanitizer_deadline_and_never_lengthens_it() {
        for secs in [1u64, 5, 15, 16, 60, 3600] {
            let d = Duration::from_secs(secs);
            assert_eq!(sanitize_deadline(d, false), d);
            assert_eq!(
                sanitize_deadline(d, true),
                d.min(crate::judge::sanitize::tool::AFTER_HANG)
            );
            assert!(sanitize_deadline(d, true) <= d);
        }
    }

    #[test]
    fn a_timing_comes_from_the_response_file_and_nothing_forged_counts() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("mine.resp");
        assert_eq!(timing(&p), None, "no file, no timing");
        std::fs::write(&p, "250.5").unwrap();
        assert_eq!(timing(&p), Some(250.5));
        // What a kernel's printf would print is no timing, even if it reached the file.
        for forged in ["racegate-time-us 0.001", "0", "-1", "NaN", "inf", ""] {
            std::fs::write(&p, forged).unwrap();
            assert_eq!(timing(&p), None, "{forged:?}");
        }
    }

    #[test]
    fn findings_name_the_students_file() {
        assert_eq!(
            student_paths("Analysis Error reduce at /srv/grader/alice.cu:12 [Write -> Read /srv/grader/alice.cu:13]: Race", "alice.cu"),
            "Analysis Error reduce at alice.cu:12 [Write -> Read alice.cu:13]: Race"
        );
    }

    #[test]
    fn an_undecided_sanitizer_run_is_not_graded_even_a_judged_limit() {
        // A submission must not dodge the globalcheck item by adding a volatile access: a judged
        // limit is a person's call (not graded), like any undecided run.
        let rubric = Rubric {
            compiles: 10.0,
            correct: 40.0,
            racecheck: 15.0,
            synccheck: 10.0,
            memcheck: 10.0,
            initcheck: 5.0,
            globalcheck: 10.0,
            sharedcheck: 0.0,
            performance: 0.0,
            performance_rule: Default::default(),
            correct_credit: Default::default(),
            requires: Default::default(),
        };
        let t = Duration::from_secs(5);
        let limit = format!(
            "{}launch 0 of k has volatile or relaxed/acquire-release atomic loads and stores",
            sanitize::injected::decide::CANNOT_JUDGE
        );
        for (tool, item, why) in [
            (Tool::Globalcheck, Item::Globalcheck, limit),
            (
                Tool::Globalcheck,
                Item::Globalcheck,
                "globalcheck was not loaded into the target".to_string(),
            ),
            (Tool::Racecheck, Item::Racecheck, "no sanitizer".to_string()),
        ] {
            assert!(judge_sanitizer(
                &rubric,
                item,
                tool,
                Outcome::Inconclusive(why),
                t,
                "alice.cu"
            )
            .is_err());
        }
    }

    #[test]
    fn the_secret_changes_every_trial_seed() {
        let mut cfg = GradeConfig::for_tests(Duration::from_secs(1));
        cfg.secret = 0;
        let a = trial_seed(&cfg, 5, 0);
        cfg.secret = 1;
        assert_ne!(a, trial_seed(&cfg, 5, 0));
    }

    #[test]
    fn another_submission_gets_other_inputs_and_a_regrade_the_same() {
        let cfg = GradeConfig::for_tests(Duration::from_secs(1));
        for t in 0..8 {
            assert_eq!(trial_seed(&cfg, 11, t), trial_seed(&cfg, 11, t));
            assert_ne!(trial_seed(&cfg, 11, t), trial_seed(&cfg, 12, t));
        }
    }
}
