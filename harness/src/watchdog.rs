//! Runs a child that may hang or fault: its own process group, a deadline, and a kill of the
//! whole group (TERM, a short grace, then KILL), so no grandchild is left holding the GPU or
//! our pipes. Used for stress workers, compute-sanitizer runs, grading workers and compiles
//! alike. The child's stdout is read as bytes, a line at a time (at most [`MAX_LINE`] bytes
//! each): a kernel that prints bytes that are not UTF-8, or a flood without newlines, can
//! neither stop the reading nor fill our memory.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
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

/// The longest stdout line passed on whole; a longer one comes in pieces of this size.
pub const MAX_LINE: usize = 64 * 1024;

/// How to start a child besides its arguments: its environment and working folder.
#[derive(Clone, Debug, Default)]
pub struct Spawn {
    /// Variables set in the child.
    pub env: Vec<(String, String)>,
    /// Start from an empty environment: the child gets `env` and nothing else of ours.
    pub clear_env: bool,
    /// Variables of ours the child does not get.
    pub remove: Vec<String>,
    /// The child's working folder (default: ours).
    pub cwd: Option<PathBuf>,
}

/// Runs `program args` with `env` added, calling `on_line` for every stdout line as it comes.
pub fn run(
    program: &Path,
    args: &[OsString],
    env: &[(String, String)],
    deadline: Deadline,
    on_line: impl FnMut(&str),
) -> Result<Finished> {
    let spawn = Spawn {
        env: env.to_vec(),
        ..Spawn::default()
    };
    run_with(program, args, &spawn, deadline, on_line)
}

/// [`run`] with the environment and working folder of `spawn`.
pub fn run_with(
    program: &Path,
    args: &[OsString],
    spawn: &Spawn,
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
    if spawn.clear_env {
        expr = expr.full_env(spawn.env.iter().cloned());
    } else {
        for k in &spawn.remove {
            expr = expr.env_remove(k);
        }
        for (k, v) in &spawn.env {
            expr = expr.env(k, v);
        }
    }
    if let Some(d) = &spawn.cwd {
        expr = expr.dir(d);
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
            let mut line = Vec::new();
            let send = |line: &mut Vec<u8>| {
                let text = String::from_utf8_lossy(line).trim_end().to_string();
                line.clear();
                tx.send(text).is_ok()
            };
            loop {
                let chunk = match lines.fill_buf() {
                    Ok([]) => break,
                    Ok(c) => c,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let (take, newline) = match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => (i + 1, true),
                    None => (chunk.len(), false),
                };
                let take = take.min(MAX_LINE - line.len());
                line.extend_from_slice(&chunk[..take]);
                lines.consume(take);
                if (newline || line.len() >= MAX_LINE) && !send(&mut line) {
                    return;
                }
            }
            if !line.is_empty() {
                send(&mut line);
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
    fn bytes_that_are_not_utf8_and_endless_lines_are_read() {
        let (f, lines) = sh(
            "printf 'a\\377b\\n'; head -c 200000 /dev/zero | tr '\\0' x; echo; echo end",
            5000,
        );
        assert_eq!(f.exit, Exit::Code(0));
        assert_eq!(lines[0], "a\u{fffd}b");
        assert!(
            lines[1..].iter().all(|l| l.len() <= MAX_LINE),
            "long lines are cut"
        );
        assert_eq!(lines.last().map(String::as_str), Some("end"));
    }

    #[test]
    fn a_clean_environment_and_a_working_folder() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = Vec::new();
        let spawn = Spawn {
            env: vec![("ONLY".into(), "this".into())],
            clear_env: true,
            cwd: Some(dir.path().to_path_buf()),
            ..Spawn::default()
        };
        let f = run_with(
            Path::new("/bin/sh"),
            &["-c".into(), "env; pwd".into()],
            &spawn,
            Deadline {
                idle: Duration::from_secs(5),
                total: None,
            },
            |l| lines.push(l.to_string()),
        )
        .unwrap();
        assert_eq!(f.exit, Exit::Code(0));
        let env: Vec<&String> = lines
            .iter()
            .filter(|l| {
                l.contains('=')
                    && !l.starts_with("PWD=")
                    && !l.starts_with("SHLVL=")
                    && !l.starts_with("_=")
            })
            .collect();
        assert_eq!(env, ["ONLY=this"], "{lines:?}");
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(lines.last().map(PathBuf::from), Some(cwd));
    }

    #[test]
    fn a_signal_is_reported_as_such() {
        let (f, _) = sh("kill -SEGV $$", 5000);
        assert_eq!(f.exit, Exit::Signal(libc::SIGSEGV));
    }
}
