//! `html_flag::<name>`: `--html DIR [--lang L]` on the commands that report (`mutate`, `gate`;
//! `check` and `grade` share the same code) writes the HTML report of the result its `--json`
//! holds, in the language asked for.

use std::process::Command;

fn racegate(args: &[&str]) -> (i32, String) {
    let out = Command::new(crate::racegate_exe())
        .args(args)
        .current_dir(crate::package_dir().parent().unwrap())
        .env("RACEGATE_NO_GPU", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn mutate_writes_its_report_in_the_language_asked_for() {
    for (lang, heading) in [
        ("ko", "racegate 보고서: mutate"),
        ("en", "racegate report: mutate"),
    ] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("report");
        let (code, text) = racegate(&[
            "mutate",
            "kernels/atomic_counter.cu",
            "--html",
            dir.to_str().unwrap(),
            "--lang",
            lang,
        ]);
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
    let (code, text) = racegate(&[
        "gate",
        "--baseline",
        baseline.to_str().unwrap(),
        "--html",
        dir.to_str().unwrap(),
        "--lang",
        "en",
        "--",
        "/bin/true",
    ]);
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
    let (code, text) = racegate(&[
        "mutate",
        "kernels/atomic_counter.cu",
        "--html",
        dir.to_str().unwrap(),
        "--lang",
        "fr",
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("en, ko"), "{text}");
    assert!(!dir.exists());
}
