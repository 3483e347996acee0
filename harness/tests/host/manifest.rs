//! `manifest::<name>`: the racegate.toml parser on one good kernel and the ways to get it wrong;
//! every error names the file and line.

use racegate::manifest::Manifest;

use crate::{assert_parses, assert_rejects};

const GOOD_KERNEL: &str = r#"
[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = { n = [1, 100] }
grid = ["ceil_div(n, 256)"]
block = ["256"]
oracle = "determinism"
args = [
  { name = "x", kind = "in", type = "f32", len = "n", gen = "int(0, 8)" },
  { name = "y", kind = "out", type = "f32", len = "n" },
  { name = "n", kind = "scalar", type = "i32", value = "n" },
]
"#;

/// Parses `text` as the racegate.toml of a temporary folder that holds `k.cu`: the manifest's
/// path, and the result.
fn parse(text: &str) -> (String, Result<Manifest, racegate::Error>) {
    let dir = tempfile::Builder::new()
        .prefix("racegate-manifest-")
        .tempdir()
        .expect("a temporary folder");
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k() {}\n",
    )
    .expect("k.cu is written");
    let path = dir.path().join("racegate.toml");
    let r = Manifest::parse(&path, text);
    (path.display().to_string(), r)
}

/// `text` must fail to parse on `line` with a message containing `want`.
#[track_caller]
fn rejects(text: &str, line: usize, want: &str) {
    let (path, r) = parse(text);
    assert_rejects(r, &format!("{path}:{line}: "), want);
}

#[test]
fn good() {
    assert_parses(parse(GOOD_KERNEL).1);
}

#[test]
fn unknown_key() {
    rejects(
        &GOOD_KERNEL.replace("entry = \"k\"", "entry = \"k\"\nentree = 1"),
        6,
        "unknown field `entree`",
    );
}

#[test]
fn missing_source_file() {
    rejects(&GOOD_KERNEL.replace("k.cu", "missing.cu"), 4, "`source`: ");
}

#[test]
fn bad_oracle() {
    rejects(
        &GOOD_KERNEL.replace("\"determinism\"", "\"magic\""),
        9,
        "`oracle`: `magic`",
    );
}

#[test]
fn bad_expression() {
    rejects(
        &GOOD_KERNEL.replace("ceil_div(n, 256)", "ceil_div(m, 256)"),
        7,
        "`grid`",
    );
}

#[test]
fn bad_type() {
    rejects(
        &GOOD_KERNEL.replace(
            "type = \"f32\", len = \"n\", gen",
            "type = \"f16\", len = \"n\", gen",
        ),
        11,
        "`args.x.type`: `f16`",
    );
}

#[test]
fn bad_generator() {
    rejects(
        &GOOD_KERNEL.replace("int(0, 8)", "int(8, 0)"),
        11,
        "`args.x.gen`",
    );
}

#[test]
fn no_output() {
    rejects(
        &GOOD_KERNEL.replace("kind = \"out\"", "kind = \"in\", gen = \"zeros\""),
        2,
        "no out or inout buffer",
    );
}

#[test]
fn empty_size_range() {
    rejects(&GOOD_KERNEL.replace("[1, 100]", "[100, 1]"), 6, "`sizes`");
}

#[test]
fn duplicate_name() {
    rejects(&format!("{GOOD_KERNEL}{GOOD_KERNEL}"), 17, "declared twice");
}

#[test]
fn not_toml() {
    rejects("[[kernel]\nname = 1", 1, "");
}
