//! The tests of [`super`]: shards merged into the one run or batch, and refused ones.

use super::*;

/// The stamp of shard `k` of `n` in `mode`, on the input whose hash is `input`, at commit `c`
/// with settings `s`.
pub(super) fn stamp_of(k: u32, n: u32, mode: &str, input: &str) -> Stamp {
    Stamp {
        partition: format!("{k}/{n}"),
        commit: "c".into(),
        settings: "s".into(),
        input: input.into(),
        mode: mode.into(),
    }
}

#[test]
fn a_shards_findings_come_back_as_the_run_had_them() {
    let run = crate::report::fixtures::gate_run();
    assert!(!run.findings.is_empty());
    let d = crate::gate::diff(&run, &Baseline::default(), true);
    let json = report::json::gate(&run, &d, "b.json", 1);
    let s = stamp_of(1, 1, "manifest", "i");
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("s.json");
    std::fs::write(&p, stamped(&json, &s)).unwrap();
    let (back, no_device, baseline, mode) = merged(&[p], false).unwrap();
    assert!(!no_device);
    assert_eq!((baseline.as_str(), mode.as_str()), ("b.json", "manifest"));
    let mut want = run.findings.clone();
    want.sort();
    assert_eq!(back.findings, want);
    assert_eq!(back.checked.len(), run.checked.len());
    // The report a merge writes is the one the run wrote.
    let d2 = crate::gate::diff(&back, &Baseline::default(), true);
    assert_eq!(report::json::gate(&back, &d2, "b.json", 1), json);
}

/// A shard that is not JSON is bad input (exit 2): the parser's line and column are its
/// cause, printed once after what a shard is.
#[test]
fn a_shard_that_is_not_json_keeps_the_parsers_reason() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("s.json");
    std::fs::write(&p, "{\"findings\": [,]}").unwrap();
    let e = merged(&[p], false).unwrap_err();
    let shown = e.assert_parse_cause::<serde_json::Error>();
    assert!(shown.contains("--json FILE`): expected value"), "{shown}");
    assert_eq!(shown.matches("line 1 column").count(), 1, "{shown}");
}

#[test]
fn grading_shards_merge_into_the_batch_and_mismatched_ones_are_refused() {
    use crate::grade::orchestrate::{Grade, NotGraded};
    let mut grades: Vec<Grade> = ["carol.cu", "alice.cu", "bob.cu", "dave.cu"]
        .iter()
        .map(|name| {
            let mut g = crate::report::fixtures::grade();
            g.submission = name.to_string();
            g
        })
        .collect();
    // A grade not given: no score in its JSON (null), and exit 3.
    grades[2].not_graded = Some(NotGraded {
        reason: "a sanitizer refused the device".into(),
        exit_code: exit::INCONCLUSIVE,
    });
    let stamp = |k: u32| stamp_of(k, 2, "grade", "i");
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, part: &[Grade], st: &Stamp, places: &[usize]| {
        let p = t.path().join(name);
        let text = stamped_grades(&report::grade::batch_json(part), st, places);
        std::fs::write(&p, text).unwrap();
        p
    };
    let one = write("1.json", &grades[..2], &stamp(1), &[0, 1]);
    let two = write("2.json", &grades[2..], &stamp(2), &[2, 3]);
    assert!(is_grading(&one).unwrap());
    let back = merged_grades(&[two.clone(), one.clone()]).unwrap();
    // The batch's order: the submissions' places in it, not their names'.
    let whole = grades.clone();
    // The batch a single run writes, row for row, the grade not given included.
    assert_eq!(report::grade::csv(&back), report::grade::csv(&whole));
    assert_eq!(
        report::grade::batch_json(&back),
        report::grade::batch_json(&whole)
    );
    assert_eq!(
        exit::worst(back.iter().map(|g| g.exit_code())),
        exit::INCONCLUSIVE
    );
    // Refused: a missing shard, a shard twice, another run's settings.
    let err = |paths: &[PathBuf]| match merged_grades(paths) {
        Err(e @ Error::Usage(_)) => e.to_string(),
        other => panic!("{:?}", other.map(|g| g.len())),
    };
    assert!(err(std::slice::from_ref(&one)).contains("2/2 missing"));
    assert!(err(&[one.clone(), one.clone()]).contains("given twice"));
    let mut other = stamp(2);
    other.settings = "t".into();
    let three = write("3.json", &grades[2..], &other, &[2, 3]);
    assert!(err(&[one, three]).contains("settings differ"));
}

