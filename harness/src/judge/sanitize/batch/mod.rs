//! Several cases in one compute-sanitizer process, as a fast path for clean results.
//! Part of `judge/`: may import the stages below `judge/` and the rest of `judge::sanitize`.
//!
//! Starting the tool and opening a device context under it cost most of a small case's run
//! (H200 run 24: 176 runs, 324 s of device opens and 234 s of process and tool start against
//! 7.5 s of instrumented launches), and contexts open one at a time across processes. So the
//! target runs the cases one after another on one context (`runner::targets`), and the parent
//! takes from the batch only what it can prove:
//!
//! - a case is settled as **clean** when the process ended normally (exit 0, or the findings
//!   exit for another case's findings) within the deadline of *one* case alone (a run alone
//!   has the same start and only its own case's work), its XML parsed, the target's last line
//!   says every case ran, the case printed exactly one result line saying its launch ran
//!   (right or wrong results: the sanitizer judges, not the oracle) and no finding is at a
//!   line of a file its code came from (the `.file` list of its own
//!   PTX, which is where the tool reads line numbers from: a kernel that includes another
//!   case's file shares that file, and both run again alone);
//! - a case that printed that line is given the batch's findings at lines of files **only its
//!   code** came from, as **its own** (the same launch on the same inputs as alone; the tools
//!   judge within a launch, and initcheck's memory is never reused, below): a run alone of it
//!   cost a process and, at the end of a gate, its wall time (H200 run 28);
//! - everything else runs again **alone**, exactly as without batching: a case with a finding
//!   at a file another case's code shares, a case whose launch failed or never
//!   ran (a fault before it leaves the context unusable), and every case of a batch that was
//!   killed, did not parse, or has a finding at no line of any case's files (a line-less
//!   finding, the host API), except a host API error that only follows a device fault: that
//!   one is a case's that did not say its launch ran ([`after_a_fault`]); when such a record
//!   sits beside findings of some cases, the others run again as a batch of their own
//!   ([`line_less_owners`]);
//! - a batch that missed its deadline sends the case that was running (the first without a
//!   result line) to a run alone, which says whether it hangs, and runs the others again as a
//!   batch. It never blames a case from the batch's run: on the H200 a scan that finishes
//!   alone in 2-3 s missed the deadline inside a batch once (run 25, call C).
//!
//! The target's result lines and its last line carry a nonce drawn for the run: a kernel's
//! device `printf` shares the target's stdout but cannot know it, so it cannot forge a line
//! the parent believes. Batches hold cases of distinct files ([`batches`]), so a finding
//! usually names one case. The user's own compute-sanitizer options (`--launch-count`,
//! `--kernel-name`, ...) count and pick launches per process: with any, every case runs alone.
//! What a tool sees of a case must not depend on the cases before it. racecheck and synccheck
//! look at shared memory and barriers within one launch. memcheck checks accesses against the
//! allocations live at the launch: an earlier case's memory is freed by then, so what is live
//! around a case's buffers is its own memory, as in a run alone (the addresses may differ, as
//! they may from one driver to the next). initcheck tracks which bytes were written: an earlier case's memory is *kept*
//! allocated to the end of the process (`--keep-memory`), so the allocator never hands a later
//! case memory an earlier one wrote, and a read of an output nobody wrote stays uninitialized.

use std::path::Path;

use super::normalize::{self, Finding};
use super::runner::{self, RAN_CORRECT, RAN_WRONG, RESULT, TIMING};
use super::tool::{Outcome, SanitizeConfig, SanitizerRun, Tool};
use crate::errors::Result;
use crate::proc::watchdog::Deadline;
use crate::source::catalog::{Case, Catalog};

/// The most cases in one process: enough to share one start among several, few enough that
/// the batches of a matrix still fill the pool. Every process opens a device context, and
/// contexts open one at a time across processes (H200 run 25, call B: 95 s of the matrix's
/// sanitizer time was opening them, with batches of 4), so the fewer the better.
pub const MAX_BATCH: usize = 8;

/// Whether `tool`'s runs may be batched (see the file's comment): compute-sanitizer's four.
pub fn batchable(tool: Tool) -> bool {
    matches!(
        tool,
        Tool::Racecheck | Tool::Synccheck | Tool::Memcheck | Tool::Initcheck
    )
}

