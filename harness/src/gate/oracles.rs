//! What decides whether one plain run of a program passed, besides its output agreeing with the
//! other runs': CTest-style regular expressions on its output (`--pass-regex`, `--fail-regex`,
//! `--will-fail`), a golden output (`--expect FILE`, refreshed with `--bless`) and a checker
//! command (`--check CMD`). A program whose race gives the same wrong answer every run agrees
//! with itself, so variance alone cannot catch it: these oracles can.
//!
//! ```no_run
//! use racegate::gate::oracles::{Oracles, RegexVerdict};
//! let o = Oracles::default().with_regexes(&["Passed".into()], &[], false).unwrap();
//! assert_eq!(o.regex_verdict(1, b"Passed\n"), Some(RegexVerdict::Pass));
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::bytes::Regex;

use crate::errors::{Error, Result};
use crate::proc::watchdog::{self, Deadline, Exit, Output, Spawn};
use crate::source::files;

/// The oracles of a program beyond exit code, hang and variance. Default: none.
#[derive(Clone, Debug, Default)]
pub struct Oracles {
    /// CTest's PASS_REGULAR_EXPRESSION: the run passes when any matches, whatever its exit code.
    pub pass: Vec<Regex>,
    /// CTest's FAIL_REGULAR_EXPRESSION: the run fails when any matches.
    pub fail: Vec<Regex>,
    /// CTest's WILL_FAIL: a run that exited is passed when it would fail, and failed when it
    /// would pass. Signals and deadlines still fail, as in CTest.
    pub will_fail: bool,
    /// The golden output, compared with each run's output after masks.
    pub expect: Option<PathBuf>,
    /// Write the golden output from this run instead of comparing.
    pub bless: bool,
    /// A shell command judging each run's output: exit 0 accepts.
    pub check: Option<String>,
    /// The checker's deadline (default: none set here; the gate passes its own).
    pub check_timeout: Duration,
    /// The output may legitimately differ between runs (`vary = "ok"`): no variance finding.
    pub vary_ok: bool,
    /// How to re-run the gate with `--bless`, for the message of a golden mismatch.
    pub bless_command: String,
}

/// What the regexes and WILL_FAIL say of a run that exited by itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegexVerdict {
    Pass,
    /// The kind of the finding: stable across runs (it names the regex, never the output).
    Fail(String),
}

impl Oracles {
    /// With compiled pass and fail regexes; a bad one is bad input.
    pub fn with_regexes(
        mut self,
        pass: &[String],
        fail: &[String],
        will_fail: bool,
    ) -> Result<Self> {
        let compile = |flag: &str, r: &String| {
            Regex::new(r).map_err(|e| Error::Usage(format!("{flag} `{r}`: {e}")))
        };
        self.pass = pass
            .iter()
            .map(|r| compile("--pass-regex", r))
            .collect::<Result<_>>()?;
        self.fail = fail
            .iter()
            .map(|r| compile("--fail-regex", r))
            .collect::<Result<_>>()?;
        self.will_fail = will_fail;
        Ok(self)
    }

    /// Whether the regex oracle replaces the exit code for runs that exited.
    pub fn decides_exits(&self) -> bool {
        !self.pass.is_empty() || !self.fail.is_empty() || self.will_fail
    }

    /// CTest's rule (`cmCTestRunTest::EndTest`): a pass regex not found, or a fail regex found,
    /// forces failure; otherwise the run passes on exit code 0, or on any exit code when pass
    /// regexes are set; WILL_FAIL then inverts. `output` is stdout and stderr together, as
    /// CTest matches them. `None` when no regex and no WILL_FAIL is set: the exit code decides.
    pub fn regex_verdict(&self, code: i32, output: &[u8]) -> Option<RegexVerdict> {
        let pass_found = self.pass.iter().any(|r| r.is_match(output));
        let fail = self.fail.iter().find(|r| r.is_match(output));
        self.verdict(code, pass_found, fail)
    }

    /// [`Oracles::regex_verdict`] from what a scan of the output found.
    fn verdict(&self, code: i32, pass_found: bool, fail: Option<&Regex>) -> Option<RegexVerdict> {
        if !self.decides_exits() {
            return None;
        }
        let mut why = None;
        if !self.pass.is_empty() && !pass_found {
            why = Some(format!(
                "required regular expression not found: {}",
                shown(&self.pass)
            ));
        }
        if let Some(r) = fail {
            why = Some(format!("fail regular expression found: `{}`", r.as_str()));
        }
        let success = why.is_none() && (code == 0 || !self.pass.is_empty());
        Some(match (success, self.will_fail) {
            (true, false) | (false, true) => RegexVerdict::Pass,
            (true, true) => RegexVerdict::Fail("passes but is expected to fail (WILL_FAIL)".into()),
            (false, false) => {
                RegexVerdict::Fail(why.unwrap_or_else(|| format!("exits with code {code}")))
            }
        })
    }

