//! The gate's job order (`manifest_run/mod.rs`).

use super::*;
use crate::gate::stress_state::{after_hang, stress_at_once_from};
fn case(name: &str, exercise: &str) -> Case {
    Case::for_test(name, &format!("kernels/{name}.cu"), exercise)
}

/// The gate's jobs start long ones first: racecheck on the heavy family before anything,
/// the injected tools' one run before a lone cheap tool, stress by its trials; ties keep
/// the order they were made in.
#[test]
fn the_gates_jobs_start_stress_first_then_a_hung_kernels_tools_then_long_ones() {
    let (a, m) = (case("a", "reduce"), case("m", "matmul"));
    let jobs = || {
        vec![
            Job::Sanitize(&a, vec![Tool::Initcheck]),
            Job::Sanitize(&m, vec![Tool::Initcheck]),
            Job::Sanitize(&a, vec![Tool::Globalcheck, Tool::Sharedcheck]),
            Job::Sanitize(&a, vec![Tool::Racecheck]),
            Job::Sanitize(&m, vec![Tool::Racecheck]),
            Job::Stress(&a),
            Job::Batch(vec![&a, &m], Tool::Synccheck),
            Job::OwnBatch(vec![&a, &m], vec![Tool::Globalcheck, Tool::Fencecheck]),
        ]
    };
    let name = |j: &Job| match j {
        Job::Stress(c) => format!("{}:stress", c.name),
        Job::Sanitize(c, g) => format!(
            "{}:{}",
            c.name,
            g.iter().map(|t| t.name()).collect::<Vec<_>>().join("+")
        ),
        Job::Batch(cs, t) => format!(
            "{}:{t}",
            cs.iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join("+")
        ),
        Job::OwnBatch(cs, g) => format!(
            "{}:{}",
            cs.iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join("+"),
            g.iter().map(|t| t.name()).collect::<Vec<_>>().join("+")
        ),
    };
    let order = |st: &StressState, stressed: &[&str]| -> Vec<String> {
        crate::judge::battery::long_first(jobs(), |j| job_rank(j, 100, st, stressed, 16))
            .iter()
            .map(name)
            .collect()
    };
    // Nothing stressed yet known (m has no stress run): stress first, then `m`'s own jobs;
    // `a`'s wait for its stress run (not ready at all, whatever else is left).
    let mut st = StressState::default();
    assert_eq!(
        order(&st, &["a"])[..3],
        ["a:stress", "m:racecheck", "m:initcheck"]
    );
    let waiting: Vec<String> = jobs()
        .iter()
        .filter(|j| job_rank(j, 100, &st, &["a"], 16) == pool::NOT_YET)
        .map(name)
        .collect();
    assert_eq!(
        waiting,
        [
            "a:initcheck",
            "a:globalcheck+sharedcheck",
            "a:racecheck",
            "a+m:synccheck",
            "a+m:globalcheck+fencecheck"
        ]
    );
    // `a`'s stress run ended: long ones first.
    st.done.insert("a".into());
    assert_eq!(
        order(&st, &["a"]),
        [
            "a:stress",
            "m:racecheck",
            "a+m:globalcheck+fencecheck",
            "a:racecheck",
            "a+m:synccheck",
            "a:globalcheck+sharedcheck",
            "m:initcheck",
            "a:initcheck"
        ]
    );
    // It hung: every job with `a` in it goes before the rest, stress runs still to start
    // (here none: `a`'s has run) included.
    st.hung.insert("a".into());
    assert_eq!(
        order(&st, &["a"]),
        [
            "a+m:globalcheck+fencecheck",
            "a:racecheck",
            "a+m:synccheck",
            "a:globalcheck+sharedcheck",
            "a:initcheck",
            "a:stress",
            "m:racecheck",
            "m:initcheck"
        ]
    );
}

