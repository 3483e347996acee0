//! The merge gate for users' own code: manifest kernels (stress with their oracle, and the four
//! sanitizers) or an existing CUDA program (`gate -- PROGRAM ARGS`: the four sanitizers and
//! repeated plain runs). Findings are compared with a baseline of accepted ones: new findings
//! fail the gate, accepted ones are listed, fixed ones are reported so the baseline can shrink.
//! Reports: JUnit, SARIF 2.1.0, GitHub annotations and a markdown summary.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::catalog::{Case, Catalog};
use crate::errors::{Error, Result};
use crate::manifest::Check;
use crate::sanitize::{self, Outcome, SanitizeConfig, Tool};
use crate::stress::{self, StressConfig, Verdict};
use crate::watchdog::{self, Deadline, Exit};

/// The default baseline file, next to the manifest.
pub const BASELINE: &str = "racegate-baseline.json";

/// How to run the gate.
#[derive(Clone, Debug)]
pub struct GateConfig {
    pub trials: u32,
    pub seed: u64,
    pub per_set: u32,
    pub stress_timeout: Duration,
    pub sanitize_timeout: Duration,
    pub jobs: usize,
    pub arch: String,
    pub sanitizer: Option<PathBuf>,
    /// Plain runs of a program (`gate -- PROGRAM`).
    pub runs: u32,
}

impl GateConfig {
    fn sanitize(&self, tool: Tool) -> SanitizeConfig {
        SanitizeConfig {
            tool,
            sanitizer: self.sanitizer.clone(),
            timeout: self.sanitize_timeout,
            arch: self.arch.clone(),
            keep_xml: None,
            seed: self.seed,
        }
    }
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
        cfg.jobs,
        |job| -> Result<GateRun> {
            let mut out = GateRun::default();
            match job {
                Job::Sanitize(case, tool) => {
                    let r = sanitize::runner::run(catalog, case, &cfg.sanitize(tool), exe)?;
                    sanitizer_findings(&case.name, &r, &case.path, &mut out);
                }
                Job::Stress(case) => {
                    let scfg = StressConfig {
                        trials: cfg.trials,
                        seed: cfg.seed,
                        jitter: true,
                        size: None,
                        timeout: cfg.stress_timeout,
                        per_set: cfg.per_set,
                        arch: cfg.arch.clone(),
                    };
                    let r = stress::run(catalog, case, &scfg, exe, |_| {})?;
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
        cfg.jobs,
        |tool| sanitize::runner::run_target(&subject, program, &cfg.sanitize(tool), root),
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
                idle: cfg.stress_timeout,
                total: Some(cfg.stress_timeout),
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
                    cfg.stress_timeout.as_secs_f64()
                ),
            ),
        };
        run.findings.push(GateFinding {
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

/// SARIF 2.1.0: one rule per detector, one result per new or accepted finding (accepted ones
/// carry `baselineState: unchanged`), each located at file and line.
///
/// `uri_prefix` is prepended to every path (the manifest's folder relative to the repository
/// root, e.g. `examples/gate/`), so code scanning finds the file.
pub fn sarif(d: &Diff, version: &str, uri_prefix: &str) -> serde_json::Value {
    use serde_json::json;
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
            let mut region = json!({});
            if let Some(l) = f.line {
                region = json!({ "startLine": l });
            }
            let uri = if f.file.starts_with('/') { f.file.clone() } else { format!("{uri_prefix}{}", f.file) };
            let mut loc = json!({ "physicalLocation": { "artifactLocation": { "uri": uri } } });
            if f.line.is_some() {
                loc["physicalLocation"]["region"] = region;
            }
            json!({
                "ruleId": f.detector,
                "level": if *state == "new" { "error" } else { "note" },
                "baselineState": state,
                "message": { "text": format!("{}: {}", f.subject, f.message) },
                "locations": [loc],
                "partialFingerprints": { "racegate/v1": format!("{}|{}|{}", f.subject, f.detector, f.key) }
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": { "name": "racegate", "version": version, "informationUri": "https://github.com/racegate/racegate", "rules": rules } },
            "results": results
        }]
    })
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

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands: `::error` for new findings, `::notice` for accepted ones.
/// GitHub shows at most 10 errors per step; the rest are in the summary.
pub fn annotations(d: &Diff) -> String {
    let mut out = String::new();
    for (f, kind) in d
        .new
        .iter()
        .map(|f| (f, "error"))
        .chain(d.accepted.iter().map(|f| (f, "notice")))
        .take(20)
    {
        let mut props = format!("file={}", escape_property(&f.file));
        if let Some(l) = f.line {
            props.push_str(&format!(",line={l}"));
        }
        props.push_str(&format!(
            ",title={}",
            escape_property(&format!("racegate {} ({})", f.detector, f.subject))
        ));
        out.push_str(&format!("::{kind} {props}::{}\n", escape_data(&f.message)));
    }
    out
}

/// Markdown for `$GITHUB_STEP_SUMMARY`.
pub fn summary(run: &GateRun, d: &Diff) -> String {
    let mut s = String::from("## racegate gate\n\n");
    let verdict = if !d.new.is_empty() {
        "❌ **failed**: new findings"
    } else if !run.inconclusive.is_empty() {
        "⚠️ **inconclusive**"
    } else {
        "✅ **passed**"
    };
    s.push_str(&format!(
        "{verdict} — {} new, {} accepted in the baseline, {} fixed, {} inconclusive ({:.0} s)\n\n",
        d.new.len(),
        d.accepted.len(),
        d.fixed.len(),
        run.inconclusive.len(),
        run.seconds
    ));
    let loc = |f: &GateFinding| match f.line {
        Some(l) => format!("`{}:{l}`", f.file),
        None => format!("`{}`", f.file),
    };
    for (title, list) in [
        ("New findings", &d.new),
        ("Accepted (in the baseline)", &d.accepted),
    ] {
        if list.is_empty() {
            continue;
        }
        s.push_str(&format!(
            "### {title}\n\n| subject | detector | where | finding |\n|---|---|---|---|\n"
        ));
        for f in list.iter() {
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                f.subject,
                f.detector,
                loc(f),
                f.message.replace('|', "/")
            ));
        }
        s.push('\n');
    }
    if !d.fixed.is_empty() {
        s.push_str(
            "### Fixed (remove from the baseline with `racegate gate --update-baseline`)\n\n",
        );
        for a in &d.fixed {
            s.push_str(&format!("- {} / {}: {}\n", a.subject, a.detector, a.key));
        }
        s.push('\n');
    }
    for (subject, det, why) in &run.inconclusive {
        s.push_str(&format!("- ⚠️ {subject} / {det}: inconclusive: {why}\n"));
    }
    s
}

