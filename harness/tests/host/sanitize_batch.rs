//! `sanitize_batch::<name>`: several cases in one compute-sanitizer process
//! (`judge::sanitize::batch`), end to end with fake compute-sanitizers and the cases compiled
//! by NVRTC for real: a clean batch settles every case in one process; one that hangs sends the
//! case that was running to a run alone (which alone says whether it hangs) and runs the
//! others again as a batch; one the tool could not finish, or that printed no result lines,
//! sends every case to a run alone; a case whose findings (a real H200 capture) are at its own
//! code is given them from the batch, as its run alone reports them; a line-less record beside
//! them sends that case alone and the others again as a batch.

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
    let body = format!(
        r#"echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save"
for c in $cases; do
  if [ "$c" = '{hang_on}' ] && [ $n -gt {alone_too} ]; then sleep 60; fi
  if [ {lines} = true ]; then
    echo "racegate target: $c (n=1 grid=1 block=64): results correct; buffers digest 0000000000000000$tag"
  fi
done
if [ {lines} = true ] && [ -n "$tag" ]; then echo "racegate target: every case ran$tag"; fi
exit {exit}
"#
    );
    write_fake(dir, &body)
}

/// A fake compute-sanitizer in `dir` (and the file it logs its calls to): it reads its
/// arguments (`$save`: the XML's path; `$cases` and their count `$n`; `$tag`: the batch's nonce
/// as the target prints it; `$keep`: initcheck's `--keep-memory`), logs its cases, then runs
/// `body`.
fn write_fake(dir: &Path, body: &str) -> (PathBuf, PathBuf) {
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
{body}"#,
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
    let dir = tempfile::tempdir().unwrap();
    let (sanitizer, calls) = fake(dir.path(), hang_on, lines, exit);
    let mut cfg = SanitizeConfig::new(tool, Some(sanitizer), Duration::from_secs(2), "compute_90");
    cfg.extra_args = extra.iter().map(|a| a.to_string()).collect();
    let (runs, calls, _) = through_batch(&CASES, &cfg, &calls)?;
    Some((runs, calls))
}

/// `names` through the batch as `cfg` says (its compute-sanitizer a fake that logs its calls
/// to `calls`): each case's run, the cases of every call, and the catalog. `None` where NVRTC
/// is missing outside CI.
fn through_batch(
    names: &[&str],
    cfg: &SanitizeConfig,
    calls: &Path,
) -> Option<(Vec<SanitizerRun>, Vec<String>, Catalog)> {
    let root = repo();
    if racegate::build::toolchain::nvrtc().is_err() {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "NVRTC is needed (CI=true)");
        eprintln!("NOT RUN: no NVRTC (racegate setup)");
        return None;
    }
    let catalog = Catalog::discover(&root).unwrap();
    let cases: Vec<_> = names.iter().map(|n| catalog.get(n).unwrap()).collect();
    let runs = racegate::judge::sanitize::batch::run(&catalog, &cases, cfg, &crate::racegate_exe())
        .unwrap();
    let calls = std::fs::read_to_string(calls).unwrap();
    let calls = calls.lines().map(|l| l.trim().to_string()).collect();
    Some((runs, calls, catalog))
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

/// A fake compute-sanitizer that saves `fixture` (a capture of racegate's own on the H200, its
/// checkout folder `/work/main/` read as this one's) as the run's XML when `owner` is among its
/// cases, and exits with the findings code; an empty XML and exit 0 otherwise. It prints every
/// case's result line and the last line, and logs its cases to `calls`.
fn fake_with(dir: &Path, fixture: &str, owner: &str) -> (PathBuf, PathBuf) {
    let fixture = crate::package_dir()
        .join("tests/fixtures/h200")
        .join(fixture);
    let body = format!(
        r#"code=0
case "$cases " in
  *" {owner} "*) sed 's|/work/main/|{root}/|g' '{fixture}' > "$save"; code=86 ;;
  *) echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save" ;;
