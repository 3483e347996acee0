//! `//@ perf:` expectations judged against the counters, and one lint line per finding naming
//! the fix the course teaches.
//!
//! The thresholds are per shared-memory or global request (a warp's instruction), so they do not
//! depend on the problem size. Measured on an H200 with a 4096 x 4096 transpose through a 32 x 32
//! tile: `[32][32]` has about 31 shared-load conflicts per request (a 32-way conflict), `[32][33]`
//! about 0.05 (23,385 over 524,288 loads). "none" allows [`NONE_MAX`], "expected" needs
//! [`EXPECTED_MIN`]; between the two, neither holds.

use serde::Serialize;

use crate::source::case::{BankConflicts, PerfExpect};

use super::ncu::Counters;

/// The most bank conflicts per shared request that still count as none.
pub const NONE_MAX: f64 = 0.1;
/// The fewest bank conflicts per shared request that count as conflicting.
pub const EXPECTED_MIN: f64 = 1.0;
/// The most 32-byte sectors per global request that count as coalesced: 4 is a warp reading 32
/// consecutive 4-byte words (every catalog kernel moves 4-byte words; wider words need more).
pub const COALESCED_MAX: f64 = 4.5;

/// The fix the course teaches for shared-memory bank conflicts.
pub const CONFLICT_FIX: &str = "pad the tile to `[T][T+1]` so a column read moves one bank per \
row, or swizzle the column index (`tile[r][c ^ r]`)";
/// The fix the course teaches for uncoalesced global access.
pub const COALESCE_FIX: &str = "let consecutive threads touch consecutive addresses: stage the \
data through a shared-memory tile (transpose through shared memory) and read or write it along rows";

/// How one expectation came out.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    Held { measured: String },
    Broken { measured: String, lint: String },
    Skipped { reason: String },
}

/// One expectation of one kernel, judged.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Judged {
    pub case: String,
    /// `bank-conflicts=none`, `coalesced=yes`.
    pub expectation: String,
    /// `kernels/transpose.cu:21`: the header line that states it.
    pub at: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

fn fmt(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.2}"))
}

/// Judges every expectation in `expects` about `case` (entry `entry`, file `path`) against
/// `counters`, or lists each as skipped with `skipped` as the reason when there are none.
pub fn judge(
    case: &str,
    entry: &str,
    path: &str,
    expects: &[PerfExpect],
    counters: Result<&Counters, &str>,
) -> Vec<Judged> {
    let mut out = Vec::new();
    for e in expects.iter().filter(|e| e.applies_to(entry)) {
        let at = format!("{path}:{}", e.line);
        let mut push = |expectation: String, outcome: Outcome| {
            out.push(Judged {
                case: case.to_string(),
                expectation,
                at: at.clone(),
                outcome,
            })
        };
        if let Some(b) = e.bank_conflicts {
            let name = match b {
                BankConflicts::None => "bank-conflicts=none",
                BankConflicts::Expected => "bank-conflicts=expected",
            };
            push(name.into(), conflicts(case, &at, b, counters));
        }
        if let Some(c) = e.coalesced {
            let name = if c { "coalesced=yes" } else { "coalesced=no" };
            push(name.into(), coalesced(case, &at, c, counters));
        }
    }
    out
}

fn conflicts(case: &str, at: &str, want: BankConflicts, c: Result<&Counters, &str>) -> Outcome {
    let c = match c {
        Ok(c) => c,
        Err(why) => return skipped(why),
    };
    let worst = c.conflicts_per_request().unwrap_or(0.0);
    let measured = format!(
        "{} (loads) and {} (stores) shared bank conflicts per request",
        fmt(c.shared_ld_conflicts_per_request),
        fmt(c.shared_st_conflicts_per_request)
    );
    let held = match want {
        BankConflicts::None => worst <= NONE_MAX,
        BankConflicts::Expected => worst >= EXPECTED_MIN,
    };
    if held {
        return Outcome::Held { measured };
    }
    let lint = match want {
        BankConflicts::None => format!(
            "{at}: {case}: {worst:.2} shared bank conflicts per request, declared none (at most \
             {NONE_MAX}): {CONFLICT_FIX}"
        ),
        BankConflicts::Expected => format!(
            "{at}: {case}: {worst:.2} shared bank conflicts per request, declared expected (at \
             least {EXPECTED_MIN}): the conflicts the course shows are gone; if the tile is now \
             padded or swizzled, declare `bank-conflicts=none`"
        ),
    };
    Outcome::Broken { measured, lint }
}

