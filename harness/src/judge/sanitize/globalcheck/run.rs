//! Runs a target under globalcheck: the built tool injected through `CUDA_INJECTION64_PATH`,
//! under a deadline and a process-group kill like every sanitizer run; then reads its report,
//! maps program counters to lines and decides. Nothing undecidable is ever clean: no report,
//! a tool error, a crash or memory the shadow budget left out are `Inconclusive`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use super::lines::LineTable;
use super::report;
use super::report::Distrust;
use crate::build::globalcheck as build;
use crate::errors::{Error, Result};
use crate::judge::sanitize::tool::{read_capture, Capture, Outcome, SanitizeConfig, SanitizerRun};
use crate::proc::watchdog::{self, Exit};

/// The shadow budget unless `RACEGATE_GLOBALCHECK_BUDGET_MB` says otherwise: 4 GiB of shadow,
/// which covers 512 MiB of tracked data (32 bytes of shadow per 4-byte word).
pub const DEFAULT_BUDGET_MB: u64 = 4096;

/// Runs `target` (`target[0]` is the program) under globalcheck.
pub fn run_target(
    label: &str,
    target: &[OsString],
    cfg: &SanitizeConfig,
    root: &Path,
) -> Result<SanitizerRun> {
    let start = std::time::Instant::now();
    let finish = |outcome: Outcome, exit: String, log: String, command: String| SanitizerRun {
        case: label.to_string(),
        tool: cfg.tool,
        outcome,
        exit,
        seconds: start.elapsed().as_secs_f64(),
        log,
        command,
    };
    let built = match build::ensure(root) {
        Ok(b) => b,
        Err(why) => {
            return Ok(finish(
                Outcome::Inconclusive(format!("globalcheck could not be built: {why}")),
                "not run".into(),
                String::new(),
                String::new(),
            ))
        }
    };
    let dir = tempfile::tempdir_in(crate::build::compile::cache_dir()?)
        .map_err(|e| Error::io("creating", "a globalcheck run folder", e))?;
    let budget = match std::env::var("RACEGATE_GLOBALCHECK_BUDGET_MB") {
        Err(_) => DEFAULT_BUDGET_MB,
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&mb| mb > 0)
            .ok_or_else(|| {
                Error::Usage(format!(
                "RACEGATE_GLOBALCHECK_BUDGET_MB must be a whole number of MiB above 0, got `{v}`"
            ))
            })?,
    };
    let env: Vec<(String, String)> = vec![
        (
            "CUDA_INJECTION64_PATH".into(),
            built.tool.display().to_string(),
        ),
        ("RACEGATE_GC_DIR".into(), dir.path().display().to_string()),
        (
            "RACEGATE_GC_PATCHES".into(),
            built.patches.display().to_string(),
        ),
        ("RACEGATE_GC_MODE".into(), "detect".into()),
        ("RACEGATE_GC_BUDGET_MB".into(), budget.to_string()),
    ];
    let command = env
        .iter()
        .filter(|(k, _)| k == "CUDA_INJECTION64_PATH" || k == "RACEGATE_GC_MODE")
        .map(|(k, v)| format!("{k}={v}"))
        .chain(target.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let Some((program, args)) = target.split_first() else {
        return Err(Error::Usage("globalcheck: no target to run".into()));
    };
    let (done, stdout) = watchdog::run_collecting(Path::new(program), args, &env, cfg.timeout)?;
    let exit = done.exit.describe(cfg.timeout);
    let report_path = dir.path().join("report.jsonl");
    // The target can write into the tool's folder too: the report is read only as a regular
    // file, up to a bound.
    let text = match read_capture(&report_path, REPORT_LIMIT) {
        Capture::Text(t) => t,
        // No report: the tool was not loaded (decide says so).
        Capture::Missing => String::new(),
        other => {
            return Ok(finish(
                Outcome::Inconclusive(format!(
                    "globalcheck's report was not read ({}): the target may have written it",
                    match other {
                        Capture::TooLarge(l) => format!("over {} MiB", l >> 20),
                        _ => "not a regular file".into(),
                    }
                )),
                exit,
                format!("{stdout}{}", done.stderr),
                command,
            ))
        }
    };
    let rep = report::parse(&text);
    let mut tables = BTreeMap::new();
    let mut line_texts = Vec::new();
    if let Some(nvdisasm) = build::nvdisasm(root) {
        for m in rep.modules_with_findings() {
            let Some(module) = rep.modules.get(&m) else {
                continue;
            };
            // The name comes from a file the target could write: only the tool's own pattern,
            // and only a regular file (a FIFO would hold nvdisasm until its deadline).
            let cubin = dir.path().join(&module.cubin);
            if !is_cubin_name(&module.cubin)
                || !std::fs::symlink_metadata(&cubin).is_ok_and(|m| m.is_file())
            {
                continue;
            }
            let args = [
                OsString::from("--print-line-info"),
                OsString::from("-c"),
                cubin.into(),
            ];
            let t = std::time::Duration::from_secs(60);
            let spilling = watchdog::Output::spilling();
            if let Ok((f, out)) = watchdog::run_collecting_into(&nvdisasm, &args, &[], t, spilling)
            {
                // A table from a failed nvdisasm would map pcs to wrong lines: none is better,
                // and so is none from a table that could not be read back whole.
                if let (Exit::Code(0), Some(t)) = (&f.exit, whole_text(&out)) {
                    tables.insert(m, LineTable::parse(&t));
                    line_texts.push((m, t));
                }
            }
        }
    }
    if let Some(keep) = &cfg.keep_xml {
        // The raw capture: the report as the tool wrote it, and nvdisasm's line tables beside it.
        let _ = std::fs::write(keep, &text);
        for (m, t) in &line_texts {
            let _ = std::fs::write(lines_path(keep, *m), t);
        }
    }
    let mut log = format!("{stdout}{}", done.stderr);
    log.push_str(&report::log(&rep));
    let outcome = decide(&done.exit, done.left_behind, &rep, &tables, root, &mut log);
    Ok(finish(outcome, exit, log, command))
}

