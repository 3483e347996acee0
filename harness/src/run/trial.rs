//! Stress trials, run inside the worker process: draw an input set, then for each trial reset
//! and poison, launch under a new jitter seed, and check every element on the device.
//!
//! An input set (sizes, geometry, inputs and the exact reference) is drawn from a seed and
//! reused by `per_set` consecutive trials, each with its own jitter seed: the reference is
//! computed once per set, data is uploaded once per set, and a trial costs little more than
//! its launches. With `per_set = 1` every trial draws new sizes and inputs.

use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::run::launch::{Gpu, Module, Resident, RunOptions};
use crate::run::oracle::{self, Wrong};
use crate::run::poison::{poison, JUDGE_POISON, POISONS};
use crate::run::schedule::{Calibration, JitterMode, Plan, DEFAULT_BUDGET};
use crate::source::catalog::Case;
use crate::source::exercises::{self, Problem, SizeChoice};

/// The seed of trial `t` of a run started with `master`. Trial 0 uses `master` itself.
pub fn seed(master: u64, t: u32) -> u64 {
    master.wrapping_add(t as u64)
}

/// The first trial of the input set that trial `t` belongs to.
pub fn set_start(t: u32, per_set: u32) -> u32 {
    t - t % per_set.max(1)
}

/// What happened in one trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TrialResult {
    Pass,
    Wrong(Wrong),
    /// A CUDA error while launching or running: the context is gone.
    Fault {
        error: String,
    },
}

/// One line of the worker's output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialOutcome {
    pub trial: u32,
    /// This trial's seed (its jitter seed derives from it).
    pub seed: u64,
    /// The seed its input set was drawn from (the seed of the set's first trial).
    pub set_seed: u64,
    pub problem: String,
    #[serde(flatten)]
    pub result: TrialResult,
    pub micros: u64,
    /// Of `micros`, the time spent drawing, completing, uploading (and calibrating) a new input
    /// set: 0 on a trial that reused its set. Where a stress run's time goes.
    #[serde(default)]
    pub set_micros: u64,
}

/// How a trial's expected outputs are known (the manifest's `oracle` key, resolved to a loaded
/// module); `crate::run::oracle` then compares against them.
pub enum Judge<'a> {
    /// The exercise family computed them exactly on the host.
    Exact,
    /// A trusted kernel (`entry` in `module`) runs on the same inputs first.
    Reference {
        module: &'a Module,
        entry: String,
        tolerance: f32,
    },
    /// The kernel itself runs once per input set; every trial must reproduce that output.
    Determinism { tolerance: f32 },
}

impl Judge<'_> {
    fn tolerance(&self) -> f32 {
        match self {
            Judge::Exact => 0.0,
            Judge::Reference { tolerance, .. } | Judge::Determinism { tolerance } => *tolerance,
        }
    }
}

/// Fills in the expected outputs the judge owns by running its kernel once on the inputs
/// (under its own jitter seed, so determinism compares two different schedules).
fn complete(
    gpu: &Gpu,
    module: &Module,
    problem: &mut Problem,
    judge: &Judge,
    seed: u64,
) -> crate::Result<()> {
    if !problem.buffers.iter().any(|b| b.judge_fills) {
        return Ok(());
    }
    let mut probe = problem.clone();
    let run_module = match judge {
        Judge::Exact => return Ok(()),
        Judge::Reference { module, entry, .. } => {
            if probe.reference_launches.is_empty() {
                for step in &mut probe.launches {
                    step.kernel = entry.clone();
                }
            } else {
                probe.launches = std::mem::take(&mut probe.reference_launches);
            }
            *module
        }
        Judge::Determinism { .. } => module,
    };
    let opts = RunOptions {
        jitter_seed: Some(seed.rotate_left(17)),
        poison_shared: true,
        poison_outputs: true,
        poison: JUDGE_POISON,
    };
    let outputs = gpu.run(run_module, &probe, opts)?;
    for (b, out) in problem.buffers.iter_mut().zip(outputs) {
        if b.judge_fills {
            b.expected = Some(out);
        }
    }
    Ok(())
}

