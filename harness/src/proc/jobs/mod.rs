//! The live jobs: every child the watchdog started and has not yet reaped.
//! Part of `proc/`: may import `errors` and the rest of `proc/`.
//!
//! Each job is kept with its process group, job token and cgroup, so that a signal to racegate
//! ends all of them ([`stop_all`], [`kill_all_now`]) and the end of one job does not touch the
//! others.
//!
//! Containment, strongest first ([`containment`] says which applies):
//! 1. cgroup v2 ([`super::cgroup`]): each job in a cgroup of its own, killed whole at its end;
//! 2. child subreaper, by parent pid (only when the process opted in with
//!    [`super::processes::adopt_orphans`]: the `racegate` binary does, the library only on
//!    `Gate::adopt_orphans(true)`): a process re-parented to racegate is an orphan of some job,
//!    whatever its session or environment, and is killed at the end of a job (once no live job
//!    can own it: it started before every other live job) and before racegate exits;
//! 3. the process group, the job token and ancestry alone.
//!
//! The live jobs are also written to the run's record (`leftovers.rs`), so that should racegate
//! be killed outright, the next run finds what they left.

use std::collections::BTreeMap;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::cgroup::{self, JobCgroup};
use super::identity::{self, Proc};
use super::leftovers::{self, JobRecord};
use super::processes;
use crate::errors::{Error, Result};

/// How racegate keeps a job's processes together, for `doctor` and the reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Containment {
    /// Each job in a cgroup v2 of its own under `parent`, killed whole at its end.
    Cgroup {
        /// racegate's own cgroup, where the job cgroups are created.
        parent: std::path::PathBuf,
        /// Killed with `cgroup.kill` (kernel 5.14+), else member by member.
        kill_file: bool,
    },
    /// No cgroup (`why`); racegate is a child subreaper and kills the processes re-parented to
    /// it, by parent pid.
    Subreaper {
        /// Why no cgroup could be used.
        why: String,
    },
    /// No cgroup (`why`) and not a subreaper: the process group, job token and ancestry only. A
    /// grandchild that leaves both the group (`setsid`) and the environment (`env -i`) and
    /// whose parent exits is not found.
    ProcessGroup {
        /// Why no cgroup could be used.
        why: String,
    },
}

impl Containment {
    /// One line: which containment and why not a stronger one.
    pub fn describe(&self) -> String {
        match self {
            Containment::Cgroup { parent, kill_file } => format!(
                "cgroup v2: each job in its own cgroup under {} (killed with {})",
                parent.display(),
                if *kill_file {
                    "cgroup.kill"
                } else {
                    "SIGKILL to each member"
                }
            ),
            Containment::Subreaper { why } => format!(
                "child subreaper: processes re-parented to racegate are killed by parent pid \
                 (no cgroup v2: {why})"
            ),
            Containment::ProcessGroup { why } => format!(
                "process group, job token and ancestry only (no cgroup v2: {why}; not a child \
                 subreaper)"
            ),
        }
    }
}

/// Which containment applies to the jobs started from now on.
pub fn containment() -> Containment {
    match cgroup::base() {
        Ok(b) => Containment::Cgroup {
            parent: b.dir,
            kill_file: b.kill_file,
        },
        Err(why) if processes::adopting() => Containment::Subreaper { why },
        Err(why) => Containment::ProcessGroup { why },
    }
}

/// A live job as the registry keeps it.
#[derive(Clone, Debug)]
struct Live {
    main: i32,
    pgid: i32,
    token: String,
    cgroup: Option<Arc<JobCgroup>>,
    /// The main child's start, in clock ticks since boot (/proc/PID/stat field 22): every
    /// process of the job started at or after it.
    start: u64,
}

#[derive(Default)]
struct Registry {
    next: u64,
    live: BTreeMap<u64, Live>,
    stopping: bool,
}

static JOBS: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    live: BTreeMap::new(),
    stopping: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    JOBS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A started job: its main child's pid, token and cgroup. Dropping it kills and removes its
/// cgroup and takes it out of the registry (after the main child was reaped, or given up on).
#[derive(Debug)]
pub struct Job {
    id: u64,
    /// The main child (also its process group).
    pub main: i32,
    /// The token in its environment.
    pub token: String,
    /// Its cgroup, where one could be made.
    pub cgroup: Option<Arc<JobCgroup>>,
}

