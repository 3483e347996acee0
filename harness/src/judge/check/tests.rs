use super::*;

/// A run behind a cell, for the tests that only look at judgements and locations.
fn no_evidence() -> Evidence {
    Evidence::Sanitizer(SanitizerRun {
        case: String::new(),
        tool: Tool::Racecheck,
        outcome: Outcome::Clean,
        exit: String::new(),
        seconds: 0.0,
        log: String::new(),
        command: String::new(),
    })
}
use crate::source::catalog::{Bug, Entry, Origin};

fn case(expect: &[(Detector, Expect)]) -> Case {
    Case {
        name: "k::v".into(),
        path: "buggy_variants/k/v.cu".into(),
        exercise: "reduce".into(),
        entry: Entry {
            name: "k".into(),
            params: Default::default(),
        },
        bug: Some(Bug {
            breaks: "kernels/k.cu".into(),
            class: "x".into(),
            escapes: None,
            wrong_line: 12,
        }),
        expect: expect.iter().copied().collect(),
        title: String::new(),
        origin: Origin::Family(crate::source::exercises::by_name("reduce").expect("a family")),
    }
}

#[test]
fn judgements_follow_the_declared_expectation() {
    let c = case(&[
        (Detector::Racecheck, Expect::Flag),
        (Detector::Stress, Expect::May),
    ]);
    let j = |d, o| cell(&c, d, o, 0.0, None, no_evidence()).judgement;
    assert_eq!(
        j(Detector::Racecheck, Observed::Flagged("1 error(s)".into())),
        Judgement::Ok
    );
    assert_eq!(
        j(Detector::Racecheck, Observed::Clean("clean".into())),
        Judgement::Missed
    );
    assert_eq!(
        j(Detector::Memcheck, Observed::Flagged("1 error(s)".into())),
        Judgement::Unexpected
    );
    assert_eq!(
        j(Detector::Memcheck, Observed::Clean("clean".into())),
        Judgement::Ok
    );
    assert_eq!(
        j(Detector::Stress, Observed::Clean("0/50".into())),
        Judgement::Ok
    );
    assert_eq!(
        j(
            Detector::Racecheck,
            Observed::Inconclusive("no sanitizer".into())
        ),
        Judgement::Inconclusive
    );
    // A `may` expectation records a judged limit of globalcheck; a failed tool stays
    // inconclusive, `may` or not.
    let c = case(&[(Detector::Globalcheck, Expect::May)]);
    let j = |o| cell(&c, Detector::Globalcheck, o, 0.0, None, no_evidence()).judgement;
    let limit = format!(
        "{}392 global access(es) outside every allocation it knows",
        crate::judge::sanitize::injected::decide::CANNOT_JUDGE
    );
    assert_eq!(j(Observed::Inconclusive(limit)), Judgement::Ok);
    assert_eq!(
        j(Observed::Inconclusive(
            "globalcheck was not loaded into the target".into()
        )),
        Judgement::Inconclusive
    );
}

#[test]
fn cells_point_at_the_finding_or_else_the_bug_line() {
    let c = case(&[(Detector::Racecheck, Expect::Flag)]);
    let at_bug = cell(
        &c,
        Detector::Stress,
        Observed::Clean("0/5".into()),
        0.0,
        None,
        no_evidence(),
    );
    assert_eq!(
        (at_bug.file.as_str(), at_bug.line),
        ("buggy_variants/k/v.cu", Some(12))
    );
    let at_finding = cell(
        &c,
        Detector::Racecheck,
        Observed::Flagged("x".into()),
        0.0,
        Some(("kernels/k.cu".into(), 30)),
        no_evidence(),
    );
    assert_eq!(
        (at_finding.file.as_str(), at_finding.line),
        ("kernels/k.cu", Some(30))
    );
}

/// A case named `name` with the expectations given.
fn named(name: &str, expect: &[(Detector, Expect)]) -> Case {
    Case {
        name: name.into(),
        ..case(expect)
    }
}

/// The order [`crate::proc::pool::run_all_ranked`] starts `tasks` in while `after_hang` stays
/// as it is: the highest rank first, ties in the order given.
fn picks(tasks: &[Task], after_hang: &AfterHang) -> Vec<String> {
    let mut left: Vec<usize> = (0..tasks.len()).collect();
    let mut out = Vec::new();
    while !left.is_empty() {
        let mut best = 0;
        for k in 1..left.len() {
            if task_rank(&tasks[left[k]], 100, after_hang, true)
                > task_rank(&tasks[left[best]], 100, after_hang, true)
            {
                best = k;
            }
        }
        out.push(task_label(&tasks[left.remove(best)]));
    }
    out
}

