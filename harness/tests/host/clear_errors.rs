//! Bad input named clearly, before any work, with exit 2: a manifest source that is a FIFO, a
//! folder or a device; a `racegate.toml` that is no file; limits too large to hold; a `--root`
//! that does not exist; a secret file that is not text; `grade --manifest`. And the grading
//! secret never reaches a program that `gate` runs, whichever variable carried it.

use std::path::Path;

use crate::runner::racegate;

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_manifest_source_that_is_no_file_says_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    mkfifo(&dir.join("fifo.cu"));
    std::fs::create_dir(dir.join("folder.cu")).unwrap();
    for (source, says) in [
        ("fifo.cu", "is a FIFO (named pipe), not a source file"),
        ("folder.cu", "is a directory, not a source file"),
        ("/dev/zero", "is a character device, not a source file"),
        ("missing.cu", "does not exist"),
    ] {
        std::fs::write(
            dir.join("racegate.toml"),
            format!(
                "[[kernel]]\nname = \"k\"\nsource = \"{source}\"\nentry = \"k\"\n\
                 sizes = {{ n = [1, 10] }}\ngrid = [\"1\"]\nblock = [\"32\"]\n\
                 oracle = \"none\"\nargs = []\n"
            ),
        )
        .unwrap();
        let (code, text) = racegate(["list"]).at(dir).no_gpu().run().code_text();
        assert_eq!(code, Some(2), "{source}: {text}");
        assert!(text.contains(says), "{source}: {text}");
    }
}

#[test]
fn values_too_large_roots_that_do_not_exist_and_bad_secrets_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let root = super::package_dir().join("..");
    let root = root.to_str().unwrap();
    let sub = super::package_dir().join("tests/submissions/reduce/correct.cu");
    let sub = sub.to_str().unwrap();
    let not_utf8 = dir.join("secret-bin");
    std::fs::write(&not_utf8, b"\xff\xfe42\n").unwrap();
    let empty = dir.join("secret-empty");
    std::fs::write(&empty, "").unwrap();
    let manifest = dir.join("racegate.toml");
    std::fs::write(&manifest, "").unwrap();
    let grade = |extra: &[&str]| {
        let mut args = vec!["--root", root, "grade", "--exercise", "reduce"];
        args.extend_from_slice(extra);
        args.push(sub);
        racegate(&args).at(dir).no_gpu().run().code_text()
    };
    for (extra, says) in [
        (vec!["--compile-memory", "99999999999999"], "at most"),
        (vec!["--jobs", "4294967296"], "too large"),
        (
            vec!["--secret-file", not_utf8.to_str().unwrap()],
            "not UTF-8",
        ),
        (vec!["--secret-file", empty.to_str().unwrap()], "empty"),
        (
            vec!["--manifest", manifest.to_str().unwrap()],
            "grade reads no manifest",
        ),
    ] {
        let (code, text) = grade(&extra);
        assert_eq!(code, Some(2), "{extra:?}: {text}");
        assert!(text.contains(says), "{extra:?}: {text}");
    }
    let (code, text) = racegate([
        "--root",
        "/nonexistent-racegate",
        "grade",
        "--exercise",
        "reduce",
        sub,
    ])
    .at(dir)
    .no_gpu()
    .run()
    .code_text();
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("no such folder"), "{text}");
}

#[test]
fn the_grading_secret_never_reaches_a_gated_program() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let seen = dir.join("env.txt");
    std::fs::write(
        dir.join("prog.sh"),
        format!("#!/bin/sh\nenv >> {}\necho hi\n", seen.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("prog.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_, text) = racegate(["gate", "--tools", "memcheck", "--", "./prog.sh"])
        .at(dir)
        .no_gpu()
        .envs(&[
            ("RACEGATE_GRADE_SECRET", "topsecret-4242"),
            ("RACEGATE_GRADE_SECRET_FILE", "/etc/hostname"),
        ])
        .run()
        .code_text();
    let env = std::fs::read_to_string(&seen).unwrap_or_default();
    // The control: the program ran (and so had an environment to look at).
    assert!(env.contains("PATH="), "the program never ran: {text}");
    assert!(!env.contains("RACEGATE_GRADE_SECRET"), "{env}");
    assert!(!env.contains("topsecret-4242"), "{env}");
}

#[test]
fn a_kernel_file_that_is_not_there_keeps_the_os_reason_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let root = root.to_str().unwrap();
    let (code, out) = racegate(["--root", root, "mutate", "nope.cu"])
        .at(tmp.path())
        .no_gpu()
        .run()
        .code_text();
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("no kernel file nope.cu"), "{out}");
    assert!(out.contains("racegate list"), "the hint stays: {out}");
    assert_eq!(out.matches("No such file or directory").count(), 1, "{out}");
    // The OS error is the cause, printed last in the chain, not text inside the message.
    assert!(out.trim_end().ends_with("(os error 2)"), "{out}");
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
