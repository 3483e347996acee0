//! Sanitizer runs as gate findings: each normalized finding gets its identity (kind, function,
//! the normalized text of its line and its occurrence; never the line number), and a run that
//! missed its deadline waits for the plain runs' verdict: a hang only if the code also hangs
//! without the tool (or the tool itself saw a deadlock), inconclusive otherwise.

use super::finding::{GateFinding, GateRun, LibraryReport};
use super::fingerprint::{access_identity, Identity, Sources};
use crate::judge::sanitize::known_false_positives;
use crate::judge::sanitize::normalize::Finding;
use crate::judge::sanitize::{Outcome, SanitizerRun, Tool};

/// How `tools` are run: each compute-sanitizer tool in a run of its own; racegate's own tools
/// that patch the kernels (globalcheck, sharedcheck, fencecheck), all those chosen, in one
/// injected run, in the place of the first of them; streamcheck, which patches nothing and
/// records the program's CUDA calls, in a run of its own, so that it meets the program at its
/// own speed, not slowed by the others' instrumentation (beside them it missed its deadline on
/// programs it judges alone in seconds). Each run still reports each tool as its own detector.
pub fn run_groups(tools: &[Tool]) -> Vec<Vec<Tool>> {
    let patching: Vec<Tool> = crate::judge::sanitize::runner::own_tools(tools)
        .into_iter()
        .filter(|t| *t != Tool::Streamcheck)
        .collect();
    let mut out: Vec<Vec<Tool>> = Vec::new();
    for &t in tools {
        if !t.is_own() || t == Tool::Streamcheck {
            out.push(vec![t]);
        } else if Some(&t) == patching.first() {
            out.push(patching.clone());
        }
    }
    out
}

/// Runs one group of [`run_groups`] on any target command: one [`SanitizerRun`] per tool of the
/// group, from one run.
pub fn run_group_target(
    label: &str,
    target: &[std::ffi::OsString],
    cfg: &crate::judge::sanitize::SanitizeConfig,
    root: &std::path::Path,
    group: &[Tool],
) -> crate::Result<Vec<SanitizerRun>> {
    match group {
        [one] => {
            let mut cfg = cfg.clone();
            cfg.tool = *one;
            Ok(vec![crate::judge::sanitize::runner::run_target(
                label, target, &cfg, root,
            )?])
        }
        _ => crate::judge::sanitize::injected::run::run_tools(label, target, cfg, root, group),
    }
}

/// The detector name of a sanitizer run.
pub fn detector(r: &SanitizerRun) -> String {
    crate::source::catalog::Detector::from(r.tool)
        .name()
        .to_string()
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
    // Without a line (or its text), the tool's own identity of the access: its pc, else its
    // directions. An empty source made every line-less race of a function one fingerprint.
    let (source, occurrence) = line
        .and_then(|l| sources.locate(&file, l, &f.kernel))
        .unwrap_or_else(|| (access_identity(f.pc(), &f.accesses), 0));
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

    /// The detector whose run was killed.
    pub fn detector(&self) -> &str {
        &self.detector
    }

    /// (subject, detector) of each hang, for progress ([`GateRun::events_with_hangs`]).
    pub fn keys(hangs: &[PendingHang]) -> Vec<(&str, &str)> {
        hangs.iter().map(|h| (h.subject(), h.detector())).collect()
    }

    /// A finding when `plain_hung` (the code hangs without the tool too), or when the tool saw
    /// a deadlock and there are no plain runs to ask; otherwise inconclusive: the tool's
    /// slowdown, not the program's hang. A deadlock the tool reports while every plain run
    /// finished is not trusted: on a loaded H200 (run 23) racecheck reported "Deadlock detected
    /// in Barrier" in NVIDIA's correct matrixMul sample after 120 s of its own slowness.
    pub fn resolve(self, plain_hung: Option<bool>, out: &mut GateRun) {
        let kind = if self.said.is_some() {
            "hang: the tool detected a deadlock"
        } else {
            "hang: killed at the deadline"
        };
        if plain_hung == Some(true) || (self.said.is_some() && plain_hung.is_none()) {
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
            let said = self
                .said
                .as_ref()
                .map(|s| {
                    format!(" (the tool said: {s}; not trusted while the program itself finishes)")
                })
                .unwrap_or_default();
            out.mark_inconclusive(
                &self.subject,
                &self.detector,
                format!("ran past its deadline ({}): {why}{said}", self.exit),
            );
        }
    }
}

