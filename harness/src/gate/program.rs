//! Program mode (`gate -- PROGRAM ARGS`): the program, found through `PATH` like a shell would,
//! under the chosen sanitizers and run several times plainly. Plain runs are judged on their
//! exit, their deadline and their standard output as bytes after masking ([`super::masks`]);
//! differing outputs come with a unified diff of the first two that differ.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::finding::{GateConfig, GateEvent, GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use super::judge::{self, runs_shown, RunOutput};
use super::oracles::RegexVerdict;
use super::sanitizers::{self, PendingHang};
use crate::errors::{Error, Result};
use crate::judge::sanitize;
use crate::judge::sanitize::tool::{read_capture, Capture};
use crate::proc::watchdog::{self, Deadline, Exit};

/// Where `name` runs from: a name with a `/` as it is (relative to the current folder), a bare
/// name through `PATH` (an executable file), as a shell finds it.
pub fn resolve(name: &OsStr) -> Result<PathBuf> {
    let not_found = |why: &str| Error::Usage(format!("program `{}` {why}", name.to_string_lossy()));
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.is_file()
            && p.metadata()
                .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
    };
    if name.as_encoded_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        return if executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(not_found("is not an executable file"))
        } else {
            Err(not_found("not found"))
        };
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .find(|p| executable(p))
        })
        .ok_or_else(|| not_found("not found in PATH"))
}

/// The program as reports name it: relative to `root` when inside it, else absolute.
fn shown(root: &Path, exe: &Path) -> String {
    let abs = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
    crate::build::toolchain::relative_to(root, &abs).unwrap_or_else(|| abs.display().to_string())
}

/// One program to gate: its name in reports, its command, and where and how it runs.
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// The subject of its findings and baseline entries.
    pub subject: String,
    /// The program (as given: a bare name is looked up in `PATH`) and its arguments.
    pub argv: Vec<OsString>,
    /// Its working folder (default: ours).
    pub cwd: Option<PathBuf>,
    /// Variables set for it.
    pub env: Vec<(String, String)>,
    /// The deadline of one plain run (default: the gate's `--timeout`).
    pub timeout: Option<std::time::Duration>,
}

