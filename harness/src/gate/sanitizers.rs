//! Sanitizer runs as gate findings: each normalized finding gets its identity (kind, function,
//! the normalized text of its line and its occurrence; never the line number), and a run that
//! missed its deadline waits for the plain runs' verdict: a hang only if the code also hangs
//! without the tool (or the tool itself saw a deadlock), inconclusive otherwise.

use super::finding::{GateFinding, GateRun};
use super::fingerprint::{Identity, Sources};
use crate::judge::sanitize::normalize::Finding;
use crate::judge::sanitize::{Outcome, SanitizerRun};

/// The detector name of a sanitizer run.
pub fn detector(r: &SanitizerRun) -> String {
    crate::source::catalog::Detector::from(r.tool).name().to_string()
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::judge::sanitize::{normalize, xml};

    fn repo() -> PathBuf {
        crate::source::paths::package_dir()
            .parent()
            .unwrap()
            .to_path_buf()
    }

    /// The fingerprints of every finding with a line in the H200 fixture `xml_text`, with
    /// sources read under `root`; and the files they are in.
    fn fingerprints(xml_text: &str, root: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
        let records = xml::parse(xml_text).unwrap();
        let mut sources = Sources::new(root);
        let mut fps = BTreeSet::new();
        let mut files = BTreeSet::new();
        for f in normalize::findings(&records, root) {
            if let Some((file, _)) = f.file_line() {
                files.insert(file.to_string());
                let g = finding("case", "racecheck", &f, "x.cu", &mut sources);
                assert!(!g.id.source.is_empty(), "no source text for {}", f.line());
                fps.insert(g.fingerprint);
            }
        }
        (fps, files)
    }

    #[test]
    fn fingerprints_of_the_h200_fixtures_survive_lines_inserted_above() {
        let dir = repo().join("harness/tests/fixtures/h200");
        let line = regex::Regex::new(r"<line>(\d+)</line>").unwrap();
        let mut checked = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "xml") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let (before, files) = fingerprints(&text, &repo());
            if before.is_empty() {
                continue;
            }
            // The same sources with three lines inserted at the top, and the tool's lines
            // shifted by three, as a rerun after the edit would report them.
            let moved = tempfile::tempdir().unwrap();
            for f in &files {
                let src = std::fs::read_to_string(repo().join(f)).unwrap();
                let to = moved.path().join(f);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::write(&to, format!("// a new comment\n\n#include <cstdio>\n{src}"))
                    .unwrap();
            }
            let shifted = line.replace_all(&text, |c: &regex::Captures| {
                format!("<line>{}</line>", c[1].parse::<u32>().unwrap() + 3)
            });
            let (after, _) = fingerprints(&shifted, moved.path());
            assert_eq!(before, after, "{}", p.display());
            // Not shifting the lines points at other text: the fingerprints change.
            let (stale, _) = fingerprints(&text, moved.path());
            assert_ne!(before, stale, "{}", p.display());
            checked += 1;
        }
        assert!(
            checked >= 10,
            "only {checked} fixtures had findings with lines"
        );
    }
}
