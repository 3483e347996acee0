//! Edge values of issue #25 through the real binary: `--jobs 0`; `-` for a report other than
//! `--json`; a `racegate.toml` that is no file; a `--compile-memory` too small for the
//! exercise's reference; a stale Gradescope file on early exits; an unreadable student folder.
//! (Expressions that nest or repeat signs without bound are refused in `source/expr.rs`, tested
//! there.)

use std::process::Command;

use crate::repo_root;
use crate::runner::racegate;

/// `--jobs 0` would run nothing: bad input, on any machine (it was exit 4 without a device).
#[test]
fn jobs_zero_is_refused() {
    let dir = super::exit_codes::project(super::exit_codes::GOOD, "");
    for cmd in ["gate", "check"] {
        let (code, _, err) = racegate([cmd, "--jobs", "0"]).at(dir.path()).run().parts();
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("--jobs"), "{cmd}: {err}");
    }
}

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

/// A `racegate.toml` that is a folder (or anything not a file) is refused by name, not passed
/// over for a search for `kernels/` that then says there is no manifest.
#[test]
fn a_manifest_that_is_not_a_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("racegate.toml");
    std::fs::create_dir(&m).unwrap();
    let (code, _, err) = racegate(["list"]).at(dir.path()).run().parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("racegate.toml is a directory"), "{err}");
    std::fs::remove_dir(&m).unwrap();
    std::os::unix::fs::symlink("nowhere.toml", &m).unwrap();
    let (code, _, err) = racegate(["list"]).at(dir.path()).run().parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("racegate.toml"), "{err}");
    assert!(!err.contains("no kernels/ folder"), "{err}");
}

/// A `--compile-memory` so small that the exercise's own reference cannot compile is the
/// configuration's fault: exit 2 naming the flag, nothing graded (it was a zero for
/// "compiles" for every correct submission). The default limits grade normally.
#[test]
fn a_compile_memory_too_small_for_the_reference_is_bad_input() {
    let root = repo_root();
    if racegate::build::toolchain::nvrtc().is_err() {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "NVRTC is needed (CI=true)");
        eprintln!("NOT RUN: no NVRTC (racegate setup)");
        return;
    }
    let sub = root.join("harness/tests/submissions/reduce/correct.cu");
    let sub = sub.to_str().unwrap();
    let root_s = root.to_str().unwrap();
    for mib in ["256", "300"] {
        let (code, out, err) = racegate([
            "--root",
            root_s,
            "grade",
            "--exercise",
            "reduce",
            "--compile-memory",
            mib,
            sub,
        ])
        .at(&root)
        .no_gpu()
        .run()
        .parts();
        assert_eq!(code, 2, "--compile-memory {mib}: {out}{err}");
        assert!(
            err.contains("--compile-memory is too small") && err.contains("Nothing was graded"),
            "{err}"
        );
        assert!(!out.contains("compiles"), "graded anyway: {out}");
    }
    // Limits the reference fits in, given or by default, grade as always (no false alarm).
    for extra in [&["--compile-memory", "1024"][..], &[]] {
        let mut args = vec!["--root", root_s, "grade", "--exercise", "reduce"];
        args.extend_from_slice(extra);
        args.push(sub);
        let (code, out, err) = racegate(&args).at(&root).no_gpu().run().parts();
        assert_eq!(code, 4, "{extra:?}: {out}{err}");
        assert!(out.contains("PASS compiles"), "{extra:?}: {out}");
        assert!(!err.contains("too small"), "{err}");
    }
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

/// One student's folder that cannot be read is skipped with a note; the others are graded
/// (it aborted the whole batch). Permissions bind root only through another uid: as root the
/// command runs as `nobody` (setpriv), so the test runs everywhere. The course is the one
/// racegate ships (no `--root`), written into the test's own cache: `nobody` may be unable to
/// reach the checkout at all (a GPU runner's copy under a private `mktemp -d` folder).
#[test]
fn an_unreadable_student_folder_is_skipped_and_the_batch_goes_on() {
    use std::os::unix::fs::PermissionsExt;
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let batch = dir.path().join("batch");
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    let correct = root.join("harness/tests/submissions/reduce/correct.cu");
    for student in ["alice", "bob", "carol"] {
        let d = batch.join(student);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(&correct, d.join("reduce.cu")).unwrap();
    }
    std::fs::set_permissions(batch.join("bob"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let root_uid = unsafe { libc::getuid() } == 0;
    let mut cmd = if root_uid {
        for p in [&batch, &cache] {
            std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
        }
        for s in ["alice", "carol"] {
            std::os::unix::fs::chown(batch.join(s), Some(65534), Some(65534)).unwrap();
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(super::racegate_exe());
        c
    } else {
        Command::new(super::racegate_exe())
    };
    let out = cmd
        .args(["grade", "--exercise", "reduce"])
        .arg(&batch)
        .env("RACEGATE_NO_GPU", "1")
        .env("RACEGATE_CACHE", &cache)
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .output()
        .expect("racegate runs");
    std::fs::set_permissions(batch.join("bob"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stdout, stderr) = (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(code, 4, "no device: {stdout}{stderr}");
    assert!(
        stderr.contains("bob: a folder that cannot be read: Permission denied"),
        "{stderr}"
    );
    for s in ["alice/reduce.cu", "carol/reduce.cu"] {
        assert!(stdout.contains(s), "{s} not graded: {stdout}{stderr}");
    }
    assert!(!stdout.contains("bob"), "{stdout}");
}