/// Runs an existing program under each chosen sanitizer and `cfg.runs` times plainly;
/// `on_done` sees each detector's run as it finishes.
pub fn run_program(
    program: &[OsString],
    root: &Path,
    cfg: &GateConfig,
    on_done: impl Fn(&GateEvent) + Sync,
) -> Result<GateRun> {
    let subject = Path::new(&program[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let t = Target {
        subject,
        argv: program.to_vec(),
        ..Default::default()
    };
    run_target_with(&t, root, cfg, on_done)
}

/// Runs one [`Target`] under each chosen sanitizer and `cfg.runs` times plainly.
pub fn run_target(t: &Target, root: &Path, cfg: &GateConfig) -> Result<GateRun> {
    run_target_with(t, root, cfg, |_| {})
}

/// [`run_target`], telling `on_done` about each detector's run as it finishes (progress).
pub fn run_target_with(
    t: &Target,
    root: &Path,
    cfg: &GateConfig,
    on_done: impl Fn(&GateEvent) + Sync,
) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let exe = match &t.cwd {
        // A relative program with a `/` is relative to its own working folder, as in CTest.
        Some(d) if t.argv[0].as_encoded_bytes().contains(&b'/') => {
            resolve(d.join(&t.argv[0]).as_os_str())?
        }
        _ => resolve(&t.argv[0])?,
    };
    let exe = std::path::absolute(&exe).unwrap_or(exe);
    let subject = t.subject.clone();
    let file = shown(root, &exe);
    // Under the sanitizers the working folder and variables come through `env`, which execs
    // the program in place, so the sanitizer follows it as it would the program itself.
    let mut target: Vec<OsString> = Vec::new();
    if t.cwd.is_some() || !t.env.is_empty() {
        target.push("/usr/bin/env".into());
        if let Some(d) = &t.cwd {
            target.extend(["-C".into(), d.clone().into_os_string()]);
        }
        target.extend(
            t.env
                .iter()
                .map(|(k, v)| OsString::from(format!("{k}={v}"))),
        );
    }
    target.push(exe.clone().into());
    target.extend(t.argv[1..].iter().cloned());
    let mut run = GateRun {
        subjects: vec![subject.clone()],
        ..Default::default()
    };
    let sanitizer_runs = crate::proc::pool::run_all(
        cfg.tools.clone(),
        cfg.battery.jobs,
        |tool| -> Result<(GateRun, Option<PendingHang>)> {
            let mut sc = cfg.battery.sanitize(tool);
            sc.extra_args = cfg.sanitizer_args.clone();
            let r = sanitize::runner::run_target(&subject, &target, &sc, root)?;
            let mut part = GateRun::default();
            let mut sources = Sources::new(root);
            let pending = sanitizers::add(&subject, &r, &file, &mut sources, &mut part);
            Ok((part, pending))
        },
        |r| {
            if let Ok((part, _)) = r {
                part.events().iter().for_each(&on_done);
            }
        },
    );
    let mut pending = Vec::new();
    for r in sanitizer_runs {
        let (part, hang) = r?;
        run.absorb(part);
        pending.extend(hang);
    }
    let mut plain_part = GateRun::default();
    let plain = plain_runs(&exe, t, &file, root, cfg, &mut plain_part)?;
    plain_part.events().iter().for_each(&on_done);
    run.absorb(plain_part);
    for h in pending {
        h.resolve(Some(plain), &mut run);
    }
    run.tidy();
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

/// The folder a jittered run's report goes to, and the variables that inject the tool.
type JitterEnv = (tempfile::TempDir, Vec<(String, String)>);

/// The variables that put a program's runs under globalcheck's jitter, and the folder its
/// report goes to; `None` (with a note) when jitter is off or the tool cannot be built.
fn jitter_env(
    root: &Path,
    cfg: &GateConfig,
    run: &mut GateRun,
    subject: &str,
) -> Result<Option<JitterEnv>> {
    if !cfg.jitter {
        return Ok(None);
    }
    match crate::build::globalcheck::ensure(root) {
        Ok(b) => {
            let dir = tempfile::tempdir_in(crate::build::compile::cache_dir()?)
                .map_err(|e| crate::Error::io("creating", "a jitter folder", e))?;
            Ok(Some((
                dir,
                vec![
                    ("CUDA_INJECTION64_PATH".into(), b.tool.display().to_string()),
                    (
                        "RACEGATE_GC_PATCHES".into(),
                        b.patches.display().to_string(),
                    ),
                    ("RACEGATE_GC_MODE".into(), "jitter".into()),
                ],
            )))
        }
        Err(why) => {
            run.notes.push(format!(
                "{subject}: plain runs without schedule jitter (globalcheck's tool cannot be built: {why})"
            ));
            Ok(None)
        }
    }
}

/// The plain runs: exit codes (or the regex oracle), deadlines, leftovers, then the outputs of
/// the runs that passed, against each other, the golden output and the checker. Says whether
/// any run hung.
fn plain_runs(
    exe: &Path,
    t: &Target,
    file: &str,
    root: &Path,
    cfg: &GateConfig,
    run: &mut GateRun,
) -> Result<bool> {
    let subject = t.subject.as_str();
    let timeout = t.timeout.unwrap_or(cfg.battery.stress_timeout);
    let mut spawn = watchdog::Spawn {
        env: t.env.clone(),
        cwd: t.cwd.clone(),
        ..Default::default()
    };
    let jitter = jitter_env(root, cfg, run, subject)?;
    let mut outputs: Vec<RunOutput> = Vec::new();
    // The whole of a long output stays (on disk) past its run only for the oracles that need it.
    let whole = cfg.oracles.expect.is_some() || cfg.oracles.check.is_some();
    // kind -> (detector, runs it happened in, last stderr line)
    let mut failures: BTreeMap<String, (&str, Vec<u32>, String)> = BTreeMap::new();
    let (mut seconds, mut hung) = (0.0, false);
    for i in 1..=cfg.runs {
        if let Some((dir, env)) = &jitter {
            spawn.env = t.env.clone();
            spawn.env.extend(env.iter().cloned());
            // Each run its own schedule: the seed moves with the run.
            spawn.env.push((
                "RACEGATE_GC_SEED".into(),
                (cfg.battery.seed + u64::from(i)).to_string(),
            ));
            spawn
                .env
                .push(("RACEGATE_GC_DIR".into(), dir.path().display().to_string()));
        }
        // Bounded memory whatever the program prints: its head and tail, and past them the
        // whole on disk, read back after the run (masks and regexes cost racegate's time, not
        // the program's deadline).
        let mut stdout = watchdog::Output::spilling();
        let f = watchdog::run_spawn_bytes(
            exe,
            &t.argv[1..],
            &spawn,
            Deadline {
                idle: timeout,
                total: Some(timeout),
            },
            |l| stdout.push_line(l),
        )?;
        stdout.finish();
        let mut scan = cfg.oracles.scan();
        let masked = judge::read_back(&stdout, &cfg.masks, &mut scan);
        if !whole {
            stdout.discard_spill();
        }
        seconds += f.elapsed.as_secs_f64();
        if !f.killed.is_empty() && f.exit != Exit::TimedOut {
            run.notes.push(format!(
                "{subject}: run {i} left {} running after it exited; killed: {}",
                f.killed.len(),
                f.killed.join(", ")
            ));
        }
        if !f.survivors.is_empty() {
            run.mark_inconclusive(
                subject,
                "watchdog",
                format!("run {i}: could not kill {}", f.survivors.join(", ")),
            );
        }
        let (det, kind) = match f.exit {
            Exit::Code(c) => {
                // CTest matches stdout and stderr together: the whole output when it is kept
                // in memory, else line by line as it was read back.
                let verdict = if masked.is_some() {
                    f.stderr.lines().for_each(|l| scan.line(l.as_bytes()));
                    scan.verdict(c)
                } else {
                    let mut both = stdout.bytes();
                    both.extend_from_slice(f.stderr.as_bytes());
                    cfg.oracles.regex_verdict(c, &both)
                };
                match verdict {
                    Some(RegexVerdict::Pass) => {
                        outputs.push(RunOutput::new(i, stdout, masked, &cfg.masks));
                        continue;
                    }
                    Some(RegexVerdict::Fail(kind)) => ("regex", kind),
                    None if c == 0 => {
                        outputs.push(RunOutput::new(i, stdout, masked, &cfg.masks));
                        continue;
                    }
                    None => ("exit", format!("exits with code {c}")),
                }
            }
            Exit::Signal(s) => ("exit", format!("killed by signal {s}")),
            Exit::TimedOut => {
                hung = true;
                (
                    "watchdog",
                    format!("hang: no exit within {:.0} s", timeout.as_secs_f64()),
                )
            }
        };
        let e = failures
            .entry(kind)
            .or_insert((det, Vec::new(), String::new()));
        e.1.push(i);
        e.2 = f.stderr.lines().last().unwrap_or("").to_string();
    }
    let mut dets = vec!["exit", "watchdog", "output"];
    if cfg.oracles.decides_exits() {
        dets.push("regex");
    }
    for det in dets {
        run.mark_checked(subject, det, seconds);
    }
    for (kind, (det, runs, stderr)) in failures {
        let id = Identity {
            subject: subject.into(),
            detector: det.into(),
            kind: kind.clone(),
            ..Default::default()
        };
        let oracle = if det == "regex" {
            "regex"
        } else if det == "exit" {
            "exit code"
        } else {
            "hang"
        };
        let message = format!(
            "{oracle}: {kind} in {} of {} runs ({}); last stderr line: {stderr}",
            runs.len(),
            cfg.runs,
            runs_shown(&runs),
        );
        run.findings.push(GateFinding::new(id, file, None, message));
    }
    if cfg.oracles.vary_ok {
        run.notes.push(format!(
            "{subject}: output may vary (vary = \"ok\"): not compared between runs"
        ));
    } else if let Some(f) = output_finding(&outputs, subject, file, cfg) {
        run.findings.push(f);
    }
    judge::golden(&outputs, subject, file, cfg, run)?;
    judge::checker(&outputs, subject, file, t.cwd.as_deref(), cfg, run);
    // A failure of the injection itself must not pass for the program's: the runs' verdicts
    // then cannot be trusted.
    if let Some((dir, _)) = &jitter {
        // The program can write into the tool's folder: read as a capture (regular, bounded).
        let text = match read_capture(&dir.path().join("report.jsonl"), 64 << 20) {
            Capture::Text(t) => t,
            _ => String::new(),
        };
        if let Some(e) = crate::judge::sanitize::globalcheck::report::parse(&text)
            .errors
            .first()
        {
            run.mark_inconclusive(
                subject,
                "jitter",
                format!("the jitter injection failed: {e}"),
            );
        }
    }
    Ok(hung)
}

/// A finding when the successful runs' outputs differ after masking, with the diff of the first
/// output and the first one that differs from it.
fn output_finding(
    outputs: &[RunOutput],
    subject: &str,
    file: &str,
    cfg: &GateConfig,
) -> Option<GateFinding> {
    let first = outputs.first()?;
    let other = outputs.iter().find(|o| !o.same_as(first))?;
    let mut distinct: Vec<&RunOutput> = Vec::new();
    for o in outputs {
        if !distinct.iter().any(|d| d.same_as(o)) {
            distinct.push(o);
        }
    }
    let id = Identity {
        subject: subject.into(),
        detector: "output".into(),
        kind: "output differs between identical runs".into(),
        ..Default::default()
    };
    let (first_run, other_run) = (first.run, other.run);
    let message = format!(
        "variance: {} different outputs in {} successful runs (after masking); runs {first_run} and {other_run} differ",
        distinct.len(),
        outputs.len()
    );
    let mut f = GateFinding::new(id, file, None, message);
    f.detail = Some(judge::diff_of(
        &first.shown(&cfg.masks),
        &other.shown(&cfg.masks),
        &format!("run {first_run}"),
        &format!("run {other_run}"),
    ));
    Some(f)
}
