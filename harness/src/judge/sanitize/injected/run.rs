//! Runs a target under globalcheck and/or sharedcheck (one injected tool, one run, one report
//! read once per detector): the built tool injected through `CUDA_INJECTION64_PATH`,
//! under a deadline and a process-group kill like every sanitizer run; then reads its report,
//! maps program counters to lines and decides. Nothing undecidable is ever clean: no report,
//! a tool error, a crash or memory the shadow budget left out are `Inconclusive`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use super::lines::LineTable;
use super::report;
use super::shared::confirm;
use super::target::run_once;
use crate::build::globalcheck as build;
use crate::errors::{Error, Result};
use crate::judge::sanitize::tool::{Capture, Outcome, SanitizeConfig, SanitizerRun, Tool};
use crate::proc::watchdog::{self, Exit};

/// The shadow budget unless `RACEGATE_GLOBALCHECK_BUDGET_MB` says otherwise: 16 GiB of shadow,
/// which covers 2 GiB of tracked data (32 bytes of shadow per 4-byte word): a 16384x16384
/// float matrix and its sums fit (8 GiB left the sums untracked, run 34). Shadow is taken as
/// launches touch allocations, and a shadow the device cannot give leaves its allocation
/// untracked (inconclusive), so the budget is a ceiling, reached only by programs that large.
pub const DEFAULT_BUDGET_MB: u64 = 16384;

/// sharedcheck's shadow budget per launch unless `RACEGATE_SHAREDCHECK_BUDGET_MB` says
/// otherwise: 32.5 bytes per shared word per block (a 48 KiB window of 4096 blocks fits).
pub const DEFAULT_SHARED_BUDGET_MB: u64 = 8192;

/// Runs `target` (`target[0]` is the program) under `cfg.tool` (globalcheck or sharedcheck).
pub fn run_target(
    label: &str,
    target: &[OsString],
    cfg: &SanitizeConfig,
    root: &Path,
) -> Result<SanitizerRun> {
    let mut runs = run_tools(label, target, cfg, root, &[cfg.tool])?;
    Ok(runs.remove(0))
}

fn budget_mb(var: &str, default: u64) -> Result<u64> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&mb| mb > 0)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{var} must be a whole number of MiB above 0, got `{v}`"
                ))
            }),
    }
}

/// Runs `target` once with the tool injected for every one of `tools` (globalcheck and/or
/// sharedcheck: one run when both are chosen) and returns one [`SanitizerRun`] per tool, in
/// the order given, each decided from the same report. Each run's `seconds` is its even share
/// of the one run's time, so that times summed per detector add up to the time spent; the log
/// of each says the whole run's time and which tools shared it.
pub fn run_tools(
    label: &str,
    target: &[OsString],
    cfg: &SanitizeConfig,
    root: &Path,
    tools: &[Tool],
) -> Result<Vec<SanitizerRun>> {
    Ok(run_tools_split(label, target, cfg, root, tools, None)?.0)
}

/// Each case's decisions of a batch run: per case (in the target's order), each tool's outcome
/// and log, decided on that case's part of the report ([`super::split`]).
pub type PerCase = Vec<Vec<(Tool, Outcome, String)>>;

