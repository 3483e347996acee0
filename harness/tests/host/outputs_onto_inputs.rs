//! One rule for every file racegate writes: no output may be an input of the run, whatever the
//! spelling (the path itself, a symbolic link to it, a hard link to it, a path through `..`),
//! for every report flag of `gate`, `check`, `list`, `stress`, `sanitize`, `bench`, `perf`,
//! `mutate` and `grade`. Each aim is refused with exit 2 before
//! any work, and every input keeps its bytes. `--html` is checked up front the same way.

use std::path::{Path, PathBuf};

use crate::runner::racegate;

/// The ways to name `input` from `dir` that are not its plain path: made fresh in `aims/`.
fn aims(dir: &Path, input: &Path, n: usize) -> Vec<(String, PathBuf)> {
    let aims = dir.join(format!("aims-{}", std::process::id()));
    std::fs::create_dir_all(&aims).unwrap();
    let aims = tempfile::Builder::new()
        .prefix("aim")
        .tempdir_in(&aims)
        .unwrap()
        .keep();
    let sym = aims.join(format!("sym{n}.out"));
    std::os::unix::fs::symlink(input, &sym).unwrap();
    let hard = aims.join(format!("hard{n}.out"));
    std::fs::hard_link(input, &hard).unwrap();
    let parent = input.parent().unwrap();
    let dotdot = parent
        .join("..")
        .join(parent.file_name().unwrap())
        .join(input.file_name().unwrap());
    vec![
        ("the path".into(), input.to_path_buf()),
        ("a symbolic link".into(), sym),
        ("a hard link".into(), hard),
        ("a path through ..".into(), dotdot),
    ]
}

/// Every (flag, aim) of `command` at every input: exit 2, "an input of this run", and every
/// input's bytes as they were.
fn refused_everywhere(dir: &Path, command: &[&str], flags: &[&str], inputs: &[PathBuf]) {
    let before: Vec<Vec<u8>> = inputs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut n = 0;
    for input in inputs {
        for (how, aim) in aims(dir, input, n) {
            n += 1;
            for flag in flags {
                let aim_s = aim.to_str().unwrap();
                let mut args: Vec<&str> = command.to_vec();
                args.extend([*flag, aim_s]);
                let (code, text) = racegate(&args).at(dir).no_gpu().run().code_text();
                assert_eq!(
                    code,
                    Some(2),
                    "{command:?} {flag} at {} as {how}: {text}",
                    input.display()
                );
                assert!(
                    text.contains("an input of this run"),
                    "{flag} {how}: {text}"
                );
                for (p, b) in inputs.iter().zip(&before) {
                    assert_eq!(&std::fs::read(p).unwrap(), b, "{} changed", p.display());
                }
            }
        }
    }
}

#[test]
fn a_gate_report_aimed_at_any_input_is_refused_before_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("project");
    super::copy_dir(&super::package_dir().join("../examples/gate"), &dir);
    let inputs: Vec<PathBuf> = [
        "racegate.toml",
        "kernels/scale.cu",
        "reference/scale_ref.cu",
        "racegate-baseline.json",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect();
    let flags = ["--json", "--sarif", "--junit", "--summary", "--codequality"];
    refused_everywhere(&dir, &["gate"], &flags, &inputs);
    refused_everywhere(
        &dir,
        &["check"],
        &["--json", "--junit", "--table"],
        &inputs[..3],
    );
    // Every other command that writes a report from the manifest's kernels.
    for (command, flags) in [
        (&["list"][..], &["--json"][..]),
        (&["stress", "scale"][..], &["--json"][..]),
        (
            &["sanitize", "--tool", "memcheck", "scale"][..],
            &["--json"][..],
        ),
        (&["bench"][..], &["--json"][..]),
        (&["perf"][..], &["--json", "--table"][..]),
        (&["mutate"][..], &["--json", "--table"][..]),
    ] {
        refused_everywhere(&dir, command, flags, &inputs[..3]);
    }
}

