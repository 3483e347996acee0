//! Checks on a submitted `.cu` file before anything runs: readable, not empty, not binary, UTF-8,
//! not huge; the kernel exists under the exact name, is `extern "C"`, and has the exact
//! parameter types of the spec. Every rejection is a message a student can act on.

use std::path::Path;

use super::spec::{parse_params, Spec};

/// Largest submission accepted, in bytes.
pub const MAX_BYTES: u64 = 256 * 1024;

/// Why a submission cannot be graded at all, or why its kernel does not fit the spec.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "problem", content = "detail", rename_all = "snake_case")]
pub enum Rejection {
    Unreadable(String),
    Empty,
    TooLarge(u64),
    Binary,
    NotUtf8 {
        offset: usize,
    },
    MissingKernel {
        wanted: String,
        closest: Option<String>,
        found: Vec<String>,
    },
    NotExternC {
        name: String,
        line: usize,
    },
    WrongSignature {
        name: String,
        line: usize,
        expected: Vec<String>,
        found: Vec<String>,
    },
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Unreadable(e) => write!(f, "the file cannot be read: {e}"),
            Rejection::Empty => write!(f, "the file is empty"),
            Rejection::TooLarge(n) => write!(f, "the file is {n} bytes; submissions are limited to {MAX_BYTES} bytes"),
            Rejection::Binary => write!(f, "the file is binary (it contains NUL bytes), not CUDA source"),
            Rejection::NotUtf8 { offset } => write!(f, "the file is not UTF-8 text (invalid byte at offset {offset})"),
            Rejection::MissingKernel { wanted, closest, found } => {
                write!(f, "no kernel named `{wanted}`")?;
                if let Some(c) = closest {
                    write!(f, "; did you mean `{c}`? (the name must match exactly)")?;
                }
                if found.is_empty() {
                    write!(f, "; the file defines no __global__ function")
                } else {
                    write!(f, "; kernels found: {}", found.join(", "))
                }
            }
            Rejection::NotExternC { name, line } => write!(
                f,
                "line {line}: `{name}` must be declared `extern \"C\" __global__` so the grader can find it by name"
            ),
            Rejection::WrongSignature { name, line, expected, found } => write!(
                f,
                "line {line}: `{name}` takes ({}) but the exercise requires ({})",
                found.join(", "),
                expected.join(", ")
            ),
        }
    }
}

/// Reads a submission, refusing what is not a reasonable CUDA source file.
pub fn read(path: &Path) -> Result<String, Rejection> {
    let meta = std::fs::metadata(path).map_err(|e| Rejection::Unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(Rejection::Unreadable("not a regular file".into()));
    }
    if meta.len() > MAX_BYTES {
        return Err(Rejection::TooLarge(meta.len()));
    }
    let bytes = std::fs::read(path).map_err(|e| Rejection::Unreadable(e.to_string()))?;
    check_bytes(&bytes).map(str::to_string)
}

/// The byte-level checks of [`read`], on bytes already in memory.
pub fn check_bytes(bytes: &[u8]) -> Result<&str, Rejection> {
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Rejection::TooLarge(bytes.len() as u64));
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Rejection::Empty);
    }
    if bytes.contains(&0) {
        return Err(Rejection::Binary);
    }
    std::str::from_utf8(bytes).map_err(|e| Rejection::NotUtf8 {
        offset: e.valid_up_to(),
    })
}

/// A `__global__` function found in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDecl {
    pub name: String,
    pub params: Vec<String>,
    pub extern_c: bool,
    pub line: usize,
}

