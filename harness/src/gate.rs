//! The merge gate for users' own code: manifest kernels (stress with their oracle, and the four
//! sanitizers) or an existing CUDA program (`gate -- PROGRAM ARGS`: the four sanitizers and
//! repeated plain runs). Findings are compared with a baseline of accepted ones: new findings
//! fail the gate, accepted ones are listed, fixed ones are reported so the baseline can shrink.
//! The run and its [`Diff`] are rendered by [`crate::report`]: text, JUnit, SARIF 2.1.0, GitHub
//! annotations and a markdown summary.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::battery::Battery;
use crate::catalog::{Case, Catalog};
use crate::errors::{Error, Result};
use crate::manifest::Check;
use crate::sanitize::{self, Outcome, Tool};
use crate::stress::{self, Verdict};
use crate::watchdog::{self, Deadline, Exit};

/// The default baseline file, next to the manifest.
pub const BASELINE: &str = "racegate-baseline.json";

/// How to gate: the battery every kernel gets, and the plain runs of a program.
#[derive(Clone, Debug)]
pub struct GateConfig {
    pub battery: Battery,
    /// Plain runs of a program (`gate -- PROGRAM`).
    pub runs: u32,
}

/// One thing the gate found.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GateFinding {
    /// The manifest kernel, or the program's name.
    pub subject: String,
    /// stress, racecheck, synccheck, memcheck, initcheck, watchdog, exit, output.
    pub detector: String,
    /// Stable text: the normalized finding, without rates or counts. Baselines match on
    /// (subject, detector, key).
    pub key: String,
    pub file: String,
    pub line: Option<u32>,
    /// For people: the key plus run-specific detail (rates, seeds, repro commands).
    #[serde(skip)]
    pub message: String,
    /// For stress findings: when and how often the bug showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detection: Option<Detection>,
}

/// When stress first caught a bug, and how often it showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Detection {
    /// The first failing trial (0-based).
    pub trial: u32,
    /// Milliseconds from the start of the kernel's stress run to that trial's report.
    pub millis: u64,
    pub failures: u32,
    pub trials: u32,
}

impl Detection {
    /// The manifestation rate and its 95% interval.
    pub fn rate(&self) -> (f64, (f64, f64)) {
        let rate = self.failures as f64 / self.trials.max(1) as f64;
        (rate, crate::stress::wilson_95(self.failures, self.trials))
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

/// What a gate run saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GateRun {
    pub findings: Vec<GateFinding>,
    /// (subject, detector, reason) of runs that decided nothing.
    pub inconclusive: Vec<(String, String, String)>,
    /// Every (subject, detector) that ran, for JUnit.
    pub checked: Vec<(String, String)>,
    pub seconds: f64,
}

/// An accepted finding in the baseline file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Accepted {
    pub subject: String,
    pub detector: String,
    pub key: String,
}

/// The baseline file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub accepted: Vec<Accepted>,
}

impl Baseline {
    /// Reads a baseline; a missing file is an empty baseline.
    pub fn load(path: &Path) -> Result<Baseline> {
        match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Baseline::default()),
            Err(e) => Err(Error::io("reading", path, e)),
            Ok(t) => serde_json::from_str(&t).map_err(|e| {
                Error::Usage(format!("{}: not a racegate baseline: {e}", path.display()))
            }),
        }
    }

    /// A baseline accepting everything in `run`.
    pub fn from_run(run: &GateRun) -> Baseline {
        let set: BTreeSet<Accepted> = run.findings.iter().map(accepted).collect();
        Baseline {
            accepted: set.into_iter().collect(),
        }
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).expect("serializable") + "\n";
        std::fs::write(path, text).map_err(|e| Error::io("writing", path, e))
    }
}

fn accepted(f: &GateFinding) -> Accepted {
    Accepted {
        subject: f.subject.clone(),
        detector: f.detector.clone(),
        key: f.key.clone(),
    }
}

/// A run compared with a baseline.
#[derive(Clone, Debug, Default)]
pub struct Diff<'a> {
    pub new: Vec<&'a GateFinding>,
    pub accepted: Vec<&'a GateFinding>,
    pub fixed: Vec<Accepted>,
}

/// Splits the findings into new and accepted, and lists accepted ones that no longer occur.
pub fn diff<'a>(run: &'a GateRun, base: &Baseline) -> Diff<'a> {
    let mut d = Diff::default();
    for f in &run.findings {
        if base.accepted.contains(&accepted(f)) {
            d.accepted.push(f);
        } else {
            d.new.push(f);
        }
    }
    let now: BTreeSet<Accepted> = run.findings.iter().map(accepted).collect();
    // Only subjects and detectors that actually ran can show a finding as fixed.
    d.fixed = base
        .accepted
        .iter()
        .filter(|a| {
            !now.contains(a)
                && run
                    .checked
                    .iter()
                    .any(|(s, det)| *s == a.subject && *det == a.detector)
        })
        .cloned()
        .collect();
    d
}

