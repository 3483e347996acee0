//! A manifest kernel's stress hang, confirmed with the GPU held alone before it counts: the
//! gate's jobs share the GPU (the tools' runs beside the stress runs, other racegate processes
//! beside this one), and a trial that missed its deadline there may have been slowed, not hung.
//! Run again alone, a stress that hangs again is the hang; one that finishes is inconclusive,
//! slow under contention, and what that run found (wrong results, a fault) counts.

use std::collections::BTreeSet;

use super::super::finding::{GateConfig, GateFinding, GateRun};
use super::super::stress_state::StressEnd;
use crate::errors::Result;
use crate::run::lease::{say_wait, Access, GpuLock, LEASE_WAIT};
use crate::run::stress;
use crate::source::catalog::Catalog;

/// Whether `f` is a stress hang (the kind [`super::stress_job`] gives one).
pub(super) fn is_stress_hang(f: &GateFinding) -> bool {
    f.id.detector == "stress" && f.id.kind.starts_with("hang")
}

/// The kernels whose stress hung in `run`.
fn hung(run: &GateRun) -> BTreeSet<String> {
    run.findings
        .iter()
        .filter(|f| is_stress_hang(f))
        .map(|f| f.id.subject.clone())
        .collect()
}

/// Each stress hang in `run` run again holding the GPU alone, and judged by that run
/// ([`judged`]); with no search for a smaller case (the GPU is held alone meanwhile). A rerun
/// that cannot be made (the GPU not given in time, a failure) leaves the hang as it was, with a
/// note that says why.
pub(super) fn confirm(
    catalog: &Catalog,
    cfg: &GateConfig,
    exe: &std::path::Path,
    run: &mut GateRun,
) {
    let cfg = GateConfig {
        shrink: None,
        ..cfg.clone()
    };
    for subject in hung(run) {
        let Some(case) = catalog.cases.iter().find(|c| c.name == subject) else {
            continue;
        };
        let again = || -> Result<(StressEnd, GateRun)> {
            let held = GpuLock::acquire(Access::Exclusive, LEASE_WAIT, say_wait)?;
            let mut again = GateRun::default();
            let mut slot = stress::Slot::default();
            let end = super::stress_job(&mut slot, catalog, case, &cfg, exe, &mut again, |_| {})?;
            drop(held);
            Ok((end, again))
        };
        match again() {
            Ok((end, again)) => judged(run, &subject, &end, again),
            Err(e) => run.notes.push(format!(
                "{subject}: its stress hang was not run again with the GPU held alone ({}): the \
                 hang stands unconfirmed",
                e.chain()
            )),
        }
    }
}

/// `run` after `subject`'s stress, which hung beside other GPU work, ran again alone and ended
/// as `end` with its findings in `again`.
fn judged(run: &mut GateRun, subject: &str, end: &StressEnd, again: GateRun) {
    if matches!(end, StressEnd::Hung { .. }) {
        run.notes.push(format!(
            "{subject}: stress hung beside other GPU work and again with the GPU held alone: the \
             hang is confirmed"
        ));
        return;
    }
    run.findings
        .retain(|f| !(f.id.subject == subject && is_stress_hang(f)));
    let then = match end {
        StressEnd::Passed => "passed",
        StressEnd::Flagged => "gave wrong results (its finding stands)",
        StressEnd::Faulted => "faulted (its finding stands)",
        StressEnd::Hung { .. } => "hung",
    };
    run.mark_inconclusive(
        subject,
        "stress",
        format!(
            "slow under contention: a stress trial missed its deadline beside other GPU work; run \
             again with the GPU held alone, stress {then}: not a hang"
        ),
    );
    run.findings.extend(
        again
            .findings
            .into_iter()
            .filter(|f| f.id.detector == "stress"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::fingerprint::Identity;

    fn stress_finding(subject: &str, kind: &str) -> GateFinding {
        let id = Identity {
            subject: subject.into(),
            detector: "stress".into(),
            kind: kind.into(),
            ..Default::default()
        };
        GateFinding::new(id, "k.cu", None, kind.into())
    }

    fn hung_run() -> GateRun {
        GateRun {
            findings: vec![
                stress_finding("k", "hang: a trial missed its deadline"),
                stress_finding("other", "hang: a trial missed its deadline"),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn a_stress_hang_that_finishes_alone_is_slow_under_contention() {
        let mut run = hung_run();
        assert_eq!(hung(&run).len(), 2);
        judged(&mut run, "k", &StressEnd::Passed, GateRun::default());
        assert!(run.findings.iter().all(|f| f.id.subject != "k"), "{run:?}");
        assert_eq!(run.findings.len(), 1, "the other kernel's hang is its own");
        assert_eq!(run.inconclusive.len(), 1);
        assert!(format!("{:?}", run.inconclusive[0]).contains("slow under contention"));
    }

    #[test]
    fn a_stress_hang_confirmed_alone_stays_and_a_wrong_result_alone_counts() {
        let mut run = hung_run();
        judged(
            &mut run,
            "k",
            &StressEnd::Hung {
                finished_none: true,
            },
            GateRun::default(),
        );
        assert_eq!(run.findings.len(), 2);
        assert!(run.notes[0].contains("the hang is confirmed"));
        let mut run = hung_run();
        let again = GateRun {
            findings: vec![stress_finding(
                "k",
                "wrong results against the determinism oracle",
            )],
            ..Default::default()
        };
        judged(&mut run, "k", &StressEnd::Flagged, again);
        let kinds: Vec<&str> = run
            .findings
            .iter()
            .filter(|f| f.id.subject == "k")
            .map(|f| f.id.kind.as_str())
            .collect();
        assert_eq!(kinds, ["wrong results against the determinism oracle"]);
    }
}
