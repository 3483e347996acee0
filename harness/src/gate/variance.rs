//! A program's output that differs between runs: a race the schedule jitter exposed, or values
//! that change from run to run anyway (timings the masks do not recognise, `memcopy: 16.93`).
//!
//! The shape of a line cannot tell the two apart (run 23 gated NVIDIA samples whose timings are
//! bare numbers in a table), so racegate asks the program: when the runs under jitter disagree,
//! it runs the program as many times again without jitter. Lines that differ between runs without
//! jitter are noise; a jittered run that differs from them on any other line is a finding (the
//! diff names it). When only noisy lines differ, the output oracle cannot judge those lines: the
//! run is inconclusive for `output`, naming them, so that a mask can be written. Outputs whose
//! line counts differ are compared whole.

use super::finding::GateFinding;
use super::fingerprint::Identity;
use super::judge::{self, RunOutput};
use super::masks::Masks;

/// What the outputs of a program's successful runs say.
pub enum Variance {
    /// All alike (after masking).
    Same,
    /// Runs under jitter differ from the runs without jitter beyond what varies without it.
    Differs {
        /// The runs whose outputs the diff shows.
        first: u32,
        other: u32,
        /// How many different outputs there were.
        distinct: usize,
        /// The lines (from 1) the jittered run differs on that are stable without jitter;
        /// empty when the outputs were compared whole.
        lines: Vec<usize>,
    },
    /// Only lines that also vary without jitter differ: nothing to judge them by.
    Noise {
        /// The lines (from 1) that vary without jitter, empty when the whole output does.
        lines: Vec<usize>,
        /// The first such line of a run without jitter, as printed (masked).
        example: String,
    },
}

/// Judges `outputs`; runs numbered above `jittered` ran without jitter (none: every output is
/// compared with the first, as without jitter).
pub fn judge(outputs: &[RunOutput], jittered: u32) -> Variance {
    let Some(first) = outputs.first() else {
        return Variance::Same;
    };
    let distinct = distinct(outputs);
    if distinct == 1 {
        return Variance::Same;
    }
    let (with, without): (Vec<&RunOutput>, Vec<&RunOutput>) =
        outputs.iter().partition(|o| o.run <= jittered);
    if without.len() < 2 || with.is_empty() {
        // No runs without jitter to learn the noise from: every difference counts.
        let other = outputs.iter().find(|o| !o.same_as(first)).unwrap_or(first);
        return Variance::Differs {
            first: first.run,
            other: other.run,
            distinct,
            lines: Vec::new(),
        };
    }
    let base = without[0];
    if without.iter().all(|o| o.same_as(base)) {
        return match with.iter().find(|o| !o.same_as(base)) {
            Some(o) => Variance::Differs {
                first: base.run,
                other: o.run,
                distinct,
                lines: differing_lines(base, o).unwrap_or_default(),
            },
            None => Variance::Same,
        };
    }
    // The runs without jitter disagree among themselves: compare line by line, leaving out the
    // lines they disagree on, when every output is kept whole and has as many lines.
    let split: Option<Vec<Vec<&[u8]>>> = outputs.iter().map(lines_of).collect();
    let Some(split) = split.filter(|s| s.iter().all(|l| l.len() == s[0].len())) else {
        return Variance::Noise {
            lines: Vec::new(),
            example: String::new(),
        };
    };
    let index = |o: &RunOutput| outputs.iter().position(|x| x.run == o.run).unwrap_or(0);
    let base_lines = &split[index(base)];
    let noisy: Vec<usize> = (0..base_lines.len())
        .filter(|&k| without.iter().any(|o| split[index(o)][k] != base_lines[k]))
        .collect();
    for o in &with {
        let lines: Vec<usize> = (0..base_lines.len())
            .filter(|k| !noisy.contains(k) && split[index(o)][*k] != base_lines[*k])
            .collect();
        if !lines.is_empty() {
            return Variance::Differs {
                first: base.run,
                other: o.run,
                distinct,
                lines: lines.iter().map(|k| k + 1).collect(),
            };
        }
    }
    Variance::Noise {
        example: noisy
            .first()
            .map(|&k| String::from_utf8_lossy(base_lines[k]).trim().to_string())
            .unwrap_or_default(),
        lines: noisy.iter().map(|k| k + 1).collect(),
    }
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

/// Why [`Variance::Noise`] leaves the output unjudged.
pub fn noise_reason(lines: &[usize], example: &str) -> String {
    if lines.is_empty() {
        "the output differs between runs even without schedule jitter (and its line count too): \
         nothing to compare the jittered runs with; mask what varies"
            .to_string()
    } else {
        format!(
            "line(s) {} of the output differ between runs even without schedule jitter \
             (`{example}`): timings or other values the masks do not recognise, so they cannot \
             show a race; every other line agrees in every run. Mask them (--mask or the \
             manifest's `masks`) to judge them",
            lines_shown(lines)
        )
    }
}

/// The finding of [`Variance::Differs`] (`runs` = first, other, distinct outputs), with the diff
/// of the two runs' outputs.
pub fn finding(
    outputs: &[RunOutput],
    subject: &str,
    file: &str,
    masks: &Masks,
    runs: (u32, u32, usize),
    lines: &[usize],
) -> GateFinding {
    let (first, other, distinct) = runs;
    let id = Identity {
        subject: subject.into(),
        detector: "output".into(),
        kind: "output differs between identical runs".into(),
        ..Default::default()
    };
    let mut f = GateFinding::new(id, file, None, message(first, other, distinct, outputs.len(), lines));
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
pub fn message(first: u32, other: u32, distinct: usize, count: usize, lines: &[usize]) -> String {
    let mut m = format!(
        "variance: {distinct} different outputs in {count} successful runs (after masking); runs {first} and {other} differ"
    );
    if !lines.is_empty() {
        m.push_str(&format!(
            " on line(s) {} (the same in every run without schedule jitter)",
            lines_shown(lines)
        ));
    }
    m
}
