//! The HTML report: one self-contained folder rendered from a result racegate wrote as JSON.
//! Part of `report/`: may import every stage and product, not `cli/`.
//!
//! The folder needs no CDN and runs no script (CSS inline); it renders `check --json`,
//! `gate --json` or `grade --json`: an index with the verdict and the matrix or the finding
//! list (colour plus a text mark, so it reads without colour), and one page per finding with
//! the source around each access (lines highlighted), the explanation and fix hint in the
//! chosen language ([`super::explain`]), the detection rate and time to first detection where
//! stress measured them, the repro command and the detector's raw record.
//!
//! Templates are `harness/templates/*.html` (minijinja, auto-escaping every value: nothing a
//! submission or a program printed can become markup); words of the page are
//! `harness/locales/ui.{en,ko}.toml`. Source is read only from relative paths under the root,
//! never through `..`, so a hostile result cannot pull other files into a report.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use minijinja::{context, Environment, Value};
use serde_json::Value as Json;

use super::explain::{self, Lang};

/// One file of the report: its name in the folder and its text.
pub type Page = (String, String);

const TEMPLATES: [(&str, &str); 9] = [
    (
        "mutate.html",
        include_str!("../../../templates/mutate.html"),
    ),
    (
        "mutant.html",
        include_str!("../../../templates/mutant.html"),
    ),
    ("base.html", include_str!("../../../templates/base.html")),
    ("list.html", include_str!("../../../templates/list.html")),
    (
        "matrix.html",
        include_str!("../../../templates/matrix.html"),
    ),
    ("gate.html", include_str!("../../../templates/gate.html")),
    ("grade.html", include_str!("../../../templates/grade.html")),
    (
        "submission.html",
        include_str!("../../../templates/submission.html"),
    ),
    (
        "finding.html",
        include_str!("../../../templates/finding.html"),
    ),
];

/// The words of the page in `lang`.
pub fn ui(lang: Lang) -> BTreeMap<String, String> {
    let text = match lang {
        Lang::En => include_str!("../../../locales/ui.en.toml"),
        Lang::Ko => include_str!("../../../locales/ui.ko.toml"),
    };
    // Part of the binary and tested: a parse error is racegate's bug.
    toml::from_str(text).expect("locales/ui.*.toml parse (tested)")
}

/// The `code` filter: the text escaped, then each `name` between backticks set as code.
fn code_spans(v: String) -> Value {
    let escaped = minijinja::HtmlEscape(&v).to_string();
    let ticks = escaped.matches('`').count();
    let mut out = String::with_capacity(escaped.len());
    for (i, part) in escaped.split('`').enumerate() {
        if i % 2 == 1 && i < ticks {
            out.push_str("<code>");
            out.push_str(part);
            out.push_str("</code>");
        } else {
            if i % 2 == 1 {
                out.push('`'); // an unmatched backtick stays as it was
            }
            out.push_str(part);
        }
    }
    Value::from_safe_string(out)
}

fn env() -> Environment<'static> {
    let mut e = Environment::new();
    e.add_filter("code", code_spans);
    for (name, text) in TEMPLATES {
        e.add_template(name, text)
            .expect("templates parse (tested)");
    }
    e
}

/// Text safe to show: escape sequences and other control characters (but newlines and tabs)
/// become visible `\xNN` ([`super::visible::visible`], the same for the terminal).
pub use super::visible::visible;

