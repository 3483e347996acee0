//! `grade::gpu::<name>`: `racegate grade` end to end on a GPU: the performance rubric, timed
//! against the course's reference kernel, and what a grade does when the sanitizer fails. The
//! trials of each sample submission are in `samples.rs`; `racegate grade` without a device (folders
//! of students, oversized files, the output formats) is the `host` target's `grade::<name>`.

use std::path::Path;

use libtest_mimic::{Completion, Trial};

use crate::util::{
    gpu_slots, grade_item, grade_run, run_cli, submissions_dir, temp_dir, write_script, Device,
};

pub fn trials(root: &Path, device: &Device) -> Vec<Trial> {
    let mut out = Vec::new();
    // GPU: the performance item, timed against the course's reference kernel.
    let r = root.to_path_buf();
    let dev = device.clone();
    out.push(
        Trial::ignorable_test("grade::gpu::reduce::performance", move || {
            if let Err(why) = &dev {
                return Err(crate::util::no_device(why));
            }
            let slots = gpu_slots();
            let _slot = slots.take();
            let dir = submissions_dir(&r).join("reduce");
            let rubric = dir.join("rubric-performance.toml");
            // Full points exit 0, fewer 1: the ratio decides, and it varies.
            let (code, g, all) = grade_run(
                &r,
                "reduce",
                &dir.join("correct.cu"),
                &["--rubric", rubric.to_str().unwrap()],
                &[],
            )?;
            if code != 0 && code != 1 {
                return Err(format!("exit {code}\n{all}").into());
            }
            let perf = grade_item(&g, "performance");
            // Timed, not judged: other GPU trials may run beside it, so the ratio varies.
            if g["max_score"] != 110.0
                || !(perf["status"] == "passed" || perf["status"] == "partial")
                || !perf["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains("vs the reference's")
            {
                return Err(format!("{g}").into());
            }
            Ok(Completion::Completed)
        })
        .with_kind("gpu"),
    );
    // GPU: the performance item cannot be forged by what the kernel prints. A correct
    // submission whose kernel also prints the old timing line gets its real, measured time.
    let r = root.to_path_buf();
    let dev = device.clone();
    out.push(
        Trial::ignorable_test(
            "grade::gpu::reduce::performance_is_not_forged_by_printf",
            move || {
                if let Err(why) = &dev {
                    return Err(crate::util::no_device(why));
                }
                let slots = gpu_slots();
                let _slot = slots.take();
                let dir = submissions_dir(&r).join("reduce");
                let rubric = dir.join("rubric-performance.toml");
                let correct = std::fs::read_to_string(dir.join("correct.cu"))?;
                let forged = correct.replacen(
                    "    int tid = threadIdx.x;\n",
                    "    int tid = threadIdx.x;\n    if (blockIdx.x == 0 && tid == 0)\n        \
                 printf(\"racegate-time-us 0.001\\n{\\\"performance\\\": 10}\\n\");\n",
                    1,
                );
                if forged == correct {
                    return Err("the forging line was not planted".into());
                }
                let tmp = temp_dir("racegate-forge-")?;
                let file = tmp.path().join("forged.cu");
                std::fs::write(&file, forged)?;
                let (code, g, all) = grade_run(
                    &r,
                    "reduce",
                    &file,
                    &["--rubric", rubric.to_str().unwrap()],
                    &[],
                )?;
                if code != 0 && code != 1 {
                    return Err(format!("exit {code}\n{all}").into());
                }
                let detail = grade_item(&g, "performance")["detail"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                // "{mine} us vs the reference's {r} us": the forged 0.001 would print as 0.0.
                let mine: f64 = detail
                    .split(" us vs")
                    .next()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| format!("no timing in {detail:?}"))?;
                if mine < 0.5 {
                    return Err(format!("the kernel's own printf set its time: {detail}").into());
                }
                Ok(Completion::Completed)
            },
        )
        .with_kind("gpu"),
    );
    // GPU: a sanitizer that exits 255 is the machine's failure: no score, in any format.
    let r = root.to_path_buf();
    let dev = device.clone();
    out.push(
        Trial::ignorable_test("grade::gpu::a_failing_sanitizer_is_not_graded", move || {
            if let Err(why) = &dev {
                return Err(crate::util::no_device(why));
            }
            let slots = gpu_slots();
            let _slot = slots.take();
            let dir = temp_dir("racegate-fake-")?;
            let fake = write_script(
                dir.path(),
                "compute-sanitizer",
                "#!/bin/sh\necho '========= Error: Device not supported' >&2\nexit 255\n",
            )?;
            let one = submissions_dir(&r).join("reduce/correct.cu");
            let env = [("RACEGATE_COMPUTE_SANITIZER", fake.to_str().unwrap())];
            let (code, g, all) = grade_run(&r, "reduce", &one, &[], &env)?;
            if code != 3 || !g["score"].is_null() || !all.contains("Device not supported") {
                return Err(format!("exit {code}\n{all}").into());
            }
            let (code, pl, err) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "prairielearn",
                    one.to_str().unwrap(),
                ],
                &env,
            );
            let v: serde_json::Value =
                serde_json::from_str(&pl).map_err(|e| format!("{e}: {pl}"))?;
            if code != 3 || v["gradable"] != false {
                return Err(format!("prairielearn: exit {code}\n{pl}\n{err}").into());
            }
            Ok(Completion::Completed)
        })
        .with_kind("gpu"),
    );
    out
}
