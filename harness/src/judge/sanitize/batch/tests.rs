use super::*;
use crate::judge::sanitize::batch_fixtures::*;
use rand::{RngExt, SeedableRng};

fn case(name: &str, path: &str) -> Case {
    Case::for_test(name, path, "reduce")
}

#[test]
fn batches_hold_each_case_once_in_order_with_distinct_files_and_at_most_max() {
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    for round in 0..300 {
        let n = rng.random_range(0..30);
        let files = rng.random_range(1..8);
        let cases: Vec<Case> = (0..n)
            .map(|i| {
                case(
                    &format!("c{i}"),
                    &format!("f{}.cu", rng.random_range(0..files)),
                )
            })
            .collect();
        let refs: Vec<&Case> = cases.iter().collect();
        let max = rng.random_range(1..6);
        let b = batches(&refs, max);
        let mut seen: Vec<&str> = b.iter().flatten().map(|c| c.name.as_str()).collect();
        assert_eq!(seen.len(), n, "round {round}");
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "round {round}: a case twice");
        for batch in &b {
            assert!(!batch.is_empty() && batch.len() <= max, "round {round}");
            let mut paths: Vec<&str> = batch.iter().map(|c| c.path.as_str()).collect();
            paths.sort_unstable();
            paths.dedup();
            assert_eq!(
                paths.len(),
                batch.len(),
                "round {round}: one file twice in {batch:?}"
            );
            // Within a batch, cases keep the order they were given in.
            let at = |c: &&Case| refs.iter().position(|r| r.name == c.name);
            assert!(
                batch.windows(2).all(|w| at(&w[0]) < at(&w[1])),
                "round {round}"
            );
        }
    }
    // Cases of one file cannot share a batch; distinct files fill them.
    let same: Vec<Case> = (0..3).map(|i| case(&format!("s{i}"), "one.cu")).collect();
    let refs: Vec<&Case> = same.iter().collect();
    assert_eq!(batches(&refs, 4).len(), 3);
    let distinct: Vec<Case> = (0..8)
        .map(|i| case(&format!("d{i}"), &format!("{i}.cu")))
        .collect();
    let refs: Vec<&Case> = distinct.iter().collect();
    assert_eq!(
        batches(&refs, 4).iter().map(Vec::len).collect::<Vec<_>>(),
        [4, 4]
    );
}

/// Which cases a batch settled as clean.
fn clean(settled: Vec<Settled>) -> Vec<bool> {
    settled.into_iter().map(|s| s == Settled::Clean).collect()
}

/// Which of the three cases of [`NAMES`] the run `run` settles as clean.
fn settled_clean(run: &SanitizerRun) -> Vec<bool> {
    clean(settle(run, &NAMES, &files(), NONCE))
}

fn all_ran() -> String {
    NAMES.iter().map(|n| result_line(n, OK)).collect()
}

#[test]
fn a_clean_batch_settles_every_case_that_ran_once() {
    let log = format!(
        "========= COMPUTE-SANITIZER\n{}{}========= RACECHECK SUMMARY: 0 hazards displayed\n",
        result_line("a", OK),
        result_line("b", WRONG) + &result_line("c", OK)
    );
    assert_eq!(settled_clean(&batch_run(Outcome::Clean, &log)), [true; 3]);
}

#[test]
fn a_case_that_did_not_run_exactly_once_runs_again_alone() {
    let cases = [
        // b never printed (the process ended before it)
        format!("{}{}", result_line("a", OK), result_line("c", OK)),
        // b's launch failed
        format!(
            "{}{}{}",
            result_line("a", OK),
            result_line("b", "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"),
            result_line("c", OK)
        ),
        // a line for b printed twice with the nonce
        format!("{}{}", all_ran(), result_line("b", OK)),
        // b's only line is a kernel's printf: without this run's nonce it is not a result line
        format!(
            "{}{RESULT}b (n=64 grid=1 block=64): {OK}\n{}",
            result_line("a", OK),
            result_line("c", OK)
        ),
        // ... or with another run's nonce
        format!(
            "{}{RESULT}b (n=64 grid=1 block=64): {OK} [run fedcba9876543210]\n{}",
            result_line("a", OK),
            result_line("c", OK)
        ),
        // an error whose text happens to hold the words, after the bracket
        format!(
            "{}{}{}",
            result_line("a", OK),
            result_line("b", "launch failed: results correct"),
            result_line("c", OK)
        ),
    ];
    for log in cases {
        assert_eq!(
            settled_clean(&batch_run(Outcome::Clean, &log)),
            [true, false, true],
            "{log}"
        );
    }
}

