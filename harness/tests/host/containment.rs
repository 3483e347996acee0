//! `containment::<name>`: containment that does not rest on the child's cooperation, through the
//! real binary: a program under `racegate gate -- PROGRAM` that starts a process which leaves its
//! session and clears its environment (`env -i setsid`), or double-forks, leaves nothing running
//! after racegate; each job runs in a cgroup v2 of its own that is gone afterwards (where this
//! machine lets racegate make one; with `RACEGATE_NO_CGROUP=1` the fallback, racegate as child
//! subreaper killing by parent pid, does the same); and SIGINT or SIGTERM to racegate ends every
//! job and exits 130 or 143 (a second signal at once).
//!
//! Program mode runs the program plainly without a GPU (the sanitizer runs are inconclusive,
//! the exit is 4), which is all these tests need. Each `sleep` carries a number unique to the
//! run, so the processes left behind are found by their command line.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::runner::{racegate, Racegate};

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A number no other test (or run) uses, for the `sleep`s of one test.
fn marker() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "9{}{:02}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The live processes whose command line holds `marker`.
pub(super) fn running(marker: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// Kills what is left with its marker when dropped, so a failing test leaves nothing behind.
pub(super) struct Sweep(String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for pid in running(&self.0) {
            // SAFETY: a leftover of this test (its command line holds the marker).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// A fresh marker, and what sweeps its leftovers at the end of the test.
pub(super) fn marked() -> (String, Sweep) {
    let m = marker();
    (m.clone(), Sweep(m))
}

/// Fails when a process with `marker` is still running `settle` from now (and kills it).
#[track_caller]
pub(super) fn assert_none_left(marker: &str, settle: Duration, what: &str) {
    let until = Instant::now() + settle;
    let mut left = running(marker);
    while !left.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        left = running(marker);
    }
    let shown: Vec<String> = left
        .iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{pid}: {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect();
    for pid in &left {
        // SAFETY: a leftover of this test (its command line holds the marker).
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "{what}: left running: {shown:?}");
}

/// `racegate gate` on `sh -c script`, one plain run, no jitter, one sanitizer (inconclusive
/// here), in a scratch folder.
pub(super) fn gate_cmd(dir: &Path, script: &str, env: &[(&str, &str)]) -> Racegate {
    racegate([
        "gate",
        "--runs",
        "1",
        "--no-jitter",
        "--tools",
        "memcheck",
        "--timeout",
        "60",
        "--",
        "sh",
        "-c",
        script,
    ])
    .at(dir)
    // The plain run is the job under test: on a GPU machine compute-sanitizer would run the
    // script too, and end it on TERM by itself (H200 run 21), hiding racegate's grace period.
    .env(
        "RACEGATE_COMPUTE_SANITIZER",
        "/nonexistent/compute-sanitizer",
    )
    .envs(env)
}

/// Runs the gate to its end: the exit code and everything it printed.
fn gate(script: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    gate_cmd(dir.path(), script, env).run().code_text()
}

/// Whether racegate can make cgroups here (it can wherever this process can: racegate runs as
/// its child, in its cgroup). Outside CI a machine without them skips the cgroup checks with a
/// note; in CI that fails.
pub(super) fn cgroups_here() -> bool {
    match racegate::proc::containment() {
        racegate::proc::Containment::Cgroup { .. } => true,
        other => {
            let why = other.describe();
            assert!(!in_ci(), "CI must be able to make cgroups v2: {why}");
            eprintln!("note: no cgroup v2 here, cgroup checks skipped: {why}");
            false
        }
    }
}

/// The shells that escape: `{M}` is the marker. Each exits after a second, its escapee running.
const ENV_I_SETSID: &str = "env -i setsid sh -c 'sleep {M}' & sleep 1; exit 0";
const SETSID: &str = "setsid sh -c 'sleep {M}' & sleep 1; exit 0";
const DOUBLE_FORK: &str = "(env -i setsid sleep {M} &); (sleep 1{M} &); sleep 1; exit 0";

fn escape(script: &str, env: &[(&str, &str)]) {
    let (m, _sweep) = marked();
    let (code, text) = gate(&script.replace("{M}", &m), env);
    // 0 with a device, 4 without; never a crash or a signal.
    assert!(matches!(code, Some(0 | 3 | 4)), "exit {code:?}:\n{text}");
    assert!(
        text.contains("left") && text.contains("running after it exited"),
        "the leftovers are named:\n{text}"
    );
    assert_none_left(&m, Duration::from_secs(1), script);
}

#[test]
fn cgroup_an_env_i_setsid_grandchild_is_killed() {
    if cgroups_here() {
        escape(ENV_I_SETSID, &[]);
    }
}

#[test]
fn cgroup_a_setsid_grandchild_is_killed() {
    if cgroups_here() {
        escape(SETSID, &[]);
    }
}

#[test]
fn cgroup_a_double_forked_grandchild_is_killed() {
    if cgroups_here() {
        escape(DOUBLE_FORK, &[]);
    }
}

#[test]
fn subreaper_an_env_i_setsid_grandchild_is_killed_by_parent_pid() {
    escape(ENV_I_SETSID, &[("RACEGATE_NO_CGROUP", "1")]);
}

#[test]
fn subreaper_a_setsid_grandchild_is_killed() {
    escape(SETSID, &[("RACEGATE_NO_CGROUP", "1")]);
}

#[test]
fn subreaper_a_double_forked_grandchild_is_killed_by_parent_pid() {
    escape(DOUBLE_FORK, &[("RACEGATE_NO_CGROUP", "1")]);
}

/// The cgroup2 mount, from /proc/self/mountinfo.
pub(super) fn cgroup2_mount() -> PathBuf {
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    mi.lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let mount = left.split_whitespace().nth(4)?;
            (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(mount))
        })
        .expect("a cgroup2 mount")
}

/// The job's cgroup path as the job saw it (`0::PATH`), and whether its folder existed then.
fn job_cgroup(env: &[(&str, &str)]) -> (String, bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cgroup.txt");
    let mount = cgroup2_mount();
    let script = format!(
        "d=$(sed -n 's/^0:://p' /proc/self/cgroup); echo \"$d\" > '{f}'; \
         test -d '{m}'\"$d\" && echo there >> '{f}'; exit 0",
        f = file.display(),
        m = mount.display()
    );
    let (code, text) = gate(&script, env);
    assert!(matches!(code, Some(0 | 3 | 4)), "exit {code:?}:\n{text}");
    let seen = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let mut lines = seen.lines();
    let path = lines.next().unwrap_or_default().to_string();
    (path, lines.next() == Some("there"), text)
}

#[test]
fn each_job_runs_in_a_cgroup_of_its_own_that_is_removed_afterwards() {
    if !cgroups_here() {
        return;
    }
    let (path, existed, text) = job_cgroup(&[]);
    let name = Path::new(&path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    assert!(
        name.starts_with("racegate-"),
        "the job ran in {path}, not a job cgroup:\n{text}"
    );
    assert!(existed, "{path} was not there during the run");
    let dir = cgroup2_mount().join(path.trim_start_matches('/'));
    assert!(
        !dir.exists(),
        "{} is still there after the run",
        dir.display()
    );
}

#[test]
fn with_cgroups_turned_off_the_job_stays_in_racegates_cgroup() {
    let (path, _, text) = job_cgroup(&[("RACEGATE_NO_CGROUP", "1")]);
    assert!(!path.contains("racegate-"), "{path}:\n{text}");
}

/// Starts the gate on `script`, waits until a process with `marker` runs, sends `signals` to
/// racegate (`gap` apart) and returns how it ended and how long after the last signal.
fn interrupt(script: &str, marker: &str, signals: &[i32], gap: Duration) -> (Child, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = gate_cmd(dir.path(), script, &[])
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("racegate starts");
    // Its `sleep`, not the shell whose command line names the marker too: a shell seen before it
    // ran its `trap` would die of the TERM the test means it to ignore (H100, run 36 call C:
    // killed after 20 ms, no grace).
    let sleeping = || {
        running(marker).into_iter().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
    };
    let until = Instant::now() + Duration::from_secs(30);
    while !sleeping() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sleeping(), "the hanging child never started");
    // The hang is under way (the job's shell and its sleep are up).
    std::thread::sleep(Duration::from_millis(300));
    for (i, sig) in signals.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(gap);
        }
        // SAFETY: signals the racegate this test started.
        unsafe { libc::kill(child.id() as i32, *sig) };
    }
    let sent = Instant::now();
    let until = sent + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = sent.elapsed();
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
        let _ = child.wait();
        assert_none_left(marker, Duration::ZERO, "racegate ignored the signal");
        panic!("racegate did not exit within 10 s of {signals:?}");
    }
    (child, took)
}

