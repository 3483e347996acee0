//! JUnit XML for CI dashboards (GitLab, GitHub test reporters, nextest-style viewers). `check`,
//! `gate` and `grade` each turn their results into a `Suite` of `Testcase`s; one builder
//! writes the XML, so the three reports share a shape: a `racegate` report with one suite,
//! testcases named `SUBJECT::DETECTOR` or by rubric item, failures with a message and the full
//! detail, undecided runs as skipped, and `file`/`line` attributes where there is a place to
//! point at.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::gate::{Diff, GateFinding, GateRun};
use crate::grade::score::Status;
use crate::grade::Grade;
use crate::judge::check::{Judgement, Matrix, Observed};

use super::grade::points;

/// One report's worth of testcases.
struct Suite {
    name: String,
    /// The wall time of the whole run, where it is known.
    time: Option<Duration>,
    cases: Vec<Testcase>,
}

struct Testcase {
    name: String,
    classname: String,
    outcome: Outcome,
    /// Every testcase has a time: dashboards sort and sum by it.
    time: Duration,
    /// `file` and `line` are not JUnit's own attributes, but GitLab and GitHub's test reporters
    /// read them to link a failure to the source.
    file: Option<String>,
    line: Option<u32>,
    system_out: Option<String>,
}

enum Outcome {
    Passed,
    /// Undecided (no sanitizer, not run): skipped rather than failed or passed, so the
    /// dashboard neither blames the code nor claims it clean.
    Skipped {
        message: String,
    },
    Failed {
        message: String,
        /// The failure's `type` attribute, where a report distinguishes kinds.
        kind: Option<String>,
        detail: String,
    },
}

/// The one builder: every JUnit report goes through here.
fn xml(suite: Suite) -> String {
    let mut out = TestSuite::new(suite.name);
    for c in suite.cases {
        let status = match c.outcome {
            Outcome::Passed => TestCaseStatus::success(),
            Outcome::Skipped { message } => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(message);
                s
            }
            Outcome::Failed {
                message,
                kind,
                detail,
            } => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(message);
                if let Some(k) = kind {
                    s.set_type(k);
                }
                s.set_description(detail);
                s
            }
        };
        let mut t = TestCase::new(c.name, status);
        t.set_classname(c.classname);
        t.set_time(c.time);
        if let Some(f) = c.file {
            t.extra.insert("file".into(), f.into());
            if let Some(l) = c.line {
                t.extra.insert("line".into(), l.to_string().into());
            }
        }
        if let Some(o) = c.system_out {
            t.set_system_out(o);
        }
        out.add_test_case(t);
    }
    let mut report = Report::new("racegate");
    if let Some(time) = suite.time {
        report.set_time(time);
    }
    report.add_test_suite(out);
    report.to_string().expect("JUnit serializes")
}

/// `racegate check`: one testcase per cell, at the finding or else the bug line, with the run's
/// report as its output.
pub fn check(m: &Matrix) -> String {
    let cases = m
        .cells
        .iter()
        .map(|c| {
            let outcome = match c.judgement {
                Judgement::Ok => Outcome::Passed,
                Judgement::Inconclusive => Outcome::Skipped {
                    message: format!("inconclusive: {}", observed(&c.observed)),
                },
                Judgement::Missed => Outcome::Failed {
                    message: format!(
                        "{} did not catch the bug it must catch ({})",
                        c.detector,
                        observed(&c.observed)
                    ),
                    kind: Some("missed".into()),
                    detail: super::text::evidence(&c.evidence),
                },
                Judgement::Unexpected => Outcome::Failed {
                    message: format!(
                        "{} reported {} on a case that must be clean",
                        c.detector,
                        observed(&c.observed)
                    ),
                    kind: Some("unexpected".into()),
                    detail: super::text::evidence(&c.evidence),
                },
            };
            Testcase {
                name: format!("{}::{}", c.case, c.detector),
                classname: c.case.clone(),
                outcome,
                time: Duration::from_secs_f64(c.seconds),
                file: Some(c.file.clone()),
                line: c.line,
                system_out: Some(super::text::evidence(&c.evidence)),
            }
        })
        .collect();
    xml(Suite {
        name: "racegate-check".into(),
        time: Some(Duration::from_secs_f64(m.wall_seconds)),
        cases,
    })
}

fn observed(o: &Observed) -> &str {
    match o {
        Observed::Flagged(s) | Observed::Clean(s) | Observed::Inconclusive(s) => s,
    }
}

