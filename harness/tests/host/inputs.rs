//! Bad input through the real binary: every deadline flag refuses `-1`, `0`, `nan`, `inf` and
//! `1e300`, every trial count refuses 0 (exit 2, a message naming the flag, never a panic), and
//! a closed or full standard output is no crash.

use std::process::Stdio;

use crate::repo_root;
use crate::runner::racegate;

#[test]
fn deadlines_and_counts_are_checked_in_every_command() {
    let cases: [(&[&str], &str); 6] = [
        (&["grade", "--exercise", "reduce", "x.cu"], "--timeout"),
        (
            &["grade", "--exercise", "reduce", "x.cu"],
            "--compile-timeout",
        ),
        (&["check"], "--stress-timeout"),
        (
            &["sanitize", "counter_single", "--tool", "racecheck"],
            "--timeout",
        ),
        (&["gate"], "--sanitize-timeout"),
        (&["stress", "counter_single"], "--timeout"),
    ];
    for (cmd, flag) in cases {
        for bad in ["-1", "0", "nan", "inf", "1e300"] {
            let with = format!("{flag}={bad}");
            let args: Vec<&str> = cmd.iter().copied().chain([with.as_str()]).collect();
            let (code, _, err) = racegate(&args).at(repo_root()).no_gpu().run().parts();
            assert_eq!(code, 2, "{args:?}: {err}");
            assert!(
                err.contains(flag) && !err.contains("panicked"),
                "{args:?}: {err}"
            );
        }
    }
    for cmd in [
        &["grade", "--exercise", "reduce", "x.cu", "--trials", "0"][..],
        &["check", "--trials", "0"],
        &["gate", "--trials", "0"],
        &["gate", "--runs", "0"],
        &["stress", "counter_single", "--trials", "0"],
    ] {
        let (code, _, err) = racegate(cmd).at(repo_root()).no_gpu().run().parts();
        assert_eq!(code, 2, "{cmd:?}: {err}");
        assert!(err.contains("must be at least 1"), "{cmd:?}: {err}");
    }
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
