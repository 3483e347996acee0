//! A program's output that differs between runs: a race the schedule jitter exposed, or values
//! that change from run to run anyway (timings, rates, clock counts).
//!
//! When the runs under jitter disagree, racegate runs the program as many times again without
//! jitter and learns from those runs which numbers vary on their own ([`super::noise`]): such a
//! number is noise wherever it stands, in whatever notation. A run under jitter that differs
//! from the runs without it anywhere else (a number stable in every plain run, a word, another
//! number of lines) is the finding; before it is reported, more plain runs confirm that the
//! place does not vary without jitter too (the caller makes them, see [`Variance::Differs`]).
//! A line whose words or shape vary without jitter cannot be judged: the output oracle is
//! inconclusive for it, naming it.

use std::collections::{BTreeMap, BTreeSet};

use super::finding::GateFinding;
use super::fingerprint::Identity;
use super::judge::{self, RunOutput};
use super::masks::Masks;
use super::noise::{self, Model};

/// What the outputs of a program's successful runs say.
pub enum Variance {
    /// All alike once the noise learned from the plain runs is set aside; `noise` names the
    /// lines that held some (empty when the outputs were simply alike).
    Same { noise: Vec<String> },
    /// Runs under jitter differ from the runs without jitter beyond what varies without it.
    Differs {
        /// The runs whose outputs the diff shows.
        first: u32,
        other: u32,
        /// How many different outputs there were.
        distinct: usize,
        /// The lines (from 1) where they differ; empty when not known line by line.
        lines: Vec<usize>,
        /// Whether those lines are the same in every run without jitter (a jittered run
        /// differs where nothing else varies): then more plain runs can confirm it.
        stable: bool,
    },
    /// The runs printed the same lines, in another order: device `printf` from concurrent
    /// blocks, or results gathered through atomics, come out in the order the schedule ran
    /// them. No value changed, so no race shows in the output; the note says so.
    Reordered {
        /// Two runs whose lines stand in another order.
        first: u32,
        other: u32,
    },
    /// Lines where a bare integer varies without jitter (a count, free memory, a pid; a race's
    /// result would too): noise, named in a note, and those lines are not judged.
    Unjudged {
        /// The lines (from 1) that vary without jitter, empty when the whole output does.
        lines: Vec<usize>,
        /// The first such line of a run without jitter, as printed (masked).
        example: String,
        /// The other lines' noise, as [`Variance::Same`] names it.
        noise: Vec<String>,
    },
}

/// Judges `outputs`; runs numbered above `jittered` ran without jitter (`0`: none did, as with
/// `--no-jitter`, and every run counts as one without jitter).
pub fn judge(outputs: &[RunOutput], jittered: u32) -> Variance {
    judge_with(outputs, jittered, &BTreeMap::new())
}

