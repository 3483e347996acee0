//! sharedcheck's outcome of a finished run: reads of shared memory no thread wrote and atomic
//! and plain accesses of one word with no barrier between, from the same report as
//! globalcheck's when both ran, to an [`Outcome`].

use std::collections::BTreeMap;
use std::path::Path;

use super::super::decide::{
    counted, distrust_why, failed_exit, preamble, set_aside, stepped_aside_why, SHARED_CANNOT_JUDGE,
};
use super::super::lines::LineTable;
use super::super::report;
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::Exit;

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
    let distrusted = set_aside(
        rep,
        |l| &l.shared_findings,
        |l, f| super::report::shared_distrust(rep, tables, l, f),
    );
    let trusted = |l: &report::Launch, f: &report::SharedFinding| {
        super::report::shared_distrust(rep, tables, l, f).is_none()
    };
    let all = super::report::shared_findings_where(rep, tables, root, |l, f| {
        trusted(l, f) && !(dead_uninit && f.kind == "uninitialized-read")
    });
    if dead_uninit {
        let notes = super::report::shared_findings_where(rep, tables, root, |l, f| {
            trusted(l, f) && f.kind == "uninitialized-read"
        });
        for n in &notes {
            log.push_str(&format!(
                "sharedcheck note (not counted): {}: the output was the same under three different poisons of the unwritten bytes, so the value read does not reach it\n",
                n.line()
            ));
        }
    }
    let errors = counted("sharedcheck", all, &distrusted, log);
    if !errors.is_empty() {
        return Outcome::Findings(errors);
    }
    if let Some(o) = failed_exit("sharedcheck", exit) {
        return o;
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
