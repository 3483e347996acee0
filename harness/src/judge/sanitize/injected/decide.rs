//! What every detector of the injected tool concludes before its own findings: a hang, a tool
//! that was not loaded or failed, a crash, no launch ([`preamble`]); which inconclusive outcomes
//! are limits of the method ([`is_limit`]); why a launch's findings cannot be trusted. Nothing
//! undecidable is clean.

use super::fence::handoffs::FENCE_CANNOT_JUDGE;
use super::report;
use super::report::{Distrust, Launch};
use super::streams::verdict::STREAM_CANNOT_JUDGE;
use crate::judge::sanitize::normalize::Finding;
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::Exit;

/// How every inconclusive outcome that is a limit of the method, not a failure, begins (an
/// expectation of `may` records these; a tool that failed stays inconclusive everywhere).
pub const CANNOT_JUDGE: &str = "globalcheck cannot judge this run: ";

/// How every inconclusive outcome of sharedcheck that is a limit of the method begins.
pub const SHARED_CANNOT_JUDGE: &str = "sharedcheck cannot judge this run: ";

/// Whether an inconclusive outcome's text is one of globalcheck's (or sharedcheck's) judged
/// limits.
pub fn is_limit(why: &str) -> bool {
    why.starts_with(CANNOT_JUDGE)
        || why.starts_with(SHARED_CANNOT_JUDGE)
        || why.starts_with(FENCE_CANNOT_JUDGE)
        || why.starts_with(STREAM_CANNOT_JUDGE)
}

pub(super) fn distrust_why(d: Distrust) -> &'static str {
    match d {
        Distrust::NamedBarriers => "uses named or partial barriers (bar.sync with an id), which it counts as block-wide, so its findings between warps cannot be trusted",
        Distrust::StrongAccesses => "has volatile or relaxed/acquire-release atomic loads and stores (.STRONG in its SASS), which it cannot take as a handoff, so its findings between warps or blocks cannot be trusted",
        Distrust::NoLineTable => "has no line table (nvdisasm missing or failed), so its findings have no line and volatile accesses cannot be told apart",
        Distrust::UnseenWrites => "writes shared memory in ways it cannot see byte by byte (bulk or TMA copies, stmatrix, a cluster's distributed shared memory), so its reads of unwritten shared memory cannot be trusted",
    }
}

/// What every detector of the tool concludes before looking at findings: a hang, a tool that
/// was not loaded or failed, a crash, no launch.
pub(super) fn preamble(
    name: &str,
    exit: &Exit,
    left_behind: bool,
    rep: &report::Report,
) -> Option<Outcome> {
    if *exit == Exit::TimedOut {
        return Some(Outcome::Hang {
            left_behind,
            said: None,
        });
    }
    if !rep.started {
        return Some(Outcome::Inconclusive(format!(
            "{name} was not loaded into the target (no report; {})",
            match exit {
                Exit::Code(c) => format!("the target exited {c}"),
                Exit::Signal(s) => format!("the target died of signal {s}"),
                Exit::TimedOut => unreachable!(),
            }
        )));
    }
    if let Some(e) = rep.errors.first() {
        return Some(Outcome::Inconclusive(format!("{name}: {e}")));
    }
    if let Exit::Signal(s) = exit {
        return Some(Outcome::Inconclusive(format!(
            "the target died of signal {s} under {name}"
        )));
    }
    // A program that ran to its end (exit 0, nothing left running) and made no kernel launch
    // call at all (the tool counts them at the driver's entry, whatever they returned) gave the
    // tool nothing to check: a bandwidth test's copies alone. A launch call that never reached
    // the GPU (no kernel image for this GPU, a bad configuration) leaves it inconclusive.
    if rep.launches.is_empty() && rep.stepped_aside() == 0 {
        return Some(match (exit, left_behind, rep.launch_calls) {
            (Exit::Code(0), false, Some(0)) => Outcome::Clean,
            (_, _, Some(n)) if n > 0 => Outcome::Inconclusive(format!(
                "{name} saw no kernel launch, yet the program made {n} launch call(s): none                  reached the GPU"
            )),
            _ => Outcome::Inconclusive(format!("{name} saw no kernel launch")),
        });
    }
    if let Some(l) = rep.launches.iter().find(|l| l.epoch_overflow > 0) {
        return Some(Outcome::Inconclusive(format!(
            "{}launch {} of {}: threads passed 2^15 barriers, past what its epochs can order",
            cannot_judge(name),
            l.launch,
            l.kernel
        )));
    }
    None
}

/// [`CANNOT_JUDGE`], or [`SHARED_CANNOT_JUDGE`] for sharedcheck.
pub(super) fn cannot_judge(name: &str) -> &'static str {
    if name == "sharedcheck" {
        SHARED_CANNOT_JUDGE
    } else {
        CANNOT_JUDGE
    }
}

