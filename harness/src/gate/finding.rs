//! What a gate run holds: its settings ([`GateConfig`]), each thing found ([`GateFinding`], with
//! its [`Identity`] and fingerprint), the runs that decided nothing, and every (subject,
//! detector) that ran with its time.

use serde::{Deserialize, Serialize};

use super::fingerprint::Identity;
use crate::judge::battery::Battery;
use crate::judge::sanitize::known_false_positives::KnownFalsePositive;
use crate::judge::sanitize::Tool;

/// How to gate: the battery every kernel gets, the tools, and how a program is judged.
#[derive(Clone, Debug)]
pub struct GateConfig {
    /// Trials, seed, deadlines, processes at once, architecture and compute-sanitizer.
    pub battery: Battery,
    /// Plain runs of a program (`gate -- PROGRAM`).
    pub runs: u32,
    /// The sanitizers to run (default: [`crate::judge::sanitize::Tool::ALL`] for a program,
    /// [`crate::judge::sanitize::Tool::KERNELS`] for a manifest's kernels).
    pub tools: Vec<Tool>,
    /// Extra compute-sanitizer options, passed before the target (`--sanitizer-arg`).
    pub sanitizer_args: Vec<String>,
    /// What may vary between a program's runs.
    pub masks: super::masks::Masks,
    /// What else judges a program's runs: regexes, a golden output, a checker (default: none).
    pub oracles: super::oracles::Oracles,
    /// Schedule jitter in a program's plain runs: globalcheck's injection delays each warp
    /// after every barrier, seeded per run (default: on where the tool can be built).
    pub jitter: bool,
    /// After a stress failure of a manifest kernel, the time a minimal-repro search may take
    /// (`run::shrink`); `None`: no search.
    pub shrink: Option<std::time::Duration>,
    /// The deadline of a program's plain run as the user gave it (`--timeout`); `None`: derived
    /// from a measured first run ([`super::deadlines`]).
    pub program_timeout: Option<std::time::Duration>,
    /// The deadline of a program's tool run as the user gave it (`--sanitize-timeout`); `None`:
    /// derived from the measured first run.
    pub program_sanitize_timeout: Option<std::time::Duration>,
    /// How a program's launches are sampled under the tools ([`super::sampling`]); `None`
    /// (`--every-launch`): every launch is checked.
    pub sampling: Option<super::sampling::Sampling>,
    /// Whether the user chose `tools` (`--tools`); else they are the kernels' defaults, and a
    /// manifest's `[[program]]` without its own `sanitizers` gets every tool.
    pub tools_chosen: bool,
}

/// One thing the gate found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub struct GateFinding {
    /// Who found what where, without the line: the baseline's key.
    #[serde(flatten)]
    pub id: Identity,
    /// [`Identity::fingerprint`] of `id`.
    pub fingerprint: String,
    /// Relative to the root, normalized (absolute only outside it).
    pub file: String,
    /// The line, where the detector names one (sanitizers do; stress names the kernel's).
    pub line: Option<u32>,
    /// For program findings, the oracle that decided: `golden`, `checker`, `regex`,
    /// `variance`, `sanitizer`, `exit code` or `hang` (the message names the runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<&'static str>,
    /// For people: the finding with run-specific detail (rates, seeds, repro commands).
    pub message: String,
    /// More for people, over several lines: the diff of two outputs that differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For stress findings: when and how often the bug showed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detection: Option<Detection>,
}

impl GateFinding {
    /// A finding with its fingerprint worked out.
    #[doc(hidden)]
    pub fn new(id: Identity, file: &str, line: Option<u32>, message: String) -> GateFinding {
        GateFinding {
            fingerprint: id.fingerprint(),
            oracle: oracle_of(&id.detector),
            id,
            file: file.to_string(),
            line,
            message,
            detail: None,
            detection: None,
        }
    }

    /// The kernel or program it is about.
    pub fn subject(&self) -> &str {
        &self.id.subject
    }

