//! A grade in each format a course needs: text for the student, JSON, Gradescope's and
//! PrairieLearn's `results.json`, and, for a batch, CSV or a JSON array. JUnit is in
//! `junit.rs` with the other JUnit reports.
//!
//! A submission that was not graded (the grading machine failed: [`Grade::not_graded`]) never
//! shows a score: Gradescope gets no `results.json` at all (its documented "The autograder
//! failed to execute correctly", which a regrade replaces), PrairieLearn `gradable: false`,
//! CSV "not graded" with the reason, JSON `null` scores.

use serde_json::json;

use super::explain::{self, Lang};
use crate::grade::score::{Item, ItemResult, Status};
use crate::grade::Grade;

/// How feedback speaks: the language of the explanations and the course section to read.
#[derive(Clone, Debug, Default)]
pub struct Feedback {
    pub lang: Lang,
    /// The exercise's `see`, shown beside every fix hint.
    pub see: Option<String>,
}

/// For a failed or partial item, its explanation (what the item checks, the usual cause and
/// the fix, in the feedback's language); for an item not judged because the kernel is not
/// correct, why; nothing for items that passed or did not run for another reason.
pub fn explanation(it: &ItemResult, fb: &Feedback) -> Option<String> {
    match it.status {
        Status::Failed | Status::Partial => Some(explain::render(
            explain::key_for_item(it.item.name()),
            fb.lang,
            fb.see.as_deref(),
        )),
        Status::NotRun if it.detail == crate::grade::score::not_judged_why(&[Item::Correct]) => {
            Some(explain::render(
                "item-not-judged",
                fb.lang,
                fb.see.as_deref(),
            ))
        }
        Status::Passed | Status::NotRun => None,
    }
}

/// For people: the total, then every item with its points and why, in the feedback's language;
/// each failed item is followed by its explanation.
pub fn human_with(g: &Grade, fb: &Feedback) -> String {
    let mut s = match &g.not_graded {
        Some(n) => {
            // Why in the feedback's language (the reason itself is the machine's detail):
            // no device, or the machine could not judge.
            let key = if n.exit_code == crate::errors::exit::NO_DEVICE {
                "no-device"
            } else {
                "inconclusive"
            };
            let mut s = format!(
                "{}: not graded ({}): {}\n",
                g.submission, g.exercise, n.reason
            );
            for l in explain::render(key, fb.lang, None).lines() {
                s.push_str(&format!("{:>7}{}\n", "", l.trim_start()));
            }
            s
        }
        None => format!(
            "{}: {} / {} ({})\n",
            g.submission,
            points(g.score),
            points(g.max_score),
            g.exercise
        ),
    };
    let mut explained: Vec<String> = Vec::new();
    for it in &g.items {
        let mark = match it.status {
            Status::Passed => "PASS",
            Status::Partial => "PART",
            Status::Failed => "FAIL",
            Status::NotRun => "----",
        };
        // A grade not given shows what ran, but no points.
        let pts = match g.not_graded {
            Some(_) => format!("{:15}", ""),
            None => format!("{:>6} / {:<6}", points(it.score), points(it.max_score)),
        };
        s.push_str(&format!("  {mark} {:<12} {pts} ", it.item.name()));
        let mut lines = it.detail.lines();
        s.push_str(lines.next().unwrap_or(""));
        s.push('\n');
        // Continuation lines line up under the first line of the detail.
        for l in lines {
            s.push_str(&format!("{:>33}{l}\n", ""));
        }
        // Each explanation once: the items not judged for one reason share it.
        if let Some(e) = explanation(it, fb).filter(|e| !explained.contains(e)) {
            for l in e.lines() {
                s.push_str(&format!("{:>7}{}\n", "", l.trim_start()));
            }
            explained.push(e);
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

/// The grade as serde writes it (the format other tools read back); a grade not given has
/// `null` scores.
pub fn json(g: &Grade) -> String {
    serde_json::to_string_pretty(&value(g)).expect("serializable")
}

fn value(g: &Grade) -> serde_json::Value {
    let mut v = serde_json::to_value(g).expect("serializable");
    if g.not_graded.is_some() {
        v["score"] = serde_json::Value::Null;
        v["max_score"] = serde_json::Value::Null;
    }
    v
}

/// Gradescope's `results.json` (none for a submission not graded); each test's output is HTML (`output_format:
/// "html"`, everything escaped) with the detail and, for a failed item, the explanation.
pub fn gradescope_with(g: &Grade, fb: &Feedback) -> Option<String> {
    if g.not_graded.is_some() {
        return None;
    }
    let v = json!({
        "score": g.score,
        // Whole seconds, to nearest (Gradescope takes an integer).
        "execution_time": crate::source::values::f64_to_u64(g.execution_seconds.round()),
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
            "output": item_html(it, fb),
            "output_format": "html",
            "tags": [it.item.name()],
            "visibility": "visible",
        })).collect::<Vec<_>>(),
    });
    Some(serde_json::to_string_pretty(&v).expect("serializable"))
}

