//! Sanitizer runs as gate findings: each normalized finding gets its identity (kind, function,
//! the normalized text of its line and its occurrence; never the line number), and a run that
//! missed its deadline waits for the plain runs' verdict: a hang only if the code also hangs
//! without the tool (or the tool itself saw a deadlock), inconclusive otherwise.

use super::finding::{GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use crate::sanitize::normalize::Finding;
use crate::sanitize::{Outcome, SanitizerRun};

/// The detector name of a sanitizer run.
pub fn detector(r: &SanitizerRun) -> String {
    crate::catalog::Detector::from(r.tool).name().to_string()
}

/// A gate finding from one normalized sanitizer finding of `subject`; `fallback_file` is used
/// when the tool gave no line.
pub fn finding(
    subject: &str,
    detector: &str,
    f: &Finding,
    fallback_file: &str,
    sources: &mut Sources,
) -> GateFinding {
    let (file, line) = match f.file_line() {
        Some((file, line)) => (file.to_string(), Some(line)),
        None => (fallback_file.to_string(), None),
    };
    let (source, occurrence) = line
        .and_then(|l| sources.locate(&file, l, &f.kernel))
        .unwrap_or_default();
    let id = Identity {
        subject: subject.into(),
        detector: detector.into(),
        kind: format!("{}: {}", f.kind, f.what),
        function: if f.kernel == "-" {
            String::new()
        } else {
            f.kernel.clone()
        },
        source,
        occurrence,
    };
    GateFinding::new(id, &file, line, format!("{detector}: {}", f.line()))
}

/// A sanitizer run past its deadline, judged once the plain runs are known.
#[derive(Clone, Debug)]
pub struct PendingHang {
    subject: String,
    detector: String,
    file: String,
    /// What the tool said about a deadlock, if anything.
    said: Option<String>,
    exit: String,
}

impl PendingHang {
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// A finding when the tool saw a deadlock or `plain_hung` (the code hangs without the
    /// tool too); otherwise inconclusive: the tool's slowdown, not the program's hang.
    pub fn resolve(self, plain_hung: Option<bool>, out: &mut GateRun) {
        let kind = if self.said.is_some() {
            "hang: the tool detected a deadlock"
        } else {
            "hang: killed at the deadline"
        };
        if self.said.is_some() || plain_hung == Some(true) {
            let message = format!(
                "{} hung ({}){}",
                self.detector,
                self.exit,
                self.said
                    .as_ref()
                    .map(|s| format!("; the tool said: {s}"))
                    .unwrap_or_default()
            );
            let id = Identity {
                subject: self.subject,
                detector: self.detector,
                kind: kind.into(),
                ..Default::default()
            };
            out.findings
                .push(GateFinding::new(id, &self.file, None, message));
        } else {
            let why = match plain_hung {
                Some(_) => "every plain run finished in time, so this is the tool's slowdown, not a hang; raise --sanitize-timeout",
                None => "no plain run to compare with (oracle `none`); raise --sanitize-timeout",
            };
            out.mark_inconclusive(
                &self.subject,
                &self.detector,
                format!("ran past its deadline ({}): {why}", self.exit),
            );
        }
    }
}

/// Adds the findings of one sanitizer run of `subject` to `out`; a hang is returned to be
/// resolved against the plain runs.
pub fn add(
    subject: &str,
    r: &SanitizerRun,
    fallback_file: &str,
    sources: &mut Sources,
    out: &mut GateRun,
) -> Option<PendingHang> {
    let det = detector(r);
    out.mark_checked(subject, &det, r.seconds);
    match &r.outcome {
        Outcome::Clean => None,
        Outcome::Inconclusive(why) => {
            out.mark_inconclusive(subject, &det, why.clone());
            None
        }
        Outcome::Hang { said, .. } => Some(PendingHang {
            subject: subject.into(),
            detector: det,
            file: fallback_file.into(),
            said: said.clone(),
            exit: r.exit.clone(),
        }),
        Outcome::Findings(fs) => {
            for f in fs {
                out.findings
                    .push(finding(subject, &det, f, fallback_file, sources));
            }
            None
        }
    }
}
