//! The one way a host test runs the racegate binary: `racegate(ARGS)`, then what the run needs,
//! said where it is run (`.at(dir)`, `.no_gpu()`, `.env(..)`), then `.run()` for what it left
//! ([`Ran`]), or `.command()` for a test that spawns the process and watches it itself.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// `racegate ARGS`, not yet run. Nothing is set but the arguments: it runs in the test's folder
/// with the test's environment unless the call site says otherwise.
pub(crate) struct Racegate(Command);

/// `racegate ARGS` (see [`Racegate`]).
pub(crate) fn racegate<I, S>(args: I) -> Racegate
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(crate::racegate_exe());
    cmd.args(args);
    Racegate(cmd)
}

impl Racegate {
    /// More arguments, after those given so far.
    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.0.args(args);
        self
    }

    /// Runs it in `dir`.
    pub(crate) fn at(mut self, dir: impl AsRef<Path>) -> Self {
        self.0.current_dir(dir);
        self
    }

    /// `RACEGATE_NO_GPU=1`: judged as on a machine without a CUDA device, on any machine.
    pub(crate) fn no_gpu(self) -> Self {
        self.env("RACEGATE_NO_GPU", "1")
    }

    /// `RACEGATE_TEST_PROGRAM_DEVICE=1`, a test build's switch: the programs a gate runs (sh
    /// scripts standing in for CUDA programs) are judged as on a machine with a device.
    pub(crate) fn program_device(self) -> Self {
        self.env("RACEGATE_TEST_PROGRAM_DEVICE", "1")
    }

    /// Sets the variable `key`.
    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.0.env(key, value);
        self
    }

    /// Sets each variable of `env`.
    pub(crate) fn envs<K, V>(mut self, env: &[(K, V)]) -> Self
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in env {
            self.0.env(k, v);
        }
        self
    }

    /// Removes each variable of `keys` (none is inherited from the test).
    pub(crate) fn envs_removed(mut self, keys: &[&str]) -> Self {
        for k in keys {
            self.0.env_remove(k);
        }
        self
    }

    /// Sets each variable of `env` with a value, removes each with `None`.
    pub(crate) fn envs_or_removed(mut self, env: &[(&str, Option<&OsStr>)]) -> Self {
        for (k, v) in env {
            match v {
                Some(v) => self.0.env(k, v),
                None => self.0.env_remove(k),
            };
        }
        self
    }

    /// The command, for a test that spawns it, feeds it or watches it itself.
    pub(crate) fn command(self) -> Command {
        self.0
    }

    /// Runs it to its end: its output as bytes, for a test that reads them raw.
    pub(crate) fn output(mut self) -> Output {
        self.0.output().expect("racegate runs")
    }

    /// Runs it to its end: what it left.
    pub(crate) fn run(self) -> Ran {
        let out = self.output();
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// What a run of racegate left: its exit code (`None` when a signal ended it), its standard
/// output and its standard error.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Ran {
    /// The exit code, -1 when a signal ended the run.
    pub(crate) fn exit(&self) -> i32 {
        self.code.unwrap_or(-1)
    }

    /// Standard output, then standard error.
    pub(crate) fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The same, having checked that the run succeeded (exit 0): panics with what it left
    /// otherwise.
    #[track_caller]
    pub(crate) fn success(self) -> Self {
        assert_eq!(self.code, Some(0), "racegate did not succeed: {self:?}");
        self
    }

    /// The exit code (-1 when a signal ended the run) and [`Ran::text`].
    pub(crate) fn exit_text(&self) -> (i32, String) {
        (self.exit(), self.text())
    }

    /// The exit code (`None` when a signal ended the run) and [`Ran::text`].
    pub(crate) fn code_text(&self) -> (Option<i32>, String) {
        (self.code, self.text())
    }

    /// The exit code (-1 when a signal ended the run), stdout and stderr.
    pub(crate) fn parts(self) -> (i32, String, String) {
        (self.exit(), self.stdout, self.stderr)
    }
}
