//! Runs a child that may hang or fault under a deadline, and ends everything it started.
//! Part of `proc/`: may import `errors` and the rest of `proc/`.
//!
//! The child gets its own process group and, where racegate can make one, its own cgroup v2
//! ([`crate::proc::jobs`]); at its end everything it started is killed
//! ([`crate::proc::processes`]: the cgroup, the group, every process carrying its job token,
//! orphans re-parented to racegate, `setsid` grandchildren included), TERM then KILL, so no
//! descendant is left holding the GPU or our pipes. Output is read as bytes; reading never
//! outlives the deadline, and a background process that keeps a pipe open after the child
//! exited does not make it a hang.
//! Used for stress workers, compute-sanitizer runs, grading workers, compiles and programs under
//! the gate alike. A stdout line is passed on whole up to [`MAX_LINE`] bytes and in pieces beyond
//! it, so a flood without newlines can neither stop the reading nor fill our memory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::errors::Result;

// The collecting side: bounded buffers, digests, spilling.
mod collect;
pub use collect::{Digest, Output};
// One supervised child: its start, reading its lines under a deadline, its end.
mod supervised;
pub use supervised::{Stop, Supervised};
// The device a thread is tied to, and what its children get for it.
pub mod thread_env;

/// How the child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exited by itself with this code.
    Code(i32),
    /// Killed by this signal (not by us).
    Signal(i32),
    /// It missed its deadline and we killed it and everything it started.
    TimedOut,
}

impl Exit {
    /// `exit 3`, `signal 11`, `killed after 30 s` (with the deadline it was given).
    pub fn describe(&self, deadline: Duration) -> String {
        match self {
            Exit::Code(c) => format!("exit {c}"),
            Exit::Signal(s) => format!("signal {s}"),
            Exit::TimedOut => format!("killed after {:.0} s", deadline.as_secs_f64()),
        }
    }
}

/// The outcome of a supervised child.
#[derive(Clone, Debug)]
pub struct Finished {
    pub exit: Exit,
    /// Standard error, lossily decoded (the first and the last half of [`STDERR_LIMIT`] bytes kept,
    /// with a line between them saying how many bytes are not).
    pub stderr: String,
    pub elapsed: Duration,
    /// True when, after a kill, some process of the job was still alive 2 s later.
    pub left_behind: bool,
    /// Processes the child left running when it exited (or at the deadline), which were
    /// killed: `name (pid N)`.
    pub killed: Vec<String>,
    /// Processes still alive after the kill: `name (pid N)`.
    pub survivors: Vec<String>,
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
    /// A file the child reads as standard input (default: none, so a child that reads stdin
    /// sees its end instead of waiting on ours).
    pub stdin: Option<PathBuf>,
    /// Keep the child out of a cgroup of its own even where one can be made: the containment
    /// of a machine without cgroup v2 (tests of that fallback).
    pub no_cgroup: bool,
}

/// How much of standard error is kept.
pub const STDERR_LIMIT: usize = 1 << 20;

impl Spawn {
    /// A child with `env` added to our environment, and nothing else changed.
    pub fn with_env(env: &[(String, String)]) -> Spawn {
        Spawn {
            env: env.to_vec(),
            ..Spawn::default()
        }
    }
}

impl Deadline {
    /// One deadline for the whole run: no output for `timeout`, or `timeout` in all (the shape
    /// of every tool run: a sanitizer, globalcheck's target, a compiler).
    pub fn within(timeout: Duration) -> Deadline {
        Deadline {
            idle: timeout,
            total: Some(timeout),
        }
    }
}

/// Runs `program args` as `spawn` says under `deadline`, calling `on_line` for every stdout
/// line (without its `\n`, as bytes) as it comes; a caller that wants text decodes it
/// (`String::from_utf8_lossy`).
pub fn run(
    program: &Path,
    args: &[OsString],
    spawn: &Spawn,
    deadline: Deadline,
    mut on_line: impl FnMut(&[u8]),
) -> Result<Finished> {
    let mut child = Supervised::start(program, args, spawn, !spawn.no_cgroup, false)?;
    let stop = child.read(deadline, |l| {
        on_line(l);
        false
    })?;
    Ok(child.finish(stop == Stop::TimedOut, on_line))
}

