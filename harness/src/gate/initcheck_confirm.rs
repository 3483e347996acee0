//! initcheck's findings from sampled passes, confirmed by a run that checks every launch before
//! they are reported. initcheck records a write only where it instruments it: the launches a
//! sampled pass leaves out (`--kernel-name-exclude`, `--launch-count`) write memory it does not
//! see, and a later read of that memory (by a checked kernel, or by a copy to the host) is
//! reported as uninitialized. On an H100 (run 35) every Thrust and CUB program of the corpus
//! whose initcheck run was sampled reported "Host API uninitialized memory access", and no
//! program whose every launch was checked did, except the three whose copies read memory no one
//! wrote. So a sampled run's initcheck findings are suspicions: the run of every launch is the
//! verdict (its findings, or clean), and where that run does not finish, the gate says it cannot
//! tell rather than accuse.

use std::time::Duration;

use crate::judge::sanitize::{Outcome, SanitizerRun};

/// The deadline of the run of every launch, from what the sampled passes measured: they took
/// `spent` seconds over the launches they checked (every launch of a kernel launched at most
/// `first + later` times, that many of the others), so every launch of `counts` should take
/// about `spent` times as many again as were left out. Twice that, at least the tool's own
/// `deadline` and at most four times it: past that the confirmation would cost more than the
/// rest of the gate, and initcheck is left inconclusive instead.
pub fn deadline(
    deadline: Duration,
    spent: f64,
    counts: &crate::gate::sampling::LaunchCounts,
    sampling: crate::gate::sampling::Sampling,
) -> Duration {
    let per_kernel = sampling.first + sampling.later;
    let total: u64 = counts.0.values().sum();
    let checked: u64 = counts.0.values().map(|&n| n.min(per_kernel)).sum();
    if checked == 0 || !spent.is_finite() {
        return deadline;
    }
    let estimate = spent * total as f64 / checked as f64;
    Duration::from_secs_f64(2.0 * estimate).clamp(deadline, deadline * 4)
}

/// Whether a sampled initcheck run needs the run of every launch: it has findings.
pub fn needs_confirming(merged: &[SanitizerRun]) -> bool {
    merged
        .iter()
        .any(|r| matches!(&r.outcome, Outcome::Findings(f) if !f.is_empty()))
}

