//! `header::<name>`: the `//@` parser on good and bad headers.

use racegate::source::catalog::parse_file;

use crate::{assert_parses, assert_rejects};

/// Parses `text` as the file `path`, which must fail on `line` with a message containing `want`.
#[track_caller]
fn rejects(path: &str, text: &str, line: usize, want: &str) {
    assert_rejects(parse_file(path, text), &format!("{path}:{line}: "), want);
}

#[test]
fn good_kernel() {
    assert_parses(parse_file(
        "kernels/k.cu",
        "// racegate: a kernel\n//@ exercise: reduce\n//@ entry: k block=256\n\nvoid f();\n",
    ));
}

#[test]
fn good_variant() {
    assert_parses(parse_file("buggy_variants/k/v.cu", "// title\n//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ expect: stress=flag racecheck=may\n//@ entry: k block=256\nint a; // BUG: here\n"));
}

#[test]
fn unknown_key() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entree: k\n",
        2,
        "unknown key `entree`",
    );
}

#[test]
fn missing_exercise() {
    rejects(
        "kernels/k.cu",
        "//@ entry: k block=1\n",
        1,
        "missing required key `//@ exercise:`",
    );
}

#[test]
fn missing_entry() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n",
        1,
        "missing required key `//@ entry:`",
    );
}

#[test]
fn no_colon() {
    rejects(
        "kernels/k.cu",
        "//@ exercise reduce\n",
        1,
        "expected `//@ key: value`",
    );
}

#[test]
fn empty_value() {
    rejects(
        "kernels/k.cu",
        "//@ exercise:\n",
        1,
        "`exercise` has no value",
    );
}

#[test]
fn twice() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: a\n//@ exercise: b\n",
        2,
        "given twice (first on line 1)",
    );
}

#[test]
fn bad_param() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=big\n",
        2,
        "must be an integer",
    );
}

#[test]
fn bad_identifier() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k-1\n",
        2,
        "not a C identifier",
    );
}

#[test]
fn metadata_after_code() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=1\nint x;\n//@ bug: late\n",
        4,
        "must be in the leading comment block",
    );
}

#[test]
fn variant_without_expect() {
    rejects("buggy_variants/k/v.cu", "//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ entry: k block=1\nint a; // BUG\n", 1, "missing required key `//@ expect:`");
}

#[test]
fn variant_without_marker() {
    rejects("buggy_variants/k/v.cu", "//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ expect: stress=flag\n//@ entry: k block=1\nint a;\n", 1, "no `BUG` marker");
}

#[test]
fn variant_two_markers() {
    rejects("buggy_variants/k/v.cu", "//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ expect: stress=flag\n//@ entry: k block=1\nint a; // BUG\nint b; // BUG\n", 7, "more than one `BUG` marker");
}

#[test]
fn unknown_detector() {
    rejects(
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ expect: stresss=flag\n",
        2,
        "unknown detector `stresss`",
    );
}

#[test]
fn nothing_must_flag() {
    rejects("buggy_variants/k/v.cu", "//@ exercise: reduce\n//@ expect: stress=may\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ entry: k block=1\nint a; // BUG\n", 2, "no detector must flag this variant");
}

#[test]
fn escapes_documents_a_blind_spot() {
    assert_parses(parse_file("buggy_variants/k/v.cu", "//@ exercise: reduce\n//@ expect: stress=may\n//@ escapes: nothing sees it\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ entry: k block=1\nint a; // BUG\n"));
}

#[test]
fn expect_on_a_correct_kernel() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=1\n//@ expect: stress=flag\n",
        3,
        "`expect` is only for files under buggy_variants/",
    );
}

#[test]
fn marker_in_a_correct_kernel() {
    rejects(
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=1\nint a; // BUG\n",
        3,
        "must not contain a `BUG` marker",
    );
}
