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

use std::collections::{BTreeMap, BTreeSet};

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

/// How often each kernel (its mangled name) was launched in one run of the program, and the
/// kernels whose every counted launch had no shared memory (static or dynamic, both known):
/// racecheck, which checks shared memory only, has nothing to check in them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchCounts(pub BTreeMap<String, u64>, pub BTreeSet<String>);

impl LaunchCounts {
    /// The counts the injected tool wrote (`{"launch_counts":[{"kernel":K,"launches":N},...]}`
    /// lines, one per run of the program): per kernel, the fewest launches any run made (a
    /// kernel missing from a run made none there), so that a pass that skips to the last
    /// launches skips no further than a run goes. `None` when no run wrote any (the tool was
    /// not loaded, or the program launched nothing).
    pub fn from_report(text: &str) -> Option<LaunchCounts> {
        let mut runs: Vec<BTreeMap<String, u64>> = Vec::new();
        // Per kernel, whether every run that launched it saw it use no shared memory (a count
        // without the "shared" field, from an older tool, or -1, is not known to be none).
        let mut none_shared: BTreeMap<String, bool> = BTreeMap::new();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let Some(counts) = v.get("launch_counts").and_then(|c| c.as_array()) else {
                continue;
            };
            for c in counts {
                if let Some(k) = c.get("kernel").and_then(|k| k.as_str()) {
                    let none = c.get("shared").and_then(serde_json::Value::as_i64) == Some(0);
                    *none_shared.entry(k.to_string()).or_insert(true) &= none;
                }
            }
            runs.push(
                counts
                    .iter()
                    .filter_map(|c| {
                        Some((
                            c.get("kernel")?.as_str()?.to_string(),
                            c.get("launches")?.as_u64()?,
                        ))
                    })
                    .collect(),
            );
        }
        let shared_free = none_shared
            .into_iter()
            .filter_map(|(k, none)| none.then_some(k))
            .collect();
        let names: std::collections::BTreeSet<&String> =
            runs.iter().flat_map(BTreeMap::keys).collect();
        let out = names
            .into_iter()
            .map(|k| {
                let fewest = runs.iter().map(|r| r.get(k).copied().unwrap_or(0)).min();
                (k.clone(), fewest.unwrap_or(0))
            })
            .collect();
        (!runs.is_empty()).then_some(LaunchCounts(out, shared_free))
    }
}

/// Sampled kernels that get a run of their own for their first launches; the rest share one.
pub const OWN_PASSES: usize = 6;

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
    let mut sampled: Vec<(&String, u64)> = counts
        .0
        .iter()
        .filter(|(_, &n)| n > sampling.first + sampling.later)
        .map(|(k, &n)| (k, n))
        .collect();
    // The most launched first (then by name, so the plan is stable).
    sampled.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
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
    // A run of its own for the first launches of each of the most launched kernels; the others
    // share one (compute-sanitizer counts their launches together): the runs stay bounded
    // whatever the number of kernels.
    for (k, n) in sampled.iter().take(OWN_PASSES) {
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
    let shared = &sampled[sampled.len().min(OWN_PASSES)..];
    if !shared.is_empty() {
        let mut args = Vec::new();
        for (k, _) in shared {
            args.push("--kernel-name".to_string());
            args.push(format!("kne={k}"));
        }
        let count = sampling.first * shared.len() as u64;
        args.extend(["--launch-count".to_string(), count.to_string()]);
        passes.push(Pass {
            args,
            judged: format!(
                "the first {count} launches of {} other sampled kernel(s) together",
                shared.len()
            ),
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
                "about the last {last} of the {total} launches of the sampled kernel(s) together \
                 (counted in the runs under jitter)"
            ),
        });
    }
    passes
}

