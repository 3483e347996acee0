//! `no_device_artifacts::<name>`: without a device, manifest-mode `gate`, `stress`, `sanitize`,
//! `bench`, `perf` and `mutate --run` still write every artifact asked for (verdict `no_device`),
//! and still exit 4.

use std::path::Path;

use crate::runner::racegate;

fn example_gate() -> std::path::PathBuf {
    super::package_dir().join("../examples/gate")
}

fn json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", p.display()))
}

#[test]
fn gate_writes_every_report_without_a_device() {
    let t = tempfile::tempdir().unwrap();
    let f = |n: &str| t.path().join(n);
    let (code, _, err) = racegate([
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
    ])
    .at(example_gate())
    .no_gpu()
    .run()
    .parts();
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
    // Every check that could not run is listed as skipped with its reason, not left out.
    assert!(
        junit.contains("::racecheck\"")
            && junit.contains("<skipped message=\"inconclusive: no CUDA device"),
        "{junit}"
    );
    let sarif = json(&f("g.sarif"));
    let notes = &sarif["runs"][0]["invocations"][0];
    assert_eq!(notes["executionSuccessful"], false, "{sarif}");
    assert!(
        notes["toolExecutionNotifications"]
            .as_array()
            .is_some_and(|n| n.iter().any(|n| n["message"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("::racecheck not judged: no CUDA device")))),
        "{sarif}"
    );
    assert!(!std::fs::read_to_string(f("g.md")).unwrap().is_empty());
}

/// A program run without a device, as a new user's first try: its own "no device" exit is no
/// finding, the tools are listed as not run, and `--update-baseline` writes nothing (exit 4).
#[test]
fn a_programs_exit_without_a_device_is_no_finding_and_enters_no_baseline() {
    let t = tempfile::tempdir().unwrap();
    let prog = t.path().join("prog.sh");
    std::fs::write(
        &prog,
        "#!/bin/sh\necho 'CUDA error: no CUDA-capable device is detected' >&2\nexit 1\n",
    )
    .unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&prog, mode).unwrap();
    let run = |args: &[&str]| racegate(args).at(t.path()).no_gpu().run().exit_text();
    let (code, text) = run(&[
        "gate",
        "--json",
        "g.json",
        "--junit",
        "g.xml",
        "--",
        "./prog.sh",
    ]);
    assert_eq!(code, 4, "{text}");
    assert!(!text.contains("NEW "), "{text}");
    assert!(!text.contains("FOUND"), "{text}");
    let v = json(&t.path().join("g.json"));
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v}");
    let inc = v["inconclusive"].as_array().unwrap();
    assert!(
        inc.iter().any(|i| i["detector"] == "exit"
            && i["reason"]
                .as_str()
                .is_some_and(|r| r.contains("no CUDA device") && r.contains("exits with code 1"))),
        "{v}"
    );
    // Each tool chosen is named as not run.
    for tool in ["racecheck", "memcheck", "globalcheck"] {
        assert!(
            inc.iter().any(|i| i["detector"] == tool
                && i["reason"].as_str().is_some_and(|r| r.ends_with("not run"))),
            "{tool}: {v}"
        );
    }
    let junit = std::fs::read_to_string(t.path().join("g.xml")).unwrap();
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(junit.contains("prog.sh::memcheck"), "{junit}");
    // A program that exits 0 without a device is not judged either (an accepted finding of it
    // must not read as fixed): its exit, output and hang checks are undecided.
    let (code, text) = run(&["gate", "--json", "t.json", "--", "true"]);
    assert_eq!(code, 4, "{text}");
    let v = json(&t.path().join("t.json"));
    for det in ["exit", "output", "watchdog"] {
        assert!(
            v["inconclusive"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["detector"] == det),
            "{det}: {v}"
        );
    }
    // Nothing enters a baseline: refused before the program runs, the file not created.
    let (code, text) = run(&["gate", "--update-baseline", "--", "./prog.sh"]);
    assert_eq!(code, 4, "{text}");
    assert!(text.contains("was not updated"), "{text}");
    assert!(!t.path().join("racegate-program-baseline.json").exists());
}