    /// The detector that found it: `stress`, a sanitizer, `exit`, `watchdog`, `output`, ...
    pub fn detector(&self) -> &str {
        &self.id.detector
    }

    /// `Analysis: Race condition in block_sum_racy: s[tid]+=s[tid+half];`: what a reader
    /// greps the baseline for.
    pub fn summary(&self) -> String {
        summary(&self.id)
    }

    /// `file:line`, or the file alone.
    pub fn location(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.clone(),
        }
    }
}

/// The oracle a detector is, in the words of program findings; `None` for stress oracles,
/// which name themselves.
fn oracle_of(detector: &str) -> Option<&'static str> {
    Some(match detector {
        "exit" => "exit code",
        "watchdog" => "hang",
        "output" => "variance",
        "golden" => "golden",
        "checker" => "checker",
        "regex" => "regex",
        d if crate::judge::sanitize::Tool::ALL
            .iter()
            .any(|t| t.name() == d) =>
        {
            "sanitizer"
        }
        _ => return None,
    })
}

/// The one-line description of an identity (findings and baseline entries alike).
#[doc(hidden)]
pub fn summary(id: &Identity) -> String {
    let mut s = id.kind.clone();
    if !id.function.is_empty() {
        s.push_str(&format!(" in {}", id.function));
    }
    if !id.source.is_empty() {
        s.push_str(&format!(": `{}`", id.source));
        if id.occurrence > 0 {
            s.push_str(&format!(" (occurrence {})", id.occurrence + 1));
        }
    }
    s
}

/// When stress first caught a bug, and how often it showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Detection {
    /// The first failing trial (0-based).
    pub trial: u32,
    /// Milliseconds from the start of the kernel's stress run to that trial's report.
    pub millis: u64,
    /// Trials that failed.
    pub failures: u32,
    /// Trials run.
    pub trials: u32,
}

impl Detection {
    /// The manifestation rate and its 95% interval.
    pub fn rate(&self) -> (f64, (f64, f64)) {
        let rate = self.failures as f64 / self.trials.max(1) as f64;
        (
            rate,
            crate::run::stress::wilson_95(self.failures, self.trials),
        )
    }

    /// `first detected at trial 3 after 0.41 s; rate 12/100 (95% CI 7.0%-20.0%)`.
    pub fn describe(&self) -> String {
        let (_, (lo, hi)) = self.rate();
        format!(
            "first detected at trial {} after {:.2} s; rate {}/{} (95% CI {:.1}%-{:.1}%)",
            self.trial,
            self.millis as f64 / 1e3,
            self.failures,
            self.trials,
            lo * 100.0,
            hi * 100.0
        )
    }
}

/// A (subject, detector) that ran, and for how long.
#[derive(Clone, Debug, PartialEq, PartialOrd, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Checked {
    /// The kernel or program.
    pub subject: String,
    /// The detector that ran on it.
    pub detector: String,
    /// How long it took.
    pub seconds: f64,
}

/// One run of the gate (a detector on a subject) as it finishes, for progress: a reporter
/// renders it, the engine never prints.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GateEvent<'a> {
    /// The kernel or program.
    pub subject: &'a str,
    /// The detector that ran on it.
    pub detector: &'a str,
    /// Findings of this run, before the baseline (accepted ones count too).
    pub findings: usize,
    /// The run decided nothing (a tool missing or failing).
    pub inconclusive: bool,
    /// The run was killed at its deadline: a hang or the tool's slowness, judged once the
    /// plain runs are known (never shown as a pass).
    pub hung: bool,
    /// How long it took.
    pub seconds: f64,
}

/// A run that decided nothing, and why.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Inconclusive {
    /// The kernel or program.
    pub subject: String,
    /// The detector that could not decide.
    pub detector: String,
    /// Why (a tool missing or failing, a deadline).
    pub reason: String,
}

/// A tool's report inside a library's own code that the built-in list knows as a false
/// positive: set aside from the findings (the gate's `library_reports`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LibraryReport {
    /// The finding it would be.
    pub finding: GateFinding,
    /// The entry of the list it matched, with its upstream issue.
    pub known: &'static KnownFalsePositive,
}

