//! What a racegate run killed outright (SIGKILL: the OOM killer, a CI runner's hard timeout)
//! left running, found and ended by the next run. A killed run cannot end its jobs: its main
//! children die with it (parent-death signal), but whatever they started lives on, and so do its
//! job cgroups.
//!
//! Each top-level run that starts jobs keeps a record, `<pid>-<start>.json` in the records
//! folder it is given (`runs/` in racegate's private cache folder): its pid and start, the boot
//! and pid namespace, and for each live job its process group, its main child's start, its
//! token and its cgroup. The record is rewritten as jobs start and end ([`record`]) and removed
//! when the run ends ([`finish`]). The next run ([`reap`], early in every command but the hidden
//! workers) takes every record whose holder is dead and every job cgroup in its own cgroup whose
//! run is dead (job cgroups and tokens name their run, `identity.rs`), and ends:
//! - every process whose job token is one of that run's (`RACEGATE_JOB=<pid>-<start>-...`);
//! - the members of a job's process group while its leader is still the job's main child (the
//!   same pid and start);
//! - every member of one of that run's job cgroups, which is then removed;
//! - everything below those.
//!
//! A process is signalled only through a pidfd opened before its start was checked again, so a
//! pid reused meanwhile is never hit; what cannot be confirmed (a member of a job's process
//! group whose leader is gone, without the token) is named and left alone. Never touched: a
//! live run's processes, the run this process is part of (the token in its own environment),
//! its own ancestors, and records of another pid namespace; a record of an earlier boot is
//! deleted (nothing of it runs).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cgroup::{self, JobCgroup};
use super::identity::{self, Proc, Run};
use super::processes;

/// A live job as its run's record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Its process group (its main child's pid).
    pub pgid: i32,
    /// Its main child's start, in clock ticks since boot.
    pub start: u64,
    /// Its job token.
    pub token: String,
    /// Its cgroup, where it has one.
    pub cgroup: Option<PathBuf>,
}

/// A run's record file.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    holder: Run,
    boot: Option<String>,
    pid_ns: Option<String>,
    jobs: Vec<JobRecord>,
}

/// What was found of one dead run.
#[derive(Clone, Debug, Default)]
pub struct DeadRun {
    /// The racegate process that was killed.
    pub holder: i32,
    /// `name (pid N)` of each process ended.
    pub killed: Vec<String>,
    /// The job cgroups removed.
    pub cgroups: Vec<PathBuf>,
    /// What was found and left alone, each with why.
    pub left: Vec<String>,
}

/// What [`reap`] found and did.
#[derive(Clone, Debug)]
pub struct Reaped {
    /// One entry per dead run found (by its record or a job cgroup of its own).
    pub runs: Vec<DeadRun>,
    /// Where runs keep their records, or why they keep none.
    pub records: Result<PathBuf, String>,
}

impl Reaped {
    /// One line for people, `None` when no dead run left anything.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<String> = self
            .runs
            .iter()
            .filter(|r| !r.killed.is_empty() || !r.cgroups.is_empty() || !r.left.is_empty())
            .map(|r| {
                let mut s = format!(
                    "racegate pid {} (killed before it ended its jobs):",
                    r.holder
                );
                if !r.killed.is_empty() {
                    s.push_str(&format!(" ended {}", r.killed.join(", ")));
                }
                if !r.cgroups.is_empty() {
                    let c: Vec<String> =
                        r.cgroups.iter().map(|c| c.display().to_string()).collect();
                    s.push_str(&format!("; removed cgroup {}", c.join(", ")));
                }
                if !r.left.is_empty() {
                    s.push_str(&format!("; left alone: {}", r.left.join(", ")));
                }
                s
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(". "))
    }

    /// Whether something found was left running.
    pub fn left_any(&self) -> bool {
        self.runs.iter().any(|r| !r.left.is_empty())
    }
}

/// This run's record file, once [`record_in`] named the folder.
static RECORD: Mutex<Option<Recording>> = Mutex::new(None);

