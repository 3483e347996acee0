//! Small results of each engine, shared by the renderers' tests so every format is checked
//! against the same check cell, gate run and grade.

use crate::gate::{Accepted, Baseline, GateFinding, GateRun, Identity};
use crate::grade::rubric::Rubric;
use crate::grade::score::{item, total, Item};
use crate::grade::Grade;
use crate::judge::check::{Cell, Evidence, Judgement, Matrix, Observed};
use crate::judge::sanitize::{Outcome, SanitizerRun, Tool};
use crate::source::catalog::{Detector, Expect};

/// A racecheck cell that missed the bug on line 12 of a buggy variant.
pub fn cell() -> Cell {
    Cell {
        case: "k::v".into(),
        detector: Detector::Racecheck,
        expect: Expect::Flag,
        observed: Observed::Clean("clean".into()),
        judgement: Judgement::Missed,
        seconds: 1.5,
        file: "buggy_variants/k/v.cu".into(),
        line: Some(12),
        evidence: Evidence::Sanitizer(SanitizerRun {
            case: "k::v".into(),
            tool: Tool::Racecheck,
            outcome: Outcome::Clean,
            exit: "exit 0".into(),
            seconds: 1.5,
            log: "the report".into(),
            command: "compute-sanitizer --tool racecheck".into(),
        }),
    }
}

/// A stress run of one trial that passed, with no phases timed.
pub fn stress_report() -> crate::run::stress::StressReport {
    crate::run::stress::StressReport {
        case: "k".into(),
        jitter: true,
        seed: 1,
        size: "default".into(),
        trials_requested: 1,
        trials_run: 1,
        failures: 0,
        rate: 0.0,
        upper_bound_95: None,
        verdict: crate::run::stress::Verdict::Pass,
        first_failure: None,
        repro: None,
        seconds: 0.0,
        first_detection_seconds: None,
        phases: Default::default(),
    }
}

pub fn matrix() -> Matrix {
    Matrix {
        cells: vec![cell()],
        wall_seconds: 2.0,
        seconds_per_detector: vec![(Detector::Racecheck, 1.5)],
        perf: Vec::new(),
    }
}

/// A finding of `subject` by `det` whose source line reads `source`.
pub fn finding(subject: &str, det: &str, source: &str, line: Option<u32>) -> GateFinding {
    GateFinding::new(
        Identity {
            subject: subject.into(),
            detector: det.into(),
            kind: if det == "stress" {
                "wrong results".into()
            } else {
                "Analysis: Race condition".into()
            },
            function: subject.into(),
            source: source.into(),
            occurrence: 0,
        },
        "kernels/k.cu",
        line,
        format!("{det} found it (detail)"),
    )
}

/// A racecheck finding at line 12 and a stress finding without a line; one inconclusive run.
pub fn gate_run() -> GateRun {
    let mut r = GateRun {
        findings: vec![
            finding("a", "racecheck", "s[i]+=s[i+h];", Some(12)),
            finding("b", "stress", "", None),
        ],
        subjects: vec!["a".into(), "b".into(), "c".into()],
        seconds: 3.0,
        ..Default::default()
    };
    r.mark_checked("a", "racecheck", 1.5);
    r.mark_checked("b", "stress", 2.0);
    r.mark_checked("c", "memcheck", 0.0);
    r.mark_inconclusive("c", "memcheck", "no sanitizer".into());
    r
}

/// Accepts the racecheck finding of [`gate_run`], one that is gone (fixed), and one of a kernel
/// the manifest no longer has (stale).
pub fn baseline() -> Baseline {
    let accept = |subject: &str, source: &str| {
        Accepted::of(&finding(subject, "racecheck", source, Some(40)))
    };
    Baseline {
        accepted: vec![
            accept("a", "s[i]+=s[i+h];"),
            accept("a", "t[i]=0;"),
            accept("gone", "u[i]=1;"),
        ],
        ..Default::default()
    }
}

/// The points of [`grade`]: the four compute-sanitizer items, no performance.
pub fn rubric() -> Rubric {
    Rubric {
        compiles: 10.0,
        correct: 40.0,
        racecheck: 15.0,
        synccheck: 10.0,
        memcheck: 15.0,
        initcheck: 10.0,
        globalcheck: 0.0,
        sharedcheck: 0.0,
        performance: 0.0,
        performance_rule: Default::default(),
        correct_credit: Default::default(),
        requires: Default::default(),
    }
}

/// Compiles (10 of 10), half correct (20 of 40).
pub fn grade() -> Grade {
    let r = rubric();
    let items = vec![
        item(&r, Item::Compiles, 1.0, "ok".into()),
        item(&r, Item::Correct, 0.5, "4 of 8\n  trial 3: wrong".into()),
    ];
    let (score, max_score) = total(&items);
    Grade {
        exercise: "reduce".into(),
        submission: "alice.cu".into(),
        score,
        max_score,
        items,
        seed: 1,
        execution_seconds: 12.4,
        not_graded: None,
        confinement: "kernel-level file confinement: seccomp-bpf".into(),
    }
}
