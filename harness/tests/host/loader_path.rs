//! `loader_path::<name>`: NVRTC is never opened by a name the dynamic loader looks up, and an
//! `LD_LIBRARY_PATH` whose empty or relative entry makes the loader search the current folder is
//! refused before any library is loaded (exit 3, the entry named). Libraries planted in the
//! folder racegate runs in (`libnvrtc.so`, the first name cudarc asks for, and `libnvrtc.so.13`)
//! have a constructor that writes a marker; it must never appear. The helpers here plant
//! libraries and tools for the other trust tests (`relative_places`, `nearest_checkout`,
//! `group_write`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runner::racegate;

/// A library whose constructor appends a line to `$PLANTED_MARKER`.
const PLANTED: &str = "#include <stdio.h>\n#include <stdlib.h>\n\
__attribute__((constructor)) static void planted(void) {\n\
  const char *m = getenv(\"PLANTED_MARKER\");\n\
  FILE *f = m ? fopen(m, \"a\") : 0;\n\
  if (f) { fputs(\"ran\\n\", f); fclose(f); }\n}\n";

/// Builds the planted library as `dir/name` (its folders created).
pub(super) fn plant_library(dir: &Path, name: &str) -> PathBuf {
    let src_dir = tempfile::tempdir().expect("a temporary folder");
    let src = src_dir.path().join("planted.c");
    std::fs::write(&src, PLANTED).expect("write the planted source");
    std::fs::create_dir_all(dir).expect("create the planted library's folder");
    let at = dir.join(name);
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&at)
        .arg(&src)
        .status()
        .expect("a C compiler (cc) builds the planted library");
    assert!(ok.success(), "cc could not build the planted library");
    at
}

/// A shell script `dir/name` that appends a line to `marker` when run.
pub(super) fn plant_tool(dir: &Path, name: &str, marker: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).expect("create the planted tool's folder");
    let at = dir.join(name);
    std::fs::write(
        &at,
        format!("#!/bin/sh\necho ran >> '{}'\necho 1.0\n", marker.display()),
    )
    .expect("write the planted tool");
    std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    at
}

/// The variables that name NVRTC, a toolkit or a tool: the trust tests remove them, so that a
/// run sees only the places the test sets.
const PLACE_VARIABLES: [&str; 6] = [
    "RACEGATE_NVRTC_LIB",
    "CUDA_HOME",
    "CUDA_PATH",
    "RACEGATE_COMPUTE_SANITIZER",
    "LD_LIBRARY_PATH",
    "CXX",
];

/// racegate with `args` in `dir`, with `env` and none of the [`PLACE_VARIABLES`] it does not
/// set, and no GPU: its exit code and output.
pub(super) fn run_in(dir: &Path, args: &[&str], env: &[(&str, &OsStr)]) -> (Option<i32>, String) {
    racegate(args)
        .at(dir)
        .no_gpu()
        .envs_removed(&PLACE_VARIABLES)
        .envs(env)
        .run()
        .code_text()
}

/// The checkout's NVRTC (`ci/setup`), when there is one.
pub(super) fn real_nvrtc() -> Option<PathBuf> {
    let lib = super::package_dir()
        .join("..")
        .join(racegate::build::toolchain::LOCAL_NVRTC)
        .join("libnvrtc.so.13");
    lib.is_file().then_some(lib)
}

/// A project racegate can `compile` (the gate example), in `dir`, with the planted libraries
/// in it.
fn planted_project(dir: &Path) {
    super::copy_dir(&super::package_dir().join("../examples/gate"), dir);
    plant_library(dir, "libnvrtc.so");
    plant_library(dir, "libnvrtc.so.13");
    plant_library(&dir.join("lib"), "libnvrtc.so");
}

