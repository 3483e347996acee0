//! `device_children::<name>`: the children of a thread tied to a device run on it. A thread
//! bound to device 1 (of a faked machine of two) starts every child with
//! `CUDA_VISIBLE_DEVICES=1`, through the one place children are started (the watchdog), and so
//! do the threads of a pool it starts; without a choice of devices children get the
//! environment they were given. Through the binary, `gate` and `grade` take `--devices` (a
//! device the faked driver does not show is refused, exit 2), and a child of `gate`'s main
//! thread runs on the first device chosen.

use std::path::Path;
use std::time::Duration;

use racegate::proc::watchdog::{self, thread_env, Deadline, Spawn};
use racegate::run::lease_devices::Devices;

use crate::repo_root;
use crate::runner::racegate;

/// What a shell child started on this thread sees in `CUDA_VISIBLE_DEVICES` (`unset` when it
/// has none); the variable of this test process is not passed on.
fn child_sees() -> String {
    let spawn = Spawn {
        remove: vec!["CUDA_VISIBLE_DEVICES".into()],
        ..Spawn::default()
    };
    let mut seen = String::new();
    let script = "echo \"${CUDA_VISIBLE_DEVICES-unset}\"";
    let f = watchdog::run(
        Path::new("/bin/sh"),
        &["-c".into(), script.into()],
        &spawn,
        Deadline::within(Duration::from_secs(30)),
        |l| seen.push_str(&String::from_utf8_lossy(l)),
    )
    .unwrap();
    assert_eq!(f.exit, watchdog::Exit::Code(0), "{}", f.stderr);
    seen
}

#[test]
fn a_child_of_a_thread_bound_to_device_1_sees_device_1() {
    // The faked driver shows two devices; both are chosen.
    let devices = Devices::resolve(Some("2"), Some(2)).unwrap();
    let on_1 = devices.binding(1, None);
    let (own, pooled) = std::thread::spawn(move || {
        thread_env::bind(on_1);
        let pooled = racegate::proc::pool::run_all(vec![(); 3], 3, |()| child_sees(), |_| {});
        (child_sees(), pooled)
    })
    .join()
    .unwrap();
    assert_eq!(own, "1");
    assert_eq!(pooled, ["1", "1", "1"], "a pool keeps its starter's device");
    // Device numbers are counted among what racegate was shown.
    let shown = devices.binding(1, Some("4,6"));
    let through = std::thread::spawn(move || {
        thread_env::bind(shown);
        child_sees()
    })
    .join()
    .unwrap();
    assert_eq!(through, "6");
}

#[test]
fn without_a_choice_children_are_untouched() {
    let default = Devices::default();
    let seen = std::thread::spawn(move || {
        let unbound = child_sees();
        thread_env::bind(default.binding(0, Some("3")));
        (unbound, child_sees(), thread_env::device())
    })
    .join()
    .unwrap();
    assert_eq!(seen, ("unset".into(), "unset".into(), Some(0)));
}

/// `racegate gate --ctest BUILD ARGS` with a fake ctest that writes the `CUDA_VISIBLE_DEVICES`
/// it sees, on a machine faked to show two devices: the exit code, output, and what it saw.
fn gate_ctest(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let t = tempfile::tempdir().unwrap();
    let build = t.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    std::fs::write(build.join("CTestTestfile.cmake"), "# fake\n").unwrap();
    let seen = t.path().join("seen");
    let ctest = t.path().join("ctest");
    std::fs::write(
        &ctest,
        format!(
            "#!/bin/sh\necho \"${{CUDA_VISIBLE_DEVICES-unset}}\" > '{}'\n\
             echo '{{\"kind\":\"ctestInfo\",\"version\":{{\"major\":1}},\"tests\":[]}}'\n",
            seen.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ctest, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = racegate(["gate", "--ctest"])
        .args([&build])
        .args(args)
        .env("RACEGATE_CTEST", &ctest)
        .env("RACEGATE_TEST_DEVICE_COUNT", "2")
        .envs_removed(&["CUDA_VISIBLE_DEVICES", "RACEGATE_DEVICES"])
        .envs(env)
        .at(t.path())
        .no_gpu()
        .run();
    let (code, text) = ran.exit_text();
    let seen = std::fs::read_to_string(&seen).unwrap_or_default();
    (code, text, seen.trim().to_string())
}

#[test]
fn gate_takes_devices_and_its_children_run_on_the_first_one() {
    // No tests found: bad input (exit 2), after the one child ran.
    let (code, text, seen) = gate_ctest(&[], &[]);
    assert_eq!((code, seen.as_str()), (2, "unset"), "{text}");
    assert!(text.contains("no test"), "{text}");
    let (code, text, seen) = gate_ctest(&["--devices", "1,"], &[]);
    assert_eq!((code, seen.as_str()), (2, "1"), "{text}");
    let (_, text, seen) = gate_ctest(&[], &[("RACEGATE_DEVICES", "1,0")]);
    assert_eq!(seen, "1", "{text}");
    // A device the driver does not show: refused before any child starts.
    let (code, text, seen) = gate_ctest(&["--devices", "0,2"], &[]);
    assert_eq!((code, seen.as_str()), (2, ""), "{text}");
    assert!(
        text.contains("device 2 is not among the 2 device(s)"),
        "{text}"
    );
    let long = racegate(["gate", "--help"]).run().text();
    assert!(long.contains("--devices <LIST>"), "{long}");
}

#[test]
fn grade_takes_devices() {
    let root = repo_root();
    let file = root.join("harness/tests/submissions/reduce/correct.cu");
    let grade = |args: &[&str], count: &str| {
        racegate(["grade", "--exercise", "reduce", "--format", "json"])
            .args(args)
            .args([&file])
            .env("RACEGATE_TEST_DEVICE_COUNT", count)
            .envs_removed(&["RACEGATE_DEVICES"])
            .at(&root)
            .no_gpu()
            .run()
            .exit_text()
    };
    let (code, text) = grade(&["--devices", "0,1"], "1");
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("device 1 is not among the 1 device(s)"),
        "{text}"
    );
    // Without a device here: the same exit as without the flag, whatever it is.
    let (plain, _) = grade(&[], "2");
    let (on_two, text) = grade(&["--devices", "2", "--jobs", "2"], "2");
    assert_eq!(on_two, plain, "{text}");
    let short = racegate(["grade", "-h"]).run().text();
    assert!(short.contains("--devices <LIST>"), "{short}");
}
