//! CTest suites as gate targets (`gate --ctest BUILD_DIR [-R REGEX]`): the tests come from
//! `ctest --show-only=json-v1` run in the build folder (CTest applies `-R` itself), and each
//! becomes a [`Target`] with its command, WORKING_DIRECTORY, ENVIRONMENT and TIMEOUT, judged
//! with its PASS/FAIL_REGULAR_EXPRESSION and WILL_FAIL by CTest's rule
//! ([`super::oracles::Oracles::regex_verdict`]). Tests run one after another in CTest's listed
//! order, so fixtures and resource locks see the order they were written for.
//!
//! ```no_run
//! let json = std::fs::read_to_string("ctest.json").unwrap();
//! let tests = racegate::gate::ctest::parse(&json).unwrap();
//! println!("{} tests", tests.len());
//! ```

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::finding::{GateConfig, GateRun};
use super::program;
use super::target::Target;
use crate::errors::{Error, Result};
use crate::proc::watchdog::{self, Deadline, Exit};

/// One test as CTest declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct CTest {
    pub name: String,
    /// Empty when CTest has no command for it (a test not built for this configuration).
    pub command: Vec<String>,
    pub pass_regex: Vec<String>,
    pub fail_regex: Vec<String>,
    pub will_fail: bool,
    pub timeout: Option<f64>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    /// DISABLED: CTest lists it but does not run it; neither does the gate.
    pub disabled: bool,
    /// 0 for a FIXTURES_SETUP test, 2 for a FIXTURES_CLEANUP one, 1 otherwise: CTest runs a
    /// fixture's setup before the tests that need it and its cleanup after them.
    pub phase: u8,
}

#[derive(Deserialize)]
struct Doc {
    kind: String,
    version: Version,
    #[serde(default)]
    tests: Vec<RawTest>,
}

#[derive(Deserialize)]
struct Version {
    major: u32,
}

#[derive(Deserialize)]
struct RawTest {
    name: String,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    properties: Vec<Property>,
}

#[derive(Deserialize)]
struct Property {
    name: String,
    value: serde_json::Value,
}

