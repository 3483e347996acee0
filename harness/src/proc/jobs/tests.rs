//! The tests of [`super`]: orphans by parent pid, cgroups, and which containment applies.

use super::*;
use crate::proc::watchdog::{self, Deadline, Spawn};
use std::path::Path;
use std::process::Stdio;

/// A number no other run of these tests uses, for a `sleep` to be found by.
fn marker() -> String {
    use std::sync::atomic::AtomicU32;
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "77{}{:02}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Kills what is left with its marker when dropped, so a failing test leaves nothing behind.
struct Sweep(String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for pid in running(&self.0) {
            // SAFETY: a leftover of this test (its command line holds the marker).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The live processes whose command line holds `marker`.
fn running(marker: &str) -> Vec<i32> {
    crate::proc::identity::table()
        .into_iter()
        .filter(|p| !p.zombie)
        .filter(|p| {
            std::fs::read(format!("/proc/{}/cmdline", p.pid))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .map(|p| p.pid)
        .collect()
}

/// Waits up to `within` for no process to hold `marker`; kills the ones left after.
fn gone(marker: &str, within: Duration) -> Result<(), Vec<i32>> {
    let until = Instant::now() + within;
    loop {
        let left = running(marker);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= until {
            for pid in &left {
                // SAFETY: a leftover of this test (its command line holds the marker).
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sh(script: &str, use_cgroup: bool) -> watchdog::Finished {
    sh_within(script, use_cgroup, Duration::from_secs(20))
}

/// [`sh`] with another idle deadline.
fn sh_within(script: &str, use_cgroup: bool, idle: Duration) -> watchdog::Finished {
    let spawn = Spawn {
        no_cgroup: !use_cgroup,
        ..Spawn::default()
    };
    watchdog::run(
        Path::new("/bin/sh"),
        &["-c".into(), script.into()],
        &spawn,
        Deadline { idle, total: None },
        |_| {},
    )
    .unwrap()
}

fn have(tool: &str) -> bool {
    ["/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(tool).exists())
}

#[test]
fn without_a_cgroup_an_orphan_that_left_the_session_and_the_environment_is_killed() {
    assert!(have("setsid"), "setsid (util-linux) is needed");
    adopt_orphans_for_test();
    for script in [
        // Its parent, the job's shell, exits: it is re-parented to this process.
        "env -i setsid sh -c 'sleep {M}' & sleep 0.5; exit 0",
        // A double fork: its parent is gone at once.
        "(env -i setsid sleep {M} &); sleep 0.5; exit 0",
    ] {
        let m = marker();
        let _sweep = Sweep(m.clone());
        let f = sh(&script.replace("{M}", &m), false);
        assert_eq!(f.exit, watchdog::Exit::Code(0), "{script}: {}", f.stderr);
        // Another test's job, started before the orphan and still running, may own it: it
        // is killed once that job ends, within its deadline.
        assert_eq!(
            gone(&m, Duration::from_secs(25)),
            Ok(()),
            "{script} left it"
        );
    }
}

#[test]
fn an_orphan_of_a_live_job_survives_the_end_of_another_job() {
    assert!(have("setsid"), "setsid (util-linux) is needed");
    adopt_orphans_for_test();
    let m = marker();
    let _sweep = Sweep(m.clone());
    let script = format!("(env -i setsid sleep {m} &); sleep 3; exit 0");
    let a = std::thread::spawn(move || sh(&script, false));
    let until = Instant::now() + Duration::from_secs(5);
    while running(&m).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    // The orphan itself (job A's shell holds the marker too, in its script).
    let orphan = || {
        running(&m)
            .into_iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
            .collect::<Vec<i32>>()
    };
    let until = Instant::now() + Duration::from_secs(5);
    while orphan().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!orphan().is_empty(), "job A's orphan started");
    // Job B starts after A and ends while A runs: A's orphan is not B's to kill.
    let b = sh("exit 0", false);
    assert_eq!(b.exit, watchdog::Exit::Code(0));
    assert!(!orphan().is_empty(), "job B's end killed job A's orphan");
    let a = a.join().unwrap();
    assert_eq!(a.exit, watchdog::Exit::Code(0));
    assert_eq!(
        gone(&m, Duration::from_secs(25)),
        Ok(()),
        "job A's end left it"
    );
}

#[test]
fn a_job_cgroup_kills_what_left_the_session_and_the_environment() {
    use std::os::unix::process::CommandExt;
    if let Err(why) = cgroup::base() {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
        assert!(!ci, "CI must be able to make cgroups v2: {why}");
        eprintln!("note: no cgroup v2 here, test skipped: {why}");
        return;
    }
    assert!(have("setsid"), "setsid (util-linux) is needed");
    for kill_file in [true, false] {
        let cg = JobCgroup::create(&crate::proc::identity::new_token()).unwrap();
        let cg = Arc::new(if kill_file {
            cg
        } else {
            cg.without_kill_file()
        });
        let m = marker();
        let _sweep = Sweep(m.clone());
        // A job of this test's own, live from before the sleeps start until they are checked.
        // The sleeps are re-parented to this process, and another test's job that ends
        // meanwhile kills every orphan no live job may own (`orphans`: those started before
        // every live job): with this job live, and older than them, they are not such orphans.
        let dir = tempfile::tempdir().unwrap();
        let held = marker();
        let done = dir.path().join(format!("done{held}"));
        let wait = format!("while [ ! -e {} ]; do sleep 0.05; done", done.display());
        // It prints nothing until the test is done with it: under `sh`'s 20 s idle deadline a
        // slow round (the waits below allow 25 s) could end it early, and its end, the last live
        // job's, sweeps the sleeps as orphans: the likely cause of this test's failures in 2 of
        // ~6 full test runs on 2026-12-02 (a sleep gone), not proven.
        let holder = std::thread::spawn(move || sh_within(&wait, false, Duration::from_secs(600)));
        let until = Instant::now() + Duration::from_secs(5);
        while running(&held).is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Registered: a job is registered under the registry's lock before its spawn returns.
        drop(super::registry());
        let mut cmd = Command::new("/bin/sh");
        cmd.stdout(Stdio::null()).stderr(Stdio::null()).args([
            "-c",
            &format!("env -i setsid sleep {m} & (env -i setsid sleep 1{m} &); exit 0"),
        ]);
        let joiner = Arc::clone(&cg);
        // SAFETY: the hook only makes async-signal-safe calls.
        unsafe { cmd.pre_exec(move || joiner.join_self()) };
        let mut child = cmd.spawn().unwrap();
        child.wait().unwrap();
        // Patient: on a loaded two-core CI machine the second sleep can take seconds to start.
        let until = Instant::now() + Duration::from_secs(20);
        while running(&m).len() < 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let escaped = running(&m);
        // For the message only: a process gone since reads as an empty line.
        let cmdline = |p: &i32| std::fs::read(format!("/proc/{p}/cmdline")).ok();
        let cmdlines: Vec<String> = escaped
            .iter()
            .map(|p| {
                String::from_utf8_lossy(&cmdline(p).unwrap_or_else(Vec::new)).replace('\0', " ")
            })
            .collect();
        assert_eq!(escaped.len(), 2, "both sleeps run: {cmdlines:?}");
        let held = cg.pids();
        assert!(escaped.iter().all(|p| held.contains(p)), "{held:?}");
        // Nothing but the cgroup kills them here.
        assert!(cg.remove(Duration::from_secs(2)), "kill_file {kill_file}");
        assert!(running(&m).is_empty(), "kill_file {kill_file}");
        std::fs::write(&done, b"").unwrap();
        assert_eq!(holder.join().unwrap().exit, watchdog::Exit::Code(0));
        for pid in escaped {
            // SAFETY: reaps the sleep if this process (a subreaper) adopted it.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

#[test]
fn containment_says_which_applies() {
    let c = containment();
    let d = c.describe();
    match &c {
        Containment::Cgroup { parent, .. } => {
            assert!(d.starts_with("cgroup v2"), "{d}");
            assert!(d.contains(&parent.display().to_string()), "{d}");
        }
        Containment::Subreaper { why } | Containment::ProcessGroup { why } => {
            assert!(d.contains(why.as_str()), "{d}")
        }
    }
    let off = Containment::ProcessGroup { why: "x".into() };
    assert!(off.describe().contains("not a child subreaper"));
}

fn adopt_orphans_for_test() {
    processes::adopt_orphans();
    assert!(processes::adopting(), "PR_SET_CHILD_SUBREAPER failed");
}

/// `pid`'s state letter and parent, while its /proc entry exists.
fn state(pid: i32) -> Option<(String, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((rest.first()?.to_string(), rest.get(1)?.parse().ok()?))
}

#[test]
fn a_descendant_adopted_after_its_parent_was_reaped_is_reaped_by_reap_job() {
    // The job's shell exits at once and is reaped; its background `sleep` is then adopted
    // by this process (a subreaper) and dies a moment later: a zombie nobody waits for,
    // unless reap_job does.
    use std::os::unix::process::CommandExt;
    processes::adopt_orphans();
    let token = crate::proc::identity::new_token();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", "sleep 0.3 & echo $!"])
        .env(crate::proc::identity::JOB_ENV, &token)
        .process_group(0)
        .stdout(std::process::Stdio::piped());
    let (mut sh, job) = spawn(&mut cmd, &token, false).unwrap();
    let pgid = crate::proc::pid_t(sh.id());
    let mut out = String::new();
    std::io::Read::read_to_string(sh.stdout.as_mut().unwrap(), &mut out).unwrap();
    sh.wait().unwrap();
    drop(job);
    let sleep: i32 = out.trim().parse().unwrap();
    let me = crate::proc::pid_t(std::process::id());
    let until = Instant::now() + Duration::from_secs(5);
    while state(sleep).is_some_and(|(s, _)| s != "Z") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Another test's job, ending meanwhile, may have reaped it already (every job's end
    // reaps the orphans no job owns); if not, it is this process's zombie.
    if let Some(s) = state(sleep) {
        assert_eq!(
            s,
            ("Z".to_string(), me),
            "the sleep is this process's zombie"
        );
    }
    processes::reap_job(pgid, &token, Duration::from_millis(500));
    assert_eq!(state(sleep), None, "reaped");
}
