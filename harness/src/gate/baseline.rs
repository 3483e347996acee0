//! The baseline: accepted findings, keyed by fingerprint (no line numbers). Loading refuses an
//! old-format file with a message saying what to do; saving writes a temporary file beside it
//! and renames it over, so a killed update never leaves a truncated baseline; updating keeps
//! what this run could not judge (inconclusive or not run) and drops only what it decided.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::finding::{GateFinding, GateRun};
use super::fingerprint::Identity;
use crate::errors::{Error, Result};
use crate::source::files;

/// The default baseline of manifest mode, beside `racegate.toml`.
pub const BASELINE: &str = "racegate-baseline.json";
/// The default baseline of an ad-hoc `gate -- PROGRAM`, in the current folder.
pub const PROGRAM_BASELINE: &str = "racegate-program-baseline.json";
/// The format this racegate writes and reads.
pub const VERSION: u32 = 2;

/// An accepted finding: its identity, its fingerprint (what is matched), and where it was when
/// accepted (for people; never matched).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Accepted {
    /// Who found what where, without the line.
    #[serde(flatten)]
    pub id: Identity,
    /// Where it was found when it was accepted (for people; never matched).
    #[serde(default)]
    pub file: String,
    /// [`Identity::fingerprint`] of `id`: what findings are matched by.
    pub fingerprint: String,
}

impl Accepted {
    /// The entry that accepts `f`.
    pub fn of(f: &GateFinding) -> Accepted {
        Accepted {
            id: f.id.clone(),
            file: f.file.clone(),
            fingerprint: f.fingerprint.clone(),
        }
    }
}

/// The baseline file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub version: u32,
    pub accepted: Vec<Accepted>,
}

impl Default for Baseline {
    fn default() -> Self {
        Baseline {
            version: VERSION,
            accepted: Vec::new(),
        }
    }
}

