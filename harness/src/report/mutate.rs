//! `racegate mutate`: the mutants as a list with their diffs, or, after `--run`, what happened to
//! each, the score per kernel and per operator, and every survivor with its diff (to fix the gate,
//! or to mark it equivalent with a reason).

use std::fmt::Write;

use crate::mutate::score::KernelResult;
use crate::mutate::{MutationReport, OperatorScore, Outcome};

fn rate(s: &OperatorScore) -> String {
    s.kill_rate
        .map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
}

/// A table, left-aligned, two spaces between columns.
fn table(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

fn score_row(name: &str, s: &OperatorScore, wall: Option<f64>) -> Vec<String> {
    let mut row = vec![
        name.to_string(),
        s.mutants.to_string(),
        s.killed.to_string(),
        s.timed_out.to_string(),
        s.survived.to_string(),
        s.stillborn.to_string(),
        s.equivalent.to_string(),
        s.inconclusive.to_string(),
        rate(s),
    ];
    if let Some(w) = wall {
        row.push(format!("{w:.1}s"));
    }
    row
}

const HEAD: [&str; 9] = [
    "MUTANTS",
    "KILLED",
    "TIMED-OUT",
    "SURVIVED",
    "STILLBORN",
    "EQUIVALENT",
    "INCONCLUSIVE",
    "KILL RATE",
    "WALL",
];

/// Without `--run`: every mutant, its line and its diff.
pub fn listing(r: &MutationReport) -> String {
    let mut out = String::new();
    for k in &r.kernels {
        let cases = match k.cases.is_empty() {
            true => "no case: nothing to run it as".to_string(),
            false => k.cases.join(", "),
        };
        let _ = writeln!(out, "{} ({cases}): {} mutant(s)", k.kernel, k.mutants.len());
        for m in &k.mutants {
            let note = match &m.outcome {
                Outcome::Stillborn { log } => format!("  stillborn: {log}"),
                Outcome::Equivalent { reason } => format!("  equivalent: {reason}"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "\n{}  {}:{}{note}",
                m.mutant.id, m.mutant.file, m.mutant.line
            );
            out.push_str(&m.diff);
        }
        for w in &k.stale_equivalents {
            let _ = writeln!(out, "warning: {w}");
        }
        if let Some(line) = unreachable(k) {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{} mutant(s) of {} kernel(s), {} stillborn; operators: {}",
        r.total.mutants,
        r.kernels.len(),
        r.total.stillborn,
        r.operators
            .iter()
            .map(|o| o.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    out
}

/// After `--run`: each mutant's outcome, the scores, the survivors with their diffs.
pub fn summary(r: &MutationReport) -> String {
    let mut out = String::new();
    for k in &r.kernels {
        let _ = writeln!(
            out,
            "{} ({}), {:.1}s wall",
            k.kernel,
            k.cases.join(", "),
            k.wall_seconds
        );
        if let Some(c) = &k.control {
            match c.flagged_by {
                Some(d) => {
                    let _ = writeln!(
                        out,
                        "  CONTROL FLAGGED by {d}: {} (the unmutated kernel fails the battery; its \
                         mutants' outcomes mean nothing)",
                        c.detail
                    );
                }
                None => {
                    let _ = writeln!(out, "  control: {} ({:.1}s)", c.detail, c.seconds);
                }
            }
        }
        for m in &k.mutants {
            let how = match &m.outcome {
                Outcome::Killed { by, detail } => format!("killed by {by}: {detail}"),
                Outcome::TimedOut { by } => format!("timed-out under {by} (a hang: detected)"),
                Outcome::Stillborn { log } => format!("stillborn: {log}"),
                Outcome::Equivalent { reason } => format!("equivalent: {reason}"),
                Outcome::Inconclusive { why } => format!("inconclusive: {why}"),
                o => o.name().to_string(),
            };
            let _ = writeln!(out, "  {:<52} {:>6.1}s  {how}", m.mutant.id, m.seconds);
        }
        for w in &k.stale_equivalents {
            let _ = writeln!(out, "  warning: {w}");
        }
        if let Some(line) = unreachable(k) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let mut rows = vec![std::iter::once("KERNEL")
        .chain(HEAD)
        .map(String::from)
        .collect()];
    rows.extend(
        r.kernels
            .iter()
            .map(|k| score_row(&k.kernel, &k.score, Some(k.wall_seconds))),
    );
    let _ = write!(out, "\nper kernel:\n{}", table(&rows));
    let mut rows = vec![std::iter::once("OPERATOR")
        .chain(HEAD[..8].iter().copied())
        .map(String::from)
        .collect()];
    rows.extend(
        r.per_operator
            .iter()
            .map(|s| score_row(&s.operator, s, None)),
    );
    rows.push(score_row("all", &r.total, None));
    let _ = write!(out, "\nper operator:\n{}", table(&rows));
    let _ = writeln!(out, "\nfirst detection by: {}", by_detector(r));
    let survivors: Vec<_> = r.survivors().collect();
    if !survivors.is_empty() {
        let _ = writeln!(
            out,
            "\n{} survivor(s): each is a hole in the gate, or harmless; mark a harmless one in the \
             kernel's KERNEL.cu.equivalent.toml with its id and the reason:",
            survivors.len()
        );
        for (_, m) in &survivors {
            let _ = writeln!(
                out,
                "\n{}  {}:{}",
                m.mutant.id, m.mutant.file, m.mutant.line
            );
            out.push_str(&m.diff);
        }
    }
    let _ = writeln!(
        out,
        "\nkill rate {} ({} killed, {} timed out, {} survived of {} scored; {} stillborn, {} \
         equivalent, {} inconclusive), {:.1}s wall",
        rate(&r.total),
        r.total.killed,
        r.total.timed_out,
        r.total.survived,
        r.total.scored(),
        r.total.stillborn,
        r.total.equivalent,
        r.total.inconclusive,
        r.wall_seconds
    );
    out
}

/// How many mutants each detector caught first, in the battery's order: `stress 40, racecheck 5`.
fn by_detector(r: &MutationReport) -> String {
    let mut counts: Vec<(crate::source::catalog::Detector, usize)> = Vec::new();
    for m in r.kernels.iter().flat_map(|k| k.mutants.iter()) {
        if let Outcome::Killed { by, .. } | Outcome::TimedOut { by } = &m.outcome {
            match counts.iter_mut().find(|(d, _)| d == by) {
                Some((_, n)) => *n += 1,
                None => counts.push((*by, 1)),
            }
        }
    }
    counts.sort();
    let parts: Vec<String> = counts.iter().map(|(d, n)| format!("{d} {n}")).collect();
    match parts.is_empty() {
        true => "none".into(),
        false => parts.join(", "),
    }
}

fn md_row(cells: &[String]) -> String {
    // A `|` inside a cell (a detail, a diff line) would split it: shown as `/`, as the other
    // markdown tables do.
    let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "/")).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// After `--run`, for `docs/`: the score per kernel and per operator, every mutant's outcome,
/// and the survivors' diffs, as markdown.
pub fn markdown(r: &MutationReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Kill rate **{}**: {} killed, {} timed out, {} survived of {} scored mutants ({} stillborn, \
         {} equivalent, {} inconclusive); {:.1} s wall.\n",
        rate(&r.total),
        r.total.killed,
        r.total.timed_out,
        r.total.survived,
        r.total.scored(),
        r.total.stillborn,
        r.total.equivalent,
        r.total.inconclusive,
        r.wall_seconds
    );
    let head = |first: &str, n: usize| {
        let cells: Vec<String> = std::iter::once(first)
            .chain(HEAD[..n].iter().copied())
            .map(|c| c.to_lowercase())
            .collect();
        md_row(&cells) + &md_row(&vec!["---".to_string(); cells.len()])
    };
    out.push_str(&head("kernel", 9));
    for k in &r.kernels {
        let mut row = score_row(&format!("`{}`", k.kernel), &k.score, Some(k.wall_seconds));
        if k.control.as_ref().is_some_and(|c| c.flagged_by.is_some()) {
            row[0].push_str(" (control flagged)");
        }
        out.push_str(&md_row(&row));
    }
    out.push('\n');
    out.push_str(&head("operator", 8));
    for s in &r.per_operator {
        out.push_str(&md_row(&score_row(&format!("`{}`", s.operator), s, None)));
    }
    out.push_str(&md_row(&score_row("**all**", &r.total, None)));
    let _ = writeln!(out, "\nFirst detection by: {}.", by_detector(r));
    out.push_str("\n| mutant | line | outcome | detector | seconds |\n|---|---|---|---|---|\n");
    for k in &r.kernels {
        for m in &k.mutants {
            let by = match &m.outcome {
                Outcome::Killed { by, .. } | Outcome::TimedOut { by } => by.name(),
                _ => "-",
            };
            out.push_str(&md_row(&[
                format!("`{}`", m.mutant.id),
                format!("{}:{}", m.mutant.file, m.mutant.line),
                m.outcome.name().to_string(),
                by.to_string(),
                format!("{:.1}", m.seconds),
            ]));
        }
    }
    let survivors: Vec<_> = r.survivors().collect();
    if !survivors.is_empty() {
        let _ = writeln!(out, "\n### Survivors\n");
        for (_, m) in survivors {
            let _ = writeln!(out, "`{}`\n\n```diff\n{}```\n", m.mutant.id, m.diff);
        }
    }
    out
}

/// `not mutated: not reachable from any tested entry: f, g`, for a kernel whose file holds
/// `__global__` functions no tested entry reaches; `None` when there are none.
fn unreachable(k: &KernelResult) -> Option<String> {
    (!k.unreachable.is_empty()).then(|| {
        format!(
            "not mutated: not reachable from any tested entry: {}",
            k.unreachable.join(", ")
        )
    })
}
