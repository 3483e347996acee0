//! A program's first run, measured, and the lease every later run of the gate holds
//! ([`Lease`]): shared beside other racegate processes, alone to confirm a hang.
//!
//! The measuring run holds the machine's GPU lease ([`crate::run::lease`]) alone when nothing
//! else holds it, so that what it took is the program's own time; when other racegate processes
//! are on the GPU it runs beside them rather than wait (see [`measure`]). Every later run holds
//! the lease shared; one that misses its deadline there is run again holding it alone before it
//! is called a hang.

use std::time::{Duration, Instant};

use crate::errors::Result;
use crate::proc::watchdog::{self, Deadline, Exit};
use crate::run::lease::{say_wait, Access, GpuLock, LEASE_WAIT};

/// The GPU lease of one gate: taken around each run when the machine has a device; without
/// one there is nothing to share, and every run simply runs.
#[derive(Clone, Copy, Debug)]
pub struct Lease {
    gpu: bool,
}

/// What a run holds while it uses the GPU: the machine's [`Lease`], or a test's stand-in that
/// records how it was held.
pub trait Hold {
    /// Whether runs can be confirmed alone (there is a GPU to hold).
    fn confirms(&self) -> bool;

    /// Runs `f` holding the GPU as `access` says; also how long it waited for it.
    fn with<T>(&self, access: Access, f: impl FnOnce() -> T) -> Result<(T, Duration)>;

    /// Runs `f` holding the GPU alone if nothing else holds it now; `None`, without waiting
    /// and without running `f`, otherwise. Without a GPU, `f` simply runs.
    fn try_alone<T>(&self, f: impl FnOnce() -> T) -> Result<Option<T>>;

    /// Runs `f` holding the GPU shared, and says whether any other run held it at some moment
    /// while `f` ran (looked at every [`WATCH_EVERY`]): a run nobody was beside took its own
    /// time. Unless a holder can tell, every run counts as crowded.
    fn watched<T>(&self, f: impl FnOnce() -> T) -> Result<(T, bool)> {
        let (out, _) = self.with(Access::Shared, f)?;
        Ok((out, true))
    }
}

/// How often a watched run looks for other runs on the GPU.
pub const WATCH_EVERY: Duration = Duration::from_millis(200);

impl Lease {
    /// A lease for a machine with (`gpu`) or without a CUDA device.
    pub fn new(gpu: bool) -> Lease {
        Lease { gpu }
    }
}

impl Hold for Lease {
    fn confirms(&self) -> bool {
        self.gpu
    }

    fn with<T>(&self, access: Access, f: impl FnOnce() -> T) -> Result<(T, Duration)> {
        if !self.gpu {
            return Ok((f(), Duration::ZERO));
        }
        let asked = Instant::now();
        let held = GpuLock::acquire(access, LEASE_WAIT, say_wait)?;
        let waited = asked.elapsed();
        let out = f();
        drop(held);
        Ok((out, waited))
    }

    fn try_alone<T>(&self, f: impl FnOnce() -> T) -> Result<Option<T>> {
        if !self.gpu {
            return Ok(Some(f()));
        }
        let Some(held) = GpuLock::try_acquire(Access::Exclusive)? else {
            return Ok(None);
        };
        let out = f();
        drop(held);
        Ok(Some(out))
    }

    fn watched<T>(&self, f: impl FnOnce() -> T) -> Result<(T, bool)> {
        if !self.gpu {
            return Ok((f(), false));
        }
        let held = GpuLock::acquire(Access::Shared, LEASE_WAIT, say_wait)?;
        let (out, crowded) = held.watch(WATCH_EVERY, f);
        Ok((out, crowded))
    }
}

/// What the measuring run gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Its wall time, in seconds; `None` when it reached the cap.
    pub seconds: Option<f64>,
    /// Whether it held the GPU alone (a reached cap is then a confirmed hang).
    pub alone: bool,
    /// Whether it ran beside other racegate processes' GPU work: its time may be more than the
    /// program's own, and the deadlines derived from it longer than they need be.
    pub beside: bool,
    /// How long it waited for the lease.
    pub waited: Duration,
}