#[test]
fn a_finding_at_code_of_one_case_only_is_that_cases_and_one_at_shared_code_sends_its_holders_alone()
{
    let settled = |locs: &[&str], log: &str| {
        let f = locs.iter().map(|l| finding(l)).collect();
        settle(
            &batch_run(Outcome::Findings(f), log),
            &NAMES,
            &files(),
            NONCE,
        )
    };
    let run = |locs: &[&str]| clean(settled(locs, &all_ran()));
    assert_eq!(run(&["kernels/a.cu:12"]), [false, true, true]);
    assert_eq!(run(&["kernels/b.cu:3"]), [true, false, true]);
    // c.cu is in b's code and c's: neither is settled.
    assert_eq!(run(&["kernels/c.cu:9"]), [true, false, false]);
    assert_eq!(
        run(&["kernels/a.cu:1", "kernels/b.cu:2"]),
        [false, false, true]
    );
    // A file no case's code names, a finding without a line, the host: nothing is settled.
    assert_eq!(run(&["kernels/a.cu:1", "kernels/d.cu:2"]), [false; 3]);
    assert_eq!(run(&["k pc 0x1f0"]), [false; 3]);
    assert_eq!(run(&["<host>"]), [false; 3]);

    // What is not clean: each case's own findings, or again.
    use Settled::{Again, Clean, Found};
    let found = |locs: &[&str]| Found(locs.iter().map(|l| finding(l)).collect());
    assert_eq!(
        settled(
            &["kernels/a.cu:12", "kernels/b.cu:3", "kernels/a.cu:14"],
            &all_ran()
        ),
        [
            found(&["kernels/a.cu:12", "kernels/a.cu:14"]),
            found(&["kernels/b.cu:3"]),
            Clean
        ]
    );
    // One of b's findings is at c's file, which b's code includes: b and c again, a its own.
    assert_eq!(
        settled(
            &["kernels/b.cu:3", "kernels/c.cu:9", "kernels/a.cu:1"],
            &all_ran()
        ),
        [found(&["kernels/a.cu:1"]), Again, Again]
    );
    // A case whose launch did not say it ran is never given findings from the batch.
    let a_failed = format!(
        "{}{}{}",
        result_line("a", "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"),
        result_line("b", OK),
        result_line("c", OK)
    );
    assert_eq!(
        settled(&["kernels/a.cu:12"], &a_failed),
        [Again, Clean, Clean]
    );
    // Every spelling of a file that is not exactly one of a case's names nobody.
    for other in [
        "kernels/a.cu.bak:1",
        "a.cu:1",
        "kernels//a.cu:1",
        "Kernels/a.cu:1",
        "./kernels/a.cu:1",
    ] {
        assert_eq!(
            settled(&[other], &all_ran()),
            [Again, Again, Again],
            "{other}"
        );
    }
}

#[test]
fn a_line_less_record_beside_some_cases_findings_runs_the_others_again_as_a_batch() {
    let owners = |locs: &[&str]| {
        let f = locs
            .iter()
            .map(|l| match *l {
                "<host>" => {
                    api("Error buffer overflow has been detected. Some records have been dropped")
                }
                l => finding(l),
            })
            .collect();
        line_less_owners(&batch_run(Outcome::Findings(f), &all_ran()), &files())
    };
    assert_eq!(
        owners(&["kernels/a.cu:3", "<host>"]),
        Some(vec![true, false, false])
    );
    // c.cu is in b's code and c's: both have it.
    assert_eq!(
        owners(&["<host>", "kernels/c.cu:9"]),
        Some(vec![false, true, true])
    );
    assert_eq!(
        owners(&["<host>", "kernels/a.cu:1", "kernels/b.cu:2"]),
        Some(vec![true, true, false])
    );
    // Nobody's findings, everybody's, or no line-less record: nothing to split.
    assert_eq!(owners(&["<host>"]), None);
    assert_eq!(
        owners(&["<host>", "kernels/a.cu:1", "kernels/c.cu:2"]),
        None
    );
    assert_eq!(owners(&["kernels/a.cu:3"]), None);
    assert_eq!(
        line_less_owners(&batch_run(Outcome::Clean, &all_ran()), &files()),
        None
    );
}

