//! `manifest::launches::<name>`: how a kernel is launched (`shared`, 2D and 3D geometry, name
//! expressions, `[[kernel.launch]]` tables) and how its reference is (`oracle` with a launch of
//! its own or in place of the entry), and the mistakes each can be written with.

use racegate::source::exercises::{Arg, Dim3, SizeChoice};
use racegate::source::manifest::Check;
use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;

use super::{draw, kernel, rejects, rejects_at, set, GOOD_KERNEL};

#[test]
fn shared_and_three_dimensional_geometry() {
    let text = set("grid", r#"grid = ["ceil_div(n, 8)", "2", "3"]"#).replace(
        r#"block = ["256"]"#,
        "block = [\"8\", \"4\", \"2\"]\nshared = \"n * 4 + 16\"",
    );
    let k = kernel(&text);
    let p = k.draw(SizeChoice::Fixed(40), &mut ChaCha8Rng::seed_from_u64(0));
    let step = &p.launches[0];
    assert_eq!(step.grid, Dim3(5, 2, 3));
    assert_eq!(step.block, Dim3(8, 4, 2));
    assert_eq!(step.shared, 176);
    assert!(
        p.label.ends_with("grid=5x2x3 block=8x4x2 shared=176"),
        "{}",
        p.label
    );
    assert_eq!(
        kernel(GOOD_KERNEL).launches[0].shared,
        "0",
        "no dynamic shared memory"
    );
}

const TWO_LAUNCHES: &str = r#"
[[kernel]]
name = "pipe"
source = "k.cu"
include = ["inc"]
sizes = { n = [1, 5000] }
oracle.reference = "ref.cu:pipe_ref"
oracle.grid = ["1"]
oracle.block = ["32"]
oracle.shared = "128"
oracle.args = ["x", "out", "n"]
args = [
  { name = "x", kind = "in", type = "i32", len = "n", gen = "int(-8, 8)" },
  { name = "out", kind = "out", type = "i32", len = "n" },
  { name = "sums", kind = "out", type = "i32", len = "ceil_div(n, 256)", compare = "ignore" },
  { name = "n", kind = "scalar", type = "i32", value = "n" },
]

[[kernel.launch]]
entry = "scan<int, 256>"
grid = ["ceil_div(n, 256)"]
block = ["256"]
shared = "256 * 4"
args = ["x", "out", "sums", "n"]

[[kernel.launch]]
entry = "add_offsets"
grid = ["ceil_div(n, 256)"]
block = ["256"]
args = ["out", "sums", "n"]
"#;

#[test]
fn launch_tables_share_the_kernels_buffers() {
    let k = kernel(TWO_LAUNCHES);
    assert_eq!(k.launches.len(), 2);
    assert_eq!(k.entry, "scan<int, 256>", "the first launch names the case");
    assert_eq!(
        k.entry_names(),
        ["scan<int, 256>", "add_offsets", "pipe_ref"],
        "every entry a run uses, the reference last"
    );
    assert_eq!(k.entry_names_in("k.cu"), ["scan<int, 256>", "add_offsets"]);
    assert_eq!(k.entry_names_in("ref.cu"), ["pipe_ref"]);
    let p = draw(&k, 3);
    let names = |s: &racegate::source::exercises::LaunchStep| -> Vec<String> {
        s.args
            .iter()
            .map(|a| match a {
                Arg::Buf(i) => p.buffers[*i].name.to_string(),
                Arg::Scalar(_) => "scalar".into(),
                Arg::Int(_) => "int".into(),
            })
            .collect()
    };
    assert_eq!(names(&p.launches[0]), ["x", "out", "sums", "scalar"]);
    assert_eq!(names(&p.launches[1]), ["out", "sums", "scalar"]);
    assert_eq!(p.launches[0].shared, 1024);
    assert_eq!(p.launches[1].shared, 0);
    assert_eq!(p.launches[1].kernel, "add_offsets");
    assert_eq!(p.reference_launches.len(), 1, "the reference runs once");
    let r = &p.reference_launches[0];
    assert_eq!(r.kernel, "pipe_ref");
    assert_eq!(
        (r.grid, r.block, r.shared),
        (Dim3(1, 1, 1), Dim3(32, 1, 1), 128)
    );
    assert_eq!(names(r), ["x", "out", "scalar"]);
}

