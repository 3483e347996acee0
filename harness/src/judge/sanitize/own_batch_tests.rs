use super::*;
use crate::judge::sanitize::batch::tests::{batch_run, finding, result_line, NAMES, NONCE, OK};
use crate::judge::sanitize::runner::RESULT;
use rand::{RngExt, SeedableRng};

/// racegate's own tools in one injected run, over random outcomes of each tool and logs: every
/// case settles when the run was whole (the last line, in time, every case said it ran once)
/// and every tool's run was clean; otherwise none does, findings of one case included (the
/// tools stop at their findings before they look at what they could not judge, so those say
/// nothing of the other cases).
#[test]
fn own_tools_settle_all_cases_only_when_every_tool_is_clean() {
    use std::time::Duration;
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(28);
    let t = Duration::from_secs(20);
    let last = format!("{RESULT}{} [run {NONCE}]\n", runner::ALL_RAN);
    let mut seen = [0usize; 2];
    for round in 0..3000 {
        let tools = rng.random_range(1..=3usize);
        // Which cases said they ran (0: no line, 1: ran, 2: a failed launch), and the last line.
        let said: Vec<u8> = (0..NAMES.len()).map(|_| [1, 1, 1, 0, 2][rng.random_range(0..5)]).collect();
        let mut log: String = NAMES
            .iter()
            .zip(&said)
            .map(|(n, s)| match s {
                1 => result_line(n, OK),
                2 => result_line(n, "launch failed"),
                _ => String::new(),
            })
            .collect();
        let whole = rng.random_range(0..4) > 0;
        if whole {
            log.push_str(&last);
        }
        let mut want = whole && said.iter().all(|s| *s == 1);
        let mut runs = Vec::new();
        for k in 0..tools {
            let outcome = match rng.random_range(0..6) {
                0..=2 => Outcome::Clean,
                3 => Outcome::Findings(vec![finding(["kernels/a.cu:3", "kernels/c.cu:4"][rng.random_range(0..2)])]),
                4 => Outcome::Inconclusive("globalcheck cannot judge this run".into()),
                _ => Outcome::Hang { left_behind: false, said: None },
            };
            want &= outcome == Outcome::Clean;
            let mut r = batch_run(outcome, &log);
            r.tool = [Tool::Globalcheck, Tool::Sharedcheck, Tool::Fencecheck][k];
            // The run's time is shared among its tools: the process took `seconds * tools`.
            r.seconds = rng.random_range(0.1..8.0);
            want &= r.seconds * tools as f64 <= t.as_secs_f64();
            runs.push(r);
        }
        let got = settle_own(&runs, &NAMES, NONCE, t);
        assert_eq!(got, want, "round {round}: {runs:?}");
        seen[usize::from(want)] += 1;
    }
    assert!(seen[0] > 100 && seen[1] > 100, "both outcomes drawn: {seen:?}");
    // No tool run at all settles nothing.
    assert!(!settle_own(&[], &NAMES, NONCE, t));
}

#[test]
fn own_tools_regroup_only_when_every_verdict_is_a_finding_at_one_cases_code() {
    use std::time::Duration;
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(29);
    let t = Duration::from_secs(20);
    let last = format!("{RESULT}{} [run {NONCE}]\n", runner::ALL_RAN);
    // Each case has a file of its own; b and c share a header.
    let files: Vec<Vec<String>> = vec![
        vec!["kernels/a.cu".into()],
        vec!["kernels/b.cu".into(), "include/h.cuh".into()],
        vec!["kernels/c.cu".into(), "include/h.cuh".into()],
    ];
    // Locations and whom they name: one case, or nobody (shared, unknown, line-less).
    let places: [(&str, Option<usize>); 6] = [
        ("kernels/a.cu:3", Some(0)),
        ("kernels/b.cu:7", Some(1)),
        ("kernels/c.cu:2", Some(2)),
        ("include/h.cuh:4", None),
        ("kernels/d.cu:1", None),
        ("k pc 0x1f0", None),
    ];
    let mut seen = [0usize; 3];
    for round in 0..4000 {
        let tools = rng.random_range(1..=3usize);
        // The log: whole, or without its last line, or without c's line, or too slow.
        let form = rng.random_range(0..8);
        let mut log: String = NAMES
            .iter()
            .filter(|n| form != 2 || **n != "c")
            .map(|n| result_line(n, OK))
            .collect();
        if form != 1 {
            log.push_str(&last);
        }
        let seconds = if form == 3 { 25.0 } else { 1.0 };
        let mut want: Option<Vec<bool>> = (!(1..=3).contains(&form)).then(|| vec![false; 3]);
        let mut runs = Vec::new();
        for k in 0..tools {
            let outcome = match rng.random_range(0..7) {
                0..=1 => Outcome::Clean,
                2..=5 => {
                    let n = rng.random_range(1..=3);
                    let picks: Vec<usize> = (0..n).map(|_| rng.random_range(0..places.len())).collect();
                    for &p in &picks {
                        match (places[p].1, want.as_mut()) {
                            (Some(i), Some(w)) => w[i] = true,
                            _ => want = None,
                        }
                    }
                    Outcome::Findings(picks.iter().map(|&p| finding(places[p].0)).collect())
                }
                _ => {
                    want = None;
                    match rng.random_range(0..2) {
                        0 => Outcome::Inconclusive("globalcheck cannot judge this run".into()),
                        _ => Outcome::Hang { left_behind: false, said: None },
                    }
                }
            };
            let mut r = batch_run(outcome, &log);
            r.tool = [Tool::Globalcheck, Tool::Sharedcheck, Tool::Fencecheck][k];
            r.seconds = seconds;
            runs.push(r);
        }
        let all_owners = want.as_ref().is_some_and(|w| w.iter().all(|o| *o));
        let want = want.filter(|w| w.iter().any(|o| *o) && !w.iter().all(|o| *o));
        let got = own_owners(&runs, &NAMES, &files, NONCE, t);
        assert_eq!(got, want, "round {round}: {runs:?}");
        seen[if all_owners { 2 } else { usize::from(want.is_some()) }] += 1;
    }
    assert!(seen.iter().all(|n| *n > 10), "every outcome drawn: {seen:?}");
}