fn exit_code(child: &mut Child) -> Option<i32> {
    child.wait().unwrap().code()
}

#[test]
fn sigint_ends_the_hanging_job_and_exits_130() {
    let (m, _sweep) = marked();
    let (mut child, took) = interrupt(
        &format!("sleep {m} & sleep 1{m}"),
        &m,
        &[libc::SIGINT],
        Duration::ZERO,
    );
    assert_eq!(exit_code(&mut child), Some(130));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_none_left(&m, Duration::from_millis(500), "after SIGINT");
}

#[test]
fn sigterm_ends_the_hanging_job_and_exits_143() {
    let (m, _sweep) = marked();
    let (mut child, took) = interrupt(
        &format!("env -i setsid sleep {m} & sleep 1{m}"),
        &m,
        &[libc::SIGTERM],
        Duration::ZERO,
    );
    assert_eq!(exit_code(&mut child), Some(143));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_none_left(&m, Duration::from_millis(500), "after SIGTERM");
}

#[test]
fn a_job_that_ignores_term_is_killed_after_the_grace() {
    let (m, _sweep) = marked();
    let (mut child, took) = interrupt(
        &format!("trap '' TERM; sleep 1{m}"),
        &m,
        &[libc::SIGINT],
        Duration::ZERO,
    );
    assert_eq!(exit_code(&mut child), Some(130));
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(6),
        "TERM, a 2 s grace, then KILL: {took:?}"
    );
    assert_none_left(&m, Duration::from_millis(500), "after the grace");
}

#[test]
fn a_second_sigint_kills_at_once() {
    let (m, _sweep) = marked();
    let (mut child, took) = interrupt(
        &format!("trap '' TERM; sleep 1{m}"),
        &m,
        &[libc::SIGINT, libc::SIGINT],
        Duration::from_millis(300),
    );
    assert_eq!(exit_code(&mut child), Some(130));
    assert!(
        took < Duration::from_millis(1200),
        "the second SIGINT did not kill at once: {took:?}"
    );
    assert_none_left(&m, Duration::from_millis(500), "after two SIGINTs");
}
