//! Program mode (`gate -- PROGRAM ARGS`): the program, found through `PATH` like a shell would,
//! under the chosen sanitizers and run several times plainly. Plain runs are judged on their
//! exit, their deadline and their standard output as bytes after masking ([`super::masks`]);
//! differing outputs come with a unified diff of the first two that differ.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::finding::{GateConfig, GateEvent, GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use super::jitter::{jitter_env, jitter_report, JitterEnv};
use super::judge::{self, runs_shown, RunOutput};
use super::oracles::RegexVerdict;
use super::sanitizers::{self, PendingHang};
use crate::errors::{Error, Result};
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
    // racegate's own tools that were chosen share one injected run (`run_groups`); each
    // compute-sanitizer tool runs alone.
    let sanitizer_runs = crate::proc::pool::run_all(
        sanitizers::run_groups(&cfg.tools),
        cfg.battery.jobs,
        |group| -> Result<(GateRun, Vec<PendingHang>)> {
            let mut sc = cfg.battery.sanitize(group[0]);
            sc.extra_args = cfg.sanitizer_args.clone();
            // sharedcheck's confirm runs compare the program's output as the plain runs do.
            let masks = cfg.masks.clone();
            sc.output_view = Some(crate::judge::sanitize::tool::OutputView(
                std::sync::Arc::new(move |out: &[u8]| masks.apply(out)),
            ));
            let runs = sanitizers::run_group_target(&subject, &target, &sc, root, &group)?;
            let mut part = GateRun::default();
            let mut sources = Sources::new(root);
            let mut pending = Vec::new();
            for r in &runs {
                pending.extend(sanitizers::add(&subject, r, &file, &mut sources, &mut part));
            }
            Ok((part, pending))
        },
        |r| {
            if let Ok((part, hangs)) = r {
                let hung = PendingHang::keys(hangs);
                part.events_with_hangs(&hung).iter().for_each(&on_done);
            }
        },
    );
    let mut pending = Vec::new();
    for r in sanitizer_runs {
        let (part, hangs) = r?;
        run.absorb(part);
        pending.extend(hangs);
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

/// The plain runs: exit codes (or the regex oracle), deadlines, leftovers, then the outputs of
/// the runs that passed, against each other, the golden output and the checker. Says whether
/// any run hung.
///
/// With schedule jitter, a jittered run that fails on its exit code (or its regexes) is not
/// reported before the program has run as many times again without jitter: the finding then says
/// whether it failed both ways or only under jitter (a race the jitter exposed, or a launch the
/// injection should have stepped aside from), so racegate's own injection never passes silently
/// for the program's failure.
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
    let jitter = jitter_env(root, cfg, run, subject)?;
    let mut runs = Runs {
        exe,
        t,
        cfg,
        timeout,
        outputs: Vec::new(),
        failures: BTreeMap::new(),
        seconds: 0.0,
        slowest: [0.0; 2],
        hung: false,
    };
    for i in 1..=cfg.runs {
        runs.one(i, jitter.as_ref(), run)?;
    }
    // Runs past `cfg.runs` are the re-runs without jitter: after a failure, a hang, or outputs
    // that differ (told apart from run-to-run noise by `variance`).
    let differ = !cfg.oracles.vary_ok && runs.outputs.iter().any(|o| !o.same_as(&runs.outputs[0]));
    let rerun = jitter.is_some()
        && (differ
            || runs
                .failures
                .values()
                .any(|(det, ..)| matches!(*det, "exit" | "regex" | "watchdog")));
    if rerun {
        for i in cfg.runs + 1..=2 * cfg.runs {
            runs.one(i, None, run)?;
        }
        run.notes.push(format!(
            "{subject}: a run under schedule jitter failed, hung or printed another output, so \
             the program ran {} more time(s) \
             without jitter before anything was reported: runs 1-{} with jitter, {}-{} without",
            cfg.runs,
            cfg.runs,
            cfg.runs + 1,
            2 * cfg.runs
        ));
    }
    let Runs {
        outputs,
        failures,
        seconds,
        slowest,
        mut hung,
        ..
    } = runs;
    // Whether the injection really jittered the runs (it writes its report when it loads).
    // What the injection's report says of the runs (read once, its notes said here).
    let jittered_really = jitter
        .as_ref()
        .is_some_and(|(dir, _)| jitter_report(subject, dir.path(), run));
    let mut dets = vec!["exit", "watchdog", "output"];
    if cfg.oracles.decides_exits() {
        dets.push("regex");
    }
    for det in dets {
        run.mark_checked(subject, det, seconds);
    }
    for (kind, (det, failed, stderr)) in failures {
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
        let (with, without): (Vec<u32>, Vec<u32>) = failed.iter().partition(|r| **r <= cfg.runs);
        let when = if !rerun {
            format!(
                "in {} of {} runs ({})",
                failed.len(),
                cfg.runs,
                runs_shown(&failed)
            )
        } else {
            let part = |n: &[u32]| {
                if n.is_empty() {
                    "none".to_string()
                } else {
                    format!("{} ({})", n.len(), runs_shown(n))
                }
            };
            let only = if without.is_empty() {
                "; only under jitter: a race the jitter exposes, or a launch racegate's \
                 injection should have stepped aside from"
            } else {
                ""
            };
            format!(
                "in {} of {} runs with schedule jitter and {} of {} without{only}",
                part(&with),
                cfg.runs,
                part(&without),
                cfg.runs
            )
        };
        // Every jittered run missed the deadline and every run without jitter finished, slowly
        // enough that the jitter's slowdown (at most 8.15x a bare launch on the H200, run 22's
        // bench; 10x allowed) can explain it: the deadline measured the slowdown of a program of
        // many launches, not a hang. A hang in some jittered runs only, or one a fast program
        // cannot owe to slowdown, or runs the injection never jittered, stay the finding: a
        // schedule-dependent deadlock is what jitter is there to expose.
        let slowdown = det == "watchdog"
            && rerun
            && jittered_really
            && without.is_empty()
            && with.len() == cfg.runs as usize
            && slowest[0] * JITTER_WORST >= timeout.as_secs_f64();
        if slowdown {
            // Nor does the program hang for the sanitizers' verdicts.
            hung = false;
            run.mark_inconclusive(
                subject,
                "watchdog",
                format!(
                    "{kind} in {} of {} runs with schedule jitter ({}) and none of {} without: \
                     every run without jitter finished in time, so this is the jitter's \
                     slowdown, not a hang; raise --timeout to judge the jittered runs",
                    with.len(),
                    cfg.runs,
                    runs_shown(&with),
                    cfg.runs
                ),
            );
            continue;
        }
        // The kind may already name its oracle (`hang: no exit within 10 s`): said once.
        let head = match kind.starts_with(&format!("{oracle}:")) {
            true => kind.clone(),
            false => format!("{oracle}: {kind}"),
        };
        let message = format!("{head} {when}; last stderr line: {stderr}");
        run.findings.push(GateFinding::new(id, file, None, message));
    }
    if let Some(note) = masked_note(subject, &outputs, cfg) {
        run.notes.push(note);
    }
    if cfg.oracles.vary_ok {
        run.notes.push(format!(
            "{subject}: output may vary (vary = \"ok\"): not compared between runs"
        ));
    } else {
        // Without re-runs every run is one "without jitter" (jitter off, or nothing differed).
        let jittered = if rerun { cfg.runs } else { 0 };
        match super::variance::judge(&outputs, jittered) {
            super::variance::Variance::Same => {}
            super::variance::Variance::Differs {
                first,
                other,
                distinct,
                lines,
                stable,
            } => run.findings.push(super::variance::finding(
                &outputs,
                subject,
                file,
                &cfg.masks,
                (first, other, distinct),
                (&lines, stable),
            )),
            super::variance::Variance::Noise { lines, example } => run.mark_inconclusive(
                subject,
                "output",
                super::variance::noise_reason(&lines, &example),
            ),
        }
    }
    judge::golden(&outputs, subject, file, cfg, run)?;
    judge::checker(&outputs, subject, file, t.cwd.as_deref(), cfg, run);
    Ok(hung)
}

