//! A library planted where a student or a working folder controls it is never loaded: under the
//! current folder's `.racegate/nvrtc`, its parent's, or a racegate cache others can write. Each
//! planted `libnvrtc.so.13` has a constructor that writes a marker file when loaded; `grade`,
//! `gate` and `doctor` run from the planted folder, and the marker must never appear. The control
//! at the end loads the same file from a private cache, so the marker is known to work.
//!
//! Where an NVRTC comes before racegate's cache (the system's library path or
//! `/usr/local/cuda/lib64`, as on a GPU runner with the CUDA toolkit), the cache is never
//! consulted: there the commands must use that NVRTC (doctor names it), and the control names
//! the cache's file with `RACEGATE_NVRTC_LIB` instead.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runner::racegate;

const PLANTED: &str = "#include <stdio.h>\n#include <stdlib.h>\n\
__attribute__((constructor)) static void planted(void) {\n\
  const char *m = getenv(\"PLANTED_MARKER\");\n\
  FILE *f = m ? fopen(m, \"a\") : 0;\n\
  if (f) { fputs(\"ran\\n\", f); fclose(f); }\n}\n";

/// Builds the planted library as `lib_dir/libnvrtc.so.13`.
fn plant(lib_dir: &Path, src: &Path) -> PathBuf {
    std::fs::create_dir_all(lib_dir).unwrap();
    let lib = lib_dir.join("libnvrtc.so.13");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(src)
        .status()
        .expect("a C compiler (cc) builds the planted library");
    assert!(built.success(), "cc could not build the planted library");
    lib
}

fn mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// The NVRTC racegate finds before its cache, if any: the first `libnvrtc.so.13` in the
/// system's library path (`LD_LIBRARY_PATH`, `/etc/ld.so.conf`, the usual folders) or in
/// `/usr/local/cuda/lib64`, in the order of `racegate::build::toolchain` (`CUDA_HOME` and
/// `CUDA_PATH` are unset for these commands).
fn nvrtc_before_the_cache() -> Option<PathBuf> {
    racegate::build::locations::system_library_dirs()
        .into_iter()
        .chain([PathBuf::from("/usr/local/cuda/lib64")])
        .map(|d| d.join("libnvrtc.so.13"))
        .find(|p| p.is_file())
}

#[test]
fn a_library_in_the_working_folder_its_parent_or_an_open_cache_never_runs() {
    let before = nvrtc_before_the_cache();
    if let Some(lib) = &before {
        eprintln!(
            "note: {} comes before racegate's cache here: the cache is never consulted, so the \
             commands must use that NVRTC, and the control names the cache's file itself",
            lib.display()
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("planted.c");
    std::fs::write(&src, PLANTED).unwrap();
    // The student's repository: a parent folder and the folder the grader runs in, each with
    // a planted copy where racegate's own `ci/setup` would put NVRTC.
    let parent = tmp.path().join("student");
    let work = parent.join("repo");
    plant(&parent.join(".racegate/nvrtc/nvidia/cu13/lib"), &src);
    plant(&work.join(".racegate/nvrtc/nvidia/cu13/lib"), &src);
    super::copy_dir(&super::package_dir().join("../examples/gate"), &work);
    let sub = super::package_dir().join("tests/submissions/reduce/binary.cu");
    std::fs::copy(&sub, work.join("submission.cu")).unwrap();
    // A cache whose NVRTC folder its group can write.
    let cache = tmp.path().join("cache");
    let cache_lib = plant(&cache.join("nvrtc/nvidia/cu13/lib"), &src);
    mode(&cache, 0o700);
    mode(&cache.join("nvrtc"), 0o775);
    let marker = tmp.path().join("marker");
    let env = [
        ("RACEGATE_CACHE", cache.as_os_str()),
        ("PLANTED_MARKER", marker.as_os_str()),
    ];
    // The course's exercises come from racegate's checkout; the grader works in the student's.
    let checkout = super::package_dir().join("..");
    let checkout = checkout.to_str().unwrap();
    let commands: [&[&str]; 3] = [
        &[
            "--root",
            checkout,
            "grade",
            "--exercise",
            "reduce",
            "submission.cu",
        ],
        &["gate"],
        &["doctor"],
    ];
    // racegate with `args` in the student's repository, with `env` and none of the places a
    // user names NVRTC by.
    let run = |args: &[&str], env: &[(&str, &OsStr)]| {
        racegate(args)
            .at(&work)
            .no_gpu()
            .envs_removed(&["RACEGATE_NVRTC_LIB", "CUDA_HOME", "CUDA_PATH"])
            .envs(env)
            .run()
    };
    for args in commands {
        let r = run(args, &env);
        assert!(
            !marker.exists(),
            "racegate {args:?} loaded a planted library (its constructor ran):\n{}",
            r.text()
        );
        match &before {
            // The open cache is refused with its reason, whatever else the command says.
            None => assert!(
                r.text().contains("refusing to load") && r.text().contains("is writable by group"),
                "racegate {args:?} (exit {:?}) did not say why the cache's library was refused:\n{}",
                r.code,
                r.text()
            ),
            // The NVRTC found first is the one used, never the cache's.
            Some(lib) if args == ["doctor"] => assert!(
                r.text().contains(&format!("from {}", lib.display())),
                "racegate doctor does not name {} as its NVRTC:\n{}",
                lib.display(),
                r.text()
            ),
            Some(_) => {}
        }
        assert_ne!(r.code, Some(0), "racegate {args:?}:\n{}", r.text());
    }
    // With no cache at all, the folder's and its parent's copies are still never loaded.
    let empty = tmp.path().join("empty-cache");
    let env = [
        ("RACEGATE_CACHE", empty.as_os_str()),
        ("PLANTED_MARKER", marker.as_os_str()),
    ];
    for args in commands {
        let r = run(args, &env);
        assert!(
            !marker.exists(),
            "racegate {args:?} loaded a library from the working folder or its parent:\n{}",
            r.text()
        );
    }
    // The control: the cache made private, its library is loaded (and, not being NVRTC,
    // refused by its missing functions, with exit 3, never a panic), so the marker works and
    // only the rule above kept the planted copies out. Where the cache is never consulted, the
    // same file is named with RACEGATE_NVRTC_LIB: the marker is known to work all the same.
    mode(&cache.join("nvrtc"), 0o755);
    let mut env = env_with(&cache, &marker).to_vec();
    if before.is_some() {
        env.push(("RACEGATE_NVRTC_LIB", cache_lib.as_os_str()));
    }
    let r = run(&["doctor"], &env);
    assert!(
        marker.exists(),
        "the private cache's library was not loaded: the test proves nothing\n{}",
        r.text()
    );
    assert!(
        r.text()
            .contains(&format!("{} is not NVRTC", cache_lib.display())),
        "{}",
        r.text()
    );
    assert!(!r.text().contains("panicked"), "{}", r.text());
}

fn env_with<'a>(cache: &'a Path, marker: &'a Path) -> [(&'static str, &'a OsStr); 2] {
    [
        ("RACEGATE_CACHE", cache.as_os_str()),
        ("PLANTED_MARKER", marker.as_os_str()),
    ]
}
