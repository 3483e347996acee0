//! The GPU lease: which racegate processes are on the GPU at once, across threads and
//! processes (grading batches, gates, several of them on one machine). Two ways in:
//! [`Access::Shared`], several runs side by side, and [`Access::Exclusive`], one run with the GPU
//! to itself: a missed deadline, which a neighbour could cause, is taken again there before it
//! counts (grading also retakes a run out of device memory there), and a timing is taken there.
//!
//! An advisory lock (`flock`) on a file in racegate's private cache folder
//! ([`crate::build::cache`]): the kernel releases it when the holder drops it or its process
//! dies, so a crashed holder cannot wedge the next one. A holder writes its pid into the file;
//! one that has to wait says which process it waits for, and gives up at a deadline. A second
//! lock file is a turnstile: a process that asked to be alone holds it while it waits, and new
//! shared holders, of any process, wait behind it, so a stream of shared runs cannot keep it
//! waiting for ever.

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::build::compile;
use crate::errors::{Error, Result};

/// The lease's file in racegate's cache folder for the device this thread runs on: one per
/// device, each with its own slot files ([`crate::run::lease_devices`]; device 0 unless
/// `--devices` or `RACEGATE_DEVICES` chose others).
fn lock_file() -> String {
    crate::run::lease_devices::lock_file(crate::run::lease_devices::current())
}

/// The lease's file of `device` in racegate's cache folder: for a holder that keeps one
/// device whichever thread asks ([`GpuLock::acquire_at`] it).
pub fn lock_path(device: u32) -> Result<std::path::PathBuf> {
    Ok(compile::cache_dir()?.join(crate::run::lease_devices::lock_file(device)))
}

/// How a submission holds the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Beside other submissions.
    Shared,
    /// Alone.
    Exclusive,
}

/// How many runs hold the GPU shared at once, machine-wide, unless `RACEGATE_GPU_SLOTS` says
/// otherwise. Each process reads the variable for itself: processes that share one GPU should
/// be given the same value (a process told 2 still takes only slot files 0 and 1, so a smaller
/// number bounds that process's runs, not the others'). Without a bound, four gates of seven tool runs each put 28 contexts on one GPU
/// (H100, run 33): each run slowed past deadlines derived from the program run alone. A run
/// waiting for a slot has not started: the wait is not its deadline's.
pub const DEFAULT_SLOTS: usize = 8;

/// Held while a submission runs on the GPU; released on drop: the lock, and a shared holder's
/// slot.
pub struct GpuLock {
    _file: std::fs::File,
    /// A shared holder's slot: its number and its file.
    slot: Option<(usize, std::fs::File)>,
    /// The lock file, whose slot files [`GpuLock::neighbours`] looks at.
    path: std::path::PathBuf,
}

/// The number of shared slots: `RACEGATE_GPU_SLOTS`, else [`DEFAULT_SLOTS`].
pub fn slots() -> Result<usize> {
    match std::env::var("RACEGATE_GPU_SLOTS") {
        Err(_) => Ok(DEFAULT_SLOTS),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Error::Usage(format!(
                "RACEGATE_GPU_SLOTS={v}: expected how many runs may share the GPU at once, a \
                 whole number of at least 1"
            ))),
        },
    }
}

impl GpuLock {
    /// Waits up to `deadline` for the machine-wide lock of this thread's device, telling `note`
    /// whom it waits for.
    pub fn acquire(access: Access, deadline: Duration, note: fn(&str)) -> Result<GpuLock> {
        let dir = compile::cache_dir()?;
        GpuLock::acquire_at(&dir.join(lock_file()), access, deadline, note)
    }

    /// The machine-wide lock as `access` says if nothing is in its way now; `None`, without
    /// waiting, otherwise.
    pub fn try_acquire(access: Access) -> Result<Option<GpuLock>> {
        let dir = compile::cache_dir()?;
        GpuLock::take(
            &dir.join(lock_file()),
            access,
            Duration::ZERO,
            |_| {},
            slots()?,
        )
    }

    /// The lock at `path`, waiting up to `deadline` for it.
    pub fn acquire_at(
        path: &Path,
        access: Access,
        deadline: Duration,
        note: fn(&str),
    ) -> Result<GpuLock> {
        match GpuLock::take(path, access, deadline, note, slots()?)? {
            Some(held) => Ok(held),
            None => {
                let holder = holder(&open(path)?);
                Err(Error::Child(format!(
                    "the GPU stayed taken by another racegate process ({holder}, lock file {}) \
                     for {:.0} s; giving up",
                    path.display(),
                    deadline.as_secs_f64()
                )))
            }
        }
    }