/// Renders a saved result into the pages of a report (index.html first). The shape decides:
/// `cells` is a check matrix, `findings` a gate run, a list of submissions with `items` a
/// graded batch. `root` is where the result's relative source paths start; `see` a course
/// section shown beside fix hints.
pub fn render(doc: &Json, root: &Path, lang: Lang, see: Option<&str>) -> Result<Vec<Page>, String> {
    let r = Renderer {
        env: env(),
        ui: ui(lang),
        lang,
        root,
        see: see.map(str::to_string),
    };
    if doc.get("cells").is_some_and(Json::is_array) {
        r.matrix(doc)
    } else if doc.get("findings").is_some_and(Json::is_array) {
        r.gate(doc)
    } else if is_mutation(doc) {
        r.mutate(&[("mutate".to_string(), doc)])
    } else if let Some(parts) = doc
        .as_object()
        .filter(|o| !o.is_empty() && o.values().all(|v| v.is_null() || is_mutation(v)))
    {
        // Several mutation runs side by side (the H200 record's catalog and corpus).
        let parts: Vec<(String, &Json)> = parts
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v))
            .collect();
        r.mutate(&parts)
    } else if doc
        .as_array()
        .is_some_and(|a| !a.is_empty() && a.iter().all(|s| s.get("items").is_some()))
    {
        r.grade(doc.as_array().expect("checked"))
    } else {
        Err(
            "not a result racegate can render: expected the JSON of `check --json` (cells), \
             `gate --json` (findings) or `grade --json` (a list of submissions with items)"
                .into(),
        )
    }
}

/// Writes the pages into `dir` (created if missing).
pub fn write(dir: &Path, pages: &[Page]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in pages {
        // Whole or not at all, and never through a link planted at the page's name.
        crate::build::compile::write_atomically(&dir.join(name), false, text.as_bytes())?;
    }
    Ok(())
}

struct Renderer<'a> {
    env: Environment<'static>,
    ui: BTreeMap<String, String>,
    lang: Lang,
    root: &'a Path,
    see: Option<String>,
}

fn s(v: &Json, k: &str) -> String {
    match v.get(k) {
        Some(Json::String(x)) => visible(x),
        Some(Json::Null) | None => String::new(),
        Some(x) => visible(&x.to_string()),
    }
}

