//! `check_no_device::<name>`: `racegate check` without a device still writes every report it
//! was asked for (`--json` with verdict `no_device` and the host-side work that ran, `--table`
//! with every cell not run and what its header expects, `--junit`), and exits 4; a compile that
//! fails is said in the JSON, not hidden.

use std::process::Command;

fn check(dir: &std::path::Path, cases: &[&str]) -> (i32, String) {
    let f = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let out = Command::new(crate::racegate_exe())
        .arg("check")
        .args(cases)
        .args([
            "--json",
            &f("c.json"),
            "--table",
            &f("t.md"),
            "--junit",
            &f("j.xml"),
        ])
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