    /// The lock at `path`, waiting up to `deadline` for it, a shared holder in one of `slots`;
    /// `None` once the deadline passed.
    fn take(
        path: &Path,
        access: Access,
        deadline: Duration,
        note: fn(&str),
        slots: usize,
    ) -> Result<Option<GpuLock>> {
        let mut file = open(path)?;
        // The turnstile, a second lock file: a shared taker passes it (shared, for a moment),
        // a taker that wants the GPU alone holds it alone until it has the lock, so while it
        // waits no new shared holder gets in, from this process or another.
        let turn_path = path.with_extension("turn");
        let turn = open(&turn_path)?;
        // A shared taker first takes one of the slots (files `gpu-0.slot-N`, each held alone),
        // holding nothing else while it waits for one.
        let slot_paths: Vec<std::path::PathBuf> = match access {
            Access::Shared => (0..slots)
                .map(|i| path.with_extension(format!("slot-{i}")))
                .collect(),
            Access::Exclusive => Vec::new(),
        };
        let slot_files = slot_paths
            .iter()
            .map(|p| open(p))
            .collect::<Result<Vec<_>>>()?;
        let mut slot = None;
        let start = Instant::now();
        // A note only for a wait worth one: graders of one batch take turns all the time.
        let note_after = NOTE_AFTER.min(deadline / 2);
        let mut told = false;
        let steps: [Vec<(&std::fs::File, &Path, Access)>; 3] = [
            slot_files
                .iter()
                .zip(&slot_paths)
                .map(|(f, p)| (f, p.as_path(), Access::Exclusive))
                .collect(),
            vec![(&turn, turn_path.as_path(), access)],
            vec![(&file, path, access)],
        ];
        for (k, step) in steps.iter().enumerate() {
            if step.is_empty() {
                continue;
            }
            'wait: loop {
                for (i, &(f, p, how)) in step.iter().enumerate() {
                    let tried = match how {
                        Access::Shared => f.try_lock_shared(),
                        Access::Exclusive => f.try_lock(),
                    };
                    match tried {
                        Ok(()) => {
                            if k == 0 {
                                slot = Some(i);
                            }
                            break 'wait;
                        }
                        Err(std::fs::TryLockError::WouldBlock) => {}
                        Err(std::fs::TryLockError::Error(e)) => {
                            return Err(Error::io("locking", p, e))
                        }
                    }
                }
                if start.elapsed() >= deadline {
                    return Ok(None);
                }
                if !told && start.elapsed() >= note_after {
                    let who = match k {
                        0 => format!(
                            "all {slots} runs that may share it are on it (RACEGATE_GPU_SLOTS)"
                        ),
                        _ => format!("{} holds {}", holder(&file), path.display()),
                    };
                    note(&format!(
                        "waiting for the GPU: {who} (giving up after {:.0} s)",
                        deadline.as_secs_f64()
                    ));
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        drop(turn);
        let slot = slot.map(|i| {
            let mut files = slot_files;
            (i, files.swap_remove(i))
        });
        // Ours now: say who holds it (a shared holder may overwrite another's pid: the file
        // names one of them, which is all a waiting grader's message needs).
        let me = std::process::id().to_string();
        file.set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| file.write_all(me.as_bytes()))
            .and_then(|_| file.flush())
            .map_err(|e| Error::io("writing", path, e))?;
        Ok(Some(GpuLock {
            _file: file,
            slot,
            path: path.to_path_buf(),
        }))
    }

    /// Runs `f` and says whether another run held one of the GPU's shared slots at some moment
    /// meanwhile ([`GpuLock::neighbours`], looked at `every` and once more at the end). A look
    /// that fails cannot show the run was alone: crowded.
    pub fn watch<T>(&self, every: Duration, f: impl FnOnce() -> T) -> (T, bool) {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            let watcher = s.spawn(move || loop {
                if self.neighbours().unwrap_or(true) {
                    return true;
                }
                if stopped.recv_timeout(every) != Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                    return self.neighbours().unwrap_or(true);
                }
            });
            let out = f();
            drop(stop);
            // A watcher that panicked saw nothing it can vouch for: crowded.
            (out, watcher.join().unwrap_or(true))
        })
    }

    /// Whether another run holds one of the GPU's shared slots now, this holder's own aside:
    /// each other slot file is tried with a shared lock, let go at once. A holder alone has
    /// none by construction.
    pub fn neighbours(&self) -> Result<bool> {
        let Some((mine, _)) = &self.slot else {
            return Ok(false);
        };
        let own = self.path.with_extension(format!("slot-{mine}"));
        // Every slot file there is, not only this process's count of them: another process may
        // have been told of more slots (`RACEGATE_GPU_SLOTS`).
        let prefix = format!(
            "{}.slot-",
            self.path.file_stem().unwrap_or_default().to_string_lossy()
        );
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
        for entry in entries {
            let p = entry.map_err(|e| Error::io("listing", dir, e))?.path();
            let named = p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix));
            if !named || p == own {
                continue;
            }
            match open(&p)?.try_lock_shared() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Ok(true),
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("locking", &p, e)),
            }
        }
        Ok(false)
    }
}

