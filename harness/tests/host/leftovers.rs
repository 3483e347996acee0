//! A racegate killed outright (SIGKILL: the OOM killer, a CI runner's hard kill) cannot end its
//! jobs: its program dies with it, but what the program started (a `setsid` child among them)
//! runs on, and so does its job cgroup. The next racegate command, whatever it is, ends them
//! and removes the cgroup, and `racegate doctor` says so; what a live racegate started is never
//! touched. Both with cgroups (where this machine lets racegate make them) and without
//! (`RACEGATE_NO_CGROUP=1`: the killed run's record, in racegate's cache, leads to them).
//!
//! Each test gives its racegates a cache folder of its own (the records) and, where it can, a
//! cgroup of its own to run in (the job cgroups), so no other test's racegate ends these
//! leftovers first. Program mode runs the program plainly without a GPU, as in `containment`.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::containment::{
    assert_none_left, cgroup2_mount, cgroups_here, gate_cmd, marked, running,
};

use crate::runner::racegate;

/// A cgroup for this test's racegates alone, under this process's own; removed (with anything
/// still in it) when dropped.
struct Scope(PathBuf);

impl Scope {
    /// `None` where this process cannot make one (its racegates then run where it does).
    fn new() -> Option<Scope> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
        let dir = cgroup2_mount()
            .join(path.trim_start_matches('/'))
            .join(format!("reap-test-{}-{}", std::process::id(), serial()));
        std::fs::create_dir(&dir).ok()?;
        let scope = Scope(dir);
        // A child must be able to join it (the cgroup may not be delegated to this user).
        let mut probe = Command::new("true");
        scope.spawn(&mut probe).ok()?.wait().ok()?;
        Some(scope)
    }

    /// Starts `cmd` in this cgroup: the child joins it between fork and exec.
    fn spawn(&self, cmd: &mut Command) -> std::io::Result<Child> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let procs = CString::new(self.0.join("cgroup.procs").as_os_str().as_bytes()).unwrap();
        // SAFETY: the hook makes only async-signal-safe calls (open, write, close) on a
        // NUL-terminated path and a static buffer.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if n < 0 {
                    return Err(err);
                }
                Ok(())
            });
        }
        cmd.spawn()
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("cgroup.kill"), "1");
        let until = Instant::now() + Duration::from_secs(3);
        while remove_tree(&self.0).is_err() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn remove_tree(dir: &Path) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = remove_tree(&e.path());
        }
    }
    std::fs::remove_dir(dir)
}

fn serial() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Starts `cmd`, in `scope` when there is one.
fn start(scope: Option<&Scope>, cmd: &mut Command) -> Child {
    match scope {
        Some(s) => s.spawn(cmd).expect("racegate starts in the test's cgroup"),
        None => cmd.spawn().expect("racegate starts"),
    }
}

/// The `sleep`s with `marker` (racegate and the shell hold it in their command lines too).
fn sleeps(marker: &str) -> Vec<i32> {
    running(marker)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
        .collect()
}

/// Waits until both `sleep`s with `marker` run; else fails with what racegate printed (`log`)
/// and whether it still runs.
#[track_caller]
fn wait_for(marker: &str, racegate: &mut Child, log: &Path) {
    let until = Instant::now() + Duration::from_secs(30);
    while sleeps(marker).len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let n = sleeps(marker).len();
    if n != 2 {
        let state = match racegate.try_wait() {
            Ok(Some(st)) => format!("racegate ended: {st}"),
            Ok(None) => "racegate still runs".to_string(),
            Err(e) => format!("racegate: {e}"),
        };
        let printed = std::fs::read_to_string(log).unwrap_or_else(|e| format!("({e})"));
        panic!("the program's sleeps never started ({n} of 2); {state}; it printed:\n{printed}");
    }
}

/// The job cgroups of the racegate `pid` under `base` (`racegate-<pid>-...`).
fn job_cgroups(base: &Path, pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("racegate-{pid}-"))
        })
        .map(|e| e.path())
        .collect()
}

/// The next command after the kill, and what it says about the leftovers.
#[derive(Clone, Copy)]
enum Next {
    /// `racegate doctor`: its `leftovers` line.
    Doctor,
    /// `racegate list` in racegate's checkout: its note on stderr.
    List,
}

impl Next {
    /// Runs it (in `scope` when there is one); its line about the leftovers.
    fn run(self, scope: Option<&Scope>, env: &[(&str, &str)]) -> String {
        let rg = match self {
            Next::Doctor => racegate(["doctor"]),
            Next::List => racegate(["list"]).at(super::package_dir()),
        };
        let mut cmd = rg.envs(env).command();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = start(scope, &mut cmd).wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let line = match self {
            Next::Doctor => stdout
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some("leftovers"))
                .map(|l| l.trim_start_matches("ok").trim_start().to_string()),
            Next::List => {
                assert_eq!(out.status.code(), Some(0), "racegate list:\n{stderr}");
                stderr
                    .lines()
                    .find_map(|l| l.strip_prefix("note: "))
                    .map(String::from)
            }
        };
        line.unwrap_or_else(|| format!("(nothing said)\n{stdout}{stderr}"))
    }
}

