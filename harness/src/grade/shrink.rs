//! Grading's minimal repro: after the correctness item saw wrong results (and no hang or fault),
//! the smallest size of the exercise's range that still gives them, so a student sees the
//! smallest input that shows the bug (`stress` and `gate` shrink with their own runner).
//!
//! One extra worker call, bounded: the sizes of [`crate::run::shrink::ladder`] below the range's
//! high end (the ends, powers of two and their neighbours, where ragged blocks and tiles break),
//! ascending, each run [`REPS`] times on fresh inputs with its own schedule (jitter on, as the
//! item runs) and the poisons in turn; at most [`IDLE`] per problem and [`BUDGET`] in all. The
//! answer is the smallest size with a wrong run (the oracle is exact: one wrong run is the bug).
//! The search stops at a hang, a fault or the budget and says where. It changes no points (the
//! item's score is decided before it runs), and a failure of the grading machine is a note for
//! the person running the grader, not feedback.

use std::path::Path;
use std::time::Duration;

use super::items::Items;
use super::worker::{run_worker_within, Place, WorkerFiles, WorkerRequest, WorkerResult};
use crate::source::exercises::SizeChoice;

/// Runs per size.
pub const REPS: usize = 2;
/// The most one problem of the search may take.
pub const IDLE: Duration = Duration::from_secs(2);
/// The most the whole search may take.
pub const BUDGET: Duration = Duration::from_secs(10);
/// Trial numbers of the search's problems start here (their seeds differ from the item's).
const FIRST_TRIAL: u32 = 10_000;

/// The sizes tried, ascending: the shrinker's ladder below `hi` (the item's own trials already
/// ran sizes up to it, and the largest are the slowest); a range of one size is that size.
pub fn sizes(lo: u32, hi: u32) -> Vec<u32> {
    let lo = lo.max(1);
    let v: Vec<u32> = crate::run::shrink::ladder(lo, hi.max(lo))
        .into_iter()
        .filter(|&s| s < hi)
        .collect();
    if v.is_empty() {
        vec![lo]
    } else {
        v
    }
}

/// What one run of the search gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Run {
    /// Wrong results; the first wrong element, as feedback shows it.
    Wrong(String),
    Right,
    Fault,
    Hang,
    NotRun,
}

