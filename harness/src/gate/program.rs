//! Program mode (`gate -- PROGRAM ARGS`): the program, found through `PATH` like a shell would,
//! under the chosen sanitizers and run several times plainly. Plain runs are judged on their
//! exit, their deadline and their standard output as bytes after masking ([`super::masks`]);
//! differing outputs come with a unified diff of the first two that differ.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::deadlines::Deadlines;
use super::finding::{GateConfig, GateEvent, GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use super::jitter::{jitter_env, jitter_report};
use super::judge::{self, runs_shown, RunOutput};
use super::measure::{measure, Lease};
use super::plain_run::Runs;
use super::sampled_runs::{Sampled, ToolTarget};
use super::sampling::LaunchCounts;
use super::sanitizers::{self, PendingHang};
use super::target::Target;
use crate::errors::{Error, Result};
use crate::proc::watchdog::{self};
use std::time::Duration;

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
    // The program measured first, with the GPU held alone when it is free: every later deadline
    // follows from what it took ([`super::deadlines`]).
    let lease = Lease::new(crate::run::device::probe().is_ok());
    let user_plain = t.timeout.or(cfg.program_timeout);
    let cap = Deadlines::cap(user_plain);
    let spawn = watchdog::Spawn {
        env: t.env.clone(),
        cwd: t.cwd.clone(),
        ..Default::default()
    };
    let measured = measure(&exe, &t.argv[1..], &spawn, cap, &lease)?;
    let deadlines = Deadlines::derive(
        measured.seconds,
        cap,
        user_plain,
        cfg.program_sanitize_timeout,
        &cfg.tools,
    );
    run.notes.push(deadlines.describe(&subject));
    if measured.beside {
        run.notes.push(format!(
            "{subject}: measured beside other racegate processes' GPU work (the GPU was not free \
             to hold alone): its deadlines may be longer than the program needs alone"
        ));
    }
    if measured.waited > Duration::from_secs(10) {
        run.notes.push(format!(
            "{subject}: the measuring run waited {:.0} s for the GPU (a free slot beside other \
             racegate processes' runs, or the GPU alone)",
            measured.waited.as_secs_f64()
        ));
    }
    // The plain runs first: their runs under jitter count the program's launches, from which
    // the tools' runs are sampled.
    let mut plain_part = GateRun::default();
    let (plain, counts) = match measured.seconds {
        Some(_) => plain_runs(
            &exe,
            t,
            &file,
            root,
            cfg,
            (&deadlines, lease),
            &mut plain_part,
        )?,
        // The measuring run reached its cap, alone on the GPU where there is one: the hang is
        // confirmed, and the plain runs would each wait as long again.
        None => {
            first_run_hung(t, &file, &deadlines, measured.alone, &mut plain_part);
            (true, None)
        }
    };
    plain_part.events().iter().for_each(&on_done);
    run.absorb(plain_part);
    // racegate's own tools that patch kernels share one injected run, streamcheck has its own,
    // each compute-sanitizer tool runs alone (`run_groups`), in sampled passes. Each holds the
    // GPU lease shared.
    let sampled = Sampled::new(cfg, counts.as_ref());
    if let Some(note) = sampled.note(&subject) {
        run.notes.push(note);
    }
    let sanitizer_runs = crate::proc::pool::run_all(
        sanitizers::run_groups(&cfg.tools),
        cfg.battery.jobs,
        |group| -> Result<(GateRun, Vec<PendingHang>)> {
            let mut sc = cfg.battery.sanitize(group[0]);
            sc.timeout = deadlines.for_group(&group);
            sc.extra_args = cfg.sanitizer_args.clone();
            sc.sample_first = sampled.own_first();
            // sharedcheck's confirm runs compare the program's output as the plain runs do.
            let masks = cfg.masks.clone();
            sc.output_view = Some(crate::judge::sanitize::tool::OutputView(
                std::sync::Arc::new(move |out: &[u8]| masks.apply(out)),
            ));
            let mut part = GateRun::default();
            let program = ToolTarget {
                subject: &subject,
                command: &target,
                root,
            };
            let runs = sampled.run_group(&program, &sc, &group, lease, &mut part)?;
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
    for h in pending {
        h.resolve(Some(plain), &mut run);
    }
    run.tidy();
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

/// The identity's kind of every hang of a program's runs, whatever its deadline was.
const HANG_KIND: &str = "hang: no exit within its deadline";

/// The measuring run reached its cap: a hang, confirmed with the GPU held alone where there is
/// one (`alone`); the plain runs are not made (each would wait as long again).
fn first_run_hung(t: &Target, file: &str, deadlines: &Deadlines, alone: bool, run: &mut GateRun) {
    let subject = t.subject.as_str();
    let id = Identity {
        subject: subject.into(),
        detector: "watchdog".into(),
        kind: HANG_KIND.into(),
        ..Default::default()
    };
    let held = match alone {
        true => " with the GPU held alone",
        false => "",
    };
    let message = format!(
        "hang: the first plain run did not exit within {:.0} s{held}; the plain runs were not \
         made (each would wait as long again)",
        deadlines.cap.as_secs_f64()
    );
    run.findings.push(GateFinding::new(id, file, None, message));
    for det in ["exit", "watchdog", "output"] {
        run.mark_checked(subject, det, deadlines.cap.as_secs_f64());
    }
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
    (deadlines, lease): (&Deadlines, Lease),
    run: &mut GateRun,
) -> Result<(bool, Option<LaunchCounts>)> {
    let subject = t.subject.as_str();
    let jitter = jitter_env(root, cfg, run, subject)?;
    // The deadline the runs that set the verdict below had: with jitter when there is jitter.
    let timeout = match jitter {
        Some(_) => deadlines.jittered.0,
        None => deadlines.plain.0,
    };
    let mut runs = Runs {
        exe,
        t,
        cfg,
        deadlines: [deadlines.plain.0, deadlines.jittered.0],
        lease,
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
    let mut made = cfg.runs;
    if rerun {
        for i in cfg.runs + 1..=2 * cfg.runs {
            runs.one(i, None, run)?;
        }
        made = 2 * cfg.runs;
        run.notes.push(format!(
            "{subject}: a run under schedule jitter failed, hung or printed another output, so \
             the program ran {} more time(s) \
             without jitter before anything was reported: runs 1-{} with jitter, {}-{} without",
            cfg.runs,
            cfg.runs,
            cfg.runs + 1,
            2 * cfg.runs
        ));
        // Confirm before accusing: while a jittered run differs where every plain run agreed,
        // more plain runs (one at a time, at most as many again) may show that place varying
        // without jitter too, and it is noise.
        if !cfg.oracles.vary_ok {
            let before = made;
            while made < 3 * cfg.runs
                && matches!(
                    super::variance::judge(&runs.outputs, cfg.runs),
                    super::variance::Variance::Differs { stable: true, .. }
                )
            {
                made += 1;
                runs.one(made, None, run)?;
            }
            if made > before {
                run.notes.push(format!(
                    "{subject}: a run under jitter printed another output where every run \
                     without it agreed, so {} more run(s) without jitter (runs {}-{made}) were \
                     made to confirm that place does not vary on its own",
                    made - before,
                    before + 1
                ));
            }
        }
    }
    // A run under jitter that still differs where every plain run agreed may print the
    // program's speed (rates, times) rather than a race's result: measured with the clock held
    // still before it is reported ([`super::frozen_clock`]).
    let timing = match (&jitter, rerun && !cfg.oracles.vary_ok) {
        (Some(j), true) => match super::variance::judge(&runs.outputs, cfg.runs) {
            super::variance::Variance::Differs {
                stable: true,
                first,
                lines,
                ..
            } => super::frozen_clock::confirm(&runs, j, first, &lines, run)?,
            _ => None,
        },
        _ => None,
    };
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
    // The launches the injection counted, for the tools' sampling.
    let counts = jitter
        .as_ref()
        .and_then(|(dir, _)| super::jitter::launch_counts(dir.path()));
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
            // A hang's identity leaves its deadline out (the message keeps it): deadlines are
            // measured, and a baseline entry must not change with them.
            kind: match det {
                "watchdog" => HANG_KIND.into(),
                _ => kind.clone(),
            },
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
                made - cfg.runs
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
            && slowest[0] * super::deadlines::JITTER_FACTOR >= timeout.as_secs_f64();
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
        let clocked = timing.unwrap_or_default();
        match super::variance::judge_with(&outputs, jittered, &clocked) {
            super::variance::Variance::Same { noise } => {
                if !noise.is_empty() {
                    let plain = outputs.iter().filter(|o| o.run > jittered).count();
                    run.notes
                        .push(super::variance::noise_note(subject, &noise, plain));
                }
            }
            super::variance::Variance::Reordered { first, other } => run.notes.push(
                super::variance::reordered_note(subject, first, other, outputs.len()),
            ),
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
            super::variance::Variance::Unjudged {
                lines,
                example,
                noise,
            } => {
                if !noise.is_empty() {
                    let plain = outputs.iter().filter(|o| o.run > jittered).count();
                    run.notes
                        .push(super::variance::noise_note(subject, &noise, plain));
                }
                run.notes.push(format!(
                    "{subject}: {}",
                    super::variance::unjudged_reason(&lines, &example)
                ))
            }
        }
    }
    judge::golden(&outputs, subject, file, cfg, run)?;
    judge::checker(&outputs, subject, file, t.cwd.as_deref(), cfg, run);
    Ok((hung, counts))
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
