//! The HTML report on results the H200 wrote (run 21's `check.json` and `grade-*.json`, read
//! from the run's committed `raw.tar.gz`), on a gate run, and on hostile text.

use std::path::PathBuf;

use serde_json::{json, Value as Json};

use super::*;

fn repo() -> PathBuf {
    crate::source::paths::package_dir()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A file of run 21's raw captures, as the H200 wrote it.
fn run21(name: &str) -> Json {
    let archive = repo().join("docs/h200/run-21/raw.tar.gz");
    let out = std::process::Command::new("tar")
        .args(["xzf"])
        .arg(&archive)
        .args(["-O", name])
        .output()
        .expect("tar runs");
    assert!(out.status.success(), "{name} in {}", archive.display());
    serde_json::from_slice(&out.stdout).unwrap()
}

fn page<'a>(pages: &'a [Page], name: &str) -> &'a str {
    &pages
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

#[test]
fn the_matrix_of_a_real_run_links_every_flagged_cell_to_its_page() {
    let doc = run21("check.json");
    let cells = doc["cells"].as_array().unwrap();
    let flagged = cells.iter().filter(|c| c["observed"] == "flagged").count();
    assert!(flagged > 20, "run 21 flagged {flagged} cells");
    for lang in Lang::ALL {
        let pages = render(&doc, &repo(), lang, None).unwrap();
        let index = page(&pages, "index.html");
        assert_eq!(pages.len(), 1 + flagged);
        for c in cells {
            let key = format!(
                "data-cell=\"{}/{}\"",
                c["case"].as_str().unwrap(),
                c["detector"].as_str().unwrap()
            );
            assert!(index.contains(&key), "{key}");
        }
        for n in 1..=flagged {
            assert!(
                index.contains(&format!("href=\"finding-{n}.html\"")),
                "finding-{n}"
            );
            let p = page(&pages, &format!("finding-{n}.html"));
            assert!(p.contains("id=\"raw\"") && p.contains("href=\"index.html\""));
        }
        assert!(index.contains(&ui(lang)["verdict"]));
    }
}

#[test]
fn a_race_page_shows_both_accesses_and_the_explanation_in_korean() {
    let doc = run21("check.json");
    let pages = render(&doc, &repo(), Lang::Ko, Some("2.8 동기화 I")).unwrap();
    let race = pages
        .iter()
        .map(|(_, p)| p)
        .find(|p| {
            p.contains("matmul_tiled16::no_sync_after_load") && p.contains("<code>racecheck</code>")
        })
        .expect("a racecheck page for no_sync_after_load");
    let e = explain::explain("race-shared-raw", Lang::Ko);
    assert!(race.contains(&e.title), "the Korean title");
    assert!(race.contains("(참고: 2.8 동기화 I)"));
    // Its own line and the other access, each with highlighted source read from the checkout.
    assert!(race.matches("<pre class=\"src\">").count() >= 2, "{race}");
    assert!(race.contains("<span class=\"hit\">"));
}

#[test]
fn a_stress_page_has_the_rate_the_first_detection_and_the_repro() {
    let doc = run21("check.json");
    let pages = render(&doc, &repo(), Lang::En, None).unwrap();
    let p = pages
        .iter()
        .map(|(_, p)| p)
        .find(|p| {
            p.contains("counter_single::nonatomic_counter") && p.contains("<code>stress</code>")
        })
        .unwrap();
    // minijinja escapes `/` too.
    assert!(p.contains("Detection rate: 50 &#x2f; 50"), "{p}");
    assert!(p.contains("racegate stress counter_single::nonatomic_counter --seed 1"));
    assert!(p.contains("Time to first detection"));
}

#[test]
fn a_graded_batch_gets_a_page_per_submission_with_explanations() {
    for file in ["grade-reduce.json", "grade-hostile.json"] {
        let doc = run21(file);
        let subs = doc.as_array().unwrap();
        for lang in Lang::ALL {
            let pages = render(&doc, &repo(), lang, None).unwrap();
            assert_eq!(pages.len(), 1 + subs.len(), "{file}");
            let index = page(&pages, "index.html");
            for (i, _) in subs.iter().enumerate() {
                assert!(index.contains(&format!("submission-{}.html", i + 1)));
            }
            let first = page(&pages, "submission-1.html");
            let compiles = explain::explain("item-compiles", lang);
            assert!(first.contains(&compiles.title), "{file} {lang:?}");
        }
    }
}