struct Recording {
    file: PathBuf,
    boot: Option<String>,
    pid_ns: Option<String>,
    written: bool,
}

/// From now on this run keeps its record in `dir` (created private when the first job starts).
pub fn record_in(dir: &Path) {
    let run = identity::this_run();
    let file = dir.join(format!("{}-{}.json", run.pid, run.start));
    *RECORD.lock().unwrap_or_else(|e| e.into_inner()) = Some(Recording {
        file,
        boot: identity::boot_id(),
        pid_ns: identity::pid_namespace("self"),
        written: false,
    });
}

/// Before a job starts: the record exists, so whatever the job starts is found by its token
/// even if racegate is killed before the job is recorded.
pub fn before_job() {
    let guard = RECORD.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_some_and(|r| !r.written) {
        drop(guard);
        record(&[]);
    }
}

/// Writes this run's record with its live `jobs` (nothing unless [`record_in`] was called). The
/// caller keeps the jobs from changing meanwhile.
pub fn record(jobs: &[JobRecord]) {
    let mut guard = RECORD.lock().unwrap_or_else(|e| e.into_inner());
    let Some(rec) = guard.as_mut() else {
        return;
    };
    let body = Record {
        holder: identity::this_run(),
        boot: rec.boot.clone(),
        pid_ns: rec.pid_ns.clone(),
        jobs: jobs.to_vec(),
    };
    if write(&rec.file, &body).is_ok() {
        rec.written = true;
    }
}

/// The record, replaced whole (a temporary file renamed over it).
fn write(file: &Path, body: &Record) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(dir) = file.parent() {
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    let text = serde_json::to_vec(body).map_err(std::io::Error::other)?;
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// This run ends with no job left: its record goes, and none is written again.
pub fn finish() {
    if let Some(rec) = RECORD.lock().unwrap_or_else(|e| e.into_inner()).take() {
        // ignored: a record left behind is found dead by the next run, which finds nothing to end
        let _ = std::fs::remove_file(&rec.file);
    }
}

/// Finds what dead runs left (their records in `records`, their cgroups in racegate's own
/// cgroup) and ends it, once per process; later calls return the first answer.
pub fn reap(records: Result<PathBuf, String>) -> &'static Reaped {
    static DONE: OnceLock<Reaped> = OnceLock::new();
    DONE.get_or_init(|| {
        let runs = find(records.as_deref().ok())
            .into_iter()
            .map(|(holder, dead)| end(holder, dead))
            .collect();
        Reaped { runs, records }
    })
}

/// A dead run as found: its record, if it had one, and its job cgroups.
#[derive(Default)]
struct Dead {
    file: Option<PathBuf>,
    jobs: Vec<JobRecord>,
    cgroups: BTreeSet<PathBuf>,
}

/// The dead runs with a record in `records` or a job cgroup in racegate's own cgroup.
fn find(records: Option<&Path>) -> BTreeMap<Run, Dead> {
    let me = identity::this_run();
    let inside = identity::inherited_run();
    let spared = |run: &Run| *run == me || Some(*run) == inside || run.alive();
    let (boot, ns) = (identity::boot_id(), identity::pid_namespace("self"));
    let mut dead: BTreeMap<Run, Dead> = BTreeMap::new();
    let files = records
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"));
    for file in files {
        let Some(rec) = std::fs::read(&file)
            .ok()
            .and_then(|t| serde_json::from_slice::<Record>(&t).ok())
        else {
            continue;
        };
        if boot.is_some() && rec.boot != boot {
            // ignored: nothing of an earlier boot runs; a record that stays is only looked at again
            let _ = std::fs::remove_file(&file);
            continue;
        }
        if rec.pid_ns != ns || spared(&rec.holder) {
            continue;
        }
        let d = dead.entry(rec.holder).or_default();
        // Only a job cgroup of this very run, whatever path the record names.
        d.cgroups.extend(rec.jobs.iter().filter_map(|j| {
            let cg = j.cgroup.as_ref()?;
            let name = cg.file_name()?.to_str()?;
            (cgroup::run_of(name) == Some(rec.holder)
                && identity::token_run(&j.token) == Some(rec.holder))
            .then(|| cg.clone())
        }));
        d.file = Some(file);
        d.jobs = rec.jobs;
    }
    if let Ok(base) = cgroup::own() {
        for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            match cgroup::run_of(&name) {
                Some(run) if !spared(&run) => {
                    dead.entry(run).or_default().cgroups.insert(e.path());
                }
                _ => {}
            }
        }
    }
    dead
}

