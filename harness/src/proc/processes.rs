//! The processes a supervised child started, found and ended. A child runs in its own process
//! group with a job token in its environment; at its end (deadline or exit) every process of
//! its group, every process carrying its token, and everything below those are signalled TERM,
//! then KILL. racegate is a child subreaper, so a `setsid` grandchild whose parent exits becomes
//! racegate's child instead of init's: it keeps its token, is found, and is reaped here. What is
//! still alive afterwards is named. (A grandchild that both leaves the session and clears its
//! environment cannot be told apart from racegate's other children and is not chased.)

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The environment variable holding a child's job token; its descendants inherit it.
pub const JOB_ENV: &str = "RACEGATE_JOB";

/// A fresh job token for a child about to start.
pub fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes racegate the reaper of its orphaned descendants (once per process), so a grandchild
/// that left its session stays findable and is killed with its job.
pub fn adopt_orphans() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with integer arguments only changes this process's attribute.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    });
}

/// One row of the process table.
#[derive(Clone, Debug)]
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    zombie: bool,
    name: String,
}

fn table() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
            let open = stat.find('(')?;
            let close = stat.rfind(')')?;
            let name = stat[open + 1..close].to_string();
            let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            Some(Proc {
                pid,
                zombie: rest.first()? == &"Z",
                ppid: rest.get(1)?.parse().ok()?,
                pgrp: rest.get(2)?.parse().ok()?,
                name,
            })
        })
        .collect()
}

/// Whether a process's environment holds the job token (false when it cannot be read:
/// another user's process, or gone).
fn has_token(pid: i32, token: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{JOB_ENV}={token}");
    env.split(|b| *b == 0).any(|kv| kv == want.as_bytes())
}

/// The processes of a job: the child `main`, its group, its token, and everything below them.
fn members(pgid: i32, token: &str, main: i32) -> Vec<Proc> {
    let me = std::process::id() as i32;
    let procs = table();
    let mut set: BTreeSet<i32> = procs
        .iter()
        .filter(|p| p.pid != me)
        .filter(|p| p.pid == main || p.pgrp == pgid || has_token(p.pid, token))
        .map(|p| p.pid)
        .collect();
    loop {
        let before = set.len();
        for p in &procs {
            if p.pid != me && set.contains(&p.ppid) {
                set.insert(p.pid);
            }
        }
        if set.len() == before {
            break;
        }
    }
    procs.into_iter().filter(|p| set.contains(&p.pid)).collect()
}

/// Reaps the zombies racegate adopted (never `main`, which its owner waits for).
fn reap_adopted(procs: &[Proc], main: i32) {
    let me = std::process::id() as i32;
    for p in procs.iter().filter(|p| p.ppid == me && p.pid != main) {
        let mut status = 0;
        // SAFETY: waits without blocking for one adopted child.
        unsafe { libc::waitpid(p.pid, &mut status, libc::WNOHANG) };
    }
}

fn alive(pgid: i32, token: &str, main: i32) -> Vec<Proc> {
    let m = members(pgid, token, main);
    reap_adopted(&m, main);
    m.into_iter().filter(|p| !p.zombie).collect()
}

fn signal(procs: &[Proc], pgid: i32, sig: i32) {
    // The group is signalled as a whole only while it surely exists (a member is in it), so a
    // reused id is never hit.
    if pgid > 1 && procs.iter().any(|p| p.pgrp == pgid) {
        // SAFETY: signals the process group racegate created for the job.
        unsafe { libc::kill(-pgid, sig) };
    }
    for p in procs {
        // SAFETY: signals a process of the job (found by group, token or ancestry).
        unsafe { libc::kill(p.pid, sig) };
    }
}

/// What ending a job's processes did.
#[derive(Clone, Debug, Default)]
pub struct Ended {
    /// `name (pid N)` of each process that was running and was signalled.
    pub killed: Vec<String>,
    /// `name (pid N)` of each process still alive `patience` after KILL.
    pub survivors: Vec<String>,
}

/// TERM every process of the job (`main` included while it runs), wait up to 500 ms, KILL
/// what is left, and name what is still alive after `patience`. `killed` leaves `main` out:
/// it names what the child left behind.
pub fn end_job(pgid: i32, token: &str, main: i32, patience: Duration) -> Ended {
    let name = |p: &Proc| format!("{} (pid {})", p.name, p.pid);
    let first = alive(pgid, token, main);
    let mut ended = Ended {
        killed: first.iter().filter(|p| p.pid != main).map(name).collect(),
        survivors: Vec::new(),
    };
    signal(&first, pgid, libc::SIGTERM);
    if wait_gone(pgid, token, main, Duration::from_millis(500)) {
        return ended;
    }
    let left = alive(pgid, token, main);
    signal(&left, pgid, libc::SIGKILL);
    if !wait_gone(pgid, token, main, patience) {
        ended.survivors = alive(pgid, token, main).iter().map(name).collect();
    }
    ended
}

/// After the child itself was reaped: reaps the job's processes that became racegate's
/// zombies only then (a grandchild whose parent, the child, died first is reparented to
/// racegate, the subreaper, when the child is reaped). Left alone they outlive racegate as
/// zombies of init, and an init that does not reap (a container's shell) keeps them.
pub fn reap_job(pgid: i32, token: &str, within: Duration) {
    let me = std::process::id() as i32;
    let until = Instant::now() + within;
    loop {
        let m = members(pgid, token, 0);
        reap_adopted(&m, 0);
        if !m.iter().any(|p| p.ppid == me) || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_gone(pgid: i32, token: &str, main: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        if alive(pgid, token, main).is_empty() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        adopt_orphans();
        let token = new_token();
        let mut sh = std::process::Command::new("/bin/sh")
            .args(["-c", "sleep 0.3 & echo $!"])
            .env(JOB_ENV, &token)
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pgid = sh.id() as i32;
        let mut out = String::new();
        std::io::Read::read_to_string(sh.stdout.as_mut().unwrap(), &mut out).unwrap();
        sh.wait().unwrap();
        let sleep: i32 = out.trim().parse().unwrap();
        let me = std::process::id() as i32;
        let until = Instant::now() + Duration::from_secs(5);
        while state(sleep).is_some_and(|(s, _)| s != "Z") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            state(sleep),
            Some(("Z".to_string(), me)),
            "the sleep is this process's zombie"
        );
        reap_job(pgid, &token, Duration::from_millis(500));
        assert_eq!(state(sleep), None, "reaped");
    }
}
