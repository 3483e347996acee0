//! `sanitize_batch::<name>`: several cases in one compute-sanitizer process
//! (`judge::sanitize::batch`), end to end with fake compute-sanitizers and the cases compiled
//! by NVRTC for real: a clean batch settles every case in one process; one that hangs sends the
//! case that was running to a run alone (which alone says whether it hangs) and runs the
//! others again as a batch; one the tool could not finish, or that printed no result lines,
//! sends every case to a run alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use racegate::judge::sanitize::tool::{Outcome, SanitizeConfig, SanitizerRun, Tool};
use racegate::source::catalog::Catalog;

fn repo() -> PathBuf {
    crate::package_dir().parent().unwrap().to_path_buf()
}

/// Three catalog cases of three files.
const CASES: [&str; 3] = ["counter_single", "reduce_shuffle", "matmul_naive"];

/// A fake compute-sanitizer: logs each call's cases to `calls`, saves an empty XML, prints
/// the target's result line for each case (the case named in `hang_on` instead sleeps when
/// it runs with others, or always when `hang_on` ends in `!`; `lines = false` prints none),
/// and exits with `exit`.
fn fake(dir: &Path, hang_on: &str, lines: bool, exit: i32) -> (PathBuf, PathBuf) {
    let (hang_on, alone_too) = match hang_on.strip_suffix('!') {
        Some(name) => (name, 0),
        None => (hang_on, 1),
    };
    use std::os::unix::fs::PermissionsExt;
    let calls = dir.join("calls");
    let script = format!(
        r#"#!/bin/sh
save=; cases=; n=0; keep=; tag=
while [ $# -gt 0 ]; do
  case "$1" in
    --save) save=$2; shift ;;
    --case) cases="$cases $2"; n=$((n+1)); shift ;;
    --nonce) tag=" [run $2]"; shift ;;
    --keep-memory) keep=" +keep" ;;
  esac
  shift
done
echo "$cases$keep" >> '{calls}'
echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save"
for c in $cases; do
  if [ "$c" = '{hang_on}' ] && [ $n -gt {alone_too} ]; then sleep 60; fi
  if [ {lines} = true ]; then
    echo "racegate target: $c (n=1 grid=1 block=64): results correct; buffers digest 0000000000000000$tag"
  fi
done
if [ {lines} = true ] && [ -n "$tag" ]; then echo "racegate target: every case ran$tag"; fi
exit {exit}
"#,
        calls = calls.display()
    );
    let p = dir.join("compute-sanitizer");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    (p, calls)
}

/// Runs `tool` on [`CASES`] through the batch with the fake: each case's run and the cases of
/// every call the fake saw. `None` where NVRTC is missing outside CI.
fn run(
    hang_on: &str,
    lines: bool,
    exit: i32,
    tool: Tool,
) -> Option<(Vec<SanitizerRun>, Vec<String>)> {
    run_with(hang_on, lines, exit, tool, &[])
}

/// [`run`] with the user's own compute-sanitizer options.
fn run_with(
    hang_on: &str,
    lines: bool,
    exit: i32,
    tool: Tool,
    extra: &[&str],
) -> Option<(Vec<SanitizerRun>, Vec<String>)> {
    let root = repo();
    if racegate::build::toolchain::nvrtc(&root).is_err() {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "NVRTC is needed (CI=true)");
        eprintln!("NOT RUN: no NVRTC (racegate setup)");
        return None;
    }
    let catalog = Catalog::discover(&root).unwrap();
    let cases: Vec<_> = CASES.iter().map(|n| catalog.get(n).unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let (sanitizer, calls) = fake(dir.path(), hang_on, lines, exit);
    let mut cfg = SanitizeConfig::new(tool, Some(sanitizer), Duration::from_secs(2), "compute_90");
    cfg.extra_args = extra.iter().map(|a| a.to_string()).collect();
    let runs =
        racegate::judge::sanitize::batch::run(&catalog, &cases, &cfg, &crate::racegate_exe())
            .unwrap();
    let calls = std::fs::read_to_string(calls).unwrap();
    let calls = calls.lines().map(|l| l.trim().to_string()).collect();
    Some((runs, calls))
}

