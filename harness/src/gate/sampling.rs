//! Launch sampling for a program's gate: a benchmark loop that launches the same kernels hundreds
//! of times is checked on each kernel's first launches and a few later ones, not on every launch
//! (under racecheck that multiplied the tool's cost past any deadline).
//!
//! The program's kernels and how often each was launched come from its runs under jitter
//! (racegate's injected tool counts the launches per kernel and writes them at exit,
//! [`LaunchCounts::from_report`]). compute-sanitizer's kernel filters then say which launches a
//! run checks: `--kernel-name kne=NAME` / `--kernel-name-exclude kne=NAME` choose kernels, and
//! `--launch-skip`/`--launch-count` count matching launches only. [`plan`] makes the passes:
//! one over every kernel launched few times (and any kernel the counted runs did not see), one
//! per sampled kernel over its first launches, and one over the last launches of the sampled
//! kernels together. racegate's own tools sample in the injected tool itself
//! (`RACEGATE_GC_SAMPLE`): each kernel's first launches, then those whose number is a power of
//! two. `--every-launch` turns sampling off.

use std::collections::BTreeMap;

use crate::judge::sanitize::normalize::Finding;
use crate::judge::sanitize::{Outcome, SanitizerRun};

/// How many launches of a kernel are checked when it is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// Its first launches.
    pub first: u64,
    /// And this many of its last ones.
    pub later: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { first: 4, later: 2 }
    }
}

/// How often each kernel (its mangled name) was launched in one run of the program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchCounts(pub BTreeMap<String, u64>);

impl LaunchCounts {
    /// The counts the injected tool wrote (`{"launch_counts":[{"kernel":K,"launches":N},...]}`
    /// lines, one per run of the program): per kernel, the most launches any run made. `None`
    /// when no run wrote any (the tool was not loaded, or the program launched nothing).
    pub fn from_report(text: &str) -> Option<LaunchCounts> {
        let mut out = BTreeMap::new();
        let mut seen = false;
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some(counts) = v.get("launch_counts").and_then(|c| c.as_array()) else {
                continue;
            };
            seen = true;
            for c in counts {
                let (Some(k), Some(n)) = (
                    c.get("kernel").and_then(|k| k.as_str()),
                    c.get("launches").and_then(|n| n.as_u64()),
                ) else {
                    continue;
                };
                let e = out.entry(k.to_string()).or_insert(0);
                *e = (*e).max(n);
            }
        }
        seen.then_some(LaunchCounts(out))
    }
}

/// One compute-sanitizer run of a sampled plan: the filter arguments, and what it checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Arguments put before the target (`--kernel-name ...`, `--launch-count ...`).
    pub args: Vec<String>,
    /// What it checks, for the report.
    pub judged: String,
}

/// The passes that check `counts` as `sampling` says: a single pass with no filter when no
/// kernel is launched more than `first + later` times (every launch is checked); else one pass
/// over every other kernel, one per sampled kernel over its first launches, and one over the
/// last `later` launches of each sampled kernel (together: compute-sanitizer counts the launches
/// of all the kernels a pass names).
pub fn plan(counts: &LaunchCounts, sampling: Sampling) -> Vec<Pass> {
    let sampled: Vec<(&String, u64)> = counts
        .0
        .iter()
        .filter(|(_, &n)| n > sampling.first + sampling.later)
        .map(|(k, &n)| (k, n))
        .collect();
    if sampled.is_empty() {
        return vec![Pass {
            args: Vec::new(),
            judged: "every launch".into(),
        }];
    }
    let mut passes = Vec::new();
    // Every kernel launched few times, and any the counted runs did not see, whole.
    let mut rest = Vec::new();
    for (k, _) in &sampled {
        rest.push("--kernel-name-exclude".to_string());
        rest.push(format!("kne={k}"));
    }
    passes.push(Pass {
        args: rest,
        judged: "every launch of the kernels launched at most a few times".into(),
    });
    for (k, n) in &sampled {
        passes.push(Pass {
            args: vec![
                "--kernel-name".into(),
                format!("kne={k}"),
                "--launch-count".into(),
                sampling.first.to_string(),
            ],
            judged: format!("launches 1-{} of {n} of {k}", sampling.first),
        });
    }
    let total: u64 = sampled.iter().map(|(_, n)| n).sum();
    let last = sampling.later * sampled.len() as u64;
    if last > 0 {
        let mut args = Vec::new();
        for (k, _) in &sampled {
            args.push("--kernel-name".to_string());
            args.push(format!("kne={k}"));
        }
        args.extend([
            "--launch-skip".to_string(),
            total.saturating_sub(last).to_string(),
            "--launch-count".to_string(),
            last.to_string(),
        ]);
        passes.push(Pass {
            args,
            judged: format!(
                "the last {last} of the {total} launches of the sampled kernel(s) together"
            ),
        });
    }
    passes
}