/// The most of nvdisasm's line table of one module racegate reads (a large module's is tens of
/// MiB; beyond the memory bound it is read back from where it was spilled).
const LINES_LIMIT: u64 = 64 << 20;

/// The whole text of a tool's output: from memory, else from the file it was spilled to, up to
/// [`LINES_LIMIT`]; `None` when it cannot be had whole.
fn whole_text(out: &watchdog::Output) -> Option<String> {
    if out.is_complete() {
        return Some(out.text());
    }
    let bytes = crate::source::files::read_raw(out.spill_path()?, LINES_LIMIT, false).ok()?;
    Some(crate::source::files::lossy_text(&bytes))
}

/// The most of globalcheck's report racegate reads (a real one is kilobytes: a line per module
/// and launch, findings deduplicated into a fixed table).
const REPORT_LIMIT: u64 = 64 << 20;

/// `module-N.cubin`, the only cubin names the tool writes.
fn is_cubin_name(name: &str) -> bool {
    name.strip_prefix("module-")
        .and_then(|r| r.strip_suffix(".cubin"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Where the line table of module `m` is kept beside a saved report.
pub fn lines_path(report: &Path, m: u32) -> std::path::PathBuf {
    let mut s = report.as_os_str().to_owned();
    s.push(format!(".module-{m}.lines.txt"));
    s.into()
}

/// How every inconclusive outcome that is a limit of the method, not a failure, begins (an
/// expectation of `may` records these; a tool that failed stays inconclusive everywhere).
pub const CANNOT_JUDGE: &str = "globalcheck cannot judge this run: ";

/// Whether an inconclusive outcome's text is one of globalcheck's judged limits.
pub fn is_limit(why: &str) -> bool {
    why.starts_with(CANNOT_JUDGE)
}

fn distrust_why(d: Distrust) -> &'static str {
    match d {
        Distrust::NamedBarriers => "uses named or partial barriers (bar.sync with an id), which it counts as block-wide, so its findings between warps cannot be trusted",
        Distrust::StrongAccesses => "has volatile or relaxed/acquire-release atomic loads and stores (.STRONG in its SASS), which it cannot take as a handoff, so its findings between warps or blocks cannot be trusted",
        Distrust::NoLineTable => "has no line table (nvdisasm missing or failed), so its findings have no line and volatile accesses cannot be told apart",
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
    if *exit == Exit::TimedOut {
        return Outcome::Hang {
            left_behind,
            said: None,
        };
    }
    if !rep.started {
        return Outcome::Inconclusive(format!(
            "globalcheck was not loaded into the target (no report; {})",
            match exit {
                Exit::Code(c) => format!("the target exited {c}"),
                Exit::Signal(s) => format!("the target died of signal {s}"),
                Exit::TimedOut => unreachable!(),
            }
        ));
    }
    if let Some(e) = rep.errors.first() {
        return Outcome::Inconclusive(format!("globalcheck: {e}"));
    }
    if let Exit::Signal(s) = exit {
        return Outcome::Inconclusive(format!("the target died of signal {s} under globalcheck"));
    }
    if rep.launches.is_empty() {
        return Outcome::Inconclusive("globalcheck saw no kernel launch".into());
    }
    if let Some(l) = rep.launches.iter().find(|l| l.epoch_overflow > 0) {
        return Outcome::Inconclusive(format!(
            "{CANNOT_JUDGE}launch {} of {}: threads passed 2^15 barriers, past what its epochs can order",
            l.launch, l.kernel
        ));
    }
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
    Outcome::Clean
}
