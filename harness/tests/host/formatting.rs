//! `ci/fmt-check`, the formatting check CI runs: it reaches every tracked `.rs` file, including
//! one that no `mod` item declares (which `cargo fmt --check` would never open), and fails on it.
//! Without rustfmt it says so (exit 2), never "not formatted" with no file named.
//!
//! The tests in `with_rustfmt` run rustfmt, which comes with the Rust toolchain: they fail with
//! what is missing where it is absent, and `.config/nextest.toml` leaves them out of the ci
//! profile, which runs the archive on GPU machines that have no Rust (docs/gpu-machine.md,
//! "Running on a GPU machine without Rust"). CI's `cargo test` runs them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    crate::package_dir().join("../ci/fmt-check")
}

/// A git work tree holding `src/lib.rs` (formatted, declaring no module) and `src/orphan.rs`.
fn tree(orphan: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::create_dir(dir.path().join("src")).expect("src/");
    std::fs::write(dir.path().join("src/lib.rs"), "pub fn f() {}\n").expect("lib.rs");
    std::fs::write(dir.path().join("src/orphan.rs"), orphan).expect("orphan.rs");
    let git = |args: &[&str]| {
        let st = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .status()
            .expect("git runs");
        assert!(st.success(), "git {args:?} failed");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    dir
}

/// The first `PATH` folder that holds `name`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// With a `PATH` that has bash and git but no rustfmt, the check names what is missing and
/// exits 2: a missing tool is not an unformatted file.
#[test]
fn without_rustfmt_the_check_says_so_and_exits_2() {
    let dir = tree("pub fn g() {}\n");
    let bin = tempfile::tempdir().expect("a temporary folder");
    for tool in ["bash", "git"] {
        let found = on_path(tool).unwrap_or_else(|| panic!("{tool} is not on PATH"));
        std::os::unix::fs::symlink(&found, bin.path().join(tool)).expect("a link");
    }
    let out = Command::new(script())
        .arg(dir.path())
        .env("PATH", bin.path())
        .output()
        .expect("ci/fmt-check runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains("rustfmt"), "the tool is named: {err}");
    assert!(!err.contains("not formatted"), "{err}");
}

mod with_rustfmt {
    use super::*;

    /// Panics, saying what is missing and where these tests run, unless rustfmt runs here.
    fn needs_rustfmt() {
        let runs = Command::new("rustfmt")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            runs,
            "this test runs ci/fmt-check, which needs rustfmt, and rustfmt does not run here \
             (PATH={:?}); install it (`rustup component add rustfmt`). On a GPU machine \
             without Rust, run the archive with `--profile ci`, which leaves this test out",
            std::env::var_os("PATH").unwrap_or_default()
        );
    }

    fn check(dir: &Path) -> std::process::Output {
        needs_rustfmt();
        Command::new(script())
            .arg(dir)
            .output()
            .expect("ci/fmt-check runs")
    }

    #[test]
    fn an_unformatted_file_no_module_declares_fails_the_check() {
        let dir = tree("pub   fn   g( ) {  }\n");
        let out = check(dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "stderr: {err}");
        assert!(err.contains("orphan.rs"), "the file is named: {err}");
    }

    #[test]
    fn the_same_file_formatted_passes() {
        let dir = tree("pub fn g() {}\n");
        let out = check(dir.path());
        assert_eq!(
            out.status.code(),
            Some(0),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("2 files formatted"));
    }
}
