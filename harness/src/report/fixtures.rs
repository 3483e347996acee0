//! Small results of each engine, shared by the renderers' tests so every format is checked
//! against the same check cell, gate run and grade.

use crate::catalog::{Detector, Expect};
use crate::check::{Cell, Evidence, Judgement, Matrix, Observed};
use crate::gate::{Accepted, Baseline, GateFinding, GateRun};
use crate::grade::score::{item, total, Item};
use crate::grade::spec::Rubric;
use crate::grade::Grade;
use crate::sanitize::{Outcome, SanitizerRun, Tool};

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

pub fn matrix() -> Matrix {
    Matrix {
        cells: vec![cell()],
        wall_seconds: 2.0,
        seconds_per_detector: vec![(Detector::Racecheck, 1.5)],
    }
}

pub fn finding(subject: &str, det: &str, key: &str, line: Option<u32>) -> GateFinding {
    GateFinding {
        detection: None,
        subject: subject.into(),
        detector: det.into(),
        key: key.into(),
        file: "kernels/k.cu".into(),
        line,
        message: format!("{key} (detail)"),
    }
}

/// A racecheck finding at line 12 and a stress finding without a line; one inconclusive run.
pub fn gate_run() -> GateRun {
    GateRun {
        findings: vec![
            finding("a", "racecheck", "race at 12", Some(12)),
            finding("b", "stress", "wrong", None),
        ],
        inconclusive: vec![("c".into(), "memcheck".into(), "no sanitizer".into())],
        checked: vec![
            ("a".into(), "racecheck".into()),
            ("b".into(), "stress".into()),
            ("c".into(), "memcheck".into()),
        ],
        seconds: 3.0,
    }
}

/// Accepts the racecheck finding of [`gate_run`] and one at line 40 that is gone.
pub fn baseline() -> Baseline {
    let accept = |key: &str| Accepted {
        subject: "a".into(),
        detector: "racecheck".into(),
        key: key.into(),
    };
    Baseline {
        accepted: vec![accept("race at 12"), accept("race at 40")],
    }
}

/// Compiles (10 of 10), half correct (20 of 40).
pub fn grade() -> Grade {
    let r = Rubric {
        compiles: 10.0,
        correct: 40.0,
        racecheck: 15.0,
        synccheck: 10.0,
        memcheck: 15.0,
        initcheck: 10.0,
        performance: 0.0,
        performance_rule: Default::default(),
    };
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
    }
}