/// PrairieLearn's external grader `results.json`, failed items with their explanation.
pub fn prairielearn_with(g: &Grade, fb: &Feedback) -> String {
    if let Some(n) = &g.not_graded {
        let v = json!({
            "gradable": false,
            "message": format!("not graded: {}", n.reason),
            "output": human_with(g, fb),
        });
        return serde_json::to_string_pretty(&v).expect("serializable");
    }
    let v = json!({
        "gradable": true,
        "score": if g.max_score > 0.0 { g.score / g.max_score } else { 0.0 },
        "message": format!("{} / {}", points(g.score), points(g.max_score)),
        "output": human_with(g, fb),
        "tests": g.items.iter().map(|it| json!({
            "name": it.item.title(),
            "description": it.item.name(),
            "points": it.score,
            "max_points": it.max_score,
            "message": it.detail.lines().next().unwrap_or(""),
            "output": match explanation(it, fb) {
                Some(e) => format!("{}\n\n{e}", it.detail),
                None => it.detail.clone(),
            },
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&v).expect("serializable")
}

/// One item's feedback as HTML for Gradescope: the detail as preformatted text, then the
/// explanation; every character a submission could have put there is escaped.
fn item_html(it: &ItemResult, fb: &Feedback) -> String {
    let esc = |t: &str| super::html::visible(&minijinja::HtmlEscape(t).to_string());
    let mut s = format!("<pre>{}</pre>", esc(&it.detail));
    if let Some(e) = explanation(it, fb) {
        let mut lines = e.lines();
        s.push_str(&format!(
            "<p><strong>{}</strong></p><ul>",
            esc(lines.next().unwrap_or(""))
        ));
        for l in lines {
            s.push_str(&format!("<li>{}</li>", esc(l.trim())));
        }
        s.push_str("</ul>");
    }
    s
}

/// A batch as one JSON array of grades.
pub fn batch_json(grades: &[Grade]) -> String {
    serde_json::to_string_pretty(&grades.iter().map(value).collect::<Vec<_>>())
        .expect("serializable")
}

/// A batch as CSV: one row per submission, one column per item (the first grade's items: every
/// grade of one exercise has the same).
pub fn csv(grades: &[Grade]) -> String {
    let items: Vec<Item> = grades
        .first()
        .map(|g| g.items.iter().map(|i| i.item).collect())
        .unwrap_or_default();
    let mut csv = csv_header(&items);
    for g in grades {
        csv.push_str(&csv_row(g, &items));
    }
    csv
}

/// The CSV header for a batch graded on `items`.
pub fn csv_header(items: &[Item]) -> String {
    let names: Vec<&str> = items.iter().map(|i| i.name()).collect();
    format!("submission,score,max_score,{},note\n", names.join(","))
}

/// Why a submission did not compile, in one line: its compile item's first line, and the
/// compiler's first error line when the first line only introduces the log; `None` when it
/// compiled (or was never compiled).
pub fn compile_failure(g: &Grade) -> Option<String> {
    let r = g
        .items
        .iter()
        .find(|r| r.item == Item::Compiles && r.status == Status::Failed)?;
    let mut lines = r.detail.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("").to_string();
    if !first.ends_with(':') {
        return Some(first);
    }
    let error = lines.find(|l| l.contains("error")).unwrap_or("");
    Some(format!("{first} {error}").trim().to_string())
}

/// One CSV row: the points of each of `items` (empty where the grade has no such item), and
/// in `note` why a submission did not compile; a grade not given says "not graded", with no
/// points but the compile item's status where it ran, and why in `note`.
pub fn csv_row(g: &Grade, items: &[Item]) -> String {
    // Text cells are quoted: a student's folder name may hold a comma or a quote.
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\"").replace(['\n', '\r'], " "));
    if let Some(n) = &g.not_graded {
        let cells: Vec<String> = items
            .iter()
            .map(|it| match (it, g.items.iter().find(|r| r.item == *it)) {
                (Item::Compiles, Some(r)) if r.status == Status::Passed => "compiles".into(),
                (Item::Compiles, Some(r)) if r.status == Status::Failed => {
                    "does not compile".into()
                }
                _ => String::new(),
            })
            .collect();
        let note = match compile_failure(g) {
            Some(why) => format!("{}; {why}", n.reason),
            None => n.reason.clone(),
        };
        return format!(
            "{},not graded,,{},{}\n",
            quote(&g.submission),
            cells.join(","),
            quote(&note)
        );
    }
    let cells: Vec<String> = items
        .iter()
        .map(|it| {
            g.items
                .iter()
                .find(|r| r.item == *it)
                .map(|r| r.score.to_string())
                .unwrap_or_default()
        })
        .collect();
    format!(
        "{},{},{},{},{}\n",
        quote(&g.submission),
        g.score,
        g.max_score,
        cells.join(","),
        compile_failure(g)
            .map(|why| quote(&why))
            .unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::grade;

    // The English, no-section feedback most tests read.
    fn human(g: &Grade) -> String {
        human_with(g, &Feedback::default())
    }
    fn gradescope(g: &Grade) -> Option<String> {
        gradescope_with(g, &Feedback::default())
    }
    fn prairielearn(g: &Grade) -> String {
        prairielearn_with(g, &Feedback::default())
    }

    fn not_graded() -> Grade {
        let mut g = grade();
        g.not_graded = Some(crate::grade::orchestrate::NotGraded {
            reason: "no CUDA device".into(),
            exit_code: 4,
        });
        g
    }

    #[test]
    fn a_grade_not_given_shows_no_score_anywhere() {
        let g = not_graded();
        assert_eq!(
            gradescope(&g),
            None,
            "no results.json: an autograder failure"
        );
        let pl: serde_json::Value = serde_json::from_str(&prairielearn(&g)).unwrap();
        assert_eq!(pl["gradable"], false);
        assert!(pl.get("score").is_none());
        assert!(pl["message"].as_str().unwrap().contains("no CUDA device"));
        let j: serde_json::Value = serde_json::from_str(&json(&g)).unwrap();
        assert!(j["score"].is_null() && j["max_score"].is_null());
        assert_eq!(j["not_graded"]["exit_code"], 4);
        assert!(human(&g).starts_with("alice.cu: not graded (reduce): no CUDA device"));
        assert!(!human(&g).contains(" / "), "no points: {}", human(&g));
        // Why, in the feedback's language: no device (exit 4), else the machine could not judge.
        assert!(human(&g).contains("No CUDA device"), "{}", human(&g));
        let ko = Feedback {
            lang: crate::report::explain::Lang::Ko,
            see: None,
        };
        assert!(
            human_with(&g, &ko).contains("CUDA 디바이스 없음"),
            "{}",
            human_with(&g, &ko)
        );
        let mut other = not_graded();
        other.not_graded.as_mut().unwrap().exit_code = 3;
        assert!(
            human_with(&other, &ko).contains("판정 불가"),
            "{}",
            human_with(&other, &ko)
        );
        // No points; the compile item's status where it ran (not a score).
        let items = [Item::Compiles, Item::Correct];
        assert_eq!(
            csv_row(&g, &items),
            "\"alice.cu\",not graded,,compiles,,\"no CUDA device\"\n"
        );
    }

    #[test]
    fn gradescope_has_its_documented_fields() {
        let v: serde_json::Value = serde_json::from_str(&gradescope(&grade()).unwrap()).unwrap();
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

    /// A submission that did not compile says why in the CSV's note and the compile column,
    /// graded or not (no device); one that compiled leaves the note empty.
    #[test]
    fn a_compile_failure_shows_in_every_csv_row() {
        use crate::grade::score::{item, Item};
        let r = crate::report::fixtures::rubric();
        let mut g = grade();
        g.items = vec![item(
            &r,
            Item::Compiles,
            0.0,
            "NVRTC could not compile it:\n  a.cu(3): error: expected a \";\"".into(),
        )];
        let items = [Item::Compiles, Item::Correct];
        let row = csv_row(&g, &items);
        assert!(
            row.ends_with(
                ",\"NVRTC could not compile it: a.cu(3): error: expected a \"\";\"\"\"\n"
            ),
            "{row}"
        );
        g.not_graded = Some(crate::grade::orchestrate::NotGraded {
            reason: "no CUDA device".into(),
            exit_code: crate::errors::exit::NO_DEVICE,
        });
        let row = csv_row(&g, &items);
        assert!(row.contains(",not graded,,does not compile,,"), "{row}");
        assert!(
            row.contains("no CUDA device; NVRTC could not compile it: a.cu(3)"),
            "{row}"
        );
        let ok = grade();
        assert!(
            csv_row(&ok, &items).ends_with(",\n"),
            "no note for a submission that compiled"
        );
    }

    /// An item not judged because the kernel is not correct says so in English and in
    /// Korean, in the text, Gradescope and PrairieLearn outputs; one not run for another reason
    /// (no compile) is not explained as that.
    #[test]
    fn an_item_not_judged_for_correctness_says_why_in_both_languages() {
        use crate::grade::score::{not_judged, Item};
        let titles = [
            (explain::Lang::En, "Not judged: the kernel is not correct"),
            (explain::Lang::Ko, "판정하지 않음: 커널이 정확하지 않습니다"),
        ];
        for (lang, title) in titles {
            let fb = Feedback { lang, see: None };
            let mut g = grade();
            let r = crate::report::fixtures::rubric();
            g.items
                .push(not_judged(&r, Item::Racecheck, &[Item::Correct]));
            assert_eq!(explain::explain("item-not-judged", lang).title, title);
            let h = human_with(&g, &fb);
            assert!(
                h.contains("not judged: the kernel is not correct") && h.contains(title),
                "{h}"
            );
            let gs = gradescope_with(&g, &fb).unwrap();
            assert!(
                gs.contains(&minijinja::HtmlEscape(title).to_string()),
                "{gs}"
            );
            assert!(prairielearn_with(&g, &fb).contains(title));
            g.items[2].detail = "not graded: the submission has to compile first".into();
            assert!(!human_with(&g, &fb).contains(title));
        }
    }

    /// Every item, failed, in both languages: the explanation is there, in the course's words
    /// under Korean, with the exercise's section to read.
    #[test]
    fn a_failed_item_is_explained_in_the_chosen_language() {
        use crate::grade::score::Item;
        let all = [
            Item::Compiles,
            Item::Correct,
            Item::Racecheck,
            Item::Synccheck,
            Item::Memcheck,
            Item::Initcheck,
            Item::Globalcheck,
            Item::Performance,
        ];
        for lang in explain::Lang::ALL {
            let fb = Feedback {
                lang,
                see: Some("2.8 동기화 I".into()),
            };
            for item in all {
                let mut g = grade();
                g.items[1].item = item;
                g.items[1].status = Status::Failed;
                let e = explain::explain(explain::key_for_item(item.name()), lang);
                let h = human_with(&g, &fb);
                assert!(
                    h.contains(&e.title) && h.contains(&e.fix),
                    "{lang:?} {item:?}: {h}"
                );
                let read = if lang == explain::Lang::Ko {
                    "참고"
                } else {
                    "Read"
                };
                assert!(h.contains(&format!("({read}: 2.8 동기화 I)")), "{h}");
                let gs: serde_json::Value =
                    serde_json::from_str(&gradescope_with(&g, &fb).unwrap()).unwrap();
                assert_eq!(gs["tests"][1]["output_format"], "html");
                assert!(gs["tests"][1]["output"]
                    .as_str()
                    .unwrap()
                    .contains(&minijinja::HtmlEscape(&e.title).to_string()));
                let pl: serde_json::Value =
                    serde_json::from_str(&prairielearn_with(&g, &fb)).unwrap();
                assert!(pl["tests"][1]["output"]
                    .as_str()
                    .unwrap()
                    .contains(&e.cause));
            }
        }
        // A passed item gets no explanation.
        let mut g = grade();
        g.items[1].status = Status::Passed;
        let e = explain::explain("item-correct", explain::Lang::En);
        assert!(!human(&g).contains(&e.fix));
    }

    #[test]
    fn gradescope_html_escapes_what_a_submission_printed() {
        for hostile in [
            "<script>alert(1)</script>",
            "</pre><img src=x>",
            "a\u{1b}[31mred",
        ] {
            let mut g = grade();
            g.items[1].detail = hostile.into();
            g.items[1].status = Status::Failed;
            let v: serde_json::Value = serde_json::from_str(&gradescope(&g).unwrap()).unwrap();
            let out = v["tests"][1]["output"].as_str().unwrap();
            assert!(
                !out.contains("<script") && !out.contains("<img") && !out.contains('\u{1b}'),
                "{out}"
            );
            assert_eq!(out.matches("<pre>").count(), 1, "{out}");
        }
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
            "submission,score,max_score,compiles,correct,note\n\
             \"alice.cu\",30,50,10,20,\n\
             \"a \"\"b\"\", c.cu\",30,50,10,20,\n"
        );
    }
}
