//! `grade::<name>`: `racegate grade` end to end without a device, on folders of students (one
//! of them unreadable), a batch with hostile files, an oversized file, the output formats,
//! another user's cache folder and a compile memory limit too small for the exercise's reference. What each sample submission gets is `racegate-tests`' `grade::host::<exercise>::*`,
//! and the graded runs on a GPU its `grade::gpu::*`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runner::racegate;
use crate::{nvrtc_or_not_run, repo_root, temp_dir, Failed};

/// The sample submissions, one folder per exercise.
fn submissions(root: &Path) -> PathBuf {
    root.join("harness/tests/submissions")
}

#[test]
fn batch_of_student_folders() -> Result<(), Failed> {
    let root = repo_root();
    let dir = temp_dir("racegate-batch-")?;
    let samples = submissions(&root).join("reduce");
    let put = |to: &str, from: &str| -> Result<(), Failed> {
        let to = dir.path().join(to);
        std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::copy(samples.join(from), to).map_err(|e| e.to_string())?;
        Ok(())
    };
    put("alice/reduce.cu", "correct.cu")?;
    put("bob/reduce.cu", "wrong_name.cu")?;
    put("carol.cu", "correct.cu")?;
    put("dave/REDUCE.CU", "correct.cu")?;
    put("-rf.cu", "correct.cu")?;
    put(".git/hooks.cu", "correct.cu")?;
    put("alice/notes.txt", "correct.cu")?;
    put("erin/deeper/reduce.cu", "correct.cu")?;
    let (code, json, stderr) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "json",
        dir.path().to_str().unwrap(),
    ])
    .at(&root)
    .no_gpu()
    .run()
    .parts();
    let grades: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("{e}: {json}\n{stderr}"))?;
    let compiles = |who: &str| {
        grades
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|g| g["submission"].as_str().unwrap_or("").ends_with(who))
            })
            .map(|g| g["items"][0]["status"].as_str().unwrap_or("").to_string())
    };
    let n = grades.as_array().map_or(0, |a| a.len());
    if code != 4
        || n != 5
        || compiles("alice/reduce.cu").as_deref() != Some("passed")
        || compiles("bob/reduce.cu").as_deref() != Some("failed")
        || compiles("carol.cu").as_deref() != Some("passed")
        || compiles("dave/REDUCE.CU").as_deref() != Some("passed")
        || compiles("/-rf.cu").as_deref() != Some("passed")
        || grades
            .as_array()
            .unwrap()
            .iter()
            .any(|g| !g["score"].is_null())
    {
        return Err(format!("exit {code}, {n} grades\n{json}\n{stderr}").into());
    }
    for skipped in [
        ".git: a hidden name",
        "notes.txt: not a .cu file",
        "deeper: a folder nested more than one level deep",
    ] {
        if !stderr.contains(skipped) {
            return Err(format!("the skipped entry `{skipped}` is not listed:\n{stderr}").into());
        }
    }
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
    let (empty_code, _, empty_err) =
        racegate(["grade", "--exercise", "reduce", empty.to_str().unwrap()])
            .at(&root)
            .no_gpu()
            .run()
            .parts();
    if empty_code != 2 || !empty_err.contains("no .cu submissions in") {
        return Err(format!("empty folder: exit {empty_code}: {empty_err}").into());
    }
    // A file named like an option, after `--`.
    let (dash_code, dash_out, dash_err) = racegate([
        "--root",
        root.to_str().unwrap(),
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "json",
        "--",
        "-rf.cu",
    ])
    .at(dir.path())
    .no_gpu()
    .run()
    .parts();
    if dash_code != 4 || !dash_out.contains("\"status\": \"passed\"") {
        return Err(format!("-- -rf.cu: exit {dash_code}\n{dash_out}\n{dash_err}").into());
    }
    Ok(())
}

#[test]
fn hostile_batch_goes_on() -> Result<(), Failed> {
    let root = repo_root();
    // The stack-overflow file, the macro bomb and a correct submission in one batch:
    // the bomb is stopped at its deadline, and the others are graded as if alone.
    let dir = temp_dir("racegate-hostile-batch-")?;
    let hostile = submissions(&root).join("hostile");
    for (from, to) in [
        (hostile.join("stack_overflow.cu"), "deep.cu"),
        (hostile.join("macro_bomb.cu"), "bomb.cu"),
        (submissions(&root).join("reduce/correct.cu"), "correct.cu"),
    ] {
        std::fs::copy(from, dir.path().join(to)).map_err(|e| e.to_string())?;
    }
    let start = std::time::Instant::now();
    let (code, json, stderr) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "json",
        "--compile-timeout",
        "5",
        dir.path().to_str().unwrap(),
    ])
    .at(&root)
    .no_gpu()
    .run()
    .parts();
    let took = start.elapsed();
    let grades: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("{e}: {json}\n{stderr}"))?;
    let compiles = |who: &str| {
        grades.as_array().and_then(|a| {
            a.iter()
                .find(|g| g["submission"].as_str().unwrap_or("").ends_with(who))
                .map(|g| g["items"][0].clone())
        })
    };
    let ok = |who: &str| compiles(who).is_some_and(|c| c["status"] == "passed");
    let bomb = compiles("bomb.cu")
        .map(|c| c["detail"].to_string())
        .unwrap_or_default();
    if code != 4
        || !ok("correct.cu")
        || !ok("deep.cu")
        || !bomb.contains("did not finish within 5 s")
        || took > std::time::Duration::from_secs(30)
    {
        return Err(format!("exit {code} in {took:?}\n{json}\n{stderr}").into());
    }
    Ok(())
}