/// The input set trials are currently using.
pub struct InputSet {
    start: u32,
    problem: Problem,
    resident: Resident,
    /// The kernel overwrote racegate's device copies (inputs or expected results): the next
    /// trial uploads the set again instead of comparing against them.
    stale: bool,
    /// What pct plans of this set are sized from (measured on the worker's first set, then
    /// rescaled to each set's geometry, with the barrier count the last trial reported).
    cal: Option<Calibration>,
}

/// The kernel a worker's trials run: its module loaded on `gpu`, the case it comes from, the
/// exercise family that draws its inputs and the judge of its outputs.
#[derive(Clone, Copy)]
pub struct TrialKernel<'a> {
    pub gpu: &'a Gpu,
    pub module: &'a Module,
    pub family: &'a dyn exercises::Exercise,
    pub judge: &'a Judge<'a>,
    pub case: &'a Case,
}

/// What every trial of one run shares.
#[derive(Clone, Copy, Debug)]
pub struct TrialSettings {
    /// The run's seed: trial `t`'s seed is [`seed`]`(master, t)`.
    pub master: u64,
    /// How many consecutive trials reuse one input set.
    pub per_set: u32,
    /// How each input set picks its problem size.
    pub size: SizeChoice,
    /// The jitter each trial runs under.
    pub jitter: JitterMode,
}

/// Runs trial `t` of a run of `kernel` under `settings`, drawing a new input set when `t`
/// starts one.
pub fn run(
    kernel: &TrialKernel,
    settings: TrialSettings,
    t: u32,
    current: &mut Option<InputSet>,
) -> TrialOutcome {
    let TrialKernel {
        gpu,
        module,
        family,
        judge,
        case,
    } = *kernel;
    let TrialSettings {
        master,
        per_set,
        size,
        jitter,
    } = settings;
    let start = std::time::Instant::now();
    let s = set_start(t, per_set);
    let set_seed = seed(master, s);
    let seed = seed(master, t);
    let mut set_micros = 0u64;
    let result = (|| -> crate::Result<TrialResult> {
        if current.as_ref().map(|c| (c.start, c.stale)) != Some((s, false)) {
            let drawn = std::time::Instant::now();
            let previous = current.take().and_then(|c| c.cal);
            let mut problem =
                family.problem(&case.entry, size, &mut ChaCha8Rng::seed_from_u64(set_seed));
            complete(gpu, module, &mut problem, judge, set_seed)?;
            let mut resident = gpu.upload_with(&problem, judge.tolerance() as f64)?;
            let cal = match (jitter, previous) {
                (JitterMode::Pct, Some(c)) => {
                    let (warps, blocks, waves) = gpu.geometry(module, &problem)?;
                    Some(c.rescaled(warps, blocks, waves, None))
                }
                (JitterMode::Pct, None) => Some(gpu.calibrate(module, &problem, &mut resident)?),
                _ => None,
            };
            *current = Some(InputSet {
                start: s,
                problem,
                resident,
                stale: false,
                cal,
            });
            set_micros = u64::try_from(drawn.elapsed().as_micros()).unwrap_or(u64::MAX);
        }
        let set = current.as_mut().expect("just set");
        let jitter_seed = seed ^ 0x9e37_79b9_7f4a_7c15;
        let opts = RunOptions {
            jitter_seed: (jitter != JitterMode::None).then_some(jitter_seed),
            poison_shared: true,
            poison_outputs: true,
            poison: poison(master, t),
        };
        let plan = plan_for(jitter, jitter_seed, set.cal.as_ref());
        let counts =
            gpu.run_planned(module, &set.problem, &mut set.resident, opts, plan.as_ref())?;
        if let (Some(c), n) = (set.cal.as_mut(), set.resident.instances) {
            if n > 0 {
                c.instances = n;
            }
        }
        if counts.iter().all(|c| *c == 0) {
            return Ok(TrialResult::Pass);
        }
        let actual = gpu.read_back(&mut set.resident)?;
        let tolerance = judge.tolerance() as f64;
        let lenient = tolerance > 0.0
            || set
                .problem
                .buffers
                .iter()
                .any(|b| !b.compare.is_exact() || b.may_stay_unwritten);
        let problem = &set.problem;
        Ok(
            match oracle::check_within(&problem.buffers, &actual, &problem.sizes, tolerance) {
                Some(mut w) => {
                    w.cause = poison_cause(gpu, module, set, opts, plan.as_ref())?;
                    TrialResult::Wrong(w)
                }
                // The results are right but the device compare saw a difference: either the
                // comparison allows it (a tolerance, a free order, an ignored buffer), or the
                // kernel changed one of racegate's own device copies.
                None => match clobbered(problem, &gpu.read_references(&set.resident)?) {
                    None if lenient => TrialResult::Pass,
                    found => TrialResult::Fault {
                        error: match found {
                            Some(name) => {
                                set.stale = true; // the next trial must not trust these copies
                                format!(
                                    "the kernel wrote outside its buffers: racegate's device copy \
                                 of `{name}` changed under it (an out-of-bounds write; memcheck \
                                 names the line)"
                                )
                            }
                            None => {
                                "the device compare found a difference the host compare does not: \
                             racegate bug"
                                    .into()
                            }
                        },
                    },
                },
            },
        )
    })()
    .unwrap_or_else(|e| TrialResult::Fault {
        error: e.to_string(),
    });
    TrialOutcome {
        trial: t,
        seed,
        set_seed,
        problem: current
            .as_ref()
            .map(|c| c.problem.label.clone())
            .unwrap_or_default(),
        result,
        micros: u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX),
        set_micros,
    }
}