/// Run 15's mutation runs (catalog and corpus, side by side as the H200 record keeps them):
/// a table per part, a page per surviving mutant with its diff.
#[test]
fn a_mutation_run_gets_its_operators_and_a_page_per_survivor() {
    let archive = repo().join("docs/h200/run-15/raw.tar.gz");
    let out = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .args(["-O", "mutate.json"])
        .output()
        .unwrap();
    let doc: Json = serde_json::from_slice(&out.stdout).unwrap();
    let survived: u64 = ["catalog", "corpus"]
        .iter()
        .map(|p| doc[p]["total"]["survived"].as_u64().unwrap())
        .sum();
    assert!(survived > 0);
    for lang in Lang::ALL {
        let pages = render(&doc, &repo(), lang, None).unwrap();
        assert_eq!(pages.len() as u64, 1 + survived);
        let index = page(&pages, "index.html");
        for n in 1..=survived {
            assert!(index.contains(&format!("href=\"mutant-{n}.html\"")));
        }
        assert!(index.contains("atomic-to-plain") && index.contains(&ui(lang)["kill_rate"]));
        assert!(page(&pages, "mutant-1.html").contains("class=\"diff\""));
    }
    // One part alone renders too.
    let pages = render(&doc["catalog"], &repo(), Lang::En, None).unwrap();
    assert_eq!(
        pages.len() as u64,
        1 + doc["catalog"]["total"]["survived"].as_u64().unwrap()
    );
}

#[test]
fn a_gate_run_lists_its_findings() {
    let run = crate::report::fixtures::gate_run();
    let d = crate::gate::diff(&run, &crate::report::fixtures::baseline(), true);
    let doc: Json =
        serde_json::from_str(&crate::report::json::gate(&run, &d, "b.json", 1)).unwrap();
    let pages = render(&doc, &repo(), Lang::En, None).unwrap();
    let n = doc["findings"].as_array().unwrap().len();
    assert!(n > 0);
    assert_eq!(pages.len(), 1 + n);
    assert!(page(&pages, "index.html").contains("new_findings"));
}

