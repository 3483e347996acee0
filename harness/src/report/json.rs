//! JSON documents that are more than one engine result serialized: the gate's, which joins a
//! run, its comparison with the baseline and the verdict. Other commands' JSON is serde's
//! rendering of their result.

use serde_json::json;

use crate::gate::{Diff, GateFinding, GateRun};

/// The verdict word of an exit code, as the gate's JSON gives it.
pub fn verdict(code: u8) -> &'static str {
    match code {
        0 => "passed",
        1 => "new_findings",
        2 => "bad_input",
        3 => "inconclusive",
        _ => "no_device",
    }
}

/// `racegate gate --json FILE`: the verdict and exit code, every finding with its fingerprint
/// and baseline state (`new` or `accepted`), the fixed and stale baseline entries, the runs
/// that decided nothing, notes, and every (subject, detector) that ran with its time.
pub fn gate(run: &GateRun, d: &Diff, baseline: &str, code: u8) -> String {
    let finding = |f: &GateFinding, state: &str| {
        let mut v = serde_json::to_value(f).expect("serializable");
        v["baseline_state"] = json!(state);
        v
    };
    let findings: Vec<_> = d
        .new
        .iter()
        .map(|f| finding(f, "new"))
        .chain(d.accepted.iter().map(|f| finding(f, "accepted")))
        .collect();
    let doc = json!({
        "verdict": verdict(code),
        "exit_code": code,
        "baseline": baseline,
        "counts": {
            "new": d.new.len(),
            "accepted": d.accepted.len(),
            "fixed": d.fixed.len(),
            "stale": d.stale.len(),
            "inconclusive": run.inconclusive.len()
        },
        "findings": findings,
        "fixed": d.fixed,
        "stale": d.stale,
        "relabelled": d
            .relabelled
            .iter()
            .map(|r| json!({"entry": r.entry, "finding": r.finding.id}))
            .collect::<Vec<_>>(),
        "inconclusive": run.inconclusive,
        "notes": run.notes,
        "checked": run.checked,
        "subjects": run.subjects,
        "seconds": run.seconds
    });
    serde_json::to_string_pretty(&doc).expect("serializable") + "\n"
}

/// The JSON of a command that could not run its subject (no CUDA device): the verdict and exit
/// code, what it was asked to run, why not, and the host-side steps that did run
/// (`done`: e.g. "compiled", "signatures checked").
pub fn not_run(command: &str, subject: &str, why: &str, done: &[&str], code: u8) -> String {
    not_run_with(command, subject, why, done, code, serde_json::Map::new())
}

/// [`not_run`] with more keys (`racegate check`'s `perf`: its expectations, each skipped).
pub fn not_run_with(
    command: &str,
    subject: &str,
    why: &str,
    done: &[&str],
    code: u8,
    more: serde_json::Map<String, serde_json::Value>,
) -> String {
    let mut doc = json!({
        "verdict": verdict(code),
        "exit_code": code,
        "command": command,
        "subject": subject,
        "reason": why,
        "host_checks": done,
    });
    if let Some(d) = doc.as_object_mut() {
        d.extend(more);
    }
    serde_json::to_string_pretty(&doc).expect("serializable") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures;

    #[test]
    fn every_finding_has_its_fingerprint_and_state() {
        let run = fixtures::gate_run();
        let d = crate::gate::diff(&run, &fixtures::baseline(), true);
        let v: serde_json::Value =
            serde_json::from_str(&gate(&run, &d, "racegate-baseline.json", 1)).unwrap();
        assert_eq!(v["verdict"], "new_findings");
        let f = v["findings"].as_array().unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0]["baseline_state"], "new");
        assert_eq!(f[0]["subject"], "b");
        assert_eq!(f[1]["baseline_state"], "accepted");
        assert_eq!(f[1]["fingerprint"], run.findings[0].fingerprint.as_str());
        assert_eq!(f[1]["line"], 12);
        assert_eq!(v["stale"][0]["subject"], "gone");
        assert_eq!(v["fixed"][0]["source"], "t[i]=0;");
        assert_eq!(v["inconclusive"][0]["reason"], "no sanitizer");
        assert_eq!(v["checked"][0]["seconds"], 1.5);
    }
}
