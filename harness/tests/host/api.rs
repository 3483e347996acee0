//! `racegate::Gate`, the programmatic gate: it loads a manifest with every option's default,
//! and on a machine without a CUDA device `run()` is the no-device error (exit 4), as
//! `racegate gate` is.

use std::time::Duration;

use racegate::api::Tool;
use racegate::Gate;

fn example_manifest() -> std::path::PathBuf {
    super::package_dir().join("../examples/gate/racegate.toml")
}

#[test]
fn from_manifest_loads_the_example() {
    let gate = Gate::from_manifest(example_manifest()).expect("the example manifest loads");
    let subjects = gate.subjects();
    assert!(subjects.contains(&"scale"), "{subjects:?}");
    assert!(subjects.contains(&"block_sum"), "{subjects:?}");
    assert!(gate
        .default_baseline()
        .ends_with("examples/gate/racegate-baseline.json"));
}

#[test]
fn a_missing_manifest_is_bad_input() {
    let e = Gate::from_manifest("no/such/racegate.toml").unwrap_err();
    assert_eq!(e.exit_code(), racegate::errors::exit::USAGE, "{e}");
}

#[test]
fn run_without_a_device_is_exit_4() {
    if racegate::run::device::probe().is_ok() {
        // With a device this process cannot see the no-device path: this very test runs again
        // in a child that is told there is none (it used to return here, and pass untested).
        assert!(
            std::env::var_os("RACEGATE_NO_GPU").is_none(),
            "RACEGATE_NO_GPU is set and a device was found anyway"
        );
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "api::run_without_a_device_is_exit_4",
                "--exact",
                "--nocapture",
            ])
            .env("RACEGATE_NO_GPU", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let gate = Gate::from_manifest(example_manifest())
        .unwrap()
        .trials(5)
        .seed(7)
        .jobs(2)
        .stress_timeout(Duration::from_secs(5))
        .sanitize_timeout(Duration::from_secs(30))
        .tools([Tool::Racecheck, Tool::Memcheck])
        .sanitizer_args(["--racecheck-detect-level=error"])
        .worker(super::racegate_exe());
    let e = gate.run().unwrap_err();
    assert_eq!(
        e.exit_code(),
        racegate::errors::exit::NO_DEVICE,
        "expected no device, got: {e}"
    );
}

#[test]
fn diff_against_the_example_baseline() {
    let gate = Gate::from_manifest(example_manifest()).unwrap();
    let run = racegate::api::GateRun::default();
    let d = gate.diff(&run, gate.default_baseline()).unwrap();
    assert!(d.new.is_empty() && d.accepted.is_empty());
}

#[test]
fn run_without_a_worker_is_bad_input() {
    // This test binary never calls run_worker_if_requested, so it cannot be its own worker:
    // re-executing it would run the tests again in every worker.
    let e = Gate::from_manifest(example_manifest())
        .unwrap()
        .run()
        .unwrap_err();
    assert_eq!(e.exit_code(), racegate::errors::exit::USAGE, "{e}");
    assert!(e.to_string().contains("run_worker_if_requested"), "{e}");
}
