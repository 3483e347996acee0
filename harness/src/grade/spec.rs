//! Exercise specs (`grading/exercises/NAME.toml`) and rubrics (`grading/rubric.toml`).
//!
//! A spec tells students the kernel's exact name and signature, the launch shape the grader
//! uses and the size range; it tells racegate which exercise family generates inputs and checks
//! results exactly. Errors name the file, line and key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::errors::{Error, Result};
use crate::source::catalog::Entry;
use crate::source::exercises;
use crate::source::files;

/// Where specs live, relative to the project root.
pub const SPEC_DIR: &str = "grading/exercises";

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
}
