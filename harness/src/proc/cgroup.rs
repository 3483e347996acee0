//! A cgroup v2 of its own for each job, where racegate can create one: everything the job
//! starts stays in it whatever it does to its session, process group or environment (`env -i
//! setsid` included), and ending the job kills the whole cgroup (`cgroup.kill`, or SIGKILL to
//! every member until none is left on kernels before 5.14), then removes it.
//!
//! The job cgroups are children of racegate's own cgroup (the `0::` line of /proc/self/cgroup,
//! under the cgroup2 mount found in /proc/self/mountinfo), named `racegate-<job token>`: the
//! token names the racegate run the job belongs to (`identity.rs`), so the cgroups of a run that
//! was killed before it could remove them are known for its own. The
//! child joins its cgroup itself between fork and exec, so nothing it starts is outside it.
//! Where none can be created (no cgroup2 mount, read-only, not delegated to this user) or a
//! child cannot join one, racegate falls back to process groups, job tokens and ancestry (and,
//! as a child subreaper, parent pids): `containment()` in `jobs` says which applies.
//! `RACEGATE_NO_CGROUP=1` turns cgroups off (tests of the fallback; a cgroup tree that misbehaves).

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::identity;

/// The variable that turns cgroups off (any value but empty or `0`).
pub const NO_CGROUP_ENV: &str = "RACEGATE_NO_CGROUP";

/// Where job cgroups are created.
#[derive(Clone, Debug)]
pub struct Base {
    /// racegate's own cgroup folder (e.g. `/sys/fs/cgroup/user.slice/...`).
    pub dir: PathBuf,
    /// Whether a job cgroup has `cgroup.kill` (kernel 5.14 and later).
    pub kill_file: bool,
}

/// Why cgroups stopped being used after the probe (a child could not join its cgroup).
static DISABLED: Mutex<Option<String>> = Mutex::new(None);

/// The cgroup base, or why there is none. Probed once: a job cgroup is created and removed.
pub fn base() -> Result<Base, String> {
    static PROBE: OnceLock<Result<Base, String>> = OnceLock::new();
    if let Some(why) = DISABLED.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Err(why);
    }
    PROBE.get_or_init(probe).clone()
}

/// Stops using cgroups for the rest of the process, saying why.
pub fn disable(why: String) {
    let mut d = DISABLED.lock().unwrap_or_else(|e| e.into_inner());
    if d.is_none() {
        *d = Some(why);
    }
}

/// racegate's own cgroup folder, where its job cgroups go, without trying to create one (an
/// error when cgroups are turned off, or there is no cgroup v2 to be in).
pub fn own() -> Result<PathBuf, String> {
    if std::env::var(NO_CGROUP_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
        return Err(format!("turned off by {NO_CGROUP_ENV}"));
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let dir = own_dir(&mountinfo, &own)?;
    if !dir.join("cgroup.procs").is_file() {
        return Err(format!("racegate's cgroup {} is not there", dir.display()));
    }
    Ok(dir)
}

fn probe() -> Result<Base, String> {
    let base = Base {
        dir: own()?,
        kill_file: false,
    };
    remove_stale(&base.dir);
    let probe = JobCgroup::create_in(&base, &identity::new_token()).map_err(|e| e.to_string())?;
    let kill_file = probe.dir.join("cgroup.kill").is_file();
    probe.remove(Duration::from_millis(100));
    Ok(Base { kill_file, ..base })
}

/// racegate's own cgroup folder: the `0::PATH` line of /proc/self/cgroup under the cgroup2
/// mount (a mount of a subtree, as in a container, is followed).
fn own_dir(mountinfo: &str, own: &str) -> Result<PathBuf, String> {
    let path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("no cgroup v2 line (0::) in /proc/self/cgroup")?
        .trim();
    if path.ends_with(" (deleted)") {
        return Err(format!("racegate's cgroup {path} was removed"));
    }
    // `id parent major:minor root mountpoint options ... - fstype source superoptions`
    let (root, mount) = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            if right.split_whitespace().next()? != "cgroup2" {
                return None;
            }
            let f: Vec<&str> = left.split_whitespace().collect();
            Some((f.get(3)?.to_string(), f.get(4)?.to_string()))
        })
        .ok_or("no cgroup2 file system is mounted")?;
    let rel = Path::new(path)
        .strip_prefix(&root)
        .map_err(|_| format!("racegate's cgroup {path} is outside the cgroup2 mount ({root})"))?;
    Ok(Path::new(&unescape(&mount)).join(rel))
}

/// mountinfo escapes spaces and the like as `\040`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The racegate run a job cgroup's folder name belongs to (`racegate-<job token>`).
pub fn run_of(name: &str) -> Option<identity::Run> {
    identity::token_run(name.strip_prefix("racegate-")?)
}

/// Whether the cgroup folder `entry` is a minute old at least: a racegate in another pid
/// namespace sharing this cgroup may have just made a younger one for a child about to join.
pub fn old(entry: &Path) -> bool {
    std::fs::metadata(entry)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|a| a > Duration::from_secs(60)))
}

