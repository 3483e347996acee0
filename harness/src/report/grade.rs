//! A grade in each format a course needs: text for the student, JSON, Gradescope's and
//! PrairieLearn's `results.json`, and, for a batch, CSV or a JSON array. JUnit is in
//! [`super::junit`] with the other JUnit reports.

use serde_json::json;

use crate::grade::score::Status;
use crate::grade::Grade;

/// For people: the total, then every item with its points and why.
pub fn human(g: &Grade) -> String {
    let mut s = format!(
        "{}: {} / {} ({})\n",
        g.submission,
        points(g.score),
        points(g.max_score),
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
            points(it.score),
            points(it.max_score)
        ));
        let mut lines = it.detail.lines();
        s.push_str(lines.next().unwrap_or(""));
        s.push('\n');
        // Continuation lines line up under the first line of the detail.
        for l in lines {
            s.push_str(&format!("{:>33}{l}\n", ""));
        }
    }
    s
}

/// Points as a person writes them: `30`, not `30.00`; `12.50` where there is a fraction.
pub(crate) fn points(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The grade as serde writes it (the format other tools read back).
pub fn json(g: &Grade) -> String {
    serde_json::to_string_pretty(g).expect("serializable")
}

/// Gradescope's `results.json`.
pub fn gradescope(g: &Grade) -> String {
    let v = json!({
        "score": g.score,
        "execution_time": g.execution_seconds.round() as u64,
        "output": format!("{} ({}): {} / {}", g.exercise, g.submission, points(g.score), points(g.max_score)),
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
    });
    serde_json::to_string_pretty(&v).expect("serializable")
}

/// PrairieLearn's external grader `results.json`.
pub fn prairielearn(g: &Grade) -> String {
    let v = json!({
        "gradable": true,
        "score": if g.max_score > 0.0 { g.score / g.max_score } else { 0.0 },
        "message": format!("{} / {}", points(g.score), points(g.max_score)),
        "output": human(g),
        "tests": g.items.iter().map(|it| json!({
            "name": it.item.title(),
            "description": it.item.name(),
            "points": it.score,
            "max_points": it.max_score,
            "message": it.detail.lines().next().unwrap_or(""),
            "output": it.detail,
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&v).expect("serializable")
}

/// A batch as one JSON array of grades.
pub fn batch_json(grades: &[Grade]) -> String {
    serde_json::to_string_pretty(grades).expect("serializable")
}

/// A batch as CSV: one row per submission, one column per item (the first grade's items: every
/// grade of one exercise has the same).
pub fn csv(grades: &[Grade]) -> String {
    let items: Vec<&str> = grades
        .first()
        .map(|g| g.items.iter().map(|i| i.item.name()).collect())
        .unwrap_or_default();
    let mut csv = format!("submission,score,max_score,{}\n", items.join(","));
    for g in grades {
        let cells: Vec<String> = g.items.iter().map(|i| i.score.to_string()).collect();
        // Submission paths are quoted: a student's folder name may hold a comma or a quote.
        csv.push_str(&format!(
            "\"{}\",{},{},{}\n",
            g.submission.replace('"', "\"\""),
            g.score,
            g.max_score,
            cells.join(",")
        ));
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::grade;

    #[test]
    fn gradescope_has_its_documented_fields() {
        let v: serde_json::Value = serde_json::from_str(&gradescope(&grade())).unwrap();
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
        let v: serde_json::Value = serde_json::from_str(&prairielearn(&grade())).unwrap();
        assert_eq!(v["score"], 0.6);
        assert_eq!(v["gradable"], true);
        assert_eq!(v["tests"][1]["max_points"], 40.0);
    }

    #[test]
    fn human_output_explains_each_item() {
        let h = human(&grade());
        assert!(h.starts_with("alice.cu: 30 / 50 (reduce)"));
        assert!(h.contains("PART correct"));
        assert!(h.contains("trial 3: wrong"));
    }

    #[test]
    fn csv_quotes_submissions_and_has_a_column_per_item() {
        let mut odd = grade();
        odd.submission = "a \"b\", c.cu".into();
        assert_eq!(
            csv(&[grade(), odd]),
            "submission,score,max_score,compiles,correct\n\
             \"alice.cu\",30,50,10,20\n\
             \"a \"\"b\"\", c.cu\",30,50,10,20\n"
        );
    }
}
