//! `gate -- PROGRAM` on programs whose output or timing depends on run-to-run noise or on the
//! schedule jitter (H200 run 23: NVIDIA samples printing bare timings, and a slow sample under
//! jitter, were reported as races and hangs). The programs are shell scripts: a run under jitter
//! is one with `CUDA_INJECTION64_PATH` set (racegate's jitter injection; a script ignores it),
//! so each script can behave differently under jitter, as a racy program would.

use crate::runner::racegate;

/// `racegate gate` on `sh -c script` in a fresh folder: (exit code, gate.json, stdout + stderr).
fn gate(script: &str, extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "gate",
        "--no-builtin-masks",
        // globalcheck's tool finds no CUDA in `sh`: inconclusive; the plain runs decide.
        "--tools",
        "globalcheck",
        "--runs",
        "3",
        "--json",
        "gate.json",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script]);
    let out = racegate(&args).at(dir.path()).program_device().run();
    let json = std::fs::read_to_string(dir.path().join("gate.json")).unwrap_or_default();
    (out.exit(), json, out.text())
}

/// The gate's jitter needs racegate's tool; where it cannot be built the runs are not jittered
/// and these tests have nothing to tell apart. CI builds it from the pinned wheels: there (`CI`
/// set) a missing tool fails the test instead of letting it pass untested.
fn jitter_available(text: &str) -> bool {
    let built = !text.contains("globalcheck's tool cannot be built");
    assert!(
        built || std::env::var_os("CI").is_none(),
        "CI must build racegate's tool (ci/setup): {text}"
    );
    built
}

#[test]
fn a_line_that_varies_without_jitter_is_noise_and_a_line_that_varies_only_under_it_is_a_race() {
    // A bare timing, as NVIDIA's simpleStreams prints it (`memcopy:\t16.93`): no mask knows it.
    let noisy = r#"echo "result: 42"; printf 'memcopy:\t%s\n' "0.$(date +%N)""#;
    let (code, json, text) = gate(noisy, &[]);
    if !jitter_available(&text) {
        return eprintln!("ignored: no jitter tool here: {text}");
    }
    assert!(
        !json.contains("output differs between identical runs"),
        "{text}"
    );
    // Learned from the runs, not recognised by shape: the number that varied is named as noise.
    assert!(json.contains("were treated as noise"), "{json}");
    assert!(json.contains("memcopy:"), "{json}");
    // Exit 3 in every case of this file: globalcheck cannot judge `sh` (inconclusive), which the
    // exit-code table puts before a finding's 1; what was found is read from the JSON.
    assert_eq!(code, 3, "inconclusive, not a finding: {text}");
    // The same timing line, and a result that changes only under jitter: a finding on line 1.
    // The jittered result differs in every run: nanoseconds after a `1` (no octal, no modulo
    // that three runs could share: `% 7` agreed in 1 of 49 tries and `$((0...))` was octal).
    let racy = r#"if [ -n "$CUDA_INJECTION64_PATH" ]; then echo "result: 1$(date +%N)"; else echo "result: 42"; fi; printf 'memcopy:\t%s\n' "0.$(date +%N)""#;
    let (code, json, text) = gate(racy, &[]);
    assert_eq!(code, 3, "{text}");
    assert!(
        json.contains("output differs between identical runs"),
        "{json}"
    );
    assert!(
        json.contains("on line(s) 1 (the same in every run without schedule jitter)"),
        "{json}"
    );
    // Without jitter every run is a plain run: the same measurements are the same noise.
    let (code, json, text) = gate(noisy, &["--no-jitter"]);
    assert_eq!(code, 3, "{text}");
    assert!(
        !json.contains("output differs between identical runs"),
        "{json}"
    );
    // A bare integer that varies without jitter (a pid here; free memory in CUB's device line)
    // is noise wherever it stands: no finding, its line not judged and named in a note (not
    // inconclusive), the timing beside it noise too.
    let pid = r#"echo "value $$"; printf 'memcopy:\t%s\n' "0.$(date +%N)""#;
    let (code, json, text) = gate(pid, &[]);
    assert_eq!(code, 3, "{text}");
    assert!(
        !json.contains("output differs between identical runs"),
        "{json}"
    );
    assert!(
        json.contains("line(s) 1 of the output hold a whole number that differs"),
        "{json}"
    );
    let doc: serde_json::Value = serde_json::from_str(&json).expect("gate.json");
    let output_undecided = doc["inconclusive"]
        .as_array()
        .expect("an inconclusive list")
        .iter()
        .any(|i| i["detector"] == "output");
    assert!(!output_undecided, "noise is not inconclusive: {json}");
    assert!(json.contains("were treated as noise"), "{json}");
    // Every run flips the word (a counter in the gate's folder): consecutive runs differ.
    let words = r#"n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; if [ $((n % 2)) = 0 ]; then echo "state even"; else echo "state odd"; fi; echo "Result = PASS""#;
    let (code, json, text) = gate(words, &[]);
    // Words that vary without jitter: the program's output varies by itself, a finding.
    assert_eq!(code, 3, "{text}");
    assert!(
        json.contains("output differs between identical runs"),
        "{json}"
    );
    assert!(json.contains("on line(s) 1"), "{json}");
    // A racy sum on the same line as a timing: only the timing's place may vary (a review's case).
    let beside = r#"if [ -n "$CUDA_INJECTION64_PATH" ]; then s=999.5; else s=123.5; fi; echo "sum = $s time 0.$(date +%N) ms""#;
    let (code, json, text) = gate(beside, &[]);
    assert_eq!(code, 3, "{text}");
    assert!(
        json.contains("output differs between identical runs"),
        "{json}"
    );
    // More lines under jitter (a racy program reporting mismatches), beside a bare timing.
    let extra = r#"if [ -n "$CUDA_INJECTION64_PATH" ]; then echo "mismatch at 7"; fi; echo "Result = PASS"; printf 'memcopy:\t%s\n' "0.$(date +%N)""#;
    let (code, json, text) = gate(extra, &[]);
    assert_eq!(code, 3, "{text}");
    assert!(
        json.contains("output differs between identical runs"),
        "{json}"
    );
}