#[test]
fn launch_table_mistakes() {
    let no_own = TWO_LAUNCHES
        .lines()
        .filter(|l| !l.starts_with("oracle.") || l.starts_with("oracle.reference"))
        .collect::<Vec<_>>()
        .join("\n");
    rejects_at(
        &no_own,
        "oracle.reference",
        "`oracle`: a kernel with several launches needs the reference's own launch",
    );
    rejects_at(
        &TWO_LAUNCHES.replace("oracle.grid = [\"1\"]\n", ""),
        "oracle.reference",
        "`oracle.grid`: missing: a kernel with several launches needs `oracle.grid`",
    );
    rejects_at(
        &TWO_LAUNCHES.replace(
            r#"args = ["out", "sums", "n"]"#,
            r#"args = ["out", "sum", "n"]"#,
        ),
        r#"args = ["out", "sum""#,
        "`launch #2.args`: `sum` is not an argument (arguments: x, out, sums, n)",
    );
    rejects_at(
        &TWO_LAUNCHES.replace(
            r#"args = ["out", "sums", "n"]"#,
            r#"args = ["out", "out", "n"]"#,
        ),
        r#"args = ["out", "out""#,
        "`launch #2.args`: `out` is listed twice",
    );
    rejects_at(
        &TWO_LAUNCHES.replace(
            r#"oracle.args = ["x", "out", "n"]"#,
            r#"oracle.args = ["x", "y"]"#,
        ),
        "oracle.reference",
        "`oracle.args`: `y` is not an argument",
    );
    rejects_at(
        &TWO_LAUNCHES.replace("include = [\"inc\"]", "include = [\"inc\"]\nentry = \"scan\""),
        "entry = \"scan\"",
        "`entry`: a kernel with [[kernel.launch]] tables gives `entry`, `grid`, `block` and `shared` in each launch",
    );
    rejects_at(
        &TWO_LAUNCHES
            .replace(r#"args = ["out", "sums", "n"]"#, r#"args = ["out", "n"]"#)
            .replace(
                r#"args = ["x", "out", "sums", "n"]"#,
                r#"args = ["x", "out", "n"]"#,
            ),
        "name = \"sums\"",
        "`args.sums`: no launch passes `sums`",
    );
    rejects_at(
        &TWO_LAUNCHES.replacen("block = [\"256\"]\nshared", "block = []\nshared", 1),
        "block = []",
        "`launch #1.block`: give 1 to 3 expressions",
    );
    rejects_at(
        &TWO_LAUNCHES.replacen(
            "grid = [\"ceil_div(n, 256)\"]\nblock = [\"256\"]\nshared",
            "grid = [\"0\"]\nblock = [\"256\"]\nshared",
            1,
        ),
        "grid = [\"0\"]",
        "`launch #1.grid`: `0` is 0 at n=1: a grid dimension must be at least 1",
    );
    rejects_at(
        &TWO_LAUNCHES.replace("oracle.shared = \"128\"", "oracle.shared = \"n * 1000\""),
        "oracle.reference",
        "`oracle.shared`: `n * 1000` is 5000000 bytes at n=5000",
    );
    let missing = GOOD_KERNEL.replace("entry = \"k\"\n", "");
    rejects_at(
        &missing,
        "[[kernel]]",
        "`entry`: missing: give `entry`, `grid` and `block`, or [[kernel.launch]] tables",
    );
    rejects_at(
        &set("entry", "entry = \" \""),
        "entry =",
        "`entry`: give the kernel's name",
    );
}

#[test]
fn name_expressions_are_kept_as_written() {
    let k = kernel(&set("entry", "entry = \"block_reduce<float, 256>\""));
    assert_eq!(k.entry, "block_reduce<float, 256>");
    assert_eq!(k.launches[0].entry, "block_reduce<float, 256>");
    assert_eq!(draw(&k, 0).launches[0].kernel, "block_reduce<float, 256>");
}

#[test]
fn reference_oracle_forms() {
    let k = kernel(&set(
        "oracle",
        r#"oracle = { reference = "ref.cu:ns::ref<float, 256>" }"#,
    ));
    assert_eq!(
        k.check,
        Check::Reference {
            path: "ref.cu".into(),
            entry: "ns::ref<float, 256>".into()
        },
        "split at the last `:` that is not half of `::`"
    );
    assert!(k.reference_launch.is_none());
    assert!(
        draw(&k, 0).reference_launches.is_empty(),
        "the reference replaces the entry"
    );
    assert_eq!(k.entry_names(), ["k", "ns::ref<float, 256>"]);
    // Keys of its own default to the kernel's launch.
    let k = kernel(&set(
        "oracle",
        r#"oracle = { reference = "ref.cu:r", block = ["32"] }"#,
    ));
    let l = k.reference_launch.clone().expect("its own launch");
    assert_eq!(l.grid, ["ceil_div(n, 256)"]);
    assert_eq!(l.block, ["32"]);
    assert_eq!(l.args, ["x", "y", "n"]);
    let p = draw(&k, 0);
    assert_eq!(p.reference_launches[0].block, Dim3(32, 1, 1));
    assert_eq!(p.reference_launches[0].kernel, "r");
    rejects_at(
        &set(
            "oracle",
            r#"oracle = { reference = "ref.cu:r", gird = ["1"] }"#,
        ),
        "oracle =",
        "`oracle`: unknown field `gird`",
    );
    rejects_at(
        &set("oracle", r#"oracle = { reference = "ref.cu" }"#),
        "oracle =",
        "`oracle.reference`: `ref.cu` is not `file.cu:kernel`",
    );
    rejects_at(
        &set("oracle", r#"oracle = { reference = "gone.cu:r" }"#),
        "oracle =",
        "`oracle.reference`: reference file",
    );
    rejects_at(
        &set(
            "oracle",
            r#"oracle = { reference = "ref.cu:r", grid = ["1", "1", "1", "1"] }"#,
        ),
        "oracle =",
        "`oracle.grid`: give 1 to 3 expressions",
    );
}

#[test]
fn a_launch_names_its_stream_with_a_whole_number_from_0_to_7() {
    let on = |a: &str, b: &str| {
        TWO_LAUNCHES
            .replacen(
                "args = [\"x\", \"out\", \"sums\", \"n\"]",
                &format!("args = [\"x\", \"out\", \"sums\", \"n\"]\n{a}"),
                1,
            )
            .replacen(
                "args = [\"out\", \"sums\", \"n\"]",
                &format!("args = [\"out\", \"sums\", \"n\"]\n{b}"),
                1,
            )
    };
    let streams = |t: &str| -> Vec<u32> { kernel(t).launches.iter().map(|l| l.stream).collect() };
    assert_eq!(streams(TWO_LAUNCHES), [0, 0], "0 when not given");
    assert_eq!(streams(&on("stream = 3", "stream = 3")), [3, 3]);
    assert_eq!(streams(&on("stream = 0", "")), [0, 0]);
    assert_eq!(kernel(GOOD_KERNEL).launches[0].stream, 0);
    for bad in [
        "stream = -1",
        "stream = 8",
        "stream = \"side\"",
        "stream = 1.5",
        "stream = true",
    ] {
        let text = on(bad, "");
        rejects_at(&text, bad, "`launch #1.stream`: `");
        rejects_at(&text, bad, "is no stream: give a whole number from 0 to 7");
    }
    // Several streams are refused until the runner launches on them (a race could never show).
    let two = on("stream = 1", "stream = 2");
    rejects_at(
        &two,
        "stream = 2",
        "`launch #2.stream`: stream 2 differs from launch #1's stream 1",
    );
    // Not given on launch #2 (0): its table's first line is the place.
    let one = on("stream = 1", "");
    let at = one
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("[[kernel.launch]]"))
        .nth(1)
        .map(|(i, _)| i + 1)
        .unwrap();
    rejects(&one, at, "stream 0 differs from launch #1's stream 1: racegate does not run a kernel's launches on several streams yet");
}
