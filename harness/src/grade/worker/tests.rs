//! Tests of the grading worker's parent side (`worker/mod.rs`).
use std::time::Duration;

use rand::SeedableRng;

use super::*;
use crate::source::exercises::{self, SizeChoice};

/// Over many requests of three problems with sizes drawn as grading draws them, every
/// request poisons its problems 0xFFFFFFFF, zero and a random word (in some order), so a
/// kernel that reads memory it never wrote meets both fixed patterns.
#[test]
fn every_request_takes_both_fixed_poisons_and_consecutive_problems_differ() {
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    for _ in 0..2000 {
        let labels: Vec<String> = (0..3)
            .map(|_| {
                format!(
                    "n={} grid={} block=256",
                    rand::RngExt::random_range(&mut rng, 1..1_000_000u32),
                    rand::RngExt::random_range(&mut rng, 1..4000u32)
                )
            })
            .collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let p: Vec<u32> = (0..3).map(|t| problem_poison(labels[0], t)).collect();
        assert!(p.windows(2).all(|w| w[0] != w[1]), "{labels:?}: {p:x?}");
        if compile::fingerprint(labels[0]) < u64::MAX - 3 {
            assert!(
                p.contains(&0xFFFF_FFFF) && p.contains(&0),
                "{labels:?}: {p:x?}"
            );
        }
    }
}

/// A trial's schedule and poison come from its place among its item's trials: the same in the
/// whole request, in the rest after a fresh worker, and in a request of its own (alone), as the
/// parent places them (`Place`: the first's index, the item's first label).
#[test]
fn a_trials_schedule_and_poison_do_not_depend_on_the_request_it_came_in() {
    let problems = three_problems();
    let mut more = three_problems();
    for (i, p) in more.iter_mut().enumerate() {
        p.label = format!("{} (again {i})", p.label);
    }
    let item: Vec<Problem> = problems.into_iter().chain(more).collect();
    let whole = trial_keys(&Place::default(), &item);
    let base = Some(item[0].label.clone());
    for first in 0..item.len() {
        let place = Place {
            first: u32::try_from(first).unwrap(),
            base: base.clone(),
        };
        assert_eq!(
            trial_keys(&place, &item[first..]),
            whole[first..],
            "the rest from {first}"
        );
        assert_eq!(
            trial_keys(&place, &item[first..=first]),
            whole[first..=first],
            "{first} alone"
        );
    }
    // Two problems of one size at different places still differ.
    let same = vec![item[0].clone(), item[0].clone()];
    let keys = trial_keys(&Place::default(), &same);
    assert_ne!(keys[0], keys[1]);
}

#[test]
fn a_timing_worker_answers_in_its_response_file_not_on_stdout() {
    let work = Scratch::new().unwrap();
    let (args, response) = work
        .worker_call(
            "mine",
            Path::new("k.ptx"),
            &[],
            false,
            true,
            &Place::default(),
        )
        .unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
    let at = args
        .iter()
        .position(|a| a == "--response")
        .expect("--response");
    assert_eq!(Path::new(&args[at + 1]), response);
    assert!(args.contains(&"--time".to_string()), "{args:?}");
}

#[test]
fn a_truncated_response_marks_the_rest_not_run() {
    let mut file = wire::encode_record(&Record::Ran(vec![Bytes(vec![1, 2, 3])]));
    file.extend(wire::encode_record(&Record::Fault("error 719".into())));
    let cut = wire::encode_record(&Record::Ran(vec![Bytes(vec![4, 5, 6])]));
    file.extend_from_slice(&cut[..cut.len() - 4]);
    assert_eq!(
        read_response(&file, 4),
        vec![
            WorkerResult::Ran(vec![vec![1, 2, 3]]),
            WorkerResult::Fault("error 719".into()),
            WorkerResult::NotRun,
            WorkerResult::NotRun
        ]
    );
}