/// A property's value as a list of strings: CTest writes list properties as JSON arrays, and
/// a single value as a string.
fn strings(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        serde_json::Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Parses the output of `ctest --show-only=json-v1` (CMake's documented format: `kind`
/// `ctestInfo`, `version.major` 1, `tests` with `name`, `command` and `properties`).
pub fn parse(json: &str) -> Result<Vec<CTest>> {
    let bad = |why: String| Error::Usage(format!("ctest --show-only=json-v1: {why}"));
    let doc: Doc =
        serde_json::from_str(json).map_err(|e| Error::input("ctest --show-only=json-v1", e))?;
    if doc.kind != "ctestInfo" || doc.version.major != 1 {
        return Err(bad(format!(
            "kind `{}` version {}, not ctestInfo version 1",
            doc.kind, doc.version.major
        )));
    }
    let mut tests = Vec::new();
    for t in doc.tests {
        let mut c = CTest {
            name: t.name,
            command: t.command,
            pass_regex: Vec::new(),
            fail_regex: Vec::new(),
            will_fail: false,
            timeout: None,
            cwd: None,
            env: Vec::new(),
            disabled: false,
            phase: 1,
        };
        for p in t.properties {
            match p.name.as_str() {
                "PASS_REGULAR_EXPRESSION" => c.pass_regex = strings(&p.value),
                "FAIL_REGULAR_EXPRESSION" => c.fail_regex = strings(&p.value),
                "WILL_FAIL" => c.will_fail = p.value.as_bool().unwrap_or(false),
                // CTest: 0 means no timeout.
                "TIMEOUT" => c.timeout = p.value.as_f64().filter(|t| *t > 0.0),
                "DISABLED" => c.disabled = p.value.as_bool().unwrap_or(false),
                "FIXTURES_SETUP" => c.phase = 0,
                "FIXTURES_CLEANUP" => c.phase = c.phase.max(2),
                "WORKING_DIRECTORY" => c.cwd = p.value.as_str().map(PathBuf::from),
                "ENVIRONMENT" => {
                    c.env = strings(&p.value)
                        .into_iter()
                        .filter_map(|kv| {
                            kv.split_once('=')
                                .map(|(k, v)| (k.to_string(), v.to_string()))
                        })
                        .collect()
                }
                _ => {}
            }
        }
        tests.push(c);
    }
    // Stable: otherwise CTest's listed order, which a serial `ctest` run follows.
    tests.sort_by_key(|t| t.phase);
    Ok(tests)
}

/// `ctest` to run: `$RACEGATE_CTEST` when set, else `ctest` through `PATH`.
fn ctest_program() -> Result<PathBuf> {
    match std::env::var_os("RACEGATE_CTEST") {
        Some(p) => Ok(PathBuf::from(p)),
        None => program::resolve("ctest".as_ref())
            .map_err(|_| Error::Child("ctest not found in PATH (or RACEGATE_CTEST)".into())),
    }
}

/// The tests of `build_dir`, filtered by CTest's own `-R`. Zero tests is bad input: a gate
/// that ran nothing must not pass.
pub fn discover(build_dir: &Path, regex: Option<&str>) -> Result<Vec<CTest>> {
    if !build_dir.join("CTestTestfile.cmake").is_file() {
        return Err(Error::Usage(format!(
            "{} has no CTestTestfile.cmake: not a CMake build folder with tests",
            build_dir.display()
        )));
    }
    let ctest = ctest_program()?;
    let mut args: Vec<OsString> = vec!["--show-only=json-v1".into()];
    if let Some(r) = regex {
        args.extend(["-R".into(), r.into()]);
    }
    let spawn = watchdog::Spawn {
        cwd: Some(build_dir.to_path_buf()),
        ..Default::default()
    };
    let mut out = Vec::new();
    let t = Duration::from_secs(120);
    let f = watchdog::run(
        &ctest,
        &args,
        &spawn,
        Deadline {
            idle: t,
            total: Some(t),
        },
        |l| {
            out.extend_from_slice(l);
            out.push(b'\n');
        },
    )?;
    if f.exit != Exit::Code(0) {
        return Err(Error::Child(format!(
            "{} --show-only=json-v1 failed ({:?}): {}",
            ctest.display(),
            f.exit,
            f.stderr.trim()
        )));
    }
    let tests = parse(&String::from_utf8_lossy(&out))?;
    if tests.is_empty() {
        return Err(Error::Usage(format!(
            "ctest found no test in {}{}",
            build_dir.display(),
            regex
                .map(|r| format!(" matching -R {r}"))
                .unwrap_or_default()
        )));
    }
    Ok(tests)
}

/// Gates every test: its command under the sanitizers and plainly, judged by its properties
/// on top of the gate's own oracles. `on_test` hears each test's name as it starts.
pub fn run_ctest(
    tests: &[CTest],
    root: &Path,
    cfg: &GateConfig,
    mut on_test: impl FnMut(&str),
) -> Result<GateRun> {
    let start = std::time::Instant::now();
    let mut all = GateRun::default();
    for t in tests {
        on_test(&t.name);
        all.subjects.push(t.name.clone());
        if t.disabled {
            all.notes
                .push(format!("{}: DISABLED in CTest, not run", t.name));
            continue;
        }
        if t.command.is_empty() {
            all.mark_inconclusive(
                &t.name,
                "exit",
                "CTest has no command for it (not built for this configuration?)".into(),
            );
            continue;
        }
        let mut c = cfg.clone();
        let o = &cfg.oracles;
        let mut pass: Vec<String> = o.pass.iter().map(|r| r.as_str().to_string()).collect();
        let mut fail: Vec<String> = o.fail.iter().map(|r| r.as_str().to_string()).collect();
        pass.extend(t.pass_regex.iter().cloned());
        fail.extend(t.fail_regex.iter().cloned());
        c.oracles = o
            .clone()
            .with_regexes(&pass, &fail, o.will_fail || t.will_fail)
            .map_err(|e| Error::Usage(format!("test {}: {e}", t.name)))?;
        let target = Target {
            subject: t.name.clone(),
            argv: t.command.iter().map(OsString::from).collect(),
            cwd: t.cwd.clone(),
            env: t.env.clone(),
            timeout: t.timeout.map(Duration::from_secs_f64),
        };
        let r = program::run_target(&target, root, &c)?;
        all.absorb(r);
    }
    all.tidy();
    all.seconds = start.elapsed().as_secs_f64();
    Ok(all)
}

#[cfg(test)]
mod tests {
    /// Output that is not JSON is bad input (exit 2) whose cause, the parser's error with its
    /// line and column, is kept and printed once.
    #[test]
    fn output_that_is_not_json_keeps_the_parsers_reason() {
        let e = super::parse("{\"kind\": \"ctestInfo\",\n").unwrap_err();
        let shown = e.assert_parse_cause::<serde_json::Error>();
        assert!(
            shown.starts_with("ctest --show-only=json-v1: EOF"),
            "{shown}"
        );
        assert_eq!(shown.matches("line 2 column").count(), 1, "{shown}");
    }
}
