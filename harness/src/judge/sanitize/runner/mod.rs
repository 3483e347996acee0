//! Runs compute-sanitizer on one case, as racegate's own re-executed target.
//! Part of `judge/`: may import the stages below `judge/` and the rest of `judge::sanitize`.
//!
//! racegate re-executes itself (`__sanitize-target`) as the target, on the family's sanitizer
//! geometry, under a deadline and a process-group kill. The XML it saves is parsed; exit codes
//! alone are never trusted (0 with findings, 255 for tool trouble), and anything undecidable is
//! `Inconclusive`, never clean.

use std::ffi::OsString;
use std::path::Path;

use super::normalize;
use super::tool::{read_capture, Capture, Outcome, SanitizeConfig, SanitizerRun, Tool};
use super::xml;
use crate::build::compile::{self, BuildOptions};
use crate::errors::{Error, Result};
use crate::proc::watchdog::{self, Exit};
use crate::source::catalog::{Case, Catalog};

/// How the target's line of where its time went starts (`report::timing` reads it back).
pub const TIMING: &str = "racegate target timing: ";

/// The exit code racegate asks compute-sanitizer to use when it found errors.
pub const FINDINGS_EXIT: i32 = 86;

/// Runs `cfg.tool` on `case`.
pub fn run(
    catalog: &Catalog,
    case: &Case,
    cfg: &SanitizeConfig,
    exe: &Path,
) -> Result<SanitizerRun> {
    if cfg.sanitizer.is_none() && !cfg.tool.is_own() {
        return Ok(inconclusive(&case.name, cfg, NOT_FOUND.into()));
    }
    let target = target_command(catalog, case, cfg, exe)?;
    let r = run_target(&case.name, &target, cfg, &catalog.root)?;
    Ok(with_never_written(vec![r], catalog, case, cfg).remove(0))
}

/// Runs racegate's own `tools` (globalcheck, sharedcheck, ...) on `case` in one injected run: one
/// [`SanitizerRun`] per tool, in the order given, each with its share of the run's time
/// ([`super::injected::run::run_tools`]). `cfg.tool` is not read.
pub fn run_own(
    catalog: &Catalog,
    case: &Case,
    cfg: &SanitizeConfig,
    exe: &Path,
    tools: &[Tool],
) -> Result<Vec<SanitizerRun>> {
    let target = target_command(catalog, case, cfg, exe)?;
    let runs = super::injected::run::run_tools(&case.name, &target, cfg, &catalog.root, tools)?;
    Ok(with_never_written(runs, catalog, case, cfg))
}

/// sharedcheck's runs of `case` with the `__shared__` variables its file reads and never writes
/// added as findings ([`super::injected::never_written`]: a read the optimizer deletes, which
/// no run can see). A hang stays a hang; anything else with such a variable has a finding.
pub(super) fn with_never_written(
    mut runs: Vec<SanitizerRun>,
    catalog: &Catalog,
    case: &Case,
    cfg: &SanitizeConfig,
) -> Vec<SanitizerRun> {
    for r in runs.iter_mut().filter(|r| r.tool == Tool::Sharedcheck) {
        let found = match never_written(catalog, case, cfg) {
            Ok(f) => f,
            Err(e) => {
                r.log.push_str(&format!(
                    "sharedcheck: the unoptimized build for shared variables never written failed: {e}\n"
                ));
                continue;
            }
        };
        if found.is_empty() {
            continue;
        }
        r.outcome = match std::mem::replace(&mut r.outcome, Outcome::Clean) {
            Outcome::Findings(mut f) => {
                f.extend(found);
                Outcome::Findings(f)
            }
            Outcome::Hang { left_behind, said } => Outcome::Hang { left_behind, said },
            Outcome::Inconclusive(why) => {
                r.log.push_str(&format!(
                    "sharedcheck: the run alone was inconclusive: {why}\n"
                ));
                Outcome::Findings(found)
            }
            Outcome::Clean => Outcome::Findings(found),
        };
    }
    runs
}

