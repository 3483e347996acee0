//! Minimal repros: after stress fails, the smallest problem that still fails and a seed that
//! fails on its first trial, so a student or a reviewer gets a one-line command that shows the
//! bug at once, on a size they can reason about.
//!
//! The search, each step capped by a time budget:
//! 1. **size**: a ladder of sizes from the smallest in the range upward (powers of two and the
//!    sizes just around them, where boundary handling breaks), each run for a few trials; the
//!    smallest that fails, then a bisection down towards the largest size below it that passed;
//! 2. **seed**: at that size, seeds from the run's own until one fails on its first trial;
//! 3. **confirm**: that one-trial command rerun a few times; the rate at that point is reported,
//!    so a flaky failure is never mistaken for a fix nor a lucky pass for a shrink.
//!
//! The grid follows from the size in every family (blocks = ceil(size / block)), so the smallest
//! size is also the smallest grid. Every candidate runs through [`super::stress::run_in`] in the
//! caller's slot: one worker process (and its device context) for the whole search, the same
//! deadline and oracle as the failing run. A candidate that faults or hangs ends that worker;
//! the next candidate starts another (a fault's confirm reruns, which would each end theirs,
//! start a few at once in slots of their own). (A worker per candidate cost a device open and a context
//! teardown each: 1-6 s per candidate in the corpus gate of H200 run 26.)

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::stress::{self, StressConfig, StressReport};
use super::stress_session::Slot;
use super::trial::TrialOutcome;
use crate::errors::Result;
use crate::source::case::Case;
use crate::source::catalog::Catalog;
use crate::source::exercises::SizeChoice;

/// How hard to look.
#[derive(Clone, Debug)]
pub struct ShrinkConfig {
    /// Wall time for the whole search; what is found by then is reported.
    pub budget: Duration,
    /// Trials per size candidate.
    pub trials: u32,
    /// Seeds tried at the shrunk size for one that fails on its first trial.
    pub seeds: u32,
    /// Reruns of the final one-trial command.
    pub confirm: u32,
}

impl Default for ShrinkConfig {
    fn default() -> Self {
        ShrinkConfig {
            budget: Duration::from_secs(30),
            trials: 8,
            seeds: 24,
            confirm: 5,
        }
    }
}

/// What the search found.
#[derive(Clone, Debug, Serialize)]
pub struct Shrunk {
    /// The smallest failing size found (every dimension).
    pub size: u32,
    /// The range it was looked for in.
    pub range: (u32, u32),
    /// A seed whose first trial failed at that size, when one was found.
    pub seed: Option<u64>,
    /// The one-trial command (or, without such a seed, the few-trial one) that fails.
    pub repro: String,
    /// Reruns of `repro` that failed, of `confirm`.
    pub confirmed: u32,
    pub confirm: u32,
    /// The first failing trial at that point: problem, first wrong element, expected and got.
    pub failure: Option<TrialOutcome>,
    /// Each step, for people: `size 33: 2/8 failed`, ...
    pub steps: Vec<String>,
    /// Whether the budget ran out before the search finished.
    pub out_of_time: bool,
    pub seconds: f64,
    /// `repro` is the failing run's own line (the failing trial's input set again, up to that
    /// trial, at the size it drew): no size tried had a seed that fails on its first trial in
    /// most reruns.
    #[serde(default)]
    pub original_repro: bool,
    /// Trials of the command the reruns ran at `size` (1 with a first-trial seed).
    #[serde(default)]
    pub command_trials: u32,
}