/// The batch's call, then the calls alone after it in any order (they run side by side).
fn batch_then_alone(calls: &[String]) -> (String, Vec<String>) {
    let mut rest = calls[1..].to_vec();
    rest.sort();
    (calls[0].clone(), rest)
}

fn names(runs: &[SanitizerRun]) -> Vec<&str> {
    runs.iter().map(|r| r.case.as_str()).collect()
}

#[test]
fn a_clean_batch_settles_every_case_in_one_process() {
    let Some((runs, calls)) = run("-", true, 0, Tool::Racecheck) else {
        return;
    };
    assert_eq!(calls, [CASES.join(" ")]);
    assert_eq!(names(&runs), CASES);
    for r in &runs {
        assert_eq!(r.outcome, Outcome::Clean, "{r:?}");
        assert!(r.exit.contains("one process for"), "{}", r.exit);
        // Each case's log holds its own result line and no other case's.
        for other in CASES {
            let line = format!("racegate target: {other} (");
            assert_eq!(r.log.contains(&line), other == r.case, "{}", r.log);
        }
    }
}

#[test]
fn a_hang_sends_the_running_case_alone_and_the_others_run_again_together() {
    // The case that was running is slow only next to the others (as a scan was once on the
    // H200): its run alone is its answer, clean.
    let Some((runs, calls)) = run("reduce_shuffle", true, 0, Tool::Synccheck) else {
        return;
    };
    let want = [
        CASES.join(" "),
        "counter_single matmul_naive".to_string(),
        "reduce_shuffle".to_string(),
    ];
    assert!(calls.iter().all(|c| !c.contains("+keep")), "{calls:?}");
    assert_eq!(calls, want);
    assert_eq!(names(&runs), CASES);
    assert!(runs.iter().all(|r| r.outcome == Outcome::Clean), "{runs:?}");
    assert!(!runs[1].exit.contains("one process"), "{}", runs[1].exit);
    // It hangs alone too: the hang is its own run's, after its own deadline.
    let Some((runs, calls)) = run("reduce_shuffle!", true, 0, Tool::Synccheck) else {
        return;
    };
    assert_eq!(calls, want);
    assert!(
        matches!(runs[1].outcome, Outcome::Hang { .. }),
        "{:?}",
        runs[1]
    );
    assert_eq!(
        (&runs[0].outcome, &runs[2].outcome),
        (&Outcome::Clean, &Outcome::Clean)
    );
}

#[test]
fn what_a_batch_cannot_prove_runs_alone() {
    // The tool failed (exit 255): every case alone, each inconclusive on its own run.
    let Some((runs, calls)) = run("-", true, 255, Tool::Memcheck) else {
        return;
    };
    let mut want = vec![CASES.join(" ")];
    want.extend(CASES.map(String::from));
    assert_eq!(batch_then_alone(&calls), batch_then_alone(&want));
    assert!(
        runs.iter()
            .all(|r| matches!(r.outcome, Outcome::Inconclusive(_))),
        "{runs:?}"
    );
    // No result lines (the target never said a launch ran): nothing is settled, and each
    // case's clean run alone is its answer. initcheck's batch, and only it, keeps every
    // case's memory to the end of the target.
    let Some((runs, calls)) = run("-", false, 0, Tool::Initcheck) else {
        return;
    };
    want[0].push_str(" +keep");
    assert_eq!(batch_then_alone(&calls), batch_then_alone(&want));
    assert!(runs
        .iter()
        .all(|r| r.outcome == Outcome::Clean && !r.exit.contains("one process")));
}

#[test]
fn the_users_own_sanitizer_options_run_every_case_alone() {
    // `--launch-count 1` counts launches per process: in a batch it would check one case.
    let Some((runs, calls)) = run_with("-", true, 0, Tool::Racecheck, &["--launch-count", "1"])
    else {
        return;
    };
    assert_eq!(calls, CASES.map(String::from));
    assert!(runs
        .iter()
        .all(|r| r.outcome == Outcome::Clean && !r.exit.contains("one process")));
}