impl Renderer<'_> {
    fn page(&self, name: &str, ctx: Value) -> Result<String, String> {
        let t = self.env.get_template(name).map_err(|e| e.to_string())?;
        let base = context! { lang => self.lang.code(), ui => self.ui.clone() };
        t.render(context! { ..ctx, ..base })
            .map_err(|e| e.to_string())
    }

    /// Lines around `line` of `file` (relative, under the root, no `..`), numbered, the line
    /// itself marked; `None` when the file is not there to read.
    fn snippet(&self, file: &str, line: u32) -> Option<Vec<Value>> {
        let p = Path::new(file);
        if p.is_absolute()
            || p.components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return None;
        }
        // Source only: a file a compiler reads, under the root once every link is resolved (a
        // linked folder in the middle cannot lead out), a regular file of bounded size.
        let source = p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            matches!(
                e,
                "cu" | "cuh" | "c" | "cc" | "cpp" | "cxx" | "h" | "hh" | "hpp"
            )
        });
        if !source {
            return None;
        }
        let root = std::fs::canonicalize(self.root).ok()?;
        let full = std::fs::canonicalize(self.root.join(p)).ok()?;
        if !full.starts_with(&root) {
            return None;
        }
        let meta = std::fs::metadata(&full).ok()?;
        if !meta.is_file() || meta.len() > 4 << 20 {
            return None;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&full).ok()?).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        let (lo, hi) = (line.saturating_sub(5).max(1), line.saturating_add(4));
        Some(
            (lo..=hi.min(u32::try_from(lines.len()).unwrap_or(u32::MAX)))
                .map(|n| {
                    context! { no => n, text => visible(lines[(n - 1) as usize]), hit => n == line }
                })
                .collect(),
        )
    }

    /// The source blocks of a finding: its own place, then each other access a sanitizer record
    /// names (`Write -> Read file:line`).
    fn sources(&self, place: &str, accesses: &[String]) -> Vec<Value> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let mut add = |w: &str, other: bool| {
            if w.is_empty() || seen.contains(&w.to_string()) {
                return;
            }
            seen.push(w.to_string());
            let lines = w
                .rsplit_once(':')
                .and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?)))
                .and_then(|(f, l)| self.snippet(f, l));
            out.push(context! { where => visible(w), other => other, lines => lines });
        };
        add(place, false);
        // The other accesses a record names, in the finding's own file only: text a program
        // printed or a `#line` directive cannot point the report at another file.
        let own_file = place.rsplit_once(':').map_or(place, |(f, _)| f);
        for a in accesses {
            for word in a.split_whitespace() {
                let word = word.trim_end_matches([';', ',', ']', ')']);
                if let Some((f, l)) = word.rsplit_once(':') {
                    if f == own_file && l.parse::<u32>().is_ok() {
                        add(word, true);
                    }
                }
            }
        }
        out
    }

    fn finding_page(&self, n: usize, f: FindingView) -> Result<Page, String> {
        let e = explain::explain(f.key, self.lang);
        let ctx = context! { f => context! {
            title => &e.title, meaning => &e.meaning, cause => &e.cause, fix => &e.fix,
            see => self.see.clone(), subject => f.subject, detector => f.detector,
            where => f.place.clone(), sources => self.sources(&f.place, &f.accesses),
            rate => f.rate, first => f.first, threads => f.threads, repro => f.repro,
            raw => f.raw,
        }};
        Ok((format!("finding-{n}.html"), self.page("finding.html", ctx)?))
    }

    fn list_entry(&self, n: usize, f: &FindingView) -> Value {
        let title = &explain::explain(f.key, self.lang).title;
        context! { page => format!("finding-{n}.html"), subject => f.subject.clone(),
        detector => f.detector.clone(), title => title, where => f.place.clone() }
    }

    fn matrix(&self, doc: &Json) -> Result<Vec<Page>, String> {
        let cells = doc["cells"].as_array().expect("checked");
        let mut detectors: Vec<String> = Vec::new();
        let mut cases: Vec<String> = Vec::new();
        for c in cells {
            let (case, det) = (s(c, "case"), s(c, "detector"));
            if !detectors.contains(&det) {
                detectors.push(det);
            }
            if !cases.contains(&case) {
                cases.push(case);
            }
        }
        let mut pages = Vec::new();
        let mut list = Vec::new();
        let mut all_ok = true;
        let mut rows = Vec::new();
        for case in &cases {
            let mut row = Vec::new();
            for det in &detectors {
                let Some(c) = cells
                    .iter()
                    .find(|c| &s(c, "case") == case && &s(c, "detector") == det)
                else {
                    row.push(
                        context! { class => "unjudged", mark => "", text => "", detector => det },
                    );
                    continue;
                };
                let observed = s(c, "observed");
                let ok = s(c, "judgement") == "ok";
                all_ok &= ok;
                let (mark, class) = match observed.as_str() {
                    "clean" => ("✓", "clean"),
                    "flagged" => ("✗", "flagged"),
                    _ => ("?", "unjudged"),
                };
                let class = if ok {
                    class.to_string()
                } else {
                    format!("{class} mismatch")
                };
                let mark = if ok {
                    mark.to_string()
                } else {
                    format!("! {mark}")
                };
                let mut page = None;
                if observed == "flagged" {
                    let view = FindingView::of_cell(c);
                    let n = pages.len() + 1;
                    list.push(self.list_entry(n, &view));
                    page = Some(format!("finding-{n}.html"));
                    pages.push(self.finding_page(n, view)?);
                }
                row.push(context! { class => class, mark => mark, text => s(c, "detail"), page => page, detector => det });
            }
            rows.push(context! { case => case, cells => row });
        }
        let (verdict, class) = if all_ok {
            ("ok", "pass")
        } else {
            ("mismatch", "fail")
        };
        let index = self.page(
            "matrix.html",
            context! { verdict => verdict, verdict_class => class, detectors => detectors, rows => rows, findings => list },
        )?;
        pages.insert(0, ("index.html".into(), index));
        Ok(pages)
    }

    fn gate(&self, doc: &Json) -> Result<Vec<Page>, String> {
        let mut pages = Vec::new();
        let mut list = Vec::new();
        for f in doc["findings"].as_array().expect("checked") {
            let view = FindingView::of_gate(f);
            let n = pages.len() + 1;
            list.push(self.list_entry(n, &view));
            pages.push(self.finding_page(n, view)?);
        }
        let verdict = s(doc, "verdict");
        let class = if verdict == "passed" { "pass" } else { "fail" };
        let notes: Vec<String> = doc
            .get("notes")
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_str).map(visible).collect())
            .unwrap_or_default();
        let index = self.page(
            "gate.html",
            context! { verdict => verdict, verdict_class => class, findings => list, notes => notes },
        )?;
        pages.insert(0, ("index.html".into(), index));
        Ok(pages)
    }

    fn grade(&self, subs: &[Json]) -> Result<Vec<Page>, String> {
        let mut items: Vec<String> = Vec::new();
        for sub in subs {
            for it in sub["items"].as_array().into_iter().flatten() {
                let name = s(it, "item");
                if !items.contains(&name) {
                    items.push(name);
                }
            }
        }
        let mut pages = Vec::new();
        let mut rows = Vec::new();
        let mut all_full = true;
        for (i, sub) in subs.iter().enumerate() {
            let n = i + 1;
            let score = format!("{} / {}", s(sub, "score"), s(sub, "max_score"));
            all_full &= sub["score"] == sub["max_score"];
            let mut cells = Vec::new();
            let mut detail = Vec::new();
            for name in &items {
                let it = sub["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|it| &s(it, "item") == name);
                let Some(it) = it else {
                    cells.push(context! { class => "unjudged", mark => "", text => "" });
                    continue;
                };
                let status = s(it, "status");
                let (mark, class) = match status.as_str() {
                    "passed" => ("✓", "clean"),
                    "failed" => ("✗", "flagged"),
                    _ => ("?", "unjudged"),
                };
                let pts = format!("{}/{}", s(it, "score"), s(it, "max_score"));
                cells.push(context! { class => class, mark => mark, text => pts.clone() });
                let e = explain::explain(explain::key_for_item(name), self.lang);
                detail.push(context! { mark => mark, title => &e.title, score => pts, detail => s(it, "detail"),
                    meaning => &e.meaning, cause => &e.cause, fix => &e.fix });
            }
            let name = s(sub, "submission");
            let page = self.page(
                "submission.html",
                context! { name => name.clone(), score => score.clone(), items => detail, see => self.see.clone(),
                verdict_class => if sub["score"] == sub["max_score"] { "pass" } else { "fail" } },
            )?;
            pages.push((format!("submission-{n}.html"), page));
            rows.push(context! { name => name, page => format!("submission-{n}.html"), score => score, cells => cells });
        }
        let verdict = format!(
            "{} {}",
            subs.len(),
            self.ui.get("submissions").cloned().unwrap_or_default()
        );
        let index = self.page(
            "grade.html",
            context! { verdict => verdict, verdict_class => if all_full { "pass" } else { "fail" }, items => items, subs => rows },
        )?;
        pages.insert(0, ("index.html".into(), index));
        Ok(pages)
    }
}

