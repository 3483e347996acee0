//! racegate's own tools (globalcheck, sharedcheck, fencecheck) on several cases in one run.
//! Part of `judge/`: may import the stages below `judge/` and the rest of `judge::sanitize`.
//!
//! This is [`super::batch`] for the injected tool. When the run was whole and its report
//! says which launches are whose ([`super::injected::split`]), each case is decided on its own
//! launches and the ones the tools doubt run alone ([`per_case_or_alone`]). Otherwise the run
//! settles every case as clean or none ([`settle_own`]), since the tools return their findings
//! before they look at what they could not judge; when its only verdicts are findings at code of
//! some cases, those run alone and the others again as a batch ([`own_owners`]).

use std::path::Path;

use super::batch::{case_log, complete, holders, ptx_files, ran_once, ALONE_AT_ONCE};
use super::normalize::Finding;
use super::runner;
use super::tool::{Outcome, SanitizeConfig, SanitizerRun, Tool};
use crate::errors::Result;
use crate::source::catalog::{Case, Catalog};

/// racegate's own `tools` (globalcheck, sharedcheck, fencecheck) on `cases` in one injected
/// run: each case decided on its own launches when the report says which are whose
/// ([`per_case_or_alone`]); else every case settled when that run is clean for every tool and
/// every case printed that its launch ran ([`settle_own`]); otherwise each case alone
/// ([`runner::run_own`]), a few at once (or, when the only verdicts are findings at some cases'
/// code, those alone and the others again as a batch). Each settled case still gets
/// sharedcheck's look at its own unoptimized build (shared variables read and never written),
/// as a run alone does. One entry per case, each a run per tool.
pub fn run_own(
    catalog: &Catalog,
    cases: &[&Case],
    cfg: &SanitizeConfig,
    exe: &Path,
    tools: &[Tool],
) -> Result<Vec<Vec<SanitizerRun>>> {
    let alone = |c: &Case| runner::run_own(catalog, c, cfg, exe, tools);
    // A few at once, as a compute-sanitizer batch's unsettled cases.
    let each_alone = || {
        crate::proc::pool::run_all(cases.to_vec(), ALONE_AT_ONCE, alone, |_| {})
            .into_iter()
            .collect()
    };
    if cases.len() < 2 || cfg.keep_xml.is_some() {
        return each_alone();
    }
    let nonce = runner::new_nonce();
    let Ok((target, ptxs)) = runner::target_command_for(catalog, cases, cfg, exe, Some(&nonce))
    else {
        return each_alone();
    };
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let label = names.join("+");
    // Each case's PTX, read once: its entry as launches name it (a C++ entry by its mangled
    // name) and the files its code came from.
    let texts: Option<Vec<String>> = ptxs
        .iter()
        .map(|p| std::fs::read_to_string(p).ok())
        .collect();
    let symbols: Option<Vec<String>> = texts.as_ref().map(|texts| {
        cases
            .iter()
            .zip(texts)
            .map(|(c, t)| {
                let names = crate::build::ptx::names(t);
                names
                    .get(&c.entry.name)
                    .cloned()
                    .unwrap_or_else(|| c.entry.name.clone())
            })
            .collect()
    });
    // No confirm runs for the batch: they rerun the whole target, so a changed output would not
    // say whose reads reached it. A case whose unwritten shared reads are findings runs alone,
    // and its confirm runs there.
    let batch_cfg = SanitizeConfig {
        confirm: false,
        ..cfg.clone()
    };
    // One case's deadline for the whole run, as for compute-sanitizer's batches.
    let root = &catalog.root;
    let Ok((runs, per_case)) = super::injected::run::run_tools_split(
        &label,
        &target,
        &batch_cfg,
        root,
        tools,
        symbols.as_deref(),
    ) else {
        return each_alone();
    };
    if let Some(per_case) = per_case.filter(|_| whole(&runs, &names, &nonce, cfg.timeout)) {
        return per_case_or_alone(catalog, cases, cfg, &runs[0], per_case, alone);
    }
    let files = || -> Option<Vec<Vec<String>>> {
        Some(
            texts
                .as_ref()?
                .iter()
                .map(|t| ptx_files(t, &catalog.root))
                .collect(),
        )
    };
    if let Some(owners) = (!settle_own(&runs, &names, &nonce, cfg.timeout))
        .then(files)
        .flatten()
        .and_then(|files| own_owners(&runs, &names, &files, &nonce, cfg.timeout))
    {
        // Only findings, each at code of one case: those cases alone, the others again as a
        // batch of their own, judged whole by the same rule (H200 run 29: one kernel that
        // only sharedcheck flags sent the four others of its batch to runs alone).
        crate::proc::timeline::note("batch", || {
            format!("{label}: the cases with findings alone, the others again as a batch")
        });
        let (found, others): (Vec<usize>, Vec<usize>) = (0..cases.len()).partition(|&i| owners[i]);
        let others_cases: Vec<&Case> = others.iter().map(|&i| cases[i]).collect();
        let (found_runs, other_runs) = std::thread::scope(|s| {
            let found_runs = s.spawn(crate::proc::watchdog::thread_env::carried(|| {
                crate::proc::pool::run_all(
                    found.clone(),
                    ALONE_AT_ONCE,
                    |i| alone(cases[i]),
                    |_| {},
                )
            }));
            let other_runs = run_own(catalog, &others_cases, cfg, exe, tools);
            (
                found_runs.join().expect("the own tools' runs alone"),
                other_runs,
            )
        });
        let (mut found_runs, mut other_runs) = (found_runs.into_iter(), other_runs?.into_iter());
        return (0..cases.len())
            .map(|i| match owners[i] {
                true => found_runs.next().expect("one run per case with findings"),
                false => Ok(other_runs.next().expect("one run per other case")),
            })
            .collect();
    }
    if !settle_own(&runs, &names, &nonce, cfg.timeout) {
        crate::proc::timeline::note("batch", || {
            let why: Vec<String> = runs
                .iter()
                .map(|r| match &r.outcome {
                    Outcome::Clean => format!("{}: clean", r.tool),
                    Outcome::Findings(f) => format!("{}: {} finding(s)", r.tool, f.len()),
                    Outcome::Hang { .. } => format!("{}: hang", r.tool),
                    Outcome::Inconclusive(w) => format!("{}: inconclusive: {w}", r.tool),
                })
                .collect();
            format!("{label}: every case alone: {}", why.join("; "))
        });
        return each_alone();
    }
    let n = cases.len() as f64;
    Ok(cases
        .iter()
        .map(|c| {
            let settled = runs
                .iter()
                .map(|r| SanitizerRun {
                    case: c.name.clone(),
                    tool: r.tool,
                    outcome: Outcome::Clean,
                    exit: format!("{} (one process for {})", r.exit, names.join(", ")),
                    seconds: r.seconds / n,
                    log: case_log(&r.log, &c.name, &names),
                    command: r.command.clone(),
                })
                .collect();
            runner::with_never_written(settled, catalog, c, cfg)
        })
        .collect())
}

