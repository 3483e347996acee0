//! The gate's progress lines say what its report says: a sanitizer run killed at its deadline
//! is `TIMEOUT`, never `PASS`, and a hang's finding names "hang" once.

use std::os::unix::fs::PermissionsExt;

use crate::runner::racegate;

#[test]
fn a_sanitizer_run_killed_at_its_deadline_is_no_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fake = dir.join("compute-sanitizer");
    std::fs::write(&fake, "#!/bin/sh\nsleep 100\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let prog = dir.join("prog.sh");
    std::fs::write(&prog, "#!/bin/sh\necho 1\n").unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = racegate([
        "gate",
        "--tools",
        "memcheck",
        "--sanitize-timeout",
        "2",
        "--",
        "./prog.sh",
    ])
    .at(dir)
    .program_device()
    .no_gpu()
    .env("RACEGATE_COMPUTE_SANITIZER", &fake)
    .run()
    .text();
    let line = text
        .lines()
        .find(|l| l.contains("::memcheck"))
        .unwrap_or_else(|| panic!("no progress line for memcheck: {text}"));
    assert!(
        line.contains("TIMEOUT") && !line.contains("PASS"),
        "{line}\n{text}"
    );
    // The report agrees: the plain runs finished, so the killed run is inconclusive.
    assert!(text.contains("ran past its deadline"), "{text}");
}

#[test]
fn a_programs_hang_says_hang_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = dir.join("h.sh");
    std::fs::write(&prog, "#!/bin/sh\nsleep 30\n").unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let text = racegate([
        "gate",
        "--timeout",
        "1",
        "--tools",
        "memcheck",
        "--",
        "./h.sh",
    ])
    .at(dir)
    .program_device()
    .no_gpu()
    .env("RACEGATE_COMPUTE_SANITIZER", "/bin/true")
    .run()
    .text();
    assert!(
        text.contains("hang: the first plain run did not exit within 1 s"),
        "{text}"
    );
    assert!(!text.contains("hang: hang:"), "{text}");
}
