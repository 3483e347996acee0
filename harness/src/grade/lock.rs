//! The GPU lock: only one submission is on the GPU at a time, across threads and processes (a
//! batch, or several graders on one machine). A kernel that floods printf or spins slows every
//! other context on the device (the H200 showed a correct submission taking 60 s instead of 5 s
//! next to a printf flood, and timing out in a batch), and one student's deadlines must not pay
//! for another's kernel.
//!
//! An advisory lock on a file in racegate's cache folder: the kernel releases it when the holder
//! drops it or its process dies, so a crashed grader cannot wedge the next one.

use std::path::Path;

use crate::compile;
use crate::errors::{Error, Result};

/// Held while a submission runs on the GPU; released on drop.
pub(super) struct GpuLock(#[allow(dead_code)] std::fs::File);

impl GpuLock {
    /// Waits for the machine-wide lock.
    pub(super) fn acquire() -> Result<GpuLock> {
        let dir = compile::cache_dir()?;
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        GpuLock::acquire_at(&dir.join("grade-gpu.lock"))
    }

    fn acquire_at(path: &Path) -> Result<GpuLock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io("opening", path, e))?;
        file.lock().map_err(|e| Error::io("locking", path, e))?;
        Ok(GpuLock(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_submission_at_a_time_holds_the_gpu() {
        // A lock of its own: real grades on this machine take the shared one.
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let held = GpuLock::acquire_at(&path).unwrap();
        let other = std::fs::File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "a second grader got the GPU");
        drop(held);
        other.try_lock().expect("released when the grade ends");
    }
}