/// What a gate run saw.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct GateRun {
    /// Everything found, sorted, before the baseline (see [`crate::Gate::diff`]).
    pub findings: Vec<GateFinding>,
    /// Reports inside a library's own code that are known false positives, not in `findings`:
    /// named in `notes`, or put back into `findings` (`--keep-library-reports`), once the run
    /// is whole (`library_reports::settled`).
    #[serde(skip)]
    pub library_reports: Vec<LibraryReport>,
    /// Runs that decided nothing: never counted as clean.
    pub inconclusive: Vec<Inconclusive>,
    /// Every (subject, detector) that ran, inconclusive ones included, for JUnit.
    pub checked: Vec<Checked>,
    /// Things worth knowing that are no finding: processes a program left running that were
    /// killed after it, settings that changed the meaning of a result.
    pub notes: Vec<String>,
    /// Every subject the gate was asked about (manifest kernels, or the program): baseline
    /// entries of other subjects are stale in manifest mode.
    pub subjects: Vec<String>,
    /// Wall time of the whole run.
    pub seconds: f64,
}

impl GateRun {
    /// Whether (subject, detector) ran and decided something: only then can an accepted
    /// finding be called fixed, or dropped from the baseline.
    pub fn decided(&self, subject: &str, detector: &str) -> bool {
        self.checked
            .iter()
            .any(|c| c.subject == subject && c.detector == detector)
            && !self
                .inconclusive
                .iter()
                .any(|i| i.subject == subject && i.detector == detector)
    }

    /// Records a run that decided nothing.
    #[doc(hidden)]
    pub fn mark_inconclusive(&mut self, subject: &str, detector: &str, reason: String) {
        self.inconclusive.push(Inconclusive {
            subject: subject.to_string(),
            detector: detector.to_string(),
            reason,
        });
    }

    /// Records a (subject, detector) that ran.
    #[doc(hidden)]
    pub fn mark_checked(&mut self, subject: &str, detector: &str, seconds: f64) {
        self.checked.push(Checked {
            subject: subject.to_string(),
            detector: detector.to_string(),
            seconds,
        });
    }

    /// [`GateRun::events`], with the runs of `hung` (subject, detector) marked as killed at
    /// their deadline.
    #[doc(hidden)]
    pub fn events_with_hangs<'a>(&'a self, hung: &[(&str, &str)]) -> Vec<GateEvent<'a>> {
        let mut events = self.events();
        for e in &mut events {
            e.hung = hung.contains(&(e.subject, e.detector));
        }
        events
    }

    /// One event per (subject, detector) this run checked.
    #[doc(hidden)]
    pub fn events(&self) -> Vec<GateEvent<'_>> {
        self.checked
            .iter()
            .map(|c| GateEvent {
                subject: &c.subject,
                detector: &c.detector,
                findings: self
                    .findings
                    .iter()
                    .filter(|f| f.id.subject == c.subject && f.id.detector == c.detector)
                    .count(),
                inconclusive: self
                    .inconclusive
                    .iter()
                    .any(|i| i.subject == c.subject && i.detector == c.detector),
                hung: false,
                seconds: c.seconds,
            })
            .collect()
    }

    pub(crate) fn absorb(&mut self, other: GateRun) {
        self.findings.extend(other.findings);
        self.library_reports.extend(other.library_reports);
        self.inconclusive.extend(other.inconclusive);
        self.checked.extend(other.checked);
        self.notes.extend(other.notes);
    }

    /// Sorted, duplicates dropped.
    pub(crate) fn tidy(&mut self) {
        self.findings.sort();
        self.findings.dedup();
        self.library_reports
            .sort_by(|a, b| a.finding.cmp(&b.finding));
        self.library_reports.dedup_by(|a, b| a.finding == b.finding);
        self.inconclusive.sort();
        self.inconclusive.dedup();
        self.checked
            .sort_by(|a, b| (&a.subject, &a.detector).cmp(&(&b.subject, &b.detector)));
    }
}