fn tool_detector(t: Tool) -> String {
    crate::catalog::Detector::from(t).name().to_string()
}

/// Findings of one sanitizer run.
fn sanitizer_findings(
    subject: &str,
    r: &sanitize::SanitizerRun,
    fallback_file: &str,
    out: &mut GateRun,
) {
    let det = tool_detector(r.tool);
    out.checked.push((subject.to_string(), det.clone()));
    match &r.outcome {
        Outcome::Clean => {}
        Outcome::Inconclusive(why) => {
            out.inconclusive
                .push((subject.to_string(), det, why.clone()))
        }
        Outcome::Hang { .. } => out.findings.push(GateFinding {
            detection: None,
            subject: subject.into(),
            detector: det,
            key: "hang: compute-sanitizer and its target killed at the deadline".into(),
            file: fallback_file.into(),
            line: None,
            message: format!("{} hung ({})", r.tool, r.exit),
        }),
        Outcome::Findings(fs) => {
            for f in fs {
                let (file, line) = match f.file_line() {
                    Some((file, line)) => (file.to_string(), Some(line)),
                    None => (fallback_file.to_string(), None),
                };
                out.findings.push(GateFinding {
                    detection: None,
                    subject: subject.into(),
                    detector: det.clone(),
                    key: f.line(),
                    file,
                    line,
                    message: format!("{}: {}", r.tool, f.line()),
                });
            }
        }
    }
}

/// The line where `entry` is defined in `file` (for stress findings, which have no line).
fn entry_line(root: &Path, file: &str, entry: &str) -> Option<u32> {
    let text = std::fs::read_to_string(root.join(file)).ok()?;
    text.lines()
        .position(|l| l.contains("__global__") && l.contains(&format!("{entry}(")))
        .map(|i| i as u32 + 1)
}

