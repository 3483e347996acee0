//! Every way a source asks the preprocessor to read a file ([`file_access`]), and the names
//! it includes literally ([`literal_includes`]).

use super::tokens::{strip_comments, tokens, Kind, Token};

/// A way a source file asks the preprocessor to read another file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileAccess {
    pub line: usize,
    /// What was written: `#include`, `%:include`, `__has_include`, a trigraph, ...
    pub what: String,
    /// The file named, when a `#include` names it literally (`"a.h"` or `<a.h>`).
    pub target: Option<String>,
}

/// Directives that read a file (`#include` and its relatives of other compilers).
const FILE_DIRECTIVES: [&str; 4] = ["include", "include_next", "import", "embed"];
/// Operators that look for a file.
const FILE_PROBES: [&str; 3] = ["__has_include", "__has_include_next", "__has_embed"];
/// Pragmas that name a file (`#pragma GCC dependency "f"` stats it; `include_alias` renames
/// includes), also inside a `_Pragma("...")` string.
const FILE_PRAGMAS: [&str; 2] = ["dependency", "include_alias"];

/// Every place `src` could make the preprocessor open a file: a `#`, `%:` or `??=` followed by
/// `include`, `include_next`, `import` or `embed` (wherever it stands: inside `#if 0` and inside
/// a macro definition too, and whatever follows it, a macro or a name), every
/// `__has_include`-like probe, and pragmas that name a file (`#pragma GCC dependency`,
/// `include_alias`, or a string holding one for `_Pragma`). Trigraphs that make a `#` or a line
/// splice (`??=`, `??/`) are refused as such: a compiler may or may not read them, so the scan
/// cannot know. Comments are not looked into; strings only for pragma names.
pub fn file_access(src: &str) -> Vec<FileAccess> {
    let mut out = Vec::new();
    for (i, l) in src.lines().enumerate() {
        for tri in ["??=", "??/"] {
            if l.contains(tri) {
                out.push(FileAccess {
                    line: i + 1,
                    what: format!("the trigraph `{tri}`"),
                    target: None,
                });
            }
        }
    }
    let code: Vec<Token> = tokens(src).filter(|t| t.kind != Kind::Comment).collect();
    for (i, t) in code.iter().enumerate() {
        if t.is_punct("#") {
            if let Some(next) = code
                .get(i + 1)
                .filter(|n| n.kind == Kind::Ident && FILE_DIRECTIVES.contains(&n.text.as_str()))
            {
                out.push(FileAccess {
                    line: t.line,
                    what: format!("`{}{}`", t.text, next.text),
                    target: (next.text == "include")
                        .then(|| literal_target(src, next.line, &code[i + 2..]))
                        .flatten(),
                });
            }
        } else if t.is_ident("pragma")
            && code[i + 1..]
                .iter()
                .take_while(|n| n.line == t.line)
                .any(|n| n.kind == Kind::Ident && FILE_PRAGMAS.contains(&n.text.as_str()))
        {
            out.push(FileAccess {
                line: t.line,
                what: "a `#pragma` that names a file".into(),
                target: None,
            });
        } else if t.kind == Kind::Str && FILE_PRAGMAS.iter().any(|p| t.text.contains(p)) {
            out.push(FileAccess {
                line: t.line,
                what: "a string that names a file-reading pragma (for `_Pragma`)".into(),
                target: None,
            });
        } else if t.kind == Kind::Ident && FILE_PROBES.contains(&t.text.as_str()) {
            out.push(FileAccess {
                line: t.line,
                what: format!("`{}`", t.text),
                target: None,
            });
        } else if t.kind == Kind::Ident
            && t.text.len() >= 3
            && t.text.starts_with("__h")
            && FILE_PROBES
                .iter()
                .any(|p| p.starts_with(t.text.as_str()) && p.len() > t.text.len())
        {
            // A piece of a probe's name, to be pasted into one (`CAT(__has_, include)`).
            out.push(FileAccess {
                line: t.line,
                what: format!("`{}` (a piece of `__has_include`)", t.text),
                target: None,
            });
        }
    }
    // Token pasting can build a probe's name from pieces split anywhere, across levels of
    // macros (`CAT(_, _has_include)`, `CAT3(__h, as_incl, ude)`): with a `##` in the source, a
    // probe whose whole name the source's identifiers can spell, piece after piece, is refused.
    if let Some(paste) = code.iter().find(|t| t.is_punct("##")) {
        let pieces: Vec<&str> = code
            .iter()
            .filter(|t| t.kind == Kind::Ident)
            .map(|t| t.text.as_str())
            .collect();
        for probe in FILE_PROBES {
            if spelled_by(probe, &pieces) && !out.iter().any(|a| a.what == format!("`{probe}`")) {
                out.push(FileAccess {
                    line: paste.line,
                    what: format!("`##` with identifiers that paste into `{probe}`"),
                    target: None,
                });
            }
        }
    }
    out.sort_by_key(|a| a.line);
    out
}

