//! `device_children::<name>`: the children of a thread tied to a device run on it. A thread
//! bound to device 1 (of a faked machine of two) starts every child with
//! `CUDA_VISIBLE_DEVICES=1`, through the one place children are started (the watchdog), and so
//! do the threads of a pool it starts; without a choice of devices children get the
//! environment they were given.

use std::path::Path;
use std::time::Duration;

use racegate::proc::watchdog::{self, thread_env, Deadline, Spawn};
use racegate::run::lease_devices::Devices;

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
