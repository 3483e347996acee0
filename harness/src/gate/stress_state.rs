//! What the gate's stress runs have said so far, for the jobs after them: which kernels are
//! done, hung or passed, how many stress runs are running (the gate runs at most
//! [`stress_at_once`]), and the guard that records a stress job's end, a panic included.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// What the gate's stress runs have said so far (a job takes a copy when it starts).
#[derive(Clone, Default)]
pub(super) struct StressState {
    /// Kernels whose stress run ended.
    pub(super) done: BTreeSet<String>,
    /// Kernels whose stress run missed its deadline: under a tool they hang too.
    pub(super) hung: BTreeSet<String>,
    /// Kernels whose stress run passed: racegate's own tools try them in one run.
    pub(super) passed: BTreeSet<String>,
    /// Of `hung`, those whose stress run finished no trial: their tool runs are cut to
    /// `manifest_run::after_hang`.
    pub(super) finished_none: BTreeSet<String>,
    /// Stress runs running now (counted when picked).
    pub(super) running: usize,
}

impl StressState {
    /// A stress job was picked (under the pool's lock, so the next pick sees it).
    pub(super) fn picked(&mut self) {
        self.running += 1;
    }

    /// `case`'s stress job ended: with `end`, or without a verdict (an error before it, a panic).
    pub(super) fn ended(&mut self, case: &str, end: Option<&StressEnd>) {
        self.running = self.running.saturating_sub(1);
        self.done.insert(case.to_string());
        match end {
            Some(StressEnd::Hung { finished_none }) => {
                self.hung.insert(case.to_string());
                if *finished_none {
                    self.finished_none.insert(case.to_string());
                }
            }
            Some(StressEnd::Passed) => {
                self.passed.insert(case.to_string());
            }
            _ => {}
        }
    }
}

/// A running stress job of `case`: dropped, it records the end in the state with `verdict`
/// (none when the job failed or panicked before one), so the count goes down and the kernel's
/// tool jobs stop waiting whatever happened.
pub(super) struct StressEnded<'a> {
    state: &'a Mutex<StressState>,
    case: &'a str,
    pub(super) verdict: Option<StressEnd>,
}

impl<'a> StressEnded<'a> {
    pub(super) fn new(state: &'a Mutex<StressState>, case: &'a str) -> Self {
        StressEnded {
            state,
            case,
            verdict: None,
        }
    }
}

impl Drop for StressEnded<'_> {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        st.ended(self.case, self.verdict.as_ref());
    }
}

/// How a kernel's stress run ended, for the jobs after it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum StressEnd {
    Passed,
    /// A trial missed its deadline; `finished_none`: no trial finished before it (the first
    /// one hung), which is when the tools get `manifest_run::after_hang`.
    Hung { finished_none: bool },
    /// Wrong results or a fault.
    Flagged,
}

/// How many stress runs the gate runs at once: `RACEGATE_STRESS_AT_ONCE` (at least 1), else
/// half the jobs, so the tools of the kernels already stressed start beside them (H200 run 28,
/// the corpus gate at 16 jobs: 49.2-53.0 s with 8 at once, 52.8-57.5 s with 16, 58.7 s with 12).
pub(super) fn stress_at_once(jobs: usize) -> usize {
    stress_at_once_from(std::env::var("RACEGATE_STRESS_AT_ONCE").ok().as_deref(), jobs)
}

/// [`stress_at_once`] from the variable's value.
pub(super) fn stress_at_once_from(value: Option<&str>, jobs: usize) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or((jobs / 2).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stress_jobs_end_is_recorded_with_its_verdict_or_without_one_after_a_panic() {
        let state = Mutex::new(StressState::default());
        for _ in 0..4 {
            state.lock().unwrap().picked();
        }
        assert_eq!(state.lock().unwrap().running, 4);
        // Ended with verdicts.
        for (case, end) in [
            ("a", StressEnd::Passed),
            ("b", StressEnd::Hung { finished_none: true }),
        ] {
            let mut ended = StressEnded::new(&state, case);
            ended.verdict = Some(end);
        }
        // Failed before a verdict, and a panic while the job ran.
        drop(StressEnded::new(&state, "c"));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ended = StressEnded::new(&state, "d");
            panic!("a stress job's bug");
        }));
        assert!(panicked.is_err());
        let st = state.lock().unwrap();
        assert_eq!(st.running, 0, "every job counted down, the panicked one included");
        assert_eq!(st.done, ["a", "b", "c", "d"].map(String::from).into());
        assert_eq!(st.passed, ["a"].map(String::from).into());
        assert_eq!(st.hung, ["b"].map(String::from).into());
        assert_eq!(st.finished_none, ["b"].map(String::from).into());
        drop(st);
        // Never below zero.
        drop(StressEnded::new(&state, "e"));
        assert_eq!(state.lock().unwrap().running, 0);
    }
}
