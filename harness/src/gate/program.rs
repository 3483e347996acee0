//! Program mode (`gate -- PROGRAM ARGS`): the program, found through `PATH` like a shell would,
//! under the chosen sanitizers and run several times plainly. Plain runs are judged on their
//! exit, their deadline and their standard output as bytes after masking ([`super::masks`]);
//! differing outputs come with a unified diff of the first two that differ.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::finding::{GateConfig, GateEvent, GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use super::masks;
use super::sanitizers::{self, PendingHang};
use crate::errors::{Error, Result};
use crate::sanitize;
use crate::watchdog::{self, Deadline, Exit};

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
    crate::toolchain::relative_to(root, &abs).unwrap_or_else(|| abs.display().to_string())
}

/// Runs an existing program under each chosen sanitizer and `cfg.runs` times plainly;
/// `on_done` sees each detector's run as it finishes.
pub fn run_program(
    program: &[OsString],
    root: &Path,
    cfg: &GateConfig,
    on_done: impl Fn(&GateEvent) + Sync,
) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let exe = resolve(&program[0])?;
    let subject = Path::new(&program[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let file = shown(root, &exe);
    let mut target: Vec<OsString> = vec![exe.clone().into()];
    target.extend(program[1..].iter().cloned());
    let mut run = GateRun {
        subjects: vec![subject.clone()],
        ..Default::default()
    };
    let sanitizer_runs = crate::pool::run_all(
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
    let plain = plain_runs(&exe, &program[1..], &subject, &file, cfg, &mut plain_part)?;
    plain_part.events().iter().for_each(&on_done);
    run.absorb(plain_part);
    for h in pending {
        h.resolve(Some(plain), &mut run);
    }
    run.tidy();
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

/// The plain runs: exit codes, deadlines, leftovers and outputs. Says whether any run hung.
fn plain_runs(
    exe: &Path,
    args: &[OsString],
    subject: &str,
    file: &str,
    cfg: &GateConfig,
    run: &mut GateRun,
) -> Result<bool> {
    let timeout = cfg.battery.stress_timeout;
    let mut outputs: Vec<(u32, Vec<u8>)> = Vec::new();
    // kind -> (detector, runs it happened in, last stderr line)
    let mut failures: BTreeMap<String, (&str, Vec<u32>, String)> = BTreeMap::new();
    let (mut seconds, mut hung) = (0.0, false);
    for i in 1..=cfg.runs {
        let mut stdout = Vec::new();
        let f = watchdog::run_bytes(
            exe,
            args,
            &[],
            Deadline {
                idle: timeout,
                total: Some(timeout),
            },
            |l| {
                stdout.extend_from_slice(l);
                stdout.push(b'\n');
            },
        )?;
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
            Exit::Code(0) => {
                outputs.push((i, stdout));
                continue;
            }
            Exit::Code(c) => ("exit", format!("exits with code {c}")),
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
    for det in ["exit", "watchdog", "output"] {
        run.mark_checked(subject, det, seconds);
    }
    for (kind, (det, runs, stderr)) in failures {
        let id = Identity {
            subject: subject.into(),
            detector: det.into(),
            kind: kind.clone(),
            ..Default::default()
        };
        let message = format!(
            "{kind} in {} of {} runs (run {}); last stderr line: {stderr}",
            runs.len(),
            cfg.runs,
            runs.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        run.findings.push(GateFinding::new(id, file, None, message));
    }
    if let Some(f) = output_finding(&outputs, subject, file, cfg) {
        run.findings.push(f);
    }
    Ok(hung)
}

/// A finding when the successful runs' outputs differ after masking, with the diff of the first
/// output and the first one that differs from it.
fn output_finding(
    outputs: &[(u32, Vec<u8>)],
    subject: &str,
    file: &str,
    cfg: &GateConfig,
) -> Option<GateFinding> {
    let masked: Vec<(u32, Vec<u8>)> = outputs
        .iter()
        .map(|(i, o)| (*i, cfg.masks.apply(o)))
        .collect();
    let (first_run, first) = masked.first()?;
    let (other_run, other) = masked.iter().find(|(_, o)| o != first)?;
    let distinct = {
        let mut v: Vec<&Vec<u8>> = masked.iter().map(|(_, o)| o).collect();
        v.sort();
        v.dedup();
        v.len()
    };
    let id = Identity {
        subject: subject.into(),
        detector: "output".into(),
        kind: "output differs between identical runs".into(),
        ..Default::default()
    };
    let message = format!(
        "{distinct} different outputs in {} successful runs (after masking); runs {first_run} and {other_run} differ",
        masked.len()
    );
    let mut f = GateFinding::new(id, file, None, message);
    f.detail = Some(masks::unified_diff(
        first,
        other,
        &format!("run {first_run}"),
        &format!("run {other_run}"),
        60,
    ));
    Some(f)
}