/// The cases of a whole batch run (`run`, one of its tools' runs) each tool decided on their
/// own launches ([`super::injected::split`]) as clean or findings, settled so; the others
/// (a doubt, a hang, or sharedcheck's reads of unwritten shared memory, whose confirm runs need
/// a run of the case's own) each `alone`, a few at once. Before, any finding or doubt of one
/// case sent every case alone or to another batch (H200 run 29's corpus gate: 39 own-tool
/// processes for 39 kernels, six of them alone for one kernel's out-of-bounds reads).
fn per_case_or_alone(
    catalog: &Catalog,
    cases: &[&Case],
    cfg: &SanitizeConfig,
    run: &SanitizerRun,
    per_case: super::injected::run::PerCase,
    alone: impl Fn(&Case) -> Result<Vec<SanitizerRun>> + Sync,
) -> Result<Vec<Vec<SanitizerRun>>> {
    use super::injected::run::has_uninit_read;
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let n = cases.len() as f64;
    let settled: Vec<Option<Vec<SanitizerRun>>> = per_case
        .into_iter()
        .zip(cases)
        .map(|(decided, c)| {
            let judged = decided.iter().all(|(_, o, _)| {
                matches!(o, Outcome::Clean | Outcome::Findings(_)) && !has_uninit_read(o)
            });
            judged.then(|| {
                let runs = decided
                    .into_iter()
                    .map(|(tool, outcome, log)| SanitizerRun {
                        case: c.name.clone(),
                        tool,
                        outcome,
                        exit: format!("{} (one process for {})", run.exit, names.join(", ")),
                        seconds: run.seconds / n,
                        log: case_log(&log, &c.name, &names),
                        command: run.command.clone(),
                    })
                    .collect();
                runner::with_never_written(runs, catalog, c, cfg)
            })
        })
        .collect();
    let rest: Vec<usize> = (0..cases.len()).filter(|&i| settled[i].is_none()).collect();
    if !rest.is_empty() {
        crate::proc::timeline::note("batch", || {
            let who: Vec<&str> = rest.iter().map(|&i| names[i]).collect();
            format!(
                "{}: judged per case; alone: {}",
                names.join("+"),
                who.join("+")
            )
        });
    }
    let mut alone_runs =
        crate::proc::pool::run_all(rest.clone(), ALONE_AT_ONCE, |i| alone(cases[i]), |_| {})
            .into_iter();
    settled
        .into_iter()
        .map(|s| match s {
            Some(runs) => Ok(runs),
            None => alone_runs
                .next()
                .expect("one run alone per case not judged"),
        })
        .collect()
}

