//! The detection matrix: every selected case under every detector, judged against the case's
//! declared expectations. Stress runs and sanitizer processes run side by side, bounded by
//! `jobs`. Nothing here prints: progress goes out as [`CheckEvent`]s.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::errors::Result;
use crate::judge::battery::Battery;
use crate::judge::sanitize::{self, Outcome, SanitizerRun, Tool};
use crate::run::stress::{self, StressReport, Verdict};
use crate::source::catalog::{Case, Catalog, Detector, Expect};

/// What a detector observed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "observed", content = "detail", rename_all = "snake_case")]
pub enum Observed {
    /// It reported the bug; the text says how (rate, findings, hang).
    Flagged(String),
    Clean(String),
    Inconclusive(String),
}

/// The judgement of one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// The expectation held (or was `may`).
    Ok,
    /// A declared detector missed the bug.
    Missed,
    /// A detector flagged something that must be clean.
    Unexpected,
    Inconclusive,
}

/// One (case, detector) cell.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub case: String,
    pub detector: Detector,
    pub expect: Expect,
    #[serde(flatten)]
    pub observed: Observed,
    pub judgement: Judgement,
    pub seconds: f64,
    /// Where reviewers should look: the first finding's file:line, else the case's bug line.
    pub file: String,
    pub line: Option<u32>,
    /// The run behind the cell, whole, for a reporter to show (`report::text::evidence`).
    pub evidence: Evidence,
}

/// The run behind a cell. The engine keeps it typed; rendering is the reporters' job.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "run", rename_all = "snake_case")]
pub enum Evidence {
    Stress(Box<StressReport>),
    Sanitizer(SanitizerRun),
}

/// The whole matrix.
#[derive(Clone, Debug, Serialize)]
pub struct Matrix {
    pub cells: Vec<Cell>,
    pub wall_seconds: f64,
    /// Summed process time per detector, in matrix order.
    pub seconds_per_detector: Vec<(Detector, f64)>,
    /// The `//@ perf:` expectations of the cases, apart from the cells: held, broken or skipped
    /// with the reason (`judge::perf::check`); empty with `--no-perf`.
    pub perf: Vec<crate::judge::perf::expect::Judged>,
}

impl Matrix {
    pub fn count(&self, j: Judgement) -> usize {
        self.cells.iter().filter(|c| c.judgement == j).count()
    }
}

/// Progress for reporters.
#[derive(Clone, Debug)]
pub enum CheckEvent<'a> {
    Done(&'a [Cell]),
}