/// The feedback line from the runs of each size (`labels[i]` names run `i`'s problem;
/// [`REPS`] runs per size, in the order of `sizes`).
pub fn describe(sizes: &[u32], labels: &[String], runs: &[Run]) -> String {
    for (i, size) in sizes.iter().enumerate() {
        let at = i * REPS;
        let these = &runs[at.min(runs.len())..(at + REPS).min(runs.len())];
        let wrong: Vec<(usize, &String)> = these
            .iter()
            .enumerate()
            .filter_map(|(k, r)| match r {
                Run::Wrong(first) => Some((at + k, first)),
                _ => None,
            })
            .collect();
        if let Some((k, first)) = wrong.first() {
            let ran = these
                .iter()
                .filter(|r| matches!(r, Run::Wrong(_) | Run::Right))
                .count();
            return format!(
                "smallest failing input found: {} ({} of {ran} runs wrong{first})",
                labels[*k],
                wrong.len()
            );
        }
        let stop = |why: &str| {
            let tried = &sizes[..i];
            let shown = if tried.is_empty() {
                String::new()
            } else {
                format!(
                    "sizes {} gave right results; ",
                    tried
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            format!(
                "no smaller failing input found: {shown}the search stopped at size {size}: {why}"
            )
        };
        if these.contains(&Run::Fault) {
            return stop("the kernel faulted there");
        }
        if these.contains(&Run::Hang) {
            return stop(&format!("no result within {} s", IDLE.as_secs()));
        }
        if these.len() < REPS || these.contains(&Run::NotRun) {
            return stop(&format!(
                "its time budget ({} s) was spent",
                BUDGET.as_secs()
            ));
        }
    }
    format!(
        "no smaller failing input found (sizes {} gave right results, {REPS} runs each): the failure needs a larger size, or shows only now and then",
        sizes.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    )
}

impl Items<'_> {
    /// The search, as a line of the correctness item's detail; `None` when the grading machine
    /// could not run it (said in a note to the person running the grader).
    pub(super) fn shrink(&self, ptx: &Path) -> Option<String> {
        let (lo, hi) = self.spec.sizes;
        let sizes = sizes(lo, hi);
        let mut problems = Vec::new();
        let mut t = FIRST_TRIAL;
        for &s in &sizes {
            for _ in 0..REPS {
                problems.push(self.problem(t, SizeChoice::Fixed(s)));
                t += 1;
            }
        }
        let idle = IDLE.min(self.cfg.timeout);
        let files = WorkerFiles {
            exe: self.exe,
            work: self.work,
            ptx,
        };
        let request = WorkerRequest {
            problems: &problems,
            jitter: true,
            place: &Place::default(),
            tag: "shrink",
        };
        let results = match run_worker_within(&files, &request, idle, BUDGET) {
            Ok(r) => r,
            Err(e) => {
                (self.cfg.note)(&format!(
                    "{}: the search for a smaller failing input could not run: {e}",
                    self.name
                ));
                return None;
            }
        };
        let runs: Vec<Run> = problems
            .iter()
            .zip(&results)
            .map(|(p, r)| match r {
                WorkerResult::Ran(actual) => match crate::run::oracle::check(&p.buffers, actual) {
                    Some(w) => Run::Wrong(
                        w.first
                            .first()
                            .map(|m| {
                                format!(
                                    "; first: [{}] expected {}, got {}",
                                    m.index, m.expected, m.actual
                                )
                            })
                            .unwrap_or_default(),
                    ),
                    None => Run::Right,
                },
                WorkerResult::Fault(_) => Run::Fault,
                WorkerResult::Hang => Run::Hang,
                WorkerResult::NotRun => Run::NotRun,
            })
            .collect();
        let labels: Vec<String> = problems.iter().map(|p| p.label.clone()).collect();
        Some(describe(&sizes, &labels, &runs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sizes_are_the_shrinkers_ladder_below_the_high_end() {
        assert_eq!(sizes(1, 20), [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17]);
        assert_eq!(sizes(100, 100), [100]);
        assert_eq!(sizes(0, 3), [1, 2]);
        let reduce = sizes(1, 1 << 20);
        assert!(
            reduce.contains(&257) && reduce.contains(&255),
            "ragged blocks: {reduce:?}"
        );
        assert!(reduce.iter().all(|&s| s < 1 << 20));
        assert!(reduce.windows(2).all(|w| w[0] < w[1]));
    }

    fn labels(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("n={i}")).collect()
    }

    #[test]
    fn the_smallest_size_with_a_wrong_run_is_the_answer() {
        let w = |s: &str| Run::Wrong(s.into());
        let runs = [
            Run::Right,
            Run::Right,
            Run::Right,
            w("; first: [2] expected 3, got 0"),
            w(""),
            w(""),
        ];
        assert_eq!(
            describe(&[1, 2, 3], &labels(6), &runs),
            "smallest failing input found: n=3 (1 of 2 runs wrong; first: [2] expected 3, got 0)"
        );
    }

    #[test]
    fn a_fault_a_hang_or_the_budget_stops_the_search_and_says_where() {
        let r = [Run::Right, Run::Right, Run::Fault, Run::NotRun];
        let s = describe(&[1, 2], &labels(4), &r);
        assert_eq!(s, "no smaller failing input found: sizes 1 gave right results; the search stopped at size 2: the kernel faulted there");
        let r = [Run::Hang, Run::NotRun, Run::NotRun, Run::NotRun];
        assert!(
            describe(&[1, 2], &labels(4), &r).ends_with("stopped at size 1: no result within 2 s")
        );
        let r = [Run::Right, Run::Right, Run::Right, Run::NotRun];
        assert!(describe(&[1, 2], &labels(4), &r)
            .contains("stopped at size 2: its time budget (10 s) was spent"));
        // A wrong run before the stop is still the answer.
        let r = [
            Run::Right,
            Run::Wrong(String::new()),
            Run::Fault,
            Run::NotRun,
        ];
        assert!(describe(&[1, 2], &labels(4), &r).starts_with("smallest failing input found: n=1"));
    }

    #[test]
    fn nothing_wrong_on_the_whole_ladder_says_so() {
        let r = vec![Run::Right; 4];
        assert_eq!(
            describe(&[1, 2], &labels(4), &r),
            "no smaller failing input found (sizes 1, 2 gave right results, 2 runs each): the failure needs a larger size, or shows only now and then"
        );
    }
}
