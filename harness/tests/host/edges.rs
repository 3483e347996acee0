//! Edge values of issue #25 through the real binary: `--jobs 0`. (Expressions that nest or
//! repeat signs without bound are refused in `source/expr.rs`, tested there.)

use std::process::Command;

fn racegate(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(super::racegate_exe())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("racegate runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--jobs 0` would run nothing: bad input, on any machine (it was exit 4 without a device).
#[test]
fn jobs_zero_is_refused() {
    let dir = super::exit_codes::project(super::exit_codes::GOOD, "");
    for cmd in ["gate", "check"] {
        let (code, err) = racegate(dir.path(), &[cmd, "--jobs", "0"]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("--jobs"), "{cmd}: {err}");
    }
}
