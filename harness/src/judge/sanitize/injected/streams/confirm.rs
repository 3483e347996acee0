//! streamcheck's confirm run: a race that rests on what a kernel *may* touch (an allocation one
//! of its pointer arguments points into) is measured before it is reported. The target runs once
//! more with the tool's footprint mode beside the recorder (`RACEGATE_GC_MODE=streams,footprint`,
//! every launch, no sampling): each launch's global accesses are patched, and at its end the
//! bounds of the bytes it read and wrote in each allocation are written into the trace after
//! the launch's line ([`super::model`] gives them to the launch). That run's trace is the
//! verdict: a measured launch races where the bytes it touched overlap another operation's,
//! and an allocation its arguments name but it never touched is no access at all (a kernel given
//! a base pointer and an offset, `kernel(d_a, offset)`, is no longer accused of the whole
//! buffer; run 35: `blog-async-overlap`).
//!
//! The footprint is the hull of what a launch touched in an allocation, from its lowest to its
//! highest byte: a launch touching every other element and a copy of the elements between them
//! still overlap. A confirm run that cannot measure (it hangs, dies, the tool refuses a launch,
//! or no launch was measured) leaves the first run's outcome, said in the log.

use std::ffi::OsString;
use std::path::Path;

use super::model;
use super::verdict;
use crate::errors::{Error, Result};
use crate::judge::sanitize::injected::report;
use crate::judge::sanitize::injected::target::run_once;
use crate::judge::sanitize::tool::{Capture, Outcome, SanitizeConfig};
use crate::proc::watchdog::Exit;

/// Whether the first run's `outcome` rests, in part, on a kernel's "may touch": a finding or an
/// inconclusive outcome from a trace with at least one race one side of which is a kernel's
/// conservative access.
pub fn wanted(outcome: &Outcome, trace: Option<&str>) -> bool {
    matches!(outcome, Outcome::Findings(_) | Outcome::Inconclusive(_))
        && trace.is_some_and(|t| {
            model::judge(t)
                .races
                .iter()
                .any(|r| r.earlier.may || r.later.may)
        })
}

/// The first run as it ran: the target and the environment that injected the tool.
pub struct Target<'a> {
    pub program: &'a OsString,
    pub args: &'a [OsString],
    pub env: &'a [(String, String)],
    pub cfg: &'a SanitizeConfig,
}

/// The outcome after a run that measured every launch's footprint: that run's, when it measured;
/// else `first`, with the log saying why the measurement did not settle it.
pub fn measured(target: &Target<'_>, root: &Path, first: Outcome, log: &mut String) -> Outcome {
    match measure(target, root) {
        Ok(Settled::Decided {
            outcome,
            measured,
            said,
        }) => {
            log.push_str(&format!(
                "streamcheck: a race rested on what a kernel may touch; a run measuring what each \
                 launch touched ({measured} launch(es) measured) decides:\n{said}"
            ));
            outcome
        }
        Ok(Settled::Not(why)) => {
            log.push_str(&format!(
                "streamcheck: a race rested on what a kernel may touch; the run measuring what \
                 each launch touched did not settle it ({why}): the first run's outcome stands\n"
            ));
            first
        }
        Err(e) => {
            log.push_str(&format!(
                "streamcheck: the run measuring what each launch touched could not be made \
                 ({e}): the first run's outcome stands\n"
            ));
            first
        }
    }
}

enum Settled {
    Decided {
        outcome: Outcome,
        measured: usize,
        said: String,
    },
    Not(String),
}

fn measure(target: &Target<'_>, root: &Path) -> Result<Settled> {
    let dir = tempfile::tempdir_in(crate::build::compile::cache_dir()?)
        .map_err(|e| Error::io("creating", "a streamcheck confirm folder", e))?;
    let env = confirm_env(target.env, dir.path());
    let cfg = target.cfg;
    let (done, _, rep) = run_once(target.program, target.args, &env, dir.path(), cfg.timeout)?;
    if done.exit == Exit::TimedOut {
        return Ok(Settled::Not(format!(
            "it did not end within {} s",
            cfg.timeout.as_secs()
        )));
    }
    if let Exit::Signal(s) = done.exit {
        return Ok(Settled::Not(format!("the target died of signal {s}")));
    }
    let rep = match rep {
        Capture::Text(t) => report::parse(&t),
        _ => return Ok(Settled::Not("the tool wrote no report".into())),
    };
    if let Some(e) = rep.errors.first() {
        return Ok(Settled::Not(format!("the tool: {e}")));
    }
    let Some(trace) = verdict::read_trace(dir.path()) else {
        return Ok(Settled::Not("the recorder wrote no trace".into()));
    };
    let measured = model::judge(&trace).measured;
    if measured == 0 {
        return Ok(Settled::Not("no launch was measured".into()));
    }
    let mut said = String::new();
    let outcome = verdict::decide(&done.exit, done.left_behind, Some(&trace), root, &mut said);
    Ok(Settled::Decided {
        outcome,
        measured,
        said,
    })
}

/// The first run's environment for the confirm run: its own folder, the recorder with the
/// footprint mode, and every launch (no sampling).
fn confirm_env(env: &[(String, String)], dir: &Path) -> Vec<(String, String)> {
    env.iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "RACEGATE_GC_DIR" | "RACEGATE_GC_MODE" | "RACEGATE_GC_SAMPLE"
            )
        })
        .cloned()
        .chain([
            ("RACEGATE_GC_DIR".into(), dir.display().to_string()),
            ("RACEGATE_GC_MODE".into(), "streams,footprint".into()),
        ])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_confirm_run_measures_every_launch_in_a_folder_of_its_own() {
        let first = [
            ("CUDA_INJECTION64_PATH".to_string(), "/t/lib.so".to_string()),
            ("RACEGATE_GC_DIR".into(), "/first".into()),
            ("RACEGATE_GC_MODE".into(), "streams".into()),
            ("RACEGATE_GC_SAMPLE".into(), "4".into()),
        ];
        let env = confirm_env(&first, Path::new("/second"));
        let get = |k: &str| {
            env.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("CUDA_INJECTION64_PATH"), ["/t/lib.so"]);
        assert_eq!(get("RACEGATE_GC_DIR"), ["/second"]);
        assert_eq!(get("RACEGATE_GC_MODE"), ["streams,footprint"]);
        assert!(get("RACEGATE_GC_SAMPLE").is_empty());
    }
}
