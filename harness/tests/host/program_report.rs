//! `program_report::<name>`: what a program-mode report says besides its findings, through the
//! real binary on shell programs: which output lines the masks changed and by which rule, and,
//! under schedule jitter, a failing run re-run without jitter before anything is reported, the
//! finding saying which runs failed with and without it. A fake compute-sanitizer stands in for
//! the sanitizers (globalcheck is left out); the jitter injection is globalcheck's tool, built
//! from the pinned wheels of `ci/setup` (these shell programs never load it, which the report
//! says too).

use std::path::{Path, PathBuf};

use crate::runner::racegate;

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `racegate gate --json gate.json ARGS` in `dir` with a clean fake compute-sanitizer: the exit
/// code, the JSON document and both outputs.
fn gate(dir: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    // It keeps each call's arguments in `sanitizer-args`.
    let fake = script(
        dir,
        "compute-sanitizer",
        &format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nsave=\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --save ] && {{ save=$2; shift; }}; shift; done\n\
             echo '<?xml version=\"1.0\"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > \"$save\"\n",
            dir.join("sanitizer-args").display()
        ),
    );
    let json = dir.join("gate.json");
    let _ = std::fs::remove_file(&json);
    let out = racegate(["gate", "--json", "gate.json"])
        .args(["--tools", "racecheck"])
        .args(args)
        .at(dir)
        .program_device()
        .env("RACEGATE_COMPUTE_SANITIZER", &fake)
        .run();
    let text = out.text();
    let doc = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no JSON report:\n{text}"));
    (out.exit(), doc, text)
}

