//! `atomic_write::<name>`: the one atomic write and the lock around read-modify-write of a
//! baseline: concurrent `--update-baseline` runs lost entries (8 runs each adding one left 4 to 7),
//! and a rewritten file lost its mode (0664 became 0600).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use racegate::build::compile::{with_lock, write_atomically};
use racegate::gate::baseline::Baseline;
use racegate::gate::finding::{GateFinding, GateRun};
use racegate::gate::fingerprint::Identity;

/// Read the JSON list at `path`, add `entry`, write it back: racy without the lock.
fn add_entry(path: &Path, entry: &str) {
    with_lock(path, || {
        let mut list: Vec<String> = match std::fs::read_to_string(path) {
            Ok(t) => serde_json::from_str(&t).unwrap(),
            Err(_) => Vec::new(),
        };
        // Widen the window between the read and the write.
        std::thread::sleep(std::time::Duration::from_millis(20));
        list.push(entry.to_string());
        write_atomically(
            path,
            false,
            serde_json::to_string(&list).unwrap().as_bytes(),
        )
        .map_err(|e| racegate::Error::io("writing", path, e))
    })
    .unwrap();
}

fn entries(path: &Path) -> Vec<String> {
    let mut v: Vec<String> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.sort();
    v
}

#[test]
fn eight_threads_each_adding_one_entry_end_with_eight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("list.json");
    std::thread::scope(|s| {
        for i in 0..8 {
            let path = &path;
            s.spawn(move || add_entry(path, &format!("t{i}")));
        }
    });
    assert_eq!(
        entries(&path),
        (0..8).map(|i| format!("t{i}")).collect::<Vec<_>>()
    );
}

/// The child of the test below: one process adding one entry.
#[test]
#[ignore = "run by eight_processes_each_adding_one_entry_end_with_eight"]
fn child_adds_one_entry() {
    if let (Some(p), Some(e)) = (
        std::env::var_os("RACEGATE_LOCK_TEST_FILE"),
        std::env::var("RACEGATE_LOCK_TEST_ENTRY").ok(),
    ) {
        add_entry(Path::new(&p), &e);
    }
}

#[test]
fn eight_processes_each_adding_one_entry_end_with_eight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("list.json");
    let children: Vec<_> = (0..8)
        .map(|i| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "atomic_write::child_adds_one_entry",
                    "--ignored",
                    "--quiet",
                ])
                .env("RACEGATE_LOCK_TEST_FILE", &path)
                .env("RACEGATE_LOCK_TEST_ENTRY", format!("p{i}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(
        entries(&path),
        (0..8).map(|i| format!("p{i}")).collect::<Vec<_>>()
    );
}

/// Eight `--update-baseline`s at once, each finding one race in its own kernel.
#[test]
fn eight_concurrent_baseline_updates_keep_every_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("racegate-baseline.json");
    std::thread::scope(|s| {
        for i in 0..8 {
            let path = &path;
            s.spawn(move || {
                let subject = format!("k{i}");
                // The results are `#[non_exhaustive]`: filled in field by field.
                let mut id = Identity::default();
                id.subject = subject.clone();
                id.detector = "racecheck".into();
                id.kind = "Analysis: Race condition".into();
                id.function = subject.clone();
                id.source = "x=1;".into();
                let mut run = GateRun::default();
                run.findings = vec![GateFinding::new(id, "k.cu", Some(1), "m".into())];
                run.subjects = vec![subject.clone()];
                run.mark_checked(&subject, "racecheck", 1.0);
                let u = Baseline::update(path, &run, false).unwrap();
                assert!(u.written);
            });
        }
    });
    assert_eq!(Baseline::load(&path).unwrap().accepted.len(), 8);
}

#[test]
fn a_rewritten_file_keeps_its_mode_and_no_temporary_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("racegate-baseline.json");
    std::fs::write(&path, "{}").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
    Baseline::default().save(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o664);
    // A golden file that fails half-way leaves the old file and nothing beside it (it left
    // `.tmp<pid>`).
    let golden = dir.path().join("expected.txt");
    std::fs::write(&golden, "old").unwrap();
    let failed = racegate::gate::oracles::write_atomically_from(&golden, |w| {
        w.write_all(b"half")?;
        Err(std::io::Error::other("the run's output went away"))
    });
    assert!(failed.is_err());
    assert_eq!(std::fs::read_to_string(&golden).unwrap(), "old");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["expected.txt", "racegate-baseline.json"]);
}
