//! `sanitize::<name>`: `racegate sanitize` with a fake compute-sanitizer that exits 255, and
//! with none at all; both are inconclusive, never clean. Without a device both stop at "no CUDA
//! device" after the host side, and say what it did.

use std::path::Path;

use crate::runner::racegate;
use crate::{nvrtc_or_not_run, repo_root, temp_dir, write_script, Failed};

#[test]
fn a_sanitizer_that_exits_255_is_inconclusive() -> Result<(), Failed> {
    if !nvrtc_or_not_run() {
        return Ok(());
    }
    let dir = temp_dir("racegate-fake-")?;
    let ran = dir.path().join("ran");
    let fake = write_script(
        dir.path(),
        "compute-sanitizer",
        &format!(
            "#!/bin/sh\ntouch '{}'\necho '========= Error: Device not supported' >&2\nexit 255\n",
            ran.display()
        ),
    )?;
    let json = dir.path().join("out.json");
    let out = racegate(["sanitize", "matmul_naive", "--tool", "racecheck", "--json"])
        .args([&json])
        .at(repo_root())
        .env("RACEGATE_COMPUTE_SANITIZER", &fake)
        .run();
    let (code, stdout, stderr) = (out.exit(), &out.stdout, &out.stderr);
    // Without a device the command stops at "no CUDA device" (4 comes before 3), after the host
    // side: what it wrote says so, and the tool never ran.
    if racegate::run::device::probe().is_err() {
        no_device_report(code, stderr, &json, &["signatures checked"])?;
        if ran.exists() {
            return Err("the sanitizer ran without a device".into());
        }
        return Ok(());
    }
    if code != 3 || !stdout.contains("INCONCLUSIVE") || !stdout.contains("Device not supported") {
        return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
    }
    Ok(())
}

#[test]
fn no_sanitizer_is_inconclusive() -> Result<(), Failed> {
    let dir = temp_dir("racegate-nosan-")?;
    let json = dir.path().join("out.json");
    let out = racegate(["sanitize", "matmul_naive", "--tool", "memcheck", "--json"])
        .args([&json])
        .at(repo_root())
        .envs(&[
            (
                "RACEGATE_COMPUTE_SANITIZER",
                "/nonexistent/compute-sanitizer",
            ),
            ("PATH", "/usr/bin:/bin"),
            ("CUDA_HOME", "/nonexistent"),
        ])
        .run();
    let (code, stdout, stderr) = (out.exit(), &out.stdout, &out.stderr);
    if racegate::run::device::probe().is_err() {
        return no_device_report(code, stderr, &json, &["signatures checked"]);
    }
    if code != 3 || !stdout.contains("INCONCLUSIVE: compute-sanitizer not found") {
        return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
    }
    Ok(())
}

/// Without a device: exit 4 with "no CUDA device" on stderr, and the JSON asked for written
/// with what the host side did (`host_checks`), the subject and the verdict, not just an exit
/// code (which alone passed whatever the command had done before).
fn no_device_report(
    code: i32,
    stderr: &str,
    json: &Path,
    host_checks: &[&str],
) -> Result<(), Failed> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| format!("exit {code}: no JSON at {}: {e}\n{stderr}", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    let checks: Vec<&str> = v["host_checks"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    if code != 4
        || !stderr.contains("no CUDA device")
        || v["verdict"] != "no_device"
        || v["exit_code"] != 4
        || v["subject"] != "matmul_naive"
        || !v["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("no CUDA device"))
        || checks != host_checks
    {
        return Err(format!("exit {code}\n{text}\n{stderr}").into());
    }
    Ok(())
}
