//! Grade output formats: for people, JSON, Gradescope, PrairieLearn and JUnit.

use serde_json::json;

use super::score::Status;
use super::Grade;

/// For people: the total, then every item with its points and why.
pub fn human(g: &Grade) -> String {
    let mut s = format!(
        "{}: {} / {} ({})\n",
        g.submission,
        fmt(g.score),
        fmt(g.max_score),
        g.exercise
    );
    for it in &g.items {
        let mark = match it.status {
            Status::Passed => "PASS",
            Status::Partial => "PART",
            Status::Failed => "FAIL",
            Status::NotRun => "----",
            Status::Inconclusive => "????",
        };
        s.push_str(&format!(
            "  {mark} {:<12} {:>6} / {:<6} ",
            it.item.name(),
            fmt(it.score),
            fmt(it.max_score)
        ));
        let mut lines = it.detail.lines();
        s.push_str(lines.next().unwrap_or(""));
        s.push('\n');
        for l in lines {
            s.push_str(&format!("{:>33}{l}\n", ""));
        }
    }
    s
}

fn fmt(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// Gradescope's `results.json`.
pub fn gradescope(g: &Grade) -> serde_json::Value {
    json!({
        "score": g.score,
        "execution_time": g.execution_seconds.round() as u64,
        "output": format!("{} ({}): {} / {}", g.exercise, g.submission, fmt(g.score), fmt(g.max_score)),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": g.items.iter().enumerate().map(|(i, it)| json!({
            "name": it.item.title(),
            "number": (i + 1).to_string(),
            "score": it.score,
            "max_score": it.max_score,
            "status": if it.status == Status::Passed { "passed" } else { "failed" },
            "output": it.detail,
            "output_format": "text",
            "tags": [it.item.name()],
            "visibility": "visible",
        })).collect::<Vec<_>>(),
    })
}

/// PrairieLearn's external grader `results.json`.
pub fn prairielearn(g: &Grade) -> serde_json::Value {
    json!({
        "gradable": true,
        "score": if g.max_score > 0.0 { g.score / g.max_score } else { 0.0 },
        "message": format!("{} / {}", fmt(g.score), fmt(g.max_score)),
        "output": human(g),
        "tests": g.items.iter().map(|it| json!({
            "name": it.item.title(),
            "description": it.item.name(),
            "points": it.score,
            "max_points": it.max_score,
            "message": it.detail.lines().next().unwrap_or(""),
            "output": it.detail,
        })).collect::<Vec<_>>(),
    })
}

/// JUnit: one testcase per item; items below full marks are failures.
pub fn junit(g: &Grade) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut suite = TestSuite::new(format!("racegate-grade-{}", g.exercise));
    for it in &g.items {
        let status = match it.status {
            Status::Passed => TestCaseStatus::success(),
            Status::NotRun | Status::Inconclusive => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(it.detail.lines().next().unwrap_or("").to_string());
                st
            }
            Status::Partial | Status::Failed => {
                let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
                st.set_message(format!(
                    "{} / {}: {}",
                    fmt(it.score),
                    fmt(it.max_score),
                    it.detail.lines().next().unwrap_or("")
                ));
                st.set_description(it.detail.clone());
                st
            }
        };
        let mut t = TestCase::new(it.item.name(), status);
        t.set_classname(g.submission.clone());
        t.extra.insert("file".into(), g.submission.clone().into());
        suite.add_test_case(t);
    }
    let mut r = Report::new("racegate");
    r.add_test_suite(suite);
    r.to_string().expect("JUnit serializes")
}

#[cfg(test)]
mod tests {
    use super::super::score::{item, Item};
    use super::super::spec::Rubric;
    use super::*;

    fn grade() -> Grade {
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
        let (score, max_score) = super::super::score::total(&items);
        Grade {
            exercise: "reduce".into(),
            submission: "alice.cu".into(),
            score,
            max_score,
            items,
            seed: 1,
            execution_seconds: 12.4,
        }
    }

    #[test]
    fn gradescope_has_its_documented_fields() {
        let v = gradescope(&grade());
        assert_eq!(v["score"], 30.0);
        assert!(v["execution_time"].is_u64());
        for k in ["output", "visibility", "stdout_visibility"] {
            assert!(v[k].is_string(), "{k}");
        }
        for t in v["tests"].as_array().unwrap() {
            for k in ["name", "number", "output"] {
                assert!(t[k].is_string(), "test field {k}");
            }
            assert!(t["score"].is_number() && t["max_score"].is_number());
            assert!(["passed", "failed"].contains(&t["status"].as_str().unwrap()));
            assert!(["hidden", "after_due_date", "after_published", "visible"]
                .contains(&t["visibility"].as_str().unwrap()));
        }
        assert_eq!(v["tests"][1]["status"], "failed");
    }

    #[test]
    fn prairielearn_scores_are_fractions() {
        let v = prairielearn(&grade());
        assert_eq!(v["score"], 0.6);
        assert_eq!(v["gradable"], true);
        assert_eq!(v["tests"][1]["max_points"], 40.0);
    }

    #[test]
    fn junit_fails_partial_items_with_their_reason() {
        let xml = junit(&grade());
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let f = doc
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert!(f
            .attribute("message")
            .unwrap()
            .starts_with("20 / 40: 4 of 8"));
    }

    #[test]
    fn human_output_explains_each_item() {
        let h = human(&grade());
        assert!(h.starts_with("alice.cu: 30 / 50 (reduce)"));
        assert!(h.contains("PART correct"));
        assert!(h.contains("trial 3: wrong"));
    }
}
