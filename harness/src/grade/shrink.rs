//! Grading's minimal repro: after the correctness item saw wrong results, the smallest size of
//! the exercise's range that still gives them, so a student sees the smallest input that shows
//! the bug (issue 27; `stress` and `gate` shrink the same way with their own runner).
//!
//! One extra worker call: a ladder of sizes from the range's low end up (doubling, below the
//! high end), each size
//! run [`REPS`] times on fresh inputs (and so the three poisons in turn, `worker::problem_poison`),
//! with schedule jitter as the item runs. The smallest size where most of its runs are wrong is
//! the answer; a failure that shows only at sizes off the ladder, or only once in a while, finds
//! nothing, and the feedback says so. Hangs and faults are not shrunk (the item names them). It
//! changes no points: the item's score is decided before it runs.

use std::path::Path;

use super::items::Items;
use super::worker::{run_worker, WorkerResult};
use crate::errors::Result;
use crate::run::oracle::Wrong;
use crate::source::exercises::SizeChoice;

/// Runs per size on the ladder.
pub const REPS: usize = 3;
/// The most sizes on the ladder.
const RUNGS: usize = 24;
/// Trial numbers of the shrink's problems start here (their seeds differ from the item's).
const FIRST_TRIAL: u32 = 10_000;

/// The sizes tried, ascending: `lo`, then doubling while below `hi` (the item's own trials
/// already ran sizes up to it, and the largest are the slowest); at most [`RUNGS`]. A range of
/// one size is that size.
pub fn ladder(lo: u32, hi: u32) -> Vec<u32> {
    let lo = lo.max(1);
    let mut v = vec![lo];
    let mut s = lo.saturating_mul(2);
    while s < hi && v.len() < RUNGS {
        v.push(s);
        s = s.saturating_mul(2);
    }
    v
}

/// The first rung where most of its [`REPS`] runs were wrong, given how many were on each.
pub fn smallest(wrong_per_rung: &[usize]) -> Option<usize> {
    wrong_per_rung.iter().position(|&w| 2 * w > REPS)
}

impl Items<'_> {
    /// The smallest failing size on the ladder, as a line of the correctness item's detail.
    pub(super) fn shrink(&self, ptx: &Path) -> Result<String> {
        let (lo, hi) = self.spec.sizes;
        let sizes = ladder(lo, hi);
        let mut problems = Vec::new();
        let mut t = FIRST_TRIAL;
        for &s in &sizes {
            for _ in 0..REPS {
                problems.push(self.problem(t, SizeChoice::Fixed(s)));
                t += 1;
            }
        }
        let results = run_worker(self.cfg, self.exe, self.work, ptx, &problems, true, "shrink")?;
        let wrong: Vec<Option<Wrong>> = problems
            .iter()
            .zip(&results)
            .map(|(p, r)| match r {
                WorkerResult::Ran(actual) => crate::run::oracle::check(&p.buffers, actual),
                _ => None,
            })
            .collect();
        let per_rung: Vec<usize> = wrong
            .chunks(REPS)
            .map(|c| c.iter().filter(|w| w.is_some()).count())
            .collect();
        Ok(match smallest(&per_rung) {
            Some(r) => {
                let at = r * REPS;
                let (p, w) = (0..REPS)
                    .find_map(|k| wrong[at + k].as_ref().map(|w| (&problems[at + k], w)))
                    .expect("the rung has wrong runs");
                let first = w
                    .first
                    .first()
                    .map(|m| format!("; first: [{}] expected {}, got {}", m.index, m.expected, m.actual))
                    .unwrap_or_default();
                format!(
                    "smallest failing input found: {} ({} of {REPS} runs wrong{first})",
                    p.label, per_rung[r]
                )
            }
            None => format!(
                "no smaller failing input found (sizes {} tried, {REPS} runs each): the failure needs a size off that ladder, or shows only now and then",
                sizes
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_doubles_from_the_low_end_and_ends_at_the_high_end() {
        assert_eq!(ladder(1, 20), [1, 2, 4, 8, 16]);
        assert_eq!(ladder(100, 100), [100]);
        assert_eq!(ladder(0, 3), [1, 2]);
        assert_eq!(ladder(5, 2), [5], "an empty range is its low end");
        let wide = ladder(1, u32::MAX);
        assert!(wide.len() <= RUNGS && wide.windows(2).all(|w| w[0] < w[1]), "{wide:?}");
        assert!(wide.iter().all(|&s| s < u32::MAX), "{wide:?}");
    }

    #[test]
    fn the_smallest_rung_needs_most_of_its_runs_wrong() {
        assert_eq!(smallest(&[0, 1, 2, 3]), Some(2));
        assert_eq!(smallest(&[0, 1, 1]), None, "one wrong run in three is not a repro");
        assert_eq!(smallest(&[3, 0]), Some(0));
        assert_eq!(smallest(&[]), None);
    }
}