/// Splits `cases` into batches of at most `max` cases of distinct files, in order: each case
/// goes into the first batch with room and no case of its file.
pub fn batches<'a>(cases: &[&'a Case], max: usize) -> Vec<Vec<&'a Case>> {
    let mut out: Vec<Vec<&Case>> = Vec::new();
    for c in cases {
        match out
            .iter_mut()
            .find(|b| b.len() < max.max(1) && b.iter().all(|x| x.path != c.path))
        {
            Some(b) => b.push(c),
            None => out.push(vec![c]),
        }
    }
    out
}

/// Runs `cfg.tool` on `cases`: one process for all of them where the tool and the
/// configuration allow, then each case it could not settle alone ([`runner::run`]). One
/// [`SanitizerRun`] per case, in order.
pub fn run(
    catalog: &Catalog,
    cases: &[&Case],
    cfg: &SanitizeConfig,
    exe: &Path,
) -> Result<Vec<SanitizerRun>> {
    let alone = |c: &Case| runner::run(catalog, c, cfg, exe);
    let each_alone = || cases.iter().map(|c| alone(c)).collect();
    if cases.len() < 2
        || !batchable(cfg.tool)
        || cfg.keep_xml.is_some()
        || cfg.sanitizer.is_none()
        // Options of the user's own (`--launch-count`, `--kernel-name`, ...) count launches
        // per process: a batch would change what they select.
        || !cfg.extra_args.is_empty()
        || batches(cases, cases.len()).len() != 1
    {
        return each_alone();
    }
    let nonce = runner::new_nonce();
    // A case that does not build, or a tool that does not start, is each case's own error, as
    // alone.
    let Ok((target, ptxs)) = runner::target_command_for(catalog, cases, cfg, exe, Some(&nonce))
    else {
        return each_alone();
    };
    let Ok(texts) = ptxs
        .iter()
        .map(std::fs::read_to_string)
        .collect::<std::io::Result<Vec<_>>>()
    else {
        return each_alone();
    };
    let files: Vec<Vec<String>> = texts.iter().map(|t| ptx_files(t, &catalog.root)).collect();
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let label = names.join("+");
    // The deadline of one case alone, for all of them: a batch that cannot finish within what
    // one case is given settles nothing, so it is not waited for longer.
    let deadline = Deadline {
        idle: cfg.timeout,
        total: Some(cfg.timeout),
    };
    let Ok(batch) = runner::run_tool(&label, &target, cfg, &catalog.root, deadline) else {
        return each_alone();
    };
    if let Some(k) = hung_case(&batch, &names) {
        // The case that was running when the deadline passed runs alone: its own run says
        // whether it hangs (H200 run 25, call C: blaming it from the batch made a scan that
        // finishes alone in 2-3 s inconclusive, the case after it being the one that hangs).
        // The others run again as a batch of their own: the XML of a killed run is lost.
        let others: Vec<&Case> = (0..cases.len())
            .filter(|i| *i != k)
            .map(|i| cases[i])
            .collect();
        let mut rest = run(catalog, &others, cfg, exe)?.into_iter();
        let mut hung = Some(alone(cases[k])?);
        return Ok((0..cases.len())
            .map(|i| match i == k {
                true => hung.take().expect("one run for the case that was running"),
                false => rest.next().expect("one run per other case"),
            })
            .collect());
    }
    let whole = complete(&batch.log, &nonce, batch.seconds, cfg.timeout);
    // A target stopped by an error (an out-of-bounds launch under memcheck leaves the context
    // unusable, and the next case's module does not load): the cases before the stop settle as
    // in a whole run, the ones from it on run again as a batch (H200 run 26: three memcheck
    // batches of the corpus gate went alone, 8 cases each, for one such case).
    let stop = if whole {
        None
    } else {
        stopped_at(&batch, &names, &nonce, cfg.timeout)
    };
    let mut settled = match whole || stop.is_some() {
        true => settle(&batch, &names, &files, &nonce),
        false => vec![Settled::Again; cases.len()],
    };
    let later: Vec<&Case> = stop.map_or_else(Vec::new, |k| cases[k..].to_vec());
    let before = cases.len() - later.len();
    settled.truncate(before);
    if let Some(k) = stop {
        crate::proc::timeline::note("batch", || {
            format!(
                "{} {label}: the target stopped before {}: {} again as a batch",
                cfg.tool,
                names[k],
                names[k..].join("+")
            )
        });
    }
    // Why cases go alone, for `RACEGATE_TIMELINE`'s record: a batch that settles little costs
    // a run per case on top of its own.
    if settled.contains(&Settled::Again) {
        crate::proc::timeline::note("batch", || {
            unsettled_why(&batch, &names, &settled, &nonce, cfg.timeout)
        });
    }
    let share = batch.seconds / cases.len() as f64;
    // The cases the batch did not settle run alone side by side, a few at once: one after
    // another they made a matrix job of 27 s out of a batch of 3 (H200 run 26, call A); those
    // a line-less record left unsettled beside others' findings ([`line_less_owners`]) run
    // again as a batch. The cases from a stop on, as a batch of their own, beside them.
    let owners = (whole || stop.is_some())
        .then(|| line_less_owners(&batch, &files[..before]))
        .flatten();
    let (regroup, unsettled): (Vec<usize>, Vec<usize>) = (0..before)
        .filter(|&i| settled[i] == Settled::Again)
        .partition(|&i| owners.as_ref().is_some_and(|o| !o[i]));
    let regrouped: Vec<&Case> = regroup.iter().map(|&i| cases[i]).collect();
    let (again, grouped, rest) = std::thread::scope(|s| {
        let again = s.spawn(crate::proc::watchdog::thread_env::carried(|| {
            crate::proc::pool::run_all(unsettled, ALONE_AT_ONCE, |i| alone(cases[i]), |_| {})
        }));
        let grouped = s.spawn(crate::proc::watchdog::thread_env::carried(|| {
            run(catalog, &regrouped, cfg, exe)
        }));
        let rest = run(catalog, &later, cfg, exe);
        (
            again.join().expect("the unsettled cases' runs"),
            grouped.join().expect("the regrouped cases' runs"),
            rest,
        )
    });
    let (mut again, mut grouped) = (again.into_iter(), grouped?.into_iter());
    let from_batch = |c: &Case, outcome: Outcome| SanitizerRun {
        case: c.name.clone(),
        tool: cfg.tool,
        outcome,
        exit: format!("{} (one process for {})", batch.exit, names.join(", ")),
        seconds: share,
        log: case_log(&batch.log, &c.name, &names),
        command: batch.command.clone(),
    };
    let mut runs = Vec::with_capacity(cases.len());
    for (i, s) in settled.into_iter().enumerate() {
        runs.push(match s {
            Settled::Clean => Ok(from_batch(cases[i], Outcome::Clean)),
            Settled::Found(f) => Ok(from_batch(cases[i], Outcome::Findings(f))),
            Settled::Again if regroup.contains(&i) => {
                Ok(grouped.next().expect("one run per regrouped case"))
            }
            Settled::Again => again.next().expect("one run per unsettled case"),
        });
    }
    runs.extend(rest?.into_iter().map(Ok));
    runs.into_iter().collect()
}

