//! `manifest::bounds::<name>`: values past the bounds the racegate.toml parser holds, each over
//! a family of inputs: generators nested or signed without bound are refused within a second,
//! sizes out of range are refused; both name the file, the line and the key. (Expressions that
//! nest or repeat signs without bound are refused in `source/expr.rs`, tested there.)

use std::time::{Duration, Instant};

use racegate::source::manifest::Manifest;

/// A one-kernel manifest whose `y` argument (line 9) takes `gen`, and whose sizes are `sizes`.
fn manifest(sizes: &str, gen: &str) -> String {
    format!(
        "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\nsizes = {sizes}\n\
         grid = [\"1\"]\nblock = [\"1\"]\noracle = \"determinism\"\n\
         args = [{{ name = \"y\", kind = \"inout\", type = \"i32\", len = \"n\", gen = \"{gen}\" }}]\n"
    )
}

/// Parses `text` as the racegate.toml of a scratch folder holding `k.cu`: its path and result.
fn parse(text: &str) -> (String, Result<Manifest, racegate::Error>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), crate::exit_codes::GOOD).unwrap();
    let path = dir.path().join("racegate.toml");
    let r = Manifest::parse(&path, text);
    (path.display().to_string(), r)
}

/// Every generator that nests (`sorted(`, `prefix_sum(`, both, and parentheses or brackets
/// inside `int` and `choice`), 65 and 40,000 deep, and 100,000 signs: refused within a second
/// with the file, the line of the argument and the bound (40,000 `sorted(` overflowed the stack,
/// exit 134). Nesting within the bound still parses.
#[test]
fn generators_nested_or_signed_without_bound_are_refused_fast_with_the_line() {
    let wrappers: &[(&str, &str)] = &[
        ("sorted(", ")"),
        ("prefix_sum(", ")"),
        ("sorted(prefix_sum(", "))"),
    ];
    let start = Instant::now();
    for (open, close) in wrappers {
        for (depth, want) in [(65usize, "nested"), (40_000, "characters: at most")] {
            let gen = format!("{}int(0, 1){}", open.repeat(depth), close.repeat(depth));
            let (path, r) = parse(&manifest("{ n = [1, 9] }", &gen));
            crate::assert_rejects(r, &format!("{path}:9: "), want);
        }
        let gen = format!("{}int(0, 1){}", open.repeat(4), close.repeat(4));
        crate::assert_parses(parse(&manifest("{ n = [1, 9] }", &gen)).1);
    }
    for (gen, want) in [
        (
            format!("int(0, {}n{})", "(".repeat(65), ")".repeat(65)),
            "nested",
        ),
        (
            format!("int(0, {}n{})", "(".repeat(40_000), ")".repeat(40_000)),
            "at most",
        ),
        (format!("int({}1, 2)", "-".repeat(100_000)), "at most"),
        (format!("int({}1, 2)", "- ".repeat(20)), "signs in a row"),
        (
            format!("choice({}1{})", "[".repeat(70), "]".repeat(70)),
            "nested",
        ),
    ] {
        let (path, r) = parse(&manifest("{ n = [1, 9] }", &gen));
        crate::assert_rejects(r, &format!("{path}:9: "), want);
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
}

/// A size that fits no `u32` (over `i64` too, negative, fractional, or not a number) is refused
/// naming the size and its line, not as "did not match any variant of untagged enum SizeSpec".
#[test]
fn sizes_out_of_range_name_the_size_and_the_line() {
    for v in [
        "99999999999999999999",
        "-99999999999999999999",
        "18446744073709551616",
        "9223372036854775807",
        "4294967296",
        "-1",
        "1.5",
        "\"a\"",
        "[1]",
        "[1, 2, 3]",
        "[1, 99999999999999999999]",
        "[-1, 4]",
    ] {
        let (path, r) = parse(&manifest(&format!("{{ m = 4, n = {v} }}"), "iota"));
        crate::assert_rejects(r, &format!("{path}:5: "), "`sizes.n`");
        let (_, r) = parse(&manifest(&format!("{{ m = 4, n = {v} }}"), "iota"));
        let msg = r.unwrap_err().to_string();
        assert!(
            !msg.contains("untagged") && !msg.contains("i128"),
            "{v}: {msg}"
        );
    }
    crate::assert_parses(parse(&manifest("{ n = [1, 4294967295] }", "zeros")).1);
}
