//! `onboarding::<name>`: outside racegate's checkout, the first errors name racegate.toml and
//! --manifest first; `list` on a manifest shows the manifest's columns; every command's --help ends
//! with its exit codes and has an example.

use crate::runner::racegate;

#[test]
fn list_in_an_empty_folder_names_the_manifest_first() {
    let t = tempfile::tempdir().unwrap();
    for args in [&["list"][..], &["stress", "x"], &["compile"]] {
        let (code, text) = racegate(args).at(t.path()).no_gpu().run().exit_text();
        assert_eq!(code, 2, "{text}");
        let (toml, flag) = (text.find("racegate.toml"), text.find("--manifest"));
        let kernels = text.find("kernels/").expect(&text);
        assert!(toml.is_some_and(|i| i < kernels), "{args:?}: {text}");
        assert!(flag.is_some_and(|i| i < kernels), "{args:?}: {text}");
    }
}

#[test]
fn list_on_a_manifest_shows_its_columns() {
    let (code, text) = racegate(["list"])
        .at(super::package_dir().join("../examples/gate"))
        .no_gpu()
        .run()
        .exit_text();
    assert_eq!(code, 0, "{text}");
    let head = text.lines().next().unwrap();
    for col in ["KERNEL", "FILE", "ENTRY", "ORACLE", "LAUNCHES"] {
        assert!(head.contains(col), "{head}");
    }
    assert!(
        !text.contains("EXERCISE") && !text.contains("manifest  "),
        "{text}"
    );
    assert!(
        text.contains("reference reference/scale_ref.cu:scale_ref"),
        "{text}"
    );
    assert!(text.contains("determinism"), "{text}");
}

#[test]
fn every_owned_command_help_has_exit_codes_and_an_example() {
    let dir = super::package_dir();
    for cmd in [
        "list", "stress", "sanitize", "compile", "check", "gate", "mutate",
    ] {
        let (code, text) = racegate([cmd, "--help"])
            .at(&dir)
            .no_gpu()
            .run()
            .exit_text();
        assert_eq!(code, 0, "{text}");
        let tail = &text[text.find("Options:").unwrap()..];
        assert!(tail.contains("Exit codes:"), "{cmd}: {tail}");
        assert!(
            tail.contains(&format!("  racegate {cmd}")) || tail.contains("  racegate --"),
            "{cmd}: {tail}"
        );
        // The last paragraph (wrapped at 100 columns) is the exit codes.
        let last = text.trim_end().rsplit("\n\n").next().unwrap();
        assert!(
            last.starts_with("Exit codes") || last.contains("racegate"),
            "{cmd}: ends with `{last}`"
        );
    }
}
