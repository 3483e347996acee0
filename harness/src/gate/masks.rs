//! What may differ between two runs of a program without meaning anything: the built-in masks
//! (durations, rates per second (as `X/s` or in words), numbers after a word that says time or
//! clocks, counts of polls made while waiting, timestamps, addresses, process ids; nothing else, so `counter: 1 expected: 51200` still differs from
//! `counter: 51200`) and the user's `--mask REGEX`. Output is bytes: masks
//! match bytes, and a byte that is not UTF-8 is just a byte.

use regex::bytes::Regex;

use crate::errors::{Error, Result};

/// A built-in mask: its name, what it matches, an example, and its replacement.
// `name` and `example` are read by the masks' own tests (each example must be masked).
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub struct BuiltIn {
    pub name: &'static str,
    pub pattern: &'static str,
    pub example: &'static str,
    pub replacement: &'static str,
}

/// The built-in masks, applied in this order before the user's.
pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "timestamps",
        pattern: r"(?-u:\b)\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?|(?-u:\b)\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?",
        example: "2026-11-29T21:41:04Z, 21:41:04.123",
        replacement: "<timestamp>",
    },
    BuiltIn {
        name: "durations",
        pattern: r"(?-u:\b)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s?(?:ns|us|µs|μs|ms|s|sec|secs|seconds?|[mun]secs?|millis(?:econds?)?|microseconds?|nanoseconds?|mins?|minutes?|h|hrs?|hours?)(?-u:\b)",
        example: "0.41 sec, 12ms, 3.2 s, 15.941 msec, 110.149002 msecs",
        replacement: "<duration>",
    },
    // A rate: a number, then a unit per second (5.0572 GB/s, 263.12 GFlop/s, 0.35 MegaElements/s).
    BuiltIn {
        name: "rates",
        pattern: r"(?-u:\b)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s?[A-Za-z]+\s?/\s?(?:s|sec|secs|second|seconds)(?-u:\b)",
        example: "5.0572 GB/s, 218907.6000 MB/sec, 263.12 GFlop/s, 0.348313 MegaElements/s, 0.000354 gigaedges/s",
        replacement: "<rate>",
    },
    // A duration whose unit stands elsewhere on the line: the number after a word that says
    // time (`Time (ms): 188.15`, `Processing time: 86.96 (ms)`, `time spent executing by the
    // GPU: 34.40`), within 40 characters without a digit. A number glued to a word (`V1` of
    // `Time for asynchronous V1 transfer ... (ms): 0.55`) is a label, not the duration: the line
    // is left to the noise the plain runs show.
    BuiltIn {
        name: "labelled durations",
        pattern: r"(?i)(?-u:\b)(time|elapsed|duration|latency)(?-u:\b)([^\n\d;,]{0,40}?)(?-u:\b)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?",
        example: "Time (ms): 188.152359, Processing time: 86.957001 (ms), time spent executing by the GPU: 34.40",
        replacement: "${1}${2}<duration>",
    },
    // A rate written out in words, its number before or after them (`Gigaoptions per second :
    // 56.965634`, `56.9 options per second`): NVIDIA's BlackScholes sample, H200 run 22.
    BuiltIn {
        name: "rates in words",
        pattern: r"(?i)(?-u:\b)(per\s+(?:second|sec|s))(?-u:\b)(\s*[:=]\s*)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|(?-u:\b)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(\s?[A-Za-z]+\s+per\s+(?:second|sec)s?(?-u:\b))",
        example: "Gigaoptions per second : 56.965634, 56.9 options per second",
        replacement: "${1}${2}<rate>${3}",
    },
    // A count of polls made while the program waited for the GPU (`CPU executed 45020
    // iterations while waiting for GPU to finish`): how long the GPU took, not a result.
    // NVIDIA's asyncAPI sample, H200 run 22.
    BuiltIn {
        name: "waiting counts",
        pattern: r"(?i)(?-u:\b)\d+(\s+(?:iterations?|polls?|loops?|spins?|times|checks?)(?-u:\b)[^\n\d;,]{0,40}?(?-u:\b)(?:while\s+waiting|while\s+polling)(?-u:\b))",
        example: "CPU executed 45020 iterations while waiting for GPU to finish",
        replacement: "<count>${1}",
    },
    // Clock counts and cycles, on a line that says so (`Average clocks/block = 80081.03`).
    BuiltIn {
        name: "clocks",
        pattern: r"(?i)(?-u:\b)(clocks?|cycles?)(?-u:\b)([\s:=()/a-zA-Z]{0,12}?)\d+(?:\.\d+)?(?:[eE][-+]?\d+)?",
        example: "Average clocks/block = 80081.031250, cycles: 1234",
        replacement: "${1}${2}<clocks>",
    },
    BuiltIn {
        name: "addresses",
        pattern: r"0[xX][0-9a-fA-F]{5,}",
        example: "0x7ffd4a2b1c30",
        replacement: "0x<address>",
    },
    BuiltIn {
        name: "pids",
        pattern: r"(?i)(?-u:\b)(pid|process)(\s*[:=#]?\s*)\d+",
        example: "pid 4242, PID=4242",
        replacement: "${1}${2}<pid>",
    },
];