/// Blanks out comments and string literals (keeping newlines), so declarations can be found.
fn strip(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                out.push(if b[i] == b'\n' { '\n' } else { ' ' });
                i += 1;
            }
            i += 2;
        } else {
            let c = source[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every `__global__ void name(params)` in the file.
pub fn kernels(source: &str) -> Vec<KernelDecl> {
    let text = strip(source);
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("__global__") {
        let at = from + pos;
        from = at + "__global__".len();
        let rest = &text[from..];
        let Some(open) = rest.find('(') else { break };
        let head: Vec<&str> = rest[..open].split_whitespace().collect();
        let Some(name) = head.last().map(|s| s.to_string()) else {
            continue;
        };
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut depth = 0;
        let mut close = None;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { break };
        let before = &text[at.saturating_sub(40)..at];
        let extern_c = before.contains("extern \"C\"")
            || before.contains("extern\"C\"")
            || in_extern_block(&text[..at]);
        out.push(KernelDecl {
            name,
            params: parse_params(&rest[open + 1..close]).unwrap_or_default(),
            extern_c,
            line: text[..at].matches('\n').count() + 1,
        });
    }
    out
}

/// Inside an `extern "C" { ... }` block that is still open at the end of `prefix`.
fn in_extern_block(prefix: &str) -> bool {
    let Some(start) = prefix.rfind("extern \"C\"") else {
        return false;
    };
    let after = prefix[start + 10..].trim_start();
    if !after.starts_with('{') {
        return false;
    }
    let opened = after.matches('{').count();
    let closed = after.matches('}').count();
    opened > closed
}

/// Checks the kernels the spec requires: present, `extern "C"`, exact parameter types.
pub fn check_kernels(spec: &Spec, source: &str) -> Result<(), Rejection> {
    let found = kernels(source);
    let wanted =
        std::iter::once((spec.entry.clone(), spec.params.clone())).chain(spec.also.iter().cloned());
    for (name, params) in wanted {
        let Some(k) = found.iter().find(|k| k.name == name) else {
            let closest = found
                .iter()
                .map(|k| (strsim::levenshtein(&k.name, &name), &k.name))
                .filter(|(d, n)| *d <= 3 || n.contains(name.as_str()) || name.contains(n.as_str()))
                .min()
                .map(|(_, n)| n.clone());
            return Err(Rejection::MissingKernel {
                wanted: name,
                closest,
                found: found.iter().map(|k| k.name.clone()).collect(),
            });
        };
        if !k.extern_c {
            return Err(Rejection::NotExternC { name, line: k.line });
        }
        if k.params != params {
            return Err(Rejection::WrongSignature {
                name,
                line: k.line,
                expected: params,
                found: k.params.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_are_found_past_comments_and_templates() {
        let src = "// __global__ void fake(int)\n/* __global__ void also_fake() */\ntemplate <int T> __device__ void f();\nextern \"C\" __global__ void k(const float *a,\n    int n) {}\n__global__ void g(int* x) {}\n";
        let ks = kernels(src);
        assert_eq!(ks.len(), 2, "{ks:?}");
        assert_eq!(
            ks[0],
            KernelDecl {
                name: "k".into(),
                params: vec!["const float*".into(), "int".into()],
                extern_c: true,
                line: 4
            }
        );
        assert_eq!(
            (ks[1].name.as_str(), ks[1].extern_c, ks[1].line),
            ("g", false, 6)
        );
    }

    #[test]
    fn extern_blocks_count() {
        let ks = kernels("extern \"C\" {\n__global__ void k(int n) {}\n}\n");
        assert!(ks[0].extern_c);
    }

    #[test]
    fn bad_bytes_are_named() {
        assert_eq!(check_bytes(b"  \n"), Err(Rejection::Empty));
        assert_eq!(check_bytes(b"abc\0def"), Err(Rejection::Binary));
        assert_eq!(
            check_bytes(b"ok \xff\xfe"),
            Err(Rejection::NotUtf8 { offset: 3 })
        );
        assert_eq!(
            check_bytes(&vec![b'a'; MAX_BYTES as usize + 1]),
            Err(Rejection::TooLarge(MAX_BYTES + 1))
        );
        assert_eq!(check_bytes(b"int x;"), Ok("int x;"));
    }
}