fn notes(doc: &serde_json::Value) -> Vec<String> {
    doc["notes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn messages(doc: &serde_json::Value, detector: &str) -> Vec<String> {
    doc["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|f| f["detector"] == detector)
                .filter_map(|f| f["message"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_report_names_each_masked_line_and_its_rule() {
    let dir = tempfile::tempdir().unwrap();
    script(
        dir.path(),
        "timings",
        "#!/bin/sh\necho 'Test passed'\necho \"Time= 1$(date +%N | cut -c1-3).5 msec\"\n\
         echo 'counter: 1 expected: 51200'\necho \"Throughput = $(date +%N | cut -c1-2).07 GB/s\"\n\
         echo 'sum = 0.996214'\n",
    );
    let (_, doc, text) = gate(
        dir.path(),
        &["--runs", "2", "--no-jitter", "--", "./timings"],
    );
    assert!(
        messages(&doc, "output").is_empty(),
        "timings must be masked:\n{text}"
    );
    let masked: Vec<String> = notes(&doc)
        .into_iter()
        .filter(|n| n.contains("masked before the runs were compared"))
        .collect();
    assert_eq!(masked.len(), 1, "one note on the masked lines:\n{text}");
    let m = &masked[0];
    for want in [
        "line 2 `Time= 1",
        " msec` (durations)",
        "line 4 `Throughput = ",
        " GB/s` (rates)",
    ] {
        assert!(m.contains(want), "`{want}` missing from: {m}");
    }
    // Lines no mask changed are not named.
    for line in ["line 1 ", "line 3 ", "line 5 "] {
        assert!(!m.contains(line), "{line} named in: {m}");
    }
    assert!(
        text.contains("masked before the runs were compared"),
        "the text report too:\n{text}"
    );

    // Nothing masked: nothing said.
    script(dir.path(), "plain", "#!/bin/sh\necho 'Test passed'\n");
    let (_, doc, _) = gate(dir.path(), &["--runs", "2", "--no-jitter", "--", "./plain"]);
    assert!(
        !notes(&doc).iter().any(|n| n.contains("masked before")),
        "{doc}"
    );
}

#[test]
fn a_failure_under_jitter_is_rerun_without_it_and_the_finding_says_which() {
    let dir = tempfile::tempdir().unwrap();
    // Fails only when the jitter injection is in its environment: a program the injection
    // breaks (or a race it exposes).
    script(
        dir.path(),
        "jitter_breaks",
        "#!/bin/sh\nif [ -n \"$RACEGATE_GC_MODE\" ]; then echo broken >&2; exit 1; fi\necho ok\n",
    );
    script(
        dir.path(),
        "always_fails",
        "#!/bin/sh\necho bad >&2\nexit 3\n",
    );
    let (_, doc, text) = gate(dir.path(), &["--runs", "2", "--", "./jitter_breaks"]);
    if notes(&doc)
        .iter()
        .any(|n| n.contains("plain runs without schedule jitter"))
    {
        panic!("globalcheck's tool cannot be built here (did ci/setup run?):\n{text}");
    }
    let exit = messages(&doc, "exit");
    assert_eq!(exit.len(), 1, "{text}");
    assert!(
        exit[0].contains(
            "exits with code 1 in 2 (runs 1, 2) of 2 runs with schedule jitter and none of 2 without; only under jitter"
        ),
        "{}",
        exit[0]
    );
    assert!(
        notes(&doc)
            .iter()
            .any(|n| n.contains("runs 1-2 with jitter, 3-4 without")),
        "{text}"
    );

    let (_, doc, text) = gate(dir.path(), &["--runs", "2", "--", "./always_fails"]);
    let exit = messages(&doc, "exit");
    assert_eq!(exit.len(), 1, "{text}");
    assert!(
        exit[0].contains("exits with code 3 in 2 (runs 1, 2) of 2 runs with schedule jitter and 2 (runs 3, 4) of 2 without")
            && !exit[0].contains("only under jitter"),
        "{}",
        exit[0]
    );

    // Without jitter there is nothing to re-run.
    let (_, doc, text) = gate(
        dir.path(),
        &["--runs", "2", "--no-jitter", "--", "./always_fails"],
    );
    let exit = messages(&doc, "exit");
    assert!(
        exit.len() == 1 && exit[0].contains("exits with code 3 in 2 of 2 runs (runs 1, 2)"),
        "{text}"
    );
    assert!(
        !notes(&doc)
            .iter()
            .any(|n| n.contains("without jitter before")),
        "{text}"
    );
}

#[test]
fn runs_the_injection_never_reached_are_not_called_jittered() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "no_cuda", "#!/bin/sh\necho 'Test passed'\n");
    let (_, doc, text) = gate(dir.path(), &["--runs", "2", "--", "./no_cuda"]);
    assert!(
        notes(&doc)
            .iter()
            .any(|n| n.contains("the runs were not jittered: the injection wrote no report")),
        "{text}"
    );
    let (_, doc, text) = gate(
        dir.path(),
        &["--runs", "2", "--no-jitter", "--", "./no_cuda"],
    );
    assert!(
        !notes(&doc).iter().any(|n| n.contains("not jittered")),
        "{text}"
    );
}

#[test]
fn racecheck_leaves_out_the_kernels_the_counted_runs_saw_use_no_shared_memory() {
    let dir = tempfile::tempdir().unwrap();
    // A program whose runs under jitter write what racegate's injected tool writes at exit:
    // each kernel's launches and shared memory. The fake sanitizer keeps its arguments.
    let counts = r#"{"launch_counts":[{"kernel":"_Z9transposev","launches":1,"shared":0},{"kernel":"_Z4tilev","launches":1,"shared":4096}],"sampled_out":0}"#;
    script(
        dir.path(),
        "counted",
        &format!(
            "#!/bin/sh\n[ -n \"$RACEGATE_GC_DIR\" ] && echo '{counts}' >> \"$RACEGATE_GC_DIR/report.jsonl\"\n\
             echo 'Test passed'\n"
        ),
    );
    let (_, doc, text) = gate(dir.path(), &["--runs", "2", "--", "./counted"]);
    let seen = std::fs::read_to_string(dir.path().join("sanitizer-args")).unwrap_or_default();
    let racecheck: Vec<&str> = seen.lines().filter(|l| l.contains("racecheck")).collect();
    assert_eq!(racecheck.len(), 1, "{seen}\n{text}");
    assert!(
        racecheck[0].contains("--kernel-name-exclude kne=_Z9transposev")
            && !racecheck[0].contains("_Z4tilev"),
        "{seen}\n{text}"
    );
    assert!(
        notes(&doc)
            .iter()
            .any(|n| n.contains("racecheck left out 1 kernel(s)") && n.contains("_Z9transposev")),
        "{text}"
    );
}

/// A fake compute-sanitizer that keeps its arguments in `sanitizer-args` and, for initcheck,
/// saves racegate's own H200 capture of a kernel reading never-written global memory: always
/// (`always`), or only in the sampled passes (a call naming kernels), the run of every launch
/// then clean.
fn initcheck_fake(dir: &Path, always: bool) -> PathBuf {
    let fixture = super::package_dir()
        .join("tests/fixtures/h200/histogram_global__uninit_bins__initcheck.xml");
    let sampled = if always {
        "true"
    } else {
        "echo \"$all\" | grep -q -- --kernel-name"
    };
    script(
        dir,
        "compute-sanitizer",
        &format!(
            "#!/bin/sh\nall=\"$*\"\necho \"$all\" >> '{args}'\nsave=\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --save ] && {{ save=$2; shift; }}; shift; done\n\
             if echo \"$all\" | grep -q 'initcheck' && {sampled}; then cp '{fixture}' \"$save\"; \
             else echo '<?xml version=\"1.0\"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > \"$save\"; fi\n",
            args = dir.join("sanitizer-args").display(),
            fixture = fixture.display()
        ),
    )
}

/// `racegate gate --tools initcheck` on a program whose runs under jitter count 100 launches
/// of one kernel (so initcheck's launches are sampled), with `fake` as compute-sanitizer.
fn gate_initcheck(dir: &Path, fake: &Path) -> (i32, serde_json::Value, String) {
    let counts =
        r#"{"launch_counts":[{"kernel":"_Z4busyv","launches":100,"shared":0}],"sampled_out":0}"#;
    script(
        dir,
        "busy",
        &format!(
            "#!/bin/sh\n[ -n \"$RACEGATE_GC_DIR\" ] && echo '{counts}' >> \"$RACEGATE_GC_DIR/report.jsonl\"\n\
             echo 'Test passed'\n"
        ),
    );
    let out = racegate(["gate", "--json", "gate.json", "--tools", "initcheck"])
        .args(["--runs", "2", "--", "./busy"])
        .at(dir)
        .program_device()
        .env("RACEGATE_COMPUTE_SANITIZER", fake)
        .run();
    let text = out.text();
    let doc = std::fs::read_to_string(dir.join("gate.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no JSON report:\n{text}"));
    (out.exit(), doc, text)
}

#[test]
fn initcheck_reports_of_sampled_passes_are_withdrawn_when_the_run_of_every_launch_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let fake = initcheck_fake(dir.path(), false);
    let (code, doc, text) = gate_initcheck(dir.path(), &fake);
    let seen = std::fs::read_to_string(dir.path().join("sanitizer-args")).unwrap_or_default();
    let runs: Vec<&str> = seen.lines().filter(|l| l.contains("initcheck")).collect();
    // The sampled passes, then one run naming no kernel: every launch.
    assert!(runs.len() >= 3, "{seen}\n{text}");
    assert!(
        runs[..runs.len() - 1]
            .iter()
            .all(|l| l.contains("--kernel-name")),
        "{seen}"
    );
    assert!(!runs[runs.len() - 1].contains("--kernel-name"), "{seen}");
    assert!(messages(&doc, "initcheck").is_empty(), "{text}");
    assert_eq!(code, 0, "{text}");
    assert!(
        notes(&doc)
            .iter()
            .any(|n| n.contains("withdrawn: the run checking every launch found none")),
        "{text}"
    );
}

#[test]
fn initcheck_reports_the_run_of_every_launch_confirms_are_findings() {
    let dir = tempfile::tempdir().unwrap();
    let fake = initcheck_fake(dir.path(), true);
    let (code, doc, text) = gate_initcheck(dir.path(), &fake);
    assert_eq!(code, 1, "{text}");
    assert!(!messages(&doc, "initcheck").is_empty(), "{text}");
    assert!(
        notes(&doc)
            .iter()
            .any(|n| n.contains("the run checking every launch, the verdict, reported")),
        "{text}"
    );
}

/// A benchmark's rate: the same in every plain run, another in each run under jitter (the jitter
/// slows its kernels, by its seed), and with CUDA event times held still
/// (`RACEGATE_GC_FREEZE_TIME=1`) `still` without jitter and `still_jittered` with it, where the
/// run with jitter must carry the first jittered run's seed (else it prints `9.99`). Held still,
/// it writes what racegate's tool writes: that it loaded and held `held` event times. `prefix`
/// starts the rate's line: `$R` in it is `PASSED`, or `FAILED` under jitter when `racy`.
fn rate_program(dir: &Path, still: &str, still_jittered: &str, held: &str, prefix: &str) {
    script(
        dir,
        "rates",
        &format!(
            "#!/bin/sh\necho 'n 1024'\nR=PASSED\n\
             if [ \"$RACEGATE_GC_FREEZE_TIME\" = 1 ]; then\n\
               printf '%s\\n%s\\n' '{{\"tool\":\"globalcheck\",\"mode\":0}}' '{{\"frozen_event_times\":{held}}}' >> \"$RACEGATE_GC_DIR/report.jsonl\"\n\
               if [ \"$RACEGATE_GC_MODE\" = jitter ]; then\n\
                 if [ \"$RACEGATE_GC_SEED\" = \"$(cat first-seed)\" ]; then echo \"{prefix}copy {still_jittered}\"; else echo \"{prefix}copy 9.99\"; fi\n\
               else echo \"{prefix}copy {still}\"; fi\n\
             elif [ \"$RACEGATE_GC_MODE\" = jitter ]; then\n\
               [ -f first-seed ] || echo \"$RACEGATE_GC_SEED\" > first-seed\n\
               [ -f racy ] && R=FAILED\n\
               echo \"{prefix}copy 3$RACEGATE_GC_SEED.63\"\n\
             else echo \"{prefix}copy 2374.49\"; fi\n"
        ),
    );
}

#[test]
fn a_rate_that_follows_the_programs_speed_is_timing_once_the_clock_is_held_still() {
    let dir = tempfile::tempdir().unwrap();
    rate_program(dir.path(), "4.00", "4.00", "2", "");
    let (code, doc, text) = gate(dir.path(), &["--runs", "2", "--", "./rates"]);
    assert!(messages(&doc, "output").is_empty(), "{text}");
    assert_eq!(code, 0, "{text}");
    assert!(
        notes(&doc)
            .iter()
            .any(|n| n.contains("line(s) 2 differed only under jitter")
                && n.contains("timing, not a race")),
        "{text}"
    );
}

/// `gate` on [`rate_program`] in a new folder (`racy`: its result turns FAILED under jitter).
fn gate_rates(
    still: &str,
    still_jittered: &str,
    held: &str,
    prefix: &str,
    racy: bool,
) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    rate_program(dir.path(), still, still_jittered, held, prefix);
    if racy {
        std::fs::write(dir.path().join("racy"), "").unwrap();
    }
    gate(dir.path(), &["--runs", "2", "--", "./rates"])
}

/// The output finding is there (exit 1), and a note holds `said` when given.
fn still_found(found: (i32, serde_json::Value, String), said: Option<&str>) {
    let (code, doc, text) = found;
    assert!(!messages(&doc, "output").is_empty(), "{text}");
    assert_eq!(code, 1, "{text}");
    if let Some(said) = said {
        assert!(notes(&doc).iter().any(|n| n.contains(said)), "{text}");
    }
}

#[test]
fn a_line_the_jitter_still_changes_with_the_clock_held_still_stays_a_finding() {
    still_found(
        gate_rates("4.00", "3.00", "2", "", false),
        Some("did not show themselves to be timing"),
    );
    // A line the still clock does not reach (it prints the same as the plain runs) is no timing.
    still_found(gate_rates("2374.49", "2374.49", "2", "", false), None);
}

#[test]
fn a_result_beside_a_rate_is_still_compared_once_the_rate_is_timing() {
    // Under jitter the line's result turns FAILED beside its rate; held still, it reads PASSED.
    still_found(gate_rates("4.00", "4.00", "2", "result $R ", true), None);
}

#[test]
fn runs_held_still_that_held_no_time_settle_nothing() {
    // The tool says it held no event time: the lines cannot be timing of CUDA events.
    still_found(
        gate_rates("4.00", "4.00", "0", "", false),
        Some("read no CUDA event time"),
    );
}