impl Job {
    /// What [`processes::end_job`] needs to find the job's processes.
    pub fn scope(&self) -> processes::Scope<'_> {
        processes::Scope {
            id: self.id,
            orphans,
            pgid: self.main,
            token: &self.token,
            cgroup: self.cgroup.as_deref(),
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if let Some(cg) = &self.cgroup {
            cg.remove(Duration::from_secs(2));
        }
        let mut reg = registry();
        reg.live.remove(&self.id);
        leftovers::record(&records(&reg));
    }
}

/// The live jobs as the run's record keeps them, for the next run should this one be killed.
fn records(reg: &Registry) -> Vec<JobRecord> {
    reg.live
        .values()
        .map(|l| JobRecord {
            pgid: l.pgid,
            start: l.start,
            token: l.token.clone(),
            cgroup: l.cgroup.as_ref().map(|c| c.dir().to_path_buf()),
        })
        .collect()
}

/// Starts `cmd` (already in its own process group, with `token` in its environment) as a job:
/// in a cgroup of its own when `use_cgroup` and one can be made, and registered as live. The
/// registry stays locked from fork to registration, so no sweep takes the new child for an
/// orphan. A child that cannot join its cgroup is started again without one, and cgroups are
/// not used again.
pub fn spawn(cmd: &mut Command, token: &str, use_cgroup: bool) -> Result<(Child, Job)> {
    use std::os::unix::process::CommandExt;
    let mut reg = registry();
    if reg.stopping {
        return Err(Error::Child("racegate is stopping (signal)".into()));
    }
    let cg = if use_cgroup {
        JobCgroup::create(token).ok().map(Arc::new)
    } else {
        None
    };
    // Every child: killed when the thread that started it (which waits for it) is gone, so a
    // racegate killed outright (SIGKILL, a CI runner's hard timeout) leaves no child holding
    // the GPU; and no descriptor racegate inherited (or opened without close-on-exec) passes on.
    // SAFETY: prctl and close_range are single system calls, async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            // CLOSE_RANGE_CLOEXEC (4): closed at the exec, not now (std's own error pipe is
            // among them). A kernel without close_range (before 5.11) keeps them.
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 4u32);
            Ok(())
        });
    }
    // The record names this run before any child of it exists.
    leftovers::before_job();
    // The child reads `join` as it was at fork: off for the retry without a cgroup.
    let join = Arc::new(AtomicBool::new(cg.is_some()));
    if let Some(cg) = &cg {
        let (cg, join) = (Arc::clone(cg), Arc::clone(&join));
        // SAFETY: the hook only makes async-signal-safe calls (JobCgroup::join_self).
        unsafe {
            cmd.pre_exec(move || {
                if join.load(Ordering::Relaxed) {
                    cg.join_self()?;
                }
                Ok(())
            });
        }
    }
    let started = match cmd.spawn() {
        Err(e) if cg.is_some() => {
            join.store(false, Ordering::Relaxed);
            let again = cmd.spawn();
            if again.is_ok() {
                cgroup::disable(format!("a child could not join its cgroup: {e}"));
            }
            again.map(|c| (c, None))
        }
        r => r.map(|c| (c, cg.clone())),
    };
    let (child, cg) = match started {
        Ok((child, kept)) => {
            if let (None, Some(unused)) = (&kept, &cg) {
                unused.remove(Duration::from_millis(100));
            }
            (child, kept)
        }
        Err(e) => {
            drop(reg);
            if let Some(cg) = cg {
                cg.remove(Duration::from_millis(100));
            }
            let program = cmd.get_program().to_string_lossy().into_owned();
            return Err(Error::process(format!("could not start {program}"), e));
        }
    };
    let main = crate::proc::pid_t(child.id());
    let id = reg.next;
    reg.next += 1;
    reg.live.insert(
        id,
        Live {
            main,
            pgid: main,
            token: token.to_string(),
            cgroup: cg.clone(),
            start: identity::start_ticks(main).unwrap_or(0),
        },
    );
    leftovers::record(&records(&reg));
    Ok((
        child,
        Job {
            id,
            main,
            token: token.to_string(),
            cgroup: cg,
        },
    ))
}

/// The processes re-parented to racegate (the subreaper) that no live job but `except` may own
/// and that are no main child: in another process group than racegate's (racegate's own
/// children that are not jobs stay in its group) and, while other jobs live, started before
/// all of them. Empty unless racegate adopts orphans.
pub fn orphans(procs: &[Proc], except: Option<u64>) -> Vec<i32> {
    if !processes::adopting() {
        return Vec::new();
    }
    let reg = registry();
    let others = reg.live.iter().filter(|(id, _)| Some(**id) != except);
    let mains: Vec<i32> = others.clone().map(|(_, l)| l.main).collect();
    let oldest = others.map(|(_, l)| l.start).min().unwrap_or(u64::MAX);
    let me = crate::proc::pid_t(std::process::id());
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    procs
        .iter()
        .filter(|p| p.ppid == me && p.pgrp != my_group && !mains.contains(&p.pid))
        .filter(|p| p.start < oldest)
        .map(|p| p.pid)
        .collect()
}