/// The stress cells of a run that ended with `verdict` after `trials_run` trials.
fn stress_cells(c: &Case, verdict: Verdict, trials_run: u32) -> Vec<Cell> {
    let r = StressReport {
        case: c.name.clone(),
        jitter: true,
        seed: 1,
        size: "default".into(),
        trials_requested: 100,
        trials_run,
        failures: 0,
        rate: 0.0,
        upper_bound_95: None,
        verdict,
        first_failure: None,
        repro: None,
        seconds: 0.0,
        first_detection_seconds: None,
        phases: Default::default(),
    };
    vec![stress_cell(c, Detector::Stress, &r), watchdog_cell(c, &r)]
}

#[test]
fn the_tools_of_a_case_that_hangs_wait_for_its_stress_run_then_go_first() {
    let hang = named("h::deadlock", &[(Detector::Watchdog, Expect::Flag)]);
    let plain = named("p::race", &[(Detector::Racecheck, Expect::Flag)]);
    let tasks = vec![
        Task::Sanitize(&plain, Tool::Racecheck),
        Task::Sanitize(&hang, Tool::Synccheck),
        Task::Own(&hang, vec![Tool::Globalcheck, Tool::Sharedcheck]),
        Task::Batch(vec![&plain], Tool::Memcheck),
        Task::Stress(&plain, true),
        Task::Stress(&hang, true),
        Task::Stress(&hang, false),
    ];
    // Before its stress run has said anything: the hanging case's stress cells first, the rest
    // long first, its tools only when nothing else is left (in the order given).
    let before = AfterHang::default();
    assert_eq!(
        picks(&tasks, &before),
        [
            "stress h::deadlock",
            "stress-nojitter h::deadlock",
            "racecheck p::race",
            "memcheck batch p::race",
            "stress p::race",
            "synccheck h::deadlock",
            "globalcheck+sharedcheck h::deadlock",
        ]
    );
    // Not ready at all: a free thread waits for the stress run rather than start them.
    for t in &tasks[1..3] {
        assert_eq!(task_rank(t, 100, &before, true), crate::proc::pool::NOT_YET);
    }
    // Once it has: its tools before anything else left (whatever the verdict; the cut depends
    // on it, not the order).
    for (verdict, trials_run) in [
        (
            Verdict::Hang {
                deadline_s: 5.0,
                left_behind: false,
            },
            1,
        ),
        (
            Verdict::Hang {
                deadline_s: 5.0,
                left_behind: false,
            },
            7,
        ),
        (Verdict::Pass, 100),
    ] {
        let said = AfterHang::default();
        said.record(&hang.name, &stress_cells(&hang, verdict, trials_run));
        let order = picks(&tasks, &said);
        assert_eq!(
            order[2..4],
            [
                "globalcheck+sharedcheck h::deadlock",
                "synccheck h::deadlock"
            ]
        );
        assert_eq!(
            order[4..],
            [
                "racecheck p::race",
                "memcheck batch p::race",
                "stress p::race"
            ]
        );
    }
}

#[test]
fn a_case_whose_stress_run_finished_no_trial_gets_the_cut_tool_deadline() {
    let cfg = Battery::for_machine(
        100,
        1,
        std::time::Duration::from_secs(5),
        std::time::Duration::from_secs(120),
        Some(2),
    );
    let c = named("h::deadlock", &[(Detector::Watchdog, Expect::Flag)]);
    let hang = Verdict::Hang {
        deadline_s: 5.0,
        left_behind: false,
    };
    let full = cfg.sanitize(Tool::Synccheck).timeout;
    let cut = sanitize::tool::after_hang_deadline(full, cfg.stress_timeout);
    assert!(cut < full, "{cut:?} {full:?}");
    // Not said yet: the whole deadline.
    let after = AfterHang::default();
    assert_eq!(after.sanitize(&cfg, &c, Tool::Synccheck).timeout, full);
    for (verdict, trials_run, want) in [
        (hang.clone(), 1, cut),
        (hang.clone(), 0, cut),
        // Some trials finished before the hang: at the tools' small size it may finish.
        (hang, 2, full),
        (Verdict::Pass, 100, full),
        (Verdict::Fail, 100, full),
        (
            Verdict::Fault {
                error: "719".into(),
            },
            1,
            full,
        ),
    ] {
        let after = AfterHang::default();
        after.record(&c.name, &stress_cells(&c, verdict.clone(), trials_run));
        for tool in [Tool::Racecheck, Tool::Memcheck, Tool::Globalcheck] {
            assert_eq!(
                after.sanitize(&cfg, &c, tool).timeout,
                want,
                "{verdict:?} {trials_run} {tool}"
            );
        }
        // Only that case.
        let other = named("other", &[]);
        assert_eq!(after.sanitize(&cfg, &other, Tool::Racecheck).timeout, full);
    }
}

