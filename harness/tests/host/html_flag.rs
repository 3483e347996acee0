//! `html_flag::<name>`: `--html DIR [--lang L]` on the commands that report (`mutate`, `gate`;
//! `check` and `grade` share the same code) writes the HTML report of the result its `--json`
//! holds, in the language asked for.

use crate::repo_root;
use crate::runner::racegate;

#[test]
fn mutate_writes_its_report_in_the_language_asked_for() {
    for (lang, heading) in [
        ("ko", "racegate 보고서: mutate"),
        ("en", "racegate report: mutate"),
    ] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("report");
        let (code, text) = racegate([
            "mutate",
            "kernels/atomic_counter.cu",
            "--html",
            dir.to_str().unwrap(),
            "--lang",
            lang,
        ])
        .at(repo_root())
        .no_gpu()
        .run()
        .exit_text();
        assert_eq!(code, 0, "{text}");
        let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
        assert!(index.contains(heading), "{lang}: {index}");
        assert!(
            index.contains("atomic-to-plain"),
            "the operator table: {index}"
        );
    }
}

#[test]
fn a_gate_without_a_device_still_writes_its_report() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("gate-report");
    let baseline = t.path().join("b.json");
    let (code, text) = racegate([
        "gate",
        "--baseline",
        baseline.to_str().unwrap(),
        "--html",
        dir.to_str().unwrap(),
        "--lang",
        "en",
        "--",
        "/bin/true",
    ])
    .at(repo_root())
    .no_gpu()
    .run()
    .exit_text();
    assert_eq!(code, 4, "{text}");
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(
        index.contains("id=\"verdict\"") && index.contains("no_device"),
        "{index}"
    );
}

#[test]
fn a_language_racegate_does_not_speak_is_refused_before_any_work() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("r");
    let (code, text) = racegate([
        "mutate",
        "kernels/atomic_counter.cu",
        "--html",
        dir.to_str().unwrap(),
        "--lang",
        "fr",
    ])
    .at(repo_root())
    .no_gpu()
    .run()
    .exit_text();
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("en, ko"), "{text}");
    assert!(!dir.exists());
}

/// Every page of a report written to `dir` is valid UTF-8 with no markup from `hostile` and no
/// control byte but newline and tab, its `<pre>` blocks balanced; `shown` is how the hostile
/// text must appear, escaped.
fn assert_inert(dir: &std::path::Path, shown: &str) {
    let mut seen = false;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("html") {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let page = String::from_utf8(bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        for bad in ["<script", "<img", "<b>"] {
            assert!(!page.contains(bad), "{}: {bad} got through", p.display());
        }
        assert!(
            !page
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r'),
            "{}: a control character got through",
            p.display()
        );
        assert_eq!(
            page.matches("<pre").count(),
            page.matches("</pre>").count(),
            "{}: unbalanced <pre>",
            p.display()
        );
        seen |= page.contains(shown);
    }
    assert!(seen, "no page shows {shown:?}");
}

/// A submission's file name with markup, an escape sequence and a byte that is not UTF-8:
/// graded (no device here: compiled, not graded) into an HTML report where it is only text.
#[test]
fn a_hostile_file_name_is_only_text_in_the_grade_report() {
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"a<img src=x onerror=alert(1)>\x1b[31m\xff<pre><b>.cu");
    let sub = t.path().join(name);
    std::fs::copy(
        crate::package_dir().join("tests/submissions/reduce/correct.cu"),
        &sub,
    )
    .unwrap();
    let dir = t.path().join("report");
    let out = racegate(["grade", "--exercise", "reduce", "--html"])
        .args([&dir, &sub])
        .at(repo_root())
        .program_device()
        .no_gpu()
        .run();
    assert!(dir.join("index.html").is_file(), "{out:?}");
    assert_inert(&dir, "a&lt;img");
}

/// A program whose output and error lines carry markup, an escape sequence and bytes that are
/// not UTF-8, and which fails: its exit finding quotes the error line, as text.
#[test]
fn a_programs_hostile_output_is_only_text_in_the_gate_report() {
    let t = tempfile::tempdir().unwrap();
    let prog = t.path().join("prog.sh");
    std::fs::write(
        &prog,
        "#!/bin/sh\nprintf '<script>alert(1)</script> </pre><b>x</b> \\033[31mred\\377\\376\\n'\n\
         printf '<script>alert(2)</script> </pre><b>y</b> \\033[31mred\\377\\376\\n' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = t.path().join("report");
    let baseline = t.path().join("b.json");
    let out = racegate(["gate", "--baseline"])
        .args([&baseline])
        .args(["--html"])
        .args([&dir])
        .args(["--"])
        .args([&prog])
        .at(t.path())
        .program_device()
        .no_gpu()
        .run();
    assert!(dir.join("index.html").is_file(), "{out:?}");
    assert_inert(&dir, "&lt;script&gt;alert(2)");
}