fn coalesced(case: &str, at: &str, want: bool, c: Result<&Counters, &str>) -> Outcome {
    let c = match c {
        Ok(c) => c,
        Err(why) => return skipped(why),
    };
    let worst = c.sectors_per_request().unwrap_or(0.0);
    let measured = format!(
        "{} (loads) and {} (stores) global sectors per request",
        fmt(c.global_ld_sectors_per_request),
        fmt(c.global_st_sectors_per_request)
    );
    if (worst <= COALESCED_MAX) == want {
        return Outcome::Held { measured };
    }
    let lint = if want {
        format!(
            "{at}: {case}: {worst:.2} global sectors per request, declared coalesced (at most \
             {COALESCED_MAX}): {COALESCE_FIX}"
        )
    } else {
        format!(
            "{at}: {case}: {worst:.2} global sectors per request, declared not coalesced: the \
             access is coalesced now; declare `coalesced=yes`"
        )
    };
    Outcome::Broken { measured, lint }
}

fn skipped(why: &str) -> Outcome {
    Outcome::Skipped {
        reason: why.to_string(),
    }
}

/// Lint lines for a kernel that declares nothing but conflicts or scatters anyway (a note,
/// never a failure): the finding and the course's fix.
pub fn notes(case: &str, path: &str, c: &Counters) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(w) = c.conflicts_per_request().filter(|w| *w >= EXPECTED_MIN) {
        out.push(format!(
            "{path}: {case}: {w:.2} shared bank conflicts per request: {CONFLICT_FIX}"
        ));
    }
    if let Some(s) = c.sectors_per_request().filter(|s| *s > COALESCED_MAX) {
        out.push(format!(
            "{path}: {case}: {s:.2} global sectors per request (4 is ideal for 4-byte words): \
             {COALESCE_FIX}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::case::parse_perf;

    fn counters(ld_conf: f64, sectors: f64) -> Counters {
        Counters {
            launches: 1,
            shared_ld_conflicts_per_request: Some(ld_conf),
            shared_st_conflicts_per_request: Some(0.0),
            global_ld_sectors_per_request: Some(4.0),
            global_st_sectors_per_request: Some(sectors),
            ..Counters::default()
        }
    }

    #[test]
    fn none_holds_near_zero_and_breaks_with_a_lint_naming_the_fix() {
        let e = [parse_perf("k bank-conflicts=none coalesced=yes", 21).unwrap()];
        let ok = judge("k", "k", "kernels/t.cu", &e, Ok(&counters(0.045, 4.0)));
        assert!(
            ok.iter().all(|j| matches!(j.outcome, Outcome::Held { .. })),
            "{ok:?}"
        );
        let bad = judge("k", "k", "kernels/t.cu", &e, Ok(&counters(31.2, 32.0)));
        let lints: Vec<&str> = bad
            .iter()
            .filter_map(|j| match &j.outcome {
                Outcome::Broken { lint, .. } => Some(lint.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(lints.len(), 2, "{bad:?}");
        assert!(lints[0].starts_with("kernels/t.cu:21: k: 31.20 shared bank conflicts"));
        assert!(lints[0].contains("[T][T+1]") && lints[0].contains("swizzle"));
        assert!(lints[1].contains("32.00 global sectors per request"));
    }

    #[test]
    fn expected_needs_real_conflicts_and_other_entries_are_not_judged() {
        let e = [parse_perf("k bank-conflicts=expected", 3).unwrap()];
        let held = judge("k", "k", "f.cu", &e, Ok(&counters(31.0, 4.0)));
        assert!(matches!(held[0].outcome, Outcome::Held { .. }));
        let broken = judge("k", "k", "f.cu", &e, Ok(&counters(0.5, 4.0)));
        assert!(matches!(broken[0].outcome, Outcome::Broken { .. }));
        assert!(judge("other", "other", "f.cu", &e, Ok(&counters(0.0, 4.0))).is_empty());
    }

    #[test]
    fn without_counters_every_expectation_is_skipped_with_the_reason() {
        let e = [parse_perf("bank-conflicts=none coalesced=no", 3).unwrap()];
        let j = judge("k", "k", "f.cu", &e, Err("ncu not found: x"));
        assert_eq!(j.len(), 2);
        for x in j {
            assert_eq!(
                x.outcome,
                Outcome::Skipped {
                    reason: "ncu not found: x".into()
                }
            );
        }
    }
}