/// The plan a trial of `mode` runs under: drawn from its jitter seed alone (and, for pct, the
/// set's calibration), so a repro line reproduces it. `None` for the dense jitter (the seed in
/// [`RunOptions`] is enough) and for no jitter.
pub fn plan_for(mode: JitterMode, jitter_seed: u64, cal: Option<&Calibration>) -> Option<Plan> {
    match (mode, cal) {
        (JitterMode::Pct, Some(c)) => Some(Plan::pct(jitter_seed, c, DEFAULT_BUDGET)),
        (JitterMode::Pct, None) => Some(Plan::pct(
            jitter_seed,
            &Calibration::unknown(8, 1),
            DEFAULT_BUDGET,
        )),
        _ => None,
    }
}

/// After a wrong trial: the same trial three more times under its own schedule (jitter seed),
/// with poison A, B, then A again. The same output twice under A and another under B means the
/// output depends on the poison alone: the kernel reads memory it never wrote (shared memory,
/// or an output element it reads before writing). Anything else says nothing.
fn poison_cause(
    gpu: &Gpu,
    module: &Module,
    set: &mut InputSet,
    opts: RunOptions,
    plan: Option<&Plan>,
) -> crate::Result<Option<String>> {
    let mut outputs = Vec::new();
    for p in [POISONS[0], POISONS[1], POISONS[0]] {
        gpu.run_planned(
            module,
            &set.problem,
            &mut set.resident,
            RunOptions { poison: p, ..opts },
            plan,
        )?;
        let all = gpu.read_back(&mut set.resident)?;
        // Outputs only: inputs are restored between runs.
        let outs: Vec<Vec<u8>> = set
            .problem
            .buffers
            .iter()
            .zip(all)
            .filter(|(b, _)| {
                !matches!(b.init, crate::source::exercises::Init::Data(_)) || b.expected.is_some()
            })
            .map(|(_, o)| o)
            .collect();
        outputs.push(outs);
    }
    Ok(depends_on_poison(&outputs).then(|| {
        format!(
            "reads memory it never wrote: rerun under the same schedule, the output was the same \
             twice with poison {:#010x} and different with poison {:#010x} (shared memory or \
             output elements read before any thread wrote them)",
            POISONS[0], POISONS[1]
        )
    }))
}

/// Whether three reruns of one trial under one schedule, poisoned A, B, A, say the kernel read
/// memory it never wrote: the two runs under A agree (the schedule is reproduced) and the run
/// under B differs. A correct kernel gives the same outputs all three times; a racy one that the
/// schedule does not pin may differ between the two A runs, and is then not blamed on poison.
fn depends_on_poison<T: PartialEq>(outputs: &[T]) -> bool {
    matches!(outputs, [a, b, a2] if a == a2 && a != b)
}