#[test]
fn a_stress_cell_that_fails_to_run_still_releases_its_cases_tools() {
    let c = named("h::deadlock", &[(Detector::Watchdog, Expect::Flag)]);
    let hang = Verdict::Hang {
        deadline_s: 5.0,
        left_behind: false,
    };
    // Without jitter: not the cell the tools wait for.
    let after = AfterHang::default();
    after.after(
        &Task::Stress(&c, false),
        &Ok(stress_cells(&c, hang.clone(), 1)),
    );
    assert_eq!(after.said(&c.name), None);
    // With jitter: its verdict; an error: said, with no cut.
    after.after(
        &Task::Stress(&c, true),
        &Err(crate::Error::Child("the worker failed".into())),
    );
    assert_eq!(after.said(&c.name), Some(false));
    let tools = Task::Sanitize(&c, Tool::Racecheck);
    assert!(task_rank(&tools, 100, &after, true) > 1e8, "released");
    let after = AfterHang::default();
    after.after(&Task::Stress(&c, true), &Ok(stress_cells(&c, hang, 1)));
    assert_eq!(after.said(&c.name), Some(true));
    // Another task says nothing.
    let other = AfterHang::default();
    other.after(&tools, &Ok(Vec::new()));
    assert_eq!(other.said(&c.name), None);
}

#[test]
fn cases_racecheck_or_initcheck_should_flag_share_batches_of_their_own_and_the_rest_run_as_before()
{
    use Detector::{Initcheck, Memcheck, Racecheck, Synccheck, Watchdog};
    use Expect::{Flag, May};
    let at = |name: &str, path: &str, expect: &[(Detector, Expect)]| Case {
        path: path.into(),
        ..named(name, expect)
    };
    let cases = [
        at("c1", "kernels/c1.cu", &[]),
        at("c2", "kernels/c2.cu", &[]),
        at(
            "r1",
            "buggy_variants/r1.cu",
            &[(Racecheck, Flag), (Synccheck, Flag), (Memcheck, Flag)],
        ),
        at(
            "r2",
            "buggy_variants/r2.cu",
            &[(Racecheck, May), (Initcheck, Flag)],
        ),
        // The same file as r1: never in one batch with it.
        at("r3", "buggy_variants/r1.cu", &[(Racecheck, Flag)]),
        // A case that hangs runs alone under every tool.
        at(
            "h",
            "buggy_variants/h.cu",
            &[(Racecheck, Flag), (Watchdog, Flag)],
        ),
    ];
    let refs: Vec<&Case> = cases.iter().collect();
    let tools = [
        Tool::Racecheck,
        Tool::Synccheck,
        Tool::Memcheck,
        Tool::Initcheck,
    ];
    let labels: Vec<String> = plan(&refs, &tools, &[]).iter().map(task_label).collect();
    let want = [
        "racecheck batch c1+c2",
        "racecheck batch r1+r2",
        "racecheck r3",
        "racecheck h",
        "synccheck batch c1+c2+r2+r3",
        "synccheck r1",
        "synccheck h",
        "memcheck batch c1+c2+r2+r3",
        "memcheck r1",
        "memcheck h",
        // r1 and r3 share a file: two batches.
        "initcheck batch c1+c2+r1",
        "initcheck batch r3",
        "initcheck r2",
        "initcheck h",
    ];
    let stress = cases.iter().flat_map(|c| {
        [
            format!("stress {}", c.name),
            format!("stress-nojitter {}", c.name),
        ]
    });
    let want: Vec<String> = want.iter().map(|s| s.to_string()).chain(stress).collect();
    assert_eq!(labels, want);
}

#[test]
fn racegate_own_tools_wait_in_the_queue_until_their_build_is_settled() {
    let c = named("k::v", &[]);
    let own = vec![Tool::Globalcheck, Tool::Sharedcheck];
    let none = AfterHang::default();
    for t in [
        Task::Own(&c, own.clone()),
        Task::OwnBatch(vec![&c], own.clone()),
    ] {
        assert_eq!(task_rank(&t, 100, &none, false), crate::proc::pool::NOT_YET);
        assert!(task_rank(&t, 100, &none, true) > 0.0);
    }
    // Nothing else waits for it.
    for t in [
        Task::Sanitize(&c, Tool::Racecheck),
        Task::Batch(vec![&c], Tool::Memcheck),
        Task::Stress(&c, true),
    ] {
        assert!(task_rank(&t, 100, &none, false) > 0.0);
    }
}
