//! SARIF 2.1.0 for GitHub code scanning: one rule per detector, one result per new or accepted
//! gate finding. Accepted findings stay in the log as `baselineState: unchanged` notes, so code
//! scanning does not report them as fixed.

use std::collections::BTreeSet;

use serde_json::json;

use crate::gate::{Diff, GateFinding};

/// The SARIF log of a gate run compared with its baseline.
///
/// `uri_prefix` is prepended to every relative path (the manifest's folder relative to the
/// repository root, e.g. `examples/gate/`), because code scanning resolves URIs from the
/// repository root.
pub fn gate(d: &Diff, version: &str, uri_prefix: &str) -> String {
    let all: Vec<(&GateFinding, &str)> = d
        .new
        .iter()
        .map(|f| (*f, "new"))
        .chain(d.accepted.iter().map(|f| (*f, "unchanged")))
        .collect();
    let rules: BTreeSet<&str> = all.iter().map(|(f, _)| f.detector.as_str()).collect();
    let rules: Vec<_> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r,
                "name": r,
                "shortDescription": { "text": format!("racegate {r} finding") },
                "fullDescription": { "text": rule_text(r) },
                "help": { "text": format!("Found by racegate's {r} detector. Reproduce locally with `racegate gate`; accept a known finding with `racegate gate --update-baseline`.") },
                "defaultConfiguration": { "level": "error" }
            })
        })
        .collect();
    let results: Vec<_> = all
        .iter()
        .map(|(f, state)| {
            let uri = if f.file.starts_with('/') { f.file.clone() } else { format!("{uri_prefix}{}", f.file) };
            let mut loc = json!({ "physicalLocation": { "artifactLocation": { "uri": uri } } });
            if let Some(l) = f.line {
                loc["physicalLocation"]["region"] = json!({ "startLine": l });
            }
            let mut result = json!({
                "ruleId": f.detector,
                "level": if *state == "new" { "error" } else { "note" },
                "baselineState": state,
                "message": { "text": format!("{}: {}", f.subject, f.message) },
                "locations": [loc],
                // The baseline's identity of a finding, so code scanning tracks it across runs
                // even when its line moves.
                "partialFingerprints": { "racegate/v1": format!("{}|{}|{}", f.subject, f.detector, f.key) }
            });
            if let Some(d) = &f.detection {
                let (rate, (lo, hi)) = d.rate();
                result["properties"] = json!({
                    "firstDetectedTrial": d.trial,
                    "firstDetectedSeconds": d.millis as f64 / 1e3,
                    "failures": d.failures,
                    "trials": d.trials,
                    "rate": rate,
                    "rate95Low": lo,
                    "rate95High": hi
                });
            }
            result
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "racegate", "version": version, "informationUri": "https://github.com/racegate/racegate", "rules": rules } },
            "results": results
        }]
    });
    serde_json::to_string_pretty(&log).expect("serializable")
}

fn rule_text(detector: &str) -> &'static str {
    match detector {
        "stress" => "Randomized trials with schedule jitter gave results that differ from the oracle (a reference kernel, or the kernel's own output under another schedule).",
        "racecheck" => "compute-sanitizer racecheck found a shared-memory data race.",
        "synccheck" => "compute-sanitizer synccheck found an invalid or divergent barrier.",
        "memcheck" => "compute-sanitizer memcheck found an invalid memory access or a CUDA API error.",
        "initcheck" => "compute-sanitizer initcheck found a read of uninitialized global memory.",
        "watchdog" => "A run did not finish before its deadline and was killed.",
        "exit" => "The program exited with an error or was killed by a signal.",
        "output" => "Identical runs of the program printed different output.",
        _ => "A racegate finding.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{diff, Baseline};
    use crate::report::fixtures;

    #[test]
    fn sarif_has_the_required_fields() {
        let r = fixtures::gate_run();
        let d = diff(&r, &Baseline::default());
        let v: serde_json::Value = serde_json::from_str(&gate(&d, "0.1.0", "")).unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert!(v["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
        let driver = &v["runs"][0]["tool"]["driver"];
        assert_eq!(driver["name"], "racegate");
        for rule in driver["rules"].as_array().unwrap() {
            for k in ["id", "shortDescription", "fullDescription", "help"] {
                assert!(!rule[k].is_null(), "rule lacks {k}");
            }
            for k in ["shortDescription", "fullDescription", "help"] {
                assert!(rule[k]["text"].is_string());
            }
        }
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        for res in results {
            assert!(res["message"]["text"].is_string());
            assert_eq!(
                res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                "kernels/k.cu"
            );
        }
        assert_eq!(
            results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            12
        );
        assert!(results[1]["locations"][0]["physicalLocation"]["region"].is_null());
    }

    #[test]
    fn accepted_findings_are_unchanged_notes_under_the_prefix() {
        let r = fixtures::gate_run();
        let d = diff(&r, &fixtures::baseline());
        let v: serde_json::Value =
            serde_json::from_str(&gate(&d, "0.1.0", "examples/gate/")).unwrap();
        let accepted = &v["runs"][0]["results"][1];
        assert_eq!(accepted["baselineState"], "unchanged");
        assert_eq!(accepted["level"], "note");
        assert_eq!(
            accepted["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "examples/gate/kernels/k.cu"
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
        let d = diff(&r, &Baseline::default());
        let v: serde_json::Value = serde_json::from_str(&gate(&d, "0.1.0", "")).unwrap();
        let with: Vec<&serde_json::Value> = v["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["properties"].is_null())
            .collect();
        assert_eq!(with.len(), 1);
        let p = &with[0]["properties"];
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