/// How many of a batch's unsettled cases run alone at once (beside the batch's own job slot).
pub(super) const ALONE_AT_ONCE: usize = 4;

/// One line on why a batch left cases unsettled (for the timeline record only).
fn unsettled_why(
    batch: &SanitizerRun,
    names: &[&str],
    settled: &[Settled],
    nonce: &str,
    timeout: std::time::Duration,
) -> String {
    let alone: Vec<&str> = names
        .iter()
        .zip(settled)
        .filter(|(_, s)| **s == Settled::Again)
        .map(|(n, _)| *n)
        .collect();
    let why = if !complete(&batch.log, nonce, batch.seconds, timeout) {
        let last = batch
            .log
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        format!(
            "incomplete ({:.1} s, exit {}; last line: {last})",
            batch.seconds, batch.exit
        )
    } else {
        match &batch.outcome {
            Outcome::Findings(f) => {
                let first: Vec<String> = f
                    .iter()
                    .take(3)
                    .map(|x| format!("{} {} at {} ({})", x.kind, x.what, x.location, x.kernel))
                    .collect();
                format!("{} finding(s), first: {}", f.len(), first.join(" | "))
            }
            Outcome::Inconclusive(w) => format!("inconclusive: {w}"),
            Outcome::Hang { .. } => "hang".into(),
            Outcome::Clean => {
                "clean, but a case's result line is missing or says it did not run".into()
            }
        }
    };
    format!(
        "{} {}: {} alone: {why}",
        batch.tool,
        names.join("+"),
        alone.join("+")
    )
}

