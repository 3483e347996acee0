//! Output noise learned from the program's own runs: which numbers vary between runs made without
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
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift).
    struct Gen(u64);

    impl Gen {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
            of[usize::try_from(self.below(of.len() as u64)).expect("an index")]
        }

        /// A measurement in shape `shape` of those real programs print (a program prints one
        /// place in one shape, its value and sign change).
        fn measurement(&mut self, shape: u64) -> String {
            let v = self.below(2_000_000);
            let sign = if self.below(3) == 0 { "-" } else { "" };
            match shape {
                0 => format!("{sign}{}.{}", v / 1000, v % 1000),
                1 => format!("{sign}{}.{}%", v / 10_000, v % 10),
                2 => format!("{}.{:03}e-{:02}", 1 + v % 9, v % 1000, 1 + v % 30),
                3 => {
                    // Thousands separators.
                    let n = v * 7;
                    format!(
                        "{},{:03},{:03}.{}",
                        1 + n / 1_000_000 % 999,
                        n / 1000 % 1000,
                        n % 1000,
                        n % 10
                    )
                }
                4 => format!("{}.{:02}ms", v % 500, v % 100),
                5 => format!("{}.{}GB/s", v % 900, v % 10),
                6 => format!("{v}us"),
                _ => format!("{}.{}", v % 7, v % 100_000),
            }
        }
    }

    /// A line's shape: its parts, each a fixed text, a fixed number (a label's, a result's) or a
    /// measurement slot.
    #[derive(Clone)]
    enum Part {
        Fixed(String),
        Measured(u64),
        /// A measurement right-aligned in a field of this width (`%20.2f`): its padding moves
        /// with its width.
        Padded(u64, usize),
    }

    fn shape(g: &mut Gen) -> Vec<Part> {
        let lead = ["", ", ", "  ", "\t", "| ", "- "];
        let labels = [
            "Average kernel time (subgroup size = 8): ",
            "Reduce the time by ",
            "time ",
            "GPU 0: ",
            "memcopy:\t",
            "Throughput = ",
            "n=1024 elapsed ",
            "sum = 12345, time ",
            "[3/10] ",
        ];
        let tails = [
            " ",
            " (us)",
            " avg ms",
            " billion items/s",
            ", ",
            " ms; blocks = 64",
            " +- ",
        ];
        let mut parts = vec![Part::Fixed(g.pick(&lead).to_string())];
        for _ in 0..1 + g.below(3) {
            parts.push(Part::Fixed(g.pick(&labels).to_string()));
            parts.push(match g.below(3) {
                0 => Part::Padded(g.below(8), 8 + usize::try_from(g.below(16)).expect("small")),
                _ => Part::Measured(g.below(8)),
            });
            parts.push(Part::Fixed(g.pick(&tails).to_string()));
        }
        parts
    }

    fn render(g: &mut Gen, parts: &[Part]) -> String {
        parts
            .iter()
            .map(|p| match p {
                Part::Fixed(s) => s.clone(),
                Part::Measured(shape) => g.measurement(*shape),
                Part::Padded(shape, width) => format!("{:>width$}", g.measurement(*shape)),
            })
            .collect()
    }

    fn lines(s: &[String]) -> Vec<&[u8]> {
        s.iter().map(|l| l.as_bytes()).collect()
    }

    /// The class, generated: outputs of stable lines and lines of measurements in every shape
    /// (sign flips, leading punctuation, labels with numbers before the measurement, thousands
    /// separators, exponents, percent, units, several measurements a line). Learned from three
    /// plain runs, a fourth plain run is all noise; a run under jitter that changes one stable
    /// number, a label's number or a word is a finding on that line and no other.
    #[test]
    fn noise_is_learned_over_generated_line_shapes_and_a_stable_change_stays_a_finding() {
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        for round in 0..600 {
            let n = 1 + usize::try_from(g.below(6)).expect("small");
            let shapes: Vec<Vec<Part>> = (0..n)
                .map(|_| match g.below(3) {
                    0 => vec![Part::Fixed(format!("Result = {} PASS", g.below(1000)))],
                    _ => shape(&mut g),
                })
                .collect();
            let run =
                |g: &mut Gen| -> Vec<String> { shapes.iter().map(|s| render(g, s)).collect() };
            let plain: Vec<Vec<String>> = (0..3).map(|_| run(&mut g)).collect();
            let split: Vec<Vec<&[u8]>> = plain.iter().map(|p| lines(p)).collect();
            let model = learn(&split).expect("as many lines");
            assert!(
                model.unjudged().is_empty(),
                "round {round}: {model:?} {plain:?}"
            );
            let fourth = run(&mut g);
            assert_eq!(
                model.beyond_noise(&split[0], &lines(&fourth)),
                Some(vec![]),
                "round {round}: a plain run is noise only: {plain:?} then {fourth:?}"
            );
            // Under jitter: one fixed part changed (a digit of a stable number, or a word).
            let k = usize::try_from(g.below(n as u64)).expect("small");
            let fixed: Vec<usize> = (0..shapes[k].len())
                .filter(|&i| matches!(&shapes[k][i], Part::Fixed(s) if !s.trim().is_empty()))
                .collect();
            if fixed.is_empty() {
                continue;
            }
            let at = fixed[usize::try_from(g.below(fixed.len() as u64)).expect("small")];
            let mut changed = shapes.clone();
            if let Part::Fixed(s) = &mut changed[k][at] {
                *s = match s.find(|c: char| c.is_ascii_digit()) {
                    Some(d) => {
                        let digit = s.as_bytes()[d] - b'0';
                        let mut t = s.clone();
                        t.replace_range(d..=d, &((digit + 1) % 10).to_string());
                        t
                    }
                    None => format!("{s}X"),
                };
            }
            let jittered: Vec<String> = changed.iter().map(|s| render(&mut g, s)).collect();
            assert_eq!(
                model.beyond_noise(&split[0], &lines(&jittered)),
                Some(vec![k]),
                "round {round}: {plain:?} then under jitter {jittered:?}"
            );
        }
    }

    #[test]
    fn the_shapes_the_held_out_programs_printed_are_noise_where_they_vary() {
        let learned = |runs: &[&str]| {
            let split: Vec<Vec<&[u8]>> = runs.iter().map(|r| vec![r.as_bytes()]).collect();
            learn(&split).expect("one line each")
        };
        // A sign flip of a derived percentage.
        let m = learned(&["Reduce the time by -2.0%", "Reduce the time by 64.7%"]);
        assert_eq!(m.noisy(), vec![0]);
        assert_eq!(
            m.beyond_noise(
                &[b"Reduce the time by -2.0%"],
                &[b"Reduce the time by 13.1%"]
            ),
            Some(vec![])
        );
        // A statistics line that starts with a comma.
        let a = ", 5.196 avg ms, 0.192 billion items/s, 0.770 logical GB/s";
        let b = ", 5.201 avg ms, 0.191 billion items/s, 0.768 logical GB/s";
        assert_eq!(learned(&[a, b]).noisy(), vec![0]);
        // The label's number stays compared, the time is noise.
        let a = "Average kernel time (subgroup size = 8): 5.01432 (us)";
        let b = "Average kernel time (subgroup size = 8): 5.11873 (us)";
        let m = learned(&[a, b]);
        let c = "Average kernel time (subgroup size = 9): 5.01432 (us)";
        assert_eq!(
            m.beyond_noise(&[a.as_bytes()], &[c.as_bytes()]),
            Some(vec![0])
        );
        assert_eq!(
            m.shown(0, a.as_bytes()),
            "Average kernel time (subgroup size = 8): <noise> (us)"
        );
        // An integer with a unit word after it is a measurement: noise.
        let m = learned(&["took 1834 cycles", "took 1790 cycles", "took 1811 cycles"]);
        assert_eq!(m.noisy(), vec![0]);
        // A bare integer that varies without jitter is what a race prints as much as a count:
        // not noise (never green), not a finding (never a false alarm): unjudged.
        let m = learned(&["sum = 51200", "sum = 51137", "sum = 51200"]);
        assert_eq!(m.unjudged(), vec![0]);
        assert!(m.noisy().is_empty());
        // Words or a glued unit that vary without jitter: the program varies by itself.
        let m = learned(&["status: ok", "status: busy"]);
        assert_eq!(m.varies(), vec![0]);
        let m = learned(&["took 3ms", "took 3FAILED"]);
        assert_eq!(m.varies(), vec![0]);
    }

    /// A bandwidth table printed with `printf("%25s%20.2f")` (NVIDIA's transpose sample): a
    /// rate of 7 characters, then of 6, moves the padding, not a word. The numbers differ at the
    /// rate's place; a changed label still makes the line another shape.
    #[test]
    fn a_number_in_a_field_width_moves_only_its_padding() {
        let row = |name: &str, v: f64| format!("{name:>25}{v:>20.2}");
        let (a, b) = (
            row("shared memory copy", 2408.08),
            row("shared memory copy", 838.86),
        );
        assert_ne!(a.len() - a.trim_start().len(), 0);
        let at = differing_numbers(a.as_bytes(), b.as_bytes()).expect("one shape");
        assert_eq!(at.len(), 1);
        let rate = tokens(a.as_bytes())
            .iter()
            .position(|t| *t == Token::Number(b"2408.08"))
            .expect("the rate is a number");
        assert_eq!(at.into_iter().collect::<Vec<_>>(), vec![rate]);
        // Padding that wins or loses a whole blank run is still padding.
        assert!(differing_numbers(b"x 12345", b"x     1").is_some());
        assert!(differing_numbers(b"12345 x", b"    1 x").is_some());
        // Words are still compared, blanks between words included.
        let c = row("shared memory kopy", 838.86);
        assert_eq!(differing_numbers(a.as_bytes(), c.as_bytes()), None);
        assert_eq!(differing_numbers(b"a b 1", b"ab 1"), None);
        // Learned from plain runs whose widths vary, the rate is noise and the line is judged.
        let runs = [
            row("copy", 2384.43),
            row("copy", 998.12),
            row("copy", 2390.5),
        ];
        let split: Vec<Vec<&[u8]>> = runs.iter().map(|r| vec![r.as_bytes()]).collect();
        let m = learn(&split).expect("one line each");
        assert_eq!(m.noisy(), vec![0]);
        let jittered = row("copy", 97.0);
        assert_eq!(
            m.beyond_noise(&split[0], &[jittered.as_bytes()]),
            Some(vec![])
        );
        let worded = row("kopy", 97.0);
        assert_eq!(
            m.beyond_noise(&split[0], &[worded.as_bytes()]),
            Some(vec![0])
        );
    }

    #[test]
    fn tokens_keep_a_number_whole_with_its_sign_groups_exponent_and_unit() {
        let numbers = |s: &'static str| -> Vec<&'static str> {
            tokens(s.as_bytes())
                .into_iter()
                .filter_map(|t| match t {
                    Token::Number(b) => Some(std::str::from_utf8(b).expect("ascii")),
                    Token::Text(_) => None,
                })
                .collect()
        };
        assert_eq!(numbers("by -2.0% or +3"), vec!["-2.0%", "+3"]);
        assert_eq!(numbers("1,234,567.5 items"), vec!["1,234,567.5"]);
        assert_eq!(numbers("20, 1, 0, 35.711,"), vec!["20", "1", "0", "35.711"]);
        assert_eq!(
            numbers("t=1.2e-05s 3.1GB/s 12ms"),
            vec!["1.2e-05s", "3.1GB/s", "12ms"]
        );
        assert_eq!(numbers("run-1 ok"), vec!["1"]);
        assert_eq!(numbers(".5 and 5."), vec![".5", "5."]);
    }
}