    /// A line-by-line scan for the regexes, for an output too long to keep whole.
    pub fn scan(&self) -> RegexScan<'_> {
        RegexScan {
            oracles: self,
            pass_found: false,
            fail_found: vec![false; self.fail.len()],
        }
    }

    /// The golden output's text, `None` when the file does not exist yet. Read as a file the
    /// user named: a regular file (never a FIFO that would block), at most
    /// [`files::EXPECT_LIMIT`] bytes.
    pub fn golden(&self) -> Result<Option<Vec<u8>>> {
        let Some(p) = &self.expect else {
            return Ok(None);
        };
        files::read_bytes_if_exists(p, "the expected output (--expect)", files::EXPECT_LIMIT)
    }
}

/// What the regexes found in the lines of an output so far ([`Oracles::scan`]).
pub struct RegexScan<'a> {
    oracles: &'a Oracles,
    pass_found: bool,
    fail_found: Vec<bool>,
}

impl RegexScan<'_> {
    /// Looks at one more line.
    pub fn line(&mut self, line: &[u8]) {
        let o = self.oracles;
        if !self.pass_found {
            self.pass_found = o.pass.iter().any(|r| r.is_match(line));
        }
        for (seen, r) in self.fail_found.iter_mut().zip(&o.fail) {
            *seen = *seen || r.is_match(line);
        }
    }

    /// The verdict on the lines seen ([`Oracles::regex_verdict`]'s rule).
    pub fn verdict(&self, code: i32) -> Option<RegexVerdict> {
        let o = self.oracles;
        let fail = o.fail.iter().zip(&self.fail_found).find(|(_, s)| **s);
        o.verdict(code, self.pass_found, fail.map(|(r, _)| r))
    }
}

fn shown(rs: &[Regex]) -> String {
    rs.iter()
        .map(|r| format!("`{}`", r.as_str()))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// `FILE.new`: where a mismatching output waits to be accepted, beside the golden file (as
/// insta's `.snap.new`), so the committed file is never changed without a person's say.
pub fn pending_path(expect: &Path) -> PathBuf {
    let mut s = expect.as_os_str().to_os_string();
    s.push(".new");
    PathBuf::from(s)
}

/// Writes `bytes` to `path` through a file beside it and a rename, so a killed gate never
/// leaves half a golden file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically_from(path, |w| w.write_all(bytes))
}

/// [`write_atomically`] of what `fill` writes (a long output, masked as it streams).
pub fn write_atomically_from(
    path: &Path,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    // The one atomic write (a temporary beside it, synced, the old mode kept, renamed over);
    // it removes its temporary on failure, so no `.tmp<pid>` is left behind.
    crate::build::compile::write_atomically_from(path, false, fill)
        .map_err(|e| Error::io("writing", path, e))
}

/// What the checker said of one output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckerVerdict {
    Accepted,
    /// Its exit (`exits with code 1`, `killed by signal 9`) and its message.
    Rejected(String, String),
    /// It missed its deadline or could not start: it judged nothing.
    Undecided(String),
}

