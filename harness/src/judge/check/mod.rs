//! The detection matrix: every selected case under every detector, judged.
//! Part of `judge/`: may import the stages below `judge/` and the rest of `judge/`.
//!
//! Each cell is judged against the case's declared expectations. Stress runs and sanitizer
//! processes run side by side, bounded by `jobs`. Nothing here prints: progress goes out as
//! [`CheckEvent`]s.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::errors::Result;
use crate::judge::battery::Battery;
use crate::judge::sanitize::{self, Outcome, SanitizerRun, Tool};
use crate::run::stress::{self, StressReport, Verdict};
use crate::source::catalog::{Case, Catalog, Detector, Expect};

/// What a detector observed.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "observed", content = "detail", rename_all = "snake_case")]
pub enum Observed {
    /// It reported the bug; the text says how (rate, findings, hang).
    Flagged(String),
    Clean(String),
    Inconclusive(String),
}

/// The judgement of one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
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
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
#[serde(tag = "run", rename_all = "snake_case")]
pub enum Evidence {
    Stress(Box<StressReport>),
    Sanitizer(SanitizerRun),
}

/// The whole matrix.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
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
    /// racegate's own tools (globalcheck, sharedcheck, fencecheck) in one injected run: a
    /// cell for each, each with its share of the run's time.
    Own(&'a Case, Vec<Tool>),
}

/// The matrix's tasks over `cases`: each batchable tool's cells in batches where they can be
/// (below), racegate's own tools (`own`, the first of them standing for all) likewise, and two
/// stress cells per case.
fn plan<'a>(cases: &[&'a Case], all: &[Tool], own: &[Tool]) -> Vec<Task<'a>> {
    let mut tasks: Vec<Task> = Vec::new();
    for tool in all {
        if sanitize::batch::batchable(*tool) {
            // Cases this tool should find nothing in share processes (a clean batch settles
            // them all); a case it should flag is not mixed in with them, and one that hangs
            // runs alone (inside a batch it would cost the batch's deadline before its own).
            let (shared, alone): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| {
                c.expectation(Detector::from(*tool)) == Expect::Clean
                    && c.expectation(Detector::Watchdog) == Expect::Clean
            });
            for b in sanitize::batch::batches(&shared, sanitize::batch::MAX_BATCH) {
                tasks.push(Task::Batch(b, *tool));
            }
            // Cases racecheck or initcheck should flag share processes of their own: a case
            // that ran is given the findings at lines of its own code (`sanitize::batch`), and
            // neither tool's findings end a launch (synccheck's and memcheck's do, which would
            // stop the batch at each flagged case). Fourteen racecheck cells alone were 61 s of
            // the matrix's 475 s of cells in H200 run 29.
            let (flagged, alone): (Vec<&Case>, Vec<&Case>) = alone.into_iter().partition(|c| {
                matches!(tool, Tool::Racecheck | Tool::Initcheck)
                    && c.expectation(Detector::Watchdog) == Expect::Clean
            });
            for b in sanitize::batch::batches(&flagged, sanitize::batch::MAX_BATCH) {
                tasks.push(match b[..] {
                    [one] => Task::Sanitize(one, *tool),
                    _ => Task::Batch(b, *tool),
                });
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
                tasks.push(Task::OwnBatch(b, own.to_vec()));
            }
            tasks.extend(alone.into_iter().map(|c| Task::Own(c, own.to_vec())));
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
    tasks
}