impl Baseline {
    /// Reads a baseline; a missing file is an empty baseline. A file of racegate before
    /// fingerprints (entries with a `key`, no `version`) is refused with what to do.
    pub fn load(path: &Path) -> Result<Baseline> {
        // A file the user names: a regular file only (a FIFO would block the gate), bounded.
        let text = match files::read_text_if_exists(path, "the baseline", files::BASELINE_LIMIT)? {
            None => return Ok(Baseline::default()),
            Some(t) => t,
        };
        let bad = |why: String| {
            Error::Usage(format!(
                "{}: not a racegate baseline: {why}",
                path.display()
            ))
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        match value.get("version").and_then(|v| v.as_u64()) {
            None if value.get("accepted").is_some() => {
                let n = value["accepted"].as_array().map_or(0, |a| a.len());
                Err(Error::Usage(format!(
                    "{}: a baseline of an older racegate ({n} entries keyed by line numbers, format 1); \
                     this racegate matches findings by fingerprint (format {VERSION}) and cannot read it. \
                     Regenerate it with `racegate gate --update-baseline` on a machine where the gate runs \
                     (GPU and compute-sanitizer), review the diff, and commit it",
                    path.display()
                )))
            }
            Some(v) if v == u64::from(VERSION) => {
                serde_json::from_value(value).map_err(|e| bad(e.to_string()))
            }
            Some(v) => Err(bad(format!(
                "format {v}, this racegate reads format {VERSION}"
            ))),
            None => Err(bad("no `version` and no `accepted` list".into())),
        }
    }

    /// For `--update-baseline`: the current baseline; in place of an older-format file, an
    /// empty one when this run decided every (subject, detector) the old file names (the second
    /// value says what was replaced). Refused otherwise: those entries cannot be carried over.
    pub fn load_for_update(path: &Path, run: &GateRun) -> Result<(Baseline, Option<String>)> {
        let err = match Baseline::load(path) {
            Ok(b) => return Ok((b, None)),
            Err(e) => e,
        };
        let old: Option<Vec<(String, String)>> =
            files::read_text(path, "the baseline", files::BASELINE_LIMIT)
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .filter(|v| v.get("version").is_none())
                .and_then(|v| {
                    v.get("accepted")?
                        .as_array()?
                        .iter()
                        .map(|e| {
                            Some((
                                e["subject"].as_str()?.to_string(),
                                e["detector"].as_str()?.to_string(),
                            ))
                        })
                        .collect()
                });
        let Some(old) = old else { return Err(err) };
        let undecided: BTreeSet<String> = old
            .iter()
            .filter(|(s, d)| !run.decided(s, d) && run.subjects.contains(s))
            .map(|(s, d)| format!("{s} [{d}]"))
            .collect();
        if !undecided.is_empty() {
            return Err(Error::Usage(format!(
                "{}: a baseline of an older racegate (format 1) with entries this run could not judge ({}); \
                 its entries cannot be carried over, so it is left as it is. Update it where every detector runs",
                path.display(),
                undecided.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        Ok((
            Baseline::default(),
            Some(format!(
                "replaced a baseline of an older racegate ({} entries keyed by line numbers); every one was judged again in this run",
                old.len()
            )),
        ))
    }

    /// The baseline after accepting everything `run` found: entries of subjects and detectors
    /// this run did not decide (inconclusive, or not run) are kept; stale entries (subjects
    /// that are no longer in the manifest, when `stale` says so) are dropped.
    #[must_use]
    pub fn updated(&self, run: &GateRun, drop_stale: bool) -> Baseline {
        let mut set: BTreeSet<Accepted> = self
            .accepted
            .iter()
            .filter(|a| !run.decided(&a.id.subject, &a.id.detector))
            .filter(|a| !(drop_stale && is_stale(run, a)))
            .cloned()
            .collect();
        set.extend(run.findings.iter().map(Accepted::of));
        Baseline {
            version: VERSION,
            accepted: set.into_iter().collect(),
        }
    }

    /// The JSON text of the baseline, as it is written.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("serializable") + "\n"
    }

    /// Writes the baseline: a temporary file in the same folder, synced, given the old file's
    /// mode, then renamed over `path`, so the file is always either the old baseline or the new
    /// one, never a part.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::build::compile::write_atomically(path, false, self.to_text().as_bytes())
            .map_err(|e| Error::io("writing", path, e))
    }

    /// `--update-baseline`, whole: read, accept what `run` found, and write (only when it
    /// changed or there was no file), under a lock, so concurrent updates of one baseline each
    /// keep their entries (they were lost: 8 runs each adding one left 4 to 7).
    // `cli/gate.rs` is still to call it (in place of load_for_update, updated and save).
    pub fn update(path: &Path, run: &GateRun, drop_stale: bool) -> Result<Update> {
        crate::build::compile::with_lock(path, || {
            let (before, replaced) = Baseline::load_for_update(path, run)?;
            let after = before.updated(run, drop_stale);
            let written = after != before || !path.exists();
            if written {
                after.save(path)?;
            }
            Ok(Update {
                before,
                after,
                replaced,
                written,
            })
        })
    }
}

/// What [`Baseline::update`] did.
#[derive(Debug)]
pub struct Update {
    /// The baseline before.
    pub before: Baseline,
    /// The baseline after.
    pub after: Baseline,
    /// What an older-format file that was replaced held ([`Baseline::load_for_update`]).
    pub replaced: Option<String>,
    /// Whether the file was written (it is not when nothing changed).
    pub written: bool,
}

/// In manifest mode, an entry whose subject the manifest no longer has.
fn is_stale(run: &GateRun, a: &Accepted) -> bool {
    !run.subjects.contains(&a.id.subject)
}

/// A run compared with a baseline.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Diff<'a> {
    /// Findings the baseline does not accept: these fail the gate.
    pub new: Vec<&'a GateFinding>,
    /// Findings the baseline accepts: listed, never a failure.
    pub accepted: Vec<&'a GateFinding>,
    /// Accepted findings of a (subject, detector) that ran and decided, no longer found.
    pub fixed: Vec<Accepted>,
    /// Entries for subjects the manifest no longer has (manifest mode only): reported, never
    /// a failure; `--update-baseline` drops them.
    pub stale: Vec<Accepted>,
    /// Entries whose fingerprint matches a finding but whose recorded label (subject,
    /// detector, kind, function, source, occurrence) is not the finding's: an edited entry, or
    /// two identities with one hash. Such an entry does not accept the finding (it is in
    /// `new` too): what a reader sees in the baseline must be what it accepts.
    pub relabelled: Vec<Relabelled<'a>>,
}

/// A baseline entry matched by fingerprint whose label differs from the finding's.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Relabelled<'a> {
    /// The finding, as this run labels it.
    pub finding: &'a GateFinding,
    /// The entry, as the baseline labels it.
    pub entry: Accepted,
}

/// Splits the findings into new and accepted (by fingerprint), and lists accepted ones that
/// are fixed or stale. `stale_subjects`: whether entries of other subjects are stale (manifest
/// mode) or simply not run (an ad-hoc program's baseline is shared by several programs).
pub fn diff<'a>(run: &'a GateRun, base: &Baseline, stale_subjects: bool) -> Diff<'a> {
    let known: std::collections::BTreeMap<&str, &Accepted> = base
        .accepted
        .iter()
        .map(|a| (a.fingerprint.as_str(), a))
        .collect();
    let now: BTreeSet<&str> = run
        .findings
        .iter()
        .map(|f| f.fingerprint.as_str())
        .collect();
    let mut d = Diff::default();
    for f in &run.findings {
        match known.get(f.fingerprint.as_str()) {
            Some(a) if a.id == f.id => d.accepted.push(f),
            Some(a) => {
                d.relabelled.push(Relabelled {
                    finding: f,
                    entry: (*a).clone(),
                });
                d.new.push(f);
            }
            None => d.new.push(f),
        }
    }
    for a in &base.accepted {
        if stale_subjects && is_stale(run, a) {
            d.stale.push(a.clone());
        } else if !now.contains(a.fingerprint.as_str())
            && run.decided(&a.id.subject, &a.id.detector)
        {
            d.fixed.push(a.clone());
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::finding::GateFinding;

    #[test]
    fn a_version_beyond_u32_is_another_format() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("baseline.json");
        // 2^32 + VERSION: the low 32 bits alone would read as this racegate's format.
        let v = (1u64 << 32) + u64::from(VERSION);
        std::fs::write(&p, format!("{{\"version\": {v}, \"accepted\": []}}")).unwrap();
        let e = Baseline::load(&p).unwrap_err().to_string();
        assert!(
            e.contains(&format!("format {v}, this racegate reads format")),
            "{e}"
        );
    }

    fn finding(subject: &str, det: &str, source: &str, line: u32) -> GateFinding {
        GateFinding::new(
            Identity {
                subject: subject.into(),
                detector: det.into(),
                kind: "Analysis: Race condition".into(),
                function: subject.into(),
                source: source.into(),
                occurrence: 0,
            },
            "k.cu",
            Some(line),
            "m".into(),
        )
    }

    fn run(findings: Vec<GateFinding>) -> GateRun {
        let mut r = GateRun {
            findings,
            subjects: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        r.mark_checked("a", "racecheck", 1.0);
        r.mark_checked("b", "racecheck", 1.0);
        r.mark_checked("b", "memcheck", 1.0);
        r.mark_inconclusive("b", "memcheck", "no tool".into());
        r
    }

    #[test]
    fn diff_matches_by_fingerprint_whatever_the_line() {
        let before = run(vec![finding("a", "racecheck", "x=1;", 12)]);
        let base = Baseline::default().updated(&before, true);
        let after = run(vec![finding("a", "racecheck", "x=1;", 40)]);
        let d = diff(&after, &base, true);
        assert!(d.new.is_empty() && d.accepted.len() == 1 && d.fixed.is_empty());
    }

    #[test]
    fn fixed_needs_a_decided_run_and_stale_needs_a_missing_subject() {
        let mut gone = Accepted::of(&finding("a", "racecheck", "y=2;", 3));
        gone.file = "k.cu".into();
        let undecided = Accepted::of(&finding("b", "memcheck", "z=3;", 3));
        let stale = Accepted::of(&finding("zzz", "racecheck", "w=4;", 3));
        let base = Baseline {
            version: VERSION,
            accepted: vec![gone.clone(), undecided.clone(), stale.clone()],
        };
        let r = run(vec![finding("a", "racecheck", "x=1;", 12)]);
        let d = diff(&r, &base, true);
        assert_eq!(d.new.len(), 1);
        assert_eq!(d.fixed, vec![gone]);
        assert_eq!(d.stale, vec![stale.clone()]);
        // Program mode: another program's entries are neither stale nor fixed.
        let d = diff(&r, &base, false);
        assert!(d.stale.is_empty() && d.fixed.len() == 1);
        // Updating keeps the undecided entry, drops the fixed one, and the stale one when asked.
        let up = base.updated(&r, true);
        let fps: Vec<&str> = up.accepted.iter().map(|a| a.fingerprint.as_str()).collect();
        assert!(fps.contains(&undecided.fingerprint.as_str()));
        assert!(!fps.contains(&stale.fingerprint.as_str()));
        assert_eq!(up.accepted.len(), 2);
        assert!(base.updated(&r, false).accepted.contains(&stale));
    }

    /// An entry is matched by fingerprint, but accepts a finding only when every part of its
    /// label is the finding's: each part of the identity changed in turn (as a hand edit of the
    /// file would) makes it `relabelled` and the finding new. Before, any entry with the
    /// fingerprint accepted the finding whatever it said.
    #[test]
    fn an_entry_whose_label_differs_is_relabelled_not_accepted() {
        let f = finding("a", "racecheck", "x=1;", 12);
        let r = run(vec![f.clone()]);
        let edits: [fn(&mut Identity); 6] = [
            |i| i.subject.push('x'),
            |i| i.detector = "memcheck".into(),
            |i| i.kind = "Analysis: Something else".into(),
            |i| i.function = "other".into(),
            |i| i.source = "y=2;".into(),
            |i| i.occurrence = 3,
        ];
        for (n, edit) in edits.iter().enumerate() {
            let mut entry = Accepted::of(&f);
            edit(&mut entry.id);
            let base = Baseline {
                version: VERSION,
                accepted: vec![entry.clone()],
            };
            let d = diff(&r, &base, false);
            assert!(d.accepted.is_empty(), "edit {n} still accepts");
            assert_eq!(d.new.len(), 1, "edit {n}");
            assert_eq!(d.relabelled.len(), 1, "edit {n}");
            assert_eq!(d.relabelled[0].entry, entry);
            assert_eq!(d.relabelled[0].finding.id, f.id);
        }
        // The unedited entry accepts it, and nothing is relabelled.
        let base = Baseline::default().updated(&r, true);
        let d = diff(&r, &base, false);
        assert_eq!(
            (d.accepted.len(), d.new.len(), d.relabelled.len()),
            (1, 0, 0)
        );
        // Where the file was when accepted is for people: moving it relabels nothing.
        let mut moved = Accepted::of(&f);
        moved.file = "elsewhere.cu".into();
        let d = diff(
            &r,
            &Baseline {
                version: VERSION,
                accepted: vec![moved],
            },
            false,
        );
        assert_eq!((d.accepted.len(), d.relabelled.len()), (1, 0));
    }

    /// The committed example baseline stays valid: every entry's fingerprint is its label's
    /// (findings with lines keep their fingerprints across this change).
    #[test]
    fn the_example_baseline_entries_are_their_labels_fingerprints() {
        let p = crate::source::paths::package_dir()
            .parent()
            .unwrap()
            .join("examples/gate")
            .join(BASELINE);
        let b = Baseline::load(&p).unwrap();
        assert!(!b.accepted.is_empty());
        for a in &b.accepted {
            assert_eq!(a.id.fingerprint(), a.fingerprint, "{a:?}");
        }
    }

    #[test]
    fn an_update_that_decided_nothing_changes_nothing() {
        let first = run(vec![finding("b", "memcheck", "x=1;", 12)]);
        let mut decided = first.clone();
        decided.inconclusive.clear();
        let base = Baseline::default().updated(&decided, true);
        let mut nothing = run(vec![]);
        nothing.mark_inconclusive("a", "racecheck", "no tool".into());
        assert_eq!(base.updated(&nothing, true), base);
    }

    #[test]
    fn an_old_baseline_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(BASELINE);
        std::fs::write(
            &p,
            r#"{"accepted":[{"subject":"k","detector":"stress","key":"wrong results"}]}"#,
        )
        .unwrap();
        let e = Baseline::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("older racegate") && e.contains("--update-baseline"),
            "{e}"
        );
        std::fs::write(&p, "{").unwrap();
        assert!(Baseline::load(&p)
            .unwrap_err()
            .to_string()
            .contains("not a racegate baseline"));
        assert_eq!(
            Baseline::load(&dir.path().join("none.json")).unwrap(),
            Baseline::default()
        );
    }

    #[test]
    fn save_never_writes_into_the_old_file() {
        // A reader holding the old baseline open still reads it whole after the save: the new
        // one is another file renamed over it, so a kill at any moment leaves one or the other,
        // never a truncated file.
        use std::io::Read;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(BASELINE);
        let old =
            Baseline::default().updated(&run(vec![finding("a", "racecheck", "x=1;", 1)]), true);
        old.save(&p).unwrap();
        let old_text = std::fs::read_to_string(&p).unwrap();
        let mut held = std::fs::File::open(&p).unwrap();
        let old_inode = held.metadata().unwrap().ino();
        let new =
            Baseline::default().updated(&run(vec![finding("a", "racecheck", "y=2;", 1)]), true);
        new.save(&p).unwrap();
        let mut still = String::new();
        held.read_to_string(&mut still).unwrap();
        assert_eq!(still, old_text);
        assert_ne!(std::fs::metadata(&p).unwrap().ino(), old_inode);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), new.to_text());
    }

    #[test]
    fn save_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(BASELINE);
        std::fs::write(&p, "old").unwrap();
        let b = Baseline::default().updated(&run(vec![finding("a", "racecheck", "x=1;", 1)]), true);
        b.save(&p).unwrap();
        assert_eq!(Baseline::load(&p).unwrap(), b);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [BASELINE]);
    }
}
