//! A program's first run, measured with the GPU held alone, and the lease every later run of
//! the gate holds ([`Lease`]): shared beside other racegate processes, alone to confirm a hang.
//!
//! The measuring run holds the machine's GPU lease alone ([`crate::run::lease`]): what it took
//! is the program's own time, not its neighbours', and a measuring run that reaches its cap has
//! hung with nothing else on the GPU. Every later run holds the lease shared; one that misses
//! its deadline there is run again holding it alone before it is called a hang.

use std::time::{Duration, Instant};

use crate::errors::Result;
use crate::proc::watchdog::{self, Deadline, Exit};
use crate::run::lease::{Access, GpuLock};

/// How long a run waits for the GPU lease before the gate gives up (another racegate holding
/// it alone for longer is stuck, or runs a program of hours).
const LEASE_WAIT: Duration = Duration::from_secs(3 * 3600);

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
}

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
        let held = GpuLock::acquire(access, LEASE_WAIT, |_| {})?;
        let waited = asked.elapsed();
        let out = f();
        drop(held);
        Ok((out, waited))
    }
}

/// What the measuring run gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Its wall time, in seconds; `None` when it reached the cap.
    pub seconds: Option<f64>,
    /// Whether it held the GPU alone (a reached cap is then a confirmed hang).
    pub alone: bool,
    /// How long it waited for the lease.
    pub waited: Duration,
}

/// Runs the program `exe` with `args` once, plainly, as `spawn` says, holding the lease alone,
/// under `cap`; its output is not judged (the plain runs that follow are).
pub fn measure(
    exe: &std::path::Path,
    args: &[std::ffi::OsString],
    spawn: &watchdog::Spawn,
    cap: Duration,
    lease: Lease,
) -> Result<Measured> {
    let (f, waited) = lease.with(Access::Exclusive, || {
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
    })?;
    let f = f?;
    Ok(Measured {
        seconds: (f.exit != Exit::TimedOut).then_some(f.elapsed.as_secs_f64()),
        alone: lease.confirms(),
        waited,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_measured_and_one_past_its_cap_is_not() {
        let t = |script: &str| -> Vec<std::ffi::OsString> { vec!["-c".into(), script.into()] };
        let (lease, spawn) = (Lease::new(false), watchdog::Spawn::default());
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
