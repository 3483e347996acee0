//! A program's output that differs between runs: a race the schedule jitter exposed, or values
//! that change from run to run anyway (timings the masks do not recognise, `memcopy: 16.93`).
//!
//! When the runs under jitter disagree, racegate runs the program as many times again without
//! jitter. A line that differs between those runs only in numbers with a fraction (timings,
//! rates) cannot be judged: `output` is inconclusive for it, naming it, so that a mask can be
//! written. Everything else that differs is a finding, as before: a jittered run that differs on a
//! line stable without jitter, a line whose integers or words vary without jitter (`value 4711`,
//! what a race prints too), a different number of lines. H200 run 23 gated NVIDIA samples whose
//! timings are bare numbers with a fraction; a reviewer showed that calling every line that varies
//! without jitter noise hid a race that shows without jitter too.

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

/// Judges `outputs`; runs numbered above `jittered` ran without jitter (`0`: none did, as with
/// `--no-jitter`, and every run counts as one without jitter).
pub fn judge(outputs: &[RunOutput], jittered: u32) -> Variance {
    let Some(first) = outputs.first() else {
        return Variance::Same;
    };
    let distinct = distinct(outputs);
    if distinct == 1 {
        return Variance::Same;
    }
    // Every difference counts, shown between the first output and the first that differs.
    let whole = || {
        let other = outputs.iter().find(|o| !o.same_as(first)).unwrap_or(first);
        Variance::Differs {
            first: first.run,
            other: other.run,
            distinct,
            lines: differing_lines(first, other).unwrap_or_default(),
        }
    };
    let (with, without): (Vec<&RunOutput>, Vec<&RunOutput>) =
        outputs.iter().partition(|o| o.run <= jittered);
    if without.len() < 2 {
        // No runs without jitter to learn the noise from.
        return whole();
    }
    let base = without[0];
    if without.iter().all(|o| o.same_as(base)) {
        return match with.iter().find(|o| !o.same_as(base)) {
            Some(o) => Variance::Differs {
                first: o.run.min(base.run),
                other: o.run.max(base.run),
                distinct,
                lines: differing_lines(base, o).unwrap_or_default(),
            },
            None => Variance::Same,
        };
    }
    // The runs without jitter disagree among themselves. Noise only where they differ in
    // measurements alone: lines of the same words whose differing numbers all have a fraction
    // (`memcopy: 16.93`, `GOP/s: 2.739636`, a table of milliseconds). A differing integer or word
    // (`value 4711`, `counter: 51199`) is what a race prints too: the finding it always was. Every
    // output must be kept whole and have as many lines as the others; a run under jitter that
    // differs on any other line is a finding.
    let split: Option<Vec<Vec<&[u8]>>> = outputs.iter().map(lines_of).collect();
    let Some(split) = split.filter(|s| s.iter().all(|l| l.len() == s[0].len())) else {
        return whole();
    };
    let index = |o: &RunOutput| outputs.iter().position(|x| x.run == o.run).unwrap_or(0);
    let base_lines = &split[index(base)];
    let noisy: Vec<usize> = (0..base_lines.len())
        .filter(|&k| without.iter().any(|o| split[index(o)][k] != base_lines[k]))
        .collect();
    let measured = |k: usize| {
        without
            .iter()
            .all(|o| only_measurements_differ(base_lines[k], split[index(o)][k]))
    };
    if let Some(&k) = noisy.iter().find(|&&k| !measured(k)) {
        let o = without
            .iter()
            .find(|o| split[index(o)][k] != base_lines[k])
            .unwrap_or(&base);
        return Variance::Differs {
            first: base.run.min(o.run),
            other: base.run.max(o.run),
            distinct,
            lines: vec![k + 1],
        };
    }
    for o in &with {
        let lines: Vec<usize> = (0..base_lines.len())
            .filter(|&k| {
                let line = split[index(o)][k];
                if noisy.contains(&k) {
                    !only_measurements_differ(base_lines[k], line)
                } else {
                    line != base_lines[k]
                }
            })
            .collect();
        if !lines.is_empty() {
            return Variance::Differs {
                first: o.run.min(base.run),
                other: o.run.max(base.run),
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

/// Whether lines `a` and `b` are the same but for numbers with a fraction (`16.93` vs `16.36`):
/// the same text between their numbers, as many numbers, and every number that differs written
/// with digits on both sides of a point in both lines.
pub fn only_measurements_differ(a: &[u8], b: &[u8]) -> bool {
    let (ta, tb) = (tokens(a), tokens(b));
    ta.len() == tb.len()
        && ta.iter().zip(&tb).all(|(x, y)| match (x, y) {
            (Token::Text(p), Token::Text(q)) => p == q,
            (Token::Number(p), Token::Number(q)) => p == q || (fractional(p) && fractional(q)),
            _ => false,
        })
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Text(&'a [u8]),
    Number(&'a [u8]),
}

/// A line cut into runs of digits and points (numbers) and runs of anything else.
fn tokens(line: &[u8]) -> Vec<Token<'_>> {
    let num = |b: u8| b.is_ascii_digit() || b == b'.';
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let start = i;
        let is_num = num(line[i]);
        while i < line.len() && num(line[i]) == is_num {
            i += 1;
        }
        let t = &line[start..i];
        out.push(if is_num { Token::Number(t) } else { Token::Text(t) });
    }
    out
}

/// `16.93`, `0.000`: digits, one point, digits.
fn fractional(t: &[u8]) -> bool {
    let mut parts = t.split(|&b| b == b'.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(i), Some(f), None) => {
            !i.is_empty() && !f.is_empty() && i.iter().chain(f).all(u8::is_ascii_digit)
        }
        _ => false,
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
    format!(
        "line(s) {} of the output differ between runs even without schedule jitter, in numbers \
         with a fraction only (`{example}`): measurements such as timings, or a sum a race makes \
         vary without jitter too; the output oracle cannot tell which, so those lines are not \
         judged (every other line agrees in every run). Mask them (--mask or the manifest's \
         `masks`) if they are measurements",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbers_with_a_fraction_may_differ_as_measurements() {
        let m = |a: &str, b: &str| only_measurements_differ(a.as_bytes(), b.as_bytes());
        // Run 23's samples: bare timings, rates and tables of milliseconds.
        assert!(m("memcopy:\t16.93", "memcopy:\t16.36"));
        assert!(m("GPU time: <duration>; GOP/s: 2.739636", "GPU time: <duration>; GOP/s: 2.606214"));
        assert!(m("20, 1, 0, 35.711, 63.293, 0.000,", "20, 1, 0, 47.655, 89.263, 0.000,"));
        // What a race prints, or anything else: not a measurement.
        assert!(!m("value 4711", "value 4712"));
        assert!(!m("counter: 51199", "counter: 51200"));
        assert!(!m("sum = 10.5 (3 blocks)", "sum = 10.5 (4 blocks)"));
        assert!(!m("result: PASS 1.5", "result: FAIL 1.5"));
        assert!(!m("x 1.5", "x 1.5 2.5"));
        assert!(!m("x 1.5", "x 15"));
        assert!(!m("x 1.5.2", "x 1.5.3"));
        assert!(!m("x .5", "x .6"));
        assert!(m("same", "same"));
    }
}
