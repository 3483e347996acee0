//! `manifest::<name>`: the racegate.toml parser on one good kernel and the ways to get it wrong;
//! every error names the file and line. The argument keys are in `manifest/keys.rs`, the launch
//! keys (and the reference's) in `manifest/launches.rs`, the checks over the whole size range in
//! `manifest/checks.rs`, values past the parser's bounds in `manifest/bounds.rs`, the manifests
//! against their kernels' compiled code in `manifest/signature.rs`, and the two example
//! manifests (`examples/corpus`, `examples/gate`) in `manifest/examples.rs`.

mod bounds;
mod checks;
mod examples;
mod keys;
mod launches;
mod signature;

use racegate::source::manifest::{KernelSpec, Manifest};

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

/// Parses `text` as the racegate.toml of a temporary folder that holds `k.cu`, `ref.cu` and an
/// include folder `inc/`: the manifest's path, and the result.
fn parse(text: &str) -> (String, Result<Manifest, racegate::Error>) {
    let dir = tempfile::Builder::new()
        .prefix("racegate-manifest-")
        .tempdir()
        .expect("a temporary folder");
    for file in ["k.cu", "ref.cu"] {
        std::fs::write(
            dir.path().join(file),
            "extern \"C\" __global__ void k() {}\n",
        )
        .expect("the kernel files are written");
    }
    std::fs::create_dir(dir.path().join("inc")).expect("inc/ is made");
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

/// `text` must fail to parse on the first line that contains `at` with a message containing
/// `want`.
#[track_caller]
fn rejects_at(text: &str, at: &str, want: &str) {
    let line = text
        .lines()
        .position(|l| l.contains(at))
        .unwrap_or_else(|| panic!("no line contains `{at}`"))
        + 1;
    rejects(text, line, want);
}

/// A problem drawn from `k` at random sizes.
fn draw(k: &KernelSpec, seed: u64) -> racegate::source::exercises::Problem {
    use rand::SeedableRng;
    k.draw(
        racegate::source::exercises::SizeChoice::Random { lo: 1, hi: 1 },
        &mut rand::rngs::ChaCha8Rng::seed_from_u64(seed),
    )
}

/// The first kernel of `text`, which must parse.
#[track_caller]
fn kernel(text: &str) -> KernelSpec {
    match parse(text).1 {
        Ok(m) => m.kernels[0].clone(),
        Err(e) => panic!("expected success, got: {e}\n{text}"),
    }
}

/// GOOD_KERNEL with the line that starts with `key =` replaced by `line` (or, with no such
/// line, `line` added before `args`).
fn set(key: &str, line: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut done = false;
    for l in GOOD_KERNEL.lines() {
        if l.starts_with(&format!("{key} =")) {
            out.push(line.to_string());
            done = true;
        } else {
            if l.starts_with("args =") && !done {
                out.push(line.to_string());
                done = true;
            }
            out.push(l.to_string());
        }
    }
    out.join("\n") + "\n"
}

/// `text` with its `args = [...]` array holding `args` instead, one entry a line.
fn with_args(text: &str, args: &[&str]) -> String {
    let start = text.find("args = [").expect("an args array");
    let end = start + text[start..].find("\n]").expect("its end");
    format!(
        "{}args = [\n{}\n{}",
        &text[..start],
        args.iter()
            .map(|a| format!("  {a},"))
            .collect::<Vec<_>>()
            .join("\n"),
        &text[end + 1..]
    )
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
            "type = \"f8\", len = \"n\", gen",
        ),
        11,
        "`args.x.type`: `f8`: expected f32, f64, f16, bf16, i8",
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