/// The runs of one tool's passes as one run: a hang if any pass hung (the first), else
/// inconclusive if any pass decided nothing (naming which), else every pass's findings, else
/// clean; times added, logs and commands kept pass by pass.
pub fn merge(runs: Vec<(Pass, SanitizerRun)>) -> Option<SanitizerRun> {
    let mut it = runs.into_iter();
    let (p0, first) = it.next()?;
    let mut all = vec![(p0, first)];
    all.extend(it);
    if all.len() == 1 {
        return all.pop().map(|(_, r)| r);
    }
    let outcome = if let Some((_, r)) = all
        .iter()
        .find(|(_, r)| matches!(r.outcome, Outcome::Hang { .. }))
    {
        r.outcome.clone()
    } else if let Some((p, r)) = all.iter().find_map(|(p, r)| match &r.outcome {
        Outcome::Inconclusive(why) => Some((p, why)),
        _ => None,
    }) {
        Outcome::Inconclusive(format!("{r} (the run checking {})", p.judged))
    } else {
        let findings: Vec<Finding> = all
            .iter()
            .flat_map(|(_, r)| match &r.outcome {
                Outcome::Findings(f) => f.clone(),
                _ => Vec::new(),
            })
            .collect();
        match findings.is_empty() {
            true => Outcome::Clean,
            false => Outcome::Findings(findings),
        }
    };
    let (_, base) = &all[0];
    Some(SanitizerRun {
        case: base.case.clone(),
        tool: base.tool,
        exit: all
            .iter()
            .map(|(_, r)| r.exit.as_str())
            .find(|e| !e.starts_with("exit 0"))
            .unwrap_or(&base.exit)
            .to_string(),
        seconds: all.iter().map(|(_, r)| r.seconds).sum(),
        log: all
            .iter()
            .map(|(p, r)| format!("== the run checking {}\n{}", p.judged, r.log))
            .collect::<Vec<_>>()
            .join("\n"),
        command: all
            .iter()
            .map(|(_, r)| r.command.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        outcome,
    })
}

/// Whether racegate's own tools check the `nth` launch (from 1) of a kernel when sampling
/// `first`: the first ones, then each whose number is a power of two (the same rule as the
/// injected tool's, `harness/globalcheck/tool.cpp`).
pub fn own_tools_check(nth: u64, first: u64) -> bool {
    nth <= first || nth.is_power_of_two()
}

/// The note that says what a sampled plan checked.
pub fn describe(subject: &str, tool: &str, passes: &[Pass]) -> String {
    let what: Vec<&str> = passes.iter().map(|p| p.judged.as_str()).collect();
    format!(
        "{subject}: {tool} sampled launches in {} run(s): {} (--every-launch checks every launch)",
        passes.len(),
        what.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(of: &[(&str, u64)]) -> LaunchCounts {
        LaunchCounts(of.iter().map(|(k, n)| (k.to_string(), *n)).collect())
    }

    #[test]
    fn few_launches_are_all_checked_in_one_unfiltered_run() {
        let s = Sampling::default();
        for c in [counts(&[]), counts(&[("_Z1kPf", 6), ("_Z1gv", 1)])] {
            let p = plan(&c, s);
            assert_eq!(p.len(), 1);
            assert!(p[0].args.is_empty(), "{p:?}");
        }
    }

    #[test]
    fn a_benchmark_loop_is_checked_on_each_kernels_first_and_last_launches() {
        let s = Sampling { first: 4, later: 2 };
        let p = plan(
            &counts(&[("_Z3addPf", 500), ("_Z4initPf", 1), ("_Z3mulPf", 300)]),
            s,
        );
        // The rest, one per sampled kernel, and the last launches together.
        assert_eq!(p.len(), 4, "{p:?}");
        assert_eq!(
            p[0].args,
            [
                "--kernel-name-exclude",
                "kne=_Z3addPf",
                "--kernel-name-exclude",
                "kne=_Z3mulPf"
            ]
        );
        assert_eq!(
            p[1].args,
            ["--kernel-name", "kne=_Z3addPf", "--launch-count", "4"]
        );
        assert_eq!(
            p[2].args,
            ["--kernel-name", "kne=_Z3mulPf", "--launch-count", "4"]
        );
        assert_eq!(
            p[3].args,
            [
                "--kernel-name",
                "kne=_Z3addPf",
                "--kernel-name",
                "kne=_Z3mulPf",
                "--launch-skip",
                "796",
                "--launch-count",
                "4"
            ]
        );
        assert!(p[1].judged.contains("launches 1-4 of 500"), "{p:?}");
        // What is checked is bounded whatever the loop's length: the rest's launches, plus
        // first + later per sampled kernel.
        let checked: u64 = 1 + 2 * (4 + 2);
        assert!(checked < 800 / 10);
    }

    #[test]
    fn every_kernel_is_in_exactly_one_pass_kind_and_the_plan_is_stable() {
        // Generated counts: a kernel is sampled iff it is launched more than first + later.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for round in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 6) as usize;
            let of: Vec<(String, u64)> = (0..n)
                .map(|i| (format!("_Z{i}k{round}"), (x >> (8 * i)) % 40))
                .collect();
            let c = LaunchCounts(of.iter().cloned().collect());
            let s = Sampling {
                first: 1 + x % 5,
                later: x % 3,
            };
            let p = plan(&c, s);
            assert_eq!(p, plan(&c, s), "stable");
            let sampled: Vec<&String> =
                c.0.iter()
                    .filter(|(_, &k)| k > s.first + s.later)
                    .map(|(k, _)| k)
                    .collect();
            if sampled.is_empty() {
                assert_eq!(p.len(), 1);
                continue;
            }
            for k in &sampled {
                let name = format!("kne={k}");
                // Excluded from the rest, and first-checked in a pass of its own.
                assert!(p[0].args.contains(&name), "{p:?}");
                assert_eq!(
                    p.iter()
                        .filter(|q| q.args.len() == 4
                            && q.args[0] == "--kernel-name"
                            && q.args[1] == name)
                        .count(),
                    1,
                    "{p:?}"
                );
            }
            for (k, _) in c.0.iter().filter(|(_, &n)| n <= s.first + s.later) {
                assert!(
                    p.iter().all(|q| !q.args.contains(&format!("kne={k}"))),
                    "a kernel launched few times is in the rest only: {p:?}"
                );
            }
            let expected = 1 + sampled.len() + usize::from(s.later > 0);
            assert_eq!(p.len(), expected, "{p:?}");
        }
    }

    #[test]
    fn the_counts_are_read_from_the_tools_report_lines() {
        let text = concat!(
            "{\"tool\":\"globalcheck\",\"mode\":2}\n",
            "{\"launch_counts\":[{\"kernel\":\"_Z1kv\",\"launches\":7},{\"kernel\":\"_Z1gv\",\"launches\":1}]}\n",
            "not json\n",
            "{\"launch_counts\":[{\"kernel\":\"_Z1kv\",\"launches\":9}]}\n"
        );
        let c = LaunchCounts::from_report(text).unwrap();
        assert_eq!(c, counts(&[("_Z1kv", 9), ("_Z1gv", 1)]));
        assert_eq!(LaunchCounts::from_report("{\"tool\":\"x\"}\n"), None);
    }

    fn run(outcome: Outcome, seconds: f64) -> SanitizerRun {
        SanitizerRun {
            case: "p".into(),
            tool: crate::judge::sanitize::Tool::Racecheck,
            outcome,
            exit: "exit 0".into(),
            seconds,
            log: "log".into(),
            command: "cmd".into(),
        }
    }

    fn pass(judged: &str) -> Pass {
        Pass {
            args: Vec::new(),
            judged: judged.into(),
        }
    }

    #[test]
    fn the_passes_of_a_tool_are_judged_as_one_run() {
        let finding = |line: u32| Finding {
            kind: "Hazard".into(),
            level: "Error".into(),
            kernel: "k".into(),
            location: format!("k.cu:{line}"),
            accesses: String::new(),
            what: "Race condition".into(),
        };
        assert!(merge(Vec::new()).is_none());
        let clean = merge(vec![
            (pass("a"), run(Outcome::Clean, 1.0)),
            (pass("b"), run(Outcome::Clean, 2.0)),
        ])
        .unwrap();
        assert!(matches!(clean.outcome, Outcome::Clean));
        assert_eq!(clean.seconds, 3.0);
        assert!(clean.log.contains("== the run checking b"), "{}", clean.log);
        // Findings of every pass, together.
        let found = merge(vec![
            (pass("a"), run(Outcome::Findings(vec![finding(3)]), 1.0)),
            (pass("b"), run(Outcome::Clean, 1.0)),
            (pass("c"), run(Outcome::Findings(vec![finding(9)]), 1.0)),
        ])
        .unwrap();
        match found.outcome {
            Outcome::Findings(f) => assert_eq!(f.len(), 2),
            o => panic!("{o:?}"),
        }
        // One pass that decided nothing: the whole is inconclusive, naming it; never clean.
        let undecided = merge(vec![
            (pass("a"), run(Outcome::Findings(vec![finding(3)]), 1.0)),
            (
                pass("the last ones"),
                run(Outcome::Inconclusive("no XML".into()), 1.0),
            ),
        ])
        .unwrap();
        match undecided.outcome {
            Outcome::Inconclusive(w) => assert!(w.contains("the last ones"), "{w}"),
            o => panic!("{o:?}"),
        }
        // A hang wins.
        let hung = merge(vec![
            (pass("a"), run(Outcome::Inconclusive("x".into()), 1.0)),
            (
                pass("b"),
                run(
                    Outcome::Hang {
                        left_behind: false,
                        said: None,
                    },
                    9.0,
                ),
            ),
        ])
        .unwrap();
        assert!(matches!(hung.outcome, Outcome::Hang { .. }));
    }

    #[test]
    fn own_tools_check_the_first_launches_then_powers_of_two() {
        let checked: Vec<u64> = (1..=40).filter(|&n| own_tools_check(n, 4)).collect();
        assert_eq!(checked, [1, 2, 3, 4, 8, 16, 32]);
        // A loop of a million launches: about first + 20 checked.
        assert_eq!(
            (1..=1_000_000).filter(|&n| own_tools_check(n, 4)).count(),
            4 + 17
        );
    }
}