/// [`judge`], with `clocked` (numbers shown to read the clock, by line from 0 and token
/// position: `gate::frozen_clock`) set aside as noise in every comparison.
pub fn judge_with(
    outputs: &[RunOutput],
    jittered: u32,
    clocked: &BTreeMap<usize, BTreeSet<usize>>,
) -> Variance {
    let Some(first) = outputs.first() else {
        return Variance::Same { noise: Vec::new() };
    };
    let distinct = distinct(outputs);
    if distinct == 1 {
        return Variance::Same { noise: Vec::new() };
    }
    if let Some(other) = reordered(outputs) {
        return Variance::Reordered {
            first: first.run,
            other,
        };
    }
    // Every difference counts, shown between the first output and the first that differs.
    let whole = || {
        let other = outputs.iter().find(|o| !o.same_as(first)).unwrap_or(first);
        Variance::Differs {
            first: first.run,
            other: other.run,
            distinct,
            lines: differing_lines(first, other).unwrap_or_default(),
            stable: false,
        }
    };
    let (with, without): (Vec<&RunOutput>, Vec<&RunOutput>) =
        outputs.iter().partition(|o| o.run <= jittered);
    if without.len() < 2 && !with.is_empty() {
        // No runs without jitter to learn the noise from.
        return whole();
    }
    // Outputs too long to be kept whole are compared whole.
    let (Some(plain), Some(under)) = (split(&without), split(&with)) else {
        return whole();
    };
    // The program's output varies by itself, without jitter, beyond measurements: another
    // number of lines, or words, units or shape on a line. What a race shows as much as anything.
    let plain_differ = |lines: Vec<usize>| {
        let other = without
            .iter()
            .find(|o| !o.same_as(without[0]))
            .unwrap_or(&without[0]);
        Variance::Differs {
            first: without[0].run,
            other: other.run,
            distinct,
            lines,
            stable: false,
        }
    };
    let Some(mut model) = noise::learn(&plain) else {
        return plain_differ(Vec::new());
    };
    model.add_noise(clocked);
    let varies = model.varies();
    if !varies.is_empty() {
        return plain_differ(varies.iter().map(|k| k + 1).collect());
    }
    let base = without[0];
    for (o, lines) in with.iter().zip(&under) {
        let beyond = model.beyond_noise(&plain[0], lines);
        if beyond.as_ref().is_some_and(Vec::is_empty) {
            continue;
        }
        return Variance::Differs {
            first: o.run.min(base.run),
            other: o.run.max(base.run),
            distinct,
            lines: beyond.unwrap_or_default().iter().map(|k| k + 1).collect(),
            stable: true,
        };
    }
    let unjudged = model.unjudged();
    if let Some(&k) = unjudged.first() {
        return Variance::Unjudged {
            example: String::from_utf8_lossy(plain[0][k]).trim().to_string(),
            lines: unjudged.iter().map(|k| k + 1).collect(),
            noise: noise_shown(&model, &plain[0]),
        };
    }
    Variance::Same {
        noise: noise_shown(&model, &plain[0]),
    }
}

/// At most this many noisy lines are named in a report; the rest are counted.
const NOISE_SHOWN: usize = 6;

/// The noisy lines of `base`, each with its noise shown as `<noise>`.
fn noise_shown(model: &Model, base: &[&[u8]]) -> Vec<String> {
    let noisy = model.noisy();
    let mut shown: Vec<String> = noisy
        .iter()
        .take(NOISE_SHOWN)
        .map(|&k| {
            let text: String = model.shown(k, base[k]).trim().chars().take(100).collect();
            format!("line {} `{text}`", k + 1)
        })
        .collect();
    if noisy.len() > NOISE_SHOWN {
        shown.push(format!("and {} more", noisy.len() - NOISE_SHOWN));
    }
    shown
}

/// The note of [`Variance::Same`] with noise: what was set aside, and why.
pub fn noise_note(subject: &str, noise: &[String], plain: usize) -> String {
    format!(
        "{subject}: numbers that differed between the {plain} runs without schedule jitter were treated as noise, wherever they stood, and every run was compared on the rest: {}",
        noise.join("; ")
    )
}

/// The run whose output holds the first output's lines in another order, when every output is
/// kept whole and holds the same lines as the first (the same number of each): `None` when
/// any line's text or count differs, or an output was too long to be kept whole.
fn reordered(outputs: &[RunOutput]) -> Option<u32> {
    fn sorted(o: &RunOutput) -> Option<Vec<&[u8]>> {
        let mut l = lines_of(o)?;
        l.sort_unstable();
        Some(l)
    }
    let first = outputs.first()?;
    let base = sorted(first)?;
    let mut other = None;
    for o in &outputs[1..] {
        if sorted(o)? != base {
            return None;
        }
        if other.is_none() && !o.same_as(first) {
            other = Some(o.run);
        }
    }
    other
}

/// The note of [`Variance::Reordered`].
pub fn reordered_note(subject: &str, first: u32, other: u32, count: usize) -> String {
    format!(
        "{subject}: the {count} runs printed the same lines, but not always in the same order \
         (runs {first} and {other} differ in order only): output printed from concurrent blocks \
         or threads comes out in the order the schedule ran them, so the runs were compared \
         line for line regardless of order, and agree"
    )
}

