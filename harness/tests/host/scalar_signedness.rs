//! `scalar_signedness::<name>`: a manifest scalar whose integer type differs from the kernel's
//! parameter in signedness only (`type = "i32"` for an `unsigned int`) is refused before any
//! launch, with exit 2, the manifest's file, line and key, as `grade` refuses the same difference
//! in a submission; the matching type passes. Through the real binary (`racegate compile`).

use crate::runner::racegate;

/// A project whose kernel `k` takes `(float* y, <n_decl> n)` and whose manifest passes `n` as a
/// scalar of type `n_ty` (line 11 of the manifest).
fn project(n_decl: &str, n_ty: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        format!(
            "extern \"C\" __global__ void k(float* y, {n_decl} n) {{ unsigned i = threadIdx.x; \
             if (i < n) y[i] = 1.0f; }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        format!(
            "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nsizes = {{ n = [1, 100] }}\n\
             grid = [\"1\"]\nblock = [\"128\"]\nentry = \"k\"\noracle = \"determinism\"\n\
             args = [\n  {{ name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" }},\n  \
             {{ name = \"n\", kind = \"scalar\", type = \"{n_ty}\", value = \"n\" }},\n]\n"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn a_scalar_of_the_other_signedness_is_refused_like_grade_refuses_it() {
    for (decl, given, right) in [
        ("unsigned int", "i32", "u32"),
        ("int", "u32", "i32"),
        ("unsigned long long", "i64", "u64"),
        ("long long", "u64", "i64"),
        ("unsigned short", "i16", "u16"),
        ("signed char", "u8", "i8"),
    ] {
        let p = project(decl, given);
        let (code, out) = racegate(["compile"])
            .at(p.path())
            .no_gpu()
            .run()
            .code_text();
        if code == Some(3) && out.contains("NVRTC") {
            eprintln!("skipped: no NVRTC (run ci/setup or racegate setup)\n{out}");
            return;
        }
        let want = format!(
            "racegate.toml:11: kernel `k`: `args.n`: parameter 2 `n` of `k`: declared `{decl}` \
             (k.cu:1), manifest says a {given} scalar: they differ in signedness (write type = \
             \"{right}\")"
        );
        assert_eq!(code, Some(2), "{decl} declared, {given} given:\n{out}");
        assert!(out.contains(&want), "expected `{want}`:\n{out}");
        // The type that matches passes.
        let p = project(decl, right);
        let (code, out) = racegate(["compile"])
            .at(p.path())
            .no_gpu()
            .run()
            .code_text();
        assert_eq!(code, Some(0), "{decl} declared, {right} given:\n{out}");
    }
}
