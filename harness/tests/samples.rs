//! The sample submissions and the grade each must get: `harness/tests/submissions/FOLDER/`,
//! each folder with its `expected.toml` (graded as the exercise the folder is named after, or
//! as its top-level `exercise`, with its `args`). Per sample, `grade::host::<folder>::<sample>`
//! (the file checks, compilation and the signature check, with no GPU: never graded, exit 4)
//! and `grade::gpu::<folder>::<sample>` (the whole grade: exit 0 at full points, else 1). Both
//! run with `RACEGATE_GRADE_SECRET` set and fail if the secret shows in any output; `within`
//! bounds the host grade's seconds. `hostile/` holds every attack on the grader.
//! Missing samples, an unreadable `expected.toml` or a sample it does not list each fail a
//! trial of their own.

use std::path::Path;

use libtest_mimic::{Completion, Trial};

use crate::util::{gpu_slots, grade_item, grade_run, submissions_dir, Device};

/// The secret every sample is graded with; it must show in no output.
const SECRET: &str = "racegate-ci-secret-7c21";

pub fn trials(root: &Path, device: &Device) -> Vec<Trial> {
    let base = submissions_dir(root);
    let mut exercises: Vec<String> = std::fs::read_dir(&base)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    exercises.sort();
    let mut out = Vec::new();
    if exercises.len() < 6 {
        out.push(Trial::test(
            "grade::every_exercise_has_samples",
            move || {
                Err(format!("harness/tests/submissions has samples for {exercises:?} only").into())
            },
        ));
        return out;
    }
    for folder in exercises {
        let dir = base.join(&folder);
        let expected: toml::Table = match std::fs::read_to_string(dir.join("expected.toml"))
            .map(|t| t.parse::<toml::Table>())
        {
            Ok(Ok(t)) => t,
            _ => {
                out.push(Trial::test(
                    format!("grade::{folder}::expected_toml_parses"),
                    move || {
                        Err(format!("{}/expected.toml is missing or invalid", dir.display()).into())
                    },
                ));
                continue;
            }
        };
        let unlisted: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "cu"))
                    .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                    .filter(|stem| !expected.contains_key(stem))
                    .collect()
            })
            .unwrap_or_default();
        let exercise = expected
            .get("exercise")
            .and_then(|v| v.as_str())
            .unwrap_or(&folder)
            .to_string();
        let args: Vec<String> = expected
            .get("args")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Trial::test(
            format!("grade::host::{folder}::every_sample_has_an_expected_grade"),
            move || match unlisted.is_empty() {
                true => Ok(()),
                false => Err(format!("no entry in expected.toml for {unlisted:?}").into()),
            },
        ));
        for (name, want) in expected.into_iter().filter(|(_, v)| v.is_table()) {
            let sample = Sample {
                folder: folder.clone(),
                exercise: exercise.clone(),
                args: args.clone(),
                file: dir.join(format!("{name}.cu")),
            };
            out.extend(sample_trials(root, device, sample, want));
        }
    }
    out
}

/// One sample: its folder, the exercise it is graded as, extra flags, and its file.
struct Sample {
    folder: String,
    exercise: String,
    args: Vec<String>,
    file: std::path::PathBuf,
}

/// Fails when the secret shows anywhere in `output`.
fn no_secret(output: &str) -> Result<(), libtest_mimic::Failed> {
    match output.contains(SECRET) {
        true => Err(format!("the secret leaked into the output:\n{output}").into()),
        false => Ok(()),
    }
}