esac
for c in $cases; do
  echo "racegate target: $c (n=1 grid=1 block=64): results correct; buffers digest 0000000000000000$tag"
done
if [ -n "$tag" ]; then echo "racegate target: every case ran$tag"; fi
exit $code
"#,
        root = repo().display(),
        fixture = fixture.display(),
    );
    write_fake(dir, &body)
}

/// `names` through the batch with [`fake_with`]; each case's run, the cases of every call, and
/// the owner's run alone through the same fake (what a run alone would have said).
fn run_fixture(
    names: [&str; 3],
    tool: Tool,
    fixture: &str,
) -> Option<(Vec<SanitizerRun>, Vec<String>, SanitizerRun)> {
    let dir = tempfile::tempdir().unwrap();
    let (sanitizer, calls) = fake_with(dir.path(), fixture, names[1]);
    let cfg = SanitizeConfig::new(tool, Some(sanitizer), Duration::from_secs(5), "compute_90");
    let (runs, seen, catalog) = through_batch(&names, &cfg, &calls)?;
    let owner = catalog.get(names[1]).unwrap();
    let alone =
        racegate::judge::sanitize::runner::run(&catalog, owner, &cfg, &crate::racegate_exe())
            .unwrap();
    Some((runs, seen, alone))
}

#[test]
fn a_case_whose_findings_are_at_its_own_code_is_given_them_from_the_batch() {
    let cases = [
        "counter_single",
        "reduce_sequential::no_loop_sync",
        "matmul_naive",
    ];
    let Some((runs, calls, alone)) = run_fixture(
        cases,
        Tool::Racecheck,
        "reduce_sequential__no_loop_sync__racecheck.xml",
    ) else {
        return;
    };
    // One process for all three: nobody ran again alone.
    assert_eq!(calls, [cases.join(" ")]);
    assert_eq!(names(&runs), cases);
    let Outcome::Findings(found) = &runs[1].outcome else {
        panic!("{:?}", runs[1]);
    };
    assert!(!found.is_empty());
    assert!(runs[1].exit.contains("one process for"), "{}", runs[1].exit);
    // Exactly what the case's run alone reports, and nothing of it given to the others.
    assert_eq!(runs[1].outcome, alone.outcome);
    assert_eq!(
        (&runs[0].outcome, &runs[2].outcome),
        (&Outcome::Clean, &Outcome::Clean)
    );
}

#[test]
fn a_line_less_record_beside_one_cases_findings_sends_it_alone_and_the_others_again_as_a_batch() {
    // A real capture with findings at the variant's lines and synccheck's line-less warning
    // that it dropped records: the warning could be anyone's, so nobody is given findings from
    // the batch; the variant runs alone and the two others again as a batch of their own.
    let cases = [
        "counter_single",
        "reduce_sequential::even_lanes_barrier",
        "matmul_naive",
    ];
    let Some((runs, calls, alone)) = run_fixture(
        cases,
        Tool::Synccheck,
        "reduce_sequential__even_lanes_barrier__synccheck.xml",
    ) else {
        return;
    };
    assert_eq!(
        batch_then_alone(&calls),
        (
            cases.join(" "),
            vec![
                "counter_single matmul_naive".to_string(),
                "reduce_sequential::even_lanes_barrier".to_string(),
            ]
        )
    );
    assert_eq!(names(&runs), cases);
    assert!(
        matches!(runs[1].outcome, Outcome::Findings(_)),
        "{:?}",
        runs[1]
    );
    assert!(
        !runs[1].exit.contains("one process"),
        "its own run: {}",
        runs[1].exit
    );
    assert_eq!(runs[1].outcome, alone.outcome);
    for r in [&runs[0], &runs[2]] {
        assert_eq!(r.outcome, Outcome::Clean, "{r:?}");
        assert!(
            r.exit
                .contains("one process for counter_single, matmul_naive"),
            "{}",
            r.exit
        );
    }
}
