//! Output lines that follow the program's speed, told from a race's result by measuring them
//! with the clock held still. A benchmark prints rates and times; jitter slows its kernels, so
//! a rate can be the same in every plain run (timed over many repetitions, printed with two
//! decimals) and another under jitter: on an H100 (run 35) NVIDIA's transpose sample printed
//! `shared memory copy 2374.49` in six plain runs and `336.63` under jitter, a false finding.
//!
//! Before such a line is reported, the program runs twice more with racegate's tool injected
//! and every CUDA event time it reads fixed at 1 ms (`RACEGATE_GC_FREEZE_TIME`): once without
//! jitter, once with the jitter of the run that differed (its seed). A line is timing when the
//! still clock changed only numbers on it (the same words and shape; those numbers read the
//! clock) and, with the clock still, the jitter no longer changes it at all. Only those numbers
//! are then set aside in every run's comparison; the rest of the line (a `PASSED` beside a
//! rate) is still compared. Each run is trusted only if its tool report says the tool loaded,
//! held some event times still, and failed nowhere. Anything else (a run that fails or misses
//! its deadline, a line the clock does not reach, a line the jitter still changes) leaves the
//! finding as it was. Clocks read on the host (`std::chrono`, `clock_gettime`) are not held
//! still: such lines stay findings.

use std::collections::{BTreeMap, BTreeSet};

use super::finding::{GateConfig, GateRun};
use super::jitter::JitterEnv;
use super::judge::RunOutput;
use super::noise::differing_numbers;
use super::plain_run::Runs;
use super::variance::lines_shown;
use crate::errors::Result;

/// The variable that holds CUDA event times still in the injected tool.
pub const FREEZE_TIME: &str = "RACEGATE_GC_FREEZE_TIME";