/// A stand-in for `racegate __grade-worker`: a shell script that gets the same arguments
/// (the response file is the 7th).
fn fake_worker(dir: &Path, script: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("fake-worker.sh");
    std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn three_problems() -> Vec<Problem> {
    let entry = crate::source::catalog::Entry {
        name: "reduce".into(),
        params: [("block".to_string(), 256)].into(),
    };
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(1);
    (0..3)
        .map(|_| {
            exercises::by_name("reduce")
                .unwrap()
                .problem(&entry, SizeChoice::Fixed(300), &mut rng)
        })
        .collect()
}

/// Three problems through `run_worker`, with `script` standing in for every worker.
fn run_fake(script: &str, timeout_ms: u64) -> Vec<WorkerResult> {
    try_fake(script, timeout_ms).unwrap()
}

fn try_fake(script: &str, timeout_ms: u64) -> Result<Vec<WorkerResult>> {
    let work = Scratch::new().unwrap();
    let exe = fake_worker(work.path(), script);
    let problems = three_problems();
    let cfg = GradeConfig::for_tests(Duration::from_millis(timeout_ms));
    run_worker(&problems, false, &|first, rest, _| {
        let place = Place {
            first: u32::try_from(first).unwrap(),
            base: None,
        };
        let files = WorkerFiles {
            exe: &exe,
            work: &work,
            ptx: Path::new("x.ptx"),
        };
        let request = WorkerRequest {
            problems: rest,
            jitter: true,
            place: &place,
            tag: "t",
        };
        run_worker_once(&cfg, &files, &request)
    })
}

/// The minimal-repro search's call is bounded by its total budget, whatever the per-problem
/// deadline: a worker that keeps going (one result, then nothing) is ended at the budget, the
/// problem in hand is a hang and the rest are not run; no fresh worker is started.
#[test]
fn a_bounded_call_ends_at_its_budget_with_one_worker() {
    let work = Scratch::new().unwrap();
    let count = work.path().join("starts");
    let one = wire::encode_record(&Record::Ran(vec![Bytes(vec![1])]));
    let hex: String = one.iter().map(|b| format!("\\{:03o}", b)).collect();
    let exe = fake_worker(
        work.path(),
        &format!(
            "echo x >> {}; printf '{hex}' > $7; sleep 30",
            count.display()
        ),
    );
    let started = std::time::Instant::now();
    let files = WorkerFiles {
        exe: &exe,
        work: &work,
        ptx: Path::new("x.ptx"),
    };
    let problems = three_problems();
    let request = WorkerRequest {
        problems: &problems,
        jitter: true,
        place: &Place::default(),
        tag: "shrink",
    };
    let r = run_worker_within(
        &files,
        &request,
        Duration::from_secs(20),
        Duration::from_millis(500),
    )
    .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        r,
        vec![
            WorkerResult::Ran(vec![vec![1]]),
            WorkerResult::Hang,
            WorkerResult::NotRun
        ]
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
}

#[test]
fn a_module_that_did_not_load_is_found_in_the_response() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.resp");
    std::fs::write(&p, wire::encode_record(&Record::Fault("error 719".into()))).unwrap();
    assert_eq!(load_fault(&p), None);
    assert_eq!(run_fault(&p), Some("error 719".into()));
    let f = format!("{LOAD_FAULT}too much shared data");
    std::fs::write(&p, wire::encode_record(&Record::Fault(f.clone()))).unwrap();
    assert_eq!(load_fault(&p), Some(f));
    assert_eq!(run_fault(&p), None);
}

#[test]
fn a_worker_lost_for_another_reason_is_the_machines_failure() {
    // No record, and an exit code: the worker could not open the GPU, say.
    let e = try_fake("echo 'error: no CUDA device: gone' >&2; exit 4", 5000).unwrap_err();
    assert!(e.to_string().contains("exited with code 4"), "{e}");
    assert!(e.to_string().contains("no CUDA device: gone"), "{e}");
    let e = try_fake("kill -KILL $$", 5000).unwrap_err();
    assert!(e.to_string().contains("signal 9"), "{e}");
}

#[test]
fn the_worker_does_not_get_the_secret() {
    // The fake worker writes a fault whose text is what it sees of the secret.
    let r = run_fake(
        "printf '{\"Fault\":\"[%s]\"}\\n' \"${RACEGATE_GRADE_SECRET-unset}\" > $7",
        5000,
    );
    assert_eq!(r[0], WorkerResult::Fault("[unset]".into()));
}

#[test]
fn after_a_fault_a_fresh_worker_takes_the_remaining_trials() {
    // Every worker faults on its first problem and exits cleanly, as the real one does.
    let line = wire::encode_record(&Record::Fault("error 719".into()));
    let line = String::from_utf8(line).unwrap();
    assert!(!line.contains('\''), "quoted for the shell as is");
    let r = run_fake(&format!("printf '%s' '{line}' > $7; echo progress"), 5000);
    assert_eq!(r, vec![WorkerResult::Fault("error 719".into()); 3]);
}

