//! `grade::host::<name>` and `grade::gpu::<name>`: `racegate grade` end to end on folders of
//! students, oversized files, the output formats and the performance rubric. The trials of each
//! sample submission are in `samples.rs`.

use std::path::Path;

use libtest_mimic::{Completion, Failed, Trial};

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
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::batch_of_student_folders", move || {
            let dir = temp_dir("racegate-batch-")?;
            let samples = submissions_dir(&r).join("reduce");
            let put = |to: &str, from: &str| -> Result<(), Failed> {
                let to = dir.path().join(to);
                std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
                std::fs::copy(samples.join(from), to).map_err(|e| e.to_string())?;
                Ok(())
            };
            put("alice/reduce.cu", "correct.cu")?;
            put("bob/reduce.cu", "wrong_name.cu")?;
            put("carol.cu", "correct.cu")?;
            put("dave/REDUCE.CU", "correct.cu")?;
            put("-rf.cu", "correct.cu")?;
            put(".git/hooks.cu", "correct.cu")?;
            put("alice/notes.txt", "correct.cu")?;
            put("erin/deeper/reduce.cu", "correct.cu")?;
            let (code, json, stderr) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "json",
                    dir.path().to_str().unwrap(),
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let grades: serde_json::Value =
                serde_json::from_str(&json).map_err(|e| format!("{e}: {json}\n{stderr}"))?;
            let compiles = |who: &str| {
                grades
                    .as_array()
                    .and_then(|a| {
                        a.iter()
                            .find(|g| g["submission"].as_str().unwrap_or("").ends_with(who))
                    })
                    .map(|g| g["items"][0]["status"].as_str().unwrap_or("").to_string())
            };
            let n = grades.as_array().map_or(0, |a| a.len());
            if code != 4
                || n != 5
                || compiles("alice/reduce.cu").as_deref() != Some("passed")
                || compiles("bob/reduce.cu").as_deref() != Some("failed")
                || compiles("carol.cu").as_deref() != Some("passed")
                || compiles("dave/REDUCE.CU").as_deref() != Some("passed")
                || compiles("/-rf.cu").as_deref() != Some("passed")
                || grades
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|g| !g["score"].is_null())
            {
                return Err(format!("exit {code}, {n} grades\n{json}\n{stderr}").into());
            }
            for skipped in [
                ".git: a hidden name",
                "notes.txt: not a .cu file",
                "deeper: a folder nested more than one level deep",
            ] {
                if !stderr.contains(skipped) {
                    return Err(
                        format!("the skipped entry `{skipped}` is not listed:\n{stderr}").into(),
                    );
                }
            }
            let empty = dir.path().join("empty");
            std::fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
            let (empty_code, _, empty_err) = run_cli(
                &r,
                &["grade", "--exercise", "reduce", empty.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if empty_code != 2 || !empty_err.contains("no .cu submissions in") {
                return Err(format!("empty folder: exit {empty_code}: {empty_err}").into());
            }
            // A file named like an option, after `--`.
            let (dash_code, dash_out, dash_err) = run_cli(
                dir.path(),
                &[
                    "--root",
                    r.to_str().unwrap(),
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "json",
                    "--",
                    "-rf.cu",
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if dash_code != 4 || !dash_out.contains("\"status\": \"passed\"") {
                return Err(format!("-- -rf.cu: exit {dash_code}\n{dash_out}\n{dash_err}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::hostile_batch_goes_on", move || {
            // The stack-overflow file, the macro bomb and a correct submission in one batch:
            // the bomb is stopped at its deadline, and the others are graded as if alone.
            let dir = temp_dir("racegate-hostile-batch-")?;
            let hostile = submissions_dir(&r).join("hostile");
            for (from, to) in [
                (hostile.join("stack_overflow.cu"), "deep.cu"),
                (hostile.join("macro_bomb.cu"), "bomb.cu"),
                (submissions_dir(&r).join("reduce/correct.cu"), "correct.cu"),
            ] {
                std::fs::copy(from, dir.path().join(to)).map_err(|e| e.to_string())?;
            }
            let start = std::time::Instant::now();
            let (code, json, stderr) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "json",
                    "--compile-timeout",
                    "5",
                    dir.path().to_str().unwrap(),
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let took = start.elapsed();
            let grades: serde_json::Value =
                serde_json::from_str(&json).map_err(|e| format!("{e}: {json}\n{stderr}"))?;
            let compiles = |who: &str| {
                grades.as_array().and_then(|a| {
                    a.iter()
                        .find(|g| g["submission"].as_str().unwrap_or("").ends_with(who))
                        .map(|g| g["items"][0].clone())
                })
            };
            let ok = |who: &str| compiles(who).is_some_and(|c| c["status"] == "passed");
            let bomb = compiles("bomb.cu")
                .map(|c| c["detail"].to_string())
                .unwrap_or_default();
            if code != 4
                || !ok("correct.cu")
                || !ok("deep.cu")
                || !bomb.contains("did not finish within 5 s")
                || took > std::time::Duration::from_secs(30)
            {
                return Err(format!("exit {code} in {took:?}\n{json}\n{stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::ignorable_test(
            "grade::host::a_cache_folder_of_another_user_is_refused",
            move || {
                // Real uids need root to give a folder away; elsewhere the unit tests of
                // `racegate::build::cache` refuse it through a fake owner check.
                // SAFETY: getuid cannot fail.
                if unsafe { libc::getuid() } != 0 {
                    return Ok(Completion::ignored_with(
                        "needs root to give a folder to another uid (the unit tests of build::cache cover it with a fake owner)",
                    ));
                }
                let dir = temp_dir("racegate-cache-")?;
                let cache = dir.path().join("planted");
                std::fs::create_dir(&cache).map_err(|e| e.to_string())?;
                std::os::unix::fs::chown(&cache, Some(12345), Some(12345))
                    .map_err(|e| e.to_string())?;
                let one = submissions_dir(&r).join("reduce/correct.cu");
                let (code, out, err) = run_cli(
                    &r,
                    &[
                        "grade",
                        "--exercise",
                        "reduce",
                        "--format",
                        "json",
                        one.to_str().unwrap(),
                    ],
                    &[("RACEGATE_CACHE", cache.to_str().unwrap())],
                );
                let want = "belongs to another user (uid 12345";
                if (code != 3 && code != 4) || !(out.contains(want) || err.contains(want)) {
                    return Err(format!("exit {code}\n{out}\n{err}").into());
                }
                Ok(Completion::Completed)
            },
        )
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::huge_file", move || {
            let dir = temp_dir("racegate-huge-")?;
            let f = dir.path().join("huge.cu");
            std::fs::write(&f, "// padding\n".repeat(30_000)).map_err(|e| e.to_string())?;
            let (code, stdout, _) = run_cli(
                &r,
                &["grade", "--exercise", "reduce", f.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if code != 4
                || !stdout.contains("submissions are limited to 262144 bytes")
                || !stdout.contains("huge.cu: not graded (reduce)")
            {
                return Err(format!("exit {code}\n{stdout}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::batch_csv_and_formats", move || {
            let dir = submissions_dir(&r).join("reduce");
            let (code, csv, stderr) = run_cli(
                &r,
                &["grade", "--exercise", "reduce", dir.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let rows: Vec<&str> = csv.lines().collect();
            let files = std::fs::read_dir(&dir)
                .map_err(|e| e.to_string())?
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cu"))
                .count();
            if code != 4
                || !rows[0].starts_with("submission,score,max_score,compiles,correct")
                || !rows[0].ends_with(",note")
                || rows.len() != files + 1
                || rows[1..].iter().any(|r| !r.contains(",not graded,"))
            {
                return Err(format!(
                    "exit {code}, {} rows for {files} files\n{csv}\n{stderr}",
                    rows.len()
                )
                .into());
            }
            // Gradescope without a GPU: no grade written (an autograder failure there); a
            // results.json that was there before is left as it was, and said to be.
            let one = dir.join("correct.cu");
            let out = temp_dir("racegate-gs-")?;
            let results = out.path().join("results.json");
            std::fs::write(&results, "{\"score\": 100}").map_err(|e| e.to_string())?;
            let (gs_code, gs, gs_err) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "gradescope",
                    "--output",
                    results.to_str().unwrap(),
                    one.to_str().unwrap(),
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if gs_code != 4
                || !gs.is_empty()
                || std::fs::read_to_string(&results).ok().as_deref() != Some("{\"score\": 100}")
                || !gs_err.contains("left as it was")
                || !gs_err.contains("no CUDA device")
            {
                return Err(format!("gradescope: exit {gs_code}: {gs}\n{gs_err}").into());
            }
            let (pl_code, pl, _) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "prairielearn",
                    one.to_str().unwrap(),
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let v: serde_json::Value = serde_json::from_str(&pl).map_err(|e| e.to_string())?;
            if pl_code != 4 || v["gradable"] != false || v.get("score").is_some() {
                return Err(format!("prairielearn: exit {pl_code}: {pl}").into());
            }
            let (code, _, stderr) = run_cli(
                &r,
                &["grade", "--exercise", "reduction", one.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if code != 2 || !stderr.contains("no exercise `reduction`; known exercises:") {
                return Err(format!("unknown exercise: exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    out
}