/// Runs the program `exe` with `args` once, plainly, as `spawn` says, under `cap`; its output is
/// not judged (the plain runs that follow are). It holds the GPU alone when nothing else holds it
/// at that moment; it does not wait for that: behind another gate's long tool runs every gate on
/// the machine would wait with it (an asker for the GPU alone stops new shared holders). Beside
/// other work it holds the lease shared, and its time may be longer than the program's own,
/// which only lengthens the deadlines derived from it; a run that reaches the cap there runs again
/// with the GPU held alone before it counts as a hang.
pub fn measure(
    exe: &std::path::Path,
    args: &[std::ffi::OsString],
    spawn: &watchdog::Spawn,
    cap: Duration,
    lease: &impl Hold,
) -> Result<Measured> {
    let run = || {
        let mut out = watchdog::Output::bounded();
        watchdog::run(
            exe,
            args,
            spawn,
            Deadline {
                idle: cap,
                total: Some(cap),
            },
            |l| out.push_line(l),
        )
    };
    let seconds =
        |f: &watchdog::Finished| (f.exit != Exit::TimedOut).then_some(f.elapsed.as_secs_f64());
    if let Some(f) = lease.try_alone(run)? {
        return Ok(Measured {
            seconds: seconds(&f?),
            alone: lease.confirms(),
            beside: false,
            waited: Duration::ZERO,
        });
    }
    // A wait for a shared slot is a wait too (up to 8 runs share the GPU).
    let (f, shared_wait) = lease.with(Access::Shared, run)?;
    let f = f?;
    if f.exit != Exit::TimedOut {
        return Ok(Measured {
            seconds: seconds(&f),
            alone: false,
            beside: true,
            waited: shared_wait,
        });
    }
    let (g, waited) = lease.with(Access::Exclusive, run)?;
    Ok(Measured {
        seconds: seconds(&g?),
        alone: true,
        beside: false,
        waited: shared_wait + waited,
    })
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// A GPU that another racegate process holds: nothing can have it alone at once; records how
    /// each run held it.
    struct Busy(RefCell<Vec<Access>>);

    impl Hold for Busy {
        fn confirms(&self) -> bool {
            true
        }

        fn with<T>(&self, access: Access, f: impl FnOnce() -> T) -> Result<(T, Duration)> {
            self.0.borrow_mut().push(access);
            Ok((f(), Duration::from_secs(3)))
        }

        fn try_alone<T>(&self, _: impl FnOnce() -> T) -> Result<Option<T>> {
            Ok(None)
        }
    }

    #[test]
    fn beside_other_gpu_work_the_program_is_measured_shared_and_only_a_reached_cap_waits() {
        let t = |script: &str| -> Vec<std::ffi::OsString> { vec!["-c".into(), script.into()] };
        let spawn = watchdog::Spawn::default();
        let sh = std::path::Path::new("/bin/sh");
        let busy = Busy(RefCell::new(Vec::new()));
        let m =
            measure(sh, &t("sleep 0.2"), &spawn, Duration::from_secs(20), &busy).expect("sh runs");
        assert_eq!(busy.0.borrow().as_slice(), [Access::Shared]);
        assert!(m.beside && !m.alone && m.seconds.is_some(), "{m:?}");
        assert_eq!(
            m.waited,
            Duration::from_secs(3),
            "its wait for a shared slot"
        );
        let busy = Busy(RefCell::new(Vec::new()));
        let m = measure(
            sh,
            &t("sleep 30"),
            &spawn,
            Duration::from_millis(400),
            &busy,
        )
        .expect("sh runs");
        assert_eq!(
            busy.0.borrow().as_slice(),
            [Access::Shared, Access::Exclusive],
            "a reached cap beside others is run again alone"
        );
        assert!(m.alone && !m.beside && m.seconds.is_none(), "{m:?}");
        assert_eq!(m.waited, Duration::from_secs(6), "both waits");
    }

    #[test]
    fn a_run_is_measured_and_one_past_its_cap_is_not() {
        let t = |script: &str| -> Vec<std::ffi::OsString> { vec!["-c".into(), script.into()] };
        let (lease, spawn) = (&Lease::new(false), watchdog::Spawn::default());
        let sh = std::path::Path::new("/bin/sh");
        let m =
            measure(sh, &t("sleep 0.3"), &spawn, Duration::from_secs(20), lease).expect("sh runs");
        let s = m.seconds.expect("it exits");
        assert!((0.3..10.0).contains(&s), "{s}");
        let m = measure(
            sh,
            &t("sleep 30"),
            &spawn,
            Duration::from_millis(500),
            lease,
        )
        .expect("sh runs");
        assert_eq!(m.seconds, None);
        assert!(!m.alone, "no GPU: nothing was held alone");
    }
}