#[test]
fn a_batch_that_hung_or_was_inconclusive_settles_nothing() {
    for outcome in [
        Outcome::Hang {
            left_behind: false,
            said: None,
        },
        Outcome::Inconclusive("no XML was written".into()),
    ] {
        assert_eq!(settled_clean(&batch_run(outcome, &all_ran())), [false; 3]);
    }
}

#[test]
fn the_files_of_a_ptx_are_its_file_directives_as_findings_name_them() {
    let root = Path::new("/repo");
    let ptx = "//\n.version 9.0\n\t.file\t1 \"/repo/harness/racegate_prelude.cuh\"\n\t.file\t2 \"/repo/kernels/a.cu\"\n\t.file 3 \"/elsewhere/buggy_variants/x/y.cu\", 1700000000, 120\n.visible .entry k()\n";
    assert_eq!(
        ptx_files(ptx, root),
        [
            "harness/racegate_prelude.cuh",
            "kernels/a.cu",
            "buggy_variants/x/y.cu"
        ]
    );
    assert!(ptx_files(".version 9.0\n.entry k()\n", root).is_empty());
}

#[test]
fn a_settled_case_keeps_the_tools_lines_and_only_its_own() {
    let timing = |n: &str| {
        format!("{TIMING}catalog 0 ms, device open 0 ms, module load 3 ms, launch and read back 1 ms; case {n}\n")
    };
    let log = format!(
        "========= COMPUTE-SANITIZER\n{}{}{}{}========= ERROR SUMMARY: 0 errors\n",
        result_line("a", OK),
        timing("a"),
        result_line("b", OK),
        timing("b")
    );
    let own = case_log(&log, "b", &["a", "b"]);
    assert!(
        own.contains(&result_line("b", OK)) && own.contains(&timing("b")),
        "{own}"
    );
    assert!(
        !own.contains("racegate target: a (") && !own.contains("case a\n"),
        "{own}"
    );
    assert!(
        own.contains("COMPUTE-SANITIZER") && own.contains("ERROR SUMMARY"),
        "{own}"
    );
    assert!(
        own.starts_with("(one compute-sanitizer process ran a, b"),
        "{own}"
    );
}

#[test]
fn a_batch_that_hung_points_at_the_first_case_without_a_result_line() {
    let hang = Outcome::Hang {
        left_behind: false,
        said: Some("Deadlock detected".into()),
    };
    let log = result_line("a", OK);
    assert_eq!(hung_case(&batch_run(hang.clone(), &log), &NAMES), Some(1));
    assert_eq!(hung_case(&batch_run(hang.clone(), ""), &NAMES), Some(0));
    // A failed launch still printed its line: the one after it was running.
    let log = format!(
        "{}{}",
        result_line("a", OK),
        result_line("b", "launch failed")
    );
    assert_eq!(hung_case(&batch_run(hang.clone(), &log), &NAMES), Some(2));
    // Every case printed (a hang at the end): no case was running, all run again.
    assert_eq!(hung_case(&batch_run(hang, &all_ran()), &NAMES), None);
    // Not a hang: no case to point at.
    assert_eq!(hung_case(&batch_run(Outcome::Clean, &log), &NAMES), None);
}

#[test]
fn a_batch_settles_nothing_unless_its_target_said_every_case_ran_in_time() {
    use std::time::Duration;
    let last = format!("{RESULT}{} [run {NONCE}]\n", runner::ALL_RAN);
    let log = format!("{}{last}", all_ran());
    let t = Duration::from_secs(20);
    assert!(complete(&log, NONCE, 3.0, t));
    // No last line (the target stopped at an error), another run's, or one without a nonce.
    assert!(!complete(&all_ran(), NONCE, 3.0, t));
    assert!(!complete(&log, "fedcba9876543210", 3.0, t));
    let bare = format!("{}{RESULT}{}\n", all_ran(), runner::ALL_RAN);
    assert!(!complete(&bare, NONCE, 3.0, t));
    // Twice (a forged copy next to the real one).
    assert!(!complete(&format!("{log}{last}"), NONCE, 3.0, t));
    // Longer than one case alone may take: each case might not have finished alone.
    assert!(!complete(&log, NONCE, 20.5, t));
    assert!(complete(&log, NONCE, 20.0, t));
}