/// The `__shared__` variables `case`'s file reads and never writes, as findings: its source
/// compiled again without optimization (`-G`), where every access is still in the PTX.
pub fn never_written(
    catalog: &Catalog,
    case: &Case,
    cfg: &SanitizeConfig,
) -> Result<Vec<normalize::Finding>> {
    let ptx = compile::compile_to_cache(
        &catalog.root,
        &case.path,
        &BuildOptions::for_case(case, &cfg.arch, false).unoptimized(),
    )?;
    let text = std::fs::read_to_string(&ptx).map_err(|e| Error::io("reading", &ptx, e))?;
    // Reads count only in the case's kernel and what it calls (a C++ entry by its identifier).
    let entry = case
        .entry
        .name
        .split('<')
        .next()
        .unwrap_or(&case.entry.name)
        .trim();
    let raw = super::injected::shared::never_written::find(&text, Some(entry))
        .into_iter()
        .map(|v| normalize::Finding {
            kind: "Shared".into(),
            level: "Error".into(),
            kernel: v.function,
            location: v
                .line
                .map_or_else(|| case.path.clone(), |(p, l)| format!("{p}:{l}")),
            accesses: "Read".into(),
            what: format!(
                "Reads shared memory no thread of the block wrote since it started: the __shared__ variable `{}` is read and never written (the optimizer deletes such a read, so no run shows it)",
                v.name
            ),
        })
        .collect();
    Ok(normalize::normalized(raw, &catalog.root))
}

/// racegate's own tools among `tools`, in their order: one injected run serves them all.
pub fn own_tools(tools: &[Tool]) -> Vec<Tool> {
    tools.iter().copied().filter(|t| t.is_own()).collect()
}

/// The command line of the sanitizer target for `case`: racegate (or `exe`) re-executed on the
/// case's PTX.
fn target_command(
    catalog: &Catalog,
    case: &Case,
    cfg: &SanitizeConfig,
    exe: &Path,
) -> Result<Vec<OsString>> {
    Ok(target_command_for(catalog, &[case], cfg, exe, None)?.0)
}

/// The target's command line for several cases run one after another on one device context
/// (each case's PTX after it), and those PTX files. With more than one case the target also
/// gets `nonce` ([`new_nonce`]), which it puts on its result lines and its last line.
pub(super) fn target_command_for(
    catalog: &Catalog,
    cases: &[&Case],
    cfg: &SanitizeConfig,
    exe: &Path,
    nonce: Option<&str>,
) -> Result<(Vec<OsString>, Vec<std::path::PathBuf>)> {
    let mut ptxs = Vec::new();
    let mut target: Vec<OsString> = vec![OsString::from(exe)];
    target.extend(catalog.child_args());
    target.push(crate::proc::subcommands::SANITIZE_TARGET.into());
    for case in cases {
        let ptx = compile::compile_to_cache(
            &catalog.root,
            &case.path,
            &BuildOptions::for_case(case, &cfg.arch, false),
        )?;
        target.extend([
            "--case".into(),
            case.name.clone().into(),
            "--ptx".into(),
            ptx.clone().into(),
        ]);
        ptxs.push(ptx);
    }
    target.extend(["--seed".into(), cfg.seed.to_string().into()]);
    if cases.len() > 1 && cfg.tool == Tool::Initcheck {
        target.push("--keep-memory".into());
    }
    if let Some(n) = nonce {
        target.extend(["--nonce".into(), n.into()]);
    }
    if let Some(s) = crate::run::stress::size_arg(cfg.size) {
        target.extend(["--size".into(), s.into()]);
    }
    Ok((target, ptxs))
}

const NOT_FOUND: &str =
    "compute-sanitizer not found (looked at RACEGATE_COMPUTE_SANITIZER, PATH, CUDA_HOME/bin, /usr/local/cuda/bin)";

/// Runs `cfg.tool` on any target command (`target[0]` is the program); `label` names it in the
/// report and `root` is what finding paths are made relative to.
pub fn run_target(
    label: &str,
    target: &[OsString],
    cfg: &SanitizeConfig,
    root: &Path,
) -> Result<SanitizerRun> {
    if cfg.tool.is_own() {
        return super::injected::run_target(label, target, cfg, root);
    }
    let deadline = watchdog::Deadline {
        idle: cfg.timeout,
        total: Some(cfg.timeout),
    };
    run_tool(label, target, cfg, root, deadline)
}

