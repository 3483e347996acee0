//! The one exit-code table, reached through the real binary with a real trigger for each code
//! (`racegate::errors`; README, "Exit codes"). Where a device changes the answer (precedence:
//! 2, then 4, then 3, then 1), the test says which code each machine must give.

use crate::repo_root;
use crate::runner::racegate;

fn has_device() -> bool {
    racegate::run::device::probe().is_ok()
}

/// A manifest project in a scratch folder: one kernel, `source` its text.
pub(super) fn project(source: &str, manifest_extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), source).unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        format!(
            r#"[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = {{ n = [1, 1000] }}
sanitize_sizes = {{ n = 100 }}
grid = ["ceil_div(n, 128)"]
block = ["128"]
oracle = "determinism"
args = [
  {{ name = "y", kind = "out", type = "f32", len = "n" }},
  {{ name = "n", kind = "scalar", type = "i32", value = "n" }},
]
{manifest_extra}"#
        ),
    )
    .unwrap();
    dir
}

pub(super) const GOOD: &str = "extern \"C\" __global__ void k(float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 1.0f;\n}\n";

#[test]
fn code_0_everything_held() {
    let (code, out) = racegate(["list"]).at(repo_root()).run().exit_text();
    assert_eq!(code, 0, "{out}");
}

#[test]
fn code_1_a_kernel_that_does_not_compile() {
    let p = project(
        "extern \"C\" __global__ void k(float* y, int n) { y[0] = undeclared; }\n",
        "",
    );
    let (code, out) = racegate(["compile", "--manifest", "racegate.toml"])
        .at(p.path())
        .run()
        .exit_text();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("undeclared"), "NVRTC's log is shown: {out}");
}

#[test]
fn code_2_unknown_case_bad_flag_malformed_toml() {
    let (code, out) = racegate(["stress", "no_such_case"])
        .at(repo_root())
        .run()
        .exit_text();
    assert_eq!(code, 2, "{out}");
    let (code, out) = racegate(["stress", "counter_single", "--per-set", "0"])
        .at(repo_root())
        .run()
        .exit_text();
    assert_eq!(code, 2, "{out}");
    // A program that does not exist, or a case and a program at once, is bad input.
    let (code, out) = racegate([
        "sanitize",
        "--tool",
        "globalcheck",
        "--",
        "no_such_program_here",
    ])
    .at(repo_root())
    .run()
    .exit_text();
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no_such_program_here"), "{out}");
    let (code, out) = racegate([
        "sanitize",
        "counter_single",
        "--tool",
        "racecheck",
        "--",
        "true",
    ])
    .at(repo_root())
    .run()
    .exit_text();
    assert_eq!(code, 2, "{out}");
    let p = project(GOOD, "[[kernel]\n");
    let (code, out) = racegate(["list", "--manifest", "racegate.toml"])
        .at(p.path())
        .run()
        .exit_text();
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("racegate.toml:"),
        "names the file and line: {out}"
    );
}

#[test]
fn code_2_wins_over_4() {
    // Bad input is reported before the missing device.
    let (code, out) = racegate(["stress", "no_such_case"])
        .at(repo_root())
        .no_gpu()
        .run()
        .exit_text();
    assert_eq!(code, 2, "{out}");
}

#[test]
fn code_3_nvrtc_missing() {
    let (code, out) = racegate(["compile", "counter_single"])
        .at(repo_root())
        .envs(&[("RACEGATE_NVRTC_LIB", "/nonexistent/libnvrtc.so.13")])
        .run()
        .exit_text();
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("NVRTC"), "{out}");
}

#[test]
fn code_3_or_4_stress_without_nvrtc() {
    // A missing tool is inconclusive (3), never "found" (1); with no device, 4 comes first.
    let (code, out) = racegate(["stress", "counter_single", "--trials", "1"])
        .at(repo_root())
        .envs(&[("RACEGATE_NVRTC_LIB", "/nonexistent/libnvrtc.so.13")])
        .run()
        .exit_text();
    assert_eq!(code, if has_device() { 3 } else { 4 }, "{out}");
}