/// The host and GPU trials of one sample submission.
fn sample_trials(root: &Path, device: &Device, s: Sample, want: toml::Value) -> Vec<Trial> {
    let name = s
        .file
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let folder = s.folder.clone();
    let s = std::sync::Arc::new(s);
    let mut out = Vec::new();
    let want = want.as_table().cloned().unwrap_or_default();
    let r = root.to_path_buf();
    let (w, sh) = (want.clone(), s.clone());
    // Host: the file checks, compilation and the signature check, with no GPU.
    out.push(
        Trial::test(format!("grade::host::{folder}::{name}"), move || {
            if let Some(fifo) = w.get("fifo").and_then(|v| v.as_str()) {
                make_fifo(fifo)?;
            }
            let args: Vec<&str> = sh.args.iter().map(String::as_str).collect();
            let start = std::time::Instant::now();
            let env = [("RACEGATE_NO_GPU", "1"), ("RACEGATE_GRADE_SECRET", SECRET)];
            let (code, g, all) = grade_run(&r, &sh.exercise, &sh.file, &args, &env)?;
            let took = start.elapsed().as_secs_f64();
            no_secret(&all)?;
            if code != 4 || !g["score"].is_null() {
                return Err(
                    format!("without a GPU: exit {code} (expected 4, not graded)\n{all}").into(),
                );
            }
            let compiles = &g["items"][0];
            let status = compiles["status"].as_str().unwrap_or("");
            if Some(status) != w.get("compiles").and_then(|v| v.as_str()) {
                return Err(format!(
                    "compiles: {status}, expected {:?}\n{}",
                    w.get("compiles"),
                    compiles["detail"]
                )
                .into());
            }
            if let Some(m) = w.get("message").and_then(|v| v.as_str()) {
                if !compiles["detail"].as_str().unwrap_or("").contains(m) {
                    return Err(format!("the message lacks `{m}`: {}", compiles["detail"]).into());
                }
            }
            if let Some(limit) = w.get("within").and_then(|v| v.as_integer()) {
                if took > limit as f64 {
                    return Err(format!("took {took:.1} s, more than {limit} s").into());
                }
            }
            Ok(())
        })
        .with_kind("host"),
    );
    // GPU: the whole grade.
    let r = root.to_path_buf();
    let dev = device.clone();
    out.push(
        Trial::ignorable_test(format!("grade::gpu::{folder}::{name}"), move || {
            if let Err(why) = &dev {
                return Err(crate::util::no_device(why));
            }
            let slots = gpu_slots();
            let _slot = slots.take();
            let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
            let env = [("RACEGATE_GRADE_SECRET", SECRET)];
            let (code, g, all) = grade_run(&r, &s.exercise, &s.file, &args, &env)?;
            no_secret(&all)?;
            let stdout = g.to_string();
            if let Some(n) = g.get("not_graded") {
                return Err(format!("not graded: {n}\n{all}").into());
            }
            let score = g["score"].as_f64().unwrap_or(-1.0);
            let full = g["max_score"].as_f64() == Some(score);
            if code != if full { 0 } else { 1 } {
                return Err(format!("exit {code} for {score} / {}\n{all}", g["max_score"]).into());
            }
            if let Some(s) = want
                .get("score")
                .and_then(|v| v.as_integer().map(|i| i as f64).or(v.as_float()))
            {
                if (score - s).abs() > 1e-9 {
                    return Err(format!("score {score}, expected {s}\n{stdout}").into());
                }
            }
            if let Some(m) = want
                .get("max_total")
                .and_then(|v| v.as_integer().map(|i| i as f64).or(v.as_float()))
            {
                if score > m {
                    return Err(format!(
                        "score {score} is above the most it may earn ({m})\n{stdout}"
                    )
                    .into());
                }
            }
            for item in ["correct", "racecheck", "synccheck", "memcheck", "initcheck"] {
                if let Some(st) = want.get(item).and_then(|v| v.as_str()) {
                    let got = grade_item(&g, item)["status"].as_str().map(str::to_string);
                    let ok = match st {
                        "failed" => matches!(got.as_deref(), Some("failed") | Some("partial")),
                        other => got.as_deref() == Some(other),
                    };
                    if !ok {
                        return Err(format!("{item}: {got:?}, expected {st}\n{stdout}").into());
                    }
                }
            }
            Ok(Completion::Completed)
        })
        .with_kind("gpu"),
    );
    out
}

/// A FIFO at `path` (an include of it would block whoever opens it).
fn make_fifo(path: &str) -> Result<(), libtest_mimic::Failed> {
    use std::os::unix::fs::FileTypeExt;
    if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo()) {
        return Ok(());
    }
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .map_err(|e| format!("mkfifo: {e}"))?;
    match status.success() || std::fs::metadata(path).is_ok() {
        true => Ok(()),
        false => Err(format!("mkfifo {path} failed").into()),
    }
}