/// compute-sanitizer's `cfg.tool` (not one of racegate's own) on `target` under `deadline`.
pub(super) fn run_tool(
    label: &str,
    target: &[OsString],
    cfg: &SanitizeConfig,
    root: &Path,
    deadline: watchdog::Deadline,
) -> Result<SanitizerRun> {
    let start = std::time::Instant::now();
    let Some(sanitizer) = cfg.sanitizer.clone() else {
        return Ok(inconclusive(label, cfg, NOT_FOUND.into()));
    };
    // A folder of our own rather than a file: the sanitizer creates the XML itself, and "no
    // XML was written" must stay distinguishable from an empty file. Dropping the folder
    // removes it on every return, early ones included.
    let scratch;
    let xml_path = match &cfg.keep_xml {
        Some(p) => p.clone(),
        None => {
            let dir = compile::cache_dir()?.join("xml");
            std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
            scratch = tempfile::tempdir_in(&dir).map_err(|e| Error::io("creating", &dir, e))?;
            scratch.path().join(xml_name(label, cfg.tool))
        }
    };
    // ignored: usually there is none; one that stays is overwritten by the tool, and a run that writes none is inconclusive
    let _ = std::fs::remove_file(&xml_path);
    let mut args: Vec<OsString> = vec![
        "--tool".into(),
        cfg.tool.name().into(),
        "--xml".into(),
        "--save".into(),
        xml_path.clone().into(),
        "--print-limit".into(),
        "0".into(),
        "--error-exitcode".into(),
        FINDINGS_EXIT.to_string().into(),
        "--show-backtrace".into(),
        "no".into(),
    ];
    if cfg.tool == Tool::Racecheck {
        for a in [
            "--racecheck-report",
            "analysis",
            "--racecheck-deadlock-timeout",
            "3000",
            "--racecheck-num-workers",
            "2",
        ] {
            args.push(a.into());
        }
    }
    args.extend(cfg.extra_args.iter().map(OsString::from));
    args.extend(target.iter().cloned());
    // racegate's own target launches on one stream: one hardware queue (`device::one_queue`).
    let env = match target.split_first() {
        Some((p, a)) if crate::run::device::is_own_one_stream_target(p, a) => {
            crate::run::device::one_queue()
        }
        _ => Vec::new(),
    };
    // As a person reruns it: the variables added, then the command.
    let command = env
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain(std::iter::once(sanitizer.display().to_string()))
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    let (finished, stdout) = watchdog::collect(
        &sanitizer,
        &args,
        &watchdog::Spawn::with_env(&env),
        deadline,
        watchdog::Output::bounded(),
    )?;
    let stdout = stdout.text();
    let log = format!("{stdout}{}", finished.stderr);
    let exit = finished.exit.describe(cfg.timeout);
    let outcome = decide(&finished.exit, finished.left_behind, &xml_path, &log, root);
    Ok(SanitizerRun {
        case: label.to_string(),
        tool: cfg.tool,
        outcome,
        exit,
        seconds: start.elapsed().as_secs_f64(),
        log,
        command,
    })
}

/// The file name the tool writes its XML to for `label`: the label made safe, and past 80
/// bytes its start and a hash of the whole, so a batch's label (every case's name, joined)
/// never passes the file system's 255 bytes (H200 run 26, call B: four of the matrix's
/// batches were inconclusive, "the XML is not a regular file", and every case ran again alone).
pub(super) fn xml_name(label: &str, tool: Tool) -> String {
    let safe = label.replace("::", "__").replace('/', "_");
    if safe.len() <= 80 {
        return format!("{safe}-{tool}.xml");
    }
    let mut head = String::new();
    for c in safe.chars() {
        if head.len() + c.len_utf8() > 60 {
            break;
        }
        head.push(c);
    }
    format!("{head}-{:016x}-{tool}.xml", compile::fingerprint(&safe))
}

fn inconclusive(label: &str, cfg: &SanitizeConfig, why: String) -> SanitizerRun {
    SanitizerRun {
        case: label.to_string(),
        tool: cfg.tool,
        outcome: Outcome::Inconclusive(why),
        exit: "not run".into(),
        seconds: 0.0,
        log: String::new(),
        command: String::new(),
    }
}

/// The most XML read back (a run with many findings still writes far less).
const XML_LIMIT: u64 = 256 << 20;

