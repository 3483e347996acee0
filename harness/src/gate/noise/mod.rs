//! Output noise learned from the program's own runs, and its tests beside it (`tests.rs`).
//! Part of `gate/`: may import the stages (`proc/` .. `judge/`) and the rest of `gate/`.
//!
//! Which numbers vary between runs made without
//! schedule jitter. A line is cut into tokens (numbers with their sign, digit groups, fraction,
//! exponent and unit, and the text between them). A measurement (a number with a fraction or an
//! exponent, a unit glued to it or a unit word after it: `-2.0%`, `5.01432 (us)`, `12 ms`) that
//! differs between two plain runs at the same place of a line is noise there, whatever its sign,
//! separators or label. A bare integer that differs between plain runs (`sum = 4711`, then
//! `4712`) is what a race prints too, and what a count prints: that line cannot be judged
//! ([`LineNoise::Unjudged`]). Words, units or the shape that differ between plain runs are the
//! program varying by itself: a finding ([`LineNoise::Varies`]). A run under jitter is then
//! compared with the first plain run everywhere else: a number stable in every plain run that
//! differs under jitter is the finding.

use std::collections::{BTreeMap, BTreeSet};

/// One piece of a line: a number (with sign, digit groups, fraction, exponent and a unit glued to
/// it) or the text between numbers.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Token<'a> {
    Text(&'a [u8]),
    Number(&'a [u8]),
}

/// A line cut into [`Token`]s. A sign belongs to a number where no letter or digit comes before
/// it (`run-1` is the text `run-` and the number `1`); a comma, apostrophe or underscore followed
/// by exactly three digits groups them (`1,234,567`, while `20, 1` is two numbers); letters or
/// `%` right after a number are its unit (`12ms`, `64.7%`, `3.1GB/s`).
pub fn tokens(line: &[u8]) -> Vec<Token<'_>> {
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
        // Digit groups: a separator and exactly three digits, as often as they come.
        while matches!(line.get(i), Some(b',' | b'\'' | b'_'))
            && i > start
            && digit(i - 1)
            && (1..=3).all(|d| digit(i + d))
            && !digit(i + 4)
        {
            i += 4;
        }
        if line.get(i) == Some(&b'.') && (digit(i + 1) || i > start) {
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
        i = unit_end(line, i);
        out.push(Token::Number(&line[start..i]));
        text = i;
    }
    if text < line.len() {
        out.push(Token::Text(&line[text..]));
    }
    out
}

/// Where a unit glued to a number ends (`%`, or up to eight letters with one `/` among them:
/// `ms`, `GB/s`); `i` when there is none.
fn unit_end(line: &[u8], i: usize) -> usize {
    if line.get(i) == Some(&b'%') {
        return i + 1;
    }
    let letters = |from: usize| {
        line[from.min(line.len())..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count()
    };
    let n = letters(i);
    if n == 0 || n > 8 {
        return i;
    }
    let mut end = i + n;
    if line.get(end) == Some(&b'/') {
        let m = letters(end + 1);
        if m > 0 && n + m < 8 {
            end += 1 + m;
        }
    }
    end
}

/// What the plain runs say of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineNoise {
    /// The same in every plain run.
    Stable,
    /// The same words and shape; the measurements at these token positions differ between
    /// plain runs: noise there.
    Numbers(BTreeSet<usize>),
    /// A bare integer differs between plain runs (a count, free memory, a pid): noise, and the
    /// line is not judged (a note names it).
    Unjudged,
    /// Its words, units or shape differ between plain runs: the program's output varies by
    /// itself, without jitter (a finding).
    Varies,
}

/// What the plain runs say of the whole output: one [`LineNoise`] a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub lines: Vec<LineNoise>,
}

