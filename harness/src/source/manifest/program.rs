//! `[[program]]` tables of `racegate.toml`: existing CUDA programs gated with the manifest's
//! kernels, into the same baseline and report. Every key is checked here, and an error names
//! the manifest, the line and the key, as for kernels.
//!
//! ```toml
//! [[program]]
//! name = "counter"                       # the subject in reports and in the baseline
//! command = "build/counter"              # relative to the manifest's folder, or a name in PATH
//! args = ["--blocks", "200"]
//! cwd = "build"                          # default: the manifest's folder
//! env = { BLOCK = "256" }
//! masks = ["seed [0-9]+"]                # besides the built-in masks
//! expect = "program/counter.expected"    # golden output, after masks
//! check = "grep -q 'counter: 51200' \"$RACEGATE_OUTPUT\""
//! pass_regex = ["counter: 51200"]        # and fail_regex, will_fail: CTest's meaning
//! runs = 3
//! timeout = 10.0                         # one plain run, seconds
//! sanitizers = ["racecheck", "globalcheck"] # default: the gate's --tools
//! vary = "ok"                            # output may differ between runs: no variance finding
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::spec::ProgramSpec;
use crate::errors::{Error, Result};

/// The tools by name (as `sanitize::Tool` names them; not imported: the manifest is read before
/// anything runs and depends on nothing that runs; `tests/host/readme.rs` keeps the two lists
/// equal).
pub const TOOLS: [&str; 8] = [
    "racecheck",
    "memcheck",
    "synccheck",
    "initcheck",
    "globalcheck",
    "sharedcheck",
    "fencecheck",
    "streamcheck",
];

/// One `[[program]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProgram {
    name: Spanned<String>,
    command: Spanned<String>,
    #[serde(default)]
    args: Vec<String>,
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    masks: Vec<Spanned<String>>,
    expect: Option<Spanned<String>>,
    check: Option<Spanned<String>>,
    check_timeout: Option<Spanned<f64>>,
    #[serde(default)]
    pass_regex: Vec<Spanned<String>>,
    #[serde(default)]
    fail_regex: Vec<Spanned<String>>,
    #[serde(default)]
    will_fail: bool,
    runs: Option<Spanned<i64>>,
    timeout: Option<Spanned<f64>>,
    sanitizers: Option<Spanned<Vec<String>>>,
    vary: Option<Spanned<String>>,
}