/// Everything of the live jobs (main children, groups, tokens, cgroups) and every adopted
/// orphan, alive.
fn everything(jobs: &[Live]) -> Vec<Proc> {
    let table = identity::table();
    let mut seeds: Vec<i32> = orphans(&table, None);
    for j in jobs {
        seeds.push(j.main);
        if let Some(cg) = &j.cgroup {
            seeds.extend(cg.pids());
        }
    }
    let groups: Vec<i32> = jobs.iter().map(|j| j.pgid).collect();
    let tokens: Vec<&str> = jobs.iter().map(|j| j.token.as_str()).collect();
    processes::closure(table, &seeds, &groups, &tokens)
}

fn signal_all(jobs: &[Live], sig: i32) -> usize {
    let procs = everything(jobs);
    for j in jobs {
        if procs.iter().any(|p| p.pgrp == j.pgid) {
            // SAFETY: signals a job's process group, which still has a member.
            unsafe { libc::kill(-j.pgid, sig) };
        }
        if let Some(cg) = &j.cgroup {
            cg.signal(sig);
        }
    }
    for p in &procs {
        // SAFETY: signals a process of a live job (or an orphan of one).
        unsafe { libc::kill(p.pid, sig) };
    }
    procs.len()
}

fn take_all() -> Vec<Live> {
    let mut reg = registry();
    reg.stopping = true;
    reg.live.values().cloned().collect()
}

/// On a signal: TERM every live job (its group, its cgroup, its token, its orphans), wait up
/// to `grace` for them to end, KILL what is left and remove the cgroups. No job starts after.
pub fn stop_all(grace: Duration) {
    let jobs = take_all();
    if signal_all(&jobs, libc::SIGTERM) > 0 {
        let until = Instant::now() + grace;
        while !everything(&jobs).is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    kill_all_now();
}

/// KILL every live job and orphan at once and remove the cgroups (a second signal).
pub fn kill_all_now() {
    let jobs = take_all();
    for j in &jobs {
        if let Some(cg) = &j.cgroup {
            cg.kill(Duration::ZERO);
        }
    }
    signal_all(&jobs, libc::SIGKILL);
    for j in &jobs {
        if let Some(cg) = &j.cgroup {
            cg.remove(Duration::from_millis(500));
        }
    }
    reap_orphans();
    leftovers::finish();
}

/// Before racegate exits: no job is left, so every orphan it adopted is killed and reaped, and
/// the run's record goes.
pub fn before_exit() {
    if registry().live.is_empty() {
        leftovers::finish();
    }
    let table = identity::table();
    let orphans = orphans(&table, None);
    if orphans.is_empty() {
        return;
    }
    let procs = processes::closure(table, &orphans, &[], &[]);
    for p in &procs {
        // SAFETY: signals an orphan racegate adopted, or a descendant of one.
        unsafe { libc::kill(p.pid, libc::SIGKILL) };
    }
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        reap_orphans();
        if orphans_alive().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn orphans_alive() -> Vec<i32> {
    let table = identity::table();
    let o = orphans(&table, None);
    table
        .iter()
        .filter(|p| o.contains(&p.pid) && !p.zombie)
        .map(|p| p.pid)
        .collect()
}

/// Reaps the zombies re-parented to racegate that no live job owns (main children are their
/// watchdogs' to reap). Without it they outlive racegate as zombies of an init that may never
/// reap them.
pub fn reap_orphans() {
    if !processes::adopting() {
        return;
    }
    let table = identity::table();
    let zombies: Vec<i32> = orphans_any_age(&table);
    for pid in zombies {
        let mut status = 0;
        // SAFETY: waits without blocking for one adopted child that is a zombie.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    }
}

/// Adopted zombies, whatever their age: a dead orphan belongs to no one any more.
fn orphans_any_age(table: &[Proc]) -> Vec<i32> {
    let reg = registry();
    let mains: Vec<i32> = reg.live.values().map(|l| l.main).collect();
    let me = crate::proc::pid_t(std::process::id());
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    table
        .iter()
        .filter(|p| p.zombie && p.ppid == me && p.pgrp != my_group && !mains.contains(&p.pid))
        .map(|p| p.pid)
        .collect()
}

#[cfg(test)]
mod tests;
