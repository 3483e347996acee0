//! racegate's own tools (globalcheck, sharedcheck, fencecheck, streamcheck: one injected tool)
//! on a manifest's kernels: those whose stress run passed or gave wrong results together in one
//! injected run, each judged on its own launches; every other kernel alone.

#[cfg(any(test, feature = "internals", feature = "testing"))]
use std::path::Path;

#[cfg(any(test, feature = "internals", feature = "testing"))]
use super::tool_job::tool_config;
use super::tool_job::ToolJob;
use crate::errors::Result;
#[cfg(any(test, feature = "internals", feature = "testing"))]
use crate::gate::finding::GateConfig;
use crate::gate::finding::GateRun;
use crate::gate::fingerprint::Sources;
use crate::gate::sanitizers::{self, PendingHang};
use crate::gate::stress_state::StressState;
use crate::judge::sanitize::{self, Tool};
use crate::source::catalog::Case;
#[cfg(any(test, feature = "internals", feature = "testing"))]
use crate::source::catalog::Catalog;

/// racegate's own `group` of tools on `cases`: the kernels whose stress run passed or gave wrong
/// results in one injected run, each judged on its own launches there
/// ([`sanitize::own_batch::run_own`]: a case the tools doubt runs alone), every other kernel
/// alone ([`together_under_own_tools`]), at most [`OWN_ALONE_AT_ONCE`] at once beside the batch. Each run is
/// added as [`sanitize_job`] adds it. In the corpus gate of H200 run 26 a process per kernel
/// and group cost 7-20 s each; in run 29 the kernels with wrong results, alone, were 14 of 39
/// own-tool processes.
pub(super) fn own_batch_job(
    tj: &ToolJob,
    cases: &[&Case],
    group: &[Tool],
    out: &mut GateRun,
) -> Result<Vec<PendingHang>> {
    let (catalog, exe) = (tj.catalog, tj.exe);
    let configs = tj.configs(group[0]);
    let (together, alone): (Vec<&Case>, Vec<&Case>) = cases
        .iter()
        .partition(|c| together_under_own_tools(&tj.st, &c.name));
    let (alone_runs, batch_runs) = std::thread::scope(|s| {
        let alone_runs = s.spawn(crate::proc::watchdog::thread_env::carried(|| {
            crate::proc::pool::run_all(
                alone.clone(),
                OWN_ALONE_AT_ONCE,
                |c| {
                    sanitize::runner::run_own(
                        catalog,
                        c,
                        tj.for_case(&configs, &c.name),
                        exe,
                        group,
                    )
                },
                |_| {},
            )
        }));
        let batch = sanitize::own_batch::run_own(catalog, &together, &configs.plain, exe, group);
        (alone_runs.join().expect("the own tools' runs alone"), batch)
    });
    let mut sources = Sources::new(&catalog.root);
    let mut pending = Vec::new();
    let alone_runs = alone_runs.into_iter().collect::<Result<Vec<_>>>()?;
    for (case, runs) in alone
        .iter()
        .zip(&alone_runs)
        .chain(together.iter().zip(&batch_runs?))
    {
        pending.extend(
            runs.iter()
                .filter_map(|r| sanitizers::add(&case.name, r, &case.path, &mut sources, out)),
        );
    }
    Ok(pending)
}

/// Whether racegate's own tools take `case` in their batch: its stress run passed or gave wrong
/// results. One that hung would cost the batch its deadline, one that faulted would end it, and
/// one never stress-run (a manifest kernel checked by the sanitizers only) or whose stress job
/// ended in an error has nothing that says it does neither: each runs alone.
pub(super) fn together_under_own_tools(st: &StressState, case: &str) -> bool {
    st.passed.contains(case) || st.flagged.contains(case)
}

/// How many kernels of an own-tool batch run alone at once beside it.
const OWN_ALONE_AT_ONCE: usize = 4;

#[cfg(any(test, feature = "internals", feature = "testing"))]
/// globalcheck and sharedcheck on one manifest kernel in one injected run: a [`GateRun`] for
/// each, in that order, as the gate's run of one kernel would give it (each with its share of the run's time).
pub fn run_own_pair(
    catalog: &Catalog,
    case: &Case,
    cfg: &GateConfig,
    exe: &Path,
) -> Result<Vec<GateRun>> {
    let sc = tool_config(cfg, Tool::Globalcheck);
    let runs = sanitize::runner::run_own(
        catalog,
        case,
        &sc,
        exe,
        &[Tool::Globalcheck, Tool::Sharedcheck],
    )?;
    Ok(runs
        .iter()
        .map(|r| {
            let mut run = GateRun {
                subjects: vec![case.name.clone()],
                ..Default::default()
            };
            let mut sources = Sources::new(&catalog.root);
            if let Some(h) = sanitizers::add(&case.name, r, &case.path, &mut sources, &mut run) {
                h.resolve(None, &mut run);
            }
            run.tidy();
            run.seconds = r.seconds;
            run
        })
        .collect())
}