#[test]
fn nonces_differ() {
    let a = runner::new_nonce();
    assert_eq!(a.len(), 16);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, runner::new_nonce());
}

#[test]
fn a_batch_stopped_by_an_error_settles_the_cases_before_it_and_batches_the_rest_again() {
    use std::time::Duration;
    let t = Duration::from_secs(20);
    let stopped = |outcome: Outcome, log: &str, seconds: f64| {
        let mut b = batch_run(outcome, log);
        b.seconds = seconds;
        stopped_at(&b, &NAMES, NONCE, t)
    };
    let error =
        "error: CUDA error during loading the module: DriverError(CUDA_ERROR_LAUNCH_FAILED)\n";
    // `b`'s launch failed under the tool (its line says so), `c`'s module did not load.
    let log = format!(
        "{}{}{error}",
        result_line("a", OK),
        result_line("b", "launch failed")
    );
    let oob = Outcome::Findings(vec![finding("kernels/b.cu:7")]);
    assert_eq!(stopped(oob.clone(), &log, 3.0), Some(2));
    // What settles of it: `a` (no finding in its files); `b` runs alone; `c` never ran.
    let b = batch_run(oob.clone(), &log);
    assert_eq!(settled_clean(&b), [true, false, false]);
    // What memcheck really reports there (H200 run 27, call D): the failed module load too, a
    // host API error with no source line. It follows the fault, which came from a case that did
    // not say its launch ran: `a` still settles, and the cases from the stop run again as a
    // batch.
    let mut both = vec![finding("kernels/b.cu:7")];
    both.push(api("Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to \"unspecified launch failure\" on CUDA API call to cuModuleLoadData."));
    let real = batch_run(Outcome::Findings(both.clone()), &log);
    assert_eq!(settled_clean(&real), [true, false, false]);
    assert_eq!(stopped(Outcome::Findings(both), &log, 3.0), Some(2));
    // Stopped before any case printed: nothing to learn, every case alone.
    assert_eq!(stopped(oob.clone(), error, 3.0), None);
    // A whole run, a killed or hung one, an unread XML, or one past one case's deadline: no stop.
    let last = format!("{RESULT}{} [run {NONCE}]\n", runner::ALL_RAN);
    assert_eq!(
        stopped(Outcome::Clean, &format!("{}{last}", all_ran()), 3.0),
        None
    );
    let hang = Outcome::Hang {
        left_behind: false,
        said: None,
    };
    assert_eq!(stopped(hang, &log, 3.0), None);
    assert_eq!(
        stopped(Outcome::Inconclusive("no XML".into()), &log, 3.0),
        None
    );
    assert_eq!(stopped(oob.clone(), &log, 20.5), None);
    // A line of another run (no nonce) is not a line; a line after a gap is nobody's order.
    let forged = format!("{RESULT}a (n=64 grid=1 block=64): {OK}\n");
    assert_eq!(stopped(oob.clone(), &forged, 3.0), None);
    let gap = format!("{}{}", result_line("a", OK), result_line("c", OK));
    assert_eq!(stopped(oob, &gap, 3.0), None);
}