/// A task's label in `RACEGATE_TIMELINE`'s record.
fn task_label(t: &Task) -> String {
    let names = |cs: &[&Case]| {
        cs.iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join("+")
    };
    let tools = |ts: &[Tool]| ts.iter().map(Tool::to_string).collect::<Vec<_>>().join("+");
    match t {
        Task::Stress(c, jitter) => format!(
            "stress{} {}",
            if *jitter { "" } else { "-nojitter" },
            c.name
        ),
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
    // Every tool a kernel is judged by (streamcheck judges programs: [`Tool::KERNELS`]).
    let all: Vec<Tool> = Tool::KERNELS.to_vec();
    let own = sanitize::runner::own_tools(&all);
    let tasks = plan(cases, &all, &own);
    let after_hang = AfterHang::default();
    // Each pool thread keeps one stress worker (and its device context) across its stress
    // cells.
    let stress_left = stress::StressLeft::new(
        tasks
            .iter()
            .filter(|t| matches!(t, Task::Stress(..)))
            .count(),
    );
    let results = std::thread::scope(|s| {
        // Builds ahead, beside the first cells (which wait for or make their own).
        s.spawn(|| crate::judge::battery::prebuild(cfg, catalog, cases, !own.is_empty()));
        crate::proc::pool::run_all_ranked(
            tasks,
            cfg.jobs,
            stress::Slot::default,
            |t| {
                task_rank(
                    t,
                    cfg.trials,
                    &after_hang,
                    crate::build::globalcheck::settled(&catalog.root),
                )
            },
            |slot, task| {
                // Each cell's runs share the GPU with other racegate processes.
                let _gpu = crate::run::lease::job_share()?;
                stress_left.before(matches!(task, Task::Stress(..)), slot);
                let _span = crate::proc::timeline::span("job", || task_label(&task));
                let cells = run_task(slot, catalog, &task, cfg, exe, &after_hang);
                after_hang.after(&task, &cells);
                cells
            },
            |r| {
                if let Ok(cells) = r {
                    on_event(CheckEvent::Done(cells));
                }
            },
        )
    });
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
    let cells = run_task(
        &mut stress::Slot::default(),
        catalog,
        &task,
        cfg,
        exe,
        &AfterHang::default(),
    )?;
    Ok(cells
        .into_iter()
        .find(|c| c.detector == det)
        .expect("the task yields this detector's cell"))
}

/// A task's place in the queue when a thread is free (the highest starts). Long cells first
/// (racecheck on the heavy families, then the other tools and stress by their estimated cost,
/// [`crate::judge::battery::estimated_seconds`]): the pool then starts each next cell as soon
/// as a slot is free, and the tail is short cells; equal ranks keep the order given. A case
/// expected to hang holds each of its cells until a deadline: its stress cells go first of all
/// (H200 run 25: the matrix's last cells were such ones, started late), its tools as soon as
/// its stress run has said whether it finished any trial (then they get the cut deadline,
/// [`AfterHang`]), and not before it has said ([`crate::proc::pool::NOT_YET`]). racegate's own
/// tools wait until their build is settled (`tool_built`; it builds beside the first cells).
fn task_rank(t: &Task, trials: u32, after_hang: &AfterHang, tool_built: bool) -> f64 {
    let hangs = |c: &Case| c.expectation(Detector::Watchdog) == Expect::Flag;
    let est =
        |d: Detector, c: &Case| crate::judge::battery::estimated_seconds(d, &c.exercise, trials);
    let tools_est = |c: &Case, tools: &[Tool]| -> f64 {
        tools.iter().map(|t| est(Detector::from(*t), c)).sum()
    };
    let cost = match t {
        Task::Stress(c, _) if hangs(c) => return f64::INFINITY,
        Task::Stress(c, true) => est(Detector::Stress, c),
        Task::Stress(c, false) => est(Detector::StressNojitter, c),
        Task::Sanitize(c, tool) => est(Detector::from(*tool), c),
        Task::Batch(cs, tool) => cs.iter().map(|c| est(Detector::from(*tool), c)).sum(),
        Task::OwnBatch(cs, tools) => cs.iter().map(|c| tools_est(c, tools)).sum(),
        Task::Own(c, tools) => tools_est(c, tools),
    };
    match t {
        Task::Own(..) | Task::OwnBatch(..) if !tool_built => crate::proc::pool::NOT_YET,
        Task::Sanitize(c, _) | Task::Own(c, _) if hangs(c) => match after_hang.said(&c.name) {
            Some(_) => 1e9 + cost,
            None => crate::proc::pool::NOT_YET,
        },
        _ => cost,
    }
}

/// Which cases' stress runs (with jitter) have ended, and of those, which finished no trial:
/// the first one missed its deadline. Such a case hangs under a tool too (at the tools' small
/// size as at stress's): its tool runs get the deadline cut as grading cuts it
/// ([`sanitize::tool::after_hang_deadline`]; the gate gives racecheck 5 s more, for the
/// deadlock line its findings' identity holds, which a cell's verdict does not), instead of spinning the whole
/// `--sanitize-timeout` each while their contexts take turns of the GPU from every other cell
/// (H200 run 27: `handoff::barrier_before_flag`'s five tool cells, 20-25 s each, a quarter of
/// the matrix's cell time). A tool cell that started before the stress run said so keeps the
/// whole deadline; the snapshots of a hang do not hold the time.
#[derive(Default)]
struct AfterHang(std::sync::Mutex<std::collections::BTreeMap<String, bool>>);

impl AfterHang {
    /// `Some(finished_none)` once `case`'s stress cell has ended.
    fn said(&self, case: &str) -> Option<bool> {
        self.0.lock().expect("stress verdicts").get(case).copied()
    }

    /// `case`'s stress cells as they ended.
    fn record(&self, case: &str, cells: &[Cell]) {
        let finished_none = cells.iter().any(|c| match &c.evidence {
            // The hung trial is the last one run: none before it means none finished.
            Evidence::Stress(r) => matches!(r.verdict, Verdict::Hang { .. }) && r.trials_run <= 1,
            Evidence::Sanitizer(_) => false,
        });
        self.0
            .lock()
            .expect("stress verdicts")
            .insert(case.to_string(), finished_none);
    }

    /// What a task's end says: a stress cell with jitter records its case, one that failed to
    /// run too (no cut), so the case's tools wait no longer.
    fn after(&self, task: &Task, cells: &Result<Vec<Cell>>) {
        if let Task::Stress(c, true) = task {
            self.record(&c.name, cells.as_deref().unwrap_or(&[]));
        }
    }

    /// The configuration of `tool` on `case`: cut when its stress run finished no trial.
    fn sanitize(&self, cfg: &Battery, case: &Case, tool: Tool) -> sanitize::SanitizeConfig {
        let mut sc = cfg.sanitize(tool);
        if self.said(&case.name) == Some(true) {
            sc.timeout = sanitize::tool::after_hang_deadline(sc.timeout, cfg.stress_timeout);
        }
        sc
    }
}

fn run_task(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    task: &Task,
    cfg: &Battery,
    exe: &Path,
    after_hang: &AfterHang,
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
            let sc = after_hang.sanitize(cfg, case, *tool);
            let r = sanitize::runner::run(catalog, case, &sc, exe)?;
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
            let runs =
                sanitize::own_batch::run_own(catalog, cs, &cfg.sanitize(tools[0]), exe, tools)?;
            Ok(cs
                .iter()
                .zip(runs)
                .flat_map(|(c, rs)| rs.into_iter().map(move |r| sanitizer_cell(c, r)))
                .collect())
        }
        Task::Own(case, tools) => {
            let sc = after_hang.sanitize(cfg, case, tools[0]);
            let runs = sanitize::runner::run_own(catalog, case, &sc, exe, tools)?;
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
            if crate::judge::sanitize::injected::decide::is_limit(why) =>
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
mod tests;