/// The sentence for launches stepped aside (kernel nodes of CUDA graphs): never clean.
pub(super) fn stepped_aside_why(name: &str, rep: &report::Report) -> Option<Outcome> {
    let n = rep.stepped_aside();
    (n > 0).then(|| {
        Outcome::Inconclusive(format!(
            "{}{n} kernel launch(es) of CUDA graphs were stepped aside (not instrumented)",
            cannot_judge(name)
        ))
    })
}

/// The launches whose findings cannot be trusted, each (why, launch) once in launch order with
/// the launch's kernel: `why` of each finding `findings` gives of a launch.
pub(super) fn set_aside<'a, F: 'a>(
    rep: &'a report::Report,
    findings: impl Fn(&'a Launch) -> &'a [F],
    why: impl Fn(&Launch, &F) -> Option<Distrust>,
) -> Vec<(Distrust, u32, String)> {
    let mut out: Vec<(Distrust, u32, String)> = Vec::new();
    for l in &rep.launches {
        for f in findings(l) {
            if let Some(d) = why(l, f) {
                if !out.iter().any(|(d2, n, _)| *d2 == d && *n == l.launch) {
                    out.push((d, l.launch, l.kernel.clone()));
                }
            }
        }
    }
    out
}

/// The errors among `all` (what counts); the warnings and the launches `set_aside` named go to
/// `log`, under the name of `tool`.
pub(super) fn counted(
    tool: &str,
    all: Vec<Finding>,
    set_aside: &[(Distrust, u32, String)],
    log: &mut String,
) -> Vec<Finding> {
    let (errors, warnings): (Vec<_>, Vec<_>) = all.into_iter().partition(|f| f.level == "Error");
    for w in &warnings {
        log.push_str(&format!("{tool} warning (not counted): {}\n", w.line()));
    }
    for (d, launch, kernel) in set_aside {
        log.push_str(&format!(
            "{tool}: findings of launch {launch} of {kernel} set aside: {}\n",
            distrust_why(*d)
        ));
    }
    errors
}

/// A target that exited non-zero with nothing found: inconclusive (a failed launch leaves
/// nothing to judge).
pub(super) fn failed_exit(tool: &str, exit: &Exit) -> Option<Outcome> {
    match exit {
        Exit::Code(c) if *c != 0 => Some(Outcome::Inconclusive(format!(
            "the target exited {c} without a {tool} finding (a failed launch leaves nothing to judge)"
        ))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str =
        r#"{"tool":"globalcheck","mode":1,"budget_bytes":1,"shared_budget_bytes":1,"patches":""}"#;

    #[test]
    fn a_program_that_ran_to_its_end_making_no_launch_call_gave_nothing_to_check() {
        let rep = report::parse(&format!("{START}\n{{\"launch_calls\":0}}\n"));
        assert!(rep.started && rep.launches.is_empty());
        let clean = preamble("globalcheck", &Exit::Code(0), false, &rep);
        assert!(matches!(clean, Some(Outcome::Clean)), "{clean:?}");
        // Something left running, or no count written: nothing can be said.
        let left = preamble("globalcheck", &Exit::Code(0), true, &rep);
        assert!(matches!(left, Some(Outcome::Inconclusive(_))), "{left:?}");
        let uncounted = report::parse(START);
        let o = preamble("globalcheck", &Exit::Code(0), false, &uncounted);
        assert!(matches!(o, Some(Outcome::Inconclusive(_))), "{o:?}");
    }

    #[test]
    fn launch_calls_of_every_process_of_the_target_count() {
        // A child that made none after a parent whose launches never reached the GPU.
        let rep = report::parse(&format!(
            "{START}\n{{\"launch_calls\":2}}\n{{\"launch_calls\":0}}\n"
        ));
        assert_eq!(rep.launch_calls, Some(2));
        let o = preamble("globalcheck", &Exit::Code(0), false, &rep);
        assert!(matches!(o, Some(Outcome::Inconclusive(_))), "{o:?}");
    }

    #[test]
    fn launch_calls_that_never_reached_the_gpu_leave_the_tool_inconclusive() {
        let rep = report::parse(&format!("{START}\n{{\"launch_calls\":3}}\n"));
        let o = preamble("globalcheck", &Exit::Code(0), false, &rep);
        assert!(
            matches!(&o, Some(Outcome::Inconclusive(w)) if w.contains("3 launch call(s)")),
            "{o:?}"
        );
        for exit in [Exit::Code(1), Exit::Signal(11)] {
            let o = preamble("globalcheck", &exit, false, &rep);
            assert!(
                matches!(&o, Some(Outcome::Inconclusive(w)) if w.contains("died") || w.contains("no kernel launch")),
                "{o:?}"
            );
        }
    }
}
