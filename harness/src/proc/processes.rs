//! The processes a supervised child started, found and ended. A child runs in its own process
//! group with a job token in its environment and, where racegate can make one, in a cgroup v2
//! of its own ([`super::cgroup`]); at its end (deadline or exit) every process of its cgroup,
//! its group, every process carrying its token, everything below those and, when racegate is a
//! child subreaper, the orphans re-parented to it that no other live job may own
//! (`jobs`, `orphans`) are signalled TERM, then KILL. What is still alive afterwards is
//! named. Without a cgroup and without the subreaper, a grandchild that both leaves the session
//! and clears its environment and whose parent exits is not found.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

use super::cgroup::JobCgroup;
use super::identity::{table, Proc, JOB_ENV};

static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Makes this process the reaper of its orphaned descendants (once per process): a grandchild
/// whose parent exits becomes racegate's child instead of init's, so it is found by its parent
/// pid and killed with its job (`jobs`, `orphans`) even when it left the job's session
/// and environment, and its zombie is reaped. It changes the whole process: the `racegate`
/// binary opts in; the library only on `Gate::adopt_orphans(true)`. From then on racegate kills
/// and reaps the processes re-parented to this one that are not in its process group.
pub fn adopt_orphans() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with integer arguments only changes this process's attribute.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
            ADOPTING.store(true, Ordering::Relaxed);
        }
    });
}

/// Whether [`adopt_orphans`] made this process a child subreaper.
pub fn adopting() -> bool {
    ADOPTING.load(Ordering::Relaxed)
}

/// Whether a process's environment holds one of the job tokens (false when it cannot be read:
/// another user's process, or gone).
fn has_token(pid: i32, tokens: &[&str]) -> bool {
    if tokens.is_empty() {
        return false;
    }
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want: Vec<String> = tokens.iter().map(|t| format!("{JOB_ENV}={t}")).collect();
    env.split(|b| *b == 0)
        .any(|kv| want.iter().any(|w| kv == w.as_bytes()))
}

/// The processes of `procs` that are in `seeds`, in one of `groups`, carry one of `tokens`, or
/// descend from one of those; never racegate itself.
pub fn closure(procs: Vec<Proc>, seeds: &[i32], groups: &[i32], tokens: &[&str]) -> Vec<Proc> {
    let me = crate::proc::pid_t(std::process::id());
    let mut set: BTreeSet<i32> = procs
        .iter()
        .filter(|p| p.pid != me)
        .filter(|p| seeds.contains(&p.pid) || groups.contains(&p.pgrp) || has_token(p.pid, tokens))
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

/// How a job's processes are found.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// The job's id in the registry (its own orphans are not shielded by its start).
    pub id: u64,
    /// The orphans re-parented to racegate that no other live job may own (`jobs`).
    pub orphans: fn(&[Proc], Option<u64>) -> Vec<i32>,
    /// Its process group.
    pub pgid: i32,
    /// Its token.
    pub token: &'a str,
    /// Its cgroup, if it has one.
    pub cgroup: Option<&'a JobCgroup>,
}

/// The processes of a job: the child `main`, its cgroup, its group, its token, the orphans no
/// other live job may own, and everything below them.
fn members(job: &Scope, main: i32) -> Vec<Proc> {
    let procs = table();
    let mut seeds = (job.orphans)(&procs, Some(job.id));
    seeds.push(main);
    if let Some(cg) = job.cgroup {
        seeds.extend(cg.pids());
    }
    closure(procs, &seeds, &[job.pgid], &[job.token])
}

/// Reaps the zombies racegate adopted (never `main`, which its owner waits for).
fn reap_adopted(procs: &[Proc], main: i32) {
    let me = crate::proc::pid_t(std::process::id());
    for p in procs.iter().filter(|p| p.ppid == me && p.pid != main) {
        let mut status = 0;
        // SAFETY: waits without blocking for one adopted child.
        unsafe { libc::waitpid(p.pid, &mut status, libc::WNOHANG) };
    }
}

fn alive(job: &Scope, main: i32) -> Vec<Proc> {
    let m = members(job, main);
    reap_adopted(&m, main);
    m.into_iter().filter(|p| !p.zombie).collect()
}

fn signal(procs: &[Proc], job: &Scope, sig: i32) {
    let pgid = job.pgid;
    // The group is signalled as a whole only while it surely exists (a member is in it), so a
    // reused id is never hit.
    if pgid > 1 && procs.iter().any(|p| p.pgrp == pgid) {
        // SAFETY: signals the process group racegate created for the job.
        unsafe { libc::kill(-pgid, sig) };
    }
    if let Some(cg) = job.cgroup {
        if sig == libc::SIGKILL {
            // `cgroup.kill` where there is one: a process forking right now cannot escape. The
            // kill is asynchronous: wait (briefly) until the members are gone, so nothing the
            // job started is still running when the job is reported ended.
            cg.kill(Duration::from_millis(500));
        } else {
            cg.signal(sig);
        }
    }
    for p in procs {
        // SAFETY: signals a process of the job (found by cgroup, group, token or ancestry).
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
pub fn end_job(job: &Scope, main: i32, patience: Duration) -> Ended {
    let name = |p: &Proc| format!("{} (pid {})", p.name, p.pid);
    let first = alive(job, main);
    let mut ended = Ended {
        killed: first.iter().filter(|p| p.pid != main).map(name).collect(),
        survivors: Vec::new(),
    };
    if first.is_empty() {
        return ended;
    }
    signal(&first, job, libc::SIGTERM);
    if wait_gone(job, main, Duration::from_millis(500)) {
        return ended;
    }
    let left = alive(job, main);
    signal(&left, job, libc::SIGKILL);
    if !wait_gone(job, main, patience) {
        ended.survivors = alive(job, main).iter().map(name).collect();
    }
    ended
}

/// After the child itself was reaped: reaps the job's processes that became racegate's
/// zombies only then (a grandchild whose parent, the child, died first is reparented to
/// racegate, the subreaper, when the child is reaped). Left alone they outlive racegate as
/// zombies of init, and an init that does not reap (a container's shell) keeps them.
pub fn reap_job(pgid: i32, token: &str, within: Duration) {
    let me = crate::proc::pid_t(std::process::id());
    let until = Instant::now() + within;
    loop {
        let m = closure(table(), &[], &[pgid], &[token]);
        reap_adopted(&m, 0);
        if !m.iter().any(|p| p.ppid == me) || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_gone(job: &Scope, main: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        if alive(job, main).is_empty() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
