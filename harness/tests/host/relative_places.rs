//! `relative_places::<name>`: nothing racegate loads or runs is found relative to the current
//! folder. A relative `RACEGATE_NVRTC_LIB`, `CUDA_HOME`, `CUDA_PATH`, `RACEGATE_CACHE` or
//! `RACEGATE_COMPUTE_SANITIZER` is refused with exit 3 and a message naming the variable, and
//! the library or tool planted where the relative value leads never runs. The globalcheck
//! toolchain (g++, nvcc, nvdisasm) comes from `PATH`'s absolute entries only, each file trusted
//! along its whole path, and `CXX` is a name on `PATH` or an absolute path.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::loader_path::{plant_library, plant_tool, run_in};

#[test]
fn a_relative_place_variable_is_refused_by_name_and_what_it_leads_to_never_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    super::copy_dir(&super::package_dir().join("../examples/gate"), &work);
    let marker = tmp.path().join("marker");
    // Where each relative value leads, a library or tool that leaves the marker.
    plant_library(&work.join("lib"), "libnvrtc.so.13");
    plant_library(&work.join("cuda/lib64"), "libnvrtc.so.13");
    plant_library(&work.join("cache/nvrtc/nvidia/cu13/lib"), "libnvrtc.so.13");
    plant_tool(&work, "cs", &marker);
    let private_cache = tmp.path().join("private-cache");
    for (var, value) in [
        ("RACEGATE_NVRTC_LIB", "lib/libnvrtc.so.13"),
        ("CUDA_HOME", "cuda"),
        ("CUDA_PATH", "cuda"),
        ("RACEGATE_CACHE", "cache"),
        ("RACEGATE_COMPUTE_SANITIZER", "./cs"),
    ] {
        let mut env = vec![
            (var, OsStr::new(value)),
            ("PLANTED_MARKER", marker.as_os_str()),
        ];
        if var != "RACEGATE_CACHE" {
            env.push(("RACEGATE_CACHE", private_cache.as_os_str()));
        }
        for args in [&["compile"][..], &["doctor"]] {
            let (code, text) = run_in(&work, args, &env);
            assert!(
                !marker.exists(),
                "{var}={value} racegate {args:?}: what the relative value leads to ran:\n{text}"
            );
            assert!(
                text.contains(&format!("{var}={value} is a relative path")),
                "{var}={value} racegate {args:?} does not name the variable:\n{text}"
            );
            // doctor's code is the missing device's (4) here, which comes first.
            if args == ["compile"] {
                assert_eq!(code, Some(3), "{var}={value} racegate {args:?}:\n{text}");
            }
        }
    }
}

/// The `globalcheck` line of `racegate doctor` in `dir` with `env`.
fn globalcheck_line(dir: &Path, env: &[(&str, &OsStr)]) -> String {
    let (_, text) = run_in(dir, &["doctor"], env);
    text.lines()
        .skip_while(|l| !l.contains("globalcheck"))
        .take(3)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_globalcheck_toolchain_comes_from_absolute_trusted_places_only() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let marker = tmp.path().join("marker");
    // A world-writable folder named on PATH by absolute path.
    let open = tmp.path().join("open");
    for dir in [&work, &open] {
        for tool in ["g++", "nvcc", "nvdisasm"] {
            plant_tool(dir, tool, &marker);
        }
    }
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let cache = tmp.path().join("cache");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let with_first = |first: &str| {
        let mut p = std::ffi::OsString::from(first);
        p.push(":");
        p.push(&path);
        p
    };
    let open_path = with_first(&open.display().to_string());
    for (name, path) in [
        ("an empty entry", with_first("")),
        ("`.`", with_first(".")),
        ("a relative entry", with_first("work")),
        ("a world-writable folder", open_path.clone()),
    ] {
        let line = globalcheck_line(
            &work,
            &[("PATH", &path), ("RACEGATE_CACHE", cache.as_os_str())],
        );
        for planted in [&work, &open] {
            assert!(
                !line.contains(&planted.display().to_string()),
                "PATH with {name}: the planted g++ is the one globalcheck would run:\n{line}"
            );
        }
        assert!(
            !line.contains("can be built: ./g++") && !line.contains("can be built: g++"),
            "PATH with {name}: a g++ relative to the current folder:\n{line}"
        );
        if let Some(rest) = line.split("can be built: ").nth(1) {
            assert!(rest.starts_with('/'), "PATH with {name}: {line}");
        }
    }
    // CXX: a relative path is refused by name; a name is looked up on PATH's absolute entries.
    let line = globalcheck_line(
        &work,
        &[
            ("CXX", OsStr::new("./g++")),
            ("RACEGATE_CACHE", cache.as_os_str()),
        ],
    );
    assert!(line.contains("CXX=./g++ is a relative path"), "{line}");
    let line = globalcheck_line(
        &work,
        &[
            ("CXX", OsStr::new("g++")),
            ("PATH", &open_path),
            ("RACEGATE_CACHE", cache.as_os_str()),
        ],
    );
    assert!(
        !line.contains(&open.display().to_string()) || line.contains("passed over"),
        "{line}"
    );
    assert!(!marker.exists(), "a planted tool ran");
}