/// [`run`], with standard output collected into `out` and returned finished beside the
/// outcome. Memory is bounded whatever the program prints: [`Output::bounded`] keeps the first
/// and the last MiB, with a line between them saying how many bytes are not ([`Output::text`]);
/// [`Output::spilling`] is for a caller that needs the whole stream.
pub fn collect(
    program: &Path,
    args: &[OsString],
    spawn: &Spawn,
    deadline: Deadline,
    mut out: Output,
) -> Result<(Finished, Output)> {
    let done = run(program, args, spawn, deadline, |l| out.push_line(l))?;
    out.finish();
    Ok((done, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, idle_ms: u64) -> (Finished, Vec<String>) {
        let mut lines = Vec::new();
        let f = run(
            Path::new("/bin/sh"),
            &["-c".into(), script.into()],
            &Spawn::default(),
            Deadline {
                idle: Duration::from_millis(idle_ms),
                total: None,
            },
            |l| lines.push(String::from_utf8_lossy(l).into_owned()),
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
    fn a_grandchild_that_dies_with_its_parent_is_reaped_not_left_a_zombie() {
        // Killed at the deadline together with the shell that waits on it, the `sleep` becomes
        // racegate's child (the subreaper) when the shell exits: racegate must reap it, or it
        // outlives racegate as a zombie of init. (A descendant adopted only after the child was
        // reaped is `processes::reap_job`'s, tested there.)
        let (f, lines) = sh("sleep 1000 & echo $!; wait", 300);
        assert_eq!(f.exit, Exit::TimedOut);
        let pid: u32 = lines[0].trim().parse().unwrap();
        // Gone: no process, not a zombie of ours nor a `sleep` still running (before, a
        // grandchild that survived the kill passed, since only "our zombie" was checked).
        let start = std::time::Instant::now();
        while let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // A zombie some other process has not reaped yet is dead; anything else is not.
            let f: Vec<&str> = s
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if f.first() == Some(&"Z") && f.get(1) != Some(&std::process::id().to_string().as_str())
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(3),
                "the grandchild {pid} is still there 3 s after the deadline: {s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn collected_output_is_bounded() {
        let (f, out) = collect(
            Path::new("/bin/sh"),
            &["-c".into(), "seq 1 100000".into()],
            &Spawn::default(),
            Deadline::within(Duration::from_secs(30)),
            Output::with_limits(500, 500, false),
        )
        .unwrap();
        assert_eq!(f.exit, Exit::Code(0));
        assert_eq!((out.head().len(), out.tail().len()), (500, 500));
        let text = out.text();
        assert!(text.starts_with("1\n2\n3\n"), "the first lines are kept");
        assert!(text.ends_with("99999\n100000\n"), "the last lines are kept");
        assert!(text.contains(&format!("... {} bytes not kept ...", out.dropped())));
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
    fn a_background_child_holding_the_pipe_is_no_hang_and_is_killed() {
        // The shell exits at once; its background `sleep` keeps stdout open.
        let (f, lines) = sh("echo done; sleep 1000 &", 5000);
        assert_eq!(f.exit, Exit::Code(0));
        assert_eq!(lines, vec!["done"]);
        assert!(
            f.killed.iter().any(|k| k.starts_with("sleep")),
            "{:?}",
            f.killed
        );
        assert!(f.survivors.is_empty(), "{:?}", f.survivors);
        assert!(f.elapsed < Duration::from_secs(4), "{:?}", f.elapsed);
    }

    #[test]
    fn a_setsid_grandchild_is_killed_at_the_deadline() {
        // Without setsid (util-linux) this tests nothing: a failure, not a pass.
        assert!(
            Path::new("/usr/bin/setsid").exists(),
            "setsid (util-linux) is needed"
        );
        // The grandchild leaves the process group and holds stdout; the shell waits on it.
        let (f, _) = sh("setsid sleep 1000 & wait", 300);
        assert_eq!(f.exit, Exit::TimedOut);
        assert!(
            f.killed.iter().any(|k| k.starts_with("sleep")),
            "{:?}",
            f.killed
        );
        assert!(f.survivors.is_empty() && !f.left_behind);
        assert!(f.elapsed < Duration::from_secs(4), "{:?}", f.elapsed);
    }

    #[test]
    fn lines_are_bytes() {
        let mut lines = Vec::new();
        let f = run(
            Path::new("/bin/sh"),
            &["-c".into(), r"printf 'a\377b\nc'".into()],
            &Spawn::default(),
            Deadline {
                idle: Duration::from_secs(5),
                total: None,
            },
            |l| lines.push(l.to_vec()),
        )
        .unwrap();
        assert_eq!(f.exit, Exit::Code(0));
        assert_eq!(lines, vec![b"a\xffb".to_vec(), b"c".to_vec()]);
    }

    /// A program the OS cannot start is an [`crate::Error::Process`] whose source is the OS's
    /// error: the printed chain ends with its text, once, and the exit code is inconclusive.
    #[test]
    fn a_program_that_cannot_start_keeps_the_os_error_as_its_source() {
        let missing = Path::new("/nonexistent/racegate-no-such-program");
        let deadline = Deadline {
            idle: Duration::from_secs(5),
            total: None,
        };
        let e = run(missing, &[], &Spawn::default(), deadline, |_| {}).unwrap_err();
        let os = std::io::Error::from_raw_os_error(libc::ENOENT).to_string();
        assert_eq!(
            e.chain().to_string(),
            format!("could not start {}: {os}", missing.display())
        );
        let source = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(source, Some(std::io::ErrorKind::NotFound));
        assert_eq!(e.exit_code(), crate::errors::exit::INCONCLUSIVE);
        // A standard input file that cannot be opened: an I/O error naming the file, its
        // cause kept as the source.
        let spawn = Spawn {
            stdin: Some(missing.to_path_buf()),
            ..Spawn::default()
        };
        let e = run(Path::new("/bin/true"), &[], &spawn, deadline, |_| {}).unwrap_err();
        assert_eq!(
            e.chain().to_string(),
            format!("opening stdin for {}: {os}", missing.display())
        );
        assert!(std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()));
    }

    #[test]
    fn a_signal_is_reported_as_such() {
        let (f, _) = sh("kill -SEGV $$", 5000);
        assert_eq!(f.exit, Exit::Signal(libc::SIGSEGV));
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
        let f = run(
            Path::new("/bin/sh"),
            &["-c".into(), "env; pwd".into()],
            &spawn,
            Deadline {
                idle: Duration::from_secs(5),
                total: None,
            },
            |l| lines.push(String::from_utf8_lossy(l).into_owned()),
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
                    && !l.starts_with(&format!("{}=", crate::proc::identity::JOB_ENV))
            })
            .collect();
        assert_eq!(env, ["ONLY=this"], "{lines:?}");
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(lines.last().map(PathBuf::from), Some(cwd));
    }

    /// `CUDA_VISIBLE_DEVICES` as a shell child started with `spawn` on this thread sees it.
    fn device_seen(spawn: &Spawn) -> String {
        let mut lines = Vec::new();
        let script = "echo \"${CUDA_VISIBLE_DEVICES-unset}\"";
        let f = run(
            Path::new("/bin/sh"),
            &["-c".into(), script.into()],
            spawn,
            Deadline::within(Duration::from_secs(10)),
            |l| lines.push(String::from_utf8_lossy(l).into_owned()),
        )
        .unwrap();
        assert_eq!(f.exit, Exit::Code(0), "{}", f.stderr);
        lines.join("\n")
    }

    #[test]
    fn every_child_of_a_thread_tied_to_a_device_runs_on_it() {
        std::thread::spawn(|| {
            let mut asked = Spawn::default();
            asked.remove.push("CUDA_VISIBLE_DEVICES".into());
            // Unbound (and no default in this test process): the environment as asked.
            assert_eq!(device_seen(&asked), "unset");
            let on_1 = vec![("CUDA_VISIBLE_DEVICES".into(), "1".into())];
            thread_env::bind(thread_env::Binding::new(1, on_1));
            assert_eq!(device_seen(&asked), "1");
            // A clean environment, or a caller's own value, still runs on the thread's device.
            let clean = Spawn {
                clear_env: true,
                ..Spawn::default()
            };
            assert_eq!(device_seen(&clean), "1");
            let other = Spawn::with_env(&[("CUDA_VISIBLE_DEVICES".into(), "0".into())]);
            assert_eq!(device_seen(&other), "1");
            // Tied to a device whose children's environment is left alone (the default).
            thread_env::bind(thread_env::Binding::new(0, Vec::new()));
            assert_eq!(device_seen(&asked), "unset");
        })
        .join()
        .unwrap();
    }
}