/// `stopped_at` over every shape of a batch's log, drawn at random: which cases printed their
/// line (with this run's nonce, another's, or none), the last line or not, the outcome and the
/// time. It names a stop exactly when the process ended on its own in time, the target never
/// said every case ran, a prefix of the cases (at least one) printed and none after it.
#[test]
fn a_stop_is_named_exactly_when_a_prefix_of_the_cases_printed_and_the_rest_never_ran() {
    use std::time::Duration;
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(27);
    let t = Duration::from_secs(20);
    let names: Vec<String> = (0..6).map(|i| format!("k{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for round in 0..3000 {
        let n = rng.random_range(1..=refs.len());
        let cases = &refs[..n];
        // 0: no line, 1: this run's line, 2: another run's line (a kernel's printf).
        let printed: Vec<u8> = (0..n).map(|_| rng.random_range(0..3u8)).collect();
        let mut log = String::new();
        for (name, p) in cases.iter().zip(&printed) {
            match p {
                1 => log.push_str(&result_line(name, OK)),
                2 => log.push_str(&format!("{RESULT}{name} (n=64 grid=1 block=64): {OK}\n")),
                _ => {}
            }
        }
        let said_all = rng.random_bool(0.2);
        if said_all {
            log.push_str(&format!("{RESULT}{} [run {NONCE}]\n", runner::ALL_RAN));
        }
        let outcome = match rng.random_range(0..4) {
            0 => Outcome::Clean,
            1 => Outcome::Findings(vec![finding("kernels/x.cu:3")]),
            2 => Outcome::Hang {
                left_behind: false,
                said: None,
            },
            _ => Outcome::Inconclusive("no XML".into()),
        };
        let seconds = if rng.random_bool(0.1) { 25.0 } else { 3.0 };
        let ended = matches!(outcome, Outcome::Clean | Outcome::Findings(_));
        let mut b = batch_run(outcome, &log);
        b.seconds = seconds;
        let got = stopped_at(&b, cases, NONCE, t);
        let ours: Vec<bool> = printed.iter().map(|p| *p == 1).collect();
        let k = ours.iter().position(|p| !p);
        let want = match k {
            Some(k) if k > 0 && ours[k..].iter().all(|p| !p) => Some(k),
            _ => None,
        };
        let whole = said_all && seconds <= 20.0;
        let want = want.filter(|_| ended && seconds <= 20.0 && !whole);
        assert_eq!(
            got, want,
            "round {round}: printed {printed:?}, all {said_all}, {seconds} s, ended {ended}"
        );
    }
}

/// A line-less record settles nothing unless it is a host API error that only a device fault
/// causes and some case did not say its launch ran: over every error code memcheck can name
/// (the sticky ones and others), every other record kind, and every pattern of which cases said
/// they ran.
#[test]
fn a_line_less_record_is_set_aside_only_when_it_follows_a_fault_of_a_case_that_did_not_run() {
    let other = [
        "CUDA_ERROR_INVALID_VALUE",
        "CUDA_ERROR_OUT_OF_MEMORY",
        "CUDA_ERROR_NOT_READY",
        "CUDA_ERROR_INVALID_HANDLE",
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "CUDA_ERROR_ILLEGAL_ADDRESSES",
        "CUDA_ERROR_LAUNCH_FAILED_X",
        "",
    ];
    let says = |ran: [bool; 3]| -> String {
        NAMES
            .iter()
            .zip(ran)
            .map(|(n, r)| result_line(n, if r { OK } else { "launch failed" }))
            .collect()
    };
    for mask in 0..8u8 {
        let ran = [mask & 1 != 0, mask & 2 != 0, mask & 4 != 0];
        let log = says(ran);
        let all_ran = ran.iter().all(|r| *r);
        for (codes, is_sticky) in [(&STICKY[..], true), (&other[..], false)] {
            for code in codes {
                for how in ["due to \"unspecified launch failure\"", "(error 719)"] {
                    let text =
                        format!("Program hit {code} {how} on CUDA API call to cuMemFreeAsync.");
                    let run = batch_run(Outcome::Findings(vec![api(&text)]), &log);
                    let got = settled_clean(&run);
                    let want = match is_sticky && !all_ran {
                        true => ran,
                        false => [false; 3],
                    };
                    assert_eq!(got, want, "{text} with ran = {ran:?}");
                }
            }
        }
        // The same words in another kind of record, or at a line, are not a host API error.
        for kind in ["Precise", "Unknown(Sanitizer)", "Analysis", "api"] {
            let f = Finding {
                kind: kind.into(),
                ..api("Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) on CUDA API call to cuMemFreeAsync.")
            };
            let run = batch_run(Outcome::Findings(vec![f]), &log);
            assert_eq!(settled_clean(&run), [false; 3], "{kind}");
        }
        // A tool warning with no line (records dropped) stays nobody's.
        let warning = Finding {
            kind: "Unknown(Sanitizer)".into(),
            level: "Warning".into(),
            location: "<no line info>".into(),
            what: "Error buffer overflow has been detected. Some records have been dropped".into(),
            ..finding("")
        };
        let run = batch_run(Outcome::Findings(vec![warning]), &log);
        assert_eq!(settled_clean(&run), [false; 3]);
    }
}
