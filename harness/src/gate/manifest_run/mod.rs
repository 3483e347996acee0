//! Manifest mode: a `racegate.toml`'s kernels and programs, gated in one pool.
//! Part of `gate/`: may import the stages (`proc/` .. `judge/`) and the rest of `gate/`.
//!
//! Every kernel runs under stress (unless its oracle is `none`) and the chosen sanitizers;
//! sanitizer deadlines are judged against stress. The manifest's `[[program]]` tables
//! ([`super::manifest_programs`]) join the same run.

use std::path::Path;

use super::finding::{Detection, GateConfig, GateEvent, GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use super::sanitizers::{self, PendingHang};
use super::stress_state::{stress_at_once, StressEnd, StressEnded, StressState};
use crate::errors::Result;
use crate::judge::sanitize::{self, Tool};
use crate::proc::pool;
use crate::run::stress::{self, Verdict};
use crate::source::catalog::{Case, Catalog};
use crate::source::files;
use crate::source::manifest::Check;
#[cfg(any(test, feature = "internals", feature = "testing"))]
use tool_job::tool_config;
use tool_job::ToolJob;

/// The line where `entry` is defined in `file` (for stress findings, which have no line).
fn entry_line(root: &Path, file: &str, entry: &str) -> Option<u32> {
    let text = files::read_text(&root.join(file), "the kernel", files::TEXT_LIMIT).ok()?;
    text.lines()
        .position(|l| l.contains("__global__") && l.contains(&format!("{entry}(")))
        .and_then(|i| u32::try_from(i + 1).ok())
}

/// A job's estimated seconds, for ordering only ([`crate::judge::battery::estimated_seconds`]):
/// a group of tools in one run costs what its tools cost together.
fn job_cost(j: &Job, trials: u32) -> f64 {
    use crate::judge::battery::estimated_seconds;
    use crate::source::case::Detector;
    match j {
        // A manifest kernel's stress run draws its inputs from the team's own sizes, often
        // far larger than the catalog's (H200 run 25's corpus: 5-20 s for 100 trials, more than
        // any single sanitizer run that ends): it starts first, so it is not the tail.
        Job::Stress(c) if c.kernel_spec().is_some() => {
            estimated_seconds(Detector::Stress, &c.exercise, trials) * 10.0
        }
        Job::Stress(c) => estimated_seconds(Detector::Stress, &c.exercise, trials),
        Job::Sanitize(c, group) => group
            .iter()
            .map(|t| estimated_seconds(Detector::from(*t), &c.exercise, trials))
            .sum(),
        Job::Batch(cs, tool) => cs
            .iter()
            .map(|c| estimated_seconds(Detector::from(*tool), &c.exercise, trials))
            .sum(),
        Job::OwnBatch(cs, group) => cs
            .iter()
            .flat_map(|c| {
                group
                    .iter()
                    .map(|t| estimated_seconds(Detector::from(*t), &c.exercise, trials))
            })
            .sum(),
    }
}

/// A job's label in `RACEGATE_TIMELINE`'s record.
fn job_label(j: &Job) -> String {
    match j {
        Job::Stress(c) => format!("stress {}", c.name),
        Job::Sanitize(c, group) => {
            let tools: Vec<String> = group.iter().map(Tool::to_string).collect();
            format!("{} {}", tools.join("+"), c.name)
        }
        Job::Batch(cs, tool) => format!(
            "{tool} batch {}",
            cs.iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join("+")
        ),
        Job::OwnBatch(cs, group) => {
            let tools: Vec<String> = group.iter().map(Tool::to_string).collect();
            format!(
                "{} batch {}",
                tools.join("+"),
                cs.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join("+")
            )
        }
    }
}

/// A job's place in the queue when a thread is free (the highest starts): the tools of a kernel
/// whose stress run hung (they run it alone at once, together, so the kernel spins on the GPU
/// once and early: on the H200 a hung kernel's context takes its turns of the GPU from every
/// other process, run 26), then stress runs (they tell which kernels hang; at most
/// `stress_at_once` at a time, [`stress_at_once`]), then by estimated cost. A job with a kernel
/// whose stress run has not ended waits ([`pool::NOT_YET`]): by then it may know the kernel
/// hangs.
fn job_rank(
    j: &Job,
    trials: u32,
    st: &StressState,
    stressed: &[&str],
    stress_at_once: usize,
) -> f64 {
    let cost = job_cost(j, trials);
    let cases: Vec<&str> = match j {
        Job::Stress(_) if st.running >= stress_at_once => return pool::NOT_YET,
        Job::Stress(_) => return 3e6 + cost,
        Job::Sanitize(c, _) => vec![c.name.as_str()],
        Job::Batch(cs, _) | Job::OwnBatch(cs, _) => cs.iter().map(|c| c.name.as_str()).collect(),
    };
    if cases.iter().any(|c| st.hung.contains(*c)) {
        4e6 + cost
    } else if cases
        .iter()
        .any(|c| stressed.contains(c) && !st.done.contains(*c))
    {
        pool::NOT_YET
    } else {
        cost
    }
}

enum Job<'a> {
    Stress(&'a Case),
    /// One run of a group of tools ([`sanitizers::run_groups`]): globalcheck and sharedcheck
    /// share one when both are chosen.
    Sanitize(&'a Case, Vec<Tool>),
    /// One compute-sanitizer tool on several kernels in one process ([`sanitize::batch`]).
    Batch(Vec<&'a Case>, Tool),
    /// racegate's own tools on several kernels: those whose stress run passed or gave wrong
    /// results in one injected run ([`sanitize::own_batch::run_own`]), the others each alone
    /// ([`own_tools::own_batch_job`]).
    OwnBatch(Vec<&'a Case>, Vec<Tool>),
}

/// Runs every manifest kernel through stress (unless its oracle is `none`) and the sanitizers.
/// `on_done` sees each (kernel, detector) as its run finishes.
pub fn run_manifest(
    catalog: &Catalog,
    cfg: &GateConfig,
    exe: &Path,
    on_done: impl Fn(&GateEvent) + Sync,
) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let all: Vec<&Case> = catalog.cases.iter().collect();
    let mut jobs = Vec::new();
    for group in sanitizers::run_groups(&cfg.tools) {
        match group[..] {
            [tool] if sanitize::batch::batchable(tool) => {
                for b in sanitize::batch::batches(&all, sanitize::batch::MAX_BATCH) {
                    jobs.push(Job::Batch(b, tool));
                }
            }
            _ if group.iter().all(|t| t.is_own() && *t != Tool::Streamcheck) => {
                for b in sanitize::batch::batches(&all, sanitize::batch::MAX_BATCH) {
                    jobs.push(Job::OwnBatch(b, group.clone()));
                }
            }
            _ => {
                for c in &catalog.cases {
                    jobs.push(Job::Sanitize(c, group.clone()));
                }
            }
        }
    }
    let stressed: Vec<&str> = catalog
        .cases
        .iter()
        .filter(|c| c.kernel_spec().is_some_and(|k| k.check != Check::None))
        .map(|c| c.name.as_str())
        .collect();
    for c in &catalog.cases {
        if stressed.contains(&c.name.as_str()) {
            jobs.push(Job::Stress(c));
        }
    }
    // The order jobs start in is decided at each pick ([`job_rank`]).
    let trials = cfg.battery.trials;
    let at_once = stress_at_once(cfg.battery.jobs)?;
    let stress = std::sync::Mutex::new(StressState::default());
    let stress_left =
        stress::StressLeft::new(jobs.iter().filter(|j| matches!(j, Job::Stress(_))).count());
    let own_tools = cfg.tools.iter().any(|t| t.is_own());
    let results = std::thread::scope(|s| {
        // Builds ahead, beside the first jobs (which wait for or make their own).
        s.spawn(crate::proc::watchdog::thread_env::carried(|| {
            crate::judge::battery::prebuild(&cfg.battery, catalog, &all, own_tools)
        }));
        pool::run_all_picked(
            jobs,
            cfg.battery.jobs,
            stress::Slot::default,
            |j| {
                job_rank(
                    j,
                    trials,
                    &stress.lock().expect("stress state"),
                    &stressed,
                    at_once,
                )
            },
            // Counted as it is picked, under the pool's lock: the next pick sees it.
            |j| {
                if matches!(j, Job::Stress(_)) {
                    stress.lock().expect("stress state").picked();
                }
            },
            |slot, job| -> Result<(GateRun, Vec<PendingHang>)> {
                // Each kernel job shares the GPU with other racegate processes; the manifest's
                // programs, after the jobs, take the lease run by run (and may need it alone).
                let _gpu = crate::run::lease::job_share()?;
                let mut out = GateRun::default();
                let mut pending = Vec::new();
                stress_left.before(matches!(job, Job::Stress(_)), slot);
                let _span = crate::proc::timeline::span("job", || job_label(&job));
                // A tool job reads what the stress runs have said by the time it starts.
                let tool_job = || ToolJob {
                    catalog,
                    cfg,
                    exe,
                    st: stress.lock().expect("stress state").clone(),
                };
                match job {
                    Job::Sanitize(case, group) => {
                        pending = sanitize_job(&tool_job(), case, &group, &mut out)?;
                    }
                    Job::Batch(cases, tool) => {
                        pending = batch_job(&tool_job(), &cases, tool, &mut out)?;
                    }
                    Job::OwnBatch(cases, group) => {
                        let tj = tool_job();
                        pending = own_tools::own_batch_job(&tj, &cases, &group, &mut out)?;
                    }
                    Job::Stress(case) => {
                        // The verdict said as soon as it is known; counted down when the job ends,
                        // an error or a panic included.
                        let ended = StressEnded::new(&stress, &case.name);
                        let end =
                            stress_job(slot, catalog, case, cfg, exe, &mut out, |e| ended.say(e));
                        drop(ended);
                        end?;
                    }
                }
                Ok((out, pending))
            },
            |r| {
                if let Ok((part, hangs)) = r {
                    let hung = PendingHang::keys(hangs);
                    part.events_with_hangs(&hung).iter().for_each(&on_done);
                }
            },
        )
    });
    let mut run = GateRun {
        subjects: catalog.cases.iter().map(|c| c.name.clone()).collect(),
        ..Default::default()
    };
    let mut pending = Vec::new();
    for r in results {
        let (part, hangs) = r?;
        run.absorb(part);
        pending.extend(hangs);
    }
    // A stress hang beside other GPU work counts once the GPU held alone confirms it.
    if crate::run::lease::gpu_present() {
        alone::confirm(catalog, cfg, exe, &mut run);
    }
    for h in pending {
        let subject = h.subject().to_string();
        let plain_hung = stressed.contains(&subject.as_str()).then(|| {
            run.findings
                .iter()
                .any(|f| f.id.subject == subject && alone::is_stress_hang(f))
        });
        h.resolve(plain_hung, &mut run);
    }
    if let Some(m) = &catalog.manifest {
        run.absorb(super::manifest_programs::run_programs(
            &m.programs,
            &catalog.root,
            cfg,
        )?);
        run.subjects
            .extend(m.programs.iter().map(|p| p.name.clone()));
    }
    run.tidy();
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

#[cfg(any(test, feature = "internals", feature = "testing"))]
/// One detector on one manifest kernel: stress with its oracle (`tool` `None`) or one
/// sanitizer; a sanitizer's hang is judged without plain runs. For callers that make one test
/// per (kernel, detector) (`testing.rs`).
pub fn run_one(
    catalog: &Catalog,
    case: &Case,
    tool: Option<Tool>,
    cfg: &GateConfig,
    exe: &Path,
) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let mut run = GateRun {
        subjects: vec![case.name.clone()],
        ..Default::default()
    };
    match tool {
        None => {
            stress_job(
                &mut stress::Slot::default(),
                catalog,
                case,
                cfg,
                exe,
                &mut run,
                |_| {},
            )?;
        }
        Some(tool) => {
            let sc = tool_config(cfg, tool);
            let r = sanitize::runner::run(catalog, case, &sc, exe)?;
            let mut sources = Sources::new(&catalog.root);
            if let Some(h) = sanitizers::add(&case.name, &r, &case.path, &mut sources, &mut run) {
                h.resolve(None, &mut run);
            }
        }
    }
    run.tidy();
    run.seconds = start.elapsed().as_secs_f64();
    // Its caller reports this run whole: reports set aside inside a library's own code are
    // named in notes here, as `racegate gate` and `api::Gate::run` do, never dropped unsaid.
    Ok(super::library_reports::settled(run, false))
}

/// One run of `group` on `case` (one tool, or globalcheck and sharedcheck together); each
/// detector's findings and time (its share of a shared run's) recorded as its own. Hangs are
/// returned to be judged against the plain runs.
fn sanitize_job(
    tj: &ToolJob,
    case: &Case,
    group: &[Tool],
    out: &mut GateRun,
) -> Result<Vec<PendingHang>> {
    let (catalog, exe) = (tj.catalog, tj.exe);
    let configs = tj.configs(group[0]);
    let sc = tj.for_case(&configs, &case.name);
    let runs = match group {
        [_] => vec![sanitize::runner::run(catalog, case, sc, exe)?],
        _ => sanitize::runner::run_own(catalog, case, sc, exe, group)?,
    };
    let mut sources = Sources::new(&catalog.root);
    Ok(runs
        .iter()
        .filter_map(|r| sanitizers::add(&case.name, r, &case.path, &mut sources, out))
        .collect())
}

/// One tool on several kernels in one process where it can settle them, each other kernel
/// alone ([`sanitize::batch::run`]); each run is added as [`sanitize_job`] adds it. A kernel
/// whose stress run missed its deadline runs alone from the start: under the tool it hangs too,
/// and inside the batch it would cost the batch's deadline before its own (H200 run 25:
/// `chained_scan_spin` cost each tool 40 s of the gate's 114.5). Under memcheck, so does one
/// whose stress run faulted: memcheck stops the batch at it (its context is gone), and the
/// cases after it run again as another batch, one after the other (H200 run 29: three memcheck
/// batches in a row, 21 s, for one group of the corpus gate).
fn batch_job(
    tj: &ToolJob,
    cases: &[&Case],
    tool: Tool,
    out: &mut GateRun,
) -> Result<Vec<PendingHang>> {
    let (catalog, exe) = (tj.catalog, tj.exe);
    let configs = tj.configs(tool);
    let (alone, together): (Vec<&Case>, Vec<&Case>) =
        cases.iter().partition(|c| tj.st.alone_under(tool, &c.name));
    // The ones alone beside the batch, not after it: a hung one waits out a deadline.
    let (hung, batch) = std::thread::scope(|s| {
        let hung = s.spawn(crate::proc::watchdog::thread_env::carried(|| {
            let one =
                |c: &Case| sanitize::runner::run(catalog, c, tj.for_case(&configs, &c.name), exe);
            // Two at once: a hung kernel spins the GPU for its deadline, and more of them
            // slow racecheck's start past its cut.
            pool::run_all(alone.clone(), 2, one, |_| {})
                .into_iter()
                .collect::<Result<Vec<_>>>()
        }));
        let batch = sanitize::batch::run(catalog, &together, &configs.plain, exe);
        (hung.join().expect("the hung kernels' runs"), batch)
    });
    let mut runs = hung?;
    runs.extend(batch?);
    let cases: Vec<&Case> = alone.into_iter().chain(together).collect();
    let mut sources = Sources::new(&catalog.root);
    Ok(cases
        .iter()
        .zip(&runs)
        .filter_map(|(case, r)| sanitizers::add(&case.name, r, &case.path, &mut sources, out))
        .collect())
}

/// One kernel's stress run, its finding added to `out`; how it ended, which `verdict` also
/// sees as soon as it is known (before the minimal-repro search of a failure).
fn stress_job(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    case: &Case,
    cfg: &GateConfig,
    exe: &Path,
    out: &mut GateRun,
    verdict: impl FnOnce(&StressEnd),
) -> Result<StressEnd> {
    let r = stress::run_in(slot, catalog, case, &cfg.battery.stress(true), exe, |_| {})?;
    let oracle = match case.kernel_spec().map(|k| &k.check) {
        Some(Check::Reference { path, entry }) => format!("reference {path}:{entry}"),
        _ => "determinism".into(),
    };
    out.mark_checked(&case.name, "stress", r.seconds);
    let end = match r.verdict {
        Verdict::Pass => StressEnd::Passed,
        Verdict::Hang { .. } => StressEnd::Hung {
            // The hung trial is the last one run: none before it means none finished.
            finished_none: r.trials_run <= 1,
        },
        Verdict::Fault { .. } => StressEnd::Faulted,
        _ => StressEnd::Flagged,
    };
    verdict(&end);
    let kind = match &r.verdict {
        Verdict::Pass => return Ok(end),
        Verdict::Fail => format!("wrong results against the {oracle} oracle"),
        Verdict::Hang { .. } => "hang: a trial missed its deadline".into(),
        Verdict::Fault { error } => {
            format!("device fault: {}", error.lines().next().unwrap_or(""))
        }
    };
    let id = Identity {
        subject: case.name.clone(),
        detector: "stress".into(),
        kind: kind.clone(),
        function: case.entry.name.clone(),
        ..Default::default()
    };
    let mut message = format!(
        "{kind}: {} of {} trials{}",
        r.failures,
        r.trials_run,
        r.repro
            .as_ref()
            .map(|c| format!("; reproduce: {c}"))
            .unwrap_or_default()
    );
    // Wrong results and faults get a minimal repro (a fault ends its worker at once); a hang
    // would cost a deadline per candidate.
    if let (Verdict::Fail | Verdict::Fault { .. }, Some(budget)) = (&r.verdict, cfg.shrink) {
        let sc = crate::run::shrink::ShrinkConfig {
            budget,
            ..Default::default()
        };
        match crate::run::shrink::shrink(
            slot,
            catalog,
            case,
            &cfg.battery.stress(true),
            exe,
            &sc,
            r.repro.as_deref(),
        )? {
            Some(s) if s.original_repro => message.push_str(&format!(
                "; no size tried has a repro that fails on its first trial in most reruns; the run's own: {}",
                s.repro
            )),
            Some(s) => message.push_str(&format!(
                "; minimal repro: size {}, {} of {} reruns failed: {}",
                s.size, s.confirmed, s.confirm, s.repro
            )),
            None => message.push_str("; no smaller failing problem found within the shrink budget"),
        }
    }
    let line = entry_line(&catalog.root, &case.path, &case.entry.name);
    let mut f = GateFinding::new(id, &case.path, line, message);
    f.detection = r.first_failing_trial().map(|trial| Detection {
        trial,
        // Whole milliseconds, toward zero (a time is never negative).
        millis: crate::source::values::f64_to_u64(
            r.first_detection_seconds.unwrap_or(r.seconds) * 1e3,
        ),
        failures: r.failures,
        trials: r.trials_run,
    });
    out.findings.push(f);
    Ok(end)
}

mod alone;
pub mod own_tools;
#[cfg(test)]
mod tests;
pub(in crate::gate) mod tool_job;