#[test]
fn a_program_gates_report_aimed_at_the_program_or_its_checker_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let prog = dir.join("prog.sh");
    std::fs::write(&prog, "#!/bin/sh\necho 1\n").unwrap();
    let check = dir.join("check.sh");
    std::fs::write(&check, "#!/bin/sh\nexit 0\n").unwrap();
    let data = dir.join("input.dat");
    std::fs::write(&data, "data\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    for p in [&prog, &check] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for (flag, target) in [("--json", &check), ("--sarif", &prog), ("--junit", &data)] {
        let (code, text) = racegate([
            "gate",
            "--check",
            "./check.sh --strict",
            flag,
            target.to_str().unwrap(),
            "--",
            "./prog.sh",
            "input.dat",
        ])
        .at(&dir)
        .no_gpu()
        .run()
        .code_text();
        assert_eq!(code, Some(2), "{flag}: {text}");
        assert!(text.contains("an input of this run"), "{text}");
    }
    assert_eq!(
        std::fs::read_to_string(&check).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
}

#[test]
fn a_grade_output_aimed_at_any_input_is_refused_before_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let root = super::package_dir().join("..");
    let sub = dir.join("alice.cu");
    std::fs::copy(
        super::package_dir().join("tests/submissions/reduce/correct.cu"),
        &sub,
    )
    .unwrap();
    let rubric = dir.join("rubric.toml");
    std::fs::copy(root.join("grading/rubric.toml"), &rubric).unwrap();
    let secret = dir.join("secret");
    std::fs::write(&secret, "42\n").unwrap();
    let root_s = root.to_str().unwrap().to_string();
    let (rubric_s, secret_s, sub_s) = (
        rubric.to_str().unwrap().to_string(),
        secret.to_str().unwrap().to_string(),
        sub.to_str().unwrap().to_string(),
    );
    let command = [
        "--root",
        &root_s,
        "grade",
        "--exercise",
        "reduce",
        "--rubric",
        &rubric_s,
        "--secret-file",
        &secret_s,
        &sub_s,
    ];
    // The hard link to the submission is also a second name of it; the aim is refused first.
    refused_everywhere(
        &dir,
        &command,
        &["--output"],
        &[rubric.clone(), secret.clone()],
    );
    let (code, text) = racegate([&command[..], &["--output", &sub_s]].concat())
        .at(&dir)
        .no_gpu()
        .run()
        .code_text();
    assert_eq!(code, Some(2), "{text}");
}

#[test]
fn an_html_folder_that_cannot_be_one_or_holds_the_output_is_refused_before_work() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let root = super::package_dir().join("..");
    let root_s = root.to_str().unwrap();
    let sub = super::package_dir().join("tests/submissions/reduce/correct.cu");
    let sub_s = sub.to_str().unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let fifo = dir.join("a-fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let under_file = file.join("sub");
    for html in [&file, &fifo, Path::new("/dev/full"), &under_file] {
        let (code, text) = racegate([
            "--root",
            root_s,
            "grade",
            "--exercise",
            "reduce",
            "--html",
            html.to_str().unwrap(),
            sub_s,
        ])
        .at(&dir)
        .no_gpu()
        .run()
        .code_text();
        assert_eq!(code, Some(2), "--html {}: {text}", html.display());
        assert!(text.contains("not a folder"), "{text}");
    }
    let h = dir.join("h");
    std::fs::create_dir(&h).unwrap();
    let inside = h.join("index.html");
    let (code, text) = racegate([
        "--root",
        root_s,
        "grade",
        "--exercise",
        "reduce",
        "--html",
        h.to_str().unwrap(),
        "--output",
        inside.to_str().unwrap(),
        sub_s,
    ])
    .at(&dir)
    .no_gpu()
    .run()
    .code_text();
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("is inside the --html folder"), "{text}");
    assert!(!inside.exists(), "nothing written before the refusal");
}