#[test]
fn a_cache_folder_of_another_user_is_refused() -> Result<(), Failed> {
    let root = repo_root();
    // Real uids need root to give a folder away; elsewhere the unit tests of
    // `racegate::build::cache` refuse it through a fake owner check.
    // SAFETY: getuid cannot fail.
    if unsafe { libc::getuid() } != 0 {
        eprintln!(
            "NOT RUN: needs root to give a folder to another uid (the unit tests of build::cache \
             cover it with a fake owner)"
        );
        return Ok(());
    }
    let dir = temp_dir("racegate-cache-")?;
    let cache = dir.path().join("planted");
    std::fs::create_dir(&cache).map_err(|e| e.to_string())?;
    std::os::unix::fs::chown(&cache, Some(12345), Some(12345)).map_err(|e| e.to_string())?;
    let one = submissions(&root).join("reduce/correct.cu");
    let (code, out, err) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "json",
        one.to_str().unwrap(),
    ])
    .at(&root)
    .envs(&[("RACEGATE_CACHE", cache.to_str().unwrap())])
    .run()
    .parts();
    let want = "belongs to another user (uid 12345";
    if (code != 3 && code != 4) || !(out.contains(want) || err.contains(want)) {
        return Err(format!("exit {code}\n{out}\n{err}").into());
    }
    Ok(())
}

#[test]
fn huge_file() -> Result<(), Failed> {
    let root = repo_root();
    let dir = temp_dir("racegate-huge-")?;
    let f = dir.path().join("huge.cu");
    std::fs::write(&f, "// padding\n".repeat(30_000)).map_err(|e| e.to_string())?;
    let (code, stdout, _) = racegate(["grade", "--exercise", "reduce", f.to_str().unwrap()])
        .at(&root)
        .no_gpu()
        .run()
        .parts();
    if code != 4
        || !stdout.contains("submissions are limited to 262144 bytes")
        || !stdout.contains("huge.cu: not graded (reduce)")
    {
        return Err(format!("exit {code}\n{stdout}").into());
    }
    Ok(())
}

#[test]
fn batch_csv_and_formats() -> Result<(), Failed> {
    let root = repo_root();
    let dir = submissions(&root).join("reduce");
    let (code, csv, stderr) = racegate(["grade", "--exercise", "reduce", dir.to_str().unwrap()])
        .at(&root)
        .no_gpu()
        .run()
        .parts();
    let rows: Vec<&str> = csv.lines().collect();
    let files = std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cu"))
        .count();
    if code != 4
        || !rows[0].starts_with("submission,score,max_score,compiles,correct")
        || !rows[0].ends_with(",note")
        || rows.len() != files + 1
        || rows[1..].iter().any(|r| !r.contains(",not graded,"))
    {
        return Err(format!(
            "exit {code}, {} rows for {files} files\n{csv}\n{stderr}",
            rows.len()
        )
        .into());
    }
    // Gradescope without a GPU: no grade written (an autograder failure there); a
    // results.json that was there before is left as it was, and said to be.
    let one = dir.join("correct.cu");
    let out = temp_dir("racegate-gs-")?;
    let results = out.path().join("results.json");
    std::fs::write(&results, "{\"score\": 100}").map_err(|e| e.to_string())?;
    let (gs_code, gs, gs_err) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "gradescope",
        "--output",
        results.to_str().unwrap(),
        one.to_str().unwrap(),
    ])
    .at(&root)
    .no_gpu()
    .run()
    .parts();
    if gs_code != 4
        || !gs.is_empty()
        || std::fs::read_to_string(&results).ok().as_deref() != Some("{\"score\": 100}")
        || !gs_err.contains("left as it was")
        || !gs_err.contains("no CUDA device")
    {
        return Err(format!("gradescope: exit {gs_code}: {gs}\n{gs_err}").into());
    }
    let (pl_code, pl, _) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "prairielearn",
        one.to_str().unwrap(),
    ])
    .at(&root)
    .no_gpu()
    .run()
    .parts();
    let v: serde_json::Value = serde_json::from_str(&pl).map_err(|e| e.to_string())?;
    if pl_code != 4 || v["gradable"] != false || v.get("score").is_some() {
        return Err(format!("prairielearn: exit {pl_code}: {pl}").into());
    }
    let (code, _, stderr) = racegate(["grade", "--exercise", "reduction", one.to_str().unwrap()])
        .at(&root)
        .no_gpu()
        .run()
        .parts();
    if code != 2 || !stderr.contains("no exercise `reduction`; known exercises:") {
        return Err(format!("unknown exercise: exit {code}: {stderr}").into());
    }
    Ok(())
}

/// A `--compile-memory` so small that the exercise's own reference cannot compile is the
/// configuration's fault: exit 2 naming the flag, nothing graded (it was a zero for
/// "compiles" for every correct submission). The default limits grade normally.
#[test]
fn a_compile_memory_too_small_for_the_reference_is_bad_input() {
    let root = repo_root();
    if !nvrtc_or_not_run() {
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
            .arg(crate::racegate_exe());
        c
    } else {
        Command::new(crate::racegate_exe())
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
