//! Exercise specs (`grading/exercises/NAME.toml`) and rubrics (`grading/rubric.toml`).
//!
//! A spec tells students the kernel's exact name and signature, the launch shape the grader
//! uses and the size range; it tells racegate which exercise family generates inputs and checks
//! results exactly. Errors name the file, line and key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::errors::{Error, Result};
use crate::source::catalog::Entry;
use crate::source::exercises;
use crate::source::files;

/// Where specs live, relative to the project root.
pub const SPEC_DIR: &str = "grading/exercises";
/// The default rubric, relative to the project root.
pub const RUBRIC: &str = "grading/rubric.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    exercise: RawExercise,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExercise {
    name: String,
    title: String,
    entry: String,
    signature: String,
    #[serde(default)]
    also: Vec<String>,
    launch: String,
    sizes: [u32; 2],
    family: String,
    #[serde(default)]
    params: BTreeMap<String, i64>,
    reference: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
    /// The course section to read when an item fails (e.g. "2.8 동기화 I"), shown beside
    /// each fix hint.
    #[serde(default)]
    see: Option<String>,
}

/// One exercise.
#[derive(Clone, Debug)]
// `path`, `title` and `launch` are for students reading the spec file: the grader checks that
// they are there, and the tests read them back.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub struct Spec {
    pub path: PathBuf,
    pub name: String,
    pub title: String,
    pub entry: String,
    /// Parameter types, in order, e.g. `["const float*", "int"]`.
    pub params: Vec<String>,
    pub signature: String,
    /// Other kernels the file must define: (name, parameter types).
    pub also: Vec<(String, Vec<String>)>,
    pub launch: String,
    pub sizes: (u32, u32),
    pub family: String,
    pub family_params: BTreeMap<String, i64>,
    /// `file.cu:kernel` of the course's solution, relative to the root.
    pub reference: Option<(String, String)>,
    /// Headers submissions may `#include` (served from memory; every other include is refused).
    pub headers: Vec<String>,
    /// The course section a failing student should read (`see` in the exercise file).
    pub see: Option<String>,
}

impl Spec {
    /// The entry as the exercise family sees it.
    pub fn entry(&self) -> Entry {
        Entry {
            name: self.entry.clone(),
            params: self.family_params.clone(),
        }
    }

    /// Loads `root/grading/exercises/NAME.toml`.
    pub fn find(root: &Path, name: &str) -> Result<Spec> {
        let path = root.join(SPEC_DIR).join(format!("{name}.toml"));
        if !path.is_file() {
            // ignored: only the message's list of known exercises; the error is the missing one
            let known = list(root).unwrap_or_default();
            return Err(Error::Usage(format!(
                "no exercise `{name}`; known exercises: {}",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            )));
        }
        Spec::load(&path)
    }

