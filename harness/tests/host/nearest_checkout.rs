//! `nearest_checkout::<name>`: the checkout whose `.racegate/nvrtc` racegate may use is the
//! nearest one above its binary (the one it was built in), never a folder further up that looks
//! like one; and a checkout whose copy fails the trust check is passed over with a note, so the
//! search goes on to the next place instead of stopping.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::loader_path::{plant_library, real_nvrtc};

/// Makes `dir` look like racegate's checkout (`harness/Cargo.toml`, `ci/setup`); with a planted
/// `libnvrtc.so.13` where `ci/setup` puts NVRTC when `planted`. The library's folder.
fn fake_checkout(dir: &Path, planted: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join("harness")).unwrap();
    std::fs::create_dir_all(dir.join("ci")).unwrap();
    std::fs::write(
        dir.join("harness/Cargo.toml"),
        "[package]\nname = \"racegate\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("ci/setup"), "#!/bin/sh\n").unwrap();
    let lib_dir = dir.join(racegate::build::toolchain::LOCAL_NVRTC);
    if planted {
        plant_library(&lib_dir, "libnvrtc.so.13");
    }
    lib_dir
}

/// A copy of racegate at `checkout/target/debug/racegate`.
fn binary_in(checkout: &Path) -> PathBuf {
    let exe = checkout.join("target/debug/racegate");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::copy(super::racegate_exe(), &exe).unwrap();
    exe
}

/// `exe compile` in `dir`, no GPU, no NVRTC named, `env` set (`None` removes): exit and text.
fn compile_with(exe: &Path, dir: &Path, env: &[(&str, Option<&OsStr>)]) -> (Option<i32>, String) {
    // A copy just written can be busy for a moment (ETXTBSY) while another test's child still
    // holds the write handle it inherited: try again.
    for _ in 0..50 {
        let mut cmd = Command::new(exe);
        cmd.arg("compile")
            .current_dir(dir)
            .env("RACEGATE_NO_GPU", "1")
            .env_remove("RACEGATE_NVRTC_LIB")
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH")
            .env_remove("LD_LIBRARY_PATH");
        for (k, v) in env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(26) => {
                std::thread::sleep(std::time::Duration::from_millis(100))
            }
            r => {
                let out = r.expect("racegate runs");
                return (
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout).into_owned()
                        + &String::from_utf8_lossy(&out.stderr),
                );
            }
        }
    }
    panic!("{} stayed busy (ETXTBSY)", exe.display());
}

#[test]
fn only_the_checkout_nearest_the_binary_is_racegates() {
    let tmp = tempfile::tempdir().unwrap();
    // A folder that looks like a checkout, holding the one racegate was built in.
    let outer = tmp.path().join("outer");
    fake_checkout(&outer, true);
    let inner = outer.join("inner");
    fake_checkout(&inner, false);
    let exe = binary_in(&inner);
    let work = tmp.path().join("work");
    super::copy_dir(&super::package_dir().join("../examples/gate"), &work);
    let marker = tmp.path().join("marker");
    let cache = tmp.path().join("cache");
    let (_, text) = compile_with(
        &exe,
        &work,
        &[
            ("CARGO_MANIFEST_DIR", None),
            ("RACEGATE_CACHE", Some(cache.as_os_str())),
            ("PLANTED_MARKER", Some(marker.as_os_str())),
        ],
    );
    assert!(
        !marker.exists(),
        "the NVRTC of a folder above the binary's own checkout was loaded:\n{text}"
    );
}

#[test]
fn a_checkout_that_fails_the_check_is_passed_over_with_a_note() {
    if real_nvrtc().is_none() {
        eprintln!("skipped: no .racegate/nvrtc in the checkout (run ci/setup)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The binary's checkout holds a copy in a folder anyone can write.
    let co = tmp.path().join("co");
    let lib_dir = fake_checkout(&co, true);
    std::fs::set_permissions(&lib_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let exe = binary_in(&co);
    let work = tmp.path().join("work");
    super::copy_dir(&super::package_dir().join("../examples/gate"), &work);
    let marker = tmp.path().join("marker");
    let cache = tmp.path().join("cache");
    // The next checkout, named by cargo at run time, has the real NVRTC.
    let (code, text) = compile_with(
        &exe,
        &work,
        &[
            ("CARGO_MANIFEST_DIR", Some(super::package_dir().as_os_str())),
            ("RACEGATE_CACHE", Some(cache.as_os_str())),
            ("PLANTED_MARKER", Some(marker.as_os_str())),
        ],
    );
    assert!(
        !marker.exists(),
        "the open checkout's library was loaded:\n{text}"
    );
    assert_eq!(
        code,
        Some(0),
        "the search stopped at the open checkout:\n{text}"
    );
    let planted = lib_dir.join("libnvrtc.so.13");
    assert!(
        text.contains("passed over: refusing to load")
            && text.contains(&planted.display().to_string())
            && text.contains(&format!("fix: chmod o-w {}", lib_dir.display())),
        "the open checkout is not named with why and how to fix it:\n{text}"
    );
}