#[test]
fn gate_json_to_stdout_without_a_device() {
    let (code, out, err) = racegate(["gate", "--json", "-"])
        .at(example_gate())
        .no_gpu()
        .run()
        .parts();
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
        let (code, _, err) = racegate(&args).at(example_gate()).no_gpu().run().parts();
        assert_eq!(code, 4, "{args:?}: {err}");
        let v = json(&j);
        assert_eq!(v["verdict"], "no_device", "{args:?}");
        assert_eq!(v["subject"], "scale", "{args:?}");
        let (code, out, err) = racegate([&base[..], &["--json", "-"]].concat())
            .at(example_gate())
            .no_gpu()
            .run()
            .parts();
        assert_eq!(code, 4, "{err}");
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        assert_eq!(v["exit_code"], 4);
    }
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("no CUDA device"));
}

/// `bench` (both modes), `perf` and `mutate --run` write what they were asked for without a
/// device too: the JSON with the verdict, and the table (or HTML) saying nothing was measured.
#[test]
fn bench_perf_and_mutate_write_their_artifacts_without_a_device() {
    let t = tempfile::tempdir().unwrap();
    let f = |n: &str| t.path().join(n).to_str().unwrap().to_string();
    let corpus = super::package_dir().join("../examples/corpus/racegate.toml");
    let corpus = corpus.to_str().unwrap();
    let runs: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            vec!["bench".into(), "--json".into(), f("b.json")],
            vec!["b.json"],
        ),
        (
            vec![
                "--manifest".into(),
                corpus.into(),
                "bench".into(),
                "--detection".into(),
                "--table".into(),
                f("d.md"),
                "--json".into(),
                f("d.json"),
            ],
            vec!["d.json", "d.md"],
        ),
        (
            vec![
                "perf".into(),
                "--table".into(),
                f("p.md"),
                "--json".into(),
                f("p.json"),
            ],
            vec!["p.json", "p.md"],
        ),
        (
            vec![
                "mutate".into(),
                "--run".into(),
                "--table".into(),
                f("m.md"),
                "--json".into(),
                f("m.json"),
                "--html".into(),
                f("m-html"),
            ],
            vec!["m.json", "m.md"],
        ),
    ];
    for (args, wrote) in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = racegate(&args).at(example_gate()).no_gpu().run().parts();
        assert_eq!(code, 4, "{args:?}: {err}");
        for w in wrote {
            let p = t.path().join(w);
            if w.ends_with(".json") {
                let v = json(&p);
                assert_eq!(v["verdict"], "no_device", "{args:?}: {v}");
                assert_eq!(v["exit_code"], 4, "{args:?}");
            } else {
                let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{w}: {e}"));
                assert!(text.contains("no CUDA device"), "{w}: {text}");
            }
        }
    }
    // A table already there (a committed one) is left as it was: nothing was measured.
    let kept = t.path().join("kept.md");
    std::fs::write(&kept, "the committed table\n").unwrap();
    for args in [
        vec!["perf", "--table", kept.to_str().unwrap()],
        vec!["mutate", "--run", "--table", kept.to_str().unwrap()],
    ] {
        let (code, _, err) = racegate(&args).at(example_gate()).no_gpu().run().parts();
        assert_eq!(code, 4, "{args:?}: {err}");
        assert!(err.contains("left as it was"), "{args:?}: {err}");
        assert_eq!(
            std::fs::read_to_string(&kept).unwrap(),
            "the committed table\n"
        );
    }
    // The mutants are listed, none run, and the HTML report renders them.
    let m = json(&t.path().join("m.json"));
    assert_eq!(m["ran"], false);
    let outcomes: Vec<&serde_json::Value> = m["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["mutants"].as_array().unwrap())
        .map(|x| &x["outcome"])
        .collect();
    assert!(!outcomes.is_empty(), "{m}");
    assert!(outcomes.iter().all(|o| *o == "not-run"), "{outcomes:?}");
    assert!(t.path().join("m-html/index.html").is_file());
}
