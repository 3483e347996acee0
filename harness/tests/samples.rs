//! The sample submissions and the grade each must get: `harness/tests/submissions/EXERCISE/`,
//! each folder with its `expected.toml`. Per sample, `grade::host::<exercise>::<sample>` (the
//! file checks, the signature check and compilation, with no GPU) and
//! `grade::gpu::<exercise>::<sample>` (the whole grade). Missing samples, an unreadable
//! `expected.toml` or a sample it does not list each fail a trial of their own.

use std::path::Path;

use libtest_mimic::{Completion, Trial};

use crate::util::{gpu_slots, grade_item, grade_json, submissions_dir, Device};

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
    for exercise in exercises {
        let dir = base.join(&exercise);
        let expected: toml::Table = match std::fs::read_to_string(dir.join("expected.toml"))
            .map(|t| t.parse::<toml::Table>())
        {
            Ok(Ok(t)) => t,
            _ => {
                out.push(Trial::test(
                    format!("grade::{exercise}::expected_toml_parses"),
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
        out.push(Trial::test(
            format!("grade::host::{exercise}::every_sample_has_an_expected_grade"),
            move || match unlisted.is_empty() {
                true => Ok(()),
                false => Err(format!("no entry in expected.toml for {unlisted:?}").into()),
            },
        ));
        for (name, want) in expected {
            out.extend(sample_trials(
                root,
                device,
                &exercise,
                &dir.join(format!("{name}.cu")),
                want,
            ));
        }
    }
    out
}

/// The host and GPU trials of one sample submission.
fn sample_trials(
    root: &Path,
    device: &Device,
    exercise: &str,
    file: &Path,
    want: toml::Value,
) -> Vec<Trial> {
    let name = file
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let file = file.to_path_buf();
    let mut out = Vec::new();
    let want = want.as_table().cloned().unwrap_or_default();
    let r = root.to_path_buf();
    let (f, w, ex) = (file.clone(), want.clone(), exercise.to_string());
    // Host: the file checks, the signature check and compilation, with no GPU.
    out.push(
        Trial::test(format!("grade::host::{exercise}::{name}"), move || {
            let g = grade_json(&r, &ex, &f, &[], &[("RACEGATE_NO_GPU", "1")], 4)?;
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
            Ok(())
        })
        .with_kind("host"),
    );
    // GPU: the whole grade.
    let r = root.to_path_buf();
    let dev = device.clone();
    let ex2 = exercise.to_string();
    out.push(
        Trial::ignorable_test(format!("grade::gpu::{exercise}::{name}"), move || {
            if let Err(why) = &dev {
                return Ok(Completion::ignored_with(format!("no CUDA device: {why}")));
            }
            let slots = gpu_slots();
            let _slot = slots.take();
            let g = grade_json(
                &r,
                &ex2,
                &file,
                &[],
                &[("RACEGATE_GRADE_SECRET", "ci-secret")],
                0,
            )?;
            let stdout = g.to_string();
            let score = g["score"].as_f64().unwrap_or(-1.0);
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
