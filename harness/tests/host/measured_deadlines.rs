//! A program's deadlines come from a measurement of it: a correct program slower than the old
//! fixed 10 s deadline is judged clean with no flag, and the report says each deadline and
//! where it came from. The GPU lease is machine-wide: a second process waits for a holder, and
//! a holder killed with SIGKILL frees it at once.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use racegate::run::lease::{Access, GpuLock};

use crate::runner::racegate;

#[test]
fn a_correct_program_slower_than_ten_seconds_is_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prog = dir.join("slow.sh");
    std::fs::write(&prog, "#!/bin/sh\nsleep 11\necho done\n").unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let json = dir.join("gate.json");
    let text = racegate([
        "gate",
        "--runs",
        "1",
        "--no-jitter",
        "--tools",
        "memcheck",
        "--json",
    ])
    .args([&json])
    .args(["--", "./slow.sh"])
    .at(dir)
    .program_device()
    .no_gpu()
    .env("RACEGATE_COMPUTE_SANITIZER", "/bin/true")
    .run()
    .text();
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&report).expect("the gate's JSON");
    let findings = v["findings"].as_array().expect("findings");
    assert!(
        findings.is_empty(),
        "findings on a correct program: {report}"
    );
    let inconclusive = v["inconclusive"].to_string();
    assert!(!inconclusive.contains("watchdog"), "{inconclusive}");
    for want in [
        "deadlines from a measurement",
        "plain runs 3",
        "(3x)",
        "memcheck 1",
    ] {
        assert!(
            report.contains(want),
            "no `{want}` in the report's notes: {report}\n{text}"
        );
    }
}

#[test]
fn the_lease_is_machine_wide_and_a_killed_holder_frees_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("gpu-0.lock");
    std::fs::write(&path, "").unwrap();
    // Another process holds the lease alone for 3 s.
    let start = Instant::now();
    let holder = Command::new("flock")
        .arg("-x")
        .arg(&path)
        .args(["sleep", "3"])
        .spawn()
        .expect("util-linux flock runs");
    std::thread::sleep(Duration::from_millis(300));
    let held = GpuLock::acquire_at(&path, Access::Shared, Duration::from_secs(20), |_| {})
        .expect("the lease comes back when the holder ends");
    assert!(
        start.elapsed() >= Duration::from_millis(2500),
        "did not wait: {:?}",
        start.elapsed()
    );
    drop(held);
    let mut holder = holder;
    let _ = holder.wait();
    // A holder killed with SIGKILL: the kernel frees its lock, nothing is left to wedge the next.
    use std::os::unix::process::CommandExt;
    let mut holder = Command::new("flock")
        .arg("-x")
        .arg(&path)
        .args(["sleep", "100"])
        .process_group(0)
        .spawn()
        .expect("util-linux flock runs");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        GpuLock::acquire_at(&path, Access::Exclusive, Duration::from_millis(200), |_| {}).is_err(),
        "the live holder's lock was not respected"
    );
    // SIGKILL to the holder's whole group (flock and its sleep): both hold the lock's file.
    let pgid = format!("-{}", holder.id());
    let _ = Command::new("kill").args(["-9", "--", &pgid]).status();
    let _ = holder.wait();
    let t = Instant::now();
    GpuLock::acquire_at(&path, Access::Exclusive, Duration::from_secs(10), |_| {})
        .expect("a killed holder frees the lease");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}
