//! SIGINT, SIGTERM and SIGHUP (a closed terminal) passed on to the jobs. racegate's children run in process groups of their
//! own, so a Ctrl-C at the terminal reaches racegate alone; left at its default it would kill
//! racegate and leave them running (holding the GPU). With [`forward`] (the `racegate` binary
//! installs it for every command that starts children): the first signal TERMs every live job
//! (its group, its cgroup, its orphans; [`super::jobs::stop_all`]), waits up to [`GRACE`],
//! KILLs what is left, removes the cgroups and exits with 128 + the signal (130 for SIGINT, 143
//! for SIGTERM). A second signal meanwhile KILLs at once and exits.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::jobs;

/// How long the jobs get after TERM before they are KILLed.
pub const GRACE: Duration = Duration::from_secs(2);

/// The first signal caught, 0 before any.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// Called where the program would exit by itself: after a signal, the jobs ending under it
/// must not let racegate exit with the command's own code, so this waits for the handler,
/// which exits with 128 + the signal. Returns at once when no signal came.
pub fn wait_if_stopping() {
    if CAUGHT.load(Ordering::SeqCst) != 0 {
        loop {
            std::thread::park();
        }
    }
}

/// Installs the handlers (once; a later call does nothing). Errors only when the handlers
/// cannot be registered, and then the default actions stay.
pub fn forward() -> std::io::Result<()> {
    static DONE: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    DONE.call_once(|| {
        result = Signals::new([SIGINT, SIGTERM, SIGHUP]).and_then(|mut signals| {
            std::thread::Builder::new()
                .name("racegate-signals".into())
                .spawn(move || {
                    let mut first: Option<i32> = None;
                    for sig in signals.forever() {
                        match first {
                            None => {
                                first = Some(sig);
                                CAUGHT.store(sig, Ordering::SeqCst);
                                std::thread::spawn(move || {
                                    jobs::stop_all(GRACE);
                                    std::process::exit(128 + sig);
                                });
                            }
                            Some(code) => {
                                jobs::kill_all_now();
                                std::process::exit(128 + code);
                            }
                        }
                    }
                })
                .map(|_| ())
        });
    });
    result
}
