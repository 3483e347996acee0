//! The noise model over generated line shapes and the shapes held-out programs printed.

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
        let run = |g: &mut Gen| -> Vec<String> { shapes.iter().map(|s| render(g, s)).collect() };
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