/// `racegate gate`: one testcase per (subject, detector) that ran, timed. Only new findings
/// fail; the testcase points at the first of them and its detail holds all (with any diff).
pub fn gate(run: &GateRun, d: &Diff) -> String {
    let mut checked: Vec<(String, String, f64)> = Vec::new();
    for c in &run.checked {
        match checked
            .iter_mut()
            .find(|(s, t, _)| *s == c.subject && *t == c.detector)
        {
            Some(e) => e.2 += c.seconds,
            None => checked.push((c.subject.clone(), c.detector.clone(), c.seconds)),
        }
    }
    // A check that could not run (no device, a tool missing) is listed too, as skipped with
    // its reason: absent, it would read as never asked for.
    for i in &run.inconclusive {
        if !checked
            .iter()
            .any(|(s, t, _)| *s == i.subject && *t == i.detector)
        {
            checked.push((i.subject.clone(), i.detector.clone(), 0.0));
        }
    }
    checked.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let cases = checked
        .into_iter()
        .map(|(subject, det, seconds)| {
            let new: Vec<&GateFinding> = d
                .new
                .iter()
                .copied()
                .filter(|f| f.subject() == subject && f.detector() == det)
                .collect();
            let inconclusive = run
                .inconclusive
                .iter()
                .find(|i| i.subject == subject && i.detector == det);
            let outcome = if let Some(first) = new.first() {
                Outcome::Failed {
                    message: first.message.clone(),
                    kind: None,
                    detail: new
                        .iter()
                        .map(|f| {
                            let mut t = format!("{} (fingerprint {})", f.message, f.fingerprint);
                            if let Some(d) = &f.detail {
                                t.push('\n');
                                t.push_str(d);
                            }
                            t
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                }
            } else if let Some(i) = inconclusive {
                Outcome::Skipped {
                    message: format!("inconclusive: {}", i.reason),
                }
            } else {
                Outcome::Passed
            };
            Testcase {
                name: format!("{subject}::{det}"),
                classname: subject,
                outcome,
                time: Duration::from_secs_f64(seconds),
                file: new.first().map(|f| f.file.clone()),
                line: new.first().and_then(|f| f.line),
                system_out: None,
            }
        })
        .collect();
    xml(Suite {
        name: "racegate-gate".into(),
        time: Some(Duration::from_secs_f64(run.seconds)),
        cases,
    })
}

/// A report of runs that could not happen (no device): one skipped testcase per (subject,
/// detector), each saying why, so a dashboard shows what was not run rather than nothing.
pub fn not_run(suite: &str, cells: &[(String, String)], why: &str) -> String {
    let cases = cells
        .iter()
        .map(|(subject, det)| Testcase {
            name: format!("{subject}::{det}"),
            classname: subject.clone(),
            outcome: Outcome::Skipped {
                message: why.to_string(),
            },
            time: Duration::ZERO,
            file: None,
            line: None,
            system_out: None,
        })
        .collect();
    xml(Suite {
        name: suite.into(),
        time: Some(Duration::ZERO),
        cases,
    })
}

/// `racegate grade`: one testcase per rubric item, in the submission's file; items below full
/// marks fail with their points and reason.
pub fn grade(g: &Grade) -> String {
    if let Some(n) = &g.not_graded {
        // No grade: one skipped testcase that says why, no points anywhere.
        return xml(Suite {
            name: format!("racegate-grade-{}", g.exercise),
            time: None,
            cases: vec![Testcase {
                name: "not_graded".into(),
                classname: g.submission.clone(),
                outcome: Outcome::Skipped {
                    message: format!("not graded: {}", n.reason),
                },
                time: std::time::Duration::ZERO,
                file: Some(g.submission.clone()),
                line: None,
                system_out: None,
            }],
        });
    }
    let cases = g
        .items
        .iter()
        .map(|it| {
            let first_line = it.detail.lines().next().unwrap_or("");
            let outcome = match it.status {
                Status::Passed => Outcome::Passed,
                Status::NotRun => Outcome::Skipped {
                    message: first_line.to_string(),
                },
                Status::Partial | Status::Failed => Outcome::Failed {
                    message: format!(
                        "{} / {}: {first_line}",
                        points(it.score),
                        points(it.max_score)
                    ),
                    kind: None,
                    detail: it.detail.clone(),
                },
            };
            Testcase {
                name: it.item.name().into(),
                classname: g.submission.clone(),
                outcome,
                // Items are not timed one by one; the suite carries the grade's time.
                time: Duration::ZERO,
                file: Some(g.submission.clone()),
                line: None,
                system_out: None,
            }
        })
        .collect();
    xml(Suite {
        name: format!("racegate-grade-{}", g.exercise),
        time: Some(Duration::from_secs_f64(g.execution_seconds)),
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::Baseline;
    use crate::report::fixtures;

    fn parse(xml: &str) -> roxmltree::Document<'_> {
        roxmltree::Document::parse(xml).expect("valid XML")
    }

    fn testcase<'a>(doc: &'a roxmltree::Document, name: &str) -> roxmltree::Node<'a, 'a> {
        doc.descendants()
            .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
            .unwrap_or_else(|| panic!("no testcase {name}"))
    }

    #[test]
    fn check_carries_file_line_and_the_failure_message() {
        let xml = check(&fixtures::matrix());
        let doc = parse(&xml);
        let tc = testcase(&doc, "k::v::racecheck");
        assert_eq!(tc.attribute("file"), Some("buggy_variants/k/v.cu"));
        assert_eq!(tc.attribute("line"), Some("12"));
        let f = tc
            .children()
            .find(|n| n.has_tag_name("failure"))
            .expect("a failure element");
        assert!(
            f.attribute("message")
                .unwrap()
                .contains("did not catch the bug"),
            "{xml}"
        );
        assert!(
            f.text()
                .unwrap_or("")
                .contains("k::v [racecheck]: CLEAN (exit 0, 1.5 s)"),
            "{xml}"
        );
    }

    #[test]
    fn gate_marks_new_findings_as_failures_with_file_and_line() {
        let mut r = fixtures::gate_run();
        r.findings.truncate(1);
        let d = crate::gate::diff(&r, &Baseline::default(), true);
        let xml = gate(&r, &d);
        let doc = parse(&xml);
        let tc = testcase(&doc, "a::racecheck");
        assert_eq!(tc.attribute("file"), Some("kernels/k.cu"));
        assert_eq!(tc.attribute("line"), Some("12"));
        assert!(tc.children().any(|c| c.has_tag_name("failure")));
        let ok = testcase(&doc, "b::stress");
        assert!(!ok.children().any(|c| c.has_tag_name("failure")));
        let skipped = testcase(&doc, "c::memcheck");
        assert!(skipped.children().any(|c| c.has_tag_name("skipped")));
        for tc in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
            assert!(
                tc.attribute("time").is_some(),
                "every testcase is timed: {xml}"
            );
        }
        assert_eq!(tc.attribute("time"), Some("1.500"));
    }

    #[test]
    fn grade_fails_partial_items_with_their_reason() {
        let xml = grade(&fixtures::grade());
        let doc = parse(&xml);
        let f = doc
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert!(f
            .attribute("message")
            .unwrap()
            .starts_with("20 / 40: 4 of 8"));
    }

    /// What a CI dashboard reads from a report, whichever command wrote it.
    #[derive(Debug, PartialEq)]
    struct Shape {
        /// The root element and its name.
        root: (String, Option<String>),
        suites: usize,
        /// The attributes of the failing testcase, and the elements inside it.
        testcase: Vec<String>,
        children: Vec<String>,
        /// The attributes of its failure.
        failure: Vec<String>,
    }

    // The failure `type` is left out: only `check` tells a missed bug from an unexpected
    // finding.
    fn attributes(n: roxmltree::Node) -> Vec<String> {
        n.attributes()
            .map(|a| a.name().to_string())
            .filter(|a| a != "type")
            .collect()
    }

    fn shape(xml: &str, failing: &str) -> Shape {
        let doc = parse(xml);
        let root = doc.root_element();
        let tc = testcase(&doc, failing);
        let failure = tc
            .children()
            .find(|n| n.has_tag_name("failure"))
            .expect("a failure");
        Shape {
            root: (
                root.tag_name().name().to_string(),
                root.attribute("name").map(String::from),
            ),
            suites: root.children().filter(|n| n.is_element()).count(),
            testcase: attributes(tc),
            children: tc
                .children()
                .filter(|n| n.is_element())
                .map(|n| n.tag_name().name().to_string())
                .collect(),
            failure: attributes(failure),
        }
    }

    #[test]
    fn check_gate_and_grade_reports_share_one_shape() {
        let run = fixtures::gate_run();
        let d = crate::gate::diff(&run, &Baseline::default(), true);
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let expected = |testcase: &[&str], children: &[&str]| Shape {
            root: ("testsuites".into(), Some("racegate".into())),
            suites: 1,
            testcase: strings(testcase),
            children: strings(children),
            failure: strings(&["message"]),
        };
        assert_eq!(
            shape(&check(&fixtures::matrix()), "k::v::racecheck"),
            // Only a check cell has a run report to show as output.
            expected(
                &["name", "classname", "time", "file", "line"],
                &["failure", "system-out"]
            )
        );
        assert_eq!(
            shape(&gate(&run, &d), "a::racecheck"),
            expected(&["name", "classname", "time", "file", "line"], &["failure"])
        );
        // A grade points at the submitted file; it has no line to point at.
        assert_eq!(
            shape(&grade(&fixtures::grade()), "correct"),
            expected(&["name", "classname", "time", "file"], &["failure"])
        );
    }
}
