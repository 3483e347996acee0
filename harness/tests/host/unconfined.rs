//! Grading refuses to run where the kernel confines no compile, unless the risk is accepted by
//! name; with some layers missing it grades and says which. The machine is simulated by the
//! test build's `RACEGATE_TEST_LAYERS` (the probe then reports only the layers named; the
//! release binary has no such variable), through the real binary.

use crate::runner::racegate;

fn grade(layers: &str, extra: &[&str]) -> (Option<i32>, String) {
    let root = super::package_dir().join("..");
    let sub = super::package_dir().join("tests/submissions/reduce/correct.cu");
    racegate(["--root"])
        .args([&root])
        .args(["grade", "--exercise", "reduce"])
        .args(extra)
        .args([&sub])
        .no_gpu()
        .env("RACEGATE_TEST_LAYERS", layers)
        .run()
        .code_text()
}

#[test]
fn no_layer_is_exit_3_unless_accepted_and_a_partial_set_is_named() {
    let (code, text) = grade("none", &[]);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("no kernel-level confinement holds")
            && text.contains("--allow-unconfined")
            && text.contains("nothing was graded"),
        "{text}"
    );
    // Accepted by name, grading goes on (to no device here: exit 4), saying what holds.
    let (code, text) = grade("none", &["--allow-unconfined"]);
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("token scanner alone"), "{text}");
    // Some layers: graded, and the missing ones are named.
    let (code, text) = grade("seccomp", &[]);
    assert_eq!(code, Some(4), "{text}");
    assert!(
        text.contains("kernel-level file confinement: seccomp-bpf")
            && text.contains("not applied: Landlock: simulated"),
        "{text}"
    );
    // The old flag is still accepted, and cannot be combined with its opposite.
    let (code, text) = grade("none", &["--require-confinement"]);
    assert_eq!(code, Some(3), "{text}");
    let (code, text) = grade("none", &["--require-confinement", "--allow-unconfined"]);
    assert_eq!(code, Some(2), "{text}");
}