/// Turns an exit and an XML file into an outcome. Public for tests with fake sanitizers.
pub fn decide(exit: &Exit, left_behind: bool, xml_path: &Path, log: &str, root: &Path) -> Outcome {
    if *exit == Exit::TimedOut {
        let said = log
            .lines()
            .find(|l| l.contains("Deadlock detected"))
            .map(|l| l.trim_start_matches('=').trim().to_string());
        return Outcome::Hang { left_behind, said };
    }
    if log.contains("Device not supported") {
        return Outcome::Inconclusive("compute-sanitizer: Device not supported".into());
    }
    if log.contains("Target application terminated before first instrumented API call") {
        return Outcome::Inconclusive(
            "the target died before its first CUDA call (see the log)".into(),
        );
    }
    let code = match exit {
        Exit::Code(c) => *c,
        Exit::Signal(s) => {
            return Outcome::Inconclusive(format!("compute-sanitizer was killed by signal {s}"))
        }
        Exit::TimedOut => unreachable!(),
    };
    if code == 255 {
        return Outcome::Inconclusive(format!(
            "compute-sanitizer exited 255 (tool error): {}",
            tail(log)
        ));
    }
    // The target could write where the sanitizer writes: read only a regular file, bounded.
    let text = match read_capture(xml_path, XML_LIMIT) {
        Capture::Text(t) => t,
        Capture::Missing => {
            return Outcome::Inconclusive(format!(
                "no XML was written (exit {code}): {}",
                tail(log)
            ));
        }
        Capture::TooLarge(l) => {
            return Outcome::Inconclusive(format!("the XML is over {} MiB: not read", l >> 20))
        }
        Capture::NotAFile => {
            return Outcome::Inconclusive("the XML is not a regular file: not read".into())
        }
    };
    let records = match xml::parse(&text) {
        Ok(r) => r,
        Err(e) => return Outcome::Inconclusive(format!("the XML does not parse: {e}")),
    };
    let findings = normalize::findings(&records, root);
    match (code, findings.is_empty()) {
        (0, true) => Outcome::Clean,
        (FINDINGS_EXIT, false) | (0, false) => Outcome::Findings(findings),
        (FINDINGS_EXIT, true) => {
            Outcome::Inconclusive("compute-sanitizer reported errors but the XML holds none".into())
        }
        (c, false) => Outcome::Findings(findings).with_note(c),
        (c, true) => Outcome::Inconclusive(format!(
            "the target exited {c} without findings: {}",
            tail(log)
        )),
    }
}

impl Outcome {
    fn with_note(self, _code: i32) -> Outcome {
        // A target that fails after a sanitizer error (e.g. error 719 after an out-of-bounds
        // write) still has its findings; they are the answer.
        self
    }
}

/// The last three lines of a run's log that say something (the target's own timing line is
/// bookkeeping, not why a run failed).
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(TIMING))
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// Target side: one launch of each case on the sanitizer geometry (or `size`), each case's
/// PTX beside it, on one device context (a batch: `batch/`). Prints what the oracle says, a
/// line per case as it finishes (for the log; a batch's parent counts them), and exits 0
/// whatever the result: sanitizers judge here, not the oracle. Where each case's time went
/// (`catalog_ms` reading the catalog, then opening the device, loading the module, the launch)
/// goes to stderr, a line of the run's log ending with the case's name.
pub fn targets(
    catalog: &Catalog,
    cases: &[(String, std::path::PathBuf)],
    seed: u64,
    size: Option<crate::source::exercises::SizeChoice>,
    catalog_ms: f64,
    keep_memory: bool,
    nonce: Option<&str>,
) -> Result<()> {
    use std::io::Write;
    let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e3;
    let mut gpu = None;
    // With `keep_memory` (initcheck's batches) every case's device memory stays allocated until
    // the process ends, so a later case never gets memory an earlier one wrote
    // (`Gpu::run_keeping`): what initcheck says of a case is what it says of the case alone.
    // Without it (memcheck's), an earlier case's memory is freed, as in a run alone: kept, it
    // would be valid memory for a later case's stray access, which memcheck must report.
    let mut kept = Vec::new();
    let mut catalog_ms = catalog_ms;
    for (case_name, ptx) in cases {
        let case = catalog.get(case_name)?;
        let text = std::fs::read_to_string(ptx).map_err(|e| Error::io("reading", ptx, e))?;
        let opened = std::time::Instant::now();
        if gpu.is_none() {
            gpu = Some(crate::run::launch::Gpu::open()?);
        }
        let gpu = gpu.as_ref().expect("opened above");
        let open_ms = ms(opened);
        let line = target(
            gpu,
            case,
            &text,
            seed,
            size,
            &mut kept,
            |load_ms, launch_ms| {
                eprintln!(
                "{TIMING}catalog {catalog_ms:.0} ms, device open {open_ms:.0} ms, module load {load_ms:.0} ms, launch and read back {launch_ms:.0} ms; case {}",
                case.name
            );
            },
        )?;
        catalog_ms = 0.0;
        if !keep_memory {
            kept.clear();
        }
        let mut out = std::io::stdout().lock();
        let tag = nonce.map(|n| format!(" [run {n}]")).unwrap_or_default();
        // ignored: the parent reads this pipe; a line it misses is a case it runs again alone
        let _ = writeln!(out, "{line}{tag}").and_then(|()| out.flush());
    }
    if let Some(n) = nonce {
        // Every case ran: the last line a batch's parent needs before it settles any.
        let mut out = std::io::stdout().lock();
        // ignored: without this line the parent settles nothing
        let _ = writeln!(out, "{RESULT}{ALL_RAN} [run {n}]").and_then(|()| out.flush());
    }
    Ok(())
}