/// One mask, ready to apply.
#[derive(Clone, Debug)]
struct Mask {
    /// The rule as reports name it: a built-in's name, or a user's `mask REGEX`.
    name: String,
    regex: Regex,
    replacement: String,
}

/// One output line a mask changed, for the report: which line, as printed, and by which rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskedLine {
    /// From 1.
    pub line: usize,
    /// The line as printed (bytes that are not UTF-8 as U+FFFD).
    pub text: String,
    /// The rules that changed it, in the order they apply.
    pub rules: Vec<String>,
}

/// The masks of a gate run.
#[derive(Clone, Debug, Default)]
pub struct Masks {
    masks: Vec<Mask>,
}

impl Masks {
    /// The built-in masks (unless `builtin` is false) and then `user`'s, each a regex whose
    /// matches become `<masked>`. A regex that does not compile is bad input.
    pub fn new(user: &[String], builtin: bool) -> Result<Masks> {
        let mut masks = Vec::new();
        if builtin {
            for b in BUILT_IN {
                masks.push(Mask {
                    name: b.name.to_string(),
                    regex: Regex::new(b.pattern).expect("built-in masks compile"),
                    replacement: b.replacement.to_string(),
                });
            }
        }
        for u in user {
            let regex = Regex::new(u)
                .map_err(|e| Error::Usage(format!("--mask `{u}` is not a regex: {e}")))?;
            masks.push(Mask {
                name: format!("mask `{u}`"),
                regex,
                replacement: "<masked>".into(),
            });
        }
        Ok(Masks { masks })
    }

    /// `output` with every mask applied, in order.
    pub fn apply(&self, output: &[u8]) -> Vec<u8> {
        let mut out = output.to_vec();
        for m in &self.masks {
            out = m
                .regex
                .replace_all(&out, m.replacement.as_bytes())
                .into_owned();
        }
        out
    }

    /// The lines of `output` a mask changes, each with the rules that changed it, in order.
    pub fn masked_lines(&self, output: &[u8]) -> Vec<MaskedLine> {
        let mut out = Vec::new();
        for (i, line) in output.split(|b| *b == b'\n').enumerate() {
            let mut now = line.to_vec();
            let mut rules = Vec::new();
            for m in &self.masks {
                let next = m.regex.replace_all(&now, m.replacement.as_bytes());
                if next.as_ref() != now.as_slice() {
                    rules.push(m.name.clone());
                    now = next.into_owned();
                }
            }
            if !rules.is_empty() {
                out.push(MaskedLine {
                    line: i + 1,
                    text: bytes_as_text(line),
                    rules,
                });
            }
        }
        out
    }

    /// These masks and then `extra` (a `[[program]]`'s own `masks`).
    pub fn extended(&self, extra: &[String]) -> Result<Masks> {
        let mut more = Masks::new(extra, false)?;
        let mut masks = self.masks.clone();
        masks.append(&mut more.masks);
        Ok(Masks { masks })
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.masks.is_empty()
    }
}

