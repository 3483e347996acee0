//! globalcheck: races on global memory between threads of different warps or blocks, from the
//! tool's report (`findings` of each launch) and the process's exit to an [`Outcome`]. The
//! tool's shadow keeps, per byte of every tracked allocation, the last writer and readers with
//! their barrier epoch; a finding is a pair of accesses no barrier, fence-and-flag handoff or
//! atomic ordered.

use std::collections::BTreeMap;
use std::path::Path;

use super::decide::{
    counted, distrust_why, failed_exit, preamble, set_aside, stepped_aside_why, CANNOT_JUDGE,
};
use super::lines::LineTable;
use super::report;
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::Exit;

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
    let distrusted = set_aside(
        rep,
        |l| &l.findings,
        |l, f| report::distrust(rep, tables, l, f),
    );
    let all = report::findings_where(rep, tables, root, |l, f| {
        report::distrust(rep, tables, l, f).is_none()
    });
    let errors = counted("globalcheck", all, &distrusted, log);
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
    if let Some(o) = failed_exit("globalcheck", exit) {
        return o;
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