/// The sizes tried, smallest first: the range's bounds, powers of two and their neighbours.
pub fn ladder(lo: u32, hi: u32) -> Vec<u32> {
    let mut v = vec![lo, hi];
    let mut p = 1u64;
    while p <= u64::from(hi) + 1 {
        for d in [p.saturating_sub(1), p, p + 1] {
            match u32::try_from(d) {
                Ok(d) if (lo..=hi).contains(&d) => v.push(d),
                _ => {}
            }
        }
        p *= 2;
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Shrinks a failure of `case` found with `base` (`original`: that run's repro line, which
/// reruns it up to its first failing trial; printed when no size has a seed that fails on its
/// first trial in most reruns). `None` when no
/// candidate failed within the budget (a failure too rare to shrink; the original repro stands).
pub fn shrink(
    slot: &mut Slot,
    catalog: &Catalog,
    case: &Case,
    base: &StressConfig,
    exe: &Path,
    cfg: &ShrinkConfig,
    original: Option<&str>,
) -> Result<Option<Shrunk>> {
    let start = Instant::now();
    let (lo, hi) = match base.size {
        Some(SizeChoice::Random { lo, hi }) => (lo, hi),
        Some(SizeChoice::Fixed(n)) => (1.min(n), n),
        _ => case.family().default_sizes(),
    };
    let mut steps = Vec::new();
    let left = |start: &Instant| cfg.budget.saturating_sub(start.elapsed());
    let try_size = |slot: &mut Slot,
                    size: u32,
                    seed: u64,
                    trials: u32,
                    steps: &mut Vec<String>|
     -> Result<StressReport> {
        let c = StressConfig {
            trials,
            seed,
            size: Some(SizeChoice::Fixed(size)),
            per_set: base.per_set,
            ..base.clone()
        };
        let r = stress::run_in(slot, catalog, case, &c, exe, |_| {})?;
        steps.push(format!(
            "size {size}, seed {seed}: {}/{} failed",
            r.failures, r.trials_run
        ));
        Ok(r)
    };
    // 1. The smallest failing size on the ladder, then bisect below it.
    let mut failing: Option<(u32, StressReport)> = None;
    let mut passed_below = lo.saturating_sub(1);
    for size in ladder(lo, hi) {
        if left(&start).is_zero() {
            break;
        }
        let r = try_size(slot, size, base.seed, cfg.trials, &mut steps)?;
        if r.flagged() {
            failing = Some((size, r));
            break;
        }
        passed_below = size;
    }
    let Some((mut size, mut found)) = failing else {
        return Ok(None);
    };
    // The ladder's first failing size: a reliable repro is looked for no higher than it.
    let first_failing = size;
    let mut failed_sizes = vec![size];
    while size > passed_below + 1 && !left(&start).is_zero() {
        let mid = passed_below + (size - passed_below) / 2;
        let r = try_size(slot, mid, base.seed, cfg.trials, &mut steps)?;
        if r.flagged() {
            (size, found) = (mid, r);
            failed_sizes.push(mid);
        } else {
            passed_below = mid;
        }
    }
    // 2. A seed that fails on its first trial at that size, and 3. the command a person will
    // run, confirmed by reruns. A repro that fails in at most half of its reruns is a poor one
    // (a schedule-dependent race at a tiny size: H200 run 23 shrank `transpose_padded::no_sync` to
    // size 3, failing 1 of 5): the next sizes up the ladder are tried, up to the size that first
    // failed, and the first whose repro fails in most reruns is kept (else the best seen).
    let mut best: Option<Candidate> = None;
    for at in candidates_above(size, &failed_sizes, first_failing, hi) {
        if left(&start).is_zero() && best.is_some() {
            break;
        }
        let mut seed = None;
        let mut at_found = None;
        for k in 0..cfg.seeds {
            if left(&start).is_zero() {
                break;
            }
            let s = base.seed.wrapping_add(u64::from(k) * 7919);
            let r = try_size(slot, at, s, 1, &mut steps)?;
            if r.flagged() {
                seed = Some(s);
                at_found = Some(r);
                break;
            }
        }
        let (cmd_seed, cmd_trials) = match seed {
            Some(s) => (s, 1),
            None => (base.seed, cfg.trials),
        };
        let final_cfg = StressConfig {
            trials: cmd_trials,
            seed: cmd_seed,
            size: Some(SizeChoice::Fixed(at)),
            per_set: base.per_set,
            ..base.clone()
        };
        let mut confirmed = 0;
        let mut tried = 0;
        while tried < cfg.confirm {
            if left(&start).is_zero() && tried > 0 {
                break;
            }
            let reruns = if slot.has_worker() {
                vec![stress::run_in(
                    slot,
                    catalog,
                    case,
                    &final_cfg,
                    exe,
                    |_| {},
                )?]
            } else {
                // The last run ended the worker (a fault does): each rerun would start its own
                // one after another (H200 run 28: five reruns of an out-of-bounds kernel took
                // 15 s of a 23 s stress job the gate's sanitizers waited for), so up to
                // [`SIDE_BY_SIDE`] start theirs at once. Out of budget, one more, as before.
                let n = match left(&start).is_zero() {
                    true => 1,
                    false => (cfg.confirm - tried).min(SIDE_BY_SIDE),
                };
                side_by_side(n, || {
                    stress::run_in(&mut Slot::default(), catalog, case, &final_cfg, exe, |_| {})
                })?
            };
            for r in reruns {
                tried += 1;
                if r.flagged() {
                    confirmed += 1;
                    // The failure shown for this size is one of its own.
                    at_found.get_or_insert(r);
                }
            }
        }
        steps.push(format!(
            "size {at}: confirmed {confirmed} of {tried} reruns failed"
        ));
        let c = Candidate {
            size: at,
            seed,
            // This size's own failing run, or (none failed here) the one that led here when it is
            // of this size.
            found: at_found.or_else(|| (size == at).then(|| found.clone())),
            cfg: final_cfg,
            trials: cmd_trials,
            confirmed,
            tried,
        };
        // Done at a repro that fails on its first trial in most reruns; a few-trial command
        // is kept only while nothing better turns up (H200 run 24: `even_lanes_barrier` at
        // size 98 had no first-trial seed, and its few-trial command then passed as pasted).
        let done = seed.is_some() && reliable(confirmed, tried);
        if best.as_ref().is_none_or(|b| better(c.rank(), b.rank())) {
            best = Some(c);
        }
        if done {
            break;
        }
    }
    let Some(Candidate {
        size,
        seed,
        found,
        cfg: final_cfg,
        trials: cmd_trials,
        confirmed,
        tried,
    }) = best
    else {
        return Ok(None);
    };
    steps.push(format!("confirmed: {confirmed} of {tried} reruns failed"));
    // The command exactly as confirmed: every trial of it, from its seed.
    let repro = stress::command_line(catalog, case, &final_cfg, final_cfg.seed, cmd_trials);
    // Without a seed that fails on its first trial in most reruns, the failing run's own repro
    // line (that run again, up to its first failing trial, at the size it drew) beats a smaller
    // command that fails only after a few trials or only now and then.
    let good = seed.is_some() && reliable(confirmed, tried);
    let (repro, fallback) = match (good, original) {
        (false, Some(line)) => (line.to_string(), true),
        _ => (repro, false),
    };
    Ok(Some(Shrunk {
        size,
        range: (lo, hi),
        seed,
        repro,
        confirmed,
        confirm: tried,
        failure: found.and_then(|f| f.first_failure),
        steps,
        out_of_time: left(&start).is_zero(),
        seconds: start.elapsed().as_secs_f64(),
        original_repro: fallback,
        command_trials: cmd_trials,
    }))
}

/// How many confirm reruns start their workers at once after a fault ended the slot's: each
/// opens a device context beside the gate's other processes.
const SIDE_BY_SIDE: u32 = 3;

/// `n` calls of `f` all at once (the pool's threads), their results in order (the first error,
/// if any).
fn side_by_side<T: Send>(n: u32, f: impl Fn() -> Result<T> + Sync) -> Result<Vec<T>> {
    let n = n as usize;
    crate::proc::pool::run_all(vec![(); n], n, |()| f(), |_| {})
        .into_iter()
        .collect()
}

/// Whether a repro (good: a seed that fails on its first trial and failed in most reruns;
/// failing reruns; reruns) is better than another: a good one beats one that is not; then the
/// larger share of failing reruns.
pub fn better(c: (bool, u32, u32), b: (bool, u32, u32)) -> bool {
    let (cc, ct) = (u64::from(c.1), u64::from(c.2.max(1)));
    let (bc, bt) = (u64::from(b.1), u64::from(b.2.max(1)));
    match (c.0, b.0) {
        (true, false) => true,
        (false, true) => false,
        _ => cc * bt > bc * ct,
    }
}

/// One size's repro and how it held up.
struct Candidate {
    size: u32,
    seed: Option<u64>,
    found: Option<StressReport>,
    cfg: StressConfig,
    trials: u32,
    confirmed: u32,
    tried: u32,
}

impl Candidate {
    fn rank(&self) -> (bool, u32, u32) {
        (
            self.seed.is_some() && reliable(self.confirmed, self.tried),
            self.confirmed,
            self.tried,
        )
    }
}

/// Whether a repro that failed in `confirmed` of `tried` reruns is a good one: most of them.
pub fn reliable(confirmed: u32, tried: u32) -> bool {
    tried > 0 && confirmed * 2 > tried
}

/// The sizes a repro is looked for at, smallest first: `size` (the smallest that failed), the
/// other sizes that failed on the way (`failed`: the ladder's first failing size `first` and the
/// bisection's), then the ladder's sizes above `first` up to `hi`, where more blocks give a race
/// more chances: a repro that fails in most reruns is worth a larger size.
pub fn candidates_above(size: u32, failed: &[u32], first: u32, hi: u32) -> Vec<u32> {
    let mut v: Vec<u32> = failed
        .iter()
        .copied()
        .filter(|&s| s >= size && s <= hi)
        .collect();
    v.push(size);
    v.extend(ladder(first.min(hi), hi).into_iter().filter(|&s| s > first));
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reruns_side_by_side_all_run_at_once_and_an_error_is_returned() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let (now, most) = (AtomicU32::new(0), AtomicU32::new(0));
        let out = side_by_side(4, || {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
            now.fetch_sub(1, Ordering::SeqCst);
            Ok(7)
        })
        .unwrap();
        assert_eq!(out, vec![7; 4]);
        assert_eq!(most.load(Ordering::SeqCst), 4, "not all at once");
        let calls = AtomicU32::new(0);
        let err = side_by_side(3, || match calls.fetch_add(1, Ordering::SeqCst) {
            1 => Err(crate::Error::Child("no worker".into())),
            _ => Ok(()),
        });
        assert!(err.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn the_ladder_starts_at_the_bottom_and_covers_the_boundaries() {
        let l = ladder(1, 1000);
        assert_eq!(l.first(), Some(&1));
        assert_eq!(l.last(), Some(&1000));
        for w in l.windows(2) {
            assert!(w[0] < w[1], "sorted and distinct: {l:?}");
        }
        for s in [31, 32, 33, 255, 256, 257, 511, 512, 513] {
            assert!(l.contains(&s), "{s} in {l:?}");
        }
        assert!(l.iter().all(|&s| (1..=1000).contains(&s)));
        assert_eq!(ladder(7, 7), vec![7]);
        let l = ladder(100, 130);
        assert_eq!(l, vec![100, 127, 128, 129, 130]);
        // The top of u32 does not overflow.
        let l = ladder(u32::MAX - 1, u32::MAX);
        assert_eq!(l, vec![u32::MAX - 1, u32::MAX]);
    }

    #[test]
    fn a_repro_counts_as_reliable_only_when_most_reruns_fail_and_larger_sizes_are_tried_in_order() {
        assert!(!reliable(1, 5), "run 23's transpose_padded::no_sync repro");
        assert!(!reliable(1, 3) && !reliable(2, 4) && !reliable(0, 0));
        assert!(reliable(3, 5) && reliable(5, 5) && reliable(1, 1));
        // Run 23's transpose_padded::no_sync: the ladder's first failure at 3 (2 passed), no
        // bisection: the repro is looked for at 3, then up the ladder (4, 5, 7, 8, 9, ...) to hi.
        let c = candidates_above(3, &[3], 3, 1024);
        assert_eq!(c.first(), Some(&3));
        assert_eq!(c.last(), Some(&1024));
        assert!(c.windows(2).all(|w| w[0] < w[1]), "{c:?}");
        assert!(c.contains(&4) && c.contains(&8) && c.contains(&33), "{c:?}");
        // Bisection between 16 (passed) and 33 (failed) down to 20: 20, the failing midpoint
        // 24, 33, then the ladder above 33.
        let c = candidates_above(20, &[33, 24, 20], 33, 100);
        assert_eq!(&c[..3], &[20, 24, 33], "{c:?}");
        assert!(
            c[3..].iter().all(|&s| s > 33 && s <= 100) && c.contains(&64),
            "{c:?}"
        );
        assert!(candidates_above(3, &[3], 3, 64).iter().all(|&s| s <= 64));
        assert_eq!(candidates_above(7, &[7], 7, 7), vec![7]);
    }

    /// A good repro (a first-trial seed that failed in most reruns) beats any other, whatever
    /// the other's rate; between two of a kind the higher rate wins, ties keep the first found.
    #[test]
    fn a_reliable_first_trial_repro_beats_the_rest() {
        for (c, t) in [(3, 5), (5, 5), (1, 1)] {
            assert!(reliable(c, t));
            for (bc, bt) in [(0, 5), (1, 5), (3, 3), (5, 5)] {
                assert!(
                    better((true, c, t), (false, bc, bt)),
                    "{c}/{t} vs {bc}/{bt}"
                );
                assert!(
                    !better((false, bc, bt), (true, c, t)),
                    "{bc}/{bt} vs {c}/{t}"
                );
            }
        }
        assert!(better((true, 4, 5), (true, 3, 5)));
        assert!(!better((true, 3, 5), (true, 3, 5)), "a tie keeps the first");
        assert!(better((false, 3, 3), (false, 4, 5)), "rates, not counts");
        assert!(!better((false, 0, 0), (false, 0, 5)));
    }
}
