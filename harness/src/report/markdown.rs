//! Markdown: the course table of `check`, the gate summary for `$GITHUB_STEP_SUMMARY`, and the
//! benchmark table. Table cells replace `|` with `/`, since an escaped pipe renders
//! differently across markdown engines.

use std::fmt::Write;

use crate::gate::finding::summary;
use crate::gate::{Diff, GateRun};
use crate::judge::check::{Cell, Judgement, Matrix, Observed};
use crate::run::bench::BenchRow;
use crate::source::catalog::{Catalog, Detector, Expect};

/// The course table: rows are cases, columns detectors, cells the measured result.
pub fn course_table(m: &Matrix, catalog: &Catalog) -> String {
    // The detectors the matrix ran, in their order (the matrix leaves streamcheck out).
    let ran: Vec<Detector> = Detector::ALL
        .into_iter()
        .filter(|d| m.cells.iter().any(|c| c.detector == *d))
        .collect();
    let mut out = String::from("| case | ");
    out.push_str(&ran.iter().map(|d| d.name()).collect::<Vec<_>>().join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(ran.len()));
    out.push('\n');
    // Catalog order, not matrix order: the table reads like the course, kernel then variants.
    for case in &catalog.cases {
        let row: Vec<&Cell> = m.cells.iter().filter(|c| c.case == case.name).collect();
        if row.is_empty() {
            continue;
        }
        out.push_str(&format!("| `{}` |", case.name));
        for &d in &ran {
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

/// The course table of a `check` that could not run (no CUDA device): the same rows and columns,
/// each cell what the header expects and that it was not run, and why, under the table.
pub fn course_table_not_run(cases: &[&crate::source::case::Case], why: &str) -> String {
    let mut out = String::from("| case | ");
    let names: Vec<&str> = Detector::ALL.iter().map(|d| d.name()).collect();
    out.push_str(&names.join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(Detector::ALL.len()));
    out.push('\n');
    for c in cases {
        out.push_str(&format!("| `{}` |", c.name));
        for d in Detector::ALL {
            out.push_str(&format!(" not run (expects {:?}) |", c.expectation(d)).to_lowercase());
        }
        out.push('\n');
    }
    out.push_str(&format!("\nNothing ran: {}.\n", why.replace('|', "/")));
    out
}

/// The gate's verdict, counts, and a table per kind of finding, for `$GITHUB_STEP_SUMMARY`;
/// an output diff goes in a collapsed block under the table.
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
        "{verdict} — {} new, {} accepted in the baseline, {} fixed, {} stale, {} inconclusive ({:.0} s)\n\n",
        d.new.len(),
        d.accepted.len(),
        d.fixed.len(),
        d.stale.len(),
        run.inconclusive.len(),
        run.seconds
    );
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
                "| {} | {} | `{}` | {} |",
                f.subject(),
                f.detector(),
                f.location(),
                f.message.replace('|', "/")
            );
        }
        s.push('\n');
        for f in list.iter().filter(|f| f.detail.is_some()) {
            let _ = write!(
                s,
                "<details><summary>{} [{}]</summary>\n\n```diff\n{}```\n\n</details>\n\n",
                f.subject(),
                f.detector(),
                f.detail.as_deref().unwrap_or("")
            );
        }
    }
    for (title, list) in [
        (
            "Fixed (remove from the baseline with `racegate gate --update-baseline`)",
            &d.fixed,
        ),
        (
            "Stale (kernels no longer in the manifest; `--update-baseline` drops them)",
            &d.stale,
        ),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = write!(s, "### {title}\n\n");
        for a in list.iter() {
            let _ = writeln!(
                s,
                "- {} / {}: {}",
                a.id.subject,
                a.id.detector,
                summary(&a.id)
            );
        }
        s.push('\n');
    }
    for n in &run.notes {
        let _ = writeln!(s, "- note: {n}");
    }
    for i in &run.inconclusive {
        let _ = writeln!(
            s,
            "- ⚠️ {} / {}: inconclusive: {}",
            i.subject, i.detector, i.reason
        );
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
        let d = crate::gate::diff(&run, &fixtures::baseline(), true);
        let s = gate_summary(&run, &d);
        assert!(s.contains("❌ **failed**: new findings — 1 new, 1 accepted in the baseline, 1 fixed, 1 stale, 1 inconclusive (3 s)"), "{s}");
        assert!(
            s.contains("| b | stress | `kernels/k.cu` | stress found it (detail) |"),
            "{s}"
        );
        assert!(
            s.contains("| a | racecheck | `kernels/k.cu:12` | racecheck found it (detail) |"),
            "{s}"
        );
        assert!(
            s.contains("- a / racecheck: Analysis: Race condition in a: `t[i]=0;`\n"),
            "{s}"
        );
        assert!(s.contains("- gone / racecheck: "), "{s}");
        assert!(
            s.ends_with("- ⚠️ c / memcheck: inconclusive: no sanitizer\n"),
            "{s}"
        );
    }

    #[test]
    fn an_output_diff_is_a_collapsed_block() {
        let mut run = fixtures::gate_run();
        run.findings[1].detail = Some("--- run 1\n+++ run 2\n-a\n+b\n".into());
        let d = crate::gate::diff(&run, &fixtures::baseline(), true);
        let s = gate_summary(&run, &d);
        assert!(
            s.contains("<details><summary>b [stress]</summary>\n\n```diff\n--- run 1\n"),
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
