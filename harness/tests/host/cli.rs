//! `cli::<name>`: the racegate binary end to end on the repository's cases, with no GPU:
//! listing, selecting cases by name and glob, and the errors of a wrong name or an empty root.

use racegate::source::catalog::Catalog;

use crate::runner::racegate;
use crate::{nvrtc_or_not_run, repo_root, temp_dir, Failed};

#[test]
fn list_names_every_case() -> Result<(), Failed> {
    let root = repo_root();
    let ran = racegate(["list"]).at(&root).run();
    let catalog = Catalog::discover(&root)?;
    if ran.exit() != 0 {
        return Err(format!("exit {}: {}", ran.exit(), ran.stderr).into());
    }
    for c in &catalog.cases {
        if !ran.stdout.contains(&c.name) {
            return Err(format!("`racegate list` does not show {}", c.name).into());
        }
    }
    Ok(())
}

#[test]
fn list_json_parses() -> Result<(), Failed> {
    let ran = racegate(["list", "--json", "-"]).at(repo_root()).run();
    let v: serde_json::Value = serde_json::from_str(&ran.stdout)?;
    let n = v.as_array().map(|a| a.len()).unwrap_or(0);
    if ran.exit() != 0 || n == 0 {
        return Err(format!("exit {}, {n} cases", ran.exit()).into());
    }
    Ok(())
}

#[test]
fn unknown_case_is_a_usage_error() -> Result<(), Failed> {
    let ran = racegate(["stress", "matmul_tiled"])
        .at(repo_root())
        .no_gpu()
        .run();
    if ran.exit() != 2
        || !ran.stderr.contains("unknown case `matmul_tiled`")
        || !ran.stderr.contains("matmul_tiled16")
    {
        return Err(format!("exit {}: {}", ran.exit(), ran.stderr).into());
    }
    Ok(())
}

#[test]
fn check_without_a_gpu_compiles_and_exits_4() -> Result<(), Failed> {
    if !nvrtc_or_not_run() {
        return Ok(());
    }
    let dir = temp_dir("racegate-check-")?;
    let junit = dir.path().join("check-junit.xml");
    let ran = racegate(["check", "--junit"])
        .args([&junit])
        .at(repo_root())
        .no_gpu()
        .run();
    let (code, stdout, stderr) = (ran.exit(), &ran.stdout, &ran.stderr);
    if code != 4 || !stdout.contains("no CUDA device") || stdout.contains("FAIL") {
        return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
    }
    // The dashboard still gets a report: every cell skipped, saying why.
    let xml = std::fs::read_to_string(&junit).map_err(|e| format!("no JUnit: {e}"))?;
    if !xml.contains("<skipped message=\"no CUDA device") || xml.contains("<failure") {
        return Err(format!("JUnit without a device:\n{xml}").into());
    }
    Ok(())
}

#[test]
fn a_misspelled_case_gets_the_closest_name() -> Result<(), Failed> {
    let ran = racegate(["stress", "reduce_sequentail"])
        .at(repo_root())
        .no_gpu()
        .run();
    if ran.exit() != 2 || !ran.stderr.contains("did you mean: reduce_sequential\n") {
        return Err(format!("exit {}: {}", ran.exit(), ran.stderr).into());
    }
    Ok(())
}

#[test]
fn globs_select_cases() -> Result<(), Failed> {
    if !nvrtc_or_not_run() {
        return Ok(());
    }
    let ran = racegate(["compile", "reduce_sequential*"])
        .at(repo_root())
        .run();
    let files = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("ok   compile"))
        .count();
    if ran.exit() != 0 || files != 5 || ran.stdout.contains("matmul") {
        return Err(format!(
            "exit {}, {files} files\n{}\n{}",
            ran.exit(),
            ran.stdout,
            ran.stderr
        )
        .into());
    }
    let ran = racegate(["compile", "nothing_like_this*"])
        .at(repo_root())
        .run();
    if ran.exit() != 2 || !ran.stderr.contains("matches no case") {
        return Err(format!("exit {}: {}", ran.exit(), ran.stderr).into());
    }
    Ok(())
}

#[test]
fn zero_kernels_fails_loudly() -> Result<(), Failed> {
    let empty = temp_dir("racegate-empty-")?;
    std::fs::create_dir_all(empty.path().join("kernels"))?;
    let ran = racegate(["--root"])
        .args([empty.path()])
        .args(["list"])
        .at(repo_root())
        .run();
    if ran.exit() != 2 || !ran.stderr.contains("no kernels found") {
        return Err(format!("exit {}: {}", ran.exit(), ran.stderr).into());
    }
    Ok(())
}