/// Whether `word` is a concatenation of some of `pieces` (each usable any number of times).
fn spelled_by(word: &str, pieces: &[&str]) -> bool {
    // reach[i]: the first i bytes of `word` are spelled.
    let mut reach = vec![false; word.len() + 1];
    reach[0] = true;
    for i in 0..word.len() {
        if !reach[i] {
            continue;
        }
        for p in pieces {
            if !p.is_empty() && word[i..].starts_with(p) {
                reach[i + p.len()] = true;
            }
        }
    }
    reach[word.len()]
}

/// The file a `#include` names literally, from the tokens after `include`: `"name"` (no
/// prefix) or `<name>` on one line, exactly as written; `None` for anything else (a macro).
fn literal_target(src: &str, line: usize, after: &[Token]) -> Option<String> {
    let first = after.first().filter(|t| t.line == line)?;
    if first.kind == Kind::Str && first.text.starts_with('"') && first.text.ends_with('"') {
        let inner = &first.text[1..first.text.len() - 1];
        return (!inner.is_empty() && !inner.contains('\\')).then(|| inner.to_string());
    }
    if first.is_punct("<") && first.text == "<" {
        let close = after
            .iter()
            .take_while(|t| t.line == first.line)
            .find(|t| t.is_punct(">") && t.text == ">")?;
        let inner = src.get(first.span.end..close.span.start)?;
        return (!inner.is_empty() && !inner.contains(['\\', '\n'])).then(|| inner.to_string());
    }
    None
}

