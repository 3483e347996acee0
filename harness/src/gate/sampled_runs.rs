//! A program gate's tool runs as its launch counts make them: each compute-sanitizer tool in
//! the passes of [`super::sampling::plan`], judged as one run ([`super::sampling::merge`]);
//! racegate's own tools told to sample in the injected tool; the report's note of what was judged.

use std::time::Duration;

use super::measure::Hold;
use super::sampling::{describe, merge, own_tools_checked, plan, LaunchCounts, Sampling};
use crate::judge::sanitize::{Outcome, SanitizerRun};
use crate::run::lease::Access;

/// The sanitizer options by which a user chooses launches themselves (`--sanitizer-arg`): then
/// racegate does not sample.
const USER_FILTERS: [&str; 6] = [
    "--kernel-name",
    "--kernel-name-exclude",
    "--launch-count",
    "--launch-skip",
    "-c",
    "-s",
];

/// The program a group of tools runs on: the subject of its findings, the command that starts
/// it and the folder its findings' paths are relative to.
#[derive(Clone, Copy)]
pub struct ToolTarget<'a> {
    /// The subject of its findings (the program's name in the report).
    pub subject: &'a str,
    /// The command the tools launch: the program and its arguments, behind `/usr/bin/env` when
    /// it has its own working folder or variables.
    pub command: &'a [std::ffi::OsString],
    /// The folder finding paths are made relative to.
    pub root: &'a std::path::Path,
}

/// A program gate's sampling, decided once its launches are counted.
pub struct Sampled {
    sampling: Option<Sampling>,
    counts: Option<LaunchCounts>,
    /// The user chose launches with `--sanitizer-arg`.
    user_filter: bool,
}

impl Sampled {
    pub fn new(cfg: &super::GateConfig, counts: Option<&LaunchCounts>) -> Sampled {
        // `--launch-count 4`, `--launch-count=4`, and the short forms with the value attached
        // (`-c4`).
        let user_filter = cfg.sanitizer_args.iter().any(|a| {
            USER_FILTERS
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
                || ["-c", "-s"].iter().any(|f| {
                    a.strip_prefix(f)
                        .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                })
        });
        Sampled {
            sampling: cfg.sampling,
            counts: counts.cloned(),
            user_filter,
        }
    }

    fn on(&self) -> Option<Sampling> {
        self.sampling.filter(|_| !self.user_filter)
    }

    /// racegate's own tools' sampling (`RACEGATE_GC_SAMPLE`), when on.
    pub fn own_first(&self) -> Option<u64> {
        self.on().map(|s| s.first)
    }

    /// What the report says of the sampling, once per program.
    pub fn note(&self, subject: &str) -> Option<String> {
        self.sampling?;
        if self.user_filter {
            return Some(format!(
                "{subject}: launches not sampled: --sanitizer-arg chooses the kernels or \
                 launches compute-sanitizer checks"
            ));
        }
        let s = self.on()?;
        let Some(counts) = &self.counts else {
            return Some(format!(
                "{subject}: compute-sanitizer checked every launch (no run under jitter counted \
                 the program's launches); racegate's own tools checked each kernel's first {} \
                 launches and then each numbered by a power of two",
                s.first
            ));
        };
        let busy: Vec<String> = counts
            .0
            .iter()
            .filter(|(_, &n)| n > s.first + s.later)
            .map(|(k, &n)| {
                let own = own_tools_checked(n, s.first);
                format!(
                    "{k} ({n} launches: compute-sanitizer checks {}, racegate's own tools {own})",
                    s.first + s.later
                )
            })
            .collect();
        if busy.is_empty() {
            return Some(format!(
                "{subject}: every launch checked ({} kernel(s), none launched more than {} times)",
                counts.0.len(),
                s.first + s.later
            ));
        }
        Some(format!(
            "{subject}: launches sampled (--every-launch checks them all): {}; every other \
             kernel's launches checked",
            busy.join("; ")
        ))
    }