/// The source files a PTX's line information names (its `.file` directives), as findings
/// name them ([`normalize::repo_relative`]).
pub(super) fn ptx_files(ptx: &str, root: &Path) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix(".file")?;
            let quoted = rest.split_once('"')?.1;
            let name = quoted.split_once('"')?.0;
            Some(normalize::repo_relative(name, root))
        })
        .collect()
}

/// What a batch's run says of one case.
#[derive(Clone, Debug, PartialEq)]
enum Settled {
    /// It ran once and no finding is at a line of its code.
    Clean,
    /// It ran once and these findings are at lines of files only its code came from: they are
    /// its own, as a run alone would report them (the same launch on the same inputs).
    Found(Vec<Finding>),
    /// The run cannot say: the case runs again.
    Again,
}

/// What the batch's run says of each case (see the file's comment); `names[i]` is case i's
/// name and `files[i]` the files its PTX's line information names.
fn settle(
    batch: &SanitizerRun,
    names: &[&str],
    files: &[Vec<String>],
    nonce: &str,
) -> Vec<Settled> {
    let again = || vec![Settled::Again; names.len()];
    let findings: &[Finding] = match &batch.outcome {
        Outcome::Clean => &[],
        Outcome::Findings(f) => f,
        Outcome::Hang { .. } | Outcome::Inconclusive(_) => return again(),
    };
    let mut own: Vec<Vec<Finding>> = vec![Vec::new(); names.len()];
    // A finding at a file more than one case's code came from names none of them.
    let mut shared = vec![false; names.len()];
    // Whether some case did not say its launch ran: a sticky error's host API records are its.
    let some_failed = names.iter().any(|n| !ran_once(&batch.log, n, nonce));
    for f in findings {
        let Some((file, _)) = f.file_line() else {
            if some_failed && after_a_fault(f) {
                continue;
            }
            return again();
        };
        let holders = holders(files, file);
        match holders[..] {
            [] => return again(),
            [i] => own[i].push(f.clone()),
            _ => holders.iter().for_each(|&i| shared[i] = true),
        }
    }
    names
        .iter()
        .zip(own)
        .zip(shared)
        .map(|((name, own), shared)| {
            match (shared || !ran_once(&batch.log, name, nonce), own.is_empty()) {
                (true, _) => Settled::Again,
                (false, true) => Settled::Clean,
                (false, false) => Settled::Found(own),
            }
        })
        .collect()
}

/// The cases whose code came from `file` (`files[i]`: case i's files).
pub(super) fn holders(files: &[Vec<String>], file: &str) -> Vec<usize> {
    (0..files.len())
        .filter(|&i| files[i].iter().any(|x| x == file))
        .collect()
}

/// The cases with findings at lines of their own code, when a run that named nobody for some
/// record (a line-less one: initcheck's `Error buffer overflow ... Some records have been
/// dropped` after a kernel that reads uninitialized memory everywhere) also has such findings
/// of at least one case: those run alone, and the others again as a batch of their own, which
/// settles them or not by the same rules (H200 run 28: one such kernel sent seven kernels of
/// the corpus gate to initcheck runs alone, 14 s at the gate's end). `None` otherwise.
fn line_less_owners(batch: &SanitizerRun, files: &[Vec<String>]) -> Option<Vec<bool>> {
    let Outcome::Findings(findings) = &batch.outcome else {
        return None;
    };
    let mut owners = vec![false; files.len()];
    let mut line_less = false;
    for f in findings {
        match f.file_line() {
            None => line_less = true,
            Some((file, _)) => holders(files, file)
                .into_iter()
                .for_each(|i| owners[i] = true),
        }
    }
    (line_less && owners.iter().any(|o| *o) && !owners.iter().all(|o| *o)).then_some(owners)
}

/// Whether `f` is a host API call that failed because a kernel faulted earlier in the process
/// (memcheck's `Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) ... on CUDA API call to
/// cuModuleLoadData`): such an error is sticky, every call after the fault fails with it, and
/// none before it can. A case whose line says its launch ran synchronized and read its buffers
/// back with every call succeeding, so the fault came later, from a kernel of a case that did
/// not say so; the record is that case's (it runs again alone and gets its own). Any other
/// line-less record (a host API error of another kind, a tool warning such as a dropped-records
/// buffer overflow) belongs to no case the batch can name, and settles nothing.
fn after_a_fault(f: &Finding) -> bool {
    f.kind == "Api"
        && f.what
            .strip_prefix("Program hit ")
            .and_then(|rest| rest.split_once(' '))
            .is_some_and(|(code, _)| STICKY.contains(&code))
}