/// The verdict of initcheck from the sampled passes' run (`sampled`) and the run that checked
/// every launch (`every`), and the report's note.
pub fn settle(
    subject: &str,
    sampled: Vec<SanitizerRun>,
    every: Vec<SanitizerRun>,
) -> (Vec<SanitizerRun>, String) {
    let reported: usize = sampled
        .iter()
        .map(|r| match &r.outcome {
            Outcome::Findings(f) => f.len(),
            _ => 0,
        })
        .sum();
    let sampled_seconds: f64 = sampled.iter().map(|r| r.seconds).sum();
    let Some(mut run) = every.into_iter().next() else {
        // No run came back (nothing to confirm with): the suspicion is no verdict.
        let mut runs = sampled;
        for r in &mut runs {
            r.outcome = Outcome::Inconclusive(unconfirmed(reported, "it did not run"));
        }
        return (
            runs,
            format!("{subject}: initcheck's {reported} report(s) from sampled passes could not be confirmed"),
        );
    };
    run.seconds += sampled_seconds;
    let note = match &run.outcome {
        Outcome::Findings(f) => format!(
            "{subject}: initcheck's sampled passes reported {reported} uninitialized access(es); \
             the run checking every launch, the verdict, reported {}",
            f.len()
        ),
        Outcome::Clean => format!(
            "{subject}: initcheck's sampled passes reported {reported} uninitialized access(es), \
             withdrawn: the run checking every launch found none (a launch a pass leaves out \
             writes memory initcheck does not see)"
        ),
        Outcome::Hang { left_behind, .. } => {
            let behind = match left_behind {
                true => "; processes it started could not all be killed",
                false => "",
            };
            run.outcome = Outcome::Inconclusive(unconfirmed(
                reported,
                &format!(
                    "it was killed at its deadline ({:.0} s){behind}",
                    run.seconds - sampled_seconds
                ),
            ));
            format!("{subject}: initcheck's sampled reports were not confirmed (the run of every launch missed its deadline)")
        }
        Outcome::Inconclusive(why) => {
            let why = why.clone();
            run.outcome = Outcome::Inconclusive(unconfirmed(
                reported,
                &format!("it was inconclusive: {why}"),
            ));
            format!("{subject}: initcheck's sampled reports were not confirmed (the run of every launch was inconclusive)")
        }
    };
    run.log = format!(
        "{}\n== the run checking every launch (confirming the sampled passes' reports)\n{}",
        sampled
            .iter()
            .map(|r| r.log.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        run.log
    );
    (vec![run], note)
}

fn unconfirmed(reported: usize, what: &str) -> String {
    format!(
        "initcheck reported {reported} uninitialized access(es) in sampled passes, where the \
         launches left out write memory it does not see, and the run checking every launch, \
         which would confirm them, did not settle it: {what} (--every-launch runs every launch \
         from the start)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::sanitize::normalize::Finding;
    use crate::judge::sanitize::Tool;

    fn finding(what: &str) -> Finding {
        Finding {
            kind: "Initcheck".into(),
            level: "Error".into(),
            kernel: String::new(),
            location: String::new(),
            accesses: String::new(),
            what: what.into(),
        }
    }

    fn run(outcome: Outcome, seconds: f64, log: &str) -> SanitizerRun {
        SanitizerRun {
            case: "prog".into(),
            tool: Tool::Initcheck,
            outcome,
            exit: "exit 0".into(),
            seconds,
            log: log.into(),
            command: "compute-sanitizer --tool initcheck prog".into(),
        }
    }

    fn sampled() -> Vec<SanitizerRun> {
        vec![run(
            Outcome::Findings(vec![
                finding("Host API uninitialized memory access"),
                finding("Uninitialized __global__ memory read of size 4 bytes"),
            ]),
            3.0,
            "sampled log",
        )]
    }

    #[test]
    fn the_run_of_every_launch_gets_what_the_passes_measured_within_bounds() {
        use crate::gate::sampling::{LaunchCounts, Sampling};
        let s = Sampling { first: 4, later: 2 };
        let counts = |n: &[u64]| {
            LaunchCounts(
                n.iter()
                    .enumerate()
                    .map(|(i, &n)| (format!("k{i}"), n))
                    .collect(),
                Default::default(),
            )
        };
        let d = Duration::from_secs(120);
        // 60 launches, 6 checked in 30 s: about 300 s for all, 600 s with the margin: capped.
        assert_eq!(deadline(d, 30.0, &counts(&[60]), s), d * 4);
        // 12 launches (6 + 6 of two kernels, one sampled), 9 checked in 45 s: 60 s, doubled 120.
        assert_eq!(deadline(d, 45.0, &counts(&[9, 3]), s), d);
        // 20 launches, 12 checked (6 + 6) in 90 s: 150 s, doubled 300 s.
        assert_eq!(
            deadline(d, 90.0, &counts(&[10, 10]), s),
            Duration::from_secs(300)
        );
        // Nothing counted: the tool's deadline.
        assert_eq!(deadline(d, 90.0, &counts(&[]), s), d);
    }

    #[test]
    fn only_a_sampled_run_with_findings_is_confirmed() {
        assert!(needs_confirming(&sampled()));
        assert!(!needs_confirming(&[run(Outcome::Clean, 1.0, "")]));
        assert!(!needs_confirming(&[run(
            Outcome::Inconclusive("x".into()),
            1.0,
            ""
        )]));
    }

    #[test]
    fn a_clean_run_of_every_launch_withdraws_the_sampled_reports() {
        let (runs, note) = settle(
            "prog",
            sampled(),
            vec![run(Outcome::Clean, 5.0, "every log")],
        );
        assert_eq!(runs.len(), 1);
        assert!(matches!(runs[0].outcome, Outcome::Clean));
        assert!((runs[0].seconds - 8.0).abs() < 1e-9);
        assert!(
            note.contains("reported 2") && note.contains("withdrawn"),
            "{note}"
        );
        assert!(runs[0].log.contains("sampled log") && runs[0].log.contains("every log"));
    }

    #[test]
    fn the_run_of_every_launch_gives_the_findings() {
        let every = vec![run(
            Outcome::Findings(vec![finding("Host API uninitialized memory access")]),
            5.0,
            "",
        )];
        let (runs, note) = settle("prog", sampled(), every);
        match &runs[0].outcome {
            Outcome::Findings(f) => assert_eq!(f.len(), 1),
            o => panic!("{o:?}"),
        }
        assert!(
            note.contains("reported 2") && note.ends_with("reported 1"),
            "{note}"
        );
    }

    #[test]
    fn an_unfinished_run_of_every_launch_leaves_initcheck_inconclusive_not_accusing() {
        let hung = vec![run(
            Outcome::Hang {
                left_behind: false,
                said: None,
            },
            120.0,
            "",
        )];
        let (runs, _) = settle("prog", sampled(), hung);
        match &runs[0].outcome {
            Outcome::Inconclusive(why) => {
                assert!(why.contains("killed at its deadline (120 s)"), "{why}");
                assert!(why.contains("2 uninitialized"), "{why}");
            }
            o => panic!("{o:?}"),
        }
        let unsure = vec![run(
            Outcome::Inconclusive("records dropped".into()),
            4.0,
            "",
        )];
        let (runs, _) = settle("prog", sampled(), unsure);
        assert!(
            matches!(&runs[0].outcome, Outcome::Inconclusive(w) if w.contains("records dropped"))
        );
        let (runs, _) = settle("prog", sampled(), Vec::new());
        assert!(matches!(&runs[0].outcome, Outcome::Inconclusive(_)));
    }
}