/// What of a dead run is surely its own, and what is not.
#[derive(Default)]
struct Found {
    /// Its processes and everything below them.
    procs: Vec<Proc>,
    /// Its job cgroups, to be killed whole and removed.
    cgroups: Vec<JobCgroup>,
    /// What could not be confirmed, with why.
    left: Vec<String>,
}

/// What `dead`, the run `holder`, surely left, by token, by a job's process group whose
/// leader is still the job's main child, and by job cgroup, and what below those; never a
/// process of `mine`.
fn confirm(holder: Run, dead: &Dead, table: &[Proc], mine: &BTreeSet<i32>) -> Found {
    let mut found = Found::default();
    let ns = identity::pid_namespace("self");
    let ours = |p: &Proc| {
        !p.zombie && !mine.contains(&p.pid) && identity::pid_namespace(&p.pid.to_string()) == ns
    };
    let prefix = holder.token_prefix();
    let mut seeds: BTreeSet<i32> = table
        .iter()
        .filter(|p| ours(p))
        .filter(|p| identity::token_of(p.pid).is_some_and(|t| t.starts_with(&prefix)))
        .map(|p| p.pid)
        .collect();
    let mut unsure: Vec<&Proc> = Vec::new();
    for job in &dead.jobs {
        let leader = table
            .iter()
            .any(|p| p.pid == job.pgid && p.start == job.start && !p.zombie);
        for p in table.iter().filter(|p| p.pgrp == job.pgid && ours(p)) {
            if leader {
                seeds.insert(p.pid);
            } else if p.start >= job.start {
                unsure.push(p);
            }
        }
    }
    for dir in dead.cgroups.iter().filter(|d| d.is_dir()) {
        let Ok(cg) = JobCgroup::at(dir.clone()) else {
            continue;
        };
        let members = cg.pids();
        let foreign = members.iter().any(|&m| {
            m == 0
                || mine.contains(&m)
                || identity::pid_namespace(&m.to_string()).is_some_and(|n| Some(n) != ns)
        });
        if foreign {
            found.left.push(format!(
                "cgroup {} (it holds processes of another pid namespace or of this racegate)",
                dir.display()
            ));
            continue;
        }
        // Empty and known by its name alone: a racegate of another pid namespace may have just
        // made it; only an old one is surely left over.
        if members.is_empty() && dead.file.is_none() && !cgroup::old(dir) {
            continue;
        }
        seeds.extend(members);
        found.cgroups.push(cg);
    }
    let seeds: Vec<i32> = seeds.into_iter().collect();
    found.procs = processes::closure(table.to_vec(), &seeds, &[], &[])
        .into_iter()
        .filter(|p| !p.zombie && !mine.contains(&p.pid))
        .collect();
    found.left.extend(
        unsure
            .iter()
            .filter(|u| !found.procs.iter().any(|p| p.pid == u.pid))
            .map(|p| {
                format!(
                    "{} (in a job's process group, but the group's leader is gone and it has \
                     no job token: not surely racegate's)",
                    name(p)
                )
            }),
    );
    found
}

/// `name (pid N)`.
fn name(p: &Proc) -> String {
    format!("{} (pid {})", p.name, p.pid)
}

