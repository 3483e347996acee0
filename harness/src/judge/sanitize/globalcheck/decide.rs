//! What a globalcheck/sharedcheck run concluded: from the tool's report (and the process's
//! exit) to an [`Outcome`] per detector. Nothing undecidable is clean: a report that is missing,
//! distrusted, over budget or stepped aside for is inconclusive, with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use super::lines::LineTable;
use super::report;
use super::report::Distrust;
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::Exit;

/// How every inconclusive outcome that is a limit of the method, not a failure, begins (an
/// expectation of `may` records these; a tool that failed stays inconclusive everywhere).
pub const CANNOT_JUDGE: &str = "globalcheck cannot judge this run: ";

/// Whether an inconclusive outcome's text is one of globalcheck's (or sharedcheck's) judged
/// limits.
pub fn is_limit(why: &str) -> bool {
    why.starts_with(CANNOT_JUDGE)
        || why.starts_with(SHARED_CANNOT_JUDGE)
        || why.starts_with(super::fence::FENCE_CANNOT_JUDGE)
        || why.starts_with(super::streams_verdict::STREAM_CANNOT_JUDGE)
}

fn distrust_why(d: Distrust) -> &'static str {
    match d {
        Distrust::NamedBarriers => "uses named or partial barriers (bar.sync with an id), which it counts as block-wide, so its findings between warps cannot be trusted",
        Distrust::StrongAccesses => "has volatile or relaxed/acquire-release atomic loads and stores (.STRONG in its SASS), which it cannot take as a handoff, so its findings between warps or blocks cannot be trusted",
        Distrust::NoLineTable => "has no line table (nvdisasm missing or failed), so its findings have no line and volatile accesses cannot be told apart",
        Distrust::UnseenWrites => "writes shared memory in ways it cannot see byte by byte (bulk or TMA copies, stmatrix, a cluster's distributed shared memory), so its reads of unwritten shared memory cannot be trusted",
    }
}