/// Removes the empty job cgroups of racegate runs that are gone (killed before they could
/// remove their own). A cgroup with processes in it is left alone (`leftovers.rs` ends those).
fn remove_stale(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let gone = match run_of(&name) {
            Some(run) => run != identity::this_run() && !run.alive(),
            // An older racegate's `racegate-<pid>-<n>`: its pid alone.
            None => name
                .strip_prefix("racegate-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| {
                    pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
                }),
        };
        if gone && old(&e.path()) {
            remove_tree(&e.path());
        }
    }
}

/// One job's cgroup. Dropping it does not remove it: [`JobCgroup::remove`] does.
#[derive(Debug)]
pub struct JobCgroup {
    dir: PathBuf,
    /// `cgroup.procs` of `dir`, ready for the child to write between fork and exec.
    procs: CString,
    kill_file: bool,
}

impl JobCgroup {
    /// A new empty cgroup for the job with this token.
    pub fn create(token: &str) -> Result<JobCgroup, String> {
        let base = base()?;
        JobCgroup::create_in(&base, token).map_err(|e| e.to_string())
    }

    /// A job cgroup that is already there (one a killed racegate left).
    pub fn at(dir: PathBuf) -> std::io::Result<JobCgroup> {
        let procs = CString::new(
            dir.join("cgroup.procs")
                .into_os_string()
                .into_encoded_bytes(),
        )
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        Ok(JobCgroup {
            kill_file: dir.join("cgroup.kill").is_file(),
            dir,
            procs,
        })
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A cgroup killed member by member, as on a kernel without `cgroup.kill` (tests).
    #[cfg(test)]
    #[must_use]
    pub fn without_kill_file(mut self) -> JobCgroup {
        self.kill_file = false;
        self
    }

    fn create_in(base: &Base, token: &str) -> std::io::Result<JobCgroup> {
        let dir = base.dir.join(format!("racegate-{token}"));
        std::fs::create_dir(&dir).map_err(|e| {
            std::io::Error::new(e.kind(), format!("creating {}: {e}", dir.display()))
        })?;
        JobCgroup::at(dir)
    }

    /// Moves the calling process into this cgroup. Only async-signal-safe calls: it runs in
    /// the child between fork and exec.
    pub fn join_self(&self) -> std::io::Result<()> {
        // SAFETY: open/write/close on a NUL-terminated path and a static buffer.
        unsafe {
            let fd = libc::open(self.procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0\n".as_ptr().cast(), 2);
            let err = std::io::Error::last_os_error();
            libc::close(fd);
            if n < 0 {
                return Err(err);
            }
        }
        Ok(())
    }

    /// Every process in the cgroup and the cgroups below it.
    pub fn pids(&self) -> Vec<i32> {
        let mut out = Vec::new();
        collect_pids(&self.dir, &mut out);
        out
    }

    /// Sends `sig` to every process in the cgroup.
    pub fn signal(&self, sig: i32) {
        for pid in self.pids() {
            // SAFETY: signals a process that is in this job's cgroup.
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// Kills everything in the cgroup: `cgroup.kill` where the kernel has it (no fork can
    /// escape it), else SIGKILL to every member, again and again until none is left or
    /// `within` passed. True when the cgroup is empty.
    pub fn kill(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        if self.kill_file {
            // ignored: without cgroup.kill the loop below SIGKILLs every member, and says whether any is left
            let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        }
        loop {
            let pids = self.pids();
            if pids.is_empty() {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            for pid in pids {
                // SAFETY: signals a process that is in this job's cgroup.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills what is left and removes the cgroup (and any cgroup a job made below it). True
    /// when it is gone.
    pub fn remove(&self, within: Duration) -> bool {
        let until = Instant::now() + within;
        self.kill(within);
        loop {
            if remove_tree(&self.dir) || Instant::now() >= until {
                return !self.dir.exists();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn collect_pids(dir: &Path, out: &mut Vec<i32>) {
    if let Ok(s) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        out.extend(s.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_pids(&e.path(), out);
            }
        }
    }
}

/// Removes `dir` and the cgroups below it, deepest first; true when `dir` is gone.
fn remove_tree(dir: &Path) -> bool {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path());
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_cgroup_is_found_under_the_cgroup2_mount() {
        let mi = "24 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n\
                  25 1 0:23 / /proc rw - proc proc rw\n";
        assert_eq!(own_dir(mi, "0::/\n"), Ok(PathBuf::from("/sys/fs/cgroup/")));
        assert_eq!(
            own_dir(mi, "0::/user.slice/a b.scope\n"),
            Ok(PathBuf::from("/sys/fs/cgroup/user.slice/a b.scope"))
        );
        let hybrid = "30 24 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_dir(hybrid, "4:memory:/x\n0::/\n"),
            Ok(PathBuf::from("/sys/fs/cgroup/unified/"))
        );
        // A container's mount of a subtree.
        let sub = "30 24 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            own_dir(sub, "0::/docker/abc/job\n"),
            Ok(PathBuf::from("/sys/fs/cgroup/job"))
        );
        assert!(own_dir(mi, "4:memory:/x\n").is_err(), "no v2 line");
        assert!(own_dir("25 1 0:23 / /proc rw - proc proc rw\n", "0::/\n").is_err());
        assert!(own_dir(mi, "0::/gone (deleted)\n").is_err());
        assert_eq!(unescape(r"/a\040b"), "/a b");
    }
}
