//! `check_no_device::<name>`: `racegate check` without a device still writes every report it
//! was asked for (`--json` with verdict `no_device` and the host-side work that ran, `--table`
//! with every cell not run and what its header expects, `--junit`), and exits 4; a compile that
//! fails is said in the JSON, not hidden.

use crate::repo_root;
use crate::runner::racegate;

fn check(dir: &std::path::Path, cases: &[&str]) -> (i32, String) {
    let f = |n: &str| dir.join(n).to_str().unwrap().to_string();
    racegate(["check"])
        .args(cases)
        .args([
            "--json",
            &f("c.json"),
            "--table",
            &f("t.md"),
            "--junit",
            &f("j.xml"),
        ])
        .at(repo_root())
        .no_gpu()
        .run()
        .exit_text()
}

#[test]
fn check_writes_every_report_without_a_device() {
    let t = tempfile::tempdir().unwrap();
    let (code, text) = check(
        t.path(),
        &["reduce_sequential", "reduce_sequential::no_loop_sync"],
    );
    assert_eq!(code, 4, "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], "no_device", "{json}");
    assert_eq!(json["exit_code"], 4);
    assert_eq!(json["command"], "check");
    assert_eq!(json["host_checks"][0], "compiled every kernel", "{json}");
    let table = std::fs::read_to_string(t.path().join("t.md")).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| `")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    // The variant's header promises racecheck flags it; the table says so, and that it did
    // not run.
    assert!(
        rows[1].starts_with("| `reduce_sequential::no_loop_sync` |"),
        "{table}"
    );
    assert!(rows[1].contains("not run (expects flag)"), "{table}");
    assert!(
        !rows[0].contains("expects flag"),
        "the correct kernel expects nothing: {table}"
    );
    assert!(table.contains("no CUDA device"), "{table}");
    let junit = std::fs::read_to_string(t.path().join("j.xml")).unwrap();
    assert!(junit.contains("<skipped"), "{junit}");
}

/// `racegate check transpose_padded` without a device (and without ncu): `//@ perf:`
/// expectations listed as skipped with the reason, in the text and in `--json`, none held;
/// `--no-perf` leaves them out.
#[test]
fn check_lists_the_perf_expectations_as_skipped_without_a_device() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("c.json");
    let run = |extra: &[&str]| {
        let out = racegate([
            "check",
            "transpose_padded",
            "--json",
            json.to_str().unwrap(),
        ])
        .args(extra)
        .at(repo_root())
        .no_gpu()
        .env("RACEGATE_NCU", "/nonexistent")
        .run();
        let text = out.stdout.clone();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (out.exit(), text, v)
    };
    let (code, text, v) = run(&[]);
    assert_eq!(code, 4, "{text}");
    for e in ["bank-conflicts=none", "coalesced=yes"] {
        let line =
            format!("skipped  transpose_padded {e} at kernels/transpose.cu:20: no CUDA device");
        assert!(text.contains(&line), "{line}\n{text}");
    }
    assert!(!text.contains("held "), "{text}");
    assert!(
        text.contains("2 perf expectation(s): 0 held, 0 broken, 2 skipped"),
        "{text}"
    );
    let perf = v["perf"].as_array().expect("a perf list");
    assert_eq!(perf.len(), 2, "{v}");
    for p in perf {
        assert_eq!(p["case"], "transpose_padded");
        assert_eq!(p["outcome"], "skipped", "{p}");
        assert!(
            p["reason"].as_str().unwrap().starts_with("no CUDA device"),
            "{p}"
        );
    }
    let (code, text, v) = run(&["--no-perf"]);
    assert_eq!(code, 4, "{text}");
    assert!(!text.contains("perf expectation"), "{text}");
    assert!(v.get("perf").is_none(), "{v}");
}
