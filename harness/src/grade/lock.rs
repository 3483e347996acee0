//! The GPU lock: only one submission is on the GPU at a time, across threads and processes (a
//! batch, or several graders on one machine). A kernel that floods printf or spins slows every
//! other context on the device (the H200 showed a correct submission taking 60 s instead of 5 s
//! next to a printf flood, and timing out in a batch), and one student's deadlines must not pay
//! for another's kernel.
//!
//! An advisory lock on a file in racegate's private cache folder ([`crate::build::cache`]): the kernel
//! releases it when the holder drops it or its process dies, so a crashed grader cannot wedge
//! the next one. The holder writes its pid into the file; a grader that has to wait says which
//! process it waits for, and gives up at a deadline (the submission is then not graded).

use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::build::compile;
use crate::errors::{Error, Result};

/// Held while a submission runs on the GPU; released on drop.
pub(super) struct GpuLock(#[allow(dead_code)] std::fs::File);

impl GpuLock {
    /// Waits up to `deadline` for the machine-wide lock, telling `note` whom it waits for.
    pub(super) fn acquire(deadline: Duration, note: fn(&str)) -> Result<GpuLock> {
        let dir = compile::cache_dir()?;
        GpuLock::acquire_at(&dir.join("grade-gpu.lock"), deadline, note)
    }

    fn acquire_at(path: &Path, deadline: Duration, note: fn(&str)) -> Result<GpuLock> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io("opening", path, e))?;
        let start = Instant::now();
        let mut told = false;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("locking", path, e)),
            }
            let holder = holder(&mut file);
            if start.elapsed() >= deadline {
                return Err(Error::Child(format!(
                    "the GPU stayed taken by another grader ({holder}, lock file {}) for {:.0} s; \
                     giving up",
                    path.display(),
                    deadline.as_secs_f64()
                )));
            }
            if !told {
                note(&format!(
                    "waiting for the GPU: {holder} holds {} (giving up after {:.0} s)",
                    path.display(),
                    deadline.as_secs_f64()
                ));
                told = true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Ours now: say who holds it.
        let me = std::process::id().to_string();
        file.set_len(0)
            .and_then(|_| file.rewind())
            .and_then(|_| file.write_all(me.as_bytes()))
            .and_then(|_| file.flush())
            .map_err(|e| Error::io("writing", path, e))?;
        Ok(GpuLock(file))
    }
}

/// Who holds the lock, as its file says: `process 1234`.
fn holder(file: &mut std::fs::File) -> String {
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
    fn one_submission_at_a_time_holds_the_gpu() {
        // A lock of its own: real grades on this machine take the shared one.
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let held = GpuLock::acquire_at(&path, Duration::from_secs(1), keep).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            std::process::id().to_string()
        );
        let other = std::fs::File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "a second grader got the GPU");
        drop(other);
        // A second grader waits, says for whom, and gives up at its deadline.
        let start = Instant::now();
        let e = GpuLock::acquire_at(&path, Duration::from_millis(300), keep)
            .err()
            .unwrap()
            .to_string();
        assert!(start.elapsed() >= Duration::from_millis(300));
        let pid = format!("process {}", std::process::id());
        assert!(e.contains(&pid) && e.contains("giving up"), "{e}");
        assert!(NOTES.lock().unwrap().iter().any(|n| n.contains(&pid)));
        drop(held);
        GpuLock::acquire_at(&path, Duration::from_secs(1), keep)
            .expect("released when the grade ends");
    }
}