/// How long a run waits for the GPU lease, shared or alone, before racegate gives up (another
/// racegate holding it alone for longer is stuck, or runs a program of hours).
pub const LEASE_WAIT: Duration = Duration::from_secs(3 * 3600);

/// Whether this machine has a CUDA device, asked once per process.
pub fn gpu_present() -> bool {
    static DEVICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEVICE.get_or_init(|| crate::run::device::probe().is_ok())
}

/// Says on stderr whom a wait for the lease waits for.
pub fn say_wait(m: &str) {
    eprintln!("racegate: {m}");
}

/// A share of the GPU for one job of a command whose jobs do not take the lease run by run
/// (`check`'s cells, a manifest's kernel jobs, `mutate`'s mutants): held while the job runs and
/// given back after it, so that a process waiting for the GPU alone (to confirm a hang, take a
/// timing) waits for the jobs in flight only, and new jobs wait for it; each job counts as one
/// of the [`slots`]. `None` on a machine without a device (asked once per process), where there
/// is nothing to share. Says on stderr whom it waits for after [`NOTE_AFTER`]. A job holding it
/// must not ask for the GPU alone: its own share would be in the way.
///
/// The pool thread running the job keeps one device ([`crate::run::lease_devices::bind_thread`]):
/// the share is of that device's lease, and the children the job starts run on it.
pub fn job_share() -> Result<Option<GpuLock>> {
    if !gpu_present() {
        return Ok(None);
    }
    crate::run::lease_devices::bind_thread()?;
    GpuLock::acquire(Access::Shared, LEASE_WAIT, say_wait).map(Some)
}

/// The lock file at `p`, opened to lock (made if missing).
fn open(p: &Path) -> Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(p)
        .map_err(|e| Error::io("opening", p, e))
}

/// How long a grader waits before it says whom it waits for.
const NOTE_AFTER: Duration = Duration::from_secs(10);

