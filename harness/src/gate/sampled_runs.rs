//! A program gate's tool runs as its launch counts make them: each compute-sanitizer tool in
//! the passes of [`super::sampling::plan`], judged as one run ([`super::sampling::merge`]);
//! racegate's own tools told to sample in the injected tool; the report's note of what was judged.

use std::time::Duration;

use super::initcheck_confirm;
use super::measure::Hold;
use super::sampling::{describe, merge, own_tools_checked, plan, LaunchCounts, Sampling};
use super::shared_free;
use crate::judge::sanitize::{Outcome, SanitizerRun, Tool};
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
            let (runs, said) = again_if_missed(&lease, subject, sc.timeout, |deadline| {
                let mut sc = sc.clone();
                sc.timeout = deadline;
                super::sanitizers::run_group_target(subject, command, &sc, root, group)
            })?;
            notes.extend(said);
            Ok::<_, crate::Error>(runs)
        };
        // racecheck leaves out the kernels measured to use no shared memory, whether or not
        // launches are sampled (unless the user chose the kernels).
        let skip = match (group, &self.counts) {
            ([Tool::Racecheck], Some(c)) if !self.user_filter => shared_free::skipped(c),
            _ => Vec::new(),
        };
        let passes = match (group, self.on(), &self.counts) {
            ([tool], Some(s), Some(c)) if !tool.is_own() => {
                plan(&shared_free::without(c, &skip), s)
            }
            _ => Vec::new(),
        };
        let passes = shared_free::exclude(passes, &skip);
        if !skip.is_empty() {
            part.notes.push(shared_free::note(subject, &skip));
        }
        if passes.len() < 2 {
            let mut one = sc.clone();
            if let Some(p) = passes.first() {
                one.extra_args.extend(p.args.iter().cloned());
            }
            let runs = once(&one)?;
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
        let merged = merge(done);
        // initcheck does not see the writes of the launches a pass leaves out: its findings
        // from sampled passes are confirmed by a run of every launch before they count.
        if group == [Tool::Initcheck] && initcheck_confirm::needs_confirming(&merged) {
            let mut all = sc.clone();
            if let (Some(s), Some(c)) = (self.on(), &self.counts) {
                let spent: f64 = merged.iter().map(|r| r.seconds).sum();
                all.timeout = initcheck_confirm::deadline(sc.timeout, spent, c, s);
            }
            let every = once(&all)?;
            let (runs, said) = initcheck_confirm::settle(subject, merged, every);
            part.notes.extend(notes);
            part.notes.push(describe(subject, group[0].name(), &passes));
            part.notes.push(said);
            return Ok(runs);
        }
        part.notes.extend(notes);
        part.notes.push(describe(subject, group[0].name(), &passes));
        Ok(merged)
    }
}

/// The longest deadline a tool run that missed it is run again for. Past it, a miss beside at
/// most [`crate::run::lease::DEFAULT_SLOTS`] - 1 neighbours (each deadline is 100x or more the
/// program's own time) is the tool's slowness, and a second run would cost as long again.
pub const RERUN_MAX: Duration = Duration::from_secs(300);

