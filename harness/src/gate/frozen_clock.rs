//! Output lines that follow the program's speed, told from a race's result by measuring them
//! with the clock held still. A benchmark prints rates and times; jitter slows its kernels, so
//! a rate can be the same in every plain run (timed over many repetitions, printed with two
//! decimals) and another under jitter: on an H100 (run 35) NVIDIA's transpose sample printed
//! `shared memory copy 2374.49` in six plain runs and `336.63` under jitter, a false finding.
//!
//! Before such a line is reported, the program runs twice more with racegate's tool injected
//! and every CUDA event time it reads fixed at 1 ms (`RACEGATE_GC_FREEZE_TIME`): once without
//! jitter, once with the jitter of the run that differed (its seed). The lines are timing when
//! the still clock changed each of them (they read the clock) and, with it still, the jitter no
//! longer does (given the time, they do not depend on the schedule). Anything else (a run that
//! fails or misses its deadline, a line the clock does not reach, a line the jitter still
//! changes) leaves the finding as it was. Clocks read on the host (`std::chrono`,
//! `clock_gettime`) are not held still: such lines stay findings.

use std::collections::BTreeMap;

use super::finding::{GateConfig, GateRun};
use super::jitter::JitterEnv;
use super::judge::RunOutput;
use super::plain_run::Runs;
use super::variance::{differing_lines, lines_shown};
use crate::errors::Result;

/// The variable that holds CUDA event times still in the injected tool.
pub const FREEZE_TIME: &str = "RACEGATE_GC_FREEZE_TIME";

/// The variables of a run with the clock still: the jitter's, with its mode kept (`jittered`)
/// or emptied, and `held`, the folder its report goes to.
fn frozen_env(jitter: &JitterEnv, held: tempfile::TempDir, jittered: bool) -> JitterEnv {
    let mut env: Vec<(String, String)> = jitter
        .1
        .iter()
        .map(|(k, v)| match k.as_str() {
            "RACEGATE_GC_MODE" if !jittered => (k.clone(), String::new()),
            _ => (k.clone(), v.clone()),
        })
        .collect();
    env.push((FREEZE_TIME.into(), "1".into()));
    (held, env)
}

/// Confirms whether `lines` (from 1), where the run under jitter `jittered_run` differed from
/// every plain run, follow the program's speed; `base` holds the runs so far (its outputs are
/// not changed). The lines that are timing, `None` when the runs do not show it.
pub(super) fn confirm(
    base: &Runs,
    jitter: &JitterEnv,
    jittered_run: u32,
    lines: &[usize],
    run: &mut GateRun,
) -> Result<Option<Vec<usize>>> {
    let cfg: &GateConfig = base.cfg;
    let subject = base.t.subject.as_str();
    let Some(plain) = base.outputs.iter().find(|o| o.run > cfg.runs) else {
        return Ok(None);
    };
    if lines.is_empty() {
        return Ok(None);
    }
    let cache = crate::build::compile::cache_dir()?;
    let folder = || {
        tempfile::tempdir_in(&cache).map_err(|e| {
            crate::Error::io("creating", "a folder for the runs with a still clock", e)
        })
    };
    let mut still = Runs {
        exe: base.exe,
        t: base.t,
        cfg,
        deadlines: base.deadlines,
        lease: base.lease,
        outputs: Vec::new(),
        failures: BTreeMap::new(),
        seconds: 0.0,
        slowest: [0.0; 2],
        hung: false,
    };
    // The run without jitter takes a number past every run made; the run with jitter takes the
    // differing run's number, so its seed (and schedule) are that run's.
    let calm = base.outputs.iter().map(|o| o.run).max().unwrap_or(cfg.runs) + 1;
    still.one(calm, Some(&frozen_env(jitter, folder()?, false)), run)?;
    still.one(
        jittered_run,
        Some(&frozen_env(jitter, folder()?, true)),
        run,
    )?;
    let find = |n: u32| still.outputs.iter().find(|o| o.run == n);
    let verdict = judge(plain, find(calm), find(jittered_run), lines);
    run.notes.push(match &verdict {
        Some(_) => format!(
            "{subject}: line(s) {} differed only under jitter, and follow the program's speed: \
             with every CUDA event time held at 1 ms, they changed from the plain runs' (they \
             read the clock) and a run with the jitter of run {jittered_run} printed them as one \
             without it (runs {calm} and {jittered_run} again, clock held): timing, not a race",
            lines_shown(lines)
        ),
        None => format!(
            "{subject}: line(s) {} differed only under jitter; with every CUDA event time held at \
             1 ms (runs {calm} and {jittered_run} again) they did not show themselves to be \
             timing, so they are judged as printed",
            lines_shown(lines)
        ),
    });
    Ok(verdict)
}

/// The rule of [`confirm`] on the outputs: `plain` (a plain run), `calm` and `jittered` (the
/// runs with the clock still, without and with jitter).
fn judge(
    plain: &RunOutput,
    calm: Option<&RunOutput>,
    jittered: Option<&RunOutput>,
    lines: &[usize],
) -> Option<Vec<usize>> {
    let (calm, jittered) = (calm?, jittered?);
    let clocked = differing_lines(plain, calm)?;
    let moved = differing_lines(calm, jittered)?;
    let timing =
        lines.iter().all(|l| clocked.contains(l)) && !lines.iter().any(|l| moved.contains(l));
    timing.then(|| lines.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::masks::Masks;
    use crate::proc::watchdog::Output;

    fn out(run: u32, text: &str) -> RunOutput {
        let mut o = Output::default();
        for l in text.lines() {
            o.push_line(l.as_bytes());
        }
        o.finish();
        RunOutput::new(run, o, None, &Masks::default())
    }

    #[test]
    fn a_line_the_clock_moves_and_the_jitter_no_longer_does_is_timing() {
        let plain = out(4, "n 1024\nrate 2374.49\n");
        let calm = out(7, "n 1024\nrate 4.00\n");
        let jittered = out(1, "n 1024\nrate 4.00\n");
        assert_eq!(
            judge(&plain, Some(&calm), Some(&jittered), &[2]),
            Some(vec![2])
        );
    }

    #[test]
    fn a_line_the_clock_does_not_reach_or_the_jitter_still_moves_stays_a_finding() {
        let plain = out(4, "sum 10\nrate 2374.49\n");
        // The clock held still changes the rate but not the sum: the sum is not timing.
        let calm = out(7, "sum 10\nrate 4.00\n");
        let jittered = out(1, "sum 9\nrate 4.00\n");
        assert_eq!(judge(&plain, Some(&calm), Some(&jittered), &[1]), None);
        // With the clock still the jitter still changes the rate: a schedule, not the clock.
        let jittered = out(1, "sum 10\nrate 3.00\n");
        assert_eq!(judge(&plain, Some(&calm), Some(&jittered), &[2]), None);
        // A run that did not finish says nothing.
        assert_eq!(judge(&plain, None, Some(&jittered), &[2]), None);
        assert_eq!(judge(&plain, Some(&calm), None, &[2]), None);
        // Another number of lines cannot be compared line by line.
        let short = out(1, "rate 4.00\n");
        assert_eq!(judge(&plain, Some(&calm), Some(&short), &[2]), None);
    }
}
