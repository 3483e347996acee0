//! SARIF 2.1.0 for GitHub code scanning: one rule per detector (each with a help link to
//! `docs/gate-rules.md` in this repository), one result per new or accepted gate finding.
//! Every result carries its fingerprint in `partialFingerprints` (no line number in it, so code
//! scanning follows a finding when lines move); accepted findings carry a `suppressions` entry,
//! so code scanning shows them as suppressed, not open.

use serde_json::json;

use crate::gate::{Diff, GateFinding, GateRun};

/// Where racegate's source and docs live; rule help links point into it.
pub const REPOSITORY: &str = "https://github.com/racegate/racegate";

/// The rules, in `ruleIndex` order: (id, full description).
pub const RULES: &[(&str, &str)] = &[
    ("stress", "Randomized trials with schedule jitter gave results that differ from the oracle (a reference kernel, or the kernel's own output under another schedule)."),
    ("racecheck", "compute-sanitizer racecheck found a shared-memory data race."),
    ("synccheck", "compute-sanitizer synccheck found an invalid or divergent barrier."),
    ("memcheck", "compute-sanitizer memcheck found an invalid memory access or a CUDA API error."),
    ("initcheck", "compute-sanitizer initcheck found a read of uninitialized global memory."),
    ("globalcheck", "racegate globalcheck found a race on global memory (between blocks, warps or lanes) with no ordering between the accesses."),
    ("sharedcheck", "racegate sharedcheck found a read of shared memory no thread of the block wrote, or an atomic and a plain access to one shared word with no barrier between them."),
    ("fencecheck", "racegate fencecheck found a handoff between blocks whose data store is not fenced (or fenced at block scope only) before the atomic that publishes it."),
    ("streamcheck", "racegate streamcheck found two operations on one memory range (kernels, copies, memsets, host accesses), at least one writing, that no stream, event or synchronization orders."),
    ("watchdog", "A run did not finish before its deadline and was killed."),
    ("exit", "The program exited with an error or was killed by a signal."),
    ("output", "Identical runs of the program printed different output, after masking durations, timestamps, addresses and process ids."),
];

/// The help page of a rule: its section of `docs/gate-rules.md`.
pub fn help_uri(rule: &str) -> String {
    format!("{REPOSITORY}/blob/main/docs/gate-rules.md#{rule}")
}

/// A report path as a SARIF URI: relative paths as they are (relative to the repository root),
/// absolute ones as `file://` URIs.
fn uri(path: &str) -> String {
    if path.starts_with('/') {
        format!("file://{}", path.replace('%', "%25").replace(' ', "%20"))
    } else {
        path.replace('%', "%25").replace(' ', "%20")
    }
}

/// The SARIF log of a gate run compared with its baseline; `baseline` names the baseline file
/// in the suppressions' justification.
pub fn gate(run: &GateRun, d: &Diff, version: &str, baseline: &str) -> String {
    let rules: Vec<_> = RULES
        .iter()
        .map(|(id, text)| {
            json!({
                "id": id,
                "name": id,
                "shortDescription": { "text": format!("racegate {id} finding") },
                "fullDescription": { "text": text },
                "helpUri": help_uri(id),
                "help": {
                    "text": format!("{text} Reproduce locally with `racegate gate`; accept a known finding with `racegate gate --update-baseline`. More: {}", help_uri(id)),
                    "markdown": format!("{text}\n\nReproduce locally with `racegate gate`; accept a known finding with `racegate gate --update-baseline`. [More about this rule]({}).", help_uri(id))
                },
                "defaultConfiguration": { "level": "error" }
            })
        })
        .collect();
    let all = d
        .new
        .iter()
        .map(|f| (*f, false))
        .chain(d.accepted.iter().map(|f| (*f, true)));
    let results: Vec<_> = all
        .map(|(f, accepted)| result(f, accepted, baseline))
        .collect();
    // Each check that decided nothing (no device, a tool missing or failing, a deadline) as a
    // notification of the invocation: code scanning shows it, and an empty result list is not
    // read as a clean run. The invocation succeeded only when every check decided.
    let skipped: Vec<_> = run
        .inconclusive
        .iter()
        .map(|i| {
            json!({
                "level": "warning",
                "message": { "text": format!("{}::{} not judged: {}", i.subject, i.detector, i.reason) },
                "associatedRule": { "id": i.detector }
            })
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "racegate", "version": version, "informationUri": REPOSITORY, "rules": rules } },
            "invocations": [{
                "executionSuccessful": skipped.is_empty(),
                "toolExecutionNotifications": skipped
            }],
            "results": results
        }]
    });
    serde_json::to_string_pretty(&log).expect("serializable")
}

