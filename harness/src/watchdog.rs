//! Runs a child that may hang or fault: its own process group, a deadline, and a kill of the
//! whole group (TERM, a short grace, then KILL), so no grandchild is left holding the GPU or
//! our pipes. Used for stress workers and for compute-sanitizer runs alike.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::errors::{Error, Result};

/// How the child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exited by itself with this code.
    Code(i32),
    /// Killed by this signal (not by us).
    Signal(i32),
    /// It missed its deadline and we killed its process group.
    TimedOut,
}

/// The outcome of a supervised child.
#[derive(Clone, Debug)]
pub struct Finished {
    pub exit: Exit,
    pub stderr: String,
    pub elapsed: Duration,
    /// True when, after a kill, some process of the group was still alive 2 s later.
    pub left_behind: bool,
}

/// Deadlines for a child.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    /// Kill when no stdout line arrived for this long (a trial's own deadline).
    pub idle: Duration,
    /// Kill after this long in any case.
    pub total: Option<Duration>,
}

/// Runs `program args` with `env` added, calling `on_line` for every stdout line as it comes.
pub fn run(
    program: &Path,
    args: &[OsString],
    env: &[(String, String)],
    deadline: Deadline,
    mut on_line: impl FnMut(&str),
) -> Result<Finished> {
    let start = Instant::now();
    let mut expr = duct::cmd(program, args)
        .unchecked()
        .stderr_capture()
        .stdin_null()
        .before_spawn(|c| {
            use std::os::unix::process::CommandExt;
            c.process_group(0);
            Ok(())
        });
    for (k, v) in env {
        expr = expr.env(k, v);
    }
    let reader = Arc::new(
        expr.reader()
            .map_err(|e| Error::Child(format!("could not start {}: {e}", program.display())))?,
    );
    let pgid = reader.pids().first().copied().unwrap_or(0) as i32;
    let (tx, rx) = mpsc::channel::<String>();
    let pump = {
        let reader = Arc::clone(&reader);
        std::thread::spawn(move || {
            let mut lines = BufReader::new(&*reader);
            let mut line = String::new();
            loop {
                line.clear();
                match lines.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line.trim_end().to_string()).is_err() {
                            break;
                        }
                    }
                }
            }
        })
    };
    let mut last = Instant::now();
    let mut timed_out = false;
    loop {
        let mut wait = deadline.idle.saturating_sub(last.elapsed());
        if let Some(total) = deadline.total {
            wait = wait.min(total.saturating_sub(start.elapsed()));
        }
        match rx.recv_timeout(wait) {
            Ok(line) => {
                last = Instant::now();
                on_line(&line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                kill_group(pgid);
                break;
            }
        }
    }
    // Drain what was printed before the kill, then reap.
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
        on_line(&line);
    }
    let _ = pump.join();
    let output = reader.try_wait().ok().flatten().cloned().or_else(|| {
        let _ = reader.kill();
        reader.try_wait().ok().flatten().cloned()
    });
    let stderr = output
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default();
    let exit = if timed_out {
        Exit::TimedOut
    } else {
        use std::os::unix::process::ExitStatusExt;
        match output.map(|o| o.status) {
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(sig)) => Exit::Signal(sig),
                _ => Exit::Code(-1),
            },
            None => Exit::Code(-1),
        }
    };
    let left_behind = timed_out && !group_gone(pgid, Duration::from_secs(2));
    Ok(Finished {
        exit,
        stderr,
        elapsed: start.elapsed(),
        left_behind,
    })
}

/// TERM the group, wait up to 500 ms, then KILL it.
fn kill_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: signals a process group we created.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    if !group_gone(pgid, Duration::from_millis(500)) {
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// Waits until no process of the group is left (zombies reaped), or `within` has passed.
fn group_gone(pgid: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(-pgid, 0) } == 0;
        if !alive {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, idle_ms: u64) -> (Finished, Vec<String>) {
        let mut lines = Vec::new();
        let f = run(
            Path::new("/bin/sh"),
            &["-c".into(), script.into()],
            &[],
            Deadline {
                idle: Duration::from_millis(idle_ms),
                total: None,
            },
            |l| lines.push(l.to_string()),
        )
        .unwrap();
        (f, lines)
    }

    #[test]
    fn a_child_that_sleeps_forever_is_killed_with_its_grandchildren() {
        // The grandchild `sleep` holds stdout: only a group kill ends the read.
        let (f, lines) = sh("echo started; sleep 1000 & sleep 1000", 300);
        assert_eq!(f.exit, Exit::TimedOut);
        assert_eq!(lines, vec!["started"]);
        assert!(!f.left_behind, "processes of the group survived the kill");
        assert!(f.elapsed < Duration::from_secs(5), "{:?}", f.elapsed);
    }

    #[test]
    fn lines_reset_the_idle_deadline() {
        let (f, lines) = sh("for i in 1 2 3 4; do echo $i; sleep 0.2; done", 600);
        assert_eq!(f.exit, Exit::Code(0));
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn exit_codes_and_stderr_are_kept() {
        let (f, _) = sh("echo oops >&2; exit 3", 5000);
        assert_eq!(f.exit, Exit::Code(3));
        assert_eq!(f.stderr.trim(), "oops");
    }

    #[test]
    fn a_signal_is_reported_as_such() {
        let (f, _) = sh("kill -SEGV $$", 5000);
        assert_eq!(f.exit, Exit::Signal(libc::SIGSEGV));
    }
}