    pub fn load(path: &Path) -> Result<Spec> {
        let text = files::read_text(path, "the exercise", files::TEXT_LIMIT)?;
        Spec::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Spec> {
        let shown = path.display().to_string();
        let err = |line: usize, m: String| Error::Toml {
            path: shown.clone(),
            line,
            message: m,
        };
        let line_of = |key: &str| {
            text.lines()
                .position(|l| {
                    l.trim_start().starts_with(&format!("{key} "))
                        || l.trim_start().starts_with(&format!("{key}="))
                })
                .map(|i| i + 1)
                .unwrap_or(1)
        };
        let raw: RawSpec = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1);
            err(line, e.message().to_string())
        })?;
        let x = raw.exercise;
        let family = exercises::by_name(&x.family).ok_or_else(|| {
            err(
                line_of("family"),
                format!(
                    "`family`: unknown family `{}`; known: {}",
                    x.family,
                    exercises::names().join(", ")
                ),
            )
        })?;
        family
            .check_params(&x.params)
            .map_err(|m| err(line_of("params"), format!("`params`: {m}")))?;
        let params = parse_params(&x.signature)
            .map_err(|m| err(line_of("signature"), format!("`signature`: {m}")))?;
        let mut also = Vec::new();
        for a in &x.also {
            let (name, rest) = a.split_once('(').ok_or_else(|| {
                err(
                    line_of("also"),
                    format!("`also`: `{a}` is not `name(params)`"),
                )
            })?;
            let inner = rest.strip_suffix(')').ok_or_else(|| {
                err(
                    line_of("also"),
                    format!("`also`: `{a}` is not `name(params)`"),
                )
            })?;
            also.push((
                name.trim().to_string(),
                parse_params(inner).map_err(|m| err(line_of("also"), format!("`also`: {m}")))?,
            ));
        }
        if x.sizes[0] == 0 || x.sizes[0] > x.sizes[1] {
            return Err(err(
                line_of("sizes"),
                format!("`sizes`: need 1 <= lo <= hi, got {:?}", x.sizes),
            ));
        }
        let reference = match &x.reference {
            None => None,
            Some(r) => Some(
                r.rsplit_once(':')
                    .map(|(f, k)| (f.to_string(), k.to_string()))
                    .ok_or_else(|| {
                        err(
                            line_of("reference"),
                            format!("`reference`: `{r}` is not `file.cu:kernel`"),
                        )
                    })?,
            ),
        };
        if !x
            .entry
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(err(
                line_of("entry"),
                format!("`entry`: `{}` is not a C identifier", x.entry),
            ));
        }
        for h in &x.headers {
            let bad = h.is_empty()
                || h.starts_with('/')
                || h.split('/').any(|part| part == ".." || part.is_empty())
                || h.contains(['"', '<', '>', '\\', '\n']);
            if bad {
                return Err(err(
                    line_of("headers"),
                    format!("`headers`: `{h}` is not a header name such as `cuda_fp16.h`"),
                ));
            }
        }
        Ok(Spec {
            path: path.to_path_buf(),
            name: x.name,
            title: x.title,
            entry: x.entry,
            params,
            signature: x.signature,
            also,
            launch: x.launch,
            sizes: (x.sizes[0], x.sizes[1]),
            family: x.family,
            family_params: x.params,
            reference,
            headers: x.headers,
            see: x.see.filter(|s| !s.trim().is_empty()),
        })
    }
}

/// The names of all specs under `root`.
pub fn list(root: &Path) -> Result<Vec<String>> {
    let dir = root.join(SPEC_DIR);
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io("listing", &dir, e))?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "toml")
                .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))?
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Normalizes a parameter list to its types: `const float *A, int n` -> `["const float*", "int"]`.
pub fn parse_params(list: &str) -> std::result::Result<Vec<String>, String> {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return Ok(Vec::new());
    }
    list.split(',')
        .map(|p| {
            let p = p.trim().replace('*', " * ");
            let words: Vec<&str> = p.split_whitespace().collect();
            if words.is_empty() {
                return Err("an empty parameter".to_string());
            }
            // The last word is the parameter's name unless the declaration ends in `*` or is a
            // bare type (`int`).
            let is_type_word = |w: &str| {
                matches!(
                    w,
                    "*" | "const"
                        | "volatile"
                        | "unsigned"
                        | "signed"
                        | "int"
                        | "float"
                        | "double"
                        | "char"
                        | "short"
                        | "long"
                        | "bool"
                        | "size_t"
                        | "__restrict__"
                )
            };
            let keep = if words.len() > 1 && !is_type_word(words[words.len() - 1]) {
                &words[..words.len() - 1]
            } else {
                &words[..]
            };
            let ty: Vec<&str> = keep
                .iter()
                .copied()
                .filter(|w| *w != "__restrict__")
                .collect();
            Ok(ty.join(" ").replace(" *", "*"))
        })
        .collect()
}

/// The names of the graded items, in the order grades list them (`score::Item::ALL`).
pub const ITEMS: [&str; 9] = [
    "compiles",
    "correct",
    "racecheck",
    "synccheck",
    "memcheck",
    "initcheck",
    "globalcheck",
    "sharedcheck",
    "performance",
];

/// When an item is graded: compiles, then correct, then the tools (side by side), then
/// performance. An item may require only items of an earlier stage.
fn stage(name: &str) -> u8 {
    match name {
        "compiles" => 0,
        "correct" => 1,
        "performance" => 3,
        _ => 2,
    }
}