#[test]
fn an_ld_library_path_that_names_the_current_folder_is_refused_before_anything_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    planted_project(&work);
    let marker = tmp.path().join("marker");
    let cache = tmp.path().join("cache");
    let real = real_nvrtc();
    for value in [
        ":/usr/lib",
        "/usr/lib:",
        "/usr/lib::/lib",
        ".",
        "lib:/usr/lib",
    ] {
        // Without RACEGATE_NVRTC_LIB (the system's library path is searched), and with it
        // naming the real NVRTC by absolute path (cudarc then asked for it by name).
        let named: Vec<Option<&Path>> = std::iter::once(None)
            .chain(real.as_deref().map(Some))
            .collect();
        for lib in named {
            let mut env = vec![
                ("LD_LIBRARY_PATH", OsStr::new(value)),
                ("PLANTED_MARKER", marker.as_os_str()),
                ("RACEGATE_CACHE", cache.as_os_str()),
            ];
            if let Some(l) = lib {
                env.push(("RACEGATE_NVRTC_LIB", l.as_os_str()));
            }
            for args in [&["compile"][..], &["doctor"]] {
                let (code, text) = run_in(&work, args, &env);
                assert!(
                    !marker.exists(),
                    "LD_LIBRARY_PATH={value} racegate {args:?} (RACEGATE_NVRTC_LIB {lib:?}) \
                     loaded a library from the current folder:\n{text}"
                );
                assert!(
                    text.contains(&format!("LD_LIBRARY_PATH={value} has"))
                        && text.contains("refusing to load any library"),
                    "LD_LIBRARY_PATH={value} racegate {args:?}: the entry is not named:\n{text}"
                );
                if args == ["compile"] {
                    assert_eq!(code, Some(3), "LD_LIBRARY_PATH={value}:\n{text}");
                }
                assert!(!text.contains("panicked"), "{text}");
            }
        }
    }
}

#[test]
fn nvrtc_is_opened_by_path_only_so_a_libnvrtc_so_on_the_search_path_is_never_asked_for() {
    let Some(real) = real_nvrtc() else {
        eprintln!("skipped: no .racegate/nvrtc in the checkout (run ci/setup)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    planted_project(&work);
    let marker = tmp.path().join("marker");
    let cache = tmp.path().join("cache");
    // A clean, absolute LD_LIBRARY_PATH whose folder holds a `libnvrtc.so`: cudarc's bindings
    // asked for that name first and got it instead of the file racegate checked.
    let lib_dir = work.join("lib");
    let (code, text) = run_in(
        &work,
        &["compile"],
        &[
            ("LD_LIBRARY_PATH", lib_dir.as_os_str()),
            ("RACEGATE_NVRTC_LIB", real.as_os_str()),
            ("PLANTED_MARKER", marker.as_os_str()),
            ("RACEGATE_CACHE", cache.as_os_str()),
        ],
    );
    assert!(
        !marker.exists(),
        "a libnvrtc.so on LD_LIBRARY_PATH was loaded beside the NVRTC named:\n{text}"
    );
    assert_eq!(code, Some(0), "{text}");
    // The control: the same planted file, named, is loaded (and refused as not NVRTC).
    let planted = work.join("lib/libnvrtc.so");
    let (code, text) = run_in(
        &work,
        &["compile"],
        &[
            ("RACEGATE_NVRTC_LIB", planted.as_os_str()),
            ("PLANTED_MARKER", marker.as_os_str()),
            ("RACEGATE_CACHE", cache.as_os_str()),
        ],
    );
    assert!(marker.exists(), "the planted library never runs: {text}");
    assert!(
        text.contains("is not NVRTC: it lacks nvrtcVersion"),
        "{text}"
    );
    assert_eq!(code, Some(3), "{text}");
}

/// `RACEGATE_NVRTC_LIB` at libraries that are not NVRTC: a tool failure (exit 3) naming the path
/// and what it lacks, never cudarc's panic (exit 101).
#[test]
fn a_library_that_is_not_nvrtc_is_a_tool_failure() {
    let dir = crate::exit_codes::project(crate::exit_codes::GOOD, "");
    let libs: Vec<String> = ["libm.so.6", "libc.so.6", "libpthread.so.0", "libdl.so.2"]
        .iter()
        .flat_map(|l| {
            [
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib64",
                "/lib/aarch64-linux-gnu",
            ]
            .iter()
            .map(move |d| format!("{d}/{l}"))
        })
        .filter(|p| Path::new(p).is_file())
        .collect();
    assert!(!libs.is_empty(), "no libm.so.6 or libc.so.6 found");
    for lib in &libs {
        let out = racegate(["compile"])
            .at(dir.path())
            .envs(&[("RACEGATE_NVRTC_LIB", lib)])
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{lib}: {err}");
        assert!(
            err.contains(lib.as_str()) && err.contains("nvrtcCreateProgram"),
            "{lib}: {err}"
        );
        assert!(!err.contains("panicked"), "{lib}: {err}");
    }
}