enum Job<'a> {
    Stress(&'a Case),
    Sanitize(&'a Case, Tool),
}

/// Runs every manifest kernel through stress (unless its oracle is `none`) and the sanitizers.
pub fn run_manifest(
    catalog: &Catalog,
    cfg: &GateConfig,
    exe: &Path,
    on_done: impl Fn(&str) + Sync,
) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let mut jobs = Vec::new();
    for tool in Tool::ALL {
        for c in &catalog.cases {
            jobs.push(Job::Sanitize(c, tool));
        }
    }
    for c in &catalog.cases {
        if c.kernel_spec().is_some_and(|k| k.check != Check::None) {
            jobs.push(Job::Stress(c));
        }
    }
    let results = crate::pool::run_all(
        jobs,
        cfg.battery.jobs,
        |job| -> Result<GateRun> {
            let mut out = GateRun::default();
            match job {
                Job::Sanitize(case, tool) => {
                    let r = sanitize::runner::run(catalog, case, &cfg.battery.sanitize(tool), exe)?;
                    sanitizer_findings(&case.name, &r, &case.path, &mut out);
                }
                Job::Stress(case) => {
                    let r = stress::run(catalog, case, &cfg.battery.stress(true), exe, |_| {})?;
                    let oracle = match case.kernel_spec().map(|k| &k.check) {
                        Some(Check::Reference { path, entry }) => {
                            format!("reference {path}:{entry}")
                        }
                        _ => "determinism".into(),
                    };
                    out.checked.push((case.name.clone(), "stress".into()));
                    let key = match &r.verdict {
                        Verdict::Pass => None,
                        Verdict::Fail => Some(format!("wrong results against the {oracle} oracle")),
                        Verdict::Hang { .. } => Some("hang: a trial missed its deadline".into()),
                        Verdict::Fault { error } => Some(format!(
                            "device fault: {}",
                            error.lines().next().unwrap_or("")
                        )),
                    };
                    if let Some(key) = key {
                        out.findings.push(GateFinding {
                            subject: case.name.clone(),
                            detector: "stress".into(),
                            key: key.clone(),
                            file: case.path.clone(),
                            line: entry_line(&catalog.root, &case.path, &case.entry.name),
                            detection: r.first_failing_trial().map(|trial| Detection {
                                trial,
                                millis: (r.first_detection_seconds.unwrap_or(r.seconds) * 1e3)
                                    as u64,
                                failures: r.failures,
                                trials: r.trials_run,
                            }),
                            message: format!(
                                "{key}: {} of {} trials{}",
                                r.failures,
                                r.trials_run,
                                r.repro
                                    .as_ref()
                                    .map(|c| format!("; reproduce: {c}"))
                                    .unwrap_or_default()
                            ),
                        });
                    }
                }
            }
            Ok(out)
        },
        |_| on_done("."),
    );
    let mut run = GateRun::default();
    for r in results {
        let r = r?;
        run.findings.extend(r.findings);
        run.inconclusive.extend(r.inconclusive);
        run.checked.extend(r.checked);
    }
    run.findings.sort();
    run.findings.dedup();
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

/// Runs an existing CUDA program under each sanitizer and `cfg.runs` times plainly.
pub fn run_program(program: &[OsString], root: &Path, cfg: &GateConfig) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let subject = Path::new(&program[0])
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let shown = program[0].to_string_lossy().into_owned();
    let mut run = GateRun::default();
    let sanitizer_runs = crate::pool::run_all(
        Tool::ALL.to_vec(),
        cfg.battery.jobs,
        |tool| sanitize::runner::run_target(&subject, program, &cfg.battery.sanitize(tool), root),
        |_| {},
    );
    for r in sanitizer_runs {
        sanitizer_findings(&subject, &r?, &shown, &mut run);
    }
    let mut outputs: Vec<String> = Vec::new();
    for i in 0..cfg.runs {
        let mut stdout = String::new();
        let f = watchdog::run(
            Path::new(&program[0]),
            &program[1..],
            &[],
            Deadline {
                idle: cfg.battery.stress_timeout,
                total: Some(cfg.battery.stress_timeout),
            },
            |l| {
                stdout.push_str(l);
                stdout.push('\n');
            },
        )?;
        let (det, key) = match f.exit {
            Exit::Code(0) => {
                outputs.push(stdout);
                continue;
            }
            Exit::Code(c) => ("exit", format!("exits with code {c}")),
            Exit::Signal(s) => ("exit", format!("killed by signal {s}")),
            Exit::TimedOut => (
                "watchdog",
                format!(
                    "hang: no exit within {:.0} s",
                    cfg.battery.stress_timeout.as_secs_f64()
                ),
            ),
        };
        run.findings.push(GateFinding {
            detection: None,
            subject: subject.clone(),
            detector: det.into(),
            key: key.clone(),
            file: shown.clone(),
            line: None,
            message: format!(
                "run {} of {}: {key}; stderr: {}",
                i + 1,
                cfg.runs,
                f.stderr.lines().last().unwrap_or("")
            ),
        });
    }
    run.checked.push((subject.clone(), "exit".into()));
    run.checked.push((subject.clone(), "watchdog".into()));
    run.checked.push((subject.clone(), "output".into()));
    let distinct: BTreeSet<&String> = outputs.iter().collect();
    if distinct.len() > 1 {
        run.findings.push(GateFinding {
            detection: None,
            subject: subject.clone(),
            detector: "output".into(),
            key: "output differs between identical runs".into(),
            file: shown.clone(),
            line: None,
            message: format!(
                "{} different outputs in {} successful runs",
                distinct.len(),
                outputs.len()
            ),
        });
    }
    run.findings.sort();
    run.findings.dedup();
    run.seconds = start.elapsed().as_secs_f64();
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(subject: &str, det: &str, key: &str, line: Option<u32>) -> GateFinding {
        GateFinding {
            detection: None,
            subject: subject.into(),
            detector: det.into(),
            key: key.into(),
            file: "kernels/k.cu".into(),
            line,
            message: format!("{key} (detail)"),
        }
    }

    fn run(findings: Vec<GateFinding>) -> GateRun {
        GateRun {
            checked: vec![
                ("a".into(), "racecheck".into()),
                ("b".into(), "stress".into()),
            ],
            findings,
            ..Default::default()
        }
    }

    #[test]
    fn diff_splits_new_accepted_and_fixed() {
        let r = run(vec![
            finding("a", "racecheck", "race at 12", Some(12)),
            finding("b", "stress", "wrong", None),
        ]);
        let base = Baseline {
            accepted: vec![
                Accepted {
                    subject: "a".into(),
                    detector: "racecheck".into(),
                    key: "race at 12".into(),
                },
                Accepted {
                    subject: "a".into(),
                    detector: "racecheck".into(),
                    key: "race at 40".into(),
                },
                Accepted {
                    subject: "zzz".into(),
                    detector: "racecheck".into(),
                    key: "not run today".into(),
                },
            ],
        };
        let d = diff(&r, &base);
        assert_eq!(
            d.new.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(),
            ["wrong"]
        );
        assert_eq!(d.accepted.len(), 1);
        assert_eq!(
            d.fixed.iter().map(|a| a.key.as_str()).collect::<Vec<_>>(),
            ["race at 40"],
            "only what ran can be fixed"
        );
    }

    #[test]
    fn a_baseline_from_a_run_accepts_all_of_it() {
        let r = run(vec![
            finding("a", "racecheck", "race", Some(3)),
            finding("a", "racecheck", "race", Some(3)),
        ]);
        let base = Baseline::from_run(&r);
        assert_eq!(base.accepted.len(), 1);
        assert!(diff(&r, &base).new.is_empty());
    }
}
