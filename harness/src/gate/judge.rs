//! The outputs of a program's passing runs judged by the golden output and the checker
//! ([`super::oracles`]), as findings. One finding per oracle and kind, naming every run it held
//! for, so three runs that print the same wrong answer are one finding, not three.

use std::collections::BTreeMap;

use super::finding::{GateConfig, GateFinding, GateRun};
use super::fingerprint::Identity;
use super::masks;
use super::oracles::{self, CheckerVerdict};
use crate::errors::Result;

/// Compares each passing run's masked output with `--expect FILE`; with `--bless`, writes FILE
/// from the first passing run instead. A mismatch leaves the run's output in `FILE.new` and
/// says how to accept it.
pub fn golden(
    outputs: &[(u32, Vec<u8>)],
    subject: &str,
    file: &str,
    cfg: &GateConfig,
    run: &mut GateRun,
) -> Result<()> {
    let o = &cfg.oracles;
    let Some(expect) = &o.expect else {
        return Ok(());
    };
    let Some((first_run, first)) = outputs.first() else {
        // No run passed: the exit code, regex or hang findings already say so.
        return Ok(());
    };
    let pending = oracles::pending_path(expect);
    let shown = expect.display();
    if o.bless {
        oracles::write_atomically(expect, &cfg.masks.apply(first))?;
        let _ = std::fs::remove_file(&pending);
        run.notes.push(format!(
            "{subject}: wrote the expected output {shown} from run {first_run} (--bless)"
        ));
        return Ok(());
    }
    run.mark_checked(subject, "golden", 0.0);
    let golden = o.golden()?;
    let differ: Vec<(u32, Vec<u8>)> = outputs
        .iter()
        .map(|(i, out)| (*i, cfg.masks.apply(out)))
        .filter(|(_, m)| golden.as_deref() != Some(m.as_slice()))
        .collect();
    let Some((bad_run, bad)) = differ.first() else {
        let _ = std::fs::remove_file(&pending);
        return Ok(());
    };
    oracles::write_atomically(&pending, bad)?;
    let runs: Vec<u32> = differ.iter().map(|(i, _)| *i).collect();
    let accept = format!(
        "accept it with `mv {} {shown}`, or re-run with --bless: {}",
        pending.display(),
        o.bless_command
    );
    let (kind, message) = match &golden {
        None => (
            "no expected output yet".to_string(),
            format!(
                "golden: {shown} does not exist; {}'s output is in {}; {accept}",
                runs_shown(&[*bad_run]),
                pending.display()
            ),
        ),
        Some(_) => (
            "output differs from the expected output".to_string(),
            format!(
                "golden: {} of {} passing runs differ from {shown} after masking ({}); {}'s output is in {}; {accept}",
                runs.len(),
                outputs.len(),
                runs_shown(&runs),
                runs_shown(&[*bad_run]),
                pending.display()
            ),
        ),
    };
    let id = Identity {
        subject: subject.into(),
        detector: "golden".into(),
        kind,
        ..Default::default()
    };
    let mut f = GateFinding::new(id, file, None, message);
    f.detail = Some(masks::unified_diff(
        golden.as_deref().unwrap_or_default(),
        bad,
        &format!("expected {shown}"),
        &format!("run {bad_run}"),
        60,
    ));
    run.findings.push(f);
    Ok(())
}

/// Runs `--check CMD` on each passing run's output (as printed, before masks: the checker
/// decides what may vary). A checker that misses its deadline or cannot start is inconclusive.
pub fn checker(
    outputs: &[(u32, Vec<u8>)],
    subject: &str,
    file: &str,
    cwd: Option<&std::path::Path>,
    cfg: &GateConfig,
    run: &mut GateRun,
) {
    let o = &cfg.oracles;
    let Some(cmd) = &o.check else {
        return;
    };
    // The checker runs where the program ran, so relative paths in it mean the same.
    let cwd = cwd
        .map(|p| p.to_path_buf())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| "/".into());
    let start = std::time::Instant::now();
    // exit kind -> (runs, the first message)
    let mut rejected: BTreeMap<String, (Vec<u32>, String)> = BTreeMap::new();
    for (i, out) in outputs {
        match oracles::run_checker(cmd, out, &cwd, o.check_timeout) {
            CheckerVerdict::Accepted => {}
            CheckerVerdict::Rejected(kind, msg) => {
                let e = rejected.entry(kind).or_insert_with(|| (Vec::new(), msg));
                e.0.push(*i);
            }
            CheckerVerdict::Undecided(why) => {
                run.mark_inconclusive(subject, "checker", format!("run {i}: {why}"))
            }
        }
    }
    run.mark_checked(subject, "checker", start.elapsed().as_secs_f64());
    for (kind, (runs, msg)) in rejected {
        let id = Identity {
            subject: subject.into(),
            detector: "checker".into(),
            kind: format!("checker rejects the output: {kind}"),
            ..Default::default()
        };
        let said = if msg.is_empty() {
            "(it printed nothing)".to_string()
        } else {
            msg.lines().next().unwrap_or("").to_string()
        };
        let message = format!(
            "checker: `{cmd}` {kind} for {} of {} passing runs ({}); it says: {said}",
            runs.len(),
            outputs.len(),
            runs_shown(&runs)
        );
        let mut f = GateFinding::new(id, file, None, message);
        if msg.lines().count() > 1 {
            f.detail = Some(msg);
        }
        run.findings.push(f);
    }
}

/// `run 2` or `runs 1, 3`.
pub fn runs_shown(runs: &[u32]) -> String {
    let list = runs
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if runs.len() == 1 {
        format!("run {list}")
    } else {
        format!("runs {list}")
    }
}