/// The numbers that read the clock: by line (from 0), their token positions
/// ([`super::noise::tokens`]).
pub type Clocked = BTreeMap<usize, BTreeSet<usize>>;

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
/// not changed). The numbers that read the clock, `None` when the runs do not show it. The runs
/// made here say nothing else of the program: their own failures and notes go into the one note
/// this adds.
pub(super) fn confirm(
    base: &Runs,
    jitter: &JitterEnv,
    jittered_run: u32,
    lines: &[usize],
    run: &mut GateRun,
) -> Result<Option<Clocked>> {
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
    // Their verdicts stay here: a run that only measures a line judges nothing of the program.
    let mut aside = GateRun::default();
    // The run without jitter takes a number past every run made; the run with jitter takes the
    // differing run's number, so its jitter seed is that run's.
    let calm = base.outputs.iter().map(|o| o.run).max().unwrap_or(cfg.runs) + 1;
    let (calm_env, jittered_env) = (
        frozen_env(jitter, folder()?, false),
        frozen_env(jitter, folder()?, true),
    );
    still.one(calm, Some(&calm_env), &mut aside)?;
    still.one(jittered_run, Some(&jittered_env), &mut aside)?;
    let mut why: Vec<String> = Vec::new();
    for (name, env) in [
        ("without jitter", &calm_env),
        ("with jitter", &jittered_env),
    ] {
        if let Err(e) = trusted(env.0.path()) {
            why.push(format!("the run {name}: {e}"));
        }
    }
    for (kind, (_, runs, _)) in &still.failures {
        why.push(format!(
            "{kind} (run {})",
            runs.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let find = |n: u32| still.outputs.iter().find(|o| o.run == n);
    let verdict = match why.is_empty() {
        true => judge(plain, find(calm), find(jittered_run), lines),
        false => None,
    };
    run.notes.push(match &verdict {
        Some(_) => format!(
            "{subject}: line(s) {} differed only under jitter, in numbers that follow the \
             program's speed: with every CUDA event time held at 1 ms, those numbers changed from \
             the plain runs' (they read the clock) and a run with the jitter of run {jittered_run} \
             printed the lines as one without it (two more runs, clock held): timing, not a race; \
             the rest of each line is still compared",
            lines_shown(lines)
        ),
        None if !why.is_empty() => format!(
            "{subject}: line(s) {} differed only under jitter; the runs that would hold the clock \
             still to tell a timing from a race's result did not settle it ({}), so they are \
             judged as printed",
            lines_shown(lines),
            why.join("; ")
        ),
        None => format!(
            "{subject}: line(s) {} differed only under jitter; with every CUDA event time held at \
             1 ms (two more runs) they did not show themselves to be timing, so they are judged \
             as printed",
            lines_shown(lines)
        ),
    });
    Ok(verdict)
}

/// Whether the tool's report in `dir` shows it loaded, held event times still and failed
/// nowhere; else why not.
fn trusted(dir: &std::path::Path) -> std::result::Result<(), String> {
    let text = match crate::judge::sanitize::tool::read_capture(&dir.join("report.jsonl"), 64 << 20)
    {
        crate::judge::sanitize::tool::Capture::Text(t) => t,
        _ => return Err("the injected tool wrote no report".into()),
    };
    let rep = crate::judge::sanitize::injected::report::parse(&text);
    if !rep.started {
        return Err("the injected tool did not load".into());
    }
    if let Some(e) = rep.errors.first() {
        return Err(format!("the injected tool failed: {e}"));
    }
    match rep.frozen_event_times {
        Some(n) if n > 0 => Ok(()),
        Some(_) => Err("the program read no CUDA event time".into()),
        None => Err("the injected tool did not say which times it held".into()),
    }
}

/// The rule of [`confirm`] on the outputs: `plain` (a plain run), `calm` and `jittered` (the
/// runs with the clock still, without and with jitter). Each line of `lines` (from 1) must
/// differ between `plain` and `calm` in numbers only, and not at all between `calm` and
/// `jittered`.
fn judge(
    plain: &RunOutput,
    calm: Option<&RunOutput>,
    jittered: Option<&RunOutput>,
    lines: &[usize],
) -> Option<Clocked> {
    let (calm, jittered) = (calm?, jittered?);
    let split = |o: &RunOutput| -> Option<Vec<Vec<u8>>> {
        Some(
            o.masked_bytes()?
                .split(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect(),
        )
    };
    let (p, c, j) = (split(plain)?, split(calm)?, split(jittered)?);
    let mut clocked = Clocked::new();
    for &l in lines {
        let k = l.checked_sub(1)?;
        let (pl, cl, jl) = (p.get(k)?, c.get(k)?, j.get(k)?);
        if cl != jl {
            return None;
        }
        let numbers = differing_numbers(pl, cl)?;
        if numbers.is_empty() {
            return None;
        }
        clocked.insert(k, numbers);
    }
    Some(clocked)
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

    fn at(line: usize, positions: &[usize]) -> Clocked {
        [(line, positions.iter().copied().collect())].into()
    }

    #[test]
    fn numbers_the_clock_moves_and_the_jitter_no_longer_does_are_timing() {
        let plain = out(4, "n 1024\ncopy 2374.49\n");
        let calm = out(7, "n 1024\ncopy 4.00\n");
        let jittered = out(1, "n 1024\ncopy 4.00\n");
        // Line 2 (from 0: 1), its second token (`copy `, then the number).
        assert_eq!(
            judge(&plain, Some(&calm), Some(&jittered), &[2]),
            Some(at(1, &[1]))
        );
    }

    /// NVIDIA's transpose sample prints each rate with `%20.2f`: the still clock's `838.86` is
    /// a character narrower than the plain run's `2408.08`, so the padding moves with it (run 36
    /// call A: the still clock did not settle such lines until padding was set aside).
    #[test]
    fn a_clocked_number_in_a_field_width_is_timing_though_its_padding_moved() {
        let row = |v: f64| format!("{:>25}{v:>20.2}\n", "shared memory copy");
        let (plain, calm) = (out(4, &row(2408.08)), out(7, &row(838.86)));
        assert_eq!(
            judge(&plain, Some(&calm), Some(&calm), &[1]),
            Some(at(0, &[1]))
        );
    }

    #[test]
    fn a_line_the_clock_does_not_reach_or_the_jitter_still_moves_stays_a_finding() {
        let plain = out(4, "sum 10\ncopy 2374.49\n");
        // The clock held still changes the rate but not the sum: the sum is not timing.
        let calm = out(7, "sum 10\ncopy 4.00\n");
        let jittered = out(1, "sum 9\ncopy 4.00\n");
        assert_eq!(judge(&plain, Some(&calm), Some(&jittered), &[1]), None);
        // With the clock still the jitter still changes the rate: a schedule, not the clock.
        let jittered = out(1, "sum 10\ncopy 3.00\n");
        assert_eq!(judge(&plain, Some(&calm), Some(&jittered), &[2]), None);
        // A run that did not finish says nothing.
        assert_eq!(judge(&plain, None, Some(&jittered), &[2]), None);
        assert_eq!(judge(&plain, Some(&calm), None, &[2]), None);
        // The still clock changed a word, not only numbers: not a clock's reading.
        let worded = out(7, "sum 10\ncopy fast\n");
        assert_eq!(judge(&plain, Some(&worded), Some(&worded), &[2]), None);
    }

    #[test]
    fn only_the_clocked_numbers_of_a_line_are_set_aside_the_rest_is_still_compared() {
        // A result and a rate on one line: the rate reads the clock, the result does not.
        let plain = out(4, "result PASSED copy 2374.49\n");
        let calm = out(7, "result PASSED copy 4.00\n");
        let clocked = judge(&plain, Some(&calm), Some(&calm), &[1]).unwrap();
        // A jittered run's line beside two plain runs' (4, 5).
        let judged = |jittered: &str| {
            let runs = [
                out(1, jittered),
                out(4, "result PASSED copy 2374.49\n"),
                out(5, "result PASSED copy 2374.49\n"),
            ];
            crate::gate::variance::judge_with(&runs, 1, &clocked)
        };
        // A jittered run whose rate alone moved: alike once the clocked number is set aside.
        assert!(matches!(
            judged("result PASSED copy 336.63\n"),
            crate::gate::variance::Variance::Same { .. }
        ));
        // A jittered run whose result changed beside the rate: still the finding.
        assert!(matches!(
            judged("result FAILED copy 336.63\n"),
            crate::gate::variance::Variance::Differs { stable: true, .. }
        ));
    }
}
