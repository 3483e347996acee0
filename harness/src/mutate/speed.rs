//! Judging the mutants that change speed only (padding-removal, swizzle-removal): the battery
//! cannot kill them (the results stay right), so `mutate --run` runs `racegate perf` on them
//! instead: the mutant's kernel under Nsight Compute, judged by its original kernel's
//! `bank-conflicts=` expectation (`//@ perf:`). A broken `bank-conflicts=none` is a kill by
//! `perf`; a held one a survivor; without ncu, with the counters refused or a perf run failing,
//! the mutant is inconclusive, never a survivor.

use std::path::{Path, PathBuf};

use super::score::Outcome;
use crate::judge::perf::expect::{self, Judged, Outcome as Held};
use crate::judge::perf::ncu::{self, Unavailable};
use crate::judge::perf::runner::{self, PerfConfig};
use crate::source::case::{BankConflicts, PerfExpect};
use crate::source::catalog::{Case, Catalog, Detector};

/// What `mutate --run` needs to run `perf` on a mutant.
#[derive(Clone, Debug)]
pub struct PerfJudge {
    pub cfg: PerfConfig,
    /// The ncu to run, or why there is none.
    pub ncu: Result<PathBuf, Unavailable>,
}

impl PerfJudge {
    /// For `arch`, with the ncu [`ncu::find`] finds ([`PerfConfig::for_counters`]: the
    /// counters judge, not the time).
    pub fn new(arch: &str) -> PerfJudge {
        PerfJudge {
            cfg: PerfConfig::for_counters(arch),
            ncu: ncu::find(),
        }
    }
}

/// The expectations a speed-only mutant of `entry` is judged by: the `bank-conflicts=` ones its
/// original kernel declares (its other keys left out: padding does not move global accesses),
/// else `bank-conflicts=none` implied at `line`, the mutant's (the padding or swizzle removed
/// was there to avoid conflicts).
pub fn expectations(declared: &[PerfExpect], entry: &str, line: usize) -> Vec<PerfExpect> {
    let own: Vec<PerfExpect> = declared
        .iter()
        .filter(|e| e.applies_to(entry) && e.bank_conflicts.is_some())
        .map(|e| PerfExpect {
            coalesced: None,
            ..e.clone()
        })
        .collect();
    if !own.is_empty() {
        return own;
    }
    vec![PerfExpect {
        entry: Some(entry.to_string()),
        bank_conflicts: Some(BankConflicts::None),
        coalesced: None,
        line,
    }]
}

/// The mutant's outcome from its expectations, judged: a broken one kills it (by `perf`, the
/// lint as the detail), else one skipped leaves it inconclusive (the reason), else it survived.
pub fn outcome(judged: &[Judged]) -> Outcome {
    if let Some(lint) = judged.iter().find_map(|j| match &j.outcome {
        Held::Broken { lint, .. } => Some(lint),
        _ => None,
    }) {
        return Outcome::Killed {
            by: Detector::Perf,
            detail: lint.clone(),
        };
    }
    if let Some(why) = judged.iter().find_map(|j| match &j.outcome {
        Held::Skipped { reason } => Some(reason),
        _ => None,
    }) {
        return Outcome::Inconclusive {
            why: format!("perf could not measure: {why}"),
        };
    }
    if judged.is_empty() {
        return Outcome::Inconclusive {
            why: "perf: no expectation to judge the mutant by".into(),
        };
    }
    Outcome::Survived
}

/// Runs `perf` on each of `cases` (the mutant's cases: their files the mutant's) and judges the
/// mutant at `line` of `file` (the original, as reports name it). `perf` `None`: not set up.
pub fn judge(
    catalog: &Catalog,
    cases: &[Case],
    file: &str,
    line: usize,
    perf: Option<&PerfJudge>,
    exe: &Path,
) -> Outcome {
    let Some(p) = perf else {
        return Outcome::Inconclusive {
            why: "perf could not measure: not set up for this run".into(),
        };
    };
    let mut judged = Vec::new();
    for c in cases {
        let declared = match runner::expectations(catalog, c) {
            Ok(d) => d,
            Err(e) => {
                return Outcome::Inconclusive {
                    why: format!("perf on {}: {e}", c.name),
                }
            }
        };
        let expects = expectations(&declared, &c.entry.name, line);
        let counters = match &p.ncu {
            Err(u) => Err(u.to_string()),
            Ok(n) => match runner::measure(catalog, c, &p.cfg, exe, Ok(n), false) {
                Ok(r) => r.counters.ok_or_else(|| {
                    r.counters_unavailable
                        .map_or("ncu gave no counters".into(), |u| u.to_string())
                }),
                Err(e) => Err(format!("perf on {}: {e}", c.name)),
            },
        };
        judged.extend(expect::judge(
            &c.name,
            &c.entry.name,
            file,
            &expects,
            counters.as_ref().map_err(String::as_str),
        ));
    }
    outcome(&judged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::perf::ncu::Counters;
    use crate::source::case::parse_perf;

    fn judged(conflicts: Option<f64>) -> Vec<Judged> {
        let e = expectations(
            &[parse_perf("k bank-conflicts=none coalesced=yes", 20).unwrap()],
            "k",
            44,
        );
        let c = conflicts.map(|x| Counters {
            shared_ld_conflicts_per_request: Some(x),
            ..Counters::default()
        });
        let c = c.as_ref().ok_or("ncu not found: x");
        expect::judge("k", "k", "kernels/t.cu", &e, c)
    }

    #[test]
    fn conflicts_back_kill_none_held_survives_no_counters_is_inconclusive() {
        let killed = outcome(&judged(Some(31.0)));
        assert!(
            matches!(&killed, Outcome::Killed { by: Detector::Perf, detail }
                if detail.starts_with("kernels/t.cu:20: k: 31.00 shared bank conflicts")),
            "{killed:?}"
        );
        assert_eq!(outcome(&judged(Some(0.02))), Outcome::Survived);
        assert_eq!(
            outcome(&judged(None)),
            Outcome::Inconclusive {
                why: "perf could not measure: ncu not found: x".into()
            }
        );
        assert!(matches!(outcome(&[]), Outcome::Inconclusive { .. }));
    }

    #[test]
    fn only_bank_conflicts_count_and_none_is_implied_without_a_header() {
        let e = expectations(
            &[parse_perf("k bank-conflicts=none coalesced=yes", 20).unwrap()],
            "k",
            44,
        );
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].coalesced, e[0].line), (None, 20));
        let implied = expectations(&[parse_perf("other coalesced=yes", 3).unwrap()], "k", 44);
        assert_eq!(
            implied,
            [PerfExpect {
                entry: Some("k".into()),
                bank_conflicts: Some(BankConflicts::None),
                coalesced: None,
                line: 44,
            }]
        );
    }
}
