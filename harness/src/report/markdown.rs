//! Markdown: the course table of `check`, the gate summary for `$GITHUB_STEP_SUMMARY`, and the
//! benchmark table. Table cells replace `|` with `/`, since an escaped pipe renders
//! differently across markdown engines.

use std::fmt::Write;

use crate::bench::BenchRow;
use crate::catalog::{Catalog, Detector, Expect};
use crate::check::{Cell, Judgement, Matrix, Observed};
use crate::gate::{Diff, GateFinding, GateRun};

/// The course table: rows are cases, columns detectors, cells the measured result.
pub fn course_table(m: &Matrix, catalog: &Catalog) -> String {
    let mut out = String::from("| case | ");
    out.push_str(
        &Detector::ALL
            .iter()
            .map(|d| d.name())
            .collect::<Vec<_>>()
            .join(" | "),
    );
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(Detector::ALL.len()));
    out.push('\n');
    // Catalog order, not matrix order: the table reads like the course, kernel then variants.
    for case in &catalog.cases {
        let row: Vec<&Cell> = m.cells.iter().filter(|c| c.case == case.name).collect();
        if row.is_empty() {
            continue;
        }
        out.push_str(&format!("| `{}` |", case.name));
        for d in Detector::ALL {
            let text = match row.iter().find(|c| c.detector == d) {
                None => " |".to_string(),
                Some(c) => {
                    let (what, flagged) = match &c.observed {
                        Observed::Flagged(s) => (s.clone(), true),
                        Observed::Clean(s) => (s.clone(), false),
                        Observed::Inconclusive(s) => (format!("inconclusive: {s}"), false),
                    };
                    let mark = match (c.judgement, c.expect, flagged) {
                        (Judgement::Missed, ..) => "❌ missed: ",
                        (Judgement::Unexpected, ..) => "❌ ",
                        (Judgement::Inconclusive, ..) => "⚠️ ",
                        (Judgement::Ok, Expect::Flag, _) => "✅ ",
                        (Judgement::Ok, Expect::May, true) => "➕ ",
                        _ => "",
                    };
                    format!(" {mark}{} |", what.replace('|', "/"))
                }
            };
            out.push_str(&text);
        }
        out.push('\n');
    }
    out.push_str(
        "\n✅ caught, as its header promises · ➕ caught, though not promised · ❌ a broken promise · \
         ⚠️ inconclusive · plain: nothing to catch, and nothing reported. Stress cells: wrong trials / \
         trials; watchdog: whether a trial hung.\n",
    );
    out
}

/// The gate's verdict, counts, and a table per kind of finding, for `$GITHUB_STEP_SUMMARY`.
pub fn gate_summary(run: &GateRun, d: &Diff) -> String {
    let mut s = String::from("## racegate gate\n\n");
    let verdict = if !d.new.is_empty() {
        "❌ **failed**: new findings"
    } else if !run.inconclusive.is_empty() {
        "⚠️ **inconclusive**"
    } else {
        "✅ **passed**"
    };
    let _ = write!(
        s,
        "{verdict} — {} new, {} accepted in the baseline, {} fixed, {} inconclusive ({:.0} s)\n\n",
        d.new.len(),
        d.accepted.len(),
        d.fixed.len(),
        run.inconclusive.len(),
        run.seconds
    );
    let loc = |f: &GateFinding| match f.line {
        Some(l) => format!("`{}:{l}`", f.file),
        None => format!("`{}`", f.file),
    };
    for (title, list) in [
        ("New findings", &d.new),
        ("Accepted (in the baseline)", &d.accepted),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = write!(
            s,
            "### {title}\n\n| subject | detector | where | finding |\n|---|---|---|---|\n"
        );
        for f in list.iter() {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                f.subject,
                f.detector,
                loc(f),
                f.message.replace('|', "/")
            );
        }
        s.push('\n');
    }
    if !d.fixed.is_empty() {
        s.push_str(
            "### Fixed (remove from the baseline with `racegate gate --update-baseline`)\n\n",
        );
        for a in &d.fixed {
            let _ = writeln!(s, "- {} / {}: {}", a.subject, a.detector, a.key);
        }
        s.push('\n');
    }
    for (subject, det, why) in &run.inconclusive {
        let _ = writeln!(s, "- ⚠️ {subject} / {det}: inconclusive: {why}");
    }
    s
}

/// The benchmark: per kernel, a bare launch against a stress trial, with and without jitter.
pub fn bench_table(rows: &[BenchRow]) -> String {
    let mut out = String::from(
        "| case | problem | bare launch (µs) | stress trial (µs) | ratio | stress trial, jitter (µs) | ratio, jitter | new input set (µs) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {:.1} | {:.1} | {:.2}x | {:.1} | {:.2}x | {:.0} |",
            r.case,
            r.problem,
            r.bare_us,
            r.stress_us,
            r.ratio,
            r.stress_jitter_us,
            r.ratio_jitter,
            r.new_set_us
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn gate_summary_fails_on_new_findings_and_lists_every_kind() {
        let run = fixtures::gate_run();
        let d = crate::gate::diff(&run, &fixtures::baseline());
        let s = gate_summary(&run, &d);
        assert!(s.contains("❌ **failed**: new findings — 1 new, 1 accepted in the baseline, 1 fixed, 1 inconclusive (3 s)"), "{s}");
        assert!(
            s.contains("| b | stress | `kernels/k.cu` | wrong (detail) |"),
            "{s}"
        );
        assert!(
            s.contains("| a | racecheck | `kernels/k.cu:12` | race at 12 (detail) |"),
            "{s}"
        );
        assert!(s.contains("- a / racecheck: race at 40\n"), "{s}");
        assert!(
            s.ends_with("- ⚠️ c / memcheck: inconclusive: no sanitizer\n"),
            "{s}"
        );
    }

    #[test]
    fn bench_rows_keep_their_precision() {
        let row = BenchRow {
            case: "reduce".into(),
            problem: "n=4194304".into(),
            bare_us: 10.04,
            stress_us: 20.06,
            stress_jitter_us: 30.0,
            ratio: 2.0,
            ratio_jitter: 3.0,
            new_set_us: 1234.5,
        };
        assert!(bench_table(&[row])
            .ends_with("| `reduce` | n=4194304 | 10.0 | 20.1 | 2.00x | 30.0 | 3.00x | 1234 |\n"));
    }
}
