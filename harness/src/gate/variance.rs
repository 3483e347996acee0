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

use std::collections::{BTreeMap, BTreeSet};

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
        /// The lines (from 1) where they differ; empty when not known line by line.
        lines: Vec<usize>,
        /// Whether those lines are the same in every run without jitter (a jittered run
        /// differs where nothing else varies).
        stable: bool,
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
            stable: false,
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
                stable: true,
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
            stable: false,
        };
    }
    // Which numbers of each noisy line vary without jitter: a jittered run may differ there
    // only (a sum beside a timing on one line is still compared).
    let varying: BTreeMap<usize, BTreeSet<usize>> = noisy
        .iter()
        .map(|&k| {
            let positions = without
                .iter()
                .flat_map(|o| {
                    differing_numbers(base_lines[k], split[index(o)][k]).unwrap_or_default()
                })
                .collect();
            (k, positions)
        })
        .collect();
    for o in &with {
        let lines: Vec<usize> = (0..base_lines.len())
            .filter(|&k| {
                let line = split[index(o)][k];
                match varying.get(&k) {
                    Some(allowed) => !differing_numbers(base_lines[k], line)
                        .is_some_and(|d| d.iter().all(|p| allowed.contains(p))),
                    None => line != base_lines[k],
                }
            })
            .collect();
        if !lines.is_empty() {
            return Variance::Differs {
                first: o.run.min(base.run),
                other: o.run.max(base.run),
                distinct,
                lines: lines.iter().map(|k| k + 1).collect(),
                stable: true,
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

/// Whether lines `a` and `b` are the same but for measurements: the same words between their
/// numbers, as many numbers, and every number that differs written with a fraction or an
/// exponent in both (`16.93` vs `16.36`, `1.2e-05` vs `9.8e-06`).
pub fn only_measurements_differ(a: &[u8], b: &[u8]) -> bool {
    differing_numbers(a, b).is_some()
}

/// The positions (among the line's numbers) where `a` and `b` differ, when only measurements
/// differ ([`only_measurements_differ`]); `None` when anything else does.
fn differing_numbers(a: &[u8], b: &[u8]) -> Option<Vec<usize>> {
    let (ta, tb) = (tokens(a), tokens(b));
    if ta.len() != tb.len() {
        return None;
    }
    let mut out = Vec::new();
    let mut n = 0;
    for (x, y) in ta.iter().zip(&tb) {
        match (x, y) {
            (Token::Text(p), Token::Text(q)) if p == q => {}
            (Token::Number(p), Token::Number(q)) => {
                if p != q {
                    if !(measurement(p) && measurement(q)) {
                        return None;
                    }
                    out.push(n);
                }
                n += 1;
            }
            _ => return None,
        }
    }
    Some(out)
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Text(&'a [u8]),
    Number(&'a [u8]),
}

/// A line cut into numbers (`-1.5e-05`, `42`, `.5`: an optional sign where no letter or digit
/// comes before it, digits and a point, an exponent) and the text between them.
fn tokens(line: &[u8]) -> Vec<Token<'_>> {
    let digit = |i: usize| line.get(i).is_some_and(u8::is_ascii_digit);
    let mut out = Vec::new();
    let (mut i, mut text) = (0, 0);
    while i < line.len() {
        let signed = matches!(line[i], b'-' | b'+')
            && (digit(i + 1) || (line.get(i + 1) == Some(&b'.') && digit(i + 2)))
            && (i == 0 || !line[i - 1].is_ascii_alphanumeric());
        let starts = digit(i) || (line[i] == b'.' && digit(i + 1)) || signed;
        if !starts {
            i += 1;
            continue;
        }
        if text < i {
            out.push(Token::Text(&line[text..i]));
        }
        let start = i;
        i += usize::from(signed);
        while digit(i) {
            i += 1;
        }
        if line.get(i) == Some(&b'.') {
            i += 1;
            while digit(i) {
                i += 1;
            }
        }
        if matches!(line.get(i), Some(b'e' | b'E')) {
            let k = i + 1 + usize::from(matches!(line.get(i + 1), Some(b'-' | b'+')));
            if digit(k) {
                i = k;
                while digit(i) {
                    i += 1;
                }
            }
        }
        out.push(Token::Number(&line[start..i]));
        text = i;
    }
    if text < line.len() {
        out.push(Token::Text(&line[text..]));
    }
    out
}

/// A number written as a measurement: with a fraction or an exponent (`16.93`, `1e-05`).
fn measurement(t: &[u8]) -> bool {
    t.iter().any(|&b| matches!(b, b'.' | b'e' | b'E'))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The class, generated: lines of words, punctuation and numbers in every notation; changing
    /// one integer (any sign, any width, inside or beside words) is never a measurement, changing
    /// one number with a fraction or an exponent always is, and changing a word never is.
    #[test]
    #[allow(clippy::cast_possible_truncation)] // bounded: indexes below a slice's length
    fn generated_lines_tell_integers_from_measurements() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let words = [
            "sum", "time", "GB/s", "=", ":", ",", " ", "(", ")", "x", "ms", "run-", "\t", "[", "]",
        ];
        for _ in 0..4000 {
            let mut parts: Vec<String> = (0..1 + next(8))
                .map(|_| match next(4) {
                    0 => words[next(words.len() as u64) as usize].to_string(),
                    1 => format!("{}", next(100_000)),
                    2 => format!("{}.{}", next(1000), next(1000)),
                    _ => format!("{}e-{:02}", 1 + next(9), next(40)),
                })
                .collect();
            let line = parts.join(" ");
            let k = next(parts.len() as u64) as usize;
            let (changed, measured) = if parts[k].contains(['.', 'e'])
                && parts[k].starts_with(|c: char| c.is_ascii_digit())
            {
                (format!("{}.{}", 1000 + next(1000), next(1000)), true)
            } else if parts[k].chars().all(|c| c.is_ascii_digit()) {
                (format!("{}", 100_000 + next(100_000)), false)
            } else {
                (format!("{}z", parts[k]), false)
            };
            parts[k] = changed;
            let other = parts.join(" ");
            assert_eq!(
                only_measurements_differ(line.as_bytes(), other.as_bytes()),
                measured,
                "`{line}` vs `{other}`"
            );
        }
    }

    #[test]
    fn only_numbers_with_a_fraction_may_differ_as_measurements() {
        let m = |a: &str, b: &str| only_measurements_differ(a.as_bytes(), b.as_bytes());
        // Run 23's samples: bare timings, rates and tables of milliseconds.
        assert!(m("memcopy:\t16.93", "memcopy:\t16.36"));
        assert!(m(
            "GPU time: <duration>; GOP/s: 2.739636",
            "GPU time: <duration>; GOP/s: 2.606214"
        ));
        assert!(m(
            "20, 1, 0, 35.711, 63.293, 0.000,",
            "20, 1, 0, 47.655, 89.263, 0.000,"
        ));
        // What a race prints, or anything else: not a measurement.
        assert!(!m("value 4711", "value 4712"));
        assert!(!m("counter: 51199", "counter: 51200"));
        assert!(!m("sum = 10.5 (3 blocks)", "sum = 10.5 (4 blocks)"));
        assert!(!m("result: PASS 1.5", "result: FAIL 1.5"));
        assert!(!m("x 1.5", "x 1.5 2.5"));
        assert!(!m("x 1.5", "x 15"));
        assert!(m("x .5", "x .6"), "a fraction without its zero");
        assert!(m("same", "same"));
        // Exponents and signs are numbers too; a %f integer is a measurement (cannot tell).
        assert!(m("Time: 1.2e-05 s", "Time: 9.8e-06 s"));
        assert!(m("err -0.01", "err 0.02"));
        assert!(m("max err 0.000000e+00", "max err 3.051758e-05"));
        assert!(!m("run-1 ok", "run-2 ok"), "a minus inside a word is text");
        // Positions: a sum beside a timing differs at its own position.
        assert_eq!(
            differing_numbers(b"sum = 123.5 time 1.2 ms", b"sum = 123.5 time 1.3 ms"),
            Some(vec![1])
        );
        assert_eq!(
            differing_numbers(b"sum = 123.5 time 1.2 ms", b"sum = 999.5 time 1.3 ms"),
            Some(vec![0, 1])
        );
    }
}
