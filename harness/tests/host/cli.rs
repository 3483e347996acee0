//! `cli::<name>`: the racegate binary end to end, with no GPU (host).

use std::path::Path;

use libtest_mimic::{Completion, Trial};
use racegate::source::catalog::Catalog;

use crate::util::{in_ci, run_cli, temp_dir};

pub fn trials(root: &Path) -> Vec<Trial> {
    let mut out = Vec::new();
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::list_names_every_case", move || {
            let (code, stdout, stderr) = run_cli(&r, &["list"], &[]);
            let catalog = Catalog::discover(&r).map_err(|e| e.to_string())?;
            if code != 0 {
                return Err(format!("exit {code}: {stderr}").into());
            }
            for c in &catalog.cases {
                if !stdout.contains(&c.name) {
                    return Err(format!("`racegate list` does not show {}", c.name).into());
                }
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::list_json_parses", move || {
            let (code, stdout, _) = run_cli(&r, &["list", "--json", "-"], &[]);
            let v: serde_json::Value = serde_json::from_str(&stdout).map_err(|e| e.to_string())?;
            let n = v.as_array().map(|a| a.len()).unwrap_or(0);
            if code != 0 || n == 0 {
                return Err(format!("exit {code}, {n} cases").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::unknown_case_is_a_usage_error", move || {
            let (code, _, stderr) =
                run_cli(&r, &["stress", "matmul_tiled"], &[("RACEGATE_NO_GPU", "1")]);
            if code != 2
                || !stderr.contains("unknown case `matmul_tiled`")
                || !stderr.contains("matmul_tiled16")
            {
                return Err(format!("exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::ignorable_test("cli::check_without_a_gpu_compiles_and_exits_4", move || {
            if racegate::build::toolchain::nvrtc().is_err() && !in_ci() {
                return Ok(Completion::ignored_with(
                    "NVRTC not installed (run racegate setup)",
                ));
            }
            let dir = temp_dir("racegate-check-")?;
            let junit = dir.path().join("check-junit.xml");
            let (code, stdout, stderr) = run_cli(
                &r,
                &["check", "--junit", junit.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if code != 4 || !stdout.contains("no CUDA device") || stdout.contains("FAIL") {
                return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
            }
            // The dashboard still gets a report: every cell skipped, saying why.
            let xml = std::fs::read_to_string(&junit).map_err(|e| format!("no JUnit: {e}"))?;
            if !xml.contains("<skipped message=\"no CUDA device") || xml.contains("<failure") {
                return Err(format!("JUnit without a device:\n{xml}").into());
            }
            Ok(Completion::Completed)
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::a_misspelled_case_gets_the_closest_name", move || {
            let (code, _, stderr) = run_cli(
                &r,
                &["stress", "reduce_sequentail"],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if code != 2 || !stderr.contains("did you mean: reduce_sequential\n") {
                return Err(format!("exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::ignorable_test("cli::globs_select_cases", move || {
            if racegate::build::toolchain::nvrtc().is_err() && !in_ci() {
                return Ok(Completion::ignored_with(
                    "NVRTC not installed (run racegate setup)",
                ));
            }
            let (code, stdout, stderr) = run_cli(&r, &["compile", "reduce_sequential*"], &[]);
            let files = stdout
                .lines()
                .filter(|l| l.starts_with("ok   compile"))
                .count();
            if code != 0 || files != 5 || stdout.contains("matmul") {
                return Err(format!("exit {code}, {files} files\n{stdout}\n{stderr}").into());
            }
            let (code, _, stderr) = run_cli(&r, &["compile", "nothing_like_this*"], &[]);
            if code != 2 || !stderr.contains("matches no case") {
                return Err(format!("exit {code}: {stderr}").into());
            }
            Ok(Completion::Completed)
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::zero_kernels_fails_loudly", move || {
            let empty = temp_dir("racegate-empty-")?;
            std::fs::create_dir_all(empty.path().join("kernels")).map_err(|e| e.to_string())?;
            let (code, _, stderr) =
                run_cli(&r, &["--root", empty.path().to_str().unwrap(), "list"], &[]);
            if code != 2 || !stderr.contains("no kernels found") {
                return Err(format!("exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    out
}
