//! globalcheck's tool builds from the pinned 13.0 wheels (`ci/setup`) on a machine without a
//! CUDA toolkit, as it must in CI: the host library with g++ and the device patches with nvcc.

use std::path::Path;

use racegate::sanitize::globalcheck::build;

#[test]
fn the_tool_and_its_patches_build_from_the_pinned_wheels() {
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let tc = build::find(&root).unwrap_or_else(|e| panic!("{e} (run ci/setup first)"));
    let built = build::ensure(&root).unwrap_or_else(|e| panic!("{e}"));
    let tool = std::fs::read(&built.tool).unwrap();
    assert_eq!(&tool[..4], b"\x7fELF", "{}", built.tool.display());
    // The driver loads the tool through this exported entry point.
    assert!(
        tool.windows(19).any(|w| w == b"InitializeInjection"),
        "no InitializeInjection in {}",
        built.tool.display()
    );
    let fatbin = std::fs::read(&built.patches).unwrap();
    for patch in [
        "gc_access",
        "gc_barrier",
        "gc_barrier_release",
        "gc_syncwarp",
        "gc_shfl",
    ] {
        assert!(
            fatbin.windows(patch.len()).any(|w| w == patch.as_bytes()),
            "patch {patch} missing from {}",
            built.patches.display()
        );
    }
    // Built against what was found, with the library's folder as its run path.
    assert!(Path::new(&tc.sanitizer_lib)
        .join("libsanitizer-public.so")
        .is_file());
    let again = build::ensure(&root).unwrap();
    assert_eq!(again.tool, built.tool, "a second call uses the cache");
}
