//! A rubric's `[requires]` through the real binary: an unknown item or a cycle is a clear error
//! with exit 2 before anything is graded, and the message names what is wrong.

use crate::runner::racegate;

fn grade_with(requires: &str) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rubric = tmp.path().join("rubric.toml");
    std::fs::write(
        &rubric,
        format!(
            "compiles = 10\ncorrect = 40\nracecheck = 15\nsynccheck = 10\nmemcheck = 15\n\
             initcheck = 10\n[requires]\n{requires}"
        ),
    )
    .expect("write the rubric");
    let root = super::package_dir().join("..");
    let sub = super::package_dir().join("tests/submissions/reduce/binary.cu");
    let out = racegate(["--root"])
        .args([&root])
        .args(["grade", "--exercise", "reduce", "--rubric"])
        .args([&rubric, &sub])
        .no_gpu()
        .run();
    (out.code, out.stderr)
}

#[test]
fn an_unknown_item_or_a_cycle_in_requires_is_exit_2_naming_it() {
    for (requires, says) in [
        ("racecheck = [\"corect\"]\n", "unknown item `corect`"),
        (
            "racecheck = [\"synccheck\"]\nsynccheck = [\"racecheck\"]\n",
            "cycle: racecheck -> synccheck -> racecheck",
        ),
        (
            "correct = [\"racecheck\"]\n",
            "`correct` cannot require `racecheck`",
        ),
    ] {
        let (code, err) = grade_with(requires);
        assert_eq!(code, Some(2), "{requires:?}: {err}");
        assert!(
            err.contains(says) && err.contains("rubric.toml"),
            "{requires:?}: {err}"
        );
    }
    // The control: a valid `[requires]` gets past the rubric (here to no device: exit 4, or 3
    // without NVRTC), so the exit 2 above is the rubric's.
    let (code, err) = grade_with("racecheck = [\"correct\"]\n");
    assert!(matches!(code, Some(3 | 4)), "{code:?}: {err}");
}

/// Outside any checkout, without --root, the course racegate ships is graded; an exercise
/// planted in the current folder (a student's repository) is never read.
#[test]
fn the_shipped_course_is_graded_anywhere_and_a_planted_exercise_is_not_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("grading/exercises")).unwrap();
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    // A planted spec naming another kernel: were it read, `reduce` would be the wrong name.
    let shipped = super::package_dir().join("../grading/exercises/reduce.toml");
    let planted = std::fs::read_to_string(shipped)
        .unwrap()
        .replace("entry = \"reduce\"", "entry = \"planted\"");
    std::fs::write(dir.join("grading/exercises/reduce.toml"), planted).unwrap();
    std::fs::copy(
        super::package_dir().join("tests/submissions/reduce/correct.cu"),
        dir.join("correct.cu"),
    )
    .unwrap();
    let out = racegate(["grade", "--exercise", "reduce", "correct.cu"])
        .at(dir)
        .no_gpu()
        .env("RACEGATE_CACHE", dir.join("cache"))
        .run();
    let text = out.text();
    // No device here: exit 4 after the compile item (3 without NVRTC).
    assert!(matches!(out.code, Some(3 | 4)), "{text}");
    if out.code == Some(4) {
        assert!(text.contains("PASS compiles"), "{text}");
        assert!(!text.contains("planted"), "{text}");
    }
}