/// The target's last line in a batch, after its result prefix: every case ran.
pub const ALL_RAN: &str = "every case ran";

/// A batch's nonce: 64 random bits in hex, which a batch's target puts on its result lines. A
/// kernel's device `printf` shares the target's stdout and cannot know it, so it cannot forge a
/// line the parent believes.
pub fn new_nonce() -> String {
    use std::io::Read;
    let mut b = [0u8; 8];
    let random = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if random.is_err() {
        // No urandom: the time and the process, hashed (unpredictable enough to a kernel, which
        // sees neither).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let parts = [
            t.to_le_bytes().to_vec(),
            std::process::id().to_le_bytes().to_vec(),
        ];
        b = compile::fnv(&[&parts[0], &parts[1]]).to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One launch of `case` (its PTX `text`) on `gpu`: the line saying what the oracle found.
/// `timing` gets the module load's and the launch's milliseconds.
fn target(
    gpu: &crate::run::launch::Gpu,
    case: &Case,
    text: &str,
    seed: u64,
    size: Option<crate::source::exercises::SizeChoice>,
    kept: &mut Vec<cudarc::driver::CudaSlice<u8>>,
    timing: impl FnOnce(f64, f64),
) -> Result<String> {
    let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1e3;
    use rand::SeedableRng;
    let family = case.family();
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
    let problem = family.problem(
        &case.entry,
        size.unwrap_or(crate::source::exercises::SizeChoice::Sanitize),
        &mut rng,
    );
    let loaded = std::time::Instant::now();
    let module = gpu.load(text)?;
    let load_ms = ms(loaded);
    let launched = std::time::Instant::now();
    let ran = gpu.run_keeping(&module, &problem, Default::default(), kept);
    timing(load_ms, ms(launched));
    Ok(match ran {
        Ok(actual) => {
            // The digest lets sharedcheck's confirm runs see whether poison in unwritten shared
            // memory reaches the outputs, even when both runs are wrong the same number of times.
            let digest = digest(&actual);
            match crate::run::oracle::check(&problem.buffers, &actual) {
                None => format!(
                    "{RESULT}{} ({}): {RAN_CORRECT}; buffers digest {digest:016x}",
                    case.name, problem.label
                ),
                Some(w) => format!(
                    "{RESULT}{} ({}): {} of {} elements of `{}` {RAN_WRONG}; buffers digest {digest:016x}",
                    case.name, problem.label, w.wrong, w.total, w.buffer
                ),
            }
        }
        Err(e) => format!("{RESULT}{} ({}): {e}", case.name, problem.label),
    })
}

/// How a target's line for a case starts (then the case's name and its problem in brackets).
pub const RESULT: &str = "racegate target: ";
/// What a target's line says of a launch that ran and gave right results...
pub const RAN_CORRECT: &str = "results correct";
/// ...or wrong ones (after the count of wrong elements).
pub const RAN_WRONG: &str = "wrong";

/// [`compile::fnv`] over every buffer after the launch, each after its length.
fn digest(buffers: &[Vec<u8>]) -> u64 {
    let lens: Vec<[u8; 8]> = buffers
        .iter()
        .map(|b| (b.len() as u64).to_le_bytes())
        .collect();
    let parts: Vec<&[u8]> = lens
        .iter()
        .zip(buffers)
        .flat_map(|(l, b)| [&l[..], &b[..]])
        .collect();
    compile::fnv(&parts)
}

#[cfg(test)]
mod tests;
