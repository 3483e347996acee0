//! `racegate setup` and `racegate doctor` through the real binary: setup installs into the user
//! cache given by `RACEGATE_CACHE`, once (idempotent), with a clear exit-3 error when python or
//! pip fails; doctor names each missing thing with its fix and exits by the one table. pip is
//! a stand-in script here (CI must not depend on PyPI answering); the real install is run by
//! `ci/fresh-user`.

use std::os::unix::fs::PermissionsExt;

use crate::runner::racegate;

/// A stand-in for `python3 -m pip install --target DIR ...` that creates the library file and
/// counts its runs in `calls`.
fn fake_python(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("python");
    let calls = dir.join("calls");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho run >> '{}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --target ] && d=$2; shift; done\n\
             mkdir -p \"$d/nvidia/cu13/lib\" && : > \"$d/nvidia/cu13/lib/libnvrtc.so.13\"\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn setup_installs_into_the_cache_once() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let py = fake_python(t.path());
    let py = py.to_str().unwrap();
    let setup = || {
        racegate(["setup", "--python", py])
            .at(t.path())
            .env("RACEGATE_CACHE", &cache)
            .envs_removed(&["PYTHON"])
            .run()
            .exit_text()
    };
    let (code, text) = setup();
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("installed into"), "{text}");
    assert!(cache.join("nvrtc/nvidia/cu13/lib/libnvrtc.so.13").is_file());
    assert!(cache.join("nvrtc/racegate-setup.txt").is_file());
    let (code, text) = setup();
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("already installed"), "{text}");
    let calls = std::fs::read_to_string(t.path().join("calls")).unwrap();
    assert_eq!(
        calls.lines().count(),
        1,
        "pip ran again on an installed cache"
    );
    let (code, _) = racegate(["setup", "--python", py, "--force"])
        .at(t.path())
        .env("RACEGATE_CACHE", &cache)
        .envs_removed(&["PYTHON"])
        .run()
        .exit_text();
    assert_eq!(code, 0);
}

#[test]
fn setup_without_python_or_with_a_failing_pip_exits_3() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let (code, text) = racegate(["setup", "--python", "/nonexistent/python"])
        .at(t.path())
        .env("RACEGATE_CACHE", &cache)
        .envs_removed(&["PYTHON"])
        .run()
        .exit_text();
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("needs python3 with pip"), "{text}");
    let (code, text) = racegate(["setup", "--python", "false"])
        .at(t.path())
        .env("RACEGATE_CACHE", &cache)
        .envs_removed(&["PYTHON"])
        .run()
        .exit_text();
    assert_eq!(code, 3, "{text}");
    assert!(text.contains("pip install --target"), "{text}");
    assert!(
        !cache.join("nvrtc").exists(),
        "a failed install left a folder"
    );
}

#[test]
fn doctor_names_what_is_missing_and_the_fix() {
    let t = tempfile::tempdir().unwrap();
    let (code, text) = racegate(["doctor"])
        .at(t.path())
        .env("RACEGATE_CACHE", t.path().join("cache"))
        .envs_removed(&["PYTHON"])
        .run()
        .exit_text();
    for name in ["driver", "gpu", "nvrtc", "compute-sanitizer", "ncu"] {
        assert!(text.contains(name), "{name} not named:\n{text}");
    }
    if racegate::run::device::probe().is_err() {
        assert_eq!(code, 4, "{text}");
        assert!(text.contains("MISSING  gpu"), "{text}");
    } else {
        assert!(code == 0 || code == 3, "{code}: {text}");
    }
    if text.contains("MISSING  nvrtc") {
        assert!(text.contains("racegate setup"), "{text}");
    }
}