/// How much slower than without it a program may run under the gate's jitter before a missed
/// deadline cannot be the jitter's slowdown (H200 run 22: worst 8.15x a bare launch).
const JITTER_WORST: f64 = 10.0;

/// kind -> (detector, runs it happened in, last stderr line)
type Failures = BTreeMap<String, (&'static str, Vec<u32>, String)>;

/// The plain runs of one program so far.
struct Runs<'a> {
    exe: &'a Path,
    t: &'a Target,
    cfg: &'a GateConfig,
    timeout: std::time::Duration,
    outputs: Vec<RunOutput>,
    failures: Failures,
    seconds: f64,
    /// The slowest run that finished, in seconds, by whether it ran under jitter.
    slowest: [f64; 2],
    hung: bool,
}

impl Runs<'_> {
    /// Run `i` (from 1), under `jitter` when given.
    fn one(&mut self, i: u32, jitter: Option<&JitterEnv>, run: &mut GateRun) -> Result<()> {
        let (t, cfg, subject) = (self.t, self.cfg, self.t.subject.as_str());
        let mut spawn = watchdog::Spawn {
            env: t.env.clone(),
            cwd: t.cwd.clone(),
            ..Default::default()
        };
        if let Some((dir, env)) = jitter {
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
        // The whole of a long output stays (on disk) past its run only for the oracles that
        // need it.
        let whole = cfg.oracles.expect.is_some() || cfg.oracles.check.is_some();
        // Bounded memory whatever the program prints: its head and tail, and past them the
        // whole on disk, read back after the run (masks and regexes cost racegate's time, not
        // the program's deadline).
        let mut stdout = watchdog::Output::spilling();
        let f = watchdog::run_spawn_bytes(
            self.exe,
            &t.argv[1..],
            &spawn,
            Deadline {
                idle: self.timeout,
                total: Some(self.timeout),
            },
            |l| stdout.push_line(l),
        )?;
        stdout.finish();
        let mut scan = cfg.oracles.scan();
        let masked = judge::read_back(&stdout, &cfg.masks, &mut scan);
        if !whole {
            stdout.discard_spill();
        }
        self.seconds += f.elapsed.as_secs_f64();
        if f.exit != Exit::TimedOut {
            let k = usize::from(jitter.is_some());
            self.slowest[k] = self.slowest[k].max(f.elapsed.as_secs_f64());
        }
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
                        self.outputs
                            .push(RunOutput::new(i, stdout, masked, &cfg.masks));
                        return Ok(());
                    }
                    Some(RegexVerdict::Fail(kind)) => ("regex", kind),
                    None if c == 0 => {
                        self.outputs
                            .push(RunOutput::new(i, stdout, masked, &cfg.masks));
                        return Ok(());
                    }
                    None => ("exit", format!("exits with code {c}")),
                }
            }
            Exit::Signal(s) => ("exit", format!("killed by signal {s}")),
            Exit::TimedOut => {
                self.hung = true;
                (
                    "watchdog",
                    format!("hang: no exit within {:.0} s", self.timeout.as_secs_f64()),
                )
            }
        };
        let e = self
            .failures
            .entry(kind)
            .or_insert((det, Vec::new(), String::new()));
        e.1.push(i);
        e.2 = f.stderr.lines().last().unwrap_or("").to_string();
        Ok(())
    }
}

/// At most this many masked lines are named in a report; the rest are counted.
const MASKED_SHOWN: usize = 6;

/// Which lines of the first passing run's output the masks changed before the runs were
/// compared, and by which rule: `None` when none was.
fn masked_note(subject: &str, outputs: &[RunOutput], cfg: &GateConfig) -> Option<String> {
    let first = outputs.first()?;
    let lines = cfg.masks.masked_lines(&first.out.bytes());
    if lines.is_empty() {
        return None;
    }
    let shown: Vec<String> = lines
        .iter()
        .take(MASKED_SHOWN)
        .map(|l| {
            let text: String = l.text.trim().chars().take(80).collect();
            format!("line {} `{text}` ({})", l.line, l.rules.join(", "))
        })
        .collect();
    let more = match lines.len().saturating_sub(MASKED_SHOWN) {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    Some(format!(
        "{subject}: masked before the runs were compared (run {}): {}{more}",
        first.run,
        shown.join("; ")
    ))
}
