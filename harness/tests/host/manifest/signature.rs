//! `manifest::signature::<name>`: every shipped manifest (the corpus, the gate example, the GPU
//! test fixture) matches its kernels' compiled code, and a manifest that does not — a missing
//! entry, a wrong argument count or width, a missing reference — is refused before any launch
//! through the real binary, with exit 2 and the manifest's file, line and key. Needs NVRTC
//! (CI installs it); without it the CLI part is the exit code for a missing tool.

use racegate::source::catalog::Catalog;
use racegate::source::manifest::Manifest;

use crate::repo_root;
use crate::runner::racegate;

#[test]
fn every_shipped_manifest_matches_its_ptx() {
    for rel in [
        "examples/cargo-test/racegate.toml",
        "examples/corpus/racegate.toml",
        "examples/gate/racegate.toml",
        "harness/tests/fixtures/manifest_gpu/racegate.toml",
    ] {
        let m = Manifest::load(&repo_root().join(rel)).unwrap();
        let catalog = Catalog::from_manifest(m);
        if let Err(e) = racegate::build::signature::check(&catalog, "compute_90") {
            panic!("{rel}: {e}");
        }
    }
}

/// A one-kernel project whose manifest's `args`/`entry`/`oracle` are `body`.
fn project(body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }\n\
         extern \"C\" __global__ void r(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1.0f; }\n\
         template <typename T> __global__ void t(T* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 1; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        format!(
            "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nsizes = {{ n = [1, 100] }}\n\
             grid = [\"1\"]\nblock = [\"128\"]\n{body}\n"
        ),
    )
    .unwrap();
    dir
}

const Y_N: &str = "args = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n  { name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" },\n]";

#[test]
fn a_matching_manifest_compiles() {
    let p = project(&format!(
        "entry = \"k\"\noracle = {{ reference = \"k.cu:r\" }}\n{Y_N}"
    ));
    let (code, out) = racegate(["compile"]).at(p.path()).run().exit_text();
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_templated_entry_is_found_by_its_name_expression() {
    let p = project(&format!(
        "entry = \"t<float>\"\noracle = \"determinism\"\n{Y_N}"
    ));
    let (code, out) = racegate(["compile"]).at(p.path()).run().exit_text();
    assert_eq!(code, 0, "{out}");
}

/// `args` with `y` of type `ty` (line 9 of the manifest `project` writes when the body opens
/// with `entry` and `oracle`) and `n` a scalar of type `n_ty` (line 10).
fn args(ty: &str, n_ty: &str, n_value: &str) -> String {
    format!(
        "args = [\n  {{ name = \"y\", kind = \"out\", type = \"{ty}\", len = \"n\" }},\n  \
         {{ name = \"n\", kind = \"scalar\", type = \"{n_ty}\", value = \"{n_value}\" }},\n]"
    )
}

#[test]
fn mismatches_are_refused_with_file_line_and_key() {
    // (manifest body, the line the message must point at, what it must say)
    let cases = [
        (
            format!("entry = \"missing\"\noracle = \"determinism\"\n{Y_N}"),
            7,
            "kernel `k`: `entry`: no kernel `missing`".to_string(),
        ),
        (
            format!("entry = \"k\"\noracle = {{ reference = \"k.cu:nope\" }}\n{Y_N}"),
            8,
            "kernel `k`: `oracle`: no kernel `nope`".into(),
        ),
        (
            "entry = \"k\"\noracle = \"determinism\"\nargs = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n]"
                .to_string(),
            10,
            "`args`: `k` takes 2 parameter(s), the launch passes 1".into(),
        ),
        (
            format!("entry = \"k\"\noracle = \"determinism\"\n{}", args("f32", "i64", "n")),
            11,
            "`args.n`: parameter 2 `n` of `k`: declared `int` (k.cu:1), manifest says a i64 scalar"
                .into(),
        ),
        (
            format!("entry = \"k\"\noracle = \"determinism\"\n{}", args("f32", "f32", "1.5")),
            11,
            "`args.n`: parameter 2 `n` of `k`: declared `int` (k.cu:1), manifest says a f32 scalar"
                .into(),
        ),
        // The element type, from the declaration of an `extern "C"` kernel ...
        (
            format!("entry = \"k\"\noracle = \"determinism\"\n{}", args("f64", "i32", "n")),
            10,
            "`args.y`: parameter 1 `y` of `k`: declared `float*` (k.cu:1), manifest says f64".into(),
        ),
        // ... of its reference, checked with the kernel's arguments ...
        (
            format!("entry = \"t<double>\"\noracle = {{ reference = \"k.cu:r\" }}\n{}", args("f64", "i32", "n")),
            10,
            "`args.y`: parameter 1 `y` of `r`: declared `float*` (k.cu:2), manifest says f64".into(),
        ),
        // ... and from the compiled name of a C++ name expression.
        (
            format!("entry = \"t<float>\"\noracle = \"determinism\"\n{}", args("i32", "i32", "n")),
            10,
            "`args.y`: parameter 1 `y` of `t<float>`: declared `float*` (as compiled), manifest says i32"
                .into(),
        ),
    ];
    for (body, line, want) in cases {
        let p = project(&body);
        let (code, out) = racegate(["compile"]).at(p.path()).run().exit_text();
        assert_eq!(code, 2, "{want}: {out}");
        let at = format!("racegate.toml:{line}: kernel `k`");
        assert!(
            out.contains(&at) && out.contains(&want),
            "expected `{want}` at {at}:\n{out}"
        );
    }
}

#[test]
fn a_launch_table_is_named_from_1_at_its_args_line() {
    let p = project(
        "oracle = \"determinism\"\n\
         args = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n  \
         { name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" },\n]\n\
         [[kernel.launch]]\nentry = \"k\"\ngrid = [\"1\"]\nblock = [\"1\"]\nargs = [\"y\", \"n\"]\n\
         [[kernel.launch]]\nentry = \"t<double>\"\ngrid = [\"1\"]\nblock = [\"1\"]\nargs = [\"y\", \"n\"]\n",
    );
    // `project` writes grid/block at kernel level; a launch table refuses those, so drop them.
    let toml = p.path().join("racegate.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace("grid = [\"1\"]\nblock = [\"128\"]\n", ""),
    )
    .unwrap();
    let (code, out) = racegate(["compile"]).at(p.path()).run().exit_text();
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(
            "racegate.toml:19: kernel `k`: `launch #2.args`: parameter 1 `y` of `t<double>`: \
             declared `double*` (as compiled), manifest says f32"
        ),
        "{out}"
    );
}