/// Which cases own a run of racegate's own tools that did not settle them all, when that run
/// was whole, every case ran once, every tool's outcome was clean or findings, and every
/// finding is at a line of a file exactly one case's code came from; `None` otherwise, or
/// when every case owns some (nothing would be left to batch again). Only which case runs how
/// is decided from it: no case is settled by it ([`settle_own`]).
fn own_owners(
    runs: &[SanitizerRun],
    names: &[&str],
    files: &[Vec<String>],
    nonce: &str,
    timeout: std::time::Duration,
) -> Option<Vec<bool>> {
    if !whole(runs, names, nonce, timeout) {
        return None;
    }
    let mut owners = vec![false; names.len()];
    for r in runs {
        let findings: &[Finding] = match &r.outcome {
            Outcome::Clean => &[],
            Outcome::Findings(f) => f,
            Outcome::Hang { .. } | Outcome::Inconclusive(_) => return None,
        };
        for f in findings {
            let (file, _) = f.file_line()?;
            match holders(files, file)[..] {
                [i] => owners[i] = true,
                _ => return None,
            }
        }
    }
    (owners.iter().any(|o| *o) && !owners.iter().all(|o| *o)).then_some(owners)
}

/// Whether an injected run of racegate's own tools settles every case as clean: the run was
/// whole and every tool's run was clean; otherwise none is settled. Not per case as a
/// compute-sanitizer batch: the tools return their findings as soon as there are any, before
/// they look at what they could not judge (a dropped finding, an untracked access, a distrusted
/// launch), so a run with one case's findings says nothing of the others' blind spots (a
/// hostile review of run 28's change, which had settled them per case).
fn settle_own(
    runs: &[SanitizerRun],
    names: &[&str],
    nonce: &str,
    timeout: std::time::Duration,
) -> bool {
    whole(runs, names, nonce, timeout) && runs.iter().all(|r| r.outcome == Outcome::Clean)
}

/// Whether an injected run (its tools' `runs`, which share its time) was whole: some tool ran,
/// the target said every case ran once and that all of them ran, with this run's nonce, within
/// one case's deadline.
fn whole(runs: &[SanitizerRun], names: &[&str], nonce: &str, timeout: std::time::Duration) -> bool {
    !runs.is_empty()
        && runs.iter().all(|r| {
            complete(&r.log, nonce, r.seconds * runs.len() as f64, timeout)
                && names.iter().all(|n| ran_once(&r.log, n, nonce))
        })
}

#[cfg(test)]
mod tests;
