//! `error_chain::<name>`: every error the binary prints carries its cause chain, OS error text
//! included, and a path the user got wrong is bad input (exit 2), not inconclusive.

use crate::repo_root;
use crate::runner::racegate;

/// Was `error: writing /proc/version` with no reason.
#[test]
fn an_io_error_prints_the_os_reason() {
    let (code, _, err) = racegate(["list", "--json", "/proc/version"])
        .at(repo_root())
        .run()
        .parts();
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
    let (code, _, err) = racegate(["list", "--json", "/proc/self/no-such-file.json"])
        .at(repo_root())
        .run()
        .parts();
    assert!(
        err.contains("/proc/self/no-such-file.json: No such file or directory (os error 2)"),
        "{err}"
    );
    assert_eq!(code, 2, "{err}");
}

/// A process the OS would not start keeps the OS's reason in the printed chain (the error
/// carries it as its source, not as flattened text).
#[test]
fn a_process_that_cannot_start_prints_the_os_reason() {
    let t = tempfile::tempdir().unwrap();
    let prog = t.path().join("badinterp");
    std::fs::write(&prog, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, _, err) = racegate(["gate", "--tools", "racecheck", "--"])
        .args([&prog])
        .at(t.path())
        .run()
        .parts();
    assert!(
        err.contains("could not start") && err.contains("(os error 2)"),
        "{err}"
    );
    assert_eq!(code, 3, "{err}");
    // The chain holds the cause as a source, not as text.
    let e = racegate::Error::process("could not start x", std::io::Error::from_raw_os_error(2));
    assert_eq!(
        std::error::Error::source(&e).map(|s| s.to_string()),
        Some(std::io::Error::from_raw_os_error(2).to_string())
    );
    assert!(
        e.chain().to_string().ends_with("(os error 2)"),
        "{}",
        e.chain()
    );
}