#[test]
fn code_3_or_4_grade_without_nvrtc_is_not_graded() {
    // The machine's failure, never the submission's: no score, and 4 first without a device.
    let one = repo_root().join("harness/tests/submissions/reduce/correct.cu");
    let (code, out) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "gradescope",
        one.to_str().unwrap(),
    ])
    .at(repo_root())
    .envs(&[("RACEGATE_NVRTC_LIB", "/nonexistent/libnvrtc.so.13")])
    .run()
    .exit_text();
    assert_eq!(code, if has_device() { 3 } else { 4 }, "{out}");
    assert!(out.contains("not graded") && out.contains("NVRTC"), "{out}");
    assert!(
        !out.contains("\"score\""),
        "no results.json for Gradescope: {out}"
    );
}

#[test]
fn code_4_no_device() {
    let (code, out) = racegate(["stress", "counter_single", "--trials", "1"])
        .at(repo_root())
        .no_gpu()
        .run()
        .exit_text();
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("no CUDA device"), "{out}");
}

#[test]
fn every_help_ends_with_the_table() {
    for cmd in [
        "list", "compile", "stress", "sanitize", "check", "bench", "gate", "grade",
    ] {
        let (code, out) = racegate([cmd, "--help"]).at(repo_root()).run().exit_text();
        assert_eq!(code, 0, "{cmd}: {out}");
        assert!(
            out.contains("Exit codes: 0") && out.contains("4 no CUDA device"),
            "`racegate {cmd} --help` names every exit code:\n{out}"
        );
    }
}

#[test]
fn code_4_every_command_that_needs_a_device() {
    // Each command that runs work on a GPU, on a machine without one: 4, and the message says
    // so. `list` and `compile` (without --load) need no device.
    let p = project(GOOD, "");
    let manifest = format!("{}/racegate.toml", p.path().display());
    let submission = repo_root().join("harness/tests/submissions/reduce/correct.cu");
    let submission = submission.to_str().unwrap();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("stress", vec!["stress", "counter_single", "--trials", "1"]),
        (
            "sanitize",
            vec!["sanitize", "counter_single", "--tool", "racecheck"],
        ),
        ("check", vec!["check", "counter_single"]),
        ("bench", vec!["bench", "counter_single"]),
        (
            "compile --load",
            vec!["compile", "counter_single", "--load"],
        ),
        ("gate", vec!["--manifest", &manifest, "gate"]),
        ("gate -- PROGRAM", vec!["gate", "--runs", "1", "--", "true"]),
        (
            "sanitize -- PROGRAM",
            vec!["sanitize", "--tool", "globalcheck", "--", "true"],
        ),
        (
            "grade",
            vec!["grade", "--exercise", "reduce", "--trials", "1", submission],
        ),
    ];
    let scratch = tempfile::tempdir().unwrap();
    for (what, args) in cases {
        let cwd = if what == "gate -- PROGRAM" {
            scratch.path().to_path_buf()
        } else {
            repo_root()
        };
        let (code, out) = racegate(&args).at(&cwd).no_gpu().run().exit_text();
        assert_eq!(code, 4, "racegate {what}:\n{out}");
        assert!(
            out.contains("no CUDA device"),
            "racegate {what} says why:\n{out}"
        );
    }
    for args in [vec!["list"], vec!["list", "--json", "-"]] {
        let (code, out) = racegate(&args).at(repo_root()).no_gpu().run().exit_text();
        assert_eq!(code, 0, "{out}");
    }
}

#[test]
fn code_2_a_format_that_cannot_be_honoured() {
    // A platform format grades one submission; two of them take csv or json.
    let sub = repo_root().join("harness/tests/submissions/reduce");
    let (a, b) = (sub.join("correct.cu"), sub.join("empty.cu"));
    let (code, out) = racegate([
        "grade",
        "--exercise",
        "reduce",
        "--format",
        "gradescope",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ])
    .at(repo_root())
    .no_gpu()
    .run()
    .exit_text();
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("use --format csv or --format json"), "{out}");
}