/// How many different outputs there are.
fn distinct(outputs: &[RunOutput]) -> usize {
    let mut seen: Vec<&RunOutput> = Vec::new();
    for o in outputs {
        if !seen.iter().any(|d| d.same_as(o)) {
            seen.push(o);
        }
    }
    seen.len()
}

/// The masked output's lines, when it is kept whole.
fn lines_of(o: &RunOutput) -> Option<Vec<&[u8]>> {
    Some(o.masked_bytes()?.split(|&b| b == b'\n').collect())
}

/// The lines (from 1) where two outputs kept whole and of as many lines differ.
fn differing_lines(a: &RunOutput, b: &RunOutput) -> Option<Vec<usize>> {
    let (x, y) = (lines_of(a)?, lines_of(b)?);
    (x.len() == y.len()).then(|| {
        (0..x.len())
            .filter(|&k| x[k] != y[k])
            .map(|k| k + 1)
            .collect()
    })
}

/// Lines shown in a message: the first few, then how many more.
pub fn lines_shown(lines: &[usize]) -> String {
    const SHOWN: usize = 6;
    let mut s: Vec<String> = lines.iter().take(SHOWN).map(usize::to_string).collect();
    if lines.len() > SHOWN {
        s.push(format!("and {} more", lines.len() - SHOWN));
    }
    s.join(", ")
}

/// Why [`Variance::Unjudged`] leaves lines of the output unjudged (a note, not inconclusive: a
/// number that varies between plain runs is noise wherever it stands).
pub fn unjudged_reason(lines: &[usize], example: &str) -> String {
    format!(
        "line(s) {} of the output hold a whole number that differs between runs even without \
         schedule jitter (`{example}`): a number that varies by itself is noise wherever it \
         stands, so those lines are not judged (every other line agrees in every run; the race \
         detectors still judge the code). If that number is a result, give the program a golden \
         output or a checker",
        lines_shown(lines)
    )
}

/// The finding of [`Variance::Differs`] (`runs` = first, other, distinct outputs), with the diff
/// of the two runs' outputs.
pub fn finding(
    outputs: &[RunOutput],
    subject: &str,
    file: &str,
    masks: &Masks,
    runs: (u32, u32, usize),
    (lines, stable): (&[usize], bool),
) -> GateFinding {
    let (first, other, distinct) = runs;
    let id = Identity {
        subject: subject.into(),
        detector: "output".into(),
        kind: "output differs between identical runs".into(),
        ..Default::default()
    };
    let mut f = GateFinding::new(
        id,
        file,
        None,
        message(first, other, distinct, outputs.len(), lines, stable),
    );
    let of = |run: u32| outputs.iter().find(|o| o.run == run);
    if let (Some(a), Some(b)) = (of(first), of(other)) {
        f.detail = Some(judge::diff_of(
            &a.shown(masks),
            &b.shown(masks),
            &format!("run {first}"),
            &format!("run {other}"),
        ));
    }
    f
}

/// The message of [`Variance::Differs`].
pub fn message(
    first: u32,
    other: u32,
    distinct: usize,
    count: usize,
    lines: &[usize],
    stable: bool,
) -> String {
    let mut m = format!(
        "variance: {distinct} different outputs in {count} successful runs (after masking); runs {first} and {other} differ"
    );
    if !lines.is_empty() {
        m.push_str(&format!(" on line(s) {}", lines_shown(lines)));
        if stable {
            m.push_str(" (the same in every run without schedule jitter)");
        }
    }
    m
}

/// The lines of each run, or `None` when any output was too long to be kept whole.
fn split<'a>(runs: &[&'a RunOutput]) -> Option<Vec<Vec<&'a [u8]>>> {
    runs.iter().map(|o| lines_of(o)).collect()
}