/// The file names of the `#include "name"` and `#include <name>` directives of `src` written
/// literally (a macro after `#include` is left out), for reading headers racegate serves.
pub fn literal_includes(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in strip_comments(src).lines() {
        let l = line.trim_start();
        let Some(rest) = l.strip_prefix('#').or_else(|| l.strip_prefix("%:")) else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        let close = match rest.chars().next() {
            Some('"') => '"',
            Some('<') => '>',
            _ => continue,
        };
        if let Some(end) = rest[1..].find(close) {
            out.push(rest[1..1 + end].to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, String)> {
        tokens(src).map(|t| (t.kind, t.text)).collect()
    }

    #[test]
    fn escapes_prefixes_and_raw_strings() {
        let t = kinds(r#"u8"a\"b" L'\'' R"x(a )" b)x" c LR"(z)""#);
        assert_eq!(
            t.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
            [Kind::Str, Kind::Char, Kind::Str, Kind::Ident, Kind::Str]
        );
        assert_eq!(t[2].1, r#"R"x(a )" b)x""#);
        // A raw string spans lines, and a `#include` inside it is text.
        let src = "auto s = R\"(\n#include \"/etc/passwd\"\n)\";\nint k;";
        assert!(file_access(src).is_empty(), "{:?}", file_access(src));
        assert_eq!(tokens(src).last().unwrap().line, 4);
    }

    #[test]
    fn an_unclosed_literal_ends_at_its_line() {
        let src = "char c = 'x;\n#include \"/etc/passwd\"\n";
        assert_eq!(file_access(src)[0].line, 2);
        let src = "int x = 1'000; int y = 0x1'f;\n#include <a>\n";
        let t: Vec<String> = tokens(src).map(|t| t.text).collect();
        assert!(t.contains(&"1'000".to_string()) && t.contains(&"0x1'f".to_string()));
        assert_eq!(file_access(src)[0].line, 2);
    }

    #[test]
    fn splices_join_lines_and_keep_original_line_numbers() {
        let src = "int a;\n#inc\\\nlude \"/etc/passwd\"\nint b\\\nc;\n";
        let t: Vec<(usize, String)> = tokens(src).map(|t| (t.line, t.text)).collect();
        assert_eq!(t[3], (2, "#".into()));
        assert_eq!(t[4], (2, "include".into()));
        assert_eq!(t[6], (4, "int".into()));
        assert_eq!(t[7], (4, "bc".into()), "a splice inside a name joins it");
        assert_eq!(t[7].0, 4);
        let access = file_access(src);
        assert_eq!((access[0].line, access[0].what.as_str()), (2, "`#include`"));
        // CRLF splices too.
        assert_eq!(file_access("#\\\r\ninclude <x>\r\n").len(), 1);
    }

    #[test]
    fn every_way_to_open_a_file_is_found() {
        for (src, what) in [
            ("#include \"/proc/self/environ\"\n", "`#include`"),
            ("  #  include <stdio.h>\n", "`#include`"),
            ("%:include \"/etc/passwd\"\n", "`%:include`"),
            ("#define F \"/etc/passwd\"\n#include F\n", "`#include`"),
            ("# /* hidden */ include \"x\"\n", "`#include`"),
            (
                "#if __has_include(\"/etc/passwd\")\n#endif\n",
                "`__has_include`",
            ),
            ("#define H __has_include\n", "`__has_include`"),
            (
                "#define CAT(a, b) a##b\n#if CAT(__has_, include)(\"/etc/passwd\")\n#endif\n",
                "`__has_` (a piece of `__has_include`)",
            ),
            ("#\x0binclude \"/etc/passwd\"\n", "`#include`"),
            ("#\x01include \"/etc/passwd\"\n", "`#include`"),
            ("#include_next <x>\n", "`#include_next`"),
            ("#embed \"/etc/passwd\"\n", "`#embed`"),
            ("#import \"x\"\n", "`#import`"),
            ("??=include \"/etc/passwd\"\n", "the trigraph `??=`"),
            ("#if 0\n#include \"x\"\n#endif\n", "`#include`"),
            (
                "#pragma GCC dependency \"/etc/shadow\"\n",
                "a `#pragma` that names a file",
            ),
            (
                "_Pragma(\"GCC dependency \\\"/etc/shadow\\\"\")\n",
                "a string that names a file-reading pragma (for `_Pragma`)",
            ),
        ] {
            let found = file_access(src);
            assert!(
                found.iter().any(|a| a.what == what),
                "{src:?}: {found:?}, wanted {what}"
            );
        }
        for clean in [
            "// #include \"x\"\nint a;\n",
            "/* #include \"x\" */\n",
            "const char* s = \"#include <x>\";\n",
            "int include = 1; int a = include;\n",
            "#define S(x) #x\nS(include)\n",
            "#pragma once\n#define A 1\n#pragma unroll\n",
        ] {
            assert!(
                file_access(clean).is_empty(),
                "{clean:?}: {:?}",
                file_access(clean)
            );
        }
    }

    #[test]
    fn literal_include_targets_are_read_and_macros_are_not() {
        let t = |src: &str| file_access(src).remove(0).target;
        assert_eq!(t("#include <cuda_fp16.h>\n"), Some("cuda_fp16.h".into()));
        assert_eq!(t("%:include \"a/b.h\"\n"), Some("a/b.h".into()));
        assert_eq!(
            t("#include <cuda/std/atomic>\n"),
            Some("cuda/std/atomic".into())
        );
        assert_eq!(t("#include H\n"), None);
        assert_eq!(t("#include <a.h\n>\n"), None);
        assert_eq!(t("#include L\"a.h\"\n"), None);
        assert_eq!(t("#include_next <a.h>\n"), None);
        assert_eq!(t("#include\n\"a.h\"\n"), None);
    }

    #[test]
    fn literal_includes_are_listed() {
        assert_eq!(
            literal_includes("#include \"a.h\"\n  # include <b/c.h> // x\n#include M\n"),
            ["a.h", "b/c.h"]
        );
    }
}