/// compute-sanitizer's warning that its error buffer overflowed (initcheck under a flood of
/// reports, run 34): "Warning: Error buffer overflow has been detected. Some records have been
/// dropped".
const DROPPED: &str = "Some records have been dropped";

/// Adds the findings of one sanitizer run of `subject` to `out`, those the built-in list knows
/// as false positives inside a library's own code to `out.library_reports`; a hang is returned
/// to be resolved against the plain runs.
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
                // The tool's own buffer overflowed: what it dropped is not judged, and the
                // warning is no finding of the program.
                if f.what.contains(DROPPED) {
                    out.mark_inconclusive(
                        subject,
                        &det,
                        format!(
                            "{det} dropped records (\"{}\"): what it dropped is not judged",
                            f.what
                        ),
                    );
                    continue;
                }
                let g = finding(subject, &det, f, fallback_file, sources);
                // A known false positive inside a library's own code is set aside, to be noted
                // (or kept) once the run is whole.
                match known_false_positives::known(r.tool, f) {
                    Some(known) => out
                        .library_reports
                        .push(LibraryReport { finding: g, known }),
                    None => out.findings.push(g),
                }
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

    /// A deadlock the tool reports after its own deadline is a finding only when the program
    /// hangs without the tool too (or there is nothing to ask); while every plain run finishes
    /// it is the tool's slowdown (run 23: racecheck's "Deadlock detected" on NVIDIA's correct
    /// matrixMul, on a loaded H200), inconclusive, with what the tool said kept.
    #[test]
    fn a_deadlock_the_tool_reports_counts_only_when_the_program_hangs_without_it() {
        let said = "Deadlock detected in Barrier called by threads starting at (0,31,0) in block (16,8,0) at MatrixMulCUDA+0x910 in matrixMul.cu:119";
        let hang = |said: Option<&str>| PendingHang {
            subject: "matrixMul".into(),
            detector: "racecheck".into(),
            file: "matrixMul".into(),
            said: said.map(str::to_string),
            exit: "killed after 120 s".into(),
        };
        for (said, plain, finding) in [
            (Some(said), Some(false), false),
            (Some(said), Some(true), true),
            (Some(said), None, true),
            (None, Some(true), true),
            (None, Some(false), false),
            (None, None, false),
        ] {
            let mut run = GateRun::default();
            hang(said).resolve(plain, &mut run);
            assert_eq!(
                run.findings.len(),
                usize::from(finding),
                "{said:?} {plain:?}"
            );
            assert_eq!(
                run.inconclusive.len(),
                usize::from(!finding),
                "{said:?} {plain:?}"
            );
            if let (Some(s), Some(i)) = (said, run.inconclusive.first()) {
                assert!(
                    i.reason.contains(s) && i.reason.contains("not trusted"),
                    "{}",
                    i.reason
                );
            }
        }
    }

    /// A racecheck analysis record of `func` built without `-lineinfo`: a source access at
    /// `pc` (no path, no line), one destination.
    fn line_less_record(func: &str, pc: &str, dir: &str) -> String {
        format!(
            "<record><kind>Analysis</kind><level>Error</level><what><text>Race condition</text>\
             <source><direction>{dir}</direction><where><func>{func}</func><pc>{pc}</pc></where>\
             </source><destination><direction>Read</direction><where><func>{func}</func>\
             <pc>0x8</pc></where><count>3</count></destination></what></record>"
        )
    }

    /// Line-less races of one kernel at different pcs are different findings with different
    /// fingerprints (before: one merged finding, one empty-source fingerprint); the same pc
    /// twice is one. Over 1 to 24 pcs, both directions, and the H200 racecheck fixtures with
    /// every path and line taken out.
    #[test]
    fn line_less_races_at_different_pcs_have_different_fingerprints() {
        let root = Path::new("/nonexistent-root");
        for n in 1..=24u32 {
            for dir in ["Write", "Read"] {
                let mut xml_text = String::from("<ComputeSanitizerOutput>");
                for i in 0..n {
                    xml_text.push_str(&line_less_record(
                        "k",
                        &format!("0x{:x}", 0x100 + i * 0x10),
                        dir,
                    ));
                }
                // The first pc again: the same race, reported twice.
                xml_text.push_str(&line_less_record("k", "0x100", dir));
                xml_text.push_str("</ComputeSanitizerOutput>");
                let records = xml::parse(&xml_text).unwrap();
                let found = normalize::findings(&records, root);
                assert_eq!(found.len(), n as usize, "{n} pcs ({dir}): {found:?}");
                let mut sources = Sources::new(root);
                let fps: BTreeSet<String> = found
                    .iter()
                    .map(|f| {
                        assert_eq!(f.file_line(), None, "{}", f.line());
                        let g = finding("case", "racecheck", f, "x.cu", &mut sources);
                        assert!(g.id.source.contains("pc 0x"), "{:?}", g.id);
                        g.fingerprint
                    })
                    .collect();
                assert_eq!(fps.len(), n as usize, "{n} pcs ({dir})");
            }
        }
        let strip = regex::Regex::new(r"<(path|line)>[^<]*</(path|line)>").unwrap();
        let pc = regex::Regex::new(
            r"<source>\s*<direction>[^<]*</direction>\s*<where>(?s:.)*?<pc>([^<]*)</pc>",
        )
        .unwrap();
        let mut checked = 0;
        let dir = repo().join("harness/tests/fixtures/h200");
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with("racecheck.xml") {
                continue;
            }
            let text = strip
                .replace_all(&std::fs::read_to_string(&p).unwrap(), "")
                .into_owned();
            let pcs: BTreeSet<String> = pc.captures_iter(&text).map(|c| c[1].to_string()).collect();
            if pcs.is_empty() {
                continue;
            }
            let records = xml::parse(&text).unwrap();
            let mut sources = Sources::new(root);
            let fps: BTreeSet<String> = normalize::findings(&records, root)
                .iter()
                .filter(|f| f.kind == "Analysis")
                .map(|f| finding("case", "racecheck", f, "x.cu", &mut sources).fingerprint)
                .collect();
            assert_eq!(
                fps.len(),
                pcs.len(),
                "{name}: one fingerprint per source pc"
            );
            checked += 1;
        }
        assert!(checked > 0, "no racecheck fixture has a pc");
    }

    #[test]
    fn racegates_own_tools_share_one_run_and_the_others_run_alone() {
        use Tool::*;
        assert_eq!(
            run_groups(&[Racecheck, Sharedcheck, Memcheck, Globalcheck]),
            [
                vec![Racecheck],
                vec![Sharedcheck, Globalcheck],
                vec![Memcheck]
            ]
        );
        assert_eq!(
            run_groups(&[Globalcheck, Fencecheck, Synccheck, Sharedcheck]),
            [vec![Globalcheck, Fencecheck, Sharedcheck], vec![Synccheck]]
        );
        assert_eq!(
            run_groups(&[Globalcheck, Initcheck]),
            [vec![Globalcheck], vec![Initcheck]]
        );
        assert_eq!(run_groups(&[Sharedcheck]), [vec![Sharedcheck]]);
        // streamcheck alone, wherever it stands.
        assert_eq!(
            run_groups(&[Streamcheck, Globalcheck, Sharedcheck]),
            [vec![Streamcheck], vec![Globalcheck, Sharedcheck]]
        );
        assert_eq!(run_groups(&Tool::ALL).len(), Tool::ALL.len() - 2);
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
