//! `sanitize::<name>`: `racegate sanitize` with a fake compute-sanitizer that exits 255, and
//! with none at all; both are inconclusive, never clean (host).

use std::path::Path;

use libtest_mimic::{Completion, Trial};

use crate::util::{in_ci, run_cli, temp_dir, write_script};

pub fn trials(root: &Path) -> Vec<Trial> {
    let mut out = Vec::new();
    let r = root.to_path_buf();
    out.push(
        Trial::ignorable_test(
            "sanitize::a_sanitizer_that_exits_255_is_inconclusive",
            move || {
                if racegate::build::toolchain::nvrtc(&r).is_err() && !in_ci() {
                    return Ok(Completion::ignored_with(
                        "NVRTC not installed (run racegate setup)",
                    ));
                }
                let dir = temp_dir("racegate-fake-")?;
                let fake = write_script(
                    dir.path(),
                    "compute-sanitizer",
                    "#!/bin/sh\necho '========= Error: Device not supported' >&2\nexit 255\n",
                )?;
                let (code, stdout, stderr) = run_cli(
                    &r,
                    &["sanitize", "matmul_naive", "--tool", "racecheck"],
                    &[("RACEGATE_COMPUTE_SANITIZER", fake.to_str().unwrap())],
                );
                // Without a device the command stops at "no CUDA device" (4 comes before 3).
                let device = racegate::run::device::probe().is_ok();
                if !device && code == 4 && stderr.contains("no CUDA device") {
                    return Ok(Completion::Completed);
                }
                if code != 3
                    || !stdout.contains("INCONCLUSIVE")
                    || !stdout.contains("Device not supported")
                {
                    return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
                }
                Ok(Completion::Completed)
            },
        )
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("sanitize::no_sanitizer_is_inconclusive", move || {
            let (code, stdout, stderr) = run_cli(
                &r,
                &["sanitize", "matmul_naive", "--tool", "memcheck"],
                &[
                    (
                        "RACEGATE_COMPUTE_SANITIZER",
                        "/nonexistent/compute-sanitizer",
                    ),
                    ("PATH", "/usr/bin:/bin"),
                    ("CUDA_HOME", "/nonexistent"),
                ],
            );
            let device = racegate::run::device::probe().is_ok();
            if !device && code == 4 && stderr.contains("no CUDA device") {
                return Ok(());
            }
            if code != 3 || !stdout.contains("INCONCLUSIVE: compute-sanitizer not found") {
                return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    out
}
