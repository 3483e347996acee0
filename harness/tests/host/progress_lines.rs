//! The gate's progress lines say what its report says: a sanitizer run killed at its deadline
//! is `TIMEOUT`, never `PASS`, and a hang's finding names "hang" once.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

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
    let out = Command::new(super::racegate_exe())
        // Its sh scripts stand in for CUDA programs: judged as on a machine with a device.
        .env("RACEGATE_TEST_PROGRAM_DEVICE", "1")
        .args([
            "gate",
            "--tools",
            "memcheck",
            "--sanitize-timeout",
            "2",
            "--",
            "./prog.sh",
        ])
        .current_dir(dir)
        .env("RACEGATE_NO_GPU", "1")
        .env("RACEGATE_COMPUTE_SANITIZER", &fake)
        .output()
        .expect("racegate runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
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
    let out = Command::new(super::racegate_exe())
        // Its sh scripts stand in for CUDA programs: judged as on a machine with a device.
        .env("RACEGATE_TEST_PROGRAM_DEVICE", "1")
        .args([
            "gate",
            "--timeout",
            "1",
            "--tools",
            "memcheck",
            "--",
            "./h.sh",
        ])
        .current_dir(dir)
        .env("RACEGATE_NO_GPU", "1")
        .env("RACEGATE_COMPUTE_SANITIZER", "/bin/true")
        .output()
        .expect("racegate runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("hang: the first plain run did not exit within 1 s"),
        "{text}"
    );
    assert!(!text.contains("hang: hang:"), "{text}");
}