/// [`run_tools`], and with `split` (each case's entry as its launches name it, in the target's
/// order) each case decided on its own launches too, when the report says which launches are
/// whose ([`super::split::attribute`]; `None` otherwise, and when the run could not be judged
/// at all). sharedcheck's confirm runs are never run for a case's part: a case whose reads of
/// unwritten shared memory are findings there needs a run of its own to confirm them.
pub fn run_tools_split(
    label: &str,
    target: &[OsString],
    cfg: &SanitizeConfig,
    root: &Path,
    tools: &[Tool],
    split: Option<&[String]>,
) -> Result<(Vec<SanitizerRun>, Option<PerCase>)> {
    let start = std::time::Instant::now();
    let tools: Vec<Tool> = if tools.is_empty() {
        vec![cfg.tool]
    } else {
        tools.to_vec()
    };
    if let Some(t) = tools.iter().find(|t| !t.is_own()) {
        return Err(Error::Usage(format!(
            "{t} is not one of racegate's own tools"
        )));
    }
    let finish_all =
        |outcome: &dyn Fn(Tool) -> Outcome, exit: String, log: String, command: String| {
            share_time(
                tools
                    .iter()
                    .map(|&tool| SanitizerRun {
                        case: label.to_string(),
                        tool,
                        outcome: outcome(tool),
                        exit: exit.clone(),
                        seconds: start.elapsed().as_secs_f64(),
                        log: log.clone(),
                        command: command.clone(),
                    })
                    .collect::<Vec<_>>(),
            )
        };
    let built = match build::ensure(root) {
        Ok(b) => b,
        Err(why) => {
            return Ok((
                finish_all(
                    &|t| Outcome::Inconclusive(format!("{t} could not be built: {why}")),
                    "not run".into(),
                    String::new(),
                    String::new(),
                ),
                None,
            ))
        }
    };
    let dir = tempfile::tempdir_in(crate::build::compile::cache_dir()?)
        .map_err(|e| Error::io("creating", "a globalcheck run folder", e))?;
    let budget = budget_mb("RACEGATE_GLOBALCHECK_BUDGET_MB", DEFAULT_BUDGET_MB)?;
    let shared_budget = budget_mb("RACEGATE_SHAREDCHECK_BUDGET_MB", DEFAULT_SHARED_BUDGET_MB)?;
    let mode = tools
        .iter()
        .map(|t| match t {
            Tool::Sharedcheck => "shared",
            Tool::Fencecheck => "fence",
            Tool::Streamcheck => "streams",
            _ => "detect",
        })
        .collect::<Vec<_>>()
        .join(",");
    let Some((program, args)) = target.split_first() else {
        return Err(Error::Usage(format!("{}: no target to run", tools[0])));
    };
    // racegate's own target launches on one stream: one hardware queue (`device::one_queue`);
    // not under streamcheck, which judges streams.
    let one_queue = crate::run::device::is_own_one_stream_target(program, args)
        && !tools.contains(&Tool::Streamcheck);
    let mut env: Vec<(String, String)> = vec![
        (
            "CUDA_INJECTION64_PATH".into(),
            built.tool.display().to_string(),
        ),
        ("RACEGATE_GC_DIR".into(), dir.path().display().to_string()),
        (
            "RACEGATE_GC_PATCHES".into(),
            built.patches.display().to_string(),
        ),
        ("RACEGATE_GC_MODE".into(), mode),
        ("RACEGATE_GC_BUDGET_MB".into(), budget.to_string()),
        (
            "RACEGATE_GC_SHARED_BUDGET_MB".into(),
            shared_budget.to_string(),
        ),
    ];
    if one_queue {
        env.extend(crate::run::device::one_queue());
    }
    if let Some(first) = cfg.sample_first {
        env.push(("RACEGATE_GC_SAMPLE".into(), first.to_string()));
    }
    let command = env
        .iter()
        .filter(|(k, _)| {
            k == "CUDA_INJECTION64_PATH"
                || k == "RACEGATE_GC_MODE"
                || k == crate::run::device::MAX_CONNECTIONS
        })
        .map(|(k, v)| format!("{k}={v}"))
        .chain(target.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let (done, stdout, report) = run_once(program, args, &env, dir.path(), cfg.timeout)?;
    let stdout = stdout.text();
    let exit = done.exit.describe(cfg.timeout);
    let text = match report {
        Capture::Text(t) => t,
        // No report: the tool was not loaded (decide says so).
        Capture::Missing => String::new(),
        other => {
            let why = match other {
                Capture::TooLarge(l) => format!("over {} MiB", l >> 20),
                _ => "not a regular file".into(),
            };
            return Ok((
                finish_all(
                    &|t| {
                        Outcome::Inconclusive(format!(
                            "{t}'s report was not read ({why}): the target may have written it"
                        ))
                    },
                    exit,
                    format!("{stdout}{}", done.stderr),
                    command,
                ),
                None,
            ));
        }
    };
    let rep = report::parse(&text);
    let trace = super::streams::verdict::read_trace(dir.path());
    let handoffs = super::fence::handoffs::parse(&text);
    let mut tables = BTreeMap::new();
    let mut line_texts = Vec::new();
    if let Some(nvdisasm) = build::nvdisasm() {
        let mut wanted = rep.modules_with_findings();
        if tools.contains(&Tool::Fencecheck) {
            wanted = super::fence::handoffs::modules(&handoffs, wanted);
        }
        for m in wanted {
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
            let t = watchdog::Deadline::within(std::time::Duration::from_secs(60));
            let spilling = watchdog::Output::spilling();
            let spawn = watchdog::Spawn::default();
            if let Ok((f, out)) = watchdog::collect(&nvdisasm, &args, &spawn, t, spilling) {
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
        super::streams::verdict::keep(keep, trace.as_deref());
        for (m, t) in &line_texts {
            let _ = std::fs::write(lines_path(keep, *m), t);
        }
    }
    let whole_log = format!("{stdout}{}", done.stderr);
    let confirm = cfg.confirm.then_some(Confirm {
        program,
        args,
        env: &env,
        cfg,
    });
    // fencecheck's SASS, parsed once for the whole report and every case's part of it.
    let sass = match tools.contains(&Tool::Fencecheck) {
        true => super::fence::handoffs::sass_of(&line_texts),
        false => super::fence::handoffs::Sass::new(),
    };
    let judged = Judged {
        exit: &done.exit,
        left_behind: done.left_behind,
        tables: &tables,
        sass: &sass,
        root,
    };
    let decided = judged.decide(
        &tools,
        &rep,
        &handoffs,
        trace.as_deref(),
        confirm,
        &whole_log,
    );
    let runs: Vec<SanitizerRun> = decided
        .into_iter()
        .map(|(tool, outcome, log)| SanitizerRun {
            case: label.to_string(),
            tool,
            outcome,
            exit: exit.clone(),
            seconds: start.elapsed().as_secs_f64(),
            log,
            command: command.clone(),
        })
        .collect();
    let split = split.and_then(|symbols| {
        let modules = super::split::attribute(&rep, &handoffs, symbols)?;
        // Streams are judged from a trace of the whole process: not split.
        (!tools.contains(&Tool::Streamcheck)).then_some(())?;
        Some(
            modules
                .iter()
                .map(|&m| {
                    let (part, part_handoffs) = super::split::part(&rep, &handoffs, m);
                    // No confirm runs for a part: they rerun the whole target.
                    judged.decide(&tools, &part, &part_handoffs, None, None, &whole_log)
                })
                .collect(),
        )
    });
    Ok((share_time(runs), split))
}

/// What the tools' decisions need besides the report: the run's end, nvdisasm's line tables and
/// the SASS fencecheck reads (parsed once).
struct Judged<'a> {
    exit: &'a Exit,
    left_behind: bool,
    tables: &'a BTreeMap<u32, LineTable>,
    sass: &'a super::fence::handoffs::Sass,
    root: &'a Path,
}

/// What sharedcheck's confirm runs rerun: the target as it ran.
#[derive(Clone, Copy)]
struct Confirm<'a> {
    program: &'a OsString,
    args: &'a [OsString],
    env: &'a [(String, String)],
    cfg: &'a SanitizeConfig,
}

impl Judged<'_> {
    /// Each of `tools` decided on `rep` (the whole report, or one case's part of it): the tool,
    /// its outcome and its log (`base_log`, the run's output, and the decision's lines).
    fn decide(
        &self,
        tools: &[Tool],
        rep: &report::Report,
        handoffs: &super::fence::handoffs::Handoffs,
        trace: Option<&str>,
        confirm: Option<Confirm<'_>>,
        base_log: &str,
    ) -> Vec<(Tool, Outcome, String)> {
        let (exit, behind, tables, root) = (self.exit, self.left_behind, self.tables, self.root);
        let mut out = Vec::new();
        for &tool in tools {
            let mut log = base_log.to_string();
            let outcome = if tool == Tool::Streamcheck {
                use super::streams::confirm as footprint;
                let first = super::streams::verdict::decide(exit, behind, trace, root, &mut log);
                match confirm.filter(|_| footprint::wanted(&first, trace)) {
                    Some(c) => {
                        let target = footprint::Target {
                            program: c.program,
                            args: c.args,
                            env: c.env,
                            cfg: c.cfg,
                        };
                        footprint::measured(&target, root, first, &mut log)
                    }
                    None => first,
                }
            } else if tool == Tool::Fencecheck {
                preamble("fencecheck", exit, behind, rep).unwrap_or_else(|| {
                    log.push_str(&super::fence::handoffs::log(handoffs));
                    super::fence::handoffs::decide(
                        exit, rep, handoffs, self.sass, tables, root, &mut log,
                    )
                })
            } else if tool == Tool::Sharedcheck {
                log.push_str(&super::shared::report::shared_log(rep));
                // Decided once; again, with the reads spared, only when the confirm runs spare
                // them (so the decision's log lines are written once).
                let mut decided = String::new();
                let mut outcome = decide_shared(exit, behind, rep, tables, root, &mut decided);
                if let Some(c) = confirm.filter(|_| has_uninit_read(&outcome)) {
                    if confirm::reads_are_dead(c.program, c.args, c.env, c.cfg, exit, rep, &mut log)
                    {
                        decided.clear();
                        outcome =
                            decide_shared_with(exit, behind, rep, tables, root, &mut decided, true);
                    }
                }
                log.push_str(&decided);
                outcome
            } else {
                log.push_str(&report::log(rep));
                decide(exit, behind, rep, tables, root, &mut log)
            };
            out.push((tool, outcome, log));
        }
        out
    }
}

