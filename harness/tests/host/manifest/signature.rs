//! `manifest::signature::<name>`: every shipped manifest (the corpus, the gate example, the GPU
//! test fixture) matches its kernels' compiled code, and a manifest that does not — a missing
//! entry, a wrong argument count or width, a missing reference — is refused before any launch
//! through the real binary, with exit 2 and the manifest's file, line and key. Needs NVRTC
//! (CI installs it); without it the CLI part is the exit code for a missing tool.

use std::path::Path;

use racegate::source::catalog::Catalog;
use racegate::source::manifest::Manifest;

fn repo() -> std::path::PathBuf {
    crate::package_dir().parent().unwrap().to_path_buf()
}

#[test]
fn every_shipped_manifest_matches_its_ptx() {
    for rel in [
        "examples/corpus/racegate.toml",
        "examples/gate/racegate.toml",
        "harness/tests/fixtures/manifest_gpu/racegate.toml",
    ] {
        let m = Manifest::load(&repo().join(rel)).unwrap();
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

fn compile(dir: &Path) -> (i32, String) {
    let out = std::process::Command::new(crate::racegate_exe())
        .args(["compile"])
        .current_dir(dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

const Y_N: &str = "args = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n  { name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" },\n]";

#[test]
fn a_matching_manifest_compiles() {
    let p = project(&format!(
        "entry = \"k\"\noracle = {{ reference = \"k.cu:r\" }}\n{Y_N}"
    ));
    let (code, out) = compile(p.path());
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_templated_entry_is_found_by_its_name_expression() {
    let p = project(&format!(
        "entry = \"t<float>\"\noracle = \"determinism\"\n{Y_N}"
    ));
    let (code, out) = compile(p.path());
    assert_eq!(code, 0, "{out}");
}

#[test]
fn mismatches_are_refused_with_file_line_and_key() {
    let cases = [
        (
            format!("entry = \"missing\"\noracle = \"determinism\"\n{Y_N}"),
            "no kernel `missing`",
        ),
        (
            format!("entry = \"k\"\noracle = {{ reference = \"k.cu:nope\" }}\n{Y_N}"),
            "`oracle`: no kernel `nope`",
        ),
        (
            "entry = \"k\"\noracle = \"determinism\"\nargs = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n]"
                .to_string(),
            "takes 2 parameter(s), the launch passes 1",
        ),
        (
            "entry = \"k\"\noracle = \"determinism\"\nargs = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n  { name = \"n\", kind = \"scalar\", type = \"i64\", value = \"n\" },\n]"
                .to_string(),
            "parameter 1 of `k` is 4 byte(s), but `n` is a i64 scalar",
        ),
        (
            "entry = \"k\"\noracle = \"determinism\"\nargs = [\n  { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n  { name = \"n\", kind = \"scalar\", type = \"f32\", value = \"1.5\" },\n]"
                .to_string(),
            "`n` is a f32 scalar",
        ),
    ];
    for (body, want) in cases {
        let p = project(&body);
        let (code, out) = compile(p.path());
        assert_eq!(code, 2, "{want}: {out}");
        assert!(
            out.contains("racegate.toml:2: kernel `k`") && out.contains(want),
            "expected `{want}` at racegate.toml:2:\n{out}"
        );
    }
}
