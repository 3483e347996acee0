//! `devices::<name>`: `--devices LIST` and `RACEGATE_DEVICES` through the binary, on a machine
//! whose device count is faked (`RACEGATE_TEST_DEVICE_COUNT`): a device the driver does not
//! show is a usage error (exit 2) before any work, whether the flag or the variable names it;
//! a selection it shows changes nothing in the result (here, without a device: the same
//! reports as without the flag).

use std::path::Path;

use crate::repo_root;
use crate::runner::racegate;

/// `racegate check reduce_sequential ARGS` without a device, the driver taken to show `count`
/// devices: its exit code and output, and the JSON it wrote to `json`.
fn check(args: &[&str], env: &[(&str, &str)], json: &Path) -> (i32, String, String) {
    let ran = racegate(["check", "reduce_sequential", "--json"])
        .args([json])
        .args(args)
        .envs(env)
        .at(repo_root())
        .no_gpu()
        .run();
    let (code, text) = ran.exit_text();
    (
        code,
        text,
        std::fs::read_to_string(json).unwrap_or_default(),
    )
}

#[test]
fn a_device_the_driver_does_not_show_is_refused_before_any_work() {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("c.json");
    let two = [("RACEGATE_TEST_DEVICE_COUNT", "2")];
    for (args, env) in [
        (&["--devices", "0,2"][..], &two[..]),
        (&["--devices", "3"][..], &two[..]),
        (
            &[][..],
            &[
                ("RACEGATE_TEST_DEVICE_COUNT", "2"),
                ("RACEGATE_DEVICES", "1,5"),
            ][..],
        ),
        (&["--devices", "zero"][..], &[][..]),
    ] {
        let (code, text, written) = check(args, env, &json);
        assert_eq!(code, 2, "{args:?} {env:?}: {text}");
        assert!(
            text.contains("--devices") && text.contains("RACEGATE_DEVICES"),
            "{text}"
        );
        assert!(
            written.is_empty(),
            "nothing run, nothing written: {written}"
        );
    }
    let (code, text, _) = check(&["--devices", "0,2"], &two, &json);
    assert!(
        text.contains("device 2 is not among the 2 device(s)"),
        "{code}: {text}"
    );
    // mutate reads the same choice.
    let ran = racegate(["mutate", "--run", "kernels/reduce_sequential.cu"])
        .envs(&[
            ("RACEGATE_TEST_DEVICE_COUNT", "1"),
            ("RACEGATE_DEVICES", "0,1"),
        ])
        .at(repo_root())
        .no_gpu()
        .run();
    let (code, text) = ran.exit_text();
    assert_eq!(code, 2, "{text}");
}

#[test]
fn devices_the_driver_shows_change_nothing_in_the_result() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a.json"), t.path().join("b.json"));
    let (code, text, plain) = check(&[], &[], &a);
    assert_eq!(code, 4, "{text}");
    let two = [("RACEGATE_TEST_DEVICE_COUNT", "2")];
    let (code, text, on_two) = check(&["--devices", "0,1"], &two, &b);
    assert_eq!(code, 4, "{text}");
    assert_eq!(on_two, plain);
}