/// Who holds the lock, as its file says: `process 1234`.
fn holder(file: &std::fs::File) -> String {
    let mut file = file;
    let mut text = String::new();
    // ignored: only for the message; an unreadable pid reads as "did not write its pid"
    let _ = file.rewind().and_then(|_| file.read_to_string(&mut text));
    match text.trim().parse::<u32>() {
        Ok(pid) => format!("process {pid}"),
        Err(_) => "a process that did not write its pid".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn keep(n: &str) {
        NOTES.lock().unwrap().push(n.to_string());
    }

    #[test]
    fn no_more_runs_share_the_gpu_than_there_are_slots() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("gpu-0.lock");
        let take =
            |d: Duration| GpuLock::take(&path, Access::Shared, d, keep, 2).expect("no error");
        let first = take(Duration::ZERO).expect("a free slot");
        let second = take(Duration::ZERO).expect("the other slot");
        assert!(take(Duration::ZERO).is_none(), "two slots, both held");
        drop(first);
        let third = take(Duration::from_secs(5)).expect("the slot given back");
        // Alone means no shared holder at all, whatever the slots.
        let alone = GpuLock::take(&path, Access::Exclusive, Duration::ZERO, keep, 2).expect("ok");
        assert!(alone.is_none());
        drop((second, third));
        let alone = GpuLock::take(&path, Access::Exclusive, Duration::ZERO, keep, 2).expect("ok");
        assert!(alone.is_some());
    }

    #[test]
    fn a_shared_holder_sees_whether_another_run_holds_a_slot() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("gpu-0.lock");
        let take =
            |d: Duration| GpuLock::take(&path, Access::Shared, d, keep, 3).expect("no error");
        let first = take(Duration::ZERO).expect("a free slot");
        assert!(
            !first.neighbours().expect("probed"),
            "its own slot is no neighbour"
        );
        let second = take(Duration::ZERO).expect("another slot");
        assert!(first.neighbours().expect("probed"));
        assert!(second.neighbours().expect("probed"));
        drop(second);
        assert!(
            !first.neighbours().expect("probed"),
            "the other run has gone"
        );
        // The probe leaves every slot free for a taker.
        let (a, b) = (take(Duration::ZERO), take(Duration::ZERO));
        assert!(a.is_some() && b.is_some());
        drop(first);
        let alone = GpuLock::take(&path, Access::Exclusive, Duration::ZERO, keep, 3);
        assert!(
            alone.expect("no error").is_none(),
            "two shared holders are in the way"
        );
    }

    #[test]
    fn a_watched_run_sees_a_neighbour_that_came_and_went_while_it_ran() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("gpu-0.lock");
        let take = || {
            GpuLock::take(&path, Access::Shared, Duration::ZERO, keep, 3)
                .expect("no error")
                .expect("a free slot")
        };
        let mine = take();
        let every = Duration::from_millis(20);
        let ((), crowded) = mine.watch(every, || std::thread::sleep(Duration::from_millis(100)));
        assert!(!crowded, "nobody else held a slot");
        let ((), crowded) = mine.watch(every, || {
            std::thread::sleep(Duration::from_millis(60));
            let other = take();
            std::thread::sleep(Duration::from_millis(250));
            drop(other);
            std::thread::sleep(Duration::from_millis(60));
        });
        assert!(crowded, "a neighbour held a slot in the middle of the run");
    }

    #[test]
    fn a_try_for_the_gpu_alone_does_not_wait_for_a_holder() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("gpu-0.lock");
        let shared =
            GpuLock::acquire_at(&path, Access::Shared, Duration::from_secs(5), keep).expect("free");
        let asked = Instant::now();
        let tried =
            GpuLock::take(&path, Access::Exclusive, Duration::ZERO, keep, 2).expect("no error");
        assert!(tried.is_none(), "a shared holder is in the way");
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "{:?}",
            asked.elapsed()
        );
        drop(shared);
        let alone =
            GpuLock::take(&path, Access::Exclusive, Duration::ZERO, keep, 2).expect("no error");
        assert!(
            alone.is_some(),
            "nothing in the way once the holder is gone"
        );
    }

    #[test]
    fn one_submission_at_a_time_holds_the_gpu() {
        // A lock of its own: real grades on this machine take the shared one.
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let held =
            GpuLock::acquire_at(&path, Access::Exclusive, Duration::from_secs(1), keep).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            std::process::id().to_string()
        );
        let other = std::fs::File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "a second grader got the GPU");
        drop(other);
        // As if another process held it (the holder writes its pid).
        std::fs::write(&path, "1").unwrap();
        // A second grader waits, says for whom, and gives up at its deadline.
        let start = Instant::now();
        let e = GpuLock::acquire_at(&path, Access::Shared, Duration::from_millis(300), keep)
            .err()
            .unwrap()
            .to_string();
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert!(e.contains("process 1") && e.contains("giving up"), "{e}");
        assert!(NOTES
            .lock()
            .unwrap()
            .iter()
            .any(|n| n.contains("process 1 holds")));
        drop(held);
        GpuLock::acquire_at(&path, Access::Exclusive, Duration::from_secs(1), keep)
            .expect("released when the grade ends");
    }

    #[test]
    fn shared_holders_run_side_by_side_and_one_alone_waits_for_them_all() {
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let short = Duration::from_millis(200);
        let a = GpuLock::acquire_at(&path, Access::Shared, short, keep).unwrap();
        let b = GpuLock::acquire_at(&path, Access::Shared, short, keep)
            .expect("a second shared holder");
        // Alone is refused while either shared holder is there.
        assert!(GpuLock::acquire_at(&path, Access::Exclusive, short, keep).is_err());
        drop(a);
        assert!(GpuLock::acquire_at(&path, Access::Exclusive, short, keep).is_err());
        drop(b);
        let alone = GpuLock::acquire_at(&path, Access::Exclusive, short, keep).unwrap();
        // And nobody shares with one that is alone.
        assert!(GpuLock::acquire_at(&path, Access::Shared, short, keep).is_err());
        drop(alone);
    }

    #[test]
    fn each_device_has_a_lease_of_its_own_and_device_0_keeps_racegates() {
        use std::time::Duration;
        // On one GPU with nothing hiding devices, racegate's lease is what it always was.
        if std::env::var_os("CUDA_VISIBLE_DEVICES").is_none() {
            assert_eq!(crate::run::lease_devices::lock_file(0), "gpu-0.lock");
        }
        let t = tempfile::tempdir().unwrap();
        let (p0, p1) = (
            t.path().join(crate::run::lease_devices::lock_file(0)),
            t.path().join(crate::run::lease_devices::lock_file(1)),
        );
        let take = |p: &std::path::Path, a| GpuLock::acquire_at(p, a, Duration::ZERO, |_| {});
        let alone = take(&p0, Access::Exclusive).unwrap();
        // Device 0 taken alone: its shares wait, device 1's do not.
        assert!(take(&p0, Access::Shared).is_err());
        let beside = take(&p1, Access::Shared).unwrap();
        assert!(take(&p1, Access::Exclusive).is_err());
        drop((alone, beside));
        assert!(take(&p1, Access::Exclusive).is_ok());
    }
}