    /// Runs one group of tools ([`super::sanitizers::run_groups`]) on `program` holding the
    /// GPU lease shared: a compute-sanitizer tool in the passes of [`plan`] (their findings
    /// together, [`merge`]), the others in one run.
    pub fn run_group(
        &self,
        program: &ToolTarget,
        sc: &crate::judge::sanitize::SanitizeConfig,
        group: &[crate::judge::sanitize::Tool],
        lease: super::measure::Lease,
        part: &mut super::GateRun,
    ) -> crate::Result<Vec<SanitizerRun>> {
        let ToolTarget {
            subject,
            command,
            root,
        } = *program;
        let mut notes = Vec::new();
        let mut once = |sc: &crate::judge::sanitize::SanitizeConfig| {
            let (runs, said) = alone_if_missed(&lease, subject, sc.timeout, || {
                super::sanitizers::run_group_target(subject, command, sc, root, group)
            })?;
            notes.extend(said);
            Ok::<_, crate::Error>(runs)
        };
        let passes = match (group, self.on(), &self.counts) {
            ([tool], Some(s), Some(c)) if !tool.is_own() => plan(c, s),
            _ => Vec::new(),
        };
        if passes.len() < 2 {
            let runs = once(sc)?;
            part.notes.extend(notes);
            return Ok(runs);
        }
        let mut done = Vec::new();
        for p in &passes {
            let mut one = sc.clone();
            one.extra_args.extend(p.args.iter().cloned());
            let run = once(&one)?;
            done.extend(run.into_iter().map(|r| (p.clone(), r)));
        }
        part.notes.extend(notes);
        part.notes.push(describe(subject, group[0].name(), &passes));
        Ok(merge(done))
    }
}

/// The longest deadline a tool run that missed it is run again for with the GPU held alone. A
/// run alone stops every other racegate run on the machine while it waits for those in flight and
/// while it runs; past this, a miss beside at most [`crate::run::lease::DEFAULT_SLOTS`] - 1
/// neighbours (each deadline is 100x or more the program's own time) is the tool's slowness, and
/// the wait would hold the machine for as long again.
pub const RERUN_ALONE_MAX: Duration = Duration::from_secs(300);

