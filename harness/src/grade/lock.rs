//! A submission's turn on the GPU: which submissions are on it at once, through the machine's
//! GPU lease ([`crate::run::lease`], shared with every racegate process). A kernel that floods
//! printf or spins slows every other context on the device (the H200 showed a correct
//! submission taking 60 s instead of 5 s next to a printf flood, and timing out in a batch), and
//! one student's deadlines must not pay for another's kernel.
//!
//! [`Access::Shared`]: several submissions run side by side, and the verdicts that are the
//! kernel's own (wrong elements, a fault of its code, a sanitizer's finding; a race shows or not
//! as it would in any run) are taken there. [`Access::Exclusive`]: one submission alone; what a
//! neighbour could cause (a missed deadline, a trial out of device memory) is taken again there
//! and a timing is taken there ([`GpuTurn::alone`]), so a neighbour slows a submission down
//! without costing it those points. One exception, said in `--help`: the sanitizers of a kernel
//! that finished none of its trials run beside others under their cut deadline.
//! `--exclusive-gpu` grades every submission alone from the start.
//!
//! With several devices (`--devices`), a submission is graded on the device of the thread that
//! grades it ([`crate::run::lease_devices::bind_thread`]): its lease is that device's (one lock
//! per device), whichever thread of the submission asks, and its children run there.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::errors::Result;
pub(super) use crate::run::lease::Access;
use crate::run::lease::GpuLock;

/// One submission's hold on the GPU for its whole graded run. Alone from the start
/// ([`Access::Exclusive`]: the lock is held until the grade ends), or shared: then the shared
/// lock is taken around each run on the GPU ([`GpuTurn::run`]) and given back between runs, so a
/// grader that asks to be alone ([`GpuTurn::alone`]) waits for the runs in flight, not for whole
/// submissions.
pub(super) struct GpuTurn {
    held: Option<GpuLock>,
    access: Access,
    wait: Duration,
    note: fn(&str),
    /// The lock file: the lease of the submission's device.
    path: PathBuf,
    waited: Mutex<WaitClock>,
    /// The lock alone kept from one run alone to the next ([`GpuTurn::alone_kept`]).
    kept: Mutex<Option<GpuLock>>,
}

/// Wall-clock time with at least one of a submission's runs waiting for the lock (its runs
/// wait side by side: each one's wait is not added up).
#[derive(Default)]
struct WaitClock {
    waiting: usize,
    since: Option<Instant>,
    total: Duration,
}

impl GpuTurn {
    /// Takes the GPU of this thread's device (bound to one now if it is not yet) as `access`
    /// says, waiting up to `wait` for other graders.
    pub(super) fn take(access: Access, wait: Duration, note: fn(&str)) -> Result<GpuTurn> {
        let device = crate::run::lease_devices::bind_thread()?;
        let path = crate::run::lease::lock_path(device)?;
        GpuTurn::take_at(path, access, wait, note)
    }

    /// [`GpuTurn::take`] on the lock file `path`.
    fn take_at(path: PathBuf, access: Access, wait: Duration, note: fn(&str)) -> Result<GpuTurn> {
        let mut turn = GpuTurn {
            held: None,
            access,
            wait,
            note,
            path,
            waited: Mutex::new(WaitClock::default()),
            kept: Mutex::new(None),
        };
        if access == Access::Exclusive {
            turn.held = Some(turn.lock(Access::Exclusive)?);
        }
        Ok(turn)
    }

    fn lock(&self, access: Access) -> Result<GpuLock> {
        {
            let mut w = self.waited.lock().unwrap_or_else(|p| p.into_inner());
            w.waiting += 1;
            if w.waiting == 1 {
                w.since = Some(Instant::now());
            }
        }
        let l = GpuLock::acquire_at(&self.path, access, self.wait, self.note);
        let mut w = self.waited.lock().unwrap_or_else(|p| p.into_inner());
        w.waiting -= 1;
        if w.waiting == 0 {
            if let Some(since) = w.since.take() {
                w.total += since.elapsed();
            }
        }
        l
    }

    /// Wall-clock time spent waiting for other graders (not this submission's time).
    pub(super) fn waited(&self) -> Duration {
        self.waited.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// Whether other submissions may be on the GPU beside this one.
    pub(super) fn shared(&self) -> bool {
        self.access == Access::Shared
    }

    /// Runs `f` (one run on the GPU) holding the shared lock; alone from the start: just `f`.
    /// Never call it inside [`GpuTurn::alone`]: the shared lock would wait for ourselves.
    pub(super) fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        if !self.shared() {
            return Ok(f());
        }
        self.give_back();
        let _held = self.lock(Access::Shared)?;
        Ok(f())
    }