/// The CUDA errors a device fault leaves behind: sticky, every later call of the process fails
/// with it ([`after_a_fault`]).
const STICKY: [&str; 9] = [
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
];

/// Whether a batch's run may settle anything: its target printed its last line (every case
/// ran, none stopped it with an error), with this run's nonce, and the run took no longer than
/// one case alone may (a run alone includes the same start and only its own case's work, so
/// each case would have finished within its deadline alone too).
pub(super) fn complete(log: &str, nonce: &str, seconds: f64, timeout: std::time::Duration) -> bool {
    let last = format!("{RESULT}{} [run {nonce}]", runner::ALL_RAN);
    seconds <= timeout.as_secs_f64() && log.lines().filter(|l| *l == last).count() == 1
}

/// Where a batch's target stopped early: the first case without a result line, when the
/// process ended on its own within one case's deadline with its XML read (clean, or findings),
/// at least one case before it printed its line, and the target never said every case ran.
/// That case and the ones after it never ran in this process (the target runs them in order
/// and stops at the first error it cannot put in a case's line); `None` otherwise.
fn stopped_at(
    batch: &SanitizerRun,
    names: &[&str],
    nonce: &str,
    timeout: std::time::Duration,
) -> Option<usize> {
    if !matches!(batch.outcome, Outcome::Clean | Outcome::Findings(_))
        || batch.seconds > timeout.as_secs_f64()
        || complete(&batch.log, nonce, batch.seconds, timeout)
    {
        return None;
    }
    let tag = format!(" [run {nonce}]");
    let printed = |name: &&str| {
        let head = format!("{RESULT}{name} (");
        batch
            .log
            .lines()
            .any(|l| l.starts_with(&head) && l.ends_with(&tag))
    };
    let k = names.iter().position(|n| !printed(n))?;
    // Printed in order up to `k`, none after it (a line after the stop would be no target's).
    (k > 0 && !names[k..].iter().any(printed)).then_some(k)
}

/// The case a batch that missed its deadline was running: the first without a result line
/// (the target runs them in order, and the idle deadline restarts at each line).
fn hung_case(batch: &SanitizerRun, names: &[&str]) -> Option<usize> {
    if !matches!(batch.outcome, Outcome::Hang { .. }) {
        return None;
    }
    names.iter().position(|name| {
        let head = format!("{RESULT}{name} (");
        !batch.log.lines().any(|l| l.starts_with(&head))
    })
}

/// Whether `log` holds exactly one result line for case `name` with this run's `nonce`, and
/// it says the launch ran. A line without the nonce (a kernel's `printf`) is not a result
/// line, but a second line with it is (the same `printf` can not make one).
pub(super) fn ran_once(log: &str, name: &str, nonce: &str) -> bool {
    let head = format!("{RESULT}{name} (");
    let tag = format!(" [run {nonce}]");
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with(&head) && l.ends_with(&tag))
        .collect();
    match lines[..] {
        [line] => {
            let body = &line[head.len()..line.len() - tag.len()];
            let said = body.split_once("): ").map_or("", |(_, s)| s);
            said.starts_with(RAN_CORRECT)
                || said
                    .split_once("; buffers digest ")
                    .is_some_and(|(w, _)| w.ends_with(RAN_WRONG))
        }
        _ => false,
    }
}

/// A settled case's log: which cases shared the process, the tool's own lines, and this case's
/// result and timing lines (not the other cases', so a time breakdown counts each case once).
pub(super) fn case_log(log: &str, name: &str, names: &[&str]) -> String {
    let mut out = format!(
        "(one compute-sanitizer process ran {}; its lines for this case follow)\n",
        names.join(", ")
    );
    let result = format!("{RESULT}{name} (");
    let timing = format!("; case {name}");
    for l in log.lines() {
        let ours = l.starts_with(&result) || (l.starts_with(TIMING) && l.ends_with(&timing));
        let theirs = l.starts_with(RESULT) || l.starts_with(TIMING);
        if ours || !theirs {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests;