fn result(f: &GateFinding, accepted: bool, baseline: &str) -> serde_json::Value {
    // Code scanning requires a start line; a finding without one (a whole program, a hang)
    // points at the file's first line.
    let loc = json!({ "physicalLocation": {
        "artifactLocation": { "uri": uri(&f.file) },
        "region": { "startLine": f.line.unwrap_or(1) }
    }});
    let rule_index = RULES.iter().position(|(id, _)| *id == f.detector());
    let mut r = json!({
        "ruleId": f.detector(),
        "level": "error",
        "baselineState": if accepted { "unchanged" } else { "new" },
        "message": { "text": format!("{}: {}", f.subject(), f.message) },
        "locations": [loc],
        "partialFingerprints": {
            "racegate/v2": f.fingerprint,
            // What code scanning itself would compute from the line's text, from ours: the
            // normalized text and its occurrence, never the line number.
            "primaryLocationLineHash": format!("{}:{}", f.fingerprint, f.id.occurrence + 1)
        },
        "properties": {
            "subject": f.subject(),
            "kind": f.id.kind,
            "function": f.id.function,
            "source": f.id.source,
            "occurrence": f.id.occurrence
        }
    });
    if let Some(i) = rule_index {
        r["ruleIndex"] = json!(i);
    }
    // The other access(es) a finding names (`[Write -> Read kernels/x.cu:33]`, a stream race's
    // other call site): related locations, so code scanning shows both places.
    let related = related_places(&f.message, &f.file, f.line);
    if !related.is_empty() {
        r["relatedLocations"] = json!(related
            .iter()
            .enumerate()
            .map(|(i, (file, line))| json!({
                "id": i + 1,
                "physicalLocation": {
                    "artifactLocation": { "uri": uri(file) },
                    "region": { "startLine": line }
                },
                "message": { "text": "the other access" }
            }))
            .collect::<Vec<_>>());
    }
    if accepted {
        r["suppressions"] = json!([{
            "kind": "external",
            "status": "accepted",
            "justification": format!("accepted in {baseline}")
        }]);
    }
    if let Some(d) = &f.detection {
        let (rate, (lo, hi)) = d.rate();
        let p = &mut r["properties"];
        p["firstDetectedTrial"] = json!(d.trial);
        p["firstDetectedSeconds"] = json!(d.millis as f64 / 1e3);
        p["failures"] = json!(d.failures);
        p["trials"] = json!(d.trials);
        p["rate"] = json!(rate);
        p["rate95Low"] = json!(lo);
        p["rate95High"] = json!(hi);
    }
    r
}