/// The runs of one tool's passes as the gate reads them: one run with every pass's findings
/// (or clean), and, when a pass hung or decided nothing, that pass's run beside it, so that
/// neither hides the other (a hang first, else the first undecided pass, naming it). Times are
/// added on the first; logs and commands kept pass by pass.
pub fn merge(runs: Vec<(Pass, SanitizerRun)>) -> Vec<SanitizerRun> {
    if runs.len() <= 1 {
        return runs.into_iter().map(|(_, r)| r).collect();
    }
    let findings: Vec<Finding> = runs
        .iter()
        .flat_map(|(_, r)| match &r.outcome {
            Outcome::Findings(f) => f.clone(),
            _ => Vec::new(),
        })
        .collect();
    let undecided = runs
        .iter()
        .find(|(_, r)| matches!(r.outcome, Outcome::Hang { .. }))
        .or_else(|| {
            runs.iter()
                .find(|(_, r)| matches!(r.outcome, Outcome::Inconclusive(_)))
        })
        .map(|(p, r)| {
            let mut r = r.clone();
            if let Outcome::Inconclusive(why) = &r.outcome {
                r.outcome = Outcome::Inconclusive(format!("{why} (the run checking {})", p.judged));
            }
            r.seconds = 0.0;
            r
        });
    let base = &runs[0].1;
    let whole = SanitizerRun {
        case: base.case.clone(),
        tool: base.tool,
        exit: runs
            .iter()
            .map(|(_, r)| r.exit.as_str())
            .find(|e| !e.starts_with("exit 0"))
            .unwrap_or(&base.exit)
            .to_string(),
        seconds: runs.iter().map(|(_, r)| r.seconds).sum(),
        log: runs
            .iter()
            .map(|(p, r)| format!("== the run checking {}\n{}", p.judged, r.log))
            .collect::<Vec<_>>()
            .join("\n"),
        command: runs
            .iter()
            .map(|(_, r)| r.command.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        outcome: match findings.is_empty() {
            true => Outcome::Clean,
            false => Outcome::Findings(findings),
        },
    };
    match undecided {
        // Nothing found: the undecided pass alone says what the tool concluded (never clean).
        Some(u) if matches!(whole.outcome, Outcome::Clean) => vec![SanitizerRun {
            seconds: whole.seconds,
            log: whole.log,
            command: whole.command,
            ..u
        }],
        Some(u) => vec![whole, u],
        None => vec![whole],
    }
}

/// How many of a kernel's `n` launches racegate's own tools check, without walking them: the
/// injected tool's rule (`harness/globalcheck/tool.cpp`, `RACEGATE_GC_SAMPLE`) checks the first
/// `first` launches of each kernel, then each whose number is a power of two.
pub fn own_tools_checked(n: u64, first: u64) -> u64 {
    let powers = |m: u64| if m == 0 { 0 } else { u64::from(m.ilog2()) + 1 };
    n.min(first) + powers(n).saturating_sub(powers(first.min(n)))
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

    /// Whether racegate's own tools check the `nth` launch (from 1) of a kernel when sampling
    /// `first`: the first ones, then each whose number is a power of two (the same rule as the
    /// injected tool's, `harness/globalcheck/tool.cpp`).
    pub fn own_tools_check(nth: u64, first: u64) -> bool {
        nth <= first || nth.is_power_of_two()
    }

    fn counts(of: &[(&str, u64)]) -> LaunchCounts {
        LaunchCounts(
            of.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            BTreeSet::new(),
        )
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
            let c = LaunchCounts(of.iter().cloned().collect(), BTreeSet::new());
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
        // The fewest per kernel: `_Z1gv` was not launched in the second run.
        assert_eq!(c, counts(&[("_Z1kv", 7), ("_Z1gv", 0)]));
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
        assert!(merge(Vec::new()).is_empty());
        let one = |v: Vec<SanitizerRun>| -> SanitizerRun {
            assert_eq!(v.len(), 1, "{v:?}");
            v.into_iter().next().expect("one")
        };
        let clean = one(merge(vec![
            (pass("a"), run(Outcome::Clean, 1.0)),
            (pass("b"), run(Outcome::Clean, 2.0)),
        ]));
        assert!(matches!(clean.outcome, Outcome::Clean));
        assert_eq!(clean.seconds, 3.0);
        assert!(clean.log.contains("== the run checking b"), "{}", clean.log);
        // Findings of every pass, together.
        let found = one(merge(vec![
            (pass("a"), run(Outcome::Findings(vec![finding(3)]), 1.0)),
            (pass("b"), run(Outcome::Clean, 1.0)),
            (pass("c"), run(Outcome::Findings(vec![finding(9)]), 1.0)),
        ]));
        match found.outcome {
            Outcome::Findings(f) => assert_eq!(f.len(), 2),
            o => panic!("{o:?}"),
        }
        // A pass that decided nothing beside one that found: both kept (the findings are not
        // hidden, the tool is not called clean), the undecided one naming its pass.
        let both = merge(vec![
            (pass("a"), run(Outcome::Findings(vec![finding(3)]), 1.0)),
            (
                pass("the last ones"),
                run(Outcome::Inconclusive("no XML".into()), 1.0),
            ),
        ]);
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(matches!(&both[0].outcome, Outcome::Findings(f) if f.len() == 1));
        match &both[1].outcome {
            Outcome::Inconclusive(w) => assert!(w.contains("the last ones"), "{w}"),
            o => panic!("{o:?}"),
        }
        // Nothing found and one undecided: that alone, never clean.
        let undecided = one(merge(vec![
            (pass("a"), run(Outcome::Clean, 1.0)),
            (pass("b"), run(Outcome::Inconclusive("x".into()), 1.0)),
        ]));
        assert!(matches!(undecided.outcome, Outcome::Inconclusive(_)));
        // A hang is the undecided one kept, before an inconclusive.
        let hung = merge(vec![
            (pass("a"), run(Outcome::Inconclusive("x".into()), 1.0)),
            (pass("b"), run(Outcome::Findings(vec![finding(3)]), 1.0)),
            (
                pass("c"),
                run(
                    Outcome::Hang {
                        left_behind: false,
                        said: None,
                    },
                    9.0,
                ),
            ),
        ]);
        assert_eq!(hung.len(), 2);
        assert!(matches!(hung[1].outcome, Outcome::Hang { .. }));
    }

    #[test]
    fn the_runs_stay_bounded_whatever_the_number_of_kernels() {
        let many: Vec<(String, u64)> = (0..100).map(|i| (format!("_Z{i}k"), 50 + i)).collect();
        let c = LaunchCounts(many.into_iter().collect(), BTreeSet::new());
        let p = plan(&c, Sampling::default());
        // The rest, OWN_PASSES kernels alone, the others together, the last launches.
        assert_eq!(p.len(), 1 + OWN_PASSES + 1 + 1, "{p:?}");
        // The most launched kernels get their own runs.
        assert!(p[1].args.contains(&"kne=_Z99k".to_string()), "{p:?}");
    }

    #[test]
    fn the_count_of_own_tools_checks_is_the_rule_counted() {
        for first in 0..12 {
            for n in 0..300 {
                let walked = (1..=n).filter(|&i| own_tools_check(i, first)).count() as u64;
                assert_eq!(own_tools_checked(n, first), walked, "n {n} first {first}");
            }
        }
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
