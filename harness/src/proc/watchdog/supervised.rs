//! One supervised child, in three steps: [`Supervised::start`] (its own process group and job,
//! stdout and stderr read by threads of their own), [`Supervised::read`] (its stdout lines
//! under a deadline, until it ends or the caller has what it wanted) and
//! [`Supervised::finish`] (everything it started killed and reaped, its stderr and exit). A
//! one-shot run ([`super::run`]) is the three in a row; a worker that serves several
//! requests (the stress session, `run/stress_session.rs`) reads once per request and finishes
//! when it is done or missed a deadline.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Deadline, Exit, Finished, Output, Spawn, MAX_LINE, STDERR_LIMIT};
use crate::errors::{Error, Result};
use crate::proc::{identity, jobs, processes};

/// How many stdout pieces may wait for the caller.
const LINES_QUEUED: usize = 64;
/// How long the pipes may stay open after the child exited (a background process holding
/// them) before the job's leftovers are killed.
const PIPE_GRACE: Duration = Duration::from_millis(500);
const POLL: Duration = Duration::from_millis(20);

/// Why [`Supervised::read`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The caller's `on_line` said it had what it wanted; the child runs on.
    Asked,
    /// The child exited (and its stdout closed, or stayed open past a short grace).
    Ended,
    /// A deadline passed with the child still running.
    TimedOut,
}

/// A running child under supervision.
pub struct Supervised {
    program: PathBuf,
    child: std::process::Child,
    job: jobs::Job,
    token: String,
    pid: libc::pid_t,
    lines: mpsc::Receiver<Vec<u8>>,
    err_buf: Arc<Mutex<Output>>,
    err_done: mpsc::Receiver<()>,
    start: Instant,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    stdout_open: bool,
    /// The child's standard input when started with `piped_stdin`.
    pub stdin: Option<ChildStdin>,
    /// Its line in `RACEGATE_TIMELINE`'s record, closed when it is finished.
    _span: Option<crate::proc::timeline::Span>,
}

/// A child's label in the timeline: its program and arguments, each path by its file name.
fn timeline_label(program: &Path, args: &[OsString]) -> String {
    let short = |s: &std::ffi::OsStr| {
        let p = Path::new(s);
        match p.file_name() {
            Some(n) if p.is_absolute() => n.to_string_lossy().into_owned(),
            _ => s.to_string_lossy().into_owned(),
        }
    };
    let mut label = short(program.as_os_str());
    for a in args {
        label.push(' ');
        label.push_str(&short(a));
    }
    label.chars().take(400).collect()
}