/// Several tools' runs that were one run: each gets an even share of its time, and its log says
/// so (a single run is returned as it is).
pub fn share_time(mut runs: Vec<SanitizerRun>) -> Vec<SanitizerRun> {
    if runs.len() < 2 {
        return runs;
    }
    let whole = runs.iter().map(|r| r.seconds).fold(0.0, f64::max);
    let names: Vec<&str> = runs.iter().map(|r| r.tool.name()).collect();
    let note = format!(
        "one run for {}: {whole:.3} s in all, {:.3} s counted for each\n",
        names.join(" and "),
        whole / runs.len() as f64
    );
    let n = runs.len() as f64;
    for r in &mut runs {
        r.seconds = whole / n;
        r.log.push_str(&note);
    }
    runs
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

/// Whether sharedcheck's outcome counts a read of unwritten shared memory (the confirm runs
/// then ask whether its value reaches the output).
pub fn has_uninit_read(o: &Outcome) -> bool {
    matches!(o, Outcome::Findings(fs) if fs.iter().any(|f| f.what.contains(UNINIT_WHAT)))
}

/// The words every uninitialized-read finding of sharedcheck says.
const UNINIT_WHAT: &str = "shared memory no thread of the block wrote";

use super::decide::preamble;
use super::global::decide;
use super::shared::decide::decide_shared;
use super::shared::decide::decide_shared_with;

#[cfg(test)]
mod tests {
    //! Decisions on the report's shape (the parser and the rules that make a run inconclusive);
    //! findings and their lines are tested on H200 captures in `tests/host/globalcheck.rs`.
    use super::*;

    const START: &str =
        r#"{"tool":"globalcheck","mode":4,"budget_bytes":1,"shared_budget_bytes":1,"patches":""}"#;

    fn launch(shared: &str) -> String {
        format!(
            r#"{{"launch":0,"kernel":"k","module":-1,"grid":[1,1,1],"block":[64,1,1],"mode":4,"accesses":0,"untracked_accesses":0,"dropped":0,"named_barriers":0,"epoch_overflow":0,"untracked_allocations":[],"findings":[]{shared}}}"#
        )
    }

    fn shared(extra: &str) -> String {
        format!(
            r#","shared":{{"bytes":1280,"static":256,"dynamic":0,"dynamic_known":true,"reserved":1024,"over_budget":false,"cluster":false,"accesses":10,"untracked":0,"unsized":0,"unseen_writes":0,"dropped":0,"min_offset":0{extra}}},"shared_findings":[]"#
        )
    }

    fn outcome(lines: &[String]) -> Outcome {
        let rep = report::parse(&lines.join("\n"));
        assert!(rep.errors.is_empty(), "{:?}", rep.errors);
        let mut log = String::new();
        decide_shared(
            &Exit::Code(0),
            false,
            &rep,
            &BTreeMap::new(),
            Path::new("/"),
            &mut log,
        )
    }

    #[test]
    fn a_fully_seen_launch_without_findings_is_clean_and_every_blind_spot_is_inconclusive() {
        assert_eq!(
            outcome(&[START.into(), launch(&shared(""))]),
            Outcome::Clean
        );
        for (field, says) in [
            (r#""over_budget":true"#, "over the budget"),
            (r#""unsized":3"#, "dynamic shared memory"),
            (r#""untracked":2"#, "outside the"),
            (r#""unseen_writes":1"#, "cannot see"),
            (r#""cluster":true"#, "cannot see"),
            (r#""dropped":1"#, "overflowed"),
        ] {
            let key = field.split(':').next().unwrap();
            let line = launch(&shared(""));
            // The same launch with one field changed (serde keeps the last duplicate key out:
            // replace the field instead).
            let base = shared("");
            let at = base.find(key).unwrap();
            let end = at + base[at..].find([',', '}']).unwrap();
            let changed = format!("{}{}{}", &base[..at], field, &base[end..]);
            let line = line.replace(&base, &changed);
            match outcome(&[START.into(), line]) {
                Outcome::Inconclusive(why) => {
                    assert!(why.contains(says), "{field}: {why}");
                    assert!(super::super::decide::is_limit(&why), "{field}: {why}");
                }
                o => panic!("{field}: {o:?}"),
            }
        }
        // A run of globalcheck alone has no shared window: sharedcheck judged nothing.
        assert!(matches!(
            outcome(&[START.into(), launch("")]),
            Outcome::Inconclusive(_)
        ));
    }

    #[test]
    fn launches_of_cuda_graphs_stepped_aside_are_parsed_and_never_clean() {
        let note = r#"{"note":"stepped-aside","reason":"cuda-graph","launches":3}"#;
        let rep = report::parse(&[START, note].join("\n"));
        assert_eq!(rep.stepped_aside(), 3);
        assert_eq!(rep.notes[0].reason, "cuda-graph");
        match outcome(&[START.into(), launch(&shared("")), note.into()]) {
            Outcome::Inconclusive(why) => {
                assert!(why.contains("3 kernel launch(es) of CUDA graphs"), "{why}")
            }
            o => panic!("{o:?}"),
        }
        let mut log = String::new();
        let gc = decide(
            &Exit::Code(0),
            false,
            &report::parse(&[START.to_string(), launch(""), note.into()].join("\n")),
            &BTreeMap::new(),
            Path::new("/"),
            &mut log,
        );
        assert!(
            matches!(gc, Outcome::Inconclusive(ref w) if w.contains("CUDA graphs")),
            "{gc:?}"
        );
    }
}