#[test]
fn after_two_hangs_the_remaining_trials_are_not_run() {
    let start = std::time::Instant::now();
    let r = run_fake("sleep 30", 300);
    assert_eq!(
        r,
        vec![WorkerResult::Hang, WorkerResult::Hang, WorkerResult::NotRun]
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

/// Sharing the GPU: a hang beside other submissions is run again alone and that run is the
/// result; after a hang alone the next problems run alone one at a time until one finishes.
#[test]
fn a_hang_beside_others_counts_only_when_its_run_alone_hangs_too() {
    let problems: Vec<Problem> = (0..4).flat_map(|_| three_problems()).take(4).collect();
    let label = |p: &Problem| problems.iter().position(|q| std::ptr::eq(q, p)).unwrap();
    // Alone, problem 0 runs and problem 3 runs; beside others every run hangs at once.
    let calls: std::sync::Mutex<Vec<(Vec<usize>, bool)>> = Default::default();
    let run = |first: usize, rest: &[Problem], alone: bool| {
        assert_eq!(
            label(&rest[0]),
            first,
            "the index of the run's first problem"
        );
        calls
            .lock()
            .unwrap()
            .push((rest.iter().map(label).collect(), alone));
        let first = label(&rest[0]);
        let mut out = vec![WorkerResult::NotRun; rest.len()];
        out[0] = if alone && (first == 0 || first == 3) {
            WorkerResult::Ran(vec![vec![u8::try_from(first).unwrap()]])
        } else {
            WorkerResult::Hang
        };
        Ok(out)
    };
    let r = run_worker(&problems, true, &run).unwrap();
    assert_eq!(
        r,
        vec![
            WorkerResult::Ran(vec![vec![0]]),
            WorkerResult::Hang,
            WorkerResult::Hang,
            WorkerResult::NotRun
        ]
    );
    assert_eq!(
        calls.into_inner().unwrap(),
        vec![
            (vec![0, 1, 2, 3], false), // beside others: 0 hangs
            (vec![0], true),           // 0 alone: it ran
            (vec![1, 2, 3], false),    // beside others again: 1 hangs
            (vec![1], true),           // 1 alone: a hang
            (vec![2], true),           // so 2 alone straight away: the second hang, the end
        ]
    );
    // Alone from the start (`--exclusive-gpu`), a hang is final and nothing runs twice.
    let once: std::sync::Mutex<Vec<(Vec<usize>, bool)>> = Default::default();
    let run = |first: usize, rest: &[Problem], alone: bool| {
        assert_eq!(
            label(&rest[0]),
            first,
            "the index of the run's first problem"
        );
        once.lock()
            .unwrap()
            .push((rest.iter().map(label).collect(), alone));
        let mut out = vec![WorkerResult::NotRun; rest.len()];
        out[0] = WorkerResult::Hang;
        Ok(out)
    };
    let r = run_worker(&problems, false, &run).unwrap();
    assert_eq!(r[..2], [WorkerResult::Hang, WorkerResult::Hang]);
    assert_eq!(
        once.into_inner().unwrap(),
        vec![(vec![0, 1, 2, 3], false), (vec![1, 2, 3], false)]
    );
}

/// Sharing the GPU, a kernel that faulted at the first problem of two workers in a row has its
/// remaining problems run one per worker, side by side; each result is then taken in order as
/// if run next: a hang beside others runs again alone, and after the second hang the rest are
/// not run. Alone from the start, workers stay one after another.
#[test]
fn after_two_workers_in_a_row_end_at_a_fault_the_rest_run_one_per_worker_side_by_side() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let problems: Vec<Problem> = (0..4).flat_map(|_| three_problems()).take(10).collect();
    let label = |p: &Problem| problems.iter().position(|q| std::ptr::eq(q, p)).unwrap();
    let fault = || WorkerResult::Fault("CUDA_ERROR_LAUNCH_FAILED".into());
    // Problems 0-5 fault, 6 runs, 7 and 8 hang (alone too), 9 would run.
    let outcome = |i: usize| match i {
        0..=5 => fault(),
        6 | 9 => WorkerResult::Ran(vec![vec![u8::try_from(i).unwrap()]]),
        _ => WorkerResult::Hang,
    };
    for shared in [true, false] {
        let calls: std::sync::Mutex<Vec<(Vec<usize>, bool)>> = Default::default();
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let run = |first: usize, rest: &[Problem], alone: bool| {
            assert_eq!(label(&rest[0]), first);
            calls
                .lock()
                .unwrap()
                .push((rest.iter().map(label).collect(), alone));
            most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            now.fetch_sub(1, Ordering::SeqCst);
            // A worker runs its problems in order until one faults or hangs.
            let mut out = vec![WorkerResult::NotRun; rest.len()];
            for (k, p) in rest.iter().enumerate() {
                out[k] = outcome(label(p));
                if out[k] != WorkerResult::Ran(vec![vec![u8::try_from(label(p)).unwrap()]]) {
                    break;
                }
            }
            Ok(out)
        };
        let r = run_worker(&problems, shared, &run).unwrap();
        let want: Vec<WorkerResult> = (0..10)
            .map(|i| match i {
                0..=8 => outcome(i),
                _ => WorkerResult::NotRun,
            })
            .collect();
        assert_eq!(r, want, "shared {shared}");
        let mut calls = calls.into_inner().unwrap();
        if shared {
            // Two workers, then 2..=9 one each side by side (in any order), then 7 and 8 alone.
            assert_eq!(
                calls[..2],
                [
                    (vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9], false),
                    ((1..10).collect(), false)
                ]
            );
            let mut each: Vec<_> = calls[2..10].to_vec();
            each.sort();
            assert_eq!(each, (2..10).map(|i| (vec![i], false)).collect::<Vec<_>>());
            assert_eq!(calls[10..], [(vec![7], true), (vec![8], true)]);
            assert!(most.load(Ordering::SeqCst) > 1, "one after another");
        } else {
            calls.sort();
            assert_eq!(calls.len(), 8, "{calls:?}");
            assert_eq!(
                most.load(Ordering::SeqCst),
                1,
                "alone from the start, side by side"
            );
        }
    }
}