/// JUnit: a testcase per (subject, detector) that ran; new findings are failures.
pub fn junit(run: &GateRun, d: &Diff) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut suite = TestSuite::new("racegate-gate");
    let mut checked = run.checked.clone();
    checked.sort();
    checked.dedup();
    for (subject, det) in &checked {
        let new: Vec<&&GateFinding> = d
            .new
            .iter()
            .filter(|f| f.subject == *subject && f.detector == *det)
            .collect();
        let inc = run
            .inconclusive
            .iter()
            .find(|(s, t, _)| s == subject && t == det);
        let status = if let Some(first) = new.first() {
            let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
            st.set_message(first.message.clone());
            st.set_description(
                new.iter()
                    .map(|f| f.message.clone())
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            st
        } else if let Some((_, _, why)) = inc {
            let mut st = TestCaseStatus::skipped();
            st.set_message(format!("inconclusive: {why}"));
            st
        } else {
            TestCaseStatus::success()
        };
        let mut t = TestCase::new(format!("{subject}::{det}"), status);
        t.set_classname(subject.clone());
        if let Some(f) = new.first() {
            t.extra.insert("file".into(), f.file.clone().into());
            if let Some(l) = f.line {
                t.extra.insert("line".into(), l.to_string().into());
            }
        }
        suite.add_test_case(t);
    }
    let mut report = Report::new("racegate");
    report.add_test_suite(suite);
    report.to_string().expect("JUnit serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(subject: &str, det: &str, key: &str, line: Option<u32>) -> GateFinding {
        GateFinding {
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

    #[test]
    fn sarif_has_the_required_fields() {
        let r = run(vec![
            finding("a", "racecheck", "race", Some(12)),
            finding("b", "stress", "wrong", None),
        ]);
        let d = diff(&r, &Baseline::default());
        let v = sarif(&d, "0.1.0", "");
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
    }

    #[test]
    fn annotations_escape_data_and_properties() {
        let mut f = finding("a,b", "racecheck", "k", Some(7));
        f.message = "50% of trials\nfailed: x".into();
        f.file = "dir:x/k.cu".into();
        let r = run(vec![f]);
        let d = diff(&r, &Baseline::default());
        let out = annotations(&d);
        assert_eq!(
            out,
            "::error file=dir%3Ax/k.cu,line=7,title=racegate racecheck (a%2Cb)::50%25 of trials%0Afailed: x\n"
        );
    }

    #[test]
    fn junit_marks_new_findings_as_failures_with_file_and_line() {
        let r = run(vec![finding("a", "racecheck", "race", Some(12))]);
        let d = diff(&r, &Baseline::default());
        let xml = junit(&r, &d);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let tc = doc
            .descendants()
            .find(|n| n.attribute("name") == Some("a::racecheck"))
            .unwrap();
        assert_eq!(tc.attribute("file"), Some("kernels/k.cu"));
        assert_eq!(tc.attribute("line"), Some("12"));
        assert!(tc.children().any(|c| c.has_tag_name("failure")));
        let ok = doc
            .descendants()
            .find(|n| n.attribute("name") == Some("b::stress"))
            .unwrap();
        assert!(!ok.children().any(|c| c.has_tag_name("failure")));
    }
}