/// The first buffer whose device reference no longer equals the host's copy.
fn clobbered<'p>(problem: &'p Problem, references: &[Option<Vec<u8>>]) -> Option<&'p str> {
    problem.buffers.iter().zip(references).find_map(|(b, r)| {
        let host = match (&b.expected, &b.init) {
            (Some(e), _) => e,
            (None, crate::source::exercises::Init::Data(d)) => d,
            _ => return None,
        };
        (r.as_ref() != Some(host)).then_some(&*b.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_share_input_sets_in_blocks() {
        assert_eq!(
            (0..9).map(|t| set_start(t, 4)).collect::<Vec<_>>(),
            [0, 0, 0, 0, 4, 4, 4, 4, 8]
        );
        assert_eq!(set_start(5, 1), 5);
        assert_eq!(set_start(5, 0), 5, "0 is treated as 1");
    }

    #[test]
    fn a_changed_device_copy_is_named() {
        use crate::source::exercises::{Buffer, Elem, Init};
        let problem = Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: String::new(),
            buffers: vec![
                Buffer::input("A", Elem::U8, vec![1, 2]),
                Buffer {
                    compare: Default::default(),
                    may_stay_unwritten: false,
                    name: "C".into(),
                    elem: Elem::U8,
                    init: Init::Poison(2),
                    expected: Some(vec![7, 8]),
                    judge_fills: false,
                },
                Buffer {
                    compare: Default::default(),
                    may_stay_unwritten: false,
                    name: "scratch".into(),
                    elem: Elem::U8,
                    init: Init::Poison(2),
                    expected: None,
                    judge_fills: false,
                },
            ],
            launches: vec![],
        };
        let intact = vec![Some(vec![1, 2]), Some(vec![7, 8]), None];
        assert_eq!(clobbered(&problem, &intact), None);
        let hit = vec![Some(vec![1, 2]), Some(vec![7, 0]), None];
        assert_eq!(clobbered(&problem, &hit), Some("C"));
    }

    /// The poison decision on the three reruns (A, B, A): an uninitialized read differs under
    /// B and agrees under A twice; a correct kernel agrees all three times; a run whose two A
    /// runs disagree (a race the schedule does not pin) is not blamed on poison.
    #[test]
    fn only_a_difference_under_the_other_poison_alone_is_a_read_of_unwritten_memory() {
        let out = |v: &[u8]| vec![v.to_vec()];
        // An uninitialized read: the poison shows through.
        assert!(depends_on_poison(&[
            out(&[0xff, 1]),
            out(&[0, 1]),
            out(&[0xff, 1])
        ]));
        // A correct kernel: the same outputs whatever the poison.
        assert!(!depends_on_poison(&[
            out(&[7, 1]),
            out(&[7, 1]),
            out(&[7, 1])
        ]));
        // A race: the two runs under one poison disagree.
        assert!(!depends_on_poison(&[
            out(&[1, 1]),
            out(&[0, 1]),
            out(&[2, 1])
        ]));
        // Anything but three runs decides nothing.
        assert!(!depends_on_poison(&[out(&[1]), out(&[0])]));
    }

    /// A repro line reruns trial `t` as trial `t - start` of a run whose master is the seed of
    /// trial `start` (the first of its input set): it must get the poison the trial had, for
    /// every trial, set length and master, the wrap of the seed included.
    #[test]
    fn a_repro_lines_trial_gets_the_poison_the_failing_trial_had() {
        for master in [0u64, 1, 2, 42, u64::MAX - 5, u64::MAX, 0xdead_beef] {
            for per_set in 1..=7u32 {
                for t in 0..200u32 {
                    let start = set_start(t, per_set);
                    assert_eq!(
                        crate::run::poison::poison(master, t),
                        crate::run::poison::poison(seed(master, start), t - start),
                        "master {master} per_set {per_set} trial {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn trial_zero_uses_the_master_seed() {
        assert_eq!(seed(42, 0), 42);
        assert_eq!(seed(u64::MAX, 1), 0, "wraps");
    }
}