enum Task<'a> {
    Stress(&'a Case, bool),
    Sanitize(&'a Case, Tool),
    /// One compute-sanitizer process for several cases ([`sanitize::batch`]): a cell each.
    Batch(Vec<&'a Case>, Tool),
    /// racegate's own tools on several cases in one injected run: a cell per case and tool.
    OwnBatch(Vec<&'a Case>, Vec<Tool>),
    /// racegate's own tools (globalcheck, sharedcheck, the opt-in ones) in one injected run: a
    /// cell for each, each with its share of the run's time.
    Own(&'a Case, Vec<Tool>),
}

/// A task's label in `RACEGATE_TIMELINE`'s record.
fn task_label(t: &Task) -> String {
    let names = |cs: &[&Case]| cs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join("+");
    let tools = |ts: &[Tool]| ts.iter().map(Tool::to_string).collect::<Vec<_>>().join("+");
    match t {
        Task::Stress(c, jitter) => format!("stress{} {}", if *jitter { "" } else { "-nojitter" }, c.name),
        Task::Sanitize(c, tool) => format!("{tool} {}", c.name),
        Task::Batch(cs, tool) => format!("{tool} batch {}", names(cs)),
        Task::OwnBatch(cs, ts) => format!("{} batch {}", tools(ts), names(cs)),
        Task::Own(c, ts) => format!("{} {}", tools(ts), c.name),
    }
}

/// Runs the matrix over `cases`.
pub fn run(
    catalog: &Catalog,
    cases: &[&Case],
    cfg: &Battery,
    exe: &Path,
    on_event: impl Fn(CheckEvent) + Sync,
) -> Result<Matrix> {
    let start = Instant::now();
    crate::judge::battery::prebuild(cfg, catalog, cases);
    let mut tasks: Vec<Task> = Vec::new();
    // Slow sanitizer runs (racecheck) first, so the pool's tail is short.
    // streamcheck judges programs' streams, copies and host accesses; on catalog cases every
    // run is inconclusive (racegate's own launches free memory in stream order, which it does
    // not model: H200 run 22), so the matrix leaves it out.
    let all: Vec<Tool> = Tool::ALL
        .into_iter()
        .chain(Tool::OPT_IN)
        .filter(|t| *t != Tool::Streamcheck)
        .collect();
    let own = sanitize::runner::own_tools(&all);
    for tool in &all {
        if sanitize::batch::batchable(*tool) {
            // Cases this tool should find nothing in share processes (a clean batch settles
            // them all); a case it should flag, or one that hangs, runs alone, so its run is
            // not spent on a batch it would send back.
            let (shared, alone): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| {
                c.expectation(Detector::from(*tool)) == Expect::Clean
                    && c.expectation(Detector::Watchdog) == Expect::Clean
            });
            for b in sanitize::batch::batches(&shared, sanitize::batch::MAX_BATCH) {
                tasks.push(Task::Batch(b, *tool));
            }
            tasks.extend(alone.into_iter().map(|c| Task::Sanitize(c, *tool)));
            continue;
        }
        if tool.is_own() && Some(tool) == own.first() {
            // The same for racegate's own tools: cases every one of them should find nothing
            // in share one injected run.
            let (shared, alone): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| {
                own.iter()
                    .all(|t| c.expectation(Detector::from(*t)) == Expect::Clean)
                    && c.expectation(Detector::Watchdog) == Expect::Clean
            });
            for b in sanitize::batch::batches(&shared, sanitize::batch::MAX_BATCH) {
                tasks.push(Task::OwnBatch(b, own.clone()));
            }
            tasks.extend(alone.into_iter().map(|c| Task::Own(c, own.clone())));
            continue;
        }
        for c in cases {
            if !tool.is_own() {
                tasks.push(Task::Sanitize(c, *tool));
            }
        }
    }
    for c in cases {
        tasks.push(Task::Stress(c, true));
        tasks.push(Task::Stress(c, false));
    }
    // Long cells first (racecheck on the heavy families, then the other tools and stress by
    // their estimated cost): the pool then starts each next cell as soon as a slot is free,
    // and the tail is short cells.
    // A case expected to hang holds each of its cells until a deadline: those go first of all
    // (H200 run 25: the matrix's last cells were such ones, started late).
    let hangs = |c: &Case| c.expectation(Detector::Watchdog) == Expect::Flag;
    // A cell's estimate; a task's is the sum of its cells'.
    let est = |d: Detector, c: &Case| {
        crate::judge::battery::estimated_seconds(d, &c.exercise, cfg.trials)
    };
    let tools_est = |c: &Case, tools: &[Tool]| -> f64 {
        tools.iter().map(|t| est(Detector::from(*t), c)).sum()
    };
    let tasks = crate::judge::battery::long_first(tasks, |t| match t {
        Task::Sanitize(c, _) | Task::Own(c, _) | Task::Stress(c, _) if hangs(c) => f64::INFINITY,
        Task::Stress(c, true) => est(Detector::Stress, c),
        Task::Stress(c, false) => est(Detector::StressNojitter, c),
        Task::Sanitize(c, tool) => est(Detector::from(*tool), c),
        Task::Batch(cs, tool) => cs.iter().map(|c| est(Detector::from(*tool), c)).sum(),
        Task::OwnBatch(cs, tools) => cs.iter().map(|c| tools_est(c, tools)).sum(),
        Task::Own(c, tools) => tools_est(c, tools),
    });
    // Each pool thread keeps one stress worker (and its device context) across its stress
    // cells.
    let stress_left = stress::StressLeft::new(
        tasks.iter().filter(|t| matches!(t, Task::Stress(..))).count(),
    );
    let results = crate::proc::pool::run_all_with(
        tasks,
        cfg.jobs,
        stress::Slot::default,
        |slot, task| {
            stress_left.before(matches!(task, Task::Stress(..)), slot);
            let _span = crate::proc::timeline::span("job", || task_label(&task));
            run_task(slot, catalog, &task, cfg, exe)
        },
        |r| {
            if let Ok(cells) = r {
                on_event(CheckEvent::Done(cells));
            }
        },
    );
    let mut cells = Vec::new();
    for r in results {
        cells.extend(r?);
    }
    let order = |c: &Cell| {
        (
            cases
                .iter()
                .position(|x| x.name == c.case)
                .unwrap_or(usize::MAX),
            c.detector,
        )
    };
    cells.sort_by_key(order);
    let seconds_per_detector = Detector::ALL
        .iter()
        .map(|d| {
            (
                *d,
                cells
                    .iter()
                    .filter(|c| c.detector == *d)
                    .map(|c| c.seconds)
                    .sum(),
            )
        })
        .collect();
    Ok(Matrix {
        cells,
        wall_seconds: start.elapsed().as_secs_f64(),
        seconds_per_detector,
        perf: Vec::new(),
    })
}

#[cfg(any(test, feature = "internals"))]
/// Runs a single cell (the `cargo test` trials use this). The watchdog cell comes from a
/// stress run with jitter, as in the full matrix.
pub fn run_one(
    catalog: &Catalog,
    case: &Case,
    det: Detector,
    cfg: &Battery,
    exe: &Path,
) -> Result<Cell> {
    let task = match det {
        Detector::Stress | Detector::Watchdog => Task::Stress(case, true),
        Detector::StressNojitter => Task::Stress(case, false),
        sanitizer => Task::Sanitize(case, Tool::try_from(sanitizer).expect("a sanitizer")),
    };
    let cells = run_task(&mut stress::Slot::default(), catalog, &task, cfg, exe)?;
    Ok(cells
        .into_iter()
        .find(|c| c.detector == det)
        .expect("the task yields this detector's cell"))
}

fn run_task(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    task: &Task,
    cfg: &Battery,
    exe: &Path,
) -> Result<Vec<Cell>> {
    match task {
        Task::Stress(case, jitter) => {
            let r = stress::run_in(slot, catalog, case, &cfg.stress(*jitter), exe, |_| {})?;
            let det = if *jitter {
                Detector::Stress
            } else {
                Detector::StressNojitter
            };
            let mut out = vec![stress_cell(case, det, &r)];
            if *jitter {
                out.push(watchdog_cell(case, &r));
            }
            Ok(out)
        }
        Task::Sanitize(case, tool) => {
            let r = sanitize::runner::run(catalog, case, &cfg.sanitize(*tool), exe)?;
            Ok(vec![sanitizer_cell(case, r)])
        }
        Task::Batch(cs, tool) => {
            let runs = sanitize::batch::run(catalog, cs, &cfg.sanitize(*tool), exe)?;
            Ok(cs
                .iter()
                .zip(runs)
                .map(|(c, r)| sanitizer_cell(c, r))
                .collect())
        }
        Task::OwnBatch(cs, tools) => {
            let runs = sanitize::batch::run_own(catalog, cs, &cfg.sanitize(tools[0]), exe, tools)?;
            Ok(cs
                .iter()
                .zip(runs)
                .flat_map(|(c, rs)| rs.into_iter().map(move |r| sanitizer_cell(c, r)))
                .collect())
        }
        Task::Own(case, tools) => {
            let runs =
                sanitize::runner::run_own(catalog, case, &cfg.sanitize(tools[0]), exe, tools)?;
            Ok(runs.into_iter().map(|r| sanitizer_cell(case, r)).collect())
        }
    }
}

/// The cell of one sanitizer run (its time: the run's, or its share of a shared run's).
fn sanitizer_cell(case: &Case, r: SanitizerRun) -> Cell {
    let det = Detector::from(r.tool);
    let (observed, loc) = match &r.outcome {
        Outcome::Clean => (Observed::Clean("clean".into()), None),
        Outcome::Findings(f) => {
            let errors = f.iter().filter(|x| x.level == "Error").count();
            let summary = match (errors, f.len() - errors) {
                (e, 0) => format!("{e} error(s)"),
                (0, w) => format!("{w} warning(s)"),
                (e, w) => format!("{e} error(s), {w} warning(s)"),
            };
            let loc = f
                .iter()
                .find_map(|x| x.file_line())
                .map(|(f, l)| (f.to_string(), l));
            (Observed::Flagged(summary), loc)
        }
        Outcome::Hang { .. } => (Observed::Flagged("hang".into()), None),
        Outcome::Inconclusive(why) => (Observed::Inconclusive(why.clone()), None),
    };
    let seconds = r.seconds;
    cell(case, det, observed, seconds, loc, Evidence::Sanitizer(r))
}

fn stress_cell(case: &Case, det: Detector, r: &StressReport) -> Cell {
    let observed = match &r.verdict {
        Verdict::Pass => Observed::Clean(format!("0/{}", r.trials_run)),
        Verdict::Fail => Observed::Flagged(format!("{}/{}", r.failures, r.trials_run)),
        Verdict::Hang { .. } => Observed::Flagged("hang".into()),
        Verdict::Fault { error } => Observed::Flagged(format!("fault: {}", first_line(error))),
    };
    cell(
        case,
        det,
        observed,
        r.seconds,
        None,
        Evidence::Stress(Box::new(r.clone())),
    )
}

fn watchdog_cell(case: &Case, r: &StressReport) -> Cell {
    let observed = match &r.verdict {
        Verdict::Hang {
            left_behind: false, ..
        } => Observed::Flagged("hang, group killed".into()),
        Verdict::Hang {
            left_behind: true, ..
        } => Observed::Flagged("hang, PROCESSES LEFT BEHIND".into()),
        _ => Observed::Clean("finished".into()),
    };
    cell(
        case,
        Detector::Watchdog,
        observed,
        0.0,
        None,
        Evidence::Stress(Box::new(r.clone())),
    )
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn cell(
    case: &Case,
    det: Detector,
    observed: Observed,
    seconds: f64,
    loc: Option<(String, u32)>,
    evidence: Evidence,
) -> Cell {
    let expect = case.expectation(det);
    let judgement = match (&observed, expect) {
        // `may` records what the detector saw, and that includes a judged limit of globalcheck:
        // a variant whose bug is an out-of-bounds access leaves it unable to decide on every run
        // it sees no race in, which is the variant's nature. A tool that failed (not built, not
        // loaded, no sanitizer) stays inconclusive, `may` or not.
        (Observed::Inconclusive(why), Expect::May)
            if crate::judge::sanitize::globalcheck::run::is_limit(why) =>
        {
            Judgement::Ok
        }
        (Observed::Inconclusive(_), _) => Judgement::Inconclusive,
        (_, Expect::May) => Judgement::Ok,
        (Observed::Flagged(_), Expect::Flag) | (Observed::Clean(_), Expect::Clean) => Judgement::Ok,
        (Observed::Clean(_), Expect::Flag) => Judgement::Missed,
        (Observed::Flagged(_), Expect::Clean) => Judgement::Unexpected,
    };
    let (file, line) = match loc {
        Some((f, l)) => (f, Some(l)),
        None => (
            case.path.clone(),
            case.bug
                .as_ref()
                .map(|b| u32::try_from(b.wrong_line).unwrap_or(u32::MAX)),
        ),
    };
    Cell {
        case: case.name.clone(),
        detector: det,
        expect,
        observed,
        judgement,
        seconds,
        file,
        line,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run behind a cell, for the tests that only look at judgements and locations.
    fn no_evidence() -> Evidence {
        Evidence::Sanitizer(SanitizerRun {
            case: String::new(),
            tool: Tool::Racecheck,
            outcome: Outcome::Clean,
            exit: String::new(),
            seconds: 0.0,
            log: String::new(),
            command: String::new(),
        })
    }
    use crate::source::catalog::{Bug, Entry, Origin};

    fn case(expect: &[(Detector, Expect)]) -> Case {
        Case {
            name: "k::v".into(),
            path: "buggy_variants/k/v.cu".into(),
            exercise: "reduce".into(),
            entry: Entry {
                name: "k".into(),
                params: Default::default(),
            },
            bug: Some(Bug {
                breaks: "kernels/k.cu".into(),
                class: "x".into(),
                escapes: None,
                wrong_line: 12,
            }),
            expect: expect.iter().copied().collect(),
            title: String::new(),
            origin: Origin::Family(crate::source::exercises::by_name("reduce").expect("a family")),
        }
    }

    #[test]
    fn judgements_follow_the_declared_expectation() {
        let c = case(&[
            (Detector::Racecheck, Expect::Flag),
            (Detector::Stress, Expect::May),
        ]);
        let j = |d, o| cell(&c, d, o, 0.0, None, no_evidence()).judgement;
        assert_eq!(
            j(Detector::Racecheck, Observed::Flagged("1 error(s)".into())),
            Judgement::Ok
        );
        assert_eq!(
            j(Detector::Racecheck, Observed::Clean("clean".into())),
            Judgement::Missed
        );
        assert_eq!(
            j(Detector::Memcheck, Observed::Flagged("1 error(s)".into())),
            Judgement::Unexpected
        );
        assert_eq!(
            j(Detector::Memcheck, Observed::Clean("clean".into())),
            Judgement::Ok
        );
        assert_eq!(
            j(Detector::Stress, Observed::Clean("0/50".into())),
            Judgement::Ok
        );
        assert_eq!(
            j(
                Detector::Racecheck,
                Observed::Inconclusive("no sanitizer".into())
            ),
            Judgement::Inconclusive
        );
        // A `may` expectation records a judged limit of globalcheck; a failed tool stays
        // inconclusive, `may` or not.
        let c = case(&[(Detector::Globalcheck, Expect::May)]);
        let j = |o| cell(&c, Detector::Globalcheck, o, 0.0, None, no_evidence()).judgement;
        let limit = format!(
            "{}392 global access(es) outside every allocation it knows",
            crate::judge::sanitize::globalcheck::run::CANNOT_JUDGE
        );
        assert_eq!(j(Observed::Inconclusive(limit)), Judgement::Ok);
        assert_eq!(
            j(Observed::Inconclusive(
                "globalcheck was not loaded into the target".into()
            )),
            Judgement::Inconclusive
        );
    }

    #[test]
    fn cells_point_at_the_finding_or_else_the_bug_line() {
        let c = case(&[(Detector::Racecheck, Expect::Flag)]);
        let at_bug = cell(
            &c,
            Detector::Stress,
            Observed::Clean("0/5".into()),
            0.0,
            None,
            no_evidence(),
        );
        assert_eq!(
            (at_bug.file.as_str(), at_bug.line),
            ("buggy_variants/k/v.cu", Some(12))
        );
        let at_finding = cell(
            &c,
            Detector::Racecheck,
            Observed::Flagged("x".into()),
            0.0,
            Some(("kernels/k.cu".into(), 30)),
            no_evidence(),
        );
        assert_eq!(
            (at_finding.file.as_str(), at_finding.line),
            ("kernels/k.cu", Some(30))
        );
    }
}