/// At most `stress_at_once` stress runs at a time: past it a stress run waits, and the jobs of
/// kernels already stressed go first.
#[test]
fn stress_runs_wait_once_as_many_as_allowed_are_running() {
    let (a, b) = (case("a", "reduce"), case("b", "reduce"));
    let stress = Job::Stress(&b);
    let tools = Job::Sanitize(&a, vec![Tool::Racecheck]);
    let mut st = StressState::default();
    st.done.insert("a".into());
    for at_once in 1..6 {
        for running in 0..8 {
            st.running = running;
            let r = job_rank(&stress, 100, &st, &["a", "b"], at_once);
            match running < at_once {
                true => assert!(r > job_rank(&tools, 100, &st, &["a", "b"], at_once)),
                false => assert_eq!(r, pool::NOT_YET, "{running} running, {at_once} at once"),
            }
        }
    }
    // The setting: a positive count, else half the jobs (at least one); anything else set is an
    // error that names the variable, never a silent default.
    for (set, want) in [(Some("3"), 3), (Some(" 8 "), 8), (None, 8)] {
        assert_eq!(stress_at_once_from(set, 16).unwrap(), want, "{set:?}");
    }
    for bad in ["0", "x", "-2", "", "1.5", "8 stress"] {
        let e = stress_at_once_from(Some(bad), 16).unwrap_err().to_string();
        assert!(
            e.contains("RACEGATE_STRESS_AT_ONCE") && e.contains(&format!("`{bad}`")),
            "{bad:?}: {e}"
        );
    }
    for (jobs, want) in [(1, 1), (2, 1), (3, 1), (4, 2), (7, 3), (16, 8)] {
        assert_eq!(
            stress_at_once_from(None, jobs).unwrap(),
            want,
            "{jobs} jobs"
        );
    }
    // Over random values (digits, signs, spaces, dots, letters, a lossy byte): a count exactly
    // when the trimmed value is a whole number above 0, an error naming the variable otherwise.
    use rand::{RngExt, SeedableRng};
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(26);
    let alphabet: Vec<char> = "0123456789  +-.xe\u{fffd}".chars().collect();
    let mut seen = [0usize; 2];
    for _ in 0..5000 {
        let len = rng.random_range(0..6);
        let v: String = (0..len)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())])
            .collect();
        let want = v.trim().parse::<usize>().ok().filter(|n| *n > 0);
        match (stress_at_once_from(Some(&v), 16), want) {
            (Ok(n), Some(w)) => assert_eq!(n, w, "{v:?}"),
            (Err(e), None) => assert!(
                e.to_string().contains("RACEGATE_STRESS_AT_ONCE"),
                "{v:?}: {e}"
            ),
            (got, want) => panic!("{v:?}: {got:?}, want {want:?}"),
        }
        seen[usize::from(want.is_some())] += 1;
    }
    assert!(seen[0] > 100 && seen[1] > 100, "{seen:?}");
}

/// A kernel whose stress run hung gets at most 10 s per tool run (or its trial deadline, when
/// that is longer), never more than the configured sanitizer deadline.
#[test]
fn a_hung_kernels_tool_runs_are_cut_to_ten_seconds_or_the_trial_deadline() {
    use std::time::Duration;
    let cut = |trial: u64, sanitize: u64| {
        let battery = crate::judge::battery::Battery {
            trials: 1,
            seed: 1,
            per_set: 1,
            stress_timeout: Duration::from_secs(trial),
            sanitize_timeout: Duration::from_secs(sanitize),
            jobs: 1,
            arch: "compute_90".into(),
            sanitizer: None,
        };
        let cfg = GateConfig {
            battery,
            runs: 1,
            tools: vec![Tool::Racecheck],
            sanitizer_args: Vec::new(),
            masks: Default::default(),
            oracles: Default::default(),
            jitter: false,
            shrink: None,
            program_timeout: None,
            program_sanitize_timeout: None,
            sampling: Some(Default::default()),
            tools_chosen: false,
        };
        let each = |tool| {
            let sc = cfg.battery.sanitize(tool);
            assert_eq!(sc.timeout, Duration::from_secs(sanitize));
            after_hang(&sc, &cfg).timeout.as_secs()
        };
        // Every other tool is cut alike; racecheck gets the margin for its deadlock line.
        let others: Vec<u64> = [
            Tool::Synccheck,
            Tool::Memcheck,
            Tool::Initcheck,
            Tool::Globalcheck,
        ]
        .into_iter()
        .map(each)
        .collect();
        assert!(others.iter().all(|t| *t == others[0]), "{others:?}");
        (others[0], each(Tool::Racecheck))
    };
    assert_eq!(cut(5, 120), (10, 15));
    assert_eq!(cut(5, 20), (10, 15));
    assert_eq!(
        cut(5, 12),
        (10, 12),
        "never longer than the configured deadline"
    );
    assert_eq!(cut(5, 8), (8, 8));
    assert_eq!(
        cut(30, 120),
        (30, 35),
        "the trial deadline when it is longer"
    );
    assert_eq!(cut(30, 20), (20, 20));
}

/// racegate's own tools batch exactly the kernels whose stress run passed or gave wrong results;
/// one that hung, faulted, ended without a verdict (an error) or never ran stress runs alone.
#[test]
fn own_tools_batch_only_kernels_whose_stress_run_passed_or_gave_wrong_results() {
    use crate::gate::stress_state::StressEnd;
    let mut st = StressState::default();
    for (case, end) in [
        ("passed", Some(StressEnd::Passed)),
        ("wrong", Some(StressEnd::Flagged)),
        (
            "hung",
            Some(StressEnd::Hung {
                finished_none: false,
            }),
        ),
        (
            "hung_none",
            Some(StressEnd::Hung {
                finished_none: true,
            }),
        ),
        ("faulted", Some(StressEnd::Faulted)),
        ("error", None),
    ] {
        st.said(case, end.as_ref());
    }
    for (case, together) in [
        ("passed", true),
        ("wrong", true),
        ("hung", false),
        ("hung_none", false),
        ("faulted", false),
        ("error", false),
        ("never_stressed", false),
    ] {
        assert_eq!(
            super::own_tools::together_under_own_tools(&st, case),
            together,
            "{case}"
        );
    }
}