/// Points per item.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    pub compiles: f64,
    pub correct: f64,
    pub racecheck: f64,
    pub synccheck: f64,
    pub memcheck: f64,
    pub initcheck: f64,
    /// Optional (0 unless the rubric names it): no race on global memory (globalcheck).
    #[serde(default)]
    pub globalcheck: f64,
    /// Optional (0 unless the rubric names it): no read of unwritten shared memory and no
    /// atomic racing a plain shared access (sharedcheck).
    #[serde(default)]
    pub sharedcheck: f64,
    #[serde(default)]
    pub performance: f64,
    /// How the correctness item scores wrong trials: all-or-nothing unless the rubric opts into
    /// proportional credit (`correct_credit = "proportional"`).
    #[serde(default)]
    pub correct_credit: CorrectCredit,
    #[serde(default)]
    pub performance_rule: PerformanceRule,
    /// What each item requires (`[requires]`, e.g. `racecheck = ["correct"]`): an item whose
    /// requirement did not pass scores 0 and is not run. Checked by [`Rubric::load`]: every
    /// name is an item the rubric grades, and there is no cycle.
    #[serde(default)]
    pub requires: BTreeMap<String, Vec<String>>,
}

/// How the correctness item scores wrong trials.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CorrectCredit {
    /// Any wrong, faulted or hung trial fails the item: a kernel wrong in some runs is a wrong
    /// kernel (intermittent wrong results are what races look like).
    #[default]
    AllOrNothing,
    /// The fraction of trials that were correct.
    Proportional,
}

/// How the performance item is scored.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PerformanceRule {
    pub threshold: f64,
    pub zero_at: f64,
}

impl Default for PerformanceRule {
    fn default() -> Self {
        PerformanceRule {
            threshold: 1.25,
            zero_at: 3.0,
        }
    }
}