/// Checks the `[[program]]` tables of the manifest `shown` (text `text`, folder `dir`).
pub fn programs(
    shown: &str,
    text: &str,
    dir: &Path,
    raw: Vec<Spanned<RawProgram>>,
) -> Result<Vec<ProgramSpec>> {
    let at = |span: Range<usize>, key: &str, message: String| Error::Toml {
        path: shown.to_string(),
        line: text[..span.start.min(text.len())].matches('\n').count() + 1,
        message: format!("`{key}`: {message}"),
    };
    let regex = |r: &Spanned<String>, key: &str| {
        regex::bytes::Regex::new(r.get_ref())
            .map(|_| r.get_ref().clone())
            .map_err(|e| at(r.span(), key, format!("not a regex: {e}")))
    };
    let seconds = |s: &Option<Spanned<f64>>, key: &str| -> Result<Option<f64>> {
        match s {
            Some(v) if !(v.get_ref().is_finite() && *v.get_ref() > 0.0) => Err(at(
                v.span(),
                key,
                "a deadline must be a number of seconds above 0".into(),
            )),
            Some(v) => Ok(Some(*v.get_ref())),
            None => Ok(None),
        }
    };
    let mut out: Vec<ProgramSpec> = Vec::new();
    for p in raw {
        let p = p.into_inner();
        let name = p.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(at(p.name.span(), "name", "must not be empty".into()));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(at(
                p.name.span(),
                "name",
                format!("program `{name}` is declared twice"),
            ));
        }
        let command = p.command.get_ref().trim();
        if command.is_empty() {
            return Err(at(p.command.span(), "command", "must not be empty".into()));
        }
        // A path is the team's file beside the manifest; a bare name is a tool in PATH.
        let command = if command.contains('/') {
            dir.join(command).display().to_string()
        } else {
            command.to_string()
        };
        let runs = match &p.runs {
            Some(r) => match u32::try_from(*r.get_ref()) {
                Ok(n) if (1..=10_000).contains(&n) => Some(n),
                _ => return Err(at(r.span(), "runs", "must be 1 to 10000".into())),
            },
            None => None,
        };
        if let Some(s) = &p.sanitizers {
            for t in s.get_ref() {
                if !TOOLS.contains(&t.as_str()) {
                    return Err(at(
                        s.span(),
                        "sanitizers",
                        format!("unknown sanitizer `{t}` ({})", TOOLS.join(", ")),
                    ));
                }
            }
        }
        let vary_ok = match &p.vary {
            Some(v) if v.get_ref() == "ok" => true,
            Some(v) => {
                return Err(at(
                    v.span(),
                    "vary",
                    format!("`{}`: the one value is \"ok\"", v.get_ref()),
                ))
            }
            None => false,
        };
        if let Some(c) = &p.check {
            if c.get_ref().trim().is_empty() {
                return Err(at(c.span(), "check", "must not be empty".into()));
            }
        }
        out.push(ProgramSpec {
            name,
            command,
            args: p.args,
            cwd: p
                .cwd
                .map(|c| dir.join(c.get_ref()))
                .unwrap_or_else(|| dir.to_path_buf()),
            env: p.env.into_iter().collect(),
            masks: p
                .masks
                .iter()
                .map(|m| regex(m, "masks"))
                .collect::<Result<_>>()?,
            expect: p.expect.map(|e| dir.join(e.get_ref())),
            check: p.check.map(Spanned::into_inner),
            check_timeout: seconds(&p.check_timeout, "check_timeout")?,
            pass_regex: p
                .pass_regex
                .iter()
                .map(|r| regex(r, "pass_regex"))
                .collect::<Result<_>>()?,
            fail_regex: p
                .fail_regex
                .iter()
                .map(|r| regex(r, "fail_regex"))
                .collect::<Result<_>>()?,
            will_fail: p.will_fail,
            runs,
            timeout: seconds(&p.timeout, "timeout")?,
            sanitizers: p.sanitizers.map(Spanned::into_inner),
            vary_ok,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::errors::Error;
    use crate::source::manifest::Manifest;
    use std::path::Path;

    /// `(line, message)` of the error the manifest `text` gives.
    fn error(text: &str) -> (usize, String) {
        match Manifest::parse(Path::new("/p/racegate.toml"), text) {
            Err(Error::Toml {
                path,
                line,
                message,
            }) => {
                assert_eq!(path, "/p/racegate.toml");
                (line, message)
            }
            other => panic!("expected a TOML error, got {other:?}"),
        }
    }

    const OK: &str = "[[program]]\nname = \"counter\"\ncommand = \"build/counter\"\n";

    #[test]
    fn a_program_alone_is_a_manifest() {
        let text = format!(
            "{OK}args = [\"64\"]\ncwd = \"build\"\nenv = {{ BLOCK = \"256\" }}\nmasks = [\"seed \\\\d+\"]\n\
             expect = \"counter.expected\"\ncheck = \"true\"\npass_regex = [\"ok\"]\nwill_fail = true\n\
             runs = 5\ntimeout = 2.5\nsanitizers = [\"racecheck\"]\nvary = \"ok\"\n"
        );
        let m = Manifest::parse(Path::new("/p/racegate.toml"), &text).unwrap();
        let p = &m.programs[0];
        assert!(m.kernels.is_empty());
        assert_eq!(p.command, "/p/build/counter");
        assert_eq!(p.cwd, Path::new("/p/build"));
        assert_eq!(p.env, [("BLOCK".to_string(), "256".to_string())]);
        assert_eq!(p.expect.as_deref(), Some(Path::new("/p/counter.expected")));
        assert_eq!(
            (p.runs, p.timeout, p.will_fail, p.vary_ok),
            (Some(5), Some(2.5), true, true)
        );
    }

    #[test]
    fn every_key_is_checked_with_its_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("runs = 0\n", 4, "`runs`"),
            ("timeout = -1.0\n", 4, "`timeout`"),
            ("check_timeout = 0.0\n", 4, "`check_timeout`"),
            ("vary = \"sometimes\"\n", 4, "`vary`"),
            (
                "sanitizers = [\"racechek\"]\n",
                4,
                "unknown sanitizer `racechek`",
            ),
            ("masks = [\"(\"]\n", 4, "`masks`"),
            ("pass_regex = [\"ok\", \"[\"]\n", 4, "`pass_regex`"),
            ("fail_regex = [\"(\"]\n", 4, "`fail_regex`"),
            ("check = \" \"\n", 4, "`check`"),
            ("colour = 1\n", 4, "colour"),
        ];
        for (extra, line, needle) in cases {
            let (l, m) = error(&format!("{OK}{extra}"));
            assert_eq!(l, *line, "{extra}: {m}");
            assert!(m.contains(needle), "{extra}: {m}");
        }
        let (l, m) = error(&format!("{OK}\n{OK}"));
        assert!(l == 6 && m.contains("declared twice"), "{l} {m}");
        let (l, m) = error("[[program]]\nname = \"x\"\ncommand = \"\"\n");
        assert!(l == 3 && m.contains("`command`"), "{l} {m}");
        let (_, m) = error("[[program]]\nname = \"x\"\n");
        assert!(m.contains("command"), "{m}");
        let (_, m) = error("");
        assert!(m.contains("[[program]]"), "{m}");
    }
}
