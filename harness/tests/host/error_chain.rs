//! Every error the binary prints carries its cause chain, OS error text included, and a path
//! the user got wrong is bad input (exit 2), not inconclusive (issue #25).

use std::process::Command;

fn racegate(args: &[&str]) -> (i32, String) {
    let out = Command::new(super::racegate_exe())
        .args(args)
        .current_dir(super::package_dir().parent().unwrap())
        .output()
        .expect("racegate runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Was `error: writing /proc/version` with no reason.
#[test]
fn an_io_error_prints_the_os_reason() {
    let (code, err) = racegate(&["list", "--json", "/proc/version"]);
    assert!(
        err.contains("error: writing /proc/version: ") && err.contains("(os error "),
        "{err}"
    );
    assert_eq!(code, 3, "{err}");
}

/// A file that cannot be created where the user asked (no such entry) is the user's mistake:
/// exit 2, with the reason (was exit 3, no reason).
#[test]
fn a_path_that_cannot_exist_is_bad_input() {
    let (code, err) = racegate(&["list", "--json", "/proc/self/no-such-file.json"]);
    assert!(
        err.contains("/proc/self/no-such-file.json: No such file or directory (os error 2)"),
        "{err}"
    );
    assert_eq!(code, 2, "{err}");
}
