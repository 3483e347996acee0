//! `outside_target::<name>`: racegate run from outside its checkout (a `CARGO_TARGET_DIR`
//! elsewhere, a temporary folder as the current one) still finds the NVRTC that `ci/setup` put in
//! the checkout's `.racegate/nvrtc`, and `racegate doctor` says where it looked.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checkout's `ci/setup` copy of NVRTC, when there is one.
fn local_nvrtc() -> Option<PathBuf> {
    let lib = super::package_dir()
        .join("..")
        .join(racegate::build::toolchain::LOCAL_NVRTC)
        .join("libnvrtc.so.13");
    lib.is_file().then_some(lib)
}

/// Copies the binary into a temporary folder, as a target folder outside the checkout holds it.
fn binary_outside(t: &Path) -> PathBuf {
    let exe = t.join("target/debug/racegate");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::copy(super::racegate_exe(), &exe).unwrap();
    exe
}

#[test]
fn a_binary_outside_the_checkout_finds_the_checkouts_nvrtc() {
    if local_nvrtc().is_none() {
        eprintln!("skipped: no .racegate/nvrtc in the checkout (run ci/setup)");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let exe = binary_outside(t.path());
    let work = t.path().join("work");
    super::copy_dir(&super::package_dir().join("../examples/gate"), &work);
    // A copy just written can be busy for a moment (ETXTBSY) while another test's child still
    // holds the write handle it inherited: try again.
    let mut tries = 0;
    let out = loop {
        let r = Command::new(&exe)
            .args(["compile"])
            .current_dir(&work)
            .env_remove("RACEGATE_NVRTC_LIB")
            .env("RACEGATE_CACHE", t.path().join("cache"))
            .env("RACEGATE_NO_GPU", "1")
            .output();
        match r {
            Err(e) if e.raw_os_error() == Some(libc_etxtbsy()) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r => break r.unwrap(),
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(".racegate/nvrtc"), "{text}");
}

#[test]
fn the_not_found_message_names_every_place_and_both_installs() {
    let e = racegate::Error::NvrtcMissing {
        searched: racegate::build::toolchain::not_found_text(&[
            "/usr/local/cuda/lib64/libnvrtc.so.13".to_string(),
        ]),
    };
    let msg = e.to_string();
    for want in [
        "/usr/local/cuda/lib64/libnvrtc.so.13",
        "RACEGATE_NVRTC_LIB",
        "`ci/setup`",
        "`racegate setup`",
        "a copy in the current folder or above it is never used",
    ] {
        assert!(msg.contains(want), "no `{want}` in: {msg}");
    }
}

/// ETXTBSY on Linux.
fn libc_etxtbsy() -> i32 {
    26
}
