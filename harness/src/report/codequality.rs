//! GitLab Code Quality (the report of `artifacts:reports:codequality`): a JSON array with one
//! issue per new gate finding, shown in the merge request's widget and diff. Accepted findings
//! are left out: GitLab has no suppressed state, and the report is for what the merge request
//! brings. The fingerprint is the gate's own (no line number), so GitLab matches an issue
//! across commits when lines move.

use serde_json::json;

use crate::gate::Diff;

/// The Code Quality report of a gate run compared with its baseline.
pub fn gate(d: &Diff) -> String {
    let issues: Vec<_> = d
        .new
        .iter()
        .map(|f| {
            json!({
                "description": format!("{} [{}]: {}", f.id.subject, f.id.detector, f.message),
                "check_name": format!("racegate/{}", f.id.detector),
                "fingerprint": f.fingerprint,
                // A race or a wrong result is a defect that ships: GitLab's "critical".
                "severity": "critical",
                "location": {
                    "path": f.file,
                    "lines": { "begin": f.line.unwrap_or(1) }
                }
            })
        })
        .collect();
    serde_json::to_string_pretty(&issues).expect("issues serialize")
}