/// The token positions (in `a`'s [`tokens`]) where `a` and `b` hold different numbers, when they
/// have the same shape (as many numbers, the same text between them, the same unit glued to each
/// number); `None` otherwise. Text is compared without its padding: blanks at either end of a
/// piece and the length of a run of blanks inside it do not count, so a number printed in a field
/// width (`%20.2f`: ` 2408.08` then `  838.86`) moves no words.
pub fn differing_numbers(a: &[u8], b: &[u8]) -> Option<BTreeSet<usize>> {
    let (ta, tb) = (padless(&tokens(a)), padless(&tokens(b)));
    if ta.len() != tb.len() {
        return None;
    }
    let mut out = BTreeSet::new();
    for ((k, x), (_, y)) in ta.iter().zip(&tb) {
        match (x, y) {
            (Piece::Text(p), Piece::Text(q)) if p == q => {}
            (Piece::Number(p), Piece::Number(q)) => {
                if unit(p) != unit(q) {
                    return None;
                }
                if p != q {
                    out.insert(*k);
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A token with its padding taken out: a number as printed, or text with its blanks squeezed.
#[derive(PartialEq, Eq)]
enum Piece<'a> {
    Text(Vec<u8>),
    Number(&'a [u8]),
}

/// `toks` with each text's padding taken out (blanks trimmed, runs of blanks made one) and text
/// that was only blanks left out, each kept with its position in `toks`.
fn padless<'a>(toks: &[Token<'a>]) -> Vec<(usize, Piece<'a>)> {
    let blank = |b: &u8| matches!(b, b' ' | b'\t');
    toks.iter()
        .enumerate()
        .filter_map(|(k, t)| match *t {
            Token::Number(n) => Some((k, Piece::Number(n))),
            Token::Text(s) => {
                let mut squeezed = Vec::with_capacity(s.len());
                for w in s.split(blank).filter(|w| !w.is_empty()) {
                    if !squeezed.is_empty() {
                        squeezed.push(b' ');
                    }
                    squeezed.extend_from_slice(w);
                }
                (!squeezed.is_empty()).then_some((k, Piece::Text(squeezed)))
            }
        })
        .collect()
}

/// The unit glued to a number token (`ms` of `12ms`, `%` of `-2.0%`; empty for none).
fn unit(n: &[u8]) -> &[u8] {
    let end = n.iter().rposition(u8::is_ascii_digit).map_or(0, |i| i + 1);
    // An exponent's `e-05` is digits at the end: no unit.
    &n[end..]
}

/// Unit words that, right after a number, make it a measurement (`12 ms`, `3 (us)`).
const UNITS: [&str; 24] = [
    "ns", "us", "µs", "ms", "s", "sec", "secs", "second", "seconds", "msec", "msecs", "usec",
    "nsec", "%", "cycles", "clocks", "ticks", "Hz", "MHz", "GHz", "GB/s", "MB/s", "GiB/s",
    "GFLOPS",
];

/// Whether the number at token `k` reads as a measurement: a fraction or an exponent, a unit
/// glued to it, or a unit word right after it.
fn measurement(toks: &[Token<'_>], k: usize) -> bool {
    let Some(Token::Number(n)) = toks.get(k) else {
        return false;
    };
    let value = &n[..n.len() - unit(n).len()];
    if value.contains(&b'.')
        || value.iter().any(|b| matches!(b, b'e' | b'E'))
        || !unit(n).is_empty()
    {
        return true;
    }
    let Some(Token::Text(after)) = toks.get(k + 1) else {
        return false;
    };
    let after = String::from_utf8_lossy(after);
    let word: String = after
        .trim_start()
        .trim_start_matches('(')
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | ',' | ';' | ':'))
        .collect();
    UNITS.iter().any(|u| word.eq_ignore_ascii_case(u))
}

/// Learns the noise from the plain runs' lines (each run's output cut into lines). `None` when
/// they do not even have as many lines: no line can be set beside another.
pub fn learn(plain: &[Vec<&[u8]>]) -> Option<Model> {
    let base = plain.first()?;
    if plain.iter().any(|p| p.len() != base.len()) {
        return None;
    }
    let lines = (0..base.len())
        .map(|k| {
            let mut noise = LineNoise::Stable;
            let toks = tokens(base[k]);
            for other in &plain[1..] {
                if other[k] == base[k] {
                    continue;
                }
                let differ = differing_numbers(base[k], other[k]);
                let bare = differ
                    .as_ref()
                    .is_some_and(|p| p.iter().any(|&i| !measurement(&toks, i)));
                noise = match (noise, differ) {
                    (LineNoise::Varies, _) | (_, None) => LineNoise::Varies,
                    (LineNoise::Unjudged, _) => LineNoise::Unjudged,
                    (_, Some(_)) if bare => LineNoise::Unjudged,
                    (LineNoise::Stable, Some(p)) => LineNoise::Numbers(p),
                    (LineNoise::Numbers(mut q), Some(p)) => {
                        q.extend(p);
                        LineNoise::Numbers(q)
                    }
                };
            }
            noise
        })
        .collect();
    Some(Model { lines })
}

impl Model {
    /// The lines (from 0) where `other` differs from `base` (the first plain run) beyond the noise;
    /// `None` when `other` has another number of lines.
    pub fn beyond_noise(&self, base: &[&[u8]], other: &[&[u8]]) -> Option<Vec<usize>> {
        if other.len() != base.len() || base.len() != self.lines.len() {
            return None;
        }
        Some(
            (0..base.len())
                .filter(|&k| {
                    base[k] != other[k]
                        && match &self.lines[k] {
                            LineNoise::Stable => true,
                            LineNoise::Unjudged | LineNoise::Varies => false,
                            LineNoise::Numbers(allowed) => !differing_numbers(base[k], other[k])
                                .is_some_and(|d| d.is_subset(allowed)),
                        }
                })
                .collect(),
        )
    }

    /// Sets `extra` aside as noise too: by line (from 0), numbers (token positions) known to
    /// vary for a reason of their own (they read the clock). A line whose words vary stays so.
    pub fn add_noise(&mut self, extra: &BTreeMap<usize, BTreeSet<usize>>) {
        for (&k, positions) in extra {
            let Some(line) = self.lines.get_mut(k) else {
                continue;
            };
            *line = match std::mem::replace(line, LineNoise::Stable) {
                LineNoise::Stable => LineNoise::Numbers(positions.clone()),
                LineNoise::Numbers(mut q) => {
                    q.extend(positions);
                    LineNoise::Numbers(q)
                }
                other => other,
            };
        }
    }

    /// The lines (from 0) with numbers that vary without jitter.
    pub fn noisy(&self) -> Vec<usize> {
        self.which(|l| matches!(l, LineNoise::Numbers(_)))
    }

    /// The lines (from 0) where a bare integer varies without jitter.
    pub fn unjudged(&self) -> Vec<usize> {
        self.which(|l| *l == LineNoise::Unjudged)
    }

    /// The lines (from 0) whose words, units or shape vary without jitter.
    pub fn varies(&self) -> Vec<usize> {
        self.which(|l| *l == LineNoise::Varies)
    }

    fn which(&self, f: impl Fn(&LineNoise) -> bool) -> Vec<usize> {
        (0..self.lines.len())
            .filter(|&k| f(&self.lines[k]))
            .collect()
    }

    /// Line `k` of `base` with each noisy number shown as `<noise>` (for the report).
    pub fn shown(&self, k: usize, line: &[u8]) -> String {
        let Some(LineNoise::Numbers(at)) = self.lines.get(k) else {
            return String::from_utf8_lossy(line).into_owned();
        };
        tokens(line)
            .iter()
            .enumerate()
            .map(|(i, t)| match t {
                Token::Number(_) if at.contains(&i) => "<noise>".to_string(),
                Token::Number(b) | Token::Text(b) => String::from_utf8_lossy(b).into_owned(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
