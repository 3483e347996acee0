//! `report_outputs::<name>`: where a report goes. `-` is standard output for `--json` only,
//! every other report flag refuses it; a run that ends early leaves a report file that was there
//! before as it was (racegate deletes no file it did not create in this run); a standard output
//! that is full or closed is no crash.

use std::process::Stdio;

use crate::repo_root;
use crate::runner::racegate;

/// `-` is standard output for `--json` only; every other report flag of every command refuses
/// it (exit 2, before any work) instead of creating a file named `-`, as `--sarif -` did.
#[test]
fn a_dash_is_standard_output_for_json_only() {
    let dir = super::exit_codes::project(super::exit_codes::GOOD, "");
    let cases: &[(&str, &str)] = &[
        ("gate", "--sarif"),
        ("gate", "--junit"),
        ("gate", "--summary"),
        ("check", "--table"),
        ("check", "--junit"),
        ("mutate", "--table"),
        ("sanitize", "--save-log"),
    ];
    for (cmd, flag) in cases {
        let mut args = vec![*cmd, *flag, "-"];
        if *cmd == "sanitize" {
            args.extend(["--tool", "memcheck", "k"]);
        }
        let (code, out, err) = racegate(&args).at(dir.path()).no_gpu().run().parts();
        assert_eq!(code, 2, "{cmd} {flag} -: {out}{err}");
        assert!(
            err.contains(&format!("{flag} -: only --json writes to standard output")),
            "{cmd} {flag} -: {err}"
        );
        assert!(
            !dir.path().join("-").exists(),
            "{cmd} {flag} - made a file `-`"
        );
    }
    // `--json -` is standard output, and `./-` is still a file named `-`.
    let (code, out, err) = racegate(["list", "--json", "-"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<serde_json::Value>(&out).expect("only JSON on stdout");
    let (code, _, err) = racegate(["gate", "--sarif", "./-"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 4, "{err}");
    assert!(dir.path().join("-").is_file());
}

/// Every early exit of `grade --format gradescope --output FILE` leaves a FILE that was there
/// before the run as it was: racegate deletes no file it did not create in this run; a `.json`
/// the command line names as an input (the rubric) is refused as an output.
#[test]
fn every_early_exit_leaves_an_existing_output_as_it_was() {
    let root = repo_root();
    let root_s = root.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    let res = results.to_str().unwrap();
    let sub = root.join("harness/tests/submissions/reduce/correct.cu");
    let sub = sub.to_str().unwrap();
    let rubric_json = dir.path().join("rubric.json");
    std::fs::write(&rubric_json, "{}").unwrap();
    let bad_rubric = dir.path().join("bad.toml");
    std::fs::write(&bad_rubric, "this is = = not toml").unwrap();
    let base = [
        "--root",
        root_s,
        "grade",
        "--format",
        "gradescope",
        "--output",
        res,
    ];
    let early: Vec<Vec<&str>> = vec![
        vec!["--exercise", "no_such_exercise", sub],
        vec![
            "--exercise",
            "reduce",
            "--rubric",
            "/nonexistent/rubric.toml",
            sub,
        ],
        vec![
            "--exercise",
            "reduce",
            "--rubric",
            bad_rubric.to_str().unwrap(),
            sub,
        ],
        vec!["--exercise", "reduce", "--compile-memory", "256", sub],
        vec![
            "--exercise",
            "reduce",
            "--secret-file",
            "/nonexistent/secret",
            sub,
        ],
    ];
    for extra in &early {
        std::fs::write(&results, r#"{"score": 100.0}"#).unwrap();
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let (code, out, err) = racegate(&args).at(&root).no_gpu().run().parts();
        assert_ne!(code, 0, "{extra:?}: {out}{err}");
        if extra.contains(&"256") && !err.contains("too small") {
            // No NVRTC here: the limits cannot be checked (the test above says so).
            continue;
        }
        assert_eq!(
            std::fs::read_to_string(&results).ok().as_deref(),
            Some(r#"{"score": 100.0}"#),
            "{extra:?} (exit {code}) changed or removed the existing results.json: {err}"
        );
    }
    // The output named as the rubric too: refused, and the rubric stays.
    let args: Vec<&str> = [
        "--root",
        root_s,
        "grade",
        "--format",
        "gradescope",
        "--output",
        rubric_json.to_str().unwrap(),
        "--exercise",
        "reduce",
        "--rubric",
        rubric_json.to_str().unwrap(),
        sub,
    ]
    .to_vec();
    let (code, _, err) = racegate(&args).at(&root).no_gpu().run().parts();
    assert_eq!(code, 2, "{err}");
    assert!(rubric_json.is_file(), "the rubric was removed: {err}");
}

#[test]
fn a_full_or_closed_stdout_is_no_crash() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    if let Ok(full) = full {
        let out = racegate(["list"])
            .at(repo_root())
            .command()
            .stdout(Stdio::from(full))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains("writing standard output") && !err.contains("panicked"),
            "{err}"
        );
    }
    // A reader that closes the pipe before racegate writes.
    let mut child = racegate(["list"])
        .at(repo_root())
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