/// A gate on a program that starts a `setsid sleep` and sleeps itself; one racegate is
/// killed with SIGKILL, the other stays alive; then `next` runs.
fn killed_and_live(env: &[(&str, &str)], cgroups: bool, next: Next) {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap().to_string();
    let mut env = env.to_vec();
    env.push(("RACEGATE_CACHE", &cache_dir));
    // No GPU for either racegate, as on CI: on a GPU machine the live one's measuring run holds
    // the GPU alone while its program sleeps, and the other would wait for it (H100, run 36
    // call B: "the program's sleeps never started"). The jobs' containment is what is tested.
    env.push(("CUDA_VISIBLE_DEVICES", ""));
    let scope = Scope::new();
    // Where the job cgroups go: the scope, else this process's own cgroup.
    let base = scope.as_ref().map(|s| s.0.clone()).unwrap_or_else(|| {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let path = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or("/");
        cgroup2_mount().join(path.trim().trim_start_matches('/'))
    });
    let script = |m: &str| format!("setsid sleep {m} & sleep 1{m}");
    let (live_m, _live_sweep) = marked();
    let (dead_m, _dead_sweep) = marked();
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // What each racegate prints goes to a file beside its run, shown if its program never starts.
    let logged = |mut c: Command, dir: &Path| {
        let log = dir.join("racegate.log");
        let file = std::fs::File::create(&log).expect("a log file");
        c.stdout(Stdio::null()).stderr(file);
        (c, log)
    };
    let (mut cmd, live_log) = logged(
        gate_cmd(dirs.0.path(), &script(&live_m), &env).command(),
        dirs.0.path(),
    );
    let mut live = start(scope.as_ref(), &mut cmd);
    wait_for(&live_m, &mut live, &live_log);
    let (mut cmd, dead_log) = logged(
        gate_cmd(dirs.1.path(), &script(&dead_m), &env).command(),
        dirs.1.path(),
    );
    let mut dead = start(scope.as_ref(), &mut cmd);
    wait_for(&dead_m, &mut dead, &dead_log);
    let dead_cgroups = job_cgroups(&base, dead.id());
    let live_cgroups = job_cgroups(&base, live.id());
    if cgroups {
        assert!(
            !dead_cgroups.is_empty(),
            "no job cgroup under {}",
            base.display()
        );
        assert!(
            !live_cgroups.is_empty(),
            "no job cgroup under {}",
            base.display()
        );
    }
    dead.kill().unwrap();
    dead.wait().unwrap();
    // Its program died with it; the program's `setsid sleep` and `sleep` did not (else this
    // test proves nothing).
    std::thread::sleep(Duration::from_millis(300));
    let left = sleeps(&dead_m);
    assert_eq!(
        left.len(),
        2,
        "the killed racegate left its job's processes running"
    );
    for c in &dead_cgroups {
        assert!(c.exists(), "{} went with the killed racegate", c.display());
    }
    // Its record stays, naming it.
    let record = cache
        .path()
        .join("runs")
        .read_dir()
        .unwrap()
        .flatten()
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{}-", dead.id()))
        });
    assert!(record, "the killed racegate left no record");

    let line = next.run(scope.as_ref(), &env);
    assert_none_left(&dead_m, Duration::from_secs(1), "after the next command");
    for c in &dead_cgroups {
        assert!(!c.exists(), "{} is still there: {line}", c.display());
    }
    // With a scope (or records alone) no other test's racegate could have ended them first:
    // this command did, and says so.
    if scope.is_some() || !cgroups {
        assert!(
            line.contains(&format!("racegate pid {}", dead.id())),
            "{line}"
        );
        for pid in left {
            assert!(line.contains(&format!("(pid {pid})")), "pid {pid}: {line}");
        }
        for c in &dead_cgroups {
            assert!(line.contains(&c.display().to_string()), "{line}");
        }
        assert!(!line.contains("left alone"), "{line}");
    }

    // The live racegate, its job and its cgroup are untouched.
    assert!(
        live.try_wait().unwrap().is_none(),
        "the live racegate ended"
    );
    assert_eq!(
        sleeps(&live_m).len(),
        2,
        "the live racegate's job lost processes"
    );
    for c in &live_cgroups {
        assert!(c.exists(), "the live racegate's {} is gone", c.display());
    }
    assert!(
        !line.contains(&format!("racegate pid {}", live.id())),
        "{line}"
    );
    // SAFETY: signals the racegate this test started.
    unsafe { libc::kill(live.id() as i32, libc::SIGTERM) };
    let until = Instant::now() + Duration::from_secs(10);
    while live.try_wait().unwrap().is_none() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = live.kill();
    assert_eq!(live.wait().unwrap().code(), Some(143));
    assert_none_left(&live_m, Duration::from_millis(500), "after SIGTERM");
    // Both runs ended: neither record is left.
    let records: Vec<_> = std::fs::read_dir(cache.path().join("runs"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(records.is_empty(), "records left: {records:?}");
}

#[test]
fn cgroup_a_killed_racegates_job_is_ended_by_the_next_command_and_a_live_ones_is_not() {
    if cgroups_here() {
        killed_and_live(&[], true, Next::Doctor);
        killed_and_live(&[], true, Next::List);
    }
}

#[test]
fn subreaper_a_killed_racegates_job_is_ended_by_the_next_command_and_a_live_ones_is_not() {
    let off = [("RACEGATE_NO_CGROUP", "1")];
    killed_and_live(&off, false, Next::Doctor);
    killed_and_live(&off, false, Next::List);
}