#[test]
fn lines_printed_in_another_order_are_no_race_and_a_changed_line_among_them_is() {
    // H200 run 32: olcf-hello's blocks printed `Hello from block: 1` before block 0 under jitter,
    // and the reordering was reported as a race. The same lines in another order are no race.
    // Every other run prints the blocks in the other order (a counter in the gate's folder).
    let flip = r#"n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; "#;
    let hello = &format!(
        r#"{INJECTED}{flip}if [ $((n % 2)) = 1 ]; then echo "block 1"; echo "block 0"; else echo "block 0"; echo "block 1"; fi"#
    );
    let (code, json, text) = gate(hello, &[]);
    if !jitter_available(&text) {
        return eprintln!("ignored: no jitter tool here: {text}");
    }
    assert_eq!(
        code, 3,
        "inconclusive (globalcheck on sh), no finding: {text}"
    );
    assert!(
        !json.contains("output differs between identical runs"),
        "{json}"
    );
    assert!(json.contains("differ in order only"), "{json}");
    // Reordered under jitter and one value changed (a lost update among the lines): the finding.
    let racy = &format!(
        r#"{INJECTED}{flip}if [ -n "$CUDA_INJECTION64_PATH" ] && [ $((n % 2)) = 1 ]; then echo "block 1 sum 7"; echo "block 0 sum 8"; else echo "block 0 sum 8"; echo "block 1 sum 8"; fi"#
    );
    let (code, json, text) = gate(racy, &[]);
    assert_eq!(code, 3, "{text}");
    assert!(
        json.contains("output differs between identical runs"),
        "{json}"
    );
    assert!(!json.contains("differ in order only"), "{json}");
}

/// What racegate's injection writes first when it loads (`harness/globalcheck/tool.cpp`): the
/// scripts write it themselves under jitter, standing in for the injection a CUDA program loads.
const INJECTED: &str = r#"[ -n "$CUDA_INJECTION64_PATH" ] && echo '{"tool":"globalcheck","mode":2,"budget_bytes":1,"shared_budget_bytes":1,"patches":""}' >> "$RACEGATE_GC_DIR/report.jsonl"; "#;

#[test]
fn a_deadline_missed_only_under_jitter_is_its_slowdown_and_a_real_hang_stays_a_hang() {
    // Every jittered run misses the 1 s deadline; without jitter each takes 0.3 s, so 10x
    // slower is past the deadline: the jitter's slowdown.
    let slow = format!(
        r#"{INJECTED}if [ -n "$CUDA_INJECTION64_PATH" ]; then sleep 4; else sleep 0.3; fi; echo done"#
    );
    let (code, json, text) = gate(&slow, &["--timeout", "1"]);
    if !jitter_available(&text) {
        return eprintln!("ignored: no jitter tool here: {text}");
    }
    assert!(!json.contains("only under jitter: a race"), "{json}");
    assert!(
        json.contains("hang: no exit within 1 s in 3 of 3 runs with schedule jitter (runs 1, 2, 3) and none of 3 without"),
        "{json}"
    );
    assert!(json.contains("the jitter's slowdown, not a hang"), "{json}");
    assert_eq!(code, 3, "{text}");
    // The same hang from a program that finishes at once without jitter: 10x of nothing is not
    // a second; a schedule-dependent deadlock, the finding.
    let fast =
        format!(r#"{INJECTED}if [ -n "$CUDA_INJECTION64_PATH" ]; then sleep 4; fi; echo done"#);
    let (code, json, text) = gate(&fast, &["--timeout", "1"]);
    assert_eq!(code, 3, "{text}");
    assert!(json.contains("only under jitter"), "{json}");
    assert!(!json.contains("the jitter's slowdown"), "{json}");
    // A hang in one jittered run of three: the finding.
    let one = format!(
        r#"{INJECTED}if [ -n "$CUDA_INJECTION64_PATH" ] && [ $((RACEGATE_GC_SEED % 3)) = 0 ]; then sleep 4; else sleep 0.3; fi; echo done"#
    );
    let (code, json, text) = gate(&one, &["--timeout", "1"]);
    assert_eq!(code, 3, "{text}");
    assert!(!json.contains("the jitter's slowdown"), "{json}");
    // Runs the injection never jittered (no report) cannot blame the jitter.
    let unjittered =
        r#"if [ -n "$CUDA_INJECTION64_PATH" ]; then sleep 4; else sleep 0.3; fi; echo done"#;
    let (_, json, _) = gate(unjittered, &["--timeout", "1"]);
    assert!(!json.contains("the jitter's slowdown"), "{json}");
    // A program that hangs with or without jitter: the finding, as before.
    let (code, json, text) = gate("sleep 4; echo done", &["--timeout", "1"]);
    assert_eq!(code, 3, "{text}");
    assert!(
        json.contains("the first plain run did not exit within 1 s"),
        "{json}"
    );
    assert!(!json.contains("the jitter's slowdown"), "{json}");
}