/// Bytes as text, each byte that is not UTF-8 shown as `\xNN` (not U+FFFD, which would hide
/// which byte it was and make two different outputs read the same). Control characters are left
/// to the printing side (`report::visible::visible`).
pub fn bytes_as_text(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.push_str(chunk.valid());
        for x in chunk.invalid() {
            // ignored: writing to a String cannot fail.
            let _ = write!(out, "\\x{x:02x}");
        }
    }
    out
}

/// A unified diff of two outputs (after masking), at most `max_lines` lines; bytes that are not
/// UTF-8 are shown as `\xNN` ([`bytes_as_text`]).
pub fn unified_diff(a: &[u8], b: &[u8], a_name: &str, b_name: &str, max_lines: usize) -> String {
    let (a, b) = (bytes_as_text(a), bytes_as_text(b));
    let text = similar::TextDiff::from_lines(a.as_str(), b.as_str())
        .unified_diff()
        .context_radius(3)
        .header(a_name, b_name)
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return text;
    }
    format!(
        "{}\n... ({} more lines)\n",
        lines[..max_lines].join("\n"),
        lines.len() - max_lines
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(s: &str) -> String {
        String::from_utf8(Masks::new(&[], true).unwrap().apply(s.as_bytes())).unwrap()
    }

    #[test]
    fn each_built_in_masks_its_example() {
        for b in BUILT_IN {
            let m = Regex::new(b.pattern).unwrap();
            for ex in b.example.split(", ") {
                assert!(m.is_match(ex.as_bytes()), "{}: {ex}", b.name);
            }
        }
    }

    #[test]
    fn a_number_glued_to_a_label_is_not_taken_for_the_duration() {
        let line = "Time for asynchronous V1 transfer and execute (ms): 0.548544";
        assert_eq!(masked(line), line);
        assert_eq!(masked("Elapsed time: 3.5"), "Elapsed time: <duration>");
    }

    #[test]
    fn timings_are_masked() {
        assert_eq!(masked("Passed 0.41 sec"), masked("Passed 12.93 sec"));
        assert_eq!(masked("kernel took 12ms"), "kernel took <duration>");
        assert_eq!(
            masked("[2026-11-29 21:41:04.123] start"),
            "[<timestamp>] start"
        );
        assert_eq!(masked("at 09:15:02"), "at <timestamp>");
        assert_eq!(masked("buf=0x7ffd4a2b1c30"), "buf=0x<address>");
        assert_eq!(masked("child pid 4242 done"), "child pid <pid> done");
        assert_eq!(masked("PID=17"), "PID=<pid>");
    }

    /// Timing and speed lines real CUDA programs print (each quoted from correct
    /// programs flagged for output variance): two runs differing only in these numbers must
    /// compare equal after masking.
    #[test]
    fn timing_and_speed_lines_of_real_programs_are_masked() {
        let lines = [
            ("Time= 15.941 msec", "Time= 9.5 msec"),
            ("GPU time: 110.149002 msecs.", "GPU time: 99.1 msecs."),
            ("Time (ms): 188.152359", "Time (ms): 17.2"),
            (
                "Processing time: 86.957001 (ms)",
                "Processing time: 86.1 (ms)",
            ),
            ("Throughput = 5.0572 GB/s", "Throughput = 6.1 GB/s"),
            ("Bandwidth 218907.6000 MB/sec", "Bandwidth 218000.1 MB/sec"),
            ("Performance= 263.12 GFlop/s", "Performance= 200.5 GFlop/s"),
            ("0.348313 MegaElements/s", "0.41 MegaElements/s"),
            (
                "Throughput: 0.000354 gigaedges/s",
                "Throughput: 0.0004 gigaedges/s",
            ),
            (
                "Average clocks/block = 80081.031250",
                "Average clocks/block = 79000.5",
            ),
            (
                "time spent executing by the GPU: 34.40",
                "time spent executing by the GPU: 31.02",
            ),
            (
                "Gigaoptions per second    : 56.965634     ",
                "Gigaoptions per second    : 93.150186     ",
            ),
            ("56.9 options per second", "93 options per second"),
            (
                "CPU executed 45020 iterations while waiting for GPU to finish",
                "CPU executed 33239 iterations while waiting for GPU to finish",
            ),
        ];
        for (a, b) in lines {
            assert_eq!(masked(a), masked(b), "{a:?} vs {b:?}");
            assert_ne!(masked(a), a, "{a:?} not masked");
        }
        // Lines that say nothing of time keep their numbers.
        for keep in [
            "counter: 1 expected: 51200",
            "sum = 0.996214",
            "Test passed",
            "n = 1048576 elements, 256 threads/block",
            "max error 3.2e-06",
            "Options count             : 8000000     ",
            "waited 3 times, result 42",
            "per-block sums: 12 13 14",
            "second pass: 7 errors",
            // A word the masks look for, beside a number that is a result: kept.
            "FAILED after time limit; mismatches: 17",
            "counter: 51200 waiting for flush",
            "mismatch at element 5 while waiting for ack",
            "Clock mismatch at index 12",
            "Result per second batch: 7",
            "elapsed, errors: 3",
        ] {
            assert_eq!(masked(keep), keep);
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_by_value() {
        for x in 0x80u8..=0xff {
            let line = [b'a', x, b'b'];
            let shown = bytes_as_text(&line);
            if std::str::from_utf8(&line).is_err() {
                assert_eq!(shown, format!("a\\x{x:02x}b"));
            }
        }
        assert_eq!(bytes_as_text("é ok".as_bytes()), "é ok");
        // Two outputs that differ only in an invalid byte still read differently in the diff.
        let d = unified_diff(b"v \xfe\n", b"v \xff\n", "run 1", "run 2", 20);
        assert!(d.contains("-v \\xfe") && d.contains("+v \\xff"), "{d}");
    }

    #[test]
    fn other_numbers_stay() {
        assert_ne!(
            masked("counter: 1 expected: 51200"),
            masked("counter: 51200")
        );
        assert_eq!(
            masked("counter: 1 expected: 51200"),
            "counter: 1 expected: 51200"
        );
        assert_eq!(
            masked("3 steps, 0x1c30, 7 hazards"),
            "3 steps, 0x1c30, 7 hazards"
        );
    }

    #[test]
    fn masked_lines_name_their_rules_and_nothing_else_is_listed() {
        let m = Masks::new(&["seed [0-9]+".into()], true).unwrap();
        let out =
            b"Test passed\nTime= 15.941 msec\nseed 42 took 3 ms\ncounter: 1 expected: 51200\n\
                    Throughput = 5.0572 GB/s\nAverage clocks/block = 80081.031250\nsum = 0.996214";
        let got: Vec<(usize, Vec<String>)> = m
            .masked_lines(out)
            .into_iter()
            .map(|l| (l.line, l.rules))
            .collect();
        let rules = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            [
                (2, rules(&["durations"])),
                (3, rules(&["durations", "mask `seed [0-9]+`"])),
                (5, rules(&["rates"])),
                (6, rules(&["clocks"])),
            ]
        );
        assert_eq!(m.masked_lines(out)[0].text, "Time= 15.941 msec");
        assert!(Masks::new(&[], false).unwrap().masked_lines(out).is_empty());
    }

    #[test]
    fn user_masks_apply_after_and_bad_ones_are_refused() {
        let m = Masks::new(&["seed [0-9]+".into()], true).unwrap();
        assert_eq!(m.apply(b"seed 42 in 3 s"), b"<masked> in <duration>");
        assert!(Masks::new(&["(".into()], true).is_err());
        assert!(Masks::new(&[], false).unwrap().is_empty());
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_and_masked_around() {
        let m = Masks::new(&[], true).unwrap();
        assert_eq!(m.apply(b"\xff\xfe took 3 ms"), b"\xff\xfe took <duration>");
    }

    #[test]
    fn the_diff_is_unified_and_bounded() {
        let d = unified_diff(b"a\nb\nc\n", b"a\nB\nc\n", "run 1", "run 2", 50);
        assert!(d.starts_with("--- run 1\n+++ run 2\n@@"), "{d}");
        assert!(d.contains("-b\n+B\n"), "{d}");
        let long: Vec<u8> = (0..100)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let d = unified_diff(b"", &long, "a", "b", 10);
        assert!(d.ends_with("more lines)\n"), "{d}");
    }
}
