use super::*;
use crate::judge::sanitize::batch_fixtures::{batch_run, finding, result_line, NAMES, NONCE, OK};
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
        let said: Vec<u8> = (0..NAMES.len())
            .map(|_| [1, 1, 1, 0, 2][rng.random_range(0..5)])
            .collect();
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
                3 => Outcome::Findings(vec![finding(
                    ["kernels/a.cu:3", "kernels/c.cu:4"][rng.random_range(0..2)],
                )]),
                4 => Outcome::Inconclusive("globalcheck cannot judge this run".into()),
                _ => Outcome::Hang {
                    left_behind: false,
                    said: None,
                },
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
    assert!(
        seen[0] > 100 && seen[1] > 100,
        "both outcomes drawn: {seen:?}"
    );
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
                    let picks: Vec<usize> =
                        (0..n).map(|_| rng.random_range(0..places.len())).collect();
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
                        _ => Outcome::Hang {
                            left_behind: false,
                            said: None,
                        },
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
        seen[if all_owners {
            2
        } else {
            usize::from(want.is_some())
        }] += 1;
    }
    assert!(
        seen.iter().all(|n| *n > 10),
        "every outcome drawn: {seen:?}"
    );
}

/// A whole batch run whose tools decided each case on its own launches: over random outcomes
/// of each tool for each case, a case is taken from the batch exactly when every tool said
/// clean or findings and sharedcheck's findings hold no read of unwritten shared memory (its
/// confirm runs need a run of the case's own); every other case runs alone, once, and the
/// answers keep the cases' order.
#[test]
fn a_batch_judged_per_case_settles_the_cases_it_judged_and_runs_only_the_others_alone() {
    use crate::judge::sanitize::injected::run::PerCase;
    let root = tempfile::tempdir().unwrap();
    let catalog = Catalog {
        root: root.path().to_path_buf(),
        cases: Vec::new(),
        manifest: None,
    };
    let owned: Vec<Case> = NAMES
        .iter()
        .map(|n| Case::for_test(n, &format!("kernels/{n}.cu"), "reduce"))
        .collect();
    let cases: Vec<&Case> = owned.iter().collect();
    // a's file reads a __shared__ variable nothing writes: every settled run of a must carry
    // sharedcheck's finding from the unoptimized build, as a run of a alone does (NVRTC builds
    // it: `ci/setup`).
    std::fs::create_dir_all(root.path().join("kernels")).unwrap();
    std::fs::write(
        root.path().join("kernels/a.cu"),
        "extern \"C\" __global__ void a(const float* in, float* out, int n)\n{\n    __shared__ float never;\n    out[threadIdx.x] = never;\n}\n",
    )
    .unwrap();
    let cfg = SanitizeConfig::new(
        Tool::Globalcheck,
        None,
        std::time::Duration::from_secs(20),
        "sm_90",
    );
    let batch = batch_run(
        Outcome::Clean,
        &format!("{}{}", result_line("a", OK), result_line("b", OK)),
    );
    let uninit = || {
        let mut f = finding("kernels/a.cu:3");
        f.what = "a read of shared memory no thread of the block wrote".into();
        f
    };
    let tools = [Tool::Globalcheck, Tool::Sharedcheck, Tool::Fencecheck];
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(30);
    let mut seen = [0usize; 2];
    for round in 0..400 {
        let mut want_alone = Vec::new();
        let per_case: PerCase = (0..NAMES.len())
            .map(|i| {
                let mut judged = true;
                let decided = tools
                    .iter()
                    .map(|&t| {
                        let o = match rng.random_range(0..7) {
                            0..=2 => Outcome::Clean,
                            3 => Outcome::Findings(vec![finding("kernels/a.cu:3")]),
                            4 if t == Tool::Sharedcheck => Outcome::Findings(vec![finding("kernels/a.cu:4"), uninit()]),
                            4 | 5 => Outcome::Inconclusive("globalcheck cannot judge this run".into()),
                            _ => Outcome::Hang { left_behind: false, said: None },
                        };
                        judged &= matches!(o, Outcome::Clean)
                            || matches!(&o, Outcome::Findings(f) if !f.iter().any(|x| x.what.contains("no thread of the block wrote")));
                        (t, o, format!("decided for {}\n", NAMES[i]))
                    })
                    .collect();
                if !judged {
                    want_alone.push(NAMES[i].to_string());
                }
                seen[usize::from(judged)] += 1;
                decided
            })
            .collect();
        let expected = per_case.clone();
        let called = std::sync::Mutex::new(Vec::new());
        let alone = |c: &Case| -> Result<Vec<SanitizerRun>> {
            called.lock().unwrap().push(c.name.clone());
            Ok(vec![SanitizerRun {
                case: c.name.clone(),
                outcome: Outcome::Inconclusive("run alone".into()),
                ..batch.clone()
            }])
        };
        let got = per_case_or_alone(&catalog, &cases, &cfg, &batch, per_case, alone).unwrap();
        let mut called = called.into_inner().unwrap();
        called.sort();
        assert_eq!(
            called, want_alone,
            "round {round}: each case not judged runs alone, once"
        );
        for (i, runs) in got.iter().enumerate() {
            assert!(
                runs.iter().all(|r| r.case == NAMES[i]),
                "round {round}: order kept"
            );
            if want_alone.contains(&NAMES[i].to_string()) {
                assert_eq!(runs[0].outcome, Outcome::Inconclusive("run alone".into()));
            } else {
                for (r, (t, o, _)) in runs.iter().zip(&expected[i]) {
                    assert_eq!(r.tool, *t);
                    if NAMES[i] == "a" && r.tool == Tool::Sharedcheck {
                        // The batch's outcome, and the never-written read added to it.
                        let Outcome::Findings(f) = &r.outcome else {
                            panic!(
                                "round {round}: a's sharedcheck lost its never-written read: {:?}",
                                r.outcome
                            )
                        };
                        assert!(
                            f.iter()
                                .any(|x| x.what.contains("`never` is read and never written")),
                            "{f:?} {}",
                            r.log
                        );
                        if let Outcome::Findings(batch) = o {
                            assert!(batch.iter().all(|b| f.contains(b)), "round {round}");
                        }
                    } else {
                        assert_eq!(
                            &r.outcome, o,
                            "round {round}: the batch's own outcome of {}",
                            NAMES[i]
                        );
                    }
                }
                assert!(runs
                    .iter()
                    .all(|r| r.log.contains(&format!("decided for {}", NAMES[i]))));
                assert!(runs
                    .iter()
                    .all(|r| r.exit.contains("one process for a, b, c")));
            }
        }
    }
    assert!(
        seen[0] > 100 && seen[1] > 100,
        "both kinds of case drawn: {seen:?}"
    );
}
