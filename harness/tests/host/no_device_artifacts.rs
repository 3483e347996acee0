//! Issue #32: without a device, manifest-mode `gate`, `stress` and `sanitize` still write every
//! artifact asked for (verdict `no_device`), and still exit 4.

use std::path::Path;
use std::process::Command;

fn example_gate() -> std::path::PathBuf {
    super::package_dir().join("../examples/gate")
}

/// Runs racegate in examples/gate without a device; the exit code and standard output.
fn racegate(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(super::racegate_exe())
        .args(args)
        .current_dir(example_gate())
        .env("RACEGATE_NO_GPU", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", p.display()))
}

#[test]
fn gate_writes_every_report_without_a_device() {
    let t = tempfile::tempdir().unwrap();
    let f = |n: &str| t.path().join(n);
    let (code, _, err) = racegate(&[
        "gate",
        "--json",
        f("g.json").to_str().unwrap(),
        "--junit",
        f("g.xml").to_str().unwrap(),
        "--sarif",
        f("g.sarif").to_str().unwrap(),
        "--summary",
        f("g.md").to_str().unwrap(),
        "--codequality",
        f("cq.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 4, "{err}");
    let v = json(&f("g.json"));
    assert_eq!(v["verdict"], "no_device");
    assert_eq!(v["exit_code"], 4);
    assert!(
        v["checked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["detector"] == "compile"),
        "{v}"
    );
    assert_eq!(json(&f("g.sarif"))["version"], "2.1.0");
    json(&f("cq.json"));
    let junit = std::fs::read_to_string(f("g.xml")).unwrap();
    assert!(
        junit.starts_with("<?xml") && junit.contains("</testsuites>"),
        "{junit}"
    );
    assert!(!std::fs::read_to_string(f("g.md")).unwrap().is_empty());
}

#[test]
fn gate_json_to_stdout_without_a_device() {
    let (code, out, err) = racegate(&["gate", "--json", "-"]);
    assert_eq!(code, 4, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["verdict"], "no_device");
}

#[test]
fn stress_and_sanitize_write_their_json_without_a_device() {
    let t = tempfile::tempdir().unwrap();
    let j = t.path().join("s.json");
    let log = t.path().join("s.log");
    let runs: [&[&str]; 2] = [
        &["stress", "scale"],
        &["sanitize", "--tool", "racecheck", "scale"],
    ];
    for args in runs {
        let _ = std::fs::remove_file(&j);
        let base = args.to_vec();
        let mut args = base.clone();
        args.extend(["--json", j.to_str().unwrap()]);
        if args[0] == "sanitize" {
            args.extend(["--save-log", log.to_str().unwrap()]);
        }
        let (code, _, err) = racegate(&args);
        assert_eq!(code, 4, "{args:?}: {err}");
        let v = json(&j);
        assert_eq!(v["verdict"], "no_device", "{args:?}");
        assert_eq!(v["subject"], "scale", "{args:?}");
        let (code, out, err) = racegate(&[&base[..], &["--json", "-"]].concat());
        assert_eq!(code, 4, "{err}");
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        assert_eq!(v["exit_code"], 4);
    }
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("no CUDA device"));
}
