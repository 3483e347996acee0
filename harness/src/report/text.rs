//! Plain text for a terminal: the catalog, a stress run, a sanitizer run, and the closing
//! lines of `check` and `gate`. Every function returns the text; the CLI decides where it goes.
//!
//! ```no_run
//! let root = racegate::build::toolchain::find_root(std::path::Path::new(".")).unwrap();
//! let catalog = racegate::source::catalog::Catalog::discover(&root)?;
//! print!("{}", racegate::report::text::catalog_table(&catalog));
//! # Ok::<(), racegate::Error>(())
//! ```

use std::fmt::Write;
use std::path::Path;

use crate::gate::finding::summary;
use crate::gate::{Baseline, Diff, GateRun};
use crate::judge::check::{Evidence, Judgement, Matrix};
use crate::judge::perf::expect::{Judged, Outcome as PerfOutcome};
use crate::judge::sanitize::{Outcome, SanitizerRun};
use crate::run::stress::{StressReport, Verdict};
use crate::run::trial::TrialResult;
use crate::source::catalog::{Catalog, Detector, Expect};

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
    } else if r.failures > 0 {
        let (lo, hi) = crate::run::stress::wilson_95(r.failures, r.trials_run);
        let _ = write!(out, " (95% CI {:.1}%-{:.1}%)", 100.0 * lo, 100.0 * hi);
    }
    let _ = writeln!(out, ", {:.1} s", r.seconds);
    if let (Some(t), Some(s)) = (r.first_failing_trial(), r.first_detection_seconds) {
        let _ = writeln!(out, "  first detected at trial {t}, {s:.2} s into the run");
    }
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
            if let Some(c) = &w.cause {
                let _ = writeln!(out, "  cause: {c}");
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

/// The run behind a check cell, as `racegate stress` or `racegate sanitize` would show it.
pub fn evidence(e: &Evidence) -> String {
    match e {
        Evidence::Stress(r) => stress(r),
        Evidence::Sanitizer(r) => sanitizer(r),
    }
}

/// The end of `racegate check`: every cell that is not ok with its run's report, the counts,
/// and where the process time went.
pub fn check_summary(m: &Matrix) -> String {
    let mut out = String::new();
    for c in m.cells.iter().filter(|c| c.judgement != Judgement::Ok) {
        let _ = writeln!(
            out,
            "{:?}: {}::{} (expected {:?})\n{}",
            c.judgement,
            c.case,
            c.detector,
            c.expect,
            evidence(&c.evidence)
        );
    }
    let _ = writeln!(
        out,
        "\n{} cells: {} ok, {} missed, {} unexpected, {} inconclusive; wall {:.1} s",
        m.cells.len(),
        m.count(Judgement::Ok),
        m.count(Judgement::Missed),
        m.count(Judgement::Unexpected),
        m.count(Judgement::Inconclusive),
        m.wall_seconds
    );
    let _ = writeln!(
        out,
        "process time per detector: {}",
        m.seconds_per_detector
            .iter()
            .map(|(d, s)| format!("{d} {s:.1} s"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push_str(&super::timing::time_breakdown(m));
    out.push_str(&perf_expectations(&m.perf));
    out
}

/// One `//@ perf:` expectation, judged: `held     CASE EXPECTATION at FILE:LINE: measured`,
/// `BROKEN   ` and the lint, or `skipped  ... : reason`.
pub fn perf_expectation(j: &Judged) -> String {
    match &j.outcome {
        PerfOutcome::Held { measured } => {
            format!(
                "held     {} {} at {}: {measured}",
                j.case, j.expectation, j.at
            )
        }
        PerfOutcome::Broken { lint, .. } => format!("BROKEN   {lint}"),
        PerfOutcome::Skipped { reason } => {
            format!(
                "skipped  {} {} at {}: {reason}",
                j.case, j.expectation, j.at
            )
        }
    }
}

/// `racegate check`'s perf section: each expectation and a count line (nothing when none).
pub fn perf_expectations(judged: &[Judged]) -> String {
    let mut out = String::new();
    if judged.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nperf expectations (`//@ perf:`, Nsight Compute's counters):"
    );
    for j in judged {
        let _ = writeln!(out, "{}", perf_expectation(j));
    }
    let (broken, skipped) = crate::judge::perf::check::counts(judged);
    let _ = writeln!(
        out,
        "{} perf expectation(s): {} held, {broken} broken, {skipped} skipped (not held: not measured)",
        judged.len(),
        judged.len() - broken - skipped
    );
    out
}

/// The end of `racegate gate`: new findings (with their detail, such as an output diff),
/// accepted ones, fixed and stale baseline entries, notes, undecided runs, and a count line
/// naming the baseline they were compared with.
pub fn gate(run: &GateRun, d: &Diff, baseline: &Path) -> String {
    let mut out = String::new();
    for f in &d.new {
        let _ = writeln!(
            out,
            "NEW      {} [{}] {}: {}",
            f.subject(),
            f.detector(),
            f.location(),
            f.message
        );
        if let Some(det) = &f.detection {
            let _ = writeln!(out, "         {}", det.describe());
        }
        if let Some(detail) = &f.detail {
            for l in detail.lines() {
                let _ = writeln!(out, "         {l}");
            }
        }
        let _ = writeln!(out, "         fingerprint {}", f.fingerprint);
    }
    // Accepted findings show their summary: it is what the baseline holds, so what a reader
    // greps for.
    for f in &d.accepted {
        let _ = writeln!(
            out,
            "accepted {} [{}] {}: {}",
            f.subject(),
            f.detector(),
            f.location(),
            f.summary()
        );
    }
    for a in &d.fixed {
        let _ = writeln!(
            out,
            "fixed    {} [{}]: {} (no longer found; shrink the baseline with --update-baseline)",
            a.id.subject,
            a.id.detector,
            summary(&a.id)
        );
    }
    for a in &d.stale {
        let _ = writeln!(
            out,
            "stale    {} [{}]: {} (the manifest has no kernel `{}`; --update-baseline drops it)",
            a.id.subject,
            a.id.detector,
            summary(&a.id),
            a.id.subject
        );
    }
    for r in &d.relabelled {
        let _ = writeln!(
            out,
            "relabelled {} [{}]: the baseline entry {} reads `{}` but the finding is `{}`; \
             it does not accept it (review, then --update-baseline)",
            r.entry.id.subject,
            r.entry.id.detector,
            r.entry.fingerprint,
            summary(&r.entry.id),
            r.finding.summary()
        );
    }
    for n in &run.notes {
        let _ = writeln!(out, "note     {n}");
    }
    for i in &run.inconclusive {
        let _ = writeln!(
            out,
            "INCONCLUSIVE {} [{}]: {}",
            i.subject, i.detector, i.reason
        );
    }
    let stale = if d.stale.is_empty() {
        String::new()
    } else {
        format!(", {} stale", d.stale.len())
    };
    let _ = writeln!(
        out,
        "\n{} new, {} accepted, {} fixed{stale}, {} inconclusive (baseline {}; {:.0} s)",
        d.new.len(),
        d.accepted.len(),
        d.fixed.len(),
        run.inconclusive.len(),
        baseline.display(),
        run.seconds
    );
    out
}

/// `racegate gate --update-baseline`: where the baseline went (or that it did not change), what
/// it accepts from this run, and what it kept without judging.
pub fn baseline_written(
    run: &GateRun,
    path: &Path,
    before: &Baseline,
    after: &Baseline,
    written: bool,
) -> String {
    let mut out = String::new();
    for f in &run.findings {
        let _ = writeln!(
            out,
            "  accepted: {} [{}] {}: {}",
            f.subject(),
            f.detector(),
            f.location(),
            f.summary()
        );
    }
    let now: std::collections::BTreeSet<&str> = run
        .findings
        .iter()
        .map(|f| f.fingerprint.as_str())
        .collect();
    for a in after
        .accepted
        .iter()
        .filter(|a| !now.contains(a.fingerprint.as_str()))
    {
        let _ = writeln!(
            out,
            "  kept (not judged in this run): {} [{}]: {}",
            a.id.subject,
            a.id.detector,
            summary(&a.id)
        );
    }
    let kept: std::collections::BTreeSet<&str> = after
        .accepted
        .iter()
        .map(|a| a.fingerprint.as_str())
        .collect();
    for a in before
        .accepted
        .iter()
        .filter(|a| !kept.contains(a.fingerprint.as_str()))
    {
        let _ = writeln!(
            out,
            "  dropped: {} [{}]: {}",
            a.id.subject,
            a.id.detector,
            summary(&a.id)
        );
    }
    for i in &run.inconclusive {
        let _ = writeln!(
            out,
            "INCONCLUSIVE {} [{}]: {}",
            i.subject, i.detector, i.reason
        );
    }
    let _ = writeln!(
        out,
        "baseline {}: {} ({} accepted finding(s))",
        if written { "written" } else { "unchanged" },
        path.display(),
        after.accepted.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn gate_lists_each_kind_then_counts() {
        let run = fixtures::gate_run();
        let d = crate::gate::diff(&run, &fixtures::baseline(), true);
        let text = gate(&run, &d, Path::new("racegate-baseline.json"));
        let fp = &run.findings[1].fingerprint;
        assert_eq!(
            text,
            format!(
                "NEW      b [stress] kernels/k.cu: stress found it (detail)\n         fingerprint {fp}\n\
                 accepted a [racecheck] kernels/k.cu:12: Analysis: Race condition in a: `s[i]+=s[i+h];`\n\
                 fixed    a [racecheck]: Analysis: Race condition in a: `t[i]=0;` (no longer found; shrink the baseline with --update-baseline)\n\
                 stale    gone [racecheck]: Analysis: Race condition in gone: `u[i]=1;` (the manifest has no kernel `gone`; --update-baseline drops it)\n\
                 INCONCLUSIVE c [memcheck]: no sanitizer\n\
                 \n1 new, 1 accepted, 1 fixed, 1 stale, 1 inconclusive (baseline racegate-baseline.json; 3 s)\n"
            )
        );
    }

    #[test]
    fn check_summary_lists_the_perf_expectations_and_counts_a_skipped_one_apart() {
        use crate::judge::perf::expect::{Judged, Outcome as P};
        let j = |expectation: &str, outcome| Judged {
            case: "t".into(),
            expectation: expectation.into(),
            at: "kernels/t.cu:20".into(),
            outcome,
        };
        let mut m = fixtures::matrix();
        m.perf = vec![
            j(
                "bank-conflicts=none",
                P::Held {
                    measured: "0.05".into(),
                },
            ),
            j(
                "coalesced=yes",
                P::Broken {
                    measured: "8".into(),
                    lint: "kernels/t.cu:20: t: 8".into(),
                },
            ),
            j(
                "bank-conflicts=none",
                P::Skipped {
                    reason: "ncu not found: x".into(),
                },
            ),
        ];
        let s = check_summary(&m);
        assert!(s.ends_with("held     t bank-conflicts=none at kernels/t.cu:20: 0.05\nBROKEN   kernels/t.cu:20: t: 8\nskipped  t bank-conflicts=none at kernels/t.cu:20: ncu not found: x\n3 perf expectation(s): 1 held, 1 broken, 1 skipped (not held: not measured)\n"), "{s}");
    }

    #[test]
    fn check_summary_shows_the_report_of_every_cell_that_is_not_ok() {
        let m = fixtures::matrix();
        let s = check_summary(&m);
        assert!(
            s.starts_with(
                "Missed: k::v::racecheck (expected Flag)\nk::v [racecheck]: CLEAN (exit 0, 1.5 s)\n"
            ),
            "{s}"
        );
        assert!(
            s.ends_with(
                "\n1 cells: 0 ok, 1 missed, 0 unexpected, 0 inconclusive; wall 2.0 s\n\
                 process time per detector: racecheck 1.5 s\n"
            ),
            "{s}"
        );
    }
}
