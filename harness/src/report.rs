//! Report stage: renders catalogs and verdicts for people. JSON output is serde's.

use std::fmt::Write;

use crate::catalog::{Catalog, Detector, Expect};
use crate::sanitize::{Outcome, SanitizerRun};
use crate::stress::{StressReport, Verdict};
use crate::trial::TrialResult;

/// `racegate list`: one row per case.
pub fn catalog_table(catalog: &Catalog) -> String {
    let mut rows = vec![[
        "CASE".to_string(),
        "EXERCISE".to_string(),
        "FILE".to_string(),
        "MUST FLAG".to_string(),
        "BUG".to_string(),
    ]];
    for c in &catalog.cases {
        let flag: Vec<&str> = Detector::ALL
            .iter()
            .filter(|d| c.expectation(**d) == Expect::Flag)
            .map(|d| d.name())
            .collect();
        let file = match &c.bug {
            Some(b) => format!("{}:{}", c.path, b.wrong_line),
            None => c.path.clone(),
        };
        rows.push([
            c.name.clone(),
            c.exercise.clone(),
            file,
            match (&c.bug, flag.is_empty()) {
                (None, _) => "- (clean everywhere)".into(),
                (Some(_), true) => "none: escapes (see header)".into(),
                (Some(_), false) => flag.join(","),
            },
            c.bug
                .as_ref()
                .map(|b| b.class.clone())
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        for (i, w) in widths.iter().enumerate() {
            let _ = write!(out, "{:<w$}  ", r[i], w = *w);
        }
        let _ = writeln!(out, "{}", r[4]);
    }
    let variants = catalog.cases.iter().filter(|c| c.is_variant()).count();
    let _ = writeln!(
        out,
        "\n{} cases: {} kernels expected clean, {} buggy variants, in {} files",
        catalog.cases.len(),
        catalog.cases.len() - variants,
        variants,
        catalog.files().len()
    );
    out
}

/// A stress report for people.
pub fn stress(r: &StressReport) -> String {
    let mut out = String::new();
    let jitter = if r.jitter { "jitter on" } else { "jitter off" };
    let head = match &r.verdict {
        Verdict::Pass => "PASS".to_string(),
        Verdict::Fail => "FAIL".to_string(),
        Verdict::Hang {
            deadline_s,
            left_behind,
        } => format!(
            "HANG (no result within {deadline_s:.0} s; process group killed{})",
            if *left_behind {
                ", BUT SOME PROCESS SURVIVED"
            } else {
                ", nothing left running"
            }
        ),
        Verdict::Fault { error } => format!("FAULT ({error})"),
    };
    let _ = writeln!(
        out,
        "{} [{jitter}, size {}, seed {}]: {head}",
        r.case, r.size, r.seed
    );
    let _ = write!(
        out,
        "  trials {}/{}, failures {}, rate {:.1}%",
        r.trials_run,
        r.trials_requested,
        r.failures,
        100.0 * r.rate
    );
    if let Some(ub) = r.upper_bound_95 {
        let _ = write!(out, " (95% upper bound on the rate: {:.2}%)", 100.0 * ub);
    }
    let _ = writeln!(out, ", {:.1} s", r.seconds);
    if let Some(f) = &r.first_failure {
        let _ = writeln!(
            out,
            "  first failure: trial {} seed {} ({})",
            f.trial, f.seed, f.problem
        );
        if let TrialResult::Wrong(w) = &f.result {
            let what = if w.input_modified {
                "input modified"
            } else {
                "wrong elements"
            };
            let _ = writeln!(
                out,
                "  {what} in `{}`: {} of {}",
                w.buffer, w.wrong, w.total
            );
            for m in &w.first {
                let _ = writeln!(
                    out,
                    "    [{}] expected {}, got {}",
                    m.index, m.expected, m.actual
                );
            }
            for l in w.diff.lines() {
                let _ = writeln!(out, "    {l}");
            }
        }
    }
    if let Some(repro) = &r.repro {
        let _ = writeln!(out, "  reproduce: {repro}");
    }
    out
}

/// A sanitizer run for people.
pub fn sanitizer(r: &SanitizerRun) -> String {
    let mut out = String::new();
    let head = match &r.outcome {
        Outcome::Clean => "CLEAN".to_string(),
        Outcome::Findings(f) => format!("{} FINDING(S)", f.len()),
        Outcome::Hang { left_behind, said } => format!(
            "HANG (killed at the deadline{}){}",
            if *left_behind {
                ", BUT SOME PROCESS SURVIVED"
            } else {
                ", nothing left running"
            },
            said.as_ref()
                .map(|s| format!("; the tool said: {s}"))
                .unwrap_or_default()
        ),
        Outcome::Inconclusive(why) => format!("INCONCLUSIVE: {why}"),
    };
    let _ = writeln!(
        out,
        "{} [{}]: {head} ({}, {:.1} s)",
        r.case, r.tool, r.exit, r.seconds
    );
    if let Outcome::Findings(f) = &r.outcome {
        for x in f {
            let _ = writeln!(out, "  {}", x.line());
        }
    }
    out
}