impl Supervised {
    /// Starts `program args` as `spawn` says, in a cgroup of its own when `use_cgroup`; with
    /// `piped_stdin` its standard input is a pipe held in [`Supervised::stdin`] (else
    /// `spawn.stdin`, or nothing). The calling thread's device variables
    /// ([`super::thread_env::vars`]) are added last.
    pub fn start(
        program: &Path,
        args: &[OsString],
        spawn: &Spawn,
        use_cgroup: bool,
        piped_stdin: bool,
    ) -> Result<Supervised> {
        use std::os::unix::process::CommandExt;
        let token = identity::new_token();
        let start = Instant::now();
        let mut cmd = Command::new(program);
        if spawn.clear_env {
            cmd.env_clear();
        }
        for k in &spawn.remove {
            cmd.env_remove(k);
        }
        cmd.args(args)
            .env(identity::JOB_ENV, &token)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in &spawn.env {
            cmd.env(k, v);
        }
        // The device of the thread that starts it, when the thread is tied to one.
        for (k, v) in super::thread_env::vars() {
            cmd.env(k, v);
        }
        if let Some(d) = &spawn.cwd {
            cmd.current_dir(d);
        }
        match (&spawn.stdin, piped_stdin) {
            (_, true) => {
                cmd.stdin(Stdio::piped());
            }
            (Some(p), false) => {
                let f = std::fs::File::open(p).map_err(|e| Error::io("opening stdin for", p, e))?;
                cmd.stdin(f);
            }
            (None, false) => {
                cmd.stdin(Stdio::null());
            }
        }
        let (mut child, job) = jobs::spawn(&mut cmd, &token, use_cgroup)?;
        let pid = crate::proc::pid_t(child.id());
        // Bounded: a reader ahead of the caller waits (and the child with it) instead of
        // queueing all the child prints; at most LINES_QUEUED pieces of MAX_LINE bytes wait.
        let (tx, lines) = mpsc::sync_channel::<Vec<u8>>(LINES_QUEUED);
        let stdout = child.stdout.take().expect("piped");
        // The readers are never joined: one blocked on a pipe that some unkillable process
        // still holds must not hold the caller past the deadline.
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout).take(u64::MAX);
            loop {
                let mut line = Vec::new();
                // At most MAX_LINE bytes a piece: a flood without newlines comes in pieces.
                r.set_limit(MAX_LINE as u64);
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line.last() == Some(&b'\n') {
                            line.pop();
                        }
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let err_buf = Arc::new(Mutex::new(Output::with_limits(
            STDERR_LIMIT / 2,
            STDERR_LIMIT / 2,
            false,
        )));
        let (err_tx, err_done) = mpsc::channel::<()>();
        {
            let mut stderr = child.stderr.take().expect("piped");
            let buf = Arc::clone(&err_buf);
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = stderr.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    buf.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(&chunk[..n]);
                }
                drop(err_tx);
            });
        }
        let stdin = child.stdin.take();
        let span = crate::proc::timeline::span("process", || timeline_label(program, args));
        Ok(Supervised {
            program: program.to_path_buf(),
            child,
            job,
            token,
            pid,
            lines,
            err_buf,
            err_done,
            start,
            status: None,
            exited_at: None,
            stdout_open: true,
            stdin,
            _span: span,
        })
    }

    /// Whether the child has exited (its status is kept for [`Supervised::finish`]).
    pub fn exited(&mut self) -> bool {
        if self.status.is_none() {
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
                self.exited_at = Some(Instant::now());
            }
        }
        self.status.is_some()
    }

    /// Passes stdout lines to `on_line` as they come until it returns true ([`Stop::Asked`]),
    /// the child ends, or `deadline` passes: `idle` from this call or the last line, `total`
    /// from this call.
    pub fn read(
        &mut self,
        deadline: Deadline,
        mut on_line: impl FnMut(&[u8]) -> bool,
    ) -> Result<Stop> {
        let begun = Instant::now();
        let mut last = begun;
        loop {
            let idle_left = deadline.idle.saturating_sub(last.elapsed());
            let total_left = deadline
                .total
                .map_or(Duration::MAX, |t| t.saturating_sub(begun.elapsed()));
            match self.exited_at {
                None if idle_left.is_zero() || total_left.is_zero() => return Ok(Stop::TimedOut),
                Some(at)
                    if !self.stdout_open || at.elapsed() >= PIPE_GRACE || total_left.is_zero() =>
                {
                    return Ok(Stop::Ended)
                }
                _ => {}
            }
            let wait = POLL
                .min(idle_left)
                .min(total_left)
                .max(Duration::from_millis(1));
            if self.stdout_open {
                match self.lines.recv_timeout(wait) {
                    Ok(line) => {
                        last = Instant::now();
                        if on_line(&line) {
                            return Ok(Stop::Asked);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => self.stdout_open = false,
                }
            } else {
                std::thread::sleep(wait);
            }
            if self.status.is_none() {
                if let Some(s) = self.child.try_wait().map_err(|e| {
                    Error::process(format!("waiting for {}", self.program.display()), e)
                })? {
                    self.status = Some(s);
                    self.exited_at = Some(Instant::now());
                }
            }
        }
    }

    /// Ends whatever is left of the job (all of it when the child still runs, background
    /// processes after an exit), reaps the child, passes the lines it printed before the end
    /// to `on_line` (up to a short bound) and says how it ended: [`Exit::TimedOut`] when
    /// `timed_out`.
    pub fn finish(mut self, timed_out: bool, mut on_line: impl FnMut(&[u8])) -> Finished {
        // Closing stdin first: a worker waiting for its next request sees the end of it.
        drop(self.stdin.take());
        let pid = self.pid;
        let ended = processes::end_job(
            &self.job.scope(),
            if self.status.is_none() { pid } else { 0 },
            Duration::from_secs(2),
        );
        let mut status = self.status;
        if status.is_none() {
            let until = Instant::now() + Duration::from_secs(2);
            while status.is_none() && Instant::now() < until {
                status = self.child.try_wait().ok().flatten();
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if status.is_some() {
            processes::reap_job(pid, &self.token, Duration::from_millis(500));
        }
        // The zombies of orphans no job owns (killed at this job's end or another's).
        jobs::reap_orphans();
        // The cgroup goes (its members are dead), and the job leaves the registry: only now,
        // as its main child was reaped, may a sweep of orphans see that pid.
        drop(self.job);
        // Lines printed before the end, up to a short bound.
        let until = Instant::now() + Duration::from_millis(200);
        while let Ok(line) = self
            .lines
            .recv_timeout(until.saturating_duration_since(Instant::now()))
        {
            on_line(&line);
        }
        // ignored: a short wait for the stderr reader; what it has read by then is kept either way
        let _ = self.err_done.recv_timeout(Duration::from_millis(200));
        let stderr = {
            let mut b = self.err_buf.lock().unwrap_or_else(|e| e.into_inner());
            b.finish();
            b.text()
        };
        let exit = if timed_out {
            Exit::TimedOut
        } else {
            use std::os::unix::process::ExitStatusExt;
            match status {
                Some(s) => match (s.code(), s.signal()) {
                    (Some(c), _) => Exit::Code(c),
                    (None, Some(sig)) => Exit::Signal(sig),
                    _ => Exit::Code(-1),
                },
                None => Exit::Code(-1),
            }
        };
        Finished {
            exit,
            stderr,
            elapsed: self.start.elapsed(),
            left_behind: !ended.survivors.is_empty(),
            killed: ended.killed,
            survivors: ended.survivors,
        }
    }
}