/// One run of a group of tools (`attempt`) holding the GPU shared; when a tool of it missed its
/// `deadline` (at most [`RERUN_ALONE_MAX`]) and there is a GPU to hold, the group runs again with
/// the GPU held alone, and that run is the run: a neighbour (another gate, this gate's other
/// tools) may slow a tool past its deadline, not make the program hang. Also what the report
/// says of each such run.
pub(super) fn alone_if_missed<L: Hold>(
    lease: &L,
    subject: &str,
    deadline: Duration,
    attempt: impl Fn() -> crate::Result<Vec<SanitizerRun>>,
) -> crate::Result<(Vec<SanitizerRun>, Vec<String>)> {
    let missed = |runs: &[SanitizerRun]| -> Vec<&'static str> {
        runs.iter()
            .filter(|r| matches!(r.outcome, Outcome::Hang { .. }))
            .map(|r| r.tool.name())
            .collect()
    };
    let (first, _) = lease.with(Access::Shared, &attempt)?;
    let first = first?;
    let beside = missed(&first);
    if beside.is_empty() || !lease.confirms() {
        return Ok((first, Vec::new()));
    }
    if deadline > RERUN_ALONE_MAX {
        let notes = beside
            .iter()
            .map(|tool| {
                format!(
                    "{subject}: {tool} missed its {:.0} s deadline and was not run again with the \
                     GPU held alone (past {:.0} s the wait would hold every other run on the \
                     machine as long)",
                    deadline.as_secs_f64(),
                    RERUN_ALONE_MAX.as_secs_f64()
                )
            })
            .collect();
        return Ok((first, notes));
    }
    let (again, waited) = lease.with(Access::Exclusive, &attempt)?;
    let again = again?;
    let still = missed(&again);
    let notes = beside
        .iter()
        .map(|tool| {
            let alone = match again.iter().find(|r| r.tool.name() == *tool) {
                Some(r) if still.contains(tool) => format!(
                    "missed it again with the GPU held alone ({:.0} s)",
                    r.seconds
                ),
                Some(r) => format!(
                    "run again with the GPU held alone it finished in {:.1} s, and that run \
                     is its verdict",
                    r.seconds
                ),
                None => "the run alone did not report it".to_string(),
            };
            format!(
                "{subject}: {tool} missed its {:.0} s deadline beside other GPU work; {alone} \
                 (waited {:.0} s for the GPU)",
                deadline.as_secs_f64(),
                waited.as_secs_f64()
            )
        })
        .collect();
    Ok((again, notes))
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::time::Duration;

    use super::*;
    use crate::judge::sanitize::Tool;

    /// A stand-in for the GPU lease that records how each run held it.
    struct Recorded {
        gpu: bool,
        held: RefCell<Vec<Access>>,
    }

    impl Hold for Recorded {
        fn confirms(&self) -> bool {
            self.gpu
        }

        fn with<T>(&self, access: Access, f: impl FnOnce() -> T) -> crate::Result<(T, Duration)> {
            self.held.borrow_mut().push(access);
            Ok((f(), Duration::from_secs(7)))
        }

        fn try_alone<T>(&self, f: impl FnOnce() -> T) -> crate::Result<Option<T>> {
            Ok(Some(f()))
        }
    }

    fn run(tool: Tool, outcome: Outcome, seconds: f64) -> SanitizerRun {
        SanitizerRun {
            case: "p".into(),
            tool,
            outcome,
            exit: "killed at the deadline".into(),
            seconds,
            log: String::new(),
            command: "cmd".into(),
        }
    }

    fn hang() -> Outcome {
        Outcome::Hang {
            left_behind: false,
            said: None,
        }
    }

    /// Runs `alone_if_missed` on a group whose runs give `outcomes` one call after another.
    fn judged(
        gpu: bool,
        outcomes: Vec<Vec<(Tool, Outcome, f64)>>,
    ) -> (Vec<SanitizerRun>, Vec<String>, Vec<Access>) {
        judged_by(gpu, Duration::from_secs(120), outcomes)
    }

    fn judged_by(
        gpu: bool,
        deadline: Duration,
        outcomes: Vec<Vec<(Tool, Outcome, f64)>>,
    ) -> (Vec<SanitizerRun>, Vec<String>, Vec<Access>) {
        let lease = Recorded {
            gpu,
            held: RefCell::new(Vec::new()),
        };
        let calls = Cell::new(0);
        let (runs, notes) = alone_if_missed(&lease, "prog", deadline, || {
            let i = calls.get();
            calls.set(i + 1);
            Ok(outcomes[i]
                .iter()
                .map(|(t, o, s)| run(*t, o.clone(), *s))
                .collect())
        })
        .expect("no lease error");
        (runs, notes, lease.held.into_inner())
    }

    #[test]
    fn a_tool_that_missed_its_deadline_beside_others_is_judged_by_its_run_alone() {
        let (runs, notes, held) = judged(
            true,
            vec![
                vec![(Tool::Racecheck, hang(), 120.0)],
                vec![(Tool::Racecheck, Outcome::Clean, 41.5)],
            ],
        );
        assert_eq!(held, [Access::Shared, Access::Exclusive]);
        assert!(matches!(runs[0].outcome, Outcome::Clean), "{runs:?}");
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("racecheck missed its 120 s deadline beside other GPU work")
                && notes[0].contains("finished in 41.5 s")
                && notes[0].contains("waited 7 s"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn a_tool_that_misses_again_alone_stays_past_its_deadline() {
        let (runs, notes, held) = judged(
            true,
            vec![
                vec![
                    (Tool::Globalcheck, hang(), 120.0),
                    (Tool::Sharedcheck, hang(), 120.0),
                ],
                vec![
                    (Tool::Globalcheck, hang(), 120.0),
                    (Tool::Sharedcheck, Outcome::Clean, 30.0),
                ],
            ],
        );
        assert_eq!(held, [Access::Shared, Access::Exclusive]);
        assert!(matches!(runs[0].outcome, Outcome::Hang { .. }));
        assert!(matches!(runs[1].outcome, Outcome::Clean));
        assert!(notes[0].contains("globalcheck") && notes[0].contains("missed it again"));
        assert!(notes[1].contains("sharedcheck") && notes[1].contains("finished in 30.0 s"));
    }

    #[test]
    fn a_run_in_time_or_without_a_gpu_is_not_run_again() {
        let (runs, notes, held) = judged(true, vec![vec![(Tool::Memcheck, Outcome::Clean, 3.0)]]);
        assert_eq!(held, [Access::Shared]);
        assert!(notes.is_empty() && matches!(runs[0].outcome, Outcome::Clean));
        // A deadline past RERUN_ALONE_MAX: the miss stands, and the note says why.
        let (runs, notes, held) = judged_by(
            true,
            Duration::from_secs(900),
            vec![vec![(Tool::Racecheck, hang(), 900.0)]],
        );
        assert_eq!(held, [Access::Shared]);
        assert!(matches!(runs[0].outcome, Outcome::Hang { .. }));
        assert!(notes[0].contains("not run again"), "{notes:?}");
        // Without a GPU there is nothing to hold alone: the miss stands as it was.
        let (runs, notes, held) = judged(false, vec![vec![(Tool::Memcheck, hang(), 120.0)]]);
        assert_eq!(held, [Access::Shared]);
        assert!(notes.is_empty() && matches!(runs[0].outcome, Outcome::Hang { .. }));
    }
}