/// The `file:line` places a message names (source files only), other than the finding's own
/// place, in order, each once.
fn related_places(message: &str, file: &str, line: Option<u32>) -> Vec<(String, u32)> {
    static PLACE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = PLACE.get_or_init(|| {
        regex::Regex::new(r"([A-Za-z0-9_./+-]+\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp)):([0-9]{1,9})\b")
            .expect("the pattern compiles")
    });
    let mut out: Vec<(String, u32)> = Vec::new();
    for c in re.captures_iter(message) {
        let Ok(l) = c[2].parse::<u32>() else { continue };
        let place = (c[1].to_string(), l);
        if (place.0 == file && Some(l) == line) || out.contains(&place) || l == 0 {
            continue;
        }
        out.push(place);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{diff, Baseline};

    #[test]
    fn the_other_access_is_a_related_location() {
        let m = "streamcheck: Stream Error at examples/streams/kernel_copy_nowait.cu:46 \
                 [May write -> Read examples/streams/kernel_copy_nowait.cu:45]";
        assert_eq!(
            related_places(m, "examples/streams/kernel_copy_nowait.cu", Some(46)),
            vec![("examples/streams/kernel_copy_nowait.cu".to_string(), 45)]
        );
        // The finding's own place, repeats, non-source names and line 0 are not related.
        let m = "at k.cu:3 [Write -> Read k.cu:3; Write -> Write k.cu:7; k.cu:7] a.txt:4 b.cu:0";
        assert_eq!(
            related_places(m, "k.cu", Some(3)),
            vec![("k.cu".to_string(), 7)]
        );
        assert!(related_places("no place here", "k.cu", None).is_empty());
    }
    use crate::report::fixtures;

    fn log(d: &Diff) -> serde_json::Value {
        serde_json::from_str(&gate(
            &GateRun::default(),
            d,
            "0.1.0",
            "racegate-baseline.json",
        ))
        .unwrap()
    }

    #[test]
    fn a_check_that_decided_nothing_is_a_notification_and_the_invocation_did_not_succeed() {
        let r = fixtures::gate_run();
        let d = diff(&r, &Baseline::default(), true);
        let clean: serde_json::Value =
            serde_json::from_str(&gate(&GateRun::default(), &d, "0.1.0", "b.json")).unwrap();
        assert_eq!(
            clean["runs"][0]["invocations"][0]["executionSuccessful"],
            true
        );
        let mut undecided = r.clone();
        undecided.inconclusive.push(crate::gate::Inconclusive {
            subject: "k".into(),
            detector: "racecheck".into(),
            reason: "no CUDA device: not run".into(),
        });
        let v: serde_json::Value =
            serde_json::from_str(&gate(&undecided, &d, "0.1.0", "b.json")).unwrap();
        let inv = &v["runs"][0]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false, "{v}");
        let n = &inv["toolExecutionNotifications"];
        assert!(
            n.as_array()
                .is_some_and(|n| n.iter().any(|n| n["message"]["text"]
                    == "k::racecheck not judged: no CUDA device: not run"
                    && n["level"] == "warning")),
            "{v}"
        );
    }

    #[test]
    fn sarif_has_the_required_fields() {
        let r = fixtures::gate_run();
        let v = log(&diff(&r, &Baseline::default(), true));
        assert_eq!(v["version"], "2.1.0");
        assert!(v["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
        let driver = &v["runs"][0]["tool"]["driver"];
        assert_eq!(driver["name"], "racegate");
        for rule in driver["rules"].as_array().unwrap() {
            for k in ["shortDescription", "fullDescription", "help"] {
                assert!(rule[k]["text"].is_string(), "rule lacks {k}");
            }
            let id = rule["id"].as_str().unwrap();
            assert_eq!(rule["helpUri"], help_uri(id));
        }
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        for res in results {
            assert!(res["message"]["text"].is_string());
            let loc = &res["locations"][0]["physicalLocation"];
            assert_eq!(loc["artifactLocation"]["uri"], "kernels/k.cu");
            assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
            assert_eq!(
                driver["rules"][usize::try_from(res["ruleIndex"].as_u64().unwrap()).unwrap()]["id"],
                res["ruleId"]
            );
        }
        assert_eq!(
            results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            12
        );
    }

    #[test]
    fn fingerprints_carry_no_line_and_accepted_findings_are_suppressed() {
        let r = fixtures::gate_run();
        let v = log(&diff(&r, &fixtures::baseline(), true));
        let results = v["runs"][0]["results"].as_array().unwrap();
        let new = &results[0];
        assert_eq!(new["baselineState"], "new");
        assert!(new["suppressions"].is_null());
        let accepted = &results[1];
        assert_eq!(accepted["baselineState"], "unchanged");
        assert_eq!(accepted["suppressions"][0]["kind"], "external");
        assert_eq!(
            accepted["suppressions"][0]["justification"],
            "accepted in racegate-baseline.json"
        );
        // The same finding 30 lines lower keeps every fingerprint.
        let mut moved = r.clone();
        moved.findings[0].line = Some(42);
        let v2 = log(&diff(&moved, &fixtures::baseline(), true));
        assert_eq!(
            v["runs"][0]["results"][1]["partialFingerprints"],
            v2["runs"][0]["results"][1]["partialFingerprints"]
        );
    }

    #[test]
    fn absolute_paths_become_file_uris() {
        let mut r = fixtures::gate_run();
        r.findings[0].file = "/usr/bin/my prog".into();
        let v = log(&diff(&r, &Baseline::default(), true));
        assert_eq!(
            v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
                ["uri"],
            "file:///usr/bin/my%20prog"
        );
    }

    #[test]
    fn a_stress_finding_carries_its_first_detection_and_rate() {
        let mut r = fixtures::gate_run();
        r.findings[0].detection = Some(crate::gate::Detection {
            trial: 3,
            millis: 410,
            failures: 12,
            trials: 100,
        });
        let d = diff(&r, &Baseline::default(), true);
        let v = log(&d);
        let p = &v["runs"][0]["results"][0]["properties"];
        assert_eq!(p["firstDetectedTrial"], 3);
        assert_eq!(p["firstDetectedSeconds"], 0.41);
        assert_eq!(p["rate"], 0.12);
        assert!(
            p["rate95Low"].as_f64().unwrap() < 0.12 && p["rate95High"].as_f64().unwrap() > 0.12
        );
        let text = crate::report::text::gate(&r, &d, std::path::Path::new("b.json"));
        assert!(
            text.contains("first detected at trial 3 after 0.41 s; rate 12/100 (95% CI"),
            "{text}"
        );
    }
}
