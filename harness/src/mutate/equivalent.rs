//! The equivalents file: survivors a person has read and found harmless, each with the reason.
//!
//! It sits next to the kernel, named after it: `kernels/reduce_sequential.cu` ->
//! `kernels/reduce_sequential.cu.equivalent.toml`.
//!
//! ```toml
//! [[equivalent]]
//! id = "remove-barrier:my_kernel.cu:0123abcd"
//! reason = "the barrier after the last shared-memory access: no thread reads what another wrote after it"
//! ```
//!
//! An entry without a reason (or with an empty one), an unknown key or a repeated id is bad input
//! naming the file and line (exit 2). An id that is no longer among the file's mutants is
//! stale: reported as a warning, never an error, so the file can be tidied later. Equivalent
//! mutants are not run and leave the score (a second, independent reading must agree with each
//! reason before it is committed).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::errors::{Error, Result};
use crate::source::files;

/// What the equivalents file of `foo.cu` is called: `foo.cu` + this.
pub const EQUIVALENTS_SUFFIX: &str = ".equivalent.toml";

/// The equivalents file of the kernel at `kernel`.
pub fn equivalents_path(kernel: &Path) -> PathBuf {
    let mut s = kernel.as_os_str().to_owned();
    s.push(EQUIVALENTS_SUFFIX);
    PathBuf::from(s)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    equivalent: Vec<Spanned<RawEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: Spanned<String>,
    reason: Option<Spanned<String>>,
}

/// One marked survivor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub reason: String,
    pub line: usize,
}

/// A kernel's equivalents file, read (empty when there is none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Equivalents {
    /// The file as reports name it.
    pub file: String,
    pub entries: Vec<Entry>,
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl Equivalents {
    /// Reads the file at `path` (`shown` is how messages name it); no file: no entries.
    pub fn load(path: &Path, shown: &str) -> Result<Equivalents> {
        if !path.exists() {
            return Ok(Equivalents {
                file: shown.to_string(),
                entries: Vec::new(),
            });
        }
        let text = files::read_text(path, "the equivalents file", files::TEXT_LIMIT)?;
        Equivalents::parse(&text, shown)
    }

    /// Parses the text of an equivalents file named `shown`.
    pub fn parse(text: &str, shown: &str) -> Result<Equivalents> {
        let err = |line: usize, message: String| Error::Toml {
            path: shown.to_string(),
            line,
            message,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            err(
                e.span().map(|s| line_of(text, s.start)).unwrap_or(1),
                e.message().to_string(),
            )
        })?;
        let mut entries: Vec<Entry> = Vec::new();
        for e in raw.equivalent {
            let line = line_of(text, e.span().start);
            let e = e.into_inner();
            let id_line = line_of(text, e.id.span().start);
            let id = e.id.into_inner();
            let reason = match e.reason {
                Some(r) if !r.get_ref().trim().is_empty() => r.into_inner(),
                Some(r) => {
                    return Err(err(
                        line_of(text, r.span().start),
                        format!("`{id}` has an empty reason: say why the mutant is harmless"),
                    ))
                }
                None => {
                    return Err(err(
                        line,
                        format!(
                            "`{id}` has no reason: an equivalent mutant needs `reason = \"...\"` \
                             saying why it is harmless"
                        ),
                    ))
                }
            };
            if let Some(first) = entries.iter().find(|x| x.id == id) {
                return Err(err(
                    id_line,
                    format!("`{id}` is marked twice (first at line {})", first.line),
                ));
            }
            entries.push(Entry {
                id,
                reason,
                line: id_line,
            });
        }
        Ok(Equivalents {
            file: shown.to_string(),
            entries,
        })
    }

    /// The reason `id` is marked equivalent, if it is.
    pub fn reason(&self, id: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.id == id)
            .map(|e| e.reason.as_str())
    }

    /// Entries whose id is not among `ids`: `file:line: ...` warnings.
    pub fn stale<'a>(&self, ids: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| !ids.clone().any(|i| i == e.id))
            .map(|e| {
                format!(
                    "{}:{}: `{}` is no mutant of this kernel any more (stale: remove it)",
                    self.file, e.line, e.id
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_needs_a_reason() {
        let e = Equivalents::parse(
            "[[equivalent]]\nid = \"a\"\nreason = \"b\"\n\n[[equivalent]]\nid = \"c\"\n",
            "k.cu.equivalent.toml",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("k.cu.equivalent.toml:5: `c` has no reason"),
            "{e}"
        );
        assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
        let ok = Equivalents::parse("[[equivalent]]\nid = \"a\"\nreason = \"b\"\n", "f").unwrap();
        assert_eq!(ok.reason("a"), Some("b"));
        assert_eq!(
            ok.stale(["x"].into_iter()),
            ["f:2: `a` is no mutant of this kernel any more (stale: remove it)"]
        );
    }
}
