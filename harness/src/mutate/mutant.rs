//! A mutant: one operator's change at one site of one file, with a stable id, and its diff.
//!
//! **Ids.** `OPERATOR:FILE:HASH`, e.g. `remove-barrier:reduce_sequential.cu:5c1e09a2`: `FILE` is
//! the file's name (no folders), `HASH` eight hex digits of the FNV-1a hash of the operator, the
//! file's name, the enclosing function's name, the normalized text of the lines the site stands
//! on (code tokens only, joined by one space: comments, spacing and line numbers do not count)
//! and the site's occurrence among the sites of that operator with the same function and text,
//! in source order. The same rule as the gate's fingerprints: an edit elsewhere
//! in the file (a line added above, a comment, another function) keeps every id; editing the
//! site's own line, or a same-looking line before it in the same function, changes it.

use std::ops::Range;

use serde::Serialize;

use super::code::Code;
use super::operators::Operator;

/// One mutant of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Mutant {
    pub id: String,
    pub operator: Operator,
    /// The file as reports name it (relative to the root).
    pub file: String,
    /// The function the site is in (empty at file scope).
    pub function: String,
    /// The 1-based line the change starts on.
    pub line: usize,
    /// The bytes of the original text that change.
    #[serde(skip)]
    pub span: Range<usize>,
    /// What they were.
    pub original: String,
    /// What they become.
    pub replacement: String,
}

impl Mutant {
    /// The mutated source.
    pub fn apply(&self, src: &str) -> String {
        let mut out = String::with_capacity(src.len() + self.replacement.len());
        out.push_str(&src[..self.span.start]);
        out.push_str(&self.replacement);
        out.push_str(&src[self.span.end..]);
        out
    }

    /// A unified diff (two lines of context) from `src` to the mutant, headed by the file and id.
    pub fn diff(&self, src: &str) -> String {
        let mutated = self.apply(src);
        similar::TextDiff::from_lines(src, &mutated)
            .unified_diff()
            .context_radius(2)
            .header(
                &format!("a/{}", self.file),
                &format!("b/{} ({})", self.file, self.id),
            )
            .to_string()
    }
}

/// The file's name, without folders.
fn base_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// Every mutant of `src` (reported as `file`) by the operators `ops`, ordered by operator (as
/// `ops` lists them) and then by position.
pub fn mutants(file: &str, src: &str, ops: &[Operator]) -> Vec<Mutant> {
    let code = Code::new(src);
    let name = base_name(file);
    let mut out = Vec::new();
    for &op in ops {
        let mut seen: std::collections::HashMap<(String, String), usize> = Default::default();
        for site in op.sites(&code) {
            let first = &code.toks[site.tokens.start];
            let last = &code.toks[site.tokens.end - 1];
            let function = code
                .func_of(site.tokens.start)
                .map(|f| f.name.clone())
                .unwrap_or_default();
            let context = code.normalized(first.line..=last.line);
            let n = seen.entry((function.clone(), context.clone())).or_default();
            let key = format!("{op}\n{name}\n{function}\n{context}\n{n}");
            *n += 1;
            // bounded: the id shows the hash's low 32 bits; the truncation is the point.
            #[allow(clippy::cast_possible_truncation)]
            let hash = crate::build::compile::fingerprint(&key) as u32;
            out.push(Mutant {
                id: format!("{op}:{name}:{hash:08x}"),
                operator: op,
                file: file.to_string(),
                function,
                line: src[..site.span.start].matches('\n').count() + 1,
                original: src[site.span.clone()].to_string(),
                span: site.span,
                replacement: site.replacement,
            });
        }
    }
    out
}

/// Parses `--operators a,b` (names as [`Operator::name`] gives them); `all` or nothing: all.
pub fn parse_operators(list: &[String]) -> Result<Vec<Operator>, String> {
    if list.is_empty() || list.iter().any(|s| s == "all") {
        return Ok(Operator::ALL.to_vec());
    }
    let mut out = Vec::new();
    for s in list {
        match Operator::from_name(s.trim()) {
            Some(o) if !out.contains(&o) => out.push(o),
            Some(_) => {}
            None => {
                return Err(format!(
                    "unknown operator `{s}`; the operators: {}",
                    Operator::ALL.map(|o| o.name()).join(", ")
                ))
            }
        }
    }
    out.sort();
    Ok(out)
}
