//! Who a process is: the process table from /proc, a process named by its pid *and* its start
//! (clock ticks since boot, /proc/PID/stat field 22), so that a pid the kernel handed to a new
//! process is never taken for the old one; the racegate run a process belongs to; and the job
//! tokens that carry that run's name.
//!
//! A run is the top-level racegate command (its pid and start). A hidden worker subcommand
//! belongs to the run of the racegate that started it ([`join_parent_run`]). Every job token is
//! `<run pid>-<run start>-<pid>-<n>`, and every job cgroup is `racegate-<token>`, so whoever
//! finds a token or a cgroup knows which run it belongs to and can tell whether that run still
//! lives ([`Run::alive`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The environment variable holding a child's job token; its descendants inherit it.
pub const JOB_ENV: &str = "RACEGATE_JOB";

/// One row of the process table.
#[derive(Clone, Debug)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub zombie: bool,
    pub name: String,
    /// When it started, in clock ticks since boot.
    pub start: u64,
}

/// The row of `pid`, read from /proc/PID/stat.
pub fn read_proc(pid: i32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat[open + 1..close].to_string();
    let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    Some(Proc {
        pid,
        // `X` (dead) is only ever seen for an instant, on the way out.
        zombie: matches!(rest.first(), Some(&"Z" | &"X")),
        ppid: rest.get(1)?.parse().ok()?,
        pgrp: rest.get(2)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
        name,
    })
}

/// The process table, from /proc.
pub fn table() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// When `pid` started, in clock ticks since boot.
pub fn start_ticks(pid: i32) -> Option<u64> {
    read_proc(pid).map(|p| p.start)
}

/// Whether the process `pid` that started at `start` is still running (not a zombie): false
/// when the pid is gone or now names another process.
pub fn running(pid: i32, start: u64) -> bool {
    read_proc(pid).is_some_and(|p| p.start == start && !p.zombie)
}

/// A racegate run: the process of the top-level command, by pid and start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Run {
    pub pid: i32,
    /// Its start, in clock ticks since boot.
    pub start: u64,
}

impl Run {
    /// Whether the run's process still runs (a zombie, killed and not yet waited for, does not).
    pub fn alive(&self) -> bool {
        running(self.pid, self.start)
    }

    /// The start of every job token of this run (`<pid>-<start>-`).
    pub fn token_prefix(&self) -> String {
        format!("{}-{}-", self.pid, self.start)
    }
}

static RUN: OnceLock<Run> = OnceLock::new();

/// This process as a run.
fn own_run() -> Run {
    let pid = crate::proc::pid_t(std::process::id());
    Run {
        pid,
        start: start_ticks(pid).unwrap_or(0),
    }
}

/// The run this process's jobs belong to: itself, unless [`join_parent_run`] said otherwise.
pub fn this_run() -> Run {
    *RUN.get_or_init(own_run)
}

/// For a hidden worker subcommand, called before it starts any job: its jobs belong to the run
/// of the racegate that started it (named by the job token in its environment), so they are
/// reaped with that run's and never while it lives. Without a token (a worker started by hand)
/// the worker is a run of its own.
pub fn join_parent_run() {
    if let Some(run) = inherited_run() {
        // ignored: a run already fixed (a job started before) stays what it was
        let _ = RUN.set(run);
    }
}

/// The run named by this process's own job token: the racegate run it is part of, if any.
pub fn inherited_run() -> Option<Run> {
    token_run(&std::env::var(JOB_ENV).ok()?)
}

/// The run a job token (or a job cgroup's name without `racegate-`) belongs to; `None` for
/// anything else.
pub fn token_run(token: &str) -> Option<Run> {
    let mut f = token.split('-');
    let run = Run {
        pid: f.next()?.parse().ok()?,
        start: f.next()?.parse().ok()?,
    };
    let pid: Option<i32> = f.next()?.parse().ok();
    let n: Option<u64> = f.next()?.parse().ok();
    (pid.is_some() && n.is_some() && f.next().is_none()).then_some(run)
}

/// The job token in `pid`'s environment, if it has one (`None` too when the environment cannot
/// be read: another user's process, or gone). /proc shows the environment the process started
/// with.
pub fn token_of(pid: i32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{JOB_ENV}=");
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(key.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// A fresh job token for a child about to start: `<run pid>-<run start>-<pid>-<n>`.
pub fn new_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let run = this_run();
    format!(
        "{}-{}-{}-{}",
        run.pid,
        run.start,
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The pid namespace of `pid` (`pid:[4026531836]`): pids name the same processes only within
/// one.
pub fn pid_namespace(pid: &str) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|l| l.to_string_lossy().into_owned())
}

/// This boot's id: starts (clock ticks since boot) compare only within one boot.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_run() {
        let t = new_token();
        assert_eq!(token_run(&t), Some(this_run()), "{t}");
        assert!(t.starts_with(&this_run().token_prefix()));
        assert_eq!(
            token_run("12-345-67-8"),
            Some(Run {
                pid: 12,
                start: 345
            })
        );
        for not in ["12-3", "12-345-67", "12-345-67-8-9", "a-1-2-3", "probe", ""] {
            assert_eq!(token_run(not), None, "{not}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not_it() {
        let me = this_run();
        assert!(me.alive());
        let other = Run {
            start: me.start + 1,
            ..me
        };
        assert!(!other.alive(), "same pid, another start: another process");
    }
}