impl Rubric {
    pub fn load(path: &Path) -> Result<Rubric> {
        let text = files::read_text(path, "the rubric", files::TEXT_LIMIT)?;
        let r: Rubric = toml::from_str(&text).map_err(|e| Error::Toml {
            path: path.display().to_string(),
            line: e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1),
            message: e.message().to_string(),
        })?;
        for (k, v) in [
            ("compiles", r.compiles),
            ("correct", r.correct),
            ("racecheck", r.racecheck),
            ("synccheck", r.synccheck),
            ("memcheck", r.memcheck),
            ("initcheck", r.initcheck),
            ("globalcheck", r.globalcheck),
            ("sharedcheck", r.sharedcheck),
            ("performance", r.performance),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::Usage(format!(
                    "{}: `{k}` must be a number >= 0, got {v}",
                    path.display()
                )));
            }
        }
        r.check_requires()
            .map_err(|why| Error::Usage(format!("{}: {why}", path.display())))?;
        if r.performance_rule.threshold >= r.performance_rule.zero_at
            || r.performance_rule.threshold < 1.0
        {
            return Err(Error::Usage(format!(
                "{}: performance_rule needs 1 <= threshold < zero_at",
                path.display()
            )));
        }
        Ok(r)
    }

    /// `[requires]` names only known items, requires only items that are graded (an item the
    /// rubric gives 0 points is not run, so nothing could depend on it) and graded before the
    /// item that requires them, and has no cycle (an item that needs itself, directly or around
    /// others, could never run).
    pub fn check_requires(&self) -> std::result::Result<(), String> {
        let unknown = |n: &str| {
            format!(
                "[requires]: unknown item `{n}` (items: {})",
                ITEMS.join(", ")
            )
        };
        for (item, needs) in &self.requires {
            for n in std::iter::once(item).chain(needs) {
                if self.points_of(n).is_none() {
                    return Err(unknown(n));
                }
            }
        }
        // Depth-first search for a cycle, naming it.
        fn visit<'a>(
            r: &'a Rubric,
            n: &'a str,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> std::result::Result<(), String> {
            if let Some(i) = path.iter().position(|p| *p == n) {
                let mut cycle = path[i..].to_vec();
                cycle.push(n);
                return Err(format!(
                    "[requires] has a cycle: {} (such items could never be judged)",
                    cycle.join(" -> ")
                ));
            }
            if !done.insert(n) {
                return Ok(());
            }
            path.push(n);
            for m in r.requires.get(n).into_iter().flatten() {
                visit(r, m, path, done)?;
            }
            path.pop();
            Ok(())
        }
        let mut done = BTreeSet::new();
        for item in self.requires.keys() {
            visit(self, item, &mut Vec::new(), &mut done)?;
        }
        for (item, needs) in &self.requires {
            if self.points_of(item).is_none() {
                return Err(unknown(item));
            }
            for n in needs {
                let Some(points) = self.points_of(n) else {
                    return Err(unknown(n));
                };
                if n != item && stage(n) >= stage(item) {
                    return Err(format!(
                        "[requires]: `{item}` cannot require `{n}`: an item may require only \
                         items graded before it (compiles, then correct, then the tools side by \
                         side, then performance)"
                    ));
                }
                if points <= 0.0 {
                    return Err(format!(
                        "[requires]: `{n}` has 0 points, so it is not graded: give it points or \
                         leave it out of `{item} = [...]`"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The points of the item named `name`; `None` for no such item.
    pub fn points_of(&self, name: &str) -> Option<f64> {
        Some(match name {
            "compiles" => self.compiles,
            "correct" => self.correct,
            "racecheck" => self.racecheck,
            "synccheck" => self.synccheck,
            "memcheck" => self.memcheck,
            "initcheck" => self.initcheck,
            "globalcheck" => self.globalcheck,
            "sharedcheck" => self.sharedcheck,
            "performance" => self.performance,
            _ => return None,
        })
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn max(&self) -> f64 {
        self.compiles
            + self.correct
            + self.racecheck
            + self.synccheck
            + self.memcheck
            + self.initcheck
            + self.globalcheck
            + self.sharedcheck
            + self.performance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_lists_reduce_to_types() {
        assert_eq!(
            parse_params("const float* A, const float *B, float * C, int M").unwrap(),
            ["const float*", "const float*", "float*", "int"]
        );
        assert_eq!(
            parse_params("unsigned int* __restrict__ bins, int").unwrap(),
            ["unsigned int*", "int"]
        );
        assert_eq!(
            parse_params("const unsigned char *data").unwrap(),
            ["const unsigned char*"]
        );
        assert_eq!(parse_params("").unwrap(), Vec::<String>::new());
        assert!(parse_params("int a, , int b").is_err());
    }

    fn rubric_with(requires: &str) -> std::result::Result<(), String> {
        let text = format!(
            "compiles = 10\ncorrect = 40\nracecheck = 15\nsynccheck = 10\nmemcheck = 15\n\
             initcheck = 10\nperformance = 5\n[requires]\n{requires}"
        );
        let r: Rubric = toml::from_str(&text).map_err(|e| e.to_string())?;
        r.check_requires()
    }

    #[test]
    fn requirements_are_checked_for_names_points_order_and_cycles() {
        assert_eq!(
            rubric_with("racecheck = [\"correct\"]\nperformance = [\"correct\", \"racecheck\"]\n"),
            Ok(())
        );
        for (requires, says) in [
            ("racecheck = [\"corect\"]\n", "unknown item `corect`"),
            ("racechek = [\"correct\"]\n", "unknown item `racechek`"),
            ("correct = [\"correct\"]\n", "cycle: correct -> correct"),
            (
                "racecheck = [\"synccheck\"]\nsynccheck = [\"racecheck\"]\n",
                "cycle: racecheck -> synccheck -> racecheck",
            ),
            (
                "correct = [\"racecheck\"]\n",
                "`correct` cannot require `racecheck`",
            ),
            (
                "racecheck = [\"globalcheck\"]\n",
                "`racecheck` cannot require `globalcheck`",
            ),
            (
                "performance = [\"globalcheck\"]\n",
                "`globalcheck` has 0 points",
            ),
        ] {
            let why = rubric_with(requires).expect_err(requires);
            assert!(why.contains(says), "{requires:?}: {why}");
        }
    }

    #[test]
    fn the_shipped_rubric_requires_correctness_of_every_tool_and_performance() {
        let pkg = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo names the package");
        let path = Path::new(&pkg).join("../grading/rubric.toml");
        let r = Rubric::load(&path).expect("the shipped rubric loads");
        assert_eq!(r.correct_credit, CorrectCredit::AllOrNothing);
        for item in [
            "racecheck",
            "synccheck",
            "memcheck",
            "initcheck",
            "performance",
        ] {
            assert_eq!(
                r.requires.get(item),
                Some(&vec!["correct".to_string()]),
                "{item}"
            );
        }
    }
}
