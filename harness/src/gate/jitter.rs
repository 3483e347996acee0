//! The schedule jitter of `gate -- PROGRAM`'s plain runs: the variables that inject racegate's
//! tool in its jitter mode, and what its report says of the runs afterwards (a failure of the
//! injection, runs it never jittered, launches it stepped aside from).

use std::collections::BTreeMap;
use std::path::Path;

use super::finding::{GateConfig, GateRun};
use crate::errors::Result;
use crate::judge::sanitize::tool::{read_capture, Capture};

/// The folder a jittered run's report goes to, and the variables that inject the tool.
pub(super) type JitterEnv = (tempfile::TempDir, Vec<(String, String)>);

/// The variables that put a program's runs under globalcheck's jitter, and the folder its
/// report goes to; `None` (with a note) when jitter is off or the tool cannot be built.
pub(super) fn jitter_env(
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

/// What the jitter injection's report says of the runs: a failure of the injection itself
/// must not pass for the program's (the runs' verdicts then cannot be trusted), a report that
/// is not there means the runs were not jittered, and launches it stepped aside from (CUDA
/// graphs) ran without jitter.
/// Says whether the runs were really jittered (the injection loaded and reported no failure).
pub(super) fn jitter_report(subject: &str, dir: &Path, run: &mut GateRun) -> bool {
    // The program can write into the tool's folder: read as a capture (regular, bounded).
    let text = match read_capture(&dir.join("report.jsonl"), 64 << 20) {
        Capture::Text(t) => t,
        Capture::Missing => String::new(),
        Capture::TooLarge(limit) => {
            let why = format!("the jitter injection's report is over {limit} bytes: not read");
            run.mark_inconclusive(subject, "jitter", why);
            return false;
        }
        Capture::NotAFile => {
            let why = "the jitter injection's report is not a regular file: not read".into();
            run.mark_inconclusive(subject, "jitter", why);
            return false;
        }
    };
    let report = crate::judge::sanitize::injected::report::parse(&text);
    if let Some(e) = report.errors.first() {
        let why = format!("the jitter injection failed: {e}");
        run.mark_inconclusive(subject, "jitter", why);
        return false;
    }
    if !report.started {
        // Nothing was jittered: said, never counted as a jittered pass.
        run.notes.push(format!(
            "{subject}: the runs were not jittered: the injection wrote no report (the program \
             never initialized CUDA, or the driver did not load the tool)"
        ));
        return false;
    }
    let mut aside: BTreeMap<&str, u64> = BTreeMap::new();
    for n in report.notes.iter().filter(|n| n.note == "stepped-aside") {
        *aside.entry(n.reason.as_str()).or_default() += n.launches;
    }
    for (reason, launches) in aside {
        let what = match reason {
            "cuda-graph" => "CUDA-graph launches".to_string(),
            "" => "launches".to_string(),
            r => format!("launches ({r})"),
        };
        run.notes.push(format!(
            "{subject}: jitter stepped aside for {launches} {what}: they ran without jitter"
        ));
    }
    true
}

/// How often the program launched each kernel in its runs under jitter, as the injection counted
/// them ([`super::sampling::LaunchCounts::from_report`]); `None` when it wrote no counts.
pub(super) fn launch_counts(dir: &Path) -> Option<super::sampling::LaunchCounts> {
    match read_capture(&dir.join("report.jsonl"), 64 << 20) {
        Capture::Text(t) => super::sampling::LaunchCounts::from_report(&t),
        _ => None,
    }
}