/// One run of a group of tools (`attempt`, given its deadline) holding the GPU shared; when a
/// tool of it missed its `deadline` (at most [`RERUN_MAX`]) and there is a GPU to hold, the group
/// runs again, and that run is the run: a neighbour (another gate, this gate's other tools) may
/// slow a tool past its deadline, not make the program hang. Again with the GPU held alone when
/// nothing else holds it at that moment; otherwise beside the others with twice the deadline,
/// never waiting for the GPU alone: an asker for it stops every new run on the machine until
/// the runs in flight end, which may be other programs' tool runs of many minutes. Also what the
/// report says of each such run.
pub(super) fn again_if_missed<L: Hold>(
    lease: &L,
    subject: &str,
    deadline: Duration,
    attempt: impl Fn(Duration) -> crate::Result<Vec<SanitizerRun>>,
) -> crate::Result<(Vec<SanitizerRun>, Vec<String>)> {
    let missed = |runs: &[SanitizerRun]| -> Vec<&'static str> {
        runs.iter()
            .filter(|r| matches!(r.outcome, Outcome::Hang { .. }))
            .map(|r| r.tool.name())
            .collect()
    };
    let (first, _) = lease.with(Access::Shared, || attempt(deadline))?;
    let first = first?;
    let beside = missed(&first);
    if beside.is_empty() || !lease.confirms() {
        return Ok((first, Vec::new()));
    }
    let secs = deadline.as_secs_f64();
    if deadline > RERUN_MAX {
        let notes = beside
            .iter()
            .map(|tool| {
                format!(
                    "{subject}: {tool} missed its {secs:.0} s deadline and was not run again \
                     (past {:.0} s a second run would cost as long again)",
                    RERUN_MAX.as_secs_f64()
                )
            })
            .collect();
        return Ok((first, notes));
    }
    let (again, how) = match lease.try_alone(|| attempt(deadline))? {
        Some(runs) => (runs?, "with the GPU held alone".to_string()),
        None => {
            let (runs, _) = lease.with(Access::Shared, || attempt(deadline * 2))?;
            (
                runs?,
                format!(
                    "beside other GPU work again (the GPU was not free) with a {:.0} s deadline",
                    2.0 * secs
                ),
            )
        }
    };
    let still = missed(&again);
    let notes = beside
        .iter()
        .map(|tool| {
            let then = match again.iter().find(|r| r.tool.name() == *tool) {
                Some(r) if still.contains(tool) => {
                    format!("run again {how}, it missed that too ({:.0} s)", r.seconds)
                }
                Some(r) => format!(
                    "run again {how}, it finished in {:.1} s, and that run is its verdict",
                    r.seconds
                ),
                None => "the second run did not report it; the miss stays".to_string(),
            };
            format!(
                "{subject}: {tool} missed its {secs:.0} s deadline beside other GPU work; {then}"
            )
        })
        .collect();
    // Only the tools that missed take the second run's verdict: a tool of the group that
    // finished the first time keeps its findings (a second run may not meet the same race).
    let mut again = again;
    let kept = first
        .into_iter()
        .map(|r| {
            let retried = beside.contains(&r.tool.name());
            match again.iter().position(|a| a.tool == r.tool) {
                Some(k) if retried => again.swap_remove(k),
                _ => r,
            }
        })
        .collect();
    Ok((kept, notes))
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::time::Duration;

    use super::*;
    use crate::judge::sanitize::Tool;

    /// A stand-in for the GPU lease: whether there is a GPU, whether it is free at the moment a
    /// run asks to have it alone, and how each run held it (`shared`, `alone now`,
    /// `waited alone`).
    struct Recorded {
        gpu: bool,
        free: bool,
        held: RefCell<Vec<&'static str>>,
    }

    impl Hold for Recorded {
        fn confirms(&self) -> bool {
            self.gpu
        }

        fn with<T>(&self, access: Access, f: impl FnOnce() -> T) -> crate::Result<(T, Duration)> {
            self.held.borrow_mut().push(match access {
                Access::Shared => "shared",
                Access::Exclusive => "waited alone",
            });
            Ok((f(), Duration::from_secs(7)))
        }

        fn try_alone<T>(&self, f: impl FnOnce() -> T) -> crate::Result<Option<T>> {
            if !self.free {
                return Ok(None);
            }
            self.held.borrow_mut().push("alone now");
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

    /// What [`again_if_missed`] made of a group whose runs give `outcomes` one call after
    /// another: the runs, the notes, how each run held the GPU and its deadline in seconds.
    struct Judged {
        runs: Vec<SanitizerRun>,
        notes: Vec<String>,
        held: Vec<&'static str>,
        deadlines: Vec<u64>,
    }

    fn judged(
        (gpu, free): (bool, bool),
        deadline: u64,
        outcomes: Vec<Vec<(Tool, Outcome, f64)>>,
    ) -> Judged {
        let lease = Recorded {
            gpu,
            free,
            held: RefCell::new(Vec::new()),
        };
        let calls = Cell::new(0);
        let deadlines = RefCell::new(Vec::new());
        let (runs, notes) = again_if_missed(&lease, "prog", Duration::from_secs(deadline), |d| {
            let i = calls.get();
            calls.set(i + 1);
            deadlines.borrow_mut().push(d.as_secs());
            Ok(outcomes[i]
                .iter()
                .map(|(t, o, s)| run(*t, o.clone(), *s))
                .collect())
        })
        .expect("no lease error");
        Judged {
            runs,
            notes,
            held: lease.held.into_inner(),
            deadlines: deadlines.into_inner(),
        }
    }

    #[test]
    fn a_tool_that_missed_its_deadline_runs_again_alone_when_the_gpu_is_free() {
        let j = judged(
            (true, true),
            120,
            vec![
                vec![(Tool::Racecheck, hang(), 120.0)],
                vec![(Tool::Racecheck, Outcome::Clean, 41.5)],
            ],
        );
        assert_eq!(j.held, ["shared", "alone now"]);
        assert_eq!(j.deadlines, [120, 120]);
        assert!(matches!(j.runs[0].outcome, Outcome::Clean), "{:?}", j.runs);
        assert_eq!(j.notes.len(), 1, "{:?}", j.notes);
        let n = &j.notes[0];
        assert!(
            n.contains("racecheck missed its 120 s deadline beside other GPU work")
                && n.contains("with the GPU held alone")
                && n.contains("finished in 41.5 s"),
            "{n}"
        );
    }

    #[test]
    fn beside_busy_neighbours_it_runs_again_beside_them_with_twice_the_deadline_never_waiting() {
        let j = judged(
            (true, false),
            120,
            vec![
                vec![
                    (Tool::Globalcheck, hang(), 120.0),
                    (Tool::Sharedcheck, hang(), 120.0),
                ],
                vec![
                    (Tool::Globalcheck, hang(), 240.0),
                    (Tool::Sharedcheck, Outcome::Clean, 130.0),
                ],
            ],
        );
        // No wait for the GPU alone: that would stop every new run on the machine.
        assert_eq!(j.held, ["shared", "shared"]);
        assert_eq!(j.deadlines, [120, 240]);
        assert!(matches!(j.runs[0].outcome, Outcome::Hang { .. }));
        assert!(matches!(j.runs[1].outcome, Outcome::Clean));
        assert!(
            j.notes[0].contains("globalcheck") && j.notes[0].contains("missed that too"),
            "{:?}",
            j.notes
        );
        assert!(
            j.notes[1].contains("sharedcheck")
                && j.notes[1].contains("with a 240 s deadline")
                && j.notes[1].contains("finished in 130.0 s"),
            "{:?}",
            j.notes
        );
    }

    #[test]
    fn only_the_tools_that_missed_take_the_second_runs_verdict() {
        let race = crate::judge::sanitize::normalize::Finding {
            kind: "Global".into(),
            level: "Error".into(),
            kernel: "k".into(),
            location: "p.cu:7".into(),
            accesses: "Write -> Read p.cu:9".into(),
            what: "race between blocks".into(),
        };
        let j = judged(
            (true, true),
            120,
            vec![
                vec![
                    (
                        Tool::Globalcheck,
                        Outcome::Findings(vec![race.clone()]),
                        120.0,
                    ),
                    (Tool::Fencecheck, hang(), 120.0),
                ],
                vec![
                    (Tool::Globalcheck, Outcome::Clean, 40.0),
                    (Tool::Fencecheck, Outcome::Clean, 40.0),
                ],
            ],
        );
        assert_eq!(j.runs.len(), 2, "{:?}", j.runs);
        // globalcheck finished the first time: its race stays, whatever the second run met.
        let global = j.runs.iter().find(|r| r.tool == Tool::Globalcheck);
        assert!(
            matches!(global.map(|r| &r.outcome), Some(Outcome::Findings(f)) if f == &[race]),
            "{:?}",
            j.runs
        );
        let fence = j.runs.iter().find(|r| r.tool == Tool::Fencecheck);
        assert!(matches!(fence.map(|r| &r.outcome), Some(Outcome::Clean)));
        assert_eq!(j.notes.len(), 1, "{:?}", j.notes);
        // A tool the second run did not report keeps its miss.
        let j = judged(
            (true, true),
            120,
            vec![vec![(Tool::Fencecheck, hang(), 120.0)], vec![]],
        );
        assert!(matches!(j.runs[0].outcome, Outcome::Hang { .. }));
        assert!(j.notes[0].contains("the miss stays"), "{:?}", j.notes);
    }

    #[test]
    fn a_run_in_time_a_long_deadline_or_no_gpu_is_not_run_again() {
        let j = judged(
            (true, true),
            120,
            vec![vec![(Tool::Memcheck, Outcome::Clean, 3.0)]],
        );
        assert_eq!(j.held, ["shared"]);
        assert!(j.notes.is_empty() && matches!(j.runs[0].outcome, Outcome::Clean));
        // A deadline past RERUN_MAX: the miss stands, and the note says why.
        let j = judged(
            (true, true),
            900,
            vec![vec![(Tool::Racecheck, hang(), 900.0)]],
        );
        assert_eq!(j.held, ["shared"]);
        assert!(matches!(j.runs[0].outcome, Outcome::Hang { .. }));
        assert!(j.notes[0].contains("not run again"), "{:?}", j.notes);
        // Without a GPU there is nothing to share or hold alone: the miss stands as it was.
        let j = judged(
            (false, true),
            120,
            vec![vec![(Tool::Memcheck, hang(), 120.0)]],
        );
        assert_eq!(j.held, ["shared"]);
        assert!(j.notes.is_empty() && matches!(j.runs[0].outcome, Outcome::Hang { .. }));
    }
}