/// A worker that could not start among the side-by-side runs does not cost the item: from it
/// on, the problems run one worker at a time as before, and its error stands only if it comes
/// again there; one past the second hang (which would never have run) changes nothing.
#[test]
fn a_side_by_side_run_that_fails_to_start_is_run_again_in_order() {
    let problems: Vec<Problem> = (0..4).flat_map(|_| three_problems()).take(8).collect();
    let label = |p: &Problem| problems.iter().position(|q| std::ptr::eq(q, p)).unwrap();
    let fault = || WorkerResult::Fault("CUDA_ERROR_LAUNCH_FAILED".into());
    for (broken, again, want_err) in [
        (4, false, false),
        (2, false, false),
        (4, true, true),
        (7, true, false),
    ] {
        let tries: std::sync::Mutex<Vec<(usize, bool)>> = Default::default();
        let run = |first: usize, rest: &[Problem], _alone: bool| -> Result<Vec<WorkerResult>> {
            let i = label(&rest[0]);
            let side_by_side = rest.len() == 1 && first >= 2;
            tries.lock().unwrap().push((i, side_by_side));
            if i == broken && (side_by_side || again) {
                return Err(crate::Error::Child("the worker did not start".into()));
            }
            // 0..=4 fault, 5 and 6 hang, 7 runs.
            let mut out = vec![WorkerResult::NotRun; rest.len()];
            out[0] = match i {
                0..=4 => fault(),
                7 => WorkerResult::Ran(vec![vec![7]]),
                _ => WorkerResult::Hang,
            };
            Ok(out)
        };
        let got = run_worker(&problems, true, &run);
        assert_eq!(
            got.is_err(),
            want_err,
            "broken {broken}, again {again}: {got:?}"
        );
        if let Ok(r) = got {
            let want: Vec<WorkerResult> = (0..8)
                .map(|i| match i {
                    0..=4 => fault(),
                    5 | 6 => WorkerResult::Hang,
                    _ => WorkerResult::NotRun,
                })
                .collect();
            assert_eq!(r, want, "broken {broken}");
        }
    }
}

#[test]
fn the_scratch_folder_goes_away_with_the_grade() {
    let work = Scratch::new().unwrap();
    let dir = work.path().to_path_buf();
    work.write("plain.ptx", b"ptx").unwrap();
    assert!(dir.join("plain.ptx").is_file());
    drop(work);
    assert!(!dir.exists(), "{} left behind", dir.display());
}

/// A request file that does not parse stops the worker with exit 2, the parser's reason kept
/// as the cause (before any PTX is read or a device is opened).
#[test]
fn a_request_that_does_not_parse_keeps_the_parsers_reason() {
    let d = tempfile::tempdir().unwrap();
    let request = d.path().join("request.json");
    std::fs::write(&request, "{\"jitter\": true,}").unwrap();
    let e = worker(&d.path().join("k.ptx"), &request, None, false).unwrap_err();
    let shown = e.assert_parse_cause::<serde_json::Error>();
    assert!(
        shown.starts_with(&format!("{}: ", request.display())),
        "{shown}"
    );
    assert_eq!(shown.matches("line 1 column").count(), 1, "{shown}");
}