fn is_mutation(v: &Json) -> bool {
    v.get("kernels").is_some_and(Json::is_array) && v.get("total").is_some()
}

impl Renderer<'_> {
    fn mutate(&self, parts: &[(String, &Json)]) -> Result<Vec<Page>, String> {
        let mut pages = Vec::new();
        let mut views = Vec::new();
        let mut survivors_all = 0;
        for (name, doc) in parts {
            let mut operators = Vec::new();
            for o in doc["per_operator"].as_array().into_iter().flatten() {
                let rate = o["kill_rate"]
                    .as_f64()
                    .map(|r| format!("{:.1}%", r * 100.0));
                operators.push(
                    context! { name => s(o, "operator"), mutants => s(o, "mutants"),
                    killed => s(o, "killed"), survived => o["survived"].as_u64().unwrap_or(0),
                    rate => rate.unwrap_or_default() },
                );
            }
            let t = &doc["total"];
            operators.push(context! { name => "all", mutants => s(t, "mutants"), killed => s(t, "killed"),
                survived => t["survived"].as_u64().unwrap_or(0),
                rate => t["kill_rate"].as_f64().map(|r| format!("{:.1}%", r * 100.0)).unwrap_or_default() });
            let mut survivors = Vec::new();
            let mut unreachable = Vec::new();
            for k in doc["kernels"].as_array().into_iter().flatten() {
                for u in k["unreachable"].as_array().into_iter().flatten() {
                    unreachable.push(u.as_str().map(visible).unwrap_or_default());
                }
                for m in k["mutants"].as_array().into_iter().flatten() {
                    if m["outcome"] != "survived" {
                        continue;
                    }
                    let n = pages.len() + 1;
                    let page = format!("mutant-{n}.html");
                    let place = place(m);
                    let ctx = context! { m => context! { id => s(m, "id"), operator => s(m, "operator"),
                    where => place.clone(), outcome => s(m, "outcome"), original => s(m, "original"),
                    replacement => s(m, "replacement"), diff => s(m, "diff"), detail => s(m, "detail"),
                    raw => raw(m) } };
                    pages.push((page.clone(), self.page("mutant.html", ctx)?));
                    survivors.push(context! { page => page, id => s(m, "id"), where => place });
                }
            }
            survivors_all += survivors.len();
            views.push(
                context! { name => name, operators => operators, survivors => survivors,
                unreachable => unreachable },
            );
        }
        let verdict = format!(
            "{survivors_all} {}",
            self.ui.get("survived").cloned().unwrap_or_default()
        );
        let class = if survivors_all == 0 { "pass" } else { "fail" };
        let index = self.page(
            "mutate.html",
            context! { verdict => verdict, verdict_class => class, parts => views },
        )?;
        pages.insert(0, ("index.html".into(), index));
        Ok(pages)
    }
}

