//! `flag_values::<name>`: values a flag cannot take, through the real binary: every deadline
//! flag refuses `-1`, `0`, `nan`, `inf` and `1e300`, every trial count and `--jobs` refuse 0
//! (exit 2, a message naming the flag, never a panic).

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
