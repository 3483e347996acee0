//! streamcheck's recorder itself (`harness/globalcheck/streams.cpp`), built with g++ and run on
//! the host by `recorder_driver.cpp` (the Sanitizer API's calls stubbed, callbacks fed by hand,
//! ordinary pages standing for pinned and managed memory): its guard pages and SIGSEGV handler
//! meet real faults here. No GPU: what the CUDA driver does on the device is not tested here.

use std::path::Path;
use std::process::Command;

use racegate::build::globalcheck as build;
use racegate::judge::sanitize::injected::streams::model as streams;
use racegate::judge::sanitize::injected::streams::trace::Op;

/// Builds the driver with the recorder and runs it: (its output, the trace's lines).
fn run_driver(dir: &Path) -> (String, Vec<Op>, String) {
    let pkg = crate::package_dir();
    let tc = build::find().unwrap_or_else(|e| panic!("{e} (run ci/setup first)"));
    let exe = dir.join("recorder_driver");
    let built = Command::new(&tc.gxx)
        .args(["-std=c++17", "-O0", "-g"])
        .arg(format!("-I{}", tc.sanitizer_include.display()))
        .arg(format!("-I{}", tc.cuda_include.display()))
        .arg(format!("-I{}", pkg.join("globalcheck").display()))
        .arg(pkg.join("tests/host/streamcheck/recorder_driver.cpp"))
        .arg(pkg.join("globalcheck/streams.cpp"))
        .args(["-ldl", "-o"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "g++: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&exe).arg(dir).output().unwrap();
    let out = String::from_utf8_lossy(&ran.stdout).into_owned();
    assert!(
        ran.status.success(),
        "the driver failed ({:?}; 90: the program's handler got a fault on a guard): {out}",
        ran.status
    );
    let text = std::fs::read_to_string(dir.join("streams.jsonl")).unwrap();
    let ops = (text.lines())
        .map(|l| serde_json::from_str::<Op>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out, ops, text)
}

fn said(out: &str, name: &str) -> i64 {
    (out.lines())
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{name}` in {out}"))
}

#[test]
fn the_recorder_sees_host_accesses_keeps_its_handler_and_says_when_a_guard_is_lifted_beside() {
    let dir = tempfile::tempdir().unwrap();
    let (out, ops, text) = run_driver(dir.path());
    assert_eq!(said(&out, "done"), 1, "{out}");
    let bases: Vec<(u64, String)> = (ops.iter())
        .filter_map(|o| match o {
            Op::Alloc { base, kind, .. } => Some((*base, kind.clone())),
            _ => None,
        })
        .collect();
    let [_, (pinned, _), (managed, _), (other, _)] = bases[..] else {
        panic!("{bases:?}")
    };
    // 1. The write beside the copy's 16 bytes is seen, and lifting their guard is said.
    assert!(
        ops.contains(&Op::Unguard {
            t: ops
                .iter()
                .find_map(|o| match o {
                    Op::Host { t, .. } => Some(*t),
                    _ => None,
                })
                .unwrap(),
            base: pinned,
            size: 16,
            addr: pinned + 100,
        }),
        "{text}"
    );
    // 2. After a launch, a host read of managed memory is caught (the launch guarded it).
    let host = |a: u64| {
        ops.iter()
            .any(|o| matches!(o, Op::Host { addr, .. } if *addr == a))
    };
    assert!(host(managed + 8), "{text}");
    // 3. The program's own fault went to its handler, once, and the guard standing then still
    //    caught the next access (the recorder's handler was not replaced by the program's).
    assert_eq!(said(&out, "program_handler_calls"), 1);
    assert_eq!(said(&out, "program_handler_calls_after"), 1);
    assert!(host(other), "{text}");
    // What the model makes of it: the lifted guard hides accesses while the copy may still run.
    let j = streams::judge(&text);
    assert!(j.errors.is_empty(), "{:?}", j.errors);
    assert!(
        j.unjudged.iter().any(|u| u.contains("lifted their guard")),
        "{:?}",
        j.unjudged
    );
}