/// The outcome of a finished run. Public for tests on captured reports.
pub fn decide(
    exit: &Exit,
    left_behind: bool,
    rep: &report::Report,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    log: &mut String,
) -> Outcome {
    if let Some(o) = preamble("globalcheck", exit, left_behind, rep) {
        return o;
    }
    globalcheck_verdict(exit, rep, tables, root, log)
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
    if rep.launches.is_empty() && rep.stepped_aside() == 0 {
        return Some(Outcome::Inconclusive(format!(
            "{name} saw no kernel launch"
        )));
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
fn cannot_judge(name: &str) -> &'static str {
    if name == "sharedcheck" {
        SHARED_CANNOT_JUDGE
    } else {
        CANNOT_JUDGE
    }
}

/// The sentence for launches stepped aside (kernel nodes of CUDA graphs): never clean.
fn stepped_aside_why(name: &str, rep: &report::Report) -> Option<Outcome> {
    let n = rep.stepped_aside();
    (n > 0).then(|| {
        Outcome::Inconclusive(format!(
            "{}{n} kernel launch(es) of CUDA graphs were stepped aside (not instrumented)",
            cannot_judge(name)
        ))
    })
}

/// globalcheck's verdict once [`preamble`] has passed.
fn globalcheck_verdict(
    exit: &Exit,
    rep: &report::Report,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    log: &mut String,
) -> Outcome {
    // Findings the tool could not judge are set aside, launch by launch: a race it can judge
    // elsewhere in the run still counts, and only a run with nothing else found is inconclusive.
    let mut distrusted: Vec<(Distrust, u32, String)> = Vec::new();
    for l in &rep.launches {
        for f in &l.findings {
            if let Some(d) = report::distrust(rep, tables, l, f) {
                if !distrusted
                    .iter()
                    .any(|(d2, n, _)| *d2 == d && *n == l.launch)
                {
                    distrusted.push((d, l.launch, l.kernel.clone()));
                }
            }
        }
    }
    let all = report::findings_where(rep, tables, root, |l, f| {
        report::distrust(rep, tables, l, f).is_none()
    });
    let (errors, warnings): (Vec<_>, Vec<_>) = all.into_iter().partition(|f| f.level == "Error");
    for w in &warnings {
        log.push_str(&format!(
            "globalcheck warning (not counted): {}\n",
            w.line()
        ));
    }
    for (d, launch, kernel) in &distrusted {
        log.push_str(&format!(
            "globalcheck: findings of launch {launch} of {kernel} set aside: {}\n",
            distrust_why(*d)
        ));
    }
    let (untracked, over_budget) = rep.untracked();
    if untracked > 0 {
        log.push_str(&format!(
            "globalcheck: {untracked} global access(es) outside every tracked allocation\n"
        ));
    }
    if !errors.is_empty() {
        return Outcome::Findings(errors);
    }
    // Nothing found is "clean" only when everything was seen.
    if let Exit::Code(c) = exit {
        if *c != 0 {
            return Outcome::Inconclusive(format!(
                "the target exited {c} without a globalcheck finding (a failed launch leaves nothing to judge)"
            ));
        }
    }
    let dropped: u64 = rep.launches.iter().map(|l| l.dropped).sum();
    if dropped > 0 {
        return Outcome::Inconclusive(format!(
            "globalcheck's finding table overflowed: {dropped} finding(s) dropped"
        ));
    }
    if let Some((d, launch, kernel)) = distrusted.first() {
        return Outcome::Inconclusive(format!(
            "{CANNOT_JUDGE}launch {launch} of {kernel} {}",
            distrust_why(*d)
        ));
    }
    if untracked > 0 && over_budget.is_empty() {
        return Outcome::Inconclusive(format!(
            "{CANNOT_JUDGE}{untracked} global access(es) outside every allocation it knows (host-mapped, managed or imported memory is not tracked)"
        ));
    }
    if untracked > 0 && !over_budget.is_empty() {
        let list: Vec<String> = over_budget
            .iter()
            .map(|u| format!("{} bytes at 0x{:x}", u.size, u.base))
            .collect();
        return Outcome::Inconclusive(format!(
            "{CANNOT_JUDGE}its shadow budget left {} allocation(s) untracked ({}); raise RACEGATE_GLOBALCHECK_BUDGET_MB",
            list.len(),
            list.join(", ")
        ));
    }
    if let Some(o) = stepped_aside_why("globalcheck", rep) {
        return o;
    }
    Outcome::Clean
}

/// How every inconclusive outcome of sharedcheck that is a limit of the method begins.
pub const SHARED_CANNOT_JUDGE: &str = "sharedcheck cannot judge this run: ";

/// sharedcheck's outcome of a finished run (the same report as globalcheck's when both ran).
/// Public for tests on captured reports.
pub fn decide_shared(
    exit: &Exit,
    left_behind: bool,
    rep: &report::Report,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    log: &mut String,
) -> Outcome {
    decide_shared_with(exit, left_behind, rep, tables, root, log, false)
}

/// [`decide_shared`], with `dead_uninit` when the confirm runs showed that the run's reads of
/// unwritten shared memory do not reach the output (three runs, each giving every unwritten
/// byte read another poison, gave the same output): those reads are logged as notes, not
/// counted as findings.
pub fn decide_shared_with(
    exit: &Exit,
    left_behind: bool,
    rep: &report::Report,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    log: &mut String,
    dead_uninit: bool,
) -> Outcome {
    if let Some(o) = preamble("sharedcheck", exit, left_behind, rep) {
        return o;
    }
    let mut distrusted: Vec<(Distrust, u32, String)> = Vec::new();
    for l in &rep.launches {
        for f in &l.shared_findings {
            if let Some(d) = super::shared::shared_distrust(rep, tables, l, f) {
                if !distrusted
                    .iter()
                    .any(|(d2, n, _)| *d2 == d && *n == l.launch)
                {
                    distrusted.push((d, l.launch, l.kernel.clone()));
                }
            }
        }
    }
    let trusted =
        |l: &report::Launch, f: &report::SharedFinding| super::shared::shared_distrust(rep, tables, l, f).is_none();
    let all = super::shared::shared_findings_where(rep, tables, root, |l, f| {
        trusted(l, f) && !(dead_uninit && f.kind == "uninitialized-read")
    });
    if dead_uninit {
        let notes = super::shared::shared_findings_where(rep, tables, root, |l, f| {
            trusted(l, f) && f.kind == "uninitialized-read"
        });
        for n in &notes {
            log.push_str(&format!(
                "sharedcheck note (not counted): {}: the output was the same under three different poisons of the unwritten bytes, so the value read does not reach it\n",
                n.line()
            ));
        }
    }
    let (errors, warnings): (Vec<_>, Vec<_>) = all.into_iter().partition(|f| f.level == "Error");
    for w in &warnings {
        log.push_str(&format!(
            "sharedcheck warning (not counted): {}\n",
            w.line()
        ));
    }
    for (d, launch, kernel) in &distrusted {
        log.push_str(&format!(
            "sharedcheck: findings of launch {launch} of {kernel} set aside: {}\n",
            distrust_why(*d)
        ));
    }
    if !errors.is_empty() {
        return Outcome::Findings(errors);
    }
    if let Exit::Code(c) = exit {
        if *c != 0 {
            return Outcome::Inconclusive(format!(
                "the target exited {c} without a sharedcheck finding (a failed launch leaves nothing to judge)"
            ));
        }
    }
    // Every launch must have been judged whole: no shared report, a shadow over the budget,
    // accesses outside the window, or writes it cannot see leave it inconclusive.
    for l in &rep.launches {
        let which = format!("launch {} of {}", l.launch, l.kernel);
        let Some(w) = &l.shared else {
            return Outcome::Inconclusive(format!(
                "sharedcheck did not judge {which} (the tool ran without its shared mode)"
            ));
        };
        let why = if w.over_budget {
            Some(format!("its shadow ({} bytes of shared memory per block, grid {:?}) is over the budget; raise RACEGATE_SHAREDCHECK_BUDGET_MB", w.bytes, l.grid))
        } else if w.dropped > 0 {
            Some(format!(
                "its finding table overflowed: {} finding(s) dropped",
                w.dropped
            ))
        } else if w.unsized_accesses > 0 {
            Some(format!("its blocks use more dynamic shared memory than the launch call said ({} bytes assumed)", w.dynamic))
        } else if w.untracked > 0 {
            Some(format!(
                "{} shared access(es) fell outside the {}-byte window it tracked",
                w.untracked, w.bytes
            ))
        } else if l.named_barriers > 0 {
            // A named or partial barrier orders only some warps; epochs count it as if it
            // ordered the whole block, so a launch without findings is not known clean.
            Some(format!(
                "it passes {} named or partial barrier(s) (bar.sync N), which its epochs treat as block-wide",
                l.named_barriers
            ))
        } else if w.unseen_writes > 0 || w.cluster {
            Some("it writes shared memory in ways the tool cannot see byte by byte (bulk or TMA copies, stmatrix, a cluster's distributed shared memory)".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            return Outcome::Inconclusive(format!("{SHARED_CANNOT_JUDGE}{which}: {why}"));
        }
    }
    if let Some((d, launch, kernel)) = distrusted.first() {
        return Outcome::Inconclusive(format!(
            "{SHARED_CANNOT_JUDGE}launch {launch} of {kernel} {}",
            distrust_why(*d)
        ));
    }
    if let Some(o) = stepped_aside_why("sharedcheck", rep) {
        return o;
    }
    Outcome::Clean
}