    /// Runs `f` with the GPU to this submission alone (it waits for the runs in flight beside
    /// it; new ones wait for it). Alone from the start: just `f`.
    pub(super) fn alone<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        if !self.shared() {
            return Ok(f());
        }
        let _span = crate::proc::timeline::span("alone", || "the GPU alone (wait included)".into());
        let _alone = match self.take_kept() {
            Some(kept) => kept,
            None => self.lock(Access::Exclusive)?,
        };
        Ok(f())
    }

    /// [`GpuTurn::alone`], and the GPU stays this submission's alone after `f` until its next
    /// run ([`GpuTurn::run`] or `alone`) or [`GpuTurn::give_back`]. For one sequence of runs
    /// only (a kernel's correctness trials, one after another): a trial that hung alone is
    /// followed at once by the next trial alone, and giving the lock back between them let in
    /// every run of the batch that waited at the turnstile meanwhile, each to be waited for
    /// again (H200 run 29: 1.5-1.9 s before each infinite loop's second trial alone). Runs of
    /// this submission side by side (its sanitizers) must not keep it: one that waits for the
    /// shared lock while another keeps it alone would wait for its own submission. Never call
    /// `alone` or `alone_kept` of one turn from two threads at once while one of them keeps the
    /// lock: the other would wait for it until its deadline.
    pub(super) fn alone_kept<T>(&self, f: impl FnOnce() -> T) -> Result<T> {
        if !self.shared() {
            return Ok(f());
        }
        let _span = crate::proc::timeline::span("alone", || "the GPU alone (wait included)".into());
        let held = match self.take_kept() {
            Some(kept) => kept,
            None => self.lock(Access::Exclusive)?,
        };
        let out = f();
        *self.kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(held);
        Ok(out)
    }

    /// Gives back the lock a run alone kept ([`GpuTurn::alone_kept`]), if any.
    pub(super) fn give_back(&self) {
        drop(self.take_kept());
    }

    fn take_kept(&self) -> Option<GpuLock> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Mutex;

    use super::*;

    static NOTES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn keep(n: &str) {
        NOTES.lock().unwrap().push(n.to_string());
    }

    #[test]
    fn a_shared_turn_holds_the_lock_per_run_and_goes_alone_on_request() {
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let short = Duration::from_millis(300);
        let turn = GpuTurn::take_at(path.clone(), Access::Shared, short, keep).unwrap();
        assert!(turn.shared());
        // Between runs it holds nothing: a grader may take the GPU alone.
        drop(
            GpuLock::acquire_at(&path, Access::Exclusive, Duration::ZERO, keep)
                .expect("free between runs"),
        );
        // During a run another submission may share, but nobody is alone.
        let (beside, alone) = turn
            .run(|| {
                (
                    GpuLock::acquire_at(&path, Access::Shared, Duration::ZERO, keep).is_ok(),
                    GpuLock::acquire_at(&path, Access::Exclusive, Duration::ZERO, keep).is_ok(),
                )
            })
            .unwrap();
        assert!(beside && !alone, "beside {beside}, alone {alone}");
        // Alone: nobody shares; a run beside it waits (here until its deadline).
        let inside = turn
            .alone(|| GpuLock::acquire_at(&path, Access::Shared, Duration::ZERO, keep).is_err())
            .unwrap();
        assert!(
            inside,
            "someone shared the GPU with a submission that was alone"
        );
        let other = GpuLock::acquire_at(&path, Access::Shared, short, keep).unwrap();
        assert!(
            turn.alone(|| ()).is_err(),
            "alone while another run was in flight"
        );
        drop(other);
        // A turn taken alone holds the lock throughout and runs `f` as it is.
        let solo = GpuTurn::take_at(path.clone(), Access::Exclusive, short, keep).unwrap();
        assert!(!solo.shared());
        assert_eq!(solo.alone(|| 7).unwrap(), 7);
        assert_eq!(solo.run(|| 8).unwrap(), 8);
        assert!(GpuLock::acquire_at(&path, Access::Shared, Duration::ZERO, keep).is_err());
    }

    #[test]
    fn a_run_alone_kept_holds_the_gpu_until_the_next_run_beside_or_give_back() {
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let turn =
            GpuTurn::take_at(path.clone(), Access::Shared, Duration::from_secs(5), keep).unwrap();
        let taken =
            |p: &Path| GpuLock::acquire_at(p, Access::Shared, Duration::ZERO, keep).is_err();
        assert_eq!(turn.alone_kept(|| 1).unwrap(), 1);
        assert!(taken(&path), "kept alone after the run");
        std::thread::scope(|s| {
            // Another submission waits at the turnstile for a shared turn ...
            let waiting = s.spawn(|| {
                GpuLock::acquire_at(&path, Access::Shared, Duration::from_secs(5), keep)
                    .map(drop)
                    .is_ok()
            });
            std::thread::sleep(Duration::from_millis(100));
            // ... and the next run alone starts without letting it in or waiting for it.
            let t = Instant::now();
            let inside = turn.alone_kept(|| taken(&path)).unwrap();
            assert!(inside && t.elapsed() < Duration::from_secs(1));
            assert!(
                !waiting.is_finished(),
                "a shared holder got in between two runs alone"
            );
            // A run beside others gives the lock back first (and so does not wait for itself).
            assert_eq!(turn.run(|| 2).unwrap(), 2);
            assert!(waiting.join().unwrap());
        });
        // give_back releases what a run alone kept; a plain run alone keeps nothing.
        turn.alone_kept(|| ()).unwrap();
        assert!(taken(&path));
        turn.give_back();
        assert!(!taken(&path), "given back");
        turn.alone(|| ()).unwrap();
        assert!(!taken(&path), "alone() keeps nothing");
        // Dropped, a turn gives back what it kept.
        turn.alone_kept(|| ()).unwrap();
        drop(turn);
        assert!(!taken(&path), "released with the turn");
    }

    #[test]
    fn a_grader_waiting_to_be_alone_keeps_new_shared_holders_out() {
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let first =
            GpuLock::acquire_at(&path, Access::Shared, Duration::from_secs(1), keep).unwrap();
        let started = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                started.wait();
                GpuLock::acquire_at(&path, Access::Exclusive, Duration::from_secs(5), keep)
                    .map(drop)
                    .is_ok()
            });
            started.wait();
            std::thread::sleep(Duration::from_millis(200));
            // The alone waiter holds the turnstile: a new shared holder cannot pass it ...
            let t = Instant::now();
            let late = s.spawn(|| {
                GpuLock::acquire_at(&path, Access::Shared, Duration::from_secs(5), keep)
                    .map(drop)
                    .is_ok()
            });
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                !late.is_finished(),
                "a shared holder passed a grader waiting to be alone"
            );
            // ... until the first shared holder leaves and the alone one has had its turn.
            drop(first);
            assert!(waiter.join().unwrap());
            assert!(late.join().unwrap());
            assert!(t.elapsed() >= Duration::from_millis(300));
        });
    }

    #[test]
    fn runs_that_wait_side_by_side_count_their_wait_once() {
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("gpu.lock");
        let turn =
            GpuTurn::take_at(path.clone(), Access::Shared, Duration::from_secs(5), keep).unwrap();
        let alone =
            GpuLock::acquire_at(&path, Access::Exclusive, Duration::from_secs(1), keep).unwrap();
        let start = Instant::now();
        std::thread::scope(|s| {
            let a = s.spawn(|| turn.run(|| ()).unwrap());
            let b = s.spawn(|| turn.run(|| ()).unwrap());
            std::thread::sleep(Duration::from_millis(400));
            drop(alone);
            a.join().unwrap();
            b.join().unwrap();
        });
        // Both runs waited the whole time the lock was held alone: counted once, the wait is
        // at most the wall time that passed (added up, it would be about twice it), however
        // slow the machine.
        let (w, wall) = (turn.waited(), start.elapsed());
        assert!(w >= Duration::from_millis(350), "{w:?}");
        assert!(
            w <= wall,
            "two waits side by side added up: {w:?} in {wall:?}"
        );
    }

    #[test]
    fn a_turn_holds_the_lease_of_its_threads_device_whichever_thread_runs() {
        use crate::proc::watchdog::thread_env;
        use crate::run::lease_devices::lock_file;
        let wait = Duration::from_secs(1);
        // A grading thread tied to device 1: the turn, and every run of it, is on gpu-1.lock.
        let on_1 = std::thread::spawn(move || {
            thread_env::bind(thread_env::Binding::new(1, Vec::new()));
            GpuTurn::take(Access::Shared, wait, keep).unwrap()
        })
        .join()
        .unwrap();
        assert!(on_1.path.ends_with(lock_file(1)), "{:?}", on_1.path);
        // A thread not tied yet is tied when it takes a turn: device 0, no device chosen here.
        let first = std::thread::spawn(move || {
            let turn = GpuTurn::take(Access::Shared, wait, keep).unwrap();
            (turn.path.clone(), thread_env::device())
        })
        .join()
        .unwrap();
        assert!(first.0.ends_with(lock_file(0)), "{first:?}");
        assert_eq!(first.1, Some(0));
    }
}