/// Runs `sh -c CMD` on one output: the output in a file named by `$RACEGATE_OUTPUT` and on
/// stdin, in `cwd`, with the checker's deadline. Its stdout and stderr are its message. A long
/// output is handed over in the file it was spilled to; one not kept whole judges nothing.
pub fn run_checker(cmd: &str, output: &Output, cwd: &Path, timeout: Duration) -> CheckerVerdict {
    let dir = match tempfile::Builder::new().prefix("racegate-check-").tempdir() {
        Ok(d) => d,
        Err(e) => return CheckerVerdict::Undecided(format!("no temporary folder: {e}")),
    };
    let file = match output.spill_path() {
        Some(p) => p.to_path_buf(),
        None if !output.is_complete() => {
            return CheckerVerdict::Undecided(format!(
                "the output ({} bytes) could not be kept whole for the checker: {}",
                output.total(),
                output.spill_error().unwrap_or("it was not asked for")
            ))
        }
        None => {
            let file = dir.path().join("output");
            if let Err(e) = std::fs::write(&file, output.bytes()) {
                return CheckerVerdict::Undecided(format!("could not write the output: {e}"));
            }
            file
        }
    };
    let spawn = Spawn {
        env: vec![("RACEGATE_OUTPUT".into(), file.display().to_string())],
        cwd: Some(cwd.to_path_buf()),
        stdin: Some(file.clone()),
        ..Spawn::default()
    };
    // What the checker says is bounded too: a checker that echoes a long output back is shown
    // by its first lines.
    let mut said = Output::bounded();
    let args: Vec<OsString> = vec!["-c".into(), cmd.into()];
    let f = match watchdog::run(
        Path::new("/bin/sh"),
        &args,
        &spawn,
        Deadline {
            idle: timeout,
            total: Some(timeout),
        },
        |l| said.push_line(l),
    ) {
        Ok(f) => f,
        Err(e) => return CheckerVerdict::Undecided(e.to_string()),
    };
    said.finish();
    let said = said.text() + &f.stderr;
    let message = said.trim().lines().take(20).collect::<Vec<_>>().join("\n");
    match f.exit {
        Exit::Code(0) => CheckerVerdict::Accepted,
        Exit::Code(c) => CheckerVerdict::Rejected(format!("exits with code {c}"), message),
        Exit::Signal(s) => CheckerVerdict::Rejected(format!("killed by signal {s}"), message),
        Exit::TimedOut => CheckerVerdict::Undecided(format!(
            "the checker missed its deadline of {:.0} s",
            timeout.as_secs_f64()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(pass: &[&str], fail: &[&str], will_fail: bool) -> Oracles {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Oracles::default()
            .with_regexes(&s(pass), &s(fail), will_fail)
            .unwrap()
    }

    /// The table of CTest's documentation (properties PASS_REGULAR_EXPRESSION,
    /// FAIL_REGULAR_EXPRESSION, WILL_FAIL): the pass regex overrides the exit code, the fail
    /// regex wins over both, WILL_FAIL inverts what the others decided.
    #[test]
    fn ctest_regex_semantics() {
        use RegexVerdict::Pass;
        assert_eq!(o(&[], &[], false).regex_verdict(1, b"x"), None);
        assert_eq!(
            o(&["ok"], &[], false).regex_verdict(3, b"all ok"),
            Some(Pass)
        );
        assert!(
            matches!(o(&["ok"], &[], false).regex_verdict(0, b"bad"), Some(RegexVerdict::Fail(k)) if k.contains("required"))
        );
        assert!(
            matches!(o(&["ok"], &["bad"], false).regex_verdict(0, b"ok bad"), Some(RegexVerdict::Fail(k)) if k.contains("`bad`"))
        );
        assert!(matches!(
            o(&[], &["bad"], false).regex_verdict(0, b"bad"),
            Some(RegexVerdict::Fail(_))
        ));
        assert_eq!(
            o(&[], &["bad"], false).regex_verdict(0, b"good"),
            Some(Pass)
        );
        assert!(
            matches!(o(&[], &["bad"], false).regex_verdict(2, b"good"), Some(RegexVerdict::Fail(k)) if k == "exits with code 2")
        );
        assert_eq!(o(&[], &[], true).regex_verdict(1, b""), Some(Pass));
        assert!(
            matches!(o(&[], &[], true).regex_verdict(0, b""), Some(RegexVerdict::Fail(k)) if k.contains("WILL_FAIL"))
        );
        assert_eq!(o(&["ok"], &[], true).regex_verdict(0, b"nope"), Some(Pass));
        assert_eq!(o(&[], &["bad"], true).regex_verdict(0, b"bad"), Some(Pass));
    }

    #[test]
    fn bad_regex_is_bad_input() {
        let e = Oracles::default().with_regexes(&["(".into()], &[], false);
        assert!(matches!(e, Err(Error::Usage(m)) if m.contains("--pass-regex")));
    }

    #[test]
    fn checker_gets_the_output_in_a_file_and_on_stdin() {
        let d = std::env::temp_dir();
        let output = |b: &[u8]| {
            let mut o = Output::bounded();
            o.push(b);
            o.finish();
            o
        };
        let t = Duration::from_secs(10);
        let cmd = r#"grep -q 51200 "$RACEGATE_OUTPUT" && grep -q 51200 && echo fine"#;
        assert_eq!(
            run_checker(cmd, &output(b"counter: 51200\n"), &d, t),
            CheckerVerdict::Accepted
        );
        let cmd = r#"echo "wrong: $(cat)"; exit 3"#;
        assert_eq!(
            run_checker(cmd, &output(b"counter: 1"), &d, t),
            CheckerVerdict::Rejected("exits with code 3".into(), "wrong: counter: 1".into())
        );
        assert!(matches!(
            run_checker("sleep 5", &output(b""), &d, Duration::from_millis(300)),
            CheckerVerdict::Undecided(_)
        ));
    }
}