/// What a finding page shows, from whichever result it came.
struct FindingView {
    key: &'static str,
    subject: String,
    detector: String,
    place: String,
    accesses: Vec<String>,
    rate: Option<String>,
    first: Option<String>,
    threads: Option<String>,
    repro: Option<String>,
    raw: String,
}

fn raw(v: &Json) -> String {
    visible(&serde_json::to_string_pretty(v).unwrap_or_default())
}

fn place(v: &Json) -> String {
    match (s(v, "file"), v.get("line").and_then(Json::as_u64)) {
        (f, Some(l)) if !f.is_empty() => format!("{f}:{l}"),
        (f, _) => f,
    }
}

impl FindingView {
    fn of_cell(c: &Json) -> FindingView {
        let detector = s(c, "detector");
        let ev = &c["evidence"];
        let records: Vec<&Json> = ev["outcome"]["detail"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let first = records.first().copied();
        let (kind, accesses) = match first {
            Some(r) => (
                format!("{}: {}", s(r, "kind"), s(r, "what")),
                s(r, "accesses"),
            ),
            None => (s(ev, "verdict"), String::new()),
        };
        let kind = if detector.starts_with("stress") && kind == "fail" {
            "wrong result".to_string()
        } else {
            kind
        };
        let place = first
            .map(|r| s(r, "location"))
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| place(c));
        let rate = ev.get("failures").and_then(Json::as_u64).map(|f| {
            format!(
                "{f} / {}",
                ev.get("trials_run").and_then(Json::as_u64).unwrap_or(0)
            )
        });
        FindingView {
            key: explain::key_for(&detector, &kind, &accesses),
            subject: s(c, "case"),
            detector,
            place,
            accesses: records.iter().map(|r| s(r, "accesses")).collect(),
            rate,
            first: ev
                .get("first_detection_seconds")
                .and_then(Json::as_f64)
                .map(|x| format!("{x:.2}")),
            threads: ev["first_failure"]
                .get("problem")
                .and_then(Json::as_str)
                .map(visible),
            repro: ev.get("repro").and_then(Json::as_str).map(visible),
            raw: raw(c),
        }
    }

    fn of_gate(f: &Json) -> FindingView {
        let detector = s(f, "detector");
        let kind = s(f, "kind");
        let det = &f["detection"];
        FindingView {
            key: explain::key_for(&detector, &kind, &s(f, "source")),
            subject: s(f, "subject"),
            detector,
            place: place(f),
            accesses: vec![s(f, "message")],
            rate: det.get("failures").and_then(Json::as_u64).map(|x| {
                format!(
                    "{x} / {}",
                    det.get("trials").and_then(Json::as_u64).unwrap_or(0)
                )
            }),
            first: det
                .get("first_seconds")
                .and_then(Json::as_f64)
                .map(|x| format!("{x:.2}")),
            threads: None,
            repro: None,
            raw: raw(f),
        }
    }
}

#[cfg(test)]
mod tests;