/// The grades of a batch given as `grade z.cu subs/` (subs/ holding a/b.cu, a-b.cu and c.cu),
/// in its order, and the files of its two grading shards (written into `t`; without places, as
/// an older racegate wrote them, unless `with_places`).
fn batch_in_two_shards(
    t: &tempfile::TempDir,
    with_places: bool,
) -> (Vec<crate::grade::orchestrate::Grade>, PathBuf, PathBuf) {
    // The batch's order: z.cu as given, then the folder's files in path order (`a/b.cu`
    // before `a-b.cu`, which a string's order puts the other way round).
    let batch: Vec<_> = ["z.cu", "subs/a/b.cu", "subs/a-b.cu", "subs/c.cu"]
        .iter()
        .map(|name| {
            let mut g = crate::report::fixtures::grade();
            g.submission = name.to_string();
            g
        })
        .collect();
    let write = |k: u32, places: &[usize]| {
        let st = stamp_of(k, 2, "grade", "i");
        let part: Vec<_> = places.iter().map(|&i| batch[i].clone()).collect();
        let text = stamped_grades(&report::grade::batch_json(&part), &st, places);
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        if !with_places {
            // A shard of a racegate before places.
            v.as_object_mut().unwrap().remove("places");
        }
        let p = t.path().join(format!("{k}.json"));
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let (one, two) = (write(1, &[3, 1]), write(2, &[0, 2]));
    (batch, one, two)
}

#[test]
fn grades_come_back_in_the_batchs_order_not_their_names() {
    let names = |g: &[crate::grade::orchestrate::Grade]| -> Vec<String> {
        g.iter().map(|g| g.submission.clone()).collect()
    };
    let t = tempfile::tempdir().unwrap();
    let (batch, one, two) = batch_in_two_shards(&t, true);
    for paths in [[one.clone(), two.clone()], [two, one]] {
        let back = merged_grades(&paths).unwrap();
        assert_eq!(names(&back), names(&batch));
        assert_eq!(
            report::grade::batch_json(&back),
            report::grade::batch_json(&batch)
        );
    }
    // Shards without places: by path, as one folder's batch is (components, not strings).
    let t = tempfile::tempdir().unwrap();
    let (_, one, two) = batch_in_two_shards(&t, false);
    let back = merged_grades(&[two, one]).unwrap();
    assert_eq!(
        names(&back),
        ["subs/a/b.cu", "subs/a-b.cu", "subs/c.cu", "z.cu"]
    );
}

#[test]
fn grading_shards_whose_places_are_not_one_batch_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let (_, one, two) = batch_in_two_shards(&t, true);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&two).unwrap()).unwrap();
    // Another batch's shard 2: place 3 twice, place 0 nowhere.
    v["places"] = serde_json::json!([3, 2]);
    std::fs::write(&two, v.to_string()).unwrap();
    match merged_grades(&[one.clone(), two.clone()]) {
        Err(e @ Error::Usage(_)) => assert!(e.to_string().contains("not one batch"), "{e}"),
        other => panic!("{:?}", other.map(|g| g.len())),
    }
    v["places"] = serde_json::json!([0]);
    std::fs::write(&two, v.to_string()).unwrap();
    match merged_grades(&[one, two]) {
        Err(e @ Error::Usage(_)) => assert!(e.to_string().contains("places"), "{e}"),
        other => panic!("{:?}", other.map(|g| g.len())),
    }
}

/// A gate's shard K of 2 of the fixture run, with `notes` and `checked` subjects of its own,
/// judged against `baseline`.
fn gate_shard(t: &tempfile::TempDir, k: u32, notes: &[&str], baseline: &str) -> PathBuf {
    let mut run = crate::report::fixtures::gate_run();
    run.notes = notes.iter().map(|n| n.to_string()).collect();
    run.checked.clear();
    for n in notes {
        run.mark_checked(n, "racecheck", 1.0);
    }
    let d = crate::gate::diff(&run, &Baseline::default(), true);
    let json = report::json::gate(&run, &d, baseline, 1);
    let s = stamp_of(k, 2, "manifest", "i");
    let p = t.path().join(format!("{k}-{baseline}"));
    std::fs::write(&p, stamped(&json, &s)).unwrap();
    p
}

#[test]
fn gate_shards_merge_alike_whatever_order_they_are_given_in() {
    let t = tempfile::tempdir().unwrap();
    let one = gate_shard(&t, 1, &["k1", "k3"], "b.json");
    let two = gate_shard(&t, 2, &["k2"], "b.json");
    let (a, ..) = merged(&[one.clone(), two.clone()], false).unwrap();
    let (b, ..) = merged(&[two, one], false).unwrap();
    assert_eq!(a.notes, ["k1", "k3", "k2"]);
    assert_eq!(b.notes, a.notes);
    assert_eq!(b.checked, a.checked);
    let d = crate::gate::diff(&a, &Baseline::default(), true);
    assert_eq!(
        report::json::gate(&a, &d, "b.json", 1),
        report::json::gate(&b, &d, "b.json", 1)
    );
}

#[test]
fn gate_shards_of_different_baselines_are_refused_unless_merge_names_one() {
    let t = tempfile::tempdir().unwrap();
    let one = gate_shard(&t, 1, &["k1"], "b.json");
    let two = gate_shard(&t, 2, &["k2"], "other.json");
    let paths = [one, two];
    match merged(&paths, false) {
        Err(e @ Error::Usage(_)) => {
            let shown = e.to_string();
            assert!(shown.contains("different baselines"), "{shown}");
            assert!(shown.contains("--baseline"), "{shown}");
            assert_eq!(e.exit_code(), exit::USAGE);
        }
        other => panic!("{:?}", other.map(|r| r.2)),
    }
    // `merge --baseline FILE` says which: the shards merge.
    let (run, ..) = merged(&paths, true).unwrap();
    assert_eq!(run.notes, ["k1", "k2"]);
}

#[test]
fn the_settings_hash_leaves_out_where_reports_go() {
    let args = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    let p = Partition { k: 1, n: 2 };
    let root = Path::new("/nonexistent");
    let a = stamp(
        p,
        &args(&["--trials", "7", "--json", "a.json"]),
        root,
        b"m",
        "manifest",
    );
    let b = stamp(
        p,
        &args(&["--json=b.json", "--trials", "7", "--github"]),
        root,
        b"m",
        "manifest",
    );
    let c = stamp(p, &args(&["--trials", "8"]), root, b"m", "manifest");
    assert_eq!(
        a.settings,
        stamp(p, &args(&["--trials", "7"]), root, b"m", "manifest").settings
    );
    assert_ne!(a.settings, c.settings);
    // Report flags anywhere, with `=` or not, and --github: the same settings.
    assert_eq!(a.settings, b.settings);
    assert_eq!(a.commit, "none");
}
