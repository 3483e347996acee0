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
    /// Kernels whose stress run passed, and those whose stress run gave wrong results: racegate's
    /// own tools take both in one run, judged per case. (Kernels that were never stress-run,
    /// or whose stress job ended in an error, are in neither: nothing says they do not hang.)
    pub(super) passed: BTreeSet<String>,
    pub(super) flagged: BTreeSet<String>,
    /// Kernels whose stress run faulted: memcheck runs them alone.
    pub(super) faulted: BTreeSet<String>,
    /// Of `hung`, those whose stress run finished no trial: their tool runs are cut to
    /// [`after_hang`].
    pub(super) finished_none: BTreeSet<String>,
    /// Stress runs running now (counted when picked).
    pub(super) running: usize,
}

impl StressState {
    /// Whether `tool` runs `case` alone rather than in a batch: a kernel whose stress run hung
    /// (under the tool it hangs too, and would cost the batch its deadline) or, under memcheck,
    /// faulted (memcheck stops the batch at it, and the rest run again as another batch).
    pub(super) fn alone_under(&self, tool: crate::judge::sanitize::Tool, case: &str) -> bool {
        self.hung.contains(case)
            || (tool == crate::judge::sanitize::Tool::Memcheck && self.faulted.contains(case))
    }

    /// A stress job was picked (under the pool's lock, so the next pick sees it).
    pub(super) fn picked(&mut self) {
        self.running += 1;
    }

    /// `case`'s stress verdict: the kernel is done for the jobs that wait for it (its stress
    /// job may still be searching for a minimal repro, and counts as running until it ends).
    pub(super) fn said(&mut self, case: &str, end: Option<&StressEnd>) {
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
            Some(StressEnd::Faulted) => {
                self.faulted.insert(case.to_string());
            }
            Some(StressEnd::Flagged) => {
                self.flagged.insert(case.to_string());
            }
            None => {}
        }
    }

    /// `case`'s stress job ended: counted down, and done without a verdict unless one was said
    /// (an error or a panic before it).
    pub(super) fn ended(&mut self, case: &str) {
        self.running = self.running.saturating_sub(1);
        if !self.done.contains(case) {
            self.said(case, None);
        }
    }
}

/// A running stress job of `case`: its verdict goes out as soon as it is known
/// ([`StressEnded::say`]: a failure's tools need the verdict, not its minimal repro, whose
/// search took up to 22 s of a 49 s gate in H200 run 29 while the tools waited); dropped, it
/// counts the job down and marks the kernel done if no verdict was said (the job failed or
/// panicked before one), so the kernel's tool jobs stop waiting whatever happened. The search
/// still counts as a stress run, so no more searches and stress runs than before run at once
/// (H200 run 28, call B: a verdict out early *and* uncounted put more processes on the GPU and
/// the gate was no faster); a fault's search may start a few workers at once for its confirm
/// reruns (`run::shrink`).
pub(super) struct StressEnded<'a> {
    state: &'a Mutex<StressState>,
    case: &'a str,
}

impl<'a> StressEnded<'a> {
    pub(super) fn new(state: &'a Mutex<StressState>, case: &'a str) -> Self {
        StressEnded { state, case }
    }

    /// The verdict, before the job ends.
    pub(super) fn say(&self, end: &StressEnd) {
        let mut st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st.said(self.case, Some(end));
    }
}

impl Drop for StressEnded<'_> {
    fn drop(&mut self) {
        let mut st = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st.ended(self.case);
    }
}

/// How a kernel's stress run ended, for the jobs after it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum StressEnd {
    Passed,
    /// A trial missed its deadline; `finished_none`: no trial finished before it (the first
    /// one hung), which is when the tools get [`after_hang`].
    Hung {
        finished_none: bool,
    },
    /// Wrong results.
    Flagged,
    /// A fault (the kernel's context was lost, or it wrote outside its buffers).
    Faulted,
}

/// How many stress runs the gate runs at once: `RACEGATE_STRESS_AT_ONCE` (a whole number above
/// 0; anything else is an error that names it), else half the jobs (at least 1), so the tools of
/// the kernels already stressed start beside them. The corpus gate at 16 jobs: H200 run 28,
/// 49.2-53.0 s with 8 at once, 52.8-57.5 s with 16; run 29, 49.1-50.4 s with 8, 46.5 s with 4;
/// run 30, with one hardware queue per tool process and racegate's own tools judged per case
/// (74 GPU processes instead of 91-94), 38.7-40.1 s with 4 and 36.3 s with 8 (call B), and with
/// 8 as the default 32.1-35.9 s (calls C and D).
pub(super) fn stress_at_once(jobs: usize) -> crate::errors::Result<usize> {
    // Set but not UTF-8 is set: an error that shows it, not the default.
    let value =
        std::env::var_os("RACEGATE_STRESS_AT_ONCE").map(|v| v.to_string_lossy().into_owned());
    stress_at_once_from(value.as_deref(), jobs)
}

/// [`stress_at_once`] from the variable's value.
pub(super) fn stress_at_once_from(
    value: Option<&str>,
    jobs: usize,
) -> crate::errors::Result<usize> {
    match value {
        None => Ok((jobs / 2).max(1)),
        Some(v) => v.trim().parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            crate::errors::Error::Usage(format!(
                "RACEGATE_STRESS_AT_ONCE must be a whole number above 0 (stress runs at once), got `{v}`"
            ))
        }),
    }
}