/// Every hostile string in every text field a result can carry: nothing becomes markup, no
/// escape character reaches the page.
#[test]
fn nothing_a_submission_printed_becomes_markup() {
    let hostile = [
        "<script>alert(1)</script>",
        "</pre><img src=x onerror=alert(1)>",
        "\u{1b}[31mred\u{1b}[0m",
        "\"><a href=javascript:alert(1)>",
        "&lt;already&gt; & <b>",
        "\u{7f}\u{9b}2J",
    ];
    for h in hostile {
        let gate = json!({"verdict": "new_findings", "notes": [h], "findings": [{
            "subject": h, "detector": "output", "kind": h, "file": h, "line": 3,
            "message": h, "detail": h, "fingerprint": h, "source": h }]});
        let matrix = json!({"cells": [{"case": h, "detector": "racecheck", "expect": "clean",
            "observed": "flagged", "detail": h, "judgement": "ok", "file": h, "line": 1,
            "evidence": {"outcome": {"detail": [{"kind": "Analysis", "what": h, "location": h, "accesses": h}]}}}]});
        let grade = json!([{"submission": h, "score": 0, "max_score": 10,
            "items": [{"item": "compiles", "status": "failed", "detail": h, "score": 0, "max_score": 10}]}]);
        for doc in [gate, matrix, grade] {
            for lang in Lang::ALL {
                for (name, p) in render(&doc, &repo(), lang, None).unwrap() {
                    assert!(!p.contains("<script"), "{name}: {h:?}");
                    assert!(
                        !p.contains("<img")
                            && !p.contains("<a href=javascript")
                            && !p.contains("<b>"),
                        "{name}: {h:?}"
                    );
                    assert!(
                        !p.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
                        "{name}: {h:?}"
                    );
                    assert_eq!(
                        p.matches("<pre").count(),
                        p.matches("</pre>").count(),
                        "{name}: {h:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn code_names_are_set_as_code_and_nothing_else_is_markup() {
    let f = |s: &str| code_spans(s.to_string()).to_string();
    assert_eq!(
        f("put `__syncthreads()` here"),
        "put <code>__syncthreads()</code> here"
    );
    assert_eq!(f("`a` and `b`"), "<code>a</code> and <code>b</code>");
    assert_eq!(f("one ` tick"), "one ` tick");
    assert_eq!(f("`<script>`"), "<code>&lt;script&gt;</code>");
    assert_eq!(f("a `b` c `d"), "a <code>b</code> c `d");
}

#[test]
fn source_is_read_only_under_the_root() {
    let r = Renderer {
        env: env(),
        ui: ui(Lang::En),
        lang: Lang::En,
        root: &repo(),
        see: None,
    };
    assert!(r.snippet("kernels/transpose.cu", 3).is_some());
    for bad in [
        "/etc/passwd",
        "../main/kernels/transpose.cu",
        "kernels/../../etc/passwd",
        "kernels",
        "no/such.cu",
    ] {
        assert!(r.snippet(bad, 1).is_none(), "{bad}");
    }
}

#[test]
fn both_languages_have_every_word_of_the_page() {
    let en: Vec<_> = ui(Lang::En).into_keys().collect();
    let ko: Vec<_> = ui(Lang::Ko).into_keys().collect();
    assert_eq!(en, ko);
    for lang in Lang::ALL {
        assert!(ui(lang).values().all(|v| !v.trim().is_empty()));
    }
}

#[test]
fn anything_else_is_refused_with_what_would_do() {
    for doc in [json!({}), json!([]), json!(3), json!({"cells": 3})] {
        let e = render(&doc, &repo(), Lang::En, None).unwrap_err();
        assert!(
            e.contains("check --json") && e.contains("gate --json"),
            "{e}"
        );
    }
}

/// A hostile result cannot pull a file into a report: not through a linked folder in the middle,
/// not a file that is no source, not a place named in a message or in another file.
#[test]
fn no_path_a_result_names_leads_out_of_the_sources_under_the_root() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    std::fs::create_dir(root.join("kernels")).unwrap();
    std::fs::write(root.join("kernels/k.cu"), "a\nb\nSECRET_IN_SOURCE\n").unwrap();
    std::fs::write(root.join("grade_secret.toml"), "secret = 'SECRET_TOML'\n").unwrap();
    std::os::unix::fs::symlink("/", root.join("up")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", root.join("kernels/h.cu")).unwrap();
    let r = Renderer {
        env: env(),
        ui: ui(Lang::En),
        lang: Lang::En,
        root,
        see: None,
    };
    assert!(r.snippet("kernels/k.cu", 3).is_some());
    for bad in [
        "grade_secret.toml",
        "up/proc/self/environ",
        "up/etc/hostname",
        "kernels/h.cu",
    ] {
        assert!(r.snippet(bad, 1).is_none(), "{bad}");
    }
    // A gate finding whose message names other files: only its own file's lines are shown.
    let doc = json!({"verdict": "new_findings", "findings": [{
        "subject": "p", "detector": "exit", "kind": "exit code 1", "file": "kernels/k.cu", "line": 1,
        "message": "last stderr line: grade_secret.toml:1 up/proc/self/environ:1 kernels/k.cu:3"}]});
    for (_, p) in render(&doc, root, Lang::En, None).unwrap() {
        assert!(
            !p.contains("SECRET_TOML") && !p.contains("environ</h2>"),
            "{p}"
        );
    }
}

#[test]
fn pages_replace_a_link_planted_at_their_name_instead_of_writing_through_it() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("victim.txt");
    std::fs::write(&target, "keep").unwrap();
    let dir = t.path().join("report");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("index.html")).unwrap();
    write(
        &dir,
        &[("index.html".to_string(), "<p>page</p>".to_string())],
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert_eq!(
        std::fs::read_to_string(dir.join("index.html")).unwrap(),
        "<p>page</p>"
    );
    assert!(!std::fs::symlink_metadata(dir.join("index.html"))
        .unwrap()
        .file_type()
        .is_symlink());
}
