//! The explanations under a text report (`stress`, `sanitize`, `gate`): for each kind of finding the
//! run had, once, its title, meaning, usual cause and fix in the language asked for (`--lang`,
//! else `LANG`/`LC_ALL`), from the same catalog the HTML report and grading use.

use super::explain::{key_for, render, Lang};
use crate::judge::sanitize::{Outcome, SanitizerRun};
use crate::run::stress::{StressReport, Verdict};
use crate::run::trial::TrialResult;

/// The message key of a stress run that did not pass; `None` for a pass.
pub fn stress_key(r: &StressReport) -> Option<&'static str> {
    match &r.verdict {
        Verdict::Pass => None,
        Verdict::Hang { .. } => Some("hang"),
        Verdict::Fault { .. } => Some("crash"),
        Verdict::Fail => {
            let cause = r.first_failure.as_ref().and_then(|f| match &f.result {
                TrialResult::Wrong(w) => w.cause.as_deref(),
                _ => None,
            });
            Some(key_for("stress", cause.unwrap_or("wrong results"), ""))
        }
    }
}

/// The explanation of a stress run that did not pass, indented under its report; empty for a
/// pass.
pub fn stress(r: &StressReport, lang: Lang) -> String {
    stress_key(r).map_or_else(String::new, |k| block(&[k], lang))
}

/// The explanations of every kind of finding in `runs`, each once, in order of first
/// appearance; empty when no run has findings.
pub fn sanitizer(runs: &[SanitizerRun], lang: Lang) -> String {
    let mut keys: Vec<&'static str> = Vec::new();
    for r in runs {
        if let Outcome::Findings(fs) = &r.outcome {
            for f in fs {
                let k = key_for(
                    r.tool.name(),
                    &format!("{}: {}", f.kind, f.what),
                    &f.accesses,
                );
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    block(&keys, lang)
}

/// The explanations of every kind among a gate's new findings, each once, under a heading;
/// empty when there is none. The directions of a race are read from the finding's message.
pub fn gate(new: &[&crate::gate::GateFinding], lang: Lang) -> String {
    let mut keys: Vec<&'static str> = Vec::new();
    for f in new {
        let k = key_for(&f.id.detector, &f.id.kind, &f.message);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.retain(|k| *k != "unknown");
    if keys.is_empty() {
        return String::new();
    }
    let heading = match lang {
        Lang::En => "What the new findings mean:",
        Lang::Ko => "새 발견 사항의 뜻:",
    };
    format!("\n{heading}\n{}", block(&keys, lang))
}

/// The explanations of `keys`, each indented; a kind racegate has no explanation for
/// (`unknown`) adds nothing: its raw record is already in the report above.
fn block(keys: &[&str], lang: Lang) -> String {
    let mut s = String::new();
    for k in keys.iter().filter(|k| **k != "unknown") {
        s.push('\n');
        for l in render(k, lang, None).lines() {
            s.push_str(&format!("  {}\n", l.trim_start()));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::sanitize::normalize::Finding;
    use crate::judge::sanitize::Tool;

    fn run(tool: Tool, findings: Vec<Finding>) -> SanitizerRun {
        crate::judge::sanitize::batch_fixtures::found("k", tool, findings)
    }

    fn finding(kind: &str, what: &str, accesses: &str) -> Finding {
        Finding {
            kind: kind.into(),
            level: "Error".into(),
            kernel: "k".into(),
            location: "kernels/k.cu:3".into(),
            accesses: accesses.into(),
            what: what.into(),
        }
    }

    #[test]
    fn each_kind_is_explained_once_in_the_language_asked_for() {
        let raw = finding("Analysis", "Race condition", "Write -> Read kernels/k.cu:5");
        let runs = [
            run(Tool::Racecheck, vec![raw.clone(), raw]),
            run(
                Tool::Sharedcheck,
                vec![finding(
                    "Shared",
                    "Reads shared memory no thread of the block wrote since it started",
                    "Read",
                )],
            ),
        ];
        let en = sanitizer(&runs, Lang::En);
        assert_eq!(en.matches("Usual cause").count(), 2, "{en}");
        assert!(
            en.contains("read-before-write") && en.contains("no thread wrote"),
            "{en}"
        );
        let ko = sanitizer(&runs, Lang::Ko);
        assert_eq!(ko.matches("흔한 원인").count(), 2, "{ko}");
        assert!(sanitizer(&[run(Tool::Memcheck, vec![])], Lang::En).is_empty());
    }

    #[test]
    fn a_gates_new_findings_are_explained_by_kind_once() {
        let f = crate::report::fixtures::gate_run();
        let all: Vec<&crate::gate::GateFinding> = f.findings.iter().collect();
        let text = gate(&all, Lang::En);
        assert!(text.starts_with("\nWhat the new findings mean:"), "{text}");
        let kinds = f.findings.len();
        assert!(
            kinds >= 2,
            "the fixture has a racecheck and a stress finding"
        );
        assert_eq!(text.matches("Usual cause").count(), 2, "{text}");
        assert!(gate(&all, Lang::Ko).contains("새 발견 사항의 뜻"));
        assert_eq!(gate(&[], Lang::En), "");
        // A kind with no explanation adds nothing, not an empty heading.
        let mut odd = f.findings[0].clone();
        odd.id.detector = "somethingnew".into();
        assert_eq!(gate(&[&odd], Lang::En), "");
    }

    #[test]
    fn a_stress_failure_is_explained_by_its_verdict_and_cause() {
        let mut r = crate::report::fixtures::stress_report();
        assert_eq!(stress_key(&r), None);
        assert_eq!(stress(&r, Lang::En), "");
        r.verdict = Verdict::Hang {
            deadline_s: 1.0,
            left_behind: false,
        };
        assert_eq!(stress_key(&r), Some("hang"));
        r.verdict = Verdict::Fault {
            error: "719".into(),
        };
        assert_eq!(stress_key(&r), Some("crash"));
        r.verdict = Verdict::Fail;
        assert_eq!(stress_key(&r), Some("wrong-result"));
        r.first_failure = Some(crate::run::trial::TrialOutcome {
            trial: 0,
            seed: 1,
            set_seed: 1,
            problem: "n=1".into(),
            result: TrialResult::Wrong(crate::run::oracle::Wrong {
                buffer: "out".into(),
                wrong: 1,
                total: 1,
                first: Vec::new(),
                diff: String::new(),
                input_modified: false,
                cause: Some("reads memory it never wrote: rerun under the same schedule".into()),
            }),
            micros: 1,
            set_micros: 0,
        });
        assert_eq!(stress_key(&r), Some("reads-never-written"));
        assert!(stress(&r, Lang::Ko).contains("고치는 법"));
    }
}