/// The sanitizer configuration for a kernel whose stress run finished no trial (the first one
/// missed its deadline): the same, cut as grading and the matrix cut
/// ([`sanitize::tool::after_hang_deadline`]: 10 s, or the trial deadline when longer, never more
/// than configured), but for racecheck's margin below (the gate's findings carry the tool's
/// deadlock line in their identity; a matrix cell and a graded item do not). A kernel that hung
/// only after some trials finished (a rare schedule, a large size) keeps the whole deadline: at
/// the sanitizer's small geometry it may well finish. A tool run cut short is judged as before:
/// a hang, since the plain runs hung too. The cut applies once the stress run has said so; a
/// tool job started before that (the gate ranks such jobs last) keeps the whole deadline, which
/// changes only the message's "killed after", not the finding's identity.
/// racecheck gets [`RACECHECK_MARGIN`] more: it names a barrier deadlock (the line the
/// finding's identity holds) 3 s after the kernel stalls, once its own start is over, and beside
/// thirty GPU processes that start took long enough for the cut to come first (H200 runs 28 and
/// 29: `chained_scan_spin`'s racecheck killed at 10 s without its line, another fingerprint).
pub(super) fn after_hang(
    sc: &crate::judge::sanitize::SanitizeConfig,
    cfg: &super::finding::GateConfig,
) -> crate::judge::sanitize::SanitizeConfig {
    let mut cut = sc.clone();
    let margin = match sc.tool {
        crate::judge::sanitize::Tool::Racecheck => RACECHECK_MARGIN,
        _ => std::time::Duration::ZERO,
    };
    cut.timeout =
        (crate::judge::sanitize::tool::after_hang_deadline(sc.timeout, cfg.battery.stress_timeout)
            + margin)
            .min(sc.timeout);
    cut
}

/// See [`after_hang`].
const RACECHECK_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stress_jobs_end_is_recorded_with_its_verdict_or_without_one_after_a_panic() {
        let state = Mutex::new(StressState::default());
        for _ in 0..6 {
            state.lock().unwrap().picked();
        }
        assert_eq!(state.lock().unwrap().running, 6);
        // Ended with verdicts.
        for (case, end) in [
            ("a", StressEnd::Passed),
            (
                "b",
                StressEnd::Hung {
                    finished_none: true,
                },
            ),
            ("f", StressEnd::Faulted),
            ("w", StressEnd::Flagged),
        ] {
            StressEnded::new(&state, case).say(&end);
        }
        // Failed before a verdict, and a panic while the job ran.
        drop(StressEnded::new(&state, "c"));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ended = StressEnded::new(&state, "d");
            panic!("a stress job's bug");
        }));
        assert!(panicked.is_err());
        let st = state.lock().unwrap();
        assert_eq!(
            st.running, 0,
            "every job counted down, the panicked one included"
        );
        assert_eq!(
            st.done,
            ["a", "b", "c", "d", "f", "w"].map(String::from).into()
        );
        assert_eq!(st.faulted, ["f"].map(String::from).into());
        assert_eq!(st.passed, ["a"].map(String::from).into());
        assert_eq!(st.flagged, ["w"].map(String::from).into());
        assert_eq!(st.hung, ["b"].map(String::from).into());
        assert_eq!(st.finished_none, ["b"].map(String::from).into());
        drop(st);
        // Never below zero.
        drop(StressEnded::new(&state, "e"));
        assert_eq!(state.lock().unwrap().running, 0);
    }

    #[test]
    fn hung_kernels_run_alone_under_every_tool_and_faulted_ones_under_memcheck() {
        use crate::judge::sanitize::Tool;
        let mut st = StressState::default();
        st.said(
            "h",
            Some(&StressEnd::Hung {
                finished_none: false,
            }),
        );
        st.said("f", Some(&StressEnd::Faulted));
        st.said("w", Some(&StressEnd::Flagged));
        st.said("p", Some(&StressEnd::Passed));
        for tool in [
            Tool::Racecheck,
            Tool::Synccheck,
            Tool::Memcheck,
            Tool::Initcheck,
        ] {
            assert!(st.alone_under(tool, "h"));
            assert_eq!(st.alone_under(tool, "f"), tool == Tool::Memcheck, "{tool}");
            assert!(
                !st.alone_under(tool, "w")
                    && !st.alone_under(tool, "p")
                    && !st.alone_under(tool, "x")
            );
        }
    }

    #[test]
    fn a_verdict_said_early_frees_the_kernels_tools_but_the_job_counts_until_it_ends() {
        let state = Mutex::new(StressState::default());
        state.lock().unwrap().picked();
        let ended = StressEnded::new(&state, "a");
        ended.say(&StressEnd::Hung {
            finished_none: true,
        });
        {
            let st = state.lock().unwrap();
            assert!(st.done.contains("a") && st.finished_none.contains("a"));
            assert_eq!(st.running, 1, "the search after the verdict still counts");
        }
        drop(ended);
        let st = state.lock().unwrap();
        assert_eq!(st.running, 0);
        assert!(st.hung.contains("a") && !st.passed.contains("a"));
        drop(st);
        // A verdict said stands when the job then fails (its search's error) or panics.
        state.lock().unwrap().picked();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ended = StressEnded::new(&state, "b");
            ended.say(&StressEnd::Passed);
            panic!("the search's bug");
        }));
        assert!(panicked.is_err());
        let st = state.lock().unwrap();
        assert!(st.passed.contains("b") && !st.hung.contains("b"));
    }
}