/// Ends what `dead`, the run `holder`, left; deletes its record once nothing is left.
fn end(holder: Run, dead: Dead) -> DeadRun {
    let table = identity::table();
    let found = confirm(holder, &dead, &table, &own_line(&table));
    let mut out = DeadRun {
        holder: holder.pid,
        left: found.left,
        ..DeadRun::default()
    };
    for cg in &found.cgroups {
        cg.kill(Duration::ZERO);
    }
    for p in &found.procs {
        kill_exact(p.pid, p.start);
    }
    let alive = || -> Vec<&Proc> {
        found
            .procs
            .iter()
            .filter(|p| identity::running(p.pid, p.start))
            .collect()
    };
    let until = Instant::now() + Duration::from_secs(2);
    while !alive().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let survivors: Vec<i32> = alive().iter().map(|p| p.pid).collect();
    for p in &found.procs {
        match survivors.contains(&p.pid) {
            true => out.left.push(format!("{} (survived SIGKILL)", name(p))),
            false => out.killed.push(name(p)),
        }
    }
    for cg in &found.cgroups {
        match cg.remove(Duration::from_millis(500)) {
            true => out.cgroups.push(cg.dir().to_path_buf()),
            false => out.left.push(format!(
                "cgroup {} (it could not be removed)",
                cg.dir().display()
            )),
        }
    }
    if out.left.is_empty() {
        if let Some(file) = &dead.file {
            // ignored: a record that stays is looked at again by the next run, finding nothing
            let _ = std::fs::remove_file(file);
        }
    }
    out
}

/// This process and its ancestors: never ended, whatever they carry.
fn own_line(table: &[Proc]) -> BTreeSet<i32> {
    let mut line = BTreeSet::new();
    let mut at = crate::proc::pid_t(std::process::id());
    while at > 0 && line.insert(at) {
        at = table.iter().find(|p| p.pid == at).map_or(0, |p| p.ppid);
    }
    line
}

/// SIGKILL to the process `pid` that started at `start`, and to no other: the start is checked
/// after a pidfd was opened, and the signal goes through that pidfd. Without pidfds (Linux before
/// 5.3) the start is checked right before a plain kill.
fn kill_exact(pid: i32, start: u64) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let Ok(fd) = i32::try_from(fd) else {
        return;
    };
    if fd < 0 {
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS)
            && identity::running(pid, start)
        {
            // SAFETY: signals the process whose pid and start were just checked.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        return;
    }
    if identity::running(pid, start) {
        // SAFETY: signals the process the pidfd holds, whose start was checked after it was
        // opened; the pidfd cannot come to name another process.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
    }
    // SAFETY: closes the descriptor pidfd_open returned, once.
    unsafe { libc::close(fd) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runs/1-2.json");
        let rec = Record {
            holder: Run { pid: 1, start: 2 },
            boot: Some("b".into()),
            pid_ns: None,
            jobs: vec![JobRecord {
                pgid: 3,
                start: 4,
                token: "1-2-1-5".into(),
                cgroup: Some("/sys/fs/cgroup/a b/racegate-1-2-1-5".into()),
            }],
        };
        write(&file, &rec).unwrap();
        let back: Record = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!((back.holder, back.jobs), (rec.holder, rec.jobs));
    }

    #[test]
    fn this_process_and_its_parent_are_its_own_line() {
        let table = identity::table();
        let line = own_line(&table);
        let me = crate::proc::pid_t(std::process::id());
        assert!(line.contains(&me));
        // SAFETY: getppid has no preconditions.
        assert!(line.contains(&unsafe { libc::getppid() }));
    }

    #[test]
    fn nothing_is_found_in_an_empty_records_folder() {
        let dir = tempfile::tempdir().unwrap();
        let found = find(Some(dir.path()));
        // Job cgroups of other dead runs may sit in this process's cgroup; no record does.
        assert!(found.values().all(|d| d.file.is_none()));
    }

    #[test]
    fn a_reused_pid_is_not_killed() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = crate::proc::pid_t(child.id());
        let start = identity::start_ticks(pid).unwrap();
        kill_exact(pid, start + 1);
        std::thread::sleep(Duration::from_millis(100));
        assert!(child.try_wait().unwrap().is_none(), "another start: spared");
        kill_exact(pid, start);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
