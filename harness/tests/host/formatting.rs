//! `ci/fmt-check`, the formatting check CI runs: it reaches every tracked `.rs` file, including
//! one that no `mod` item declares (which `cargo fmt --check` would never open), and fails on it.

use std::path::PathBuf;
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

#[test]
fn an_unformatted_file_no_module_declares_fails_the_check() {
    let dir = tree("pub   fn   g( ) {  }\n");
    let out = Command::new(script())
        .arg(dir.path())
        .output()
        .expect("ci/fmt-check runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("orphan.rs"), "the file is named: {err}");
}

#[test]
fn the_same_file_formatted_passes() {
    let dir = tree("pub fn g() {}\n");
    let out = Command::new(script())
        .arg(dir.path())
        .output()
        .expect("ci/fmt-check runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 files formatted"));
}
