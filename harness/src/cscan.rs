//! The one C/C++ token scanner: comments, string and character literals (with their `L`, `u8`,
//! `u`, `U` prefixes), raw strings, numbers, identifiers, punctuators and digraphs, after line
//! splices are joined, with each token's line in the original file. It serves every reader of
//! source text that must not be fooled by what a comment or a string holds: the refusal of
//! file-system access in graded submissions ([`file_access`]), the declared signature of a kernel,
//! fingerprints of normalized source lines ([`normalized_lines`]) and mutation operators (each
//! token's byte span in the original text).
//!
//! It is a scanner, not a preprocessor: it does not expand macros or evaluate `#if`, so whoever
//! uses it for a security decision must decide on what is written (a `#include` inside `#if 0`
//! counts). An unterminated string or character literal ends at the end of its line, as a
//! compiler's does, so no literal can hide a following line from the scan.
//!
//! ```
//! use racegate::cscan::{tokens, Kind};
//! let src = "int x = 1; // a comment\n%:define S \"/* not a comment\"\n";
//! let code: Vec<String> = tokens(src)
//!     .filter(|t| t.kind != Kind::Comment)
//!     .map(|t| t.canonical().to_string())
//!     .collect();
//! assert_eq!(code, ["int", "x", "=", "1", ";", "#", "define", "S", "\"/* not a comment\""]);
//! ```

use std::ops::Range;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    /// A preprocessing number (`0x1f`, `1'000`, `1e+5f`, `.5`).
    Number,
    /// A string literal, raw or not, with its prefix (`u8"x"`, `R"(x)"`).
    Str,
    /// A character literal with its prefix (`'a'`, `L'\n'`).
    Char,
    Punct,
    /// `// ...` or `/* ... */`.
    Comment,
    /// A character that starts no token (a stray `\`, `@`, a backtick).
    Other,
}

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    /// As written, with line splices removed.
    pub text: String,
    /// The 1-based line of the original file its first character is on.
    pub line: usize,
    /// Its bytes in the original file (splices inside it included).
    pub span: Range<usize>,
    /// The first token of its line (only whitespace, and comments, before it since the last
    /// newline): where a `#` starts a directive.
    pub first_on_line: bool,
}

impl Token {
    /// The token as the compiler reads it: a digraph as the punctuator it stands for
    /// (`%:` -> `#`, `<:` -> `[`), anything else as written.
    pub fn canonical(&self) -> &str {
        if self.kind != Kind::Punct {
            return &self.text;
        }
        match self.text.as_str() {
            "%:" => "#",
            "%:%:" => "##",
            "<:" => "[",
            ":>" => "]",
            "<%" => "{",
            "%>" => "}",
            t => t,
        }
    }

    /// An identifier spelled `name`.
    pub fn is_ident(&self, name: &str) -> bool {
        self.kind == Kind::Ident && self.text == name
    }

    /// The punctuator `p` (digraphs count as what they stand for).
    pub fn is_punct(&self, p: &str) -> bool {
        self.kind == Kind::Punct && self.canonical() == p
    }
}

/// Punctuators, longest first within each first character's group (maximal munch).
const PUNCTS: [&str; 50] = [
    "%:%:", "...", "<<=", ">>=", "->*", "<=>", "::", "->", "++", "--", "<<", ">>", "<=", ">=",
    "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", ".*", "<:", ":>",
    "<%", "%>", "%:", "{", "}", "[", "]", "(", ")", ";", ":", "?", ".", "+", "-", "*", "/", "%",
    "^", "&",
];
const SINGLE: &str = "|~!=<>,#";

/// The text with line splices (`\` then a newline) removed, and for each of its bytes the
/// offset of that byte in the original.
fn splice(src: &str) -> (String, Vec<usize>) {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut map = Vec::with_capacity(b.len() + 1);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let nl = match (b.get(i + 1), b.get(i + 2)) {
                (Some(b'\n'), _) => Some(2),
                (Some(b'\r'), Some(b'\n')) => Some(3),
                _ => None,
            };
            if let Some(n) = nl {
                i += n;
                continue;
            }
        }
        out.push(b[i]);
        map.push(i);
        i += 1;
    }
    map.push(b.len());
    // Only ASCII bytes are removed, so the text stays UTF-8.
    (String::from_utf8(out).expect("splicing keeps UTF-8"), map)
}

/// The tokens of `src`, comments included, in order.
pub fn tokens(src: &str) -> Tokens {
    let (text, map) = splice(src);
    let mut line_starts = vec![0];
    line_starts.extend(
        src.bytes()
            .enumerate()
            .filter(|(_, c)| *c == b'\n')
            .map(|(i, _)| i + 1),
    );
    Tokens {
        text,
        map,
        line_starts,
        pos: 0,
        first_on_line: true,
    }
}

/// The iterator [`tokens`] returns.
pub struct Tokens {
    text: String,
    map: Vec<usize>,
    line_starts: Vec<usize>,
    pos: usize,
    first_on_line: bool,
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || !c.is_ascii()
}

fn ident_char(c: char) -> bool {
    ident_start(c) || c.is_ascii_digit()
}

impl Tokens {
    fn line_of(&self, original: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= original)
    }

    fn at(&self, i: usize) -> Option<char> {
        self.text.get(i..).and_then(|s| s.chars().next())
    }

    /// The end of a quoted literal opened at `open` (a `"` or `'`): just past the closing quote,
    /// or at the end of the line when it is never closed.
    fn quoted_end(&self, open: usize) -> usize {
        let b = self.text.as_bytes();
        let quote = b[open];
        let mut i = open + 1;
        while i < b.len() {
            match b[i] {
                b'\\' if i + 1 < b.len() && b[i + 1] != b'\n' => i += 2,
                b'\n' => return i,
                c if c == quote => return i + 1,
                _ => i += 1,
            }
        }
        b.len()
    }

    /// The end of a raw string whose `"` is at `quote`: `"delim( ... )delim"`. `None` when the
    /// delimiter is not a valid one (then it is no raw string).
    fn raw_end(&self, quote: usize) -> Option<usize> {
        let rest = &self.text[quote + 1..];
        let open = rest.find('(')?;
        let delim = &rest[..open];
        if delim.len() > 16
            || delim
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '\\' | ')' | '"'))
        {
            return None;
        }
        let close = format!("){delim}\"");
        let body = quote + 1 + open + 1;
        Some(
            self.text[body..]
                .find(&close)
                .map_or(self.text.len(), |k| body + k + close.len()),
        )
    }

    /// The end of a preprocessing number starting at `i`.
    fn number_end(&self, mut i: usize) -> usize {
        let b = self.text.as_bytes();
        i += 1;
        while i < b.len() {
            let c = b[i];
            if (c == b'+' || c == b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P') {
                i += 1;
            } else if c == b'\'' && b.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric()) {
                i += 2;
            } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
                i += 1;
            } else {
                break;
            }
        }
        i
    }

    /// Where a string or character literal with an encoding prefix starting at `i` ends, and
    /// its kind; `None` when the identifier at `i` is not such a prefix.
    fn prefixed_literal(&self, i: usize) -> Option<(usize, Kind)> {
        let rest = &self.text[i..];
        for prefix in ["u8R", "uR", "UR", "LR", "R", "u8", "u", "U", "L"] {
            let Some(after) = rest.strip_prefix(prefix) else {
                continue;
            };
            let quote = i + prefix.len();
            if prefix.ends_with('R') && after.starts_with('"') {
                if let Some(end) = self.raw_end(quote) {
                    return Some((end, Kind::Str));
                }
            } else if !prefix.ends_with('R') && after.starts_with('"') {
                return Some((self.quoted_end(quote), Kind::Str));
            } else if !prefix.ends_with('R') && after.starts_with('\'') {
                return Some((self.quoted_end(quote), Kind::Char));
            }
        }
        None
    }
}

impl Iterator for Tokens {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let b = self.text.as_bytes();
        // Whitespace.
        while self.pos < b.len() && (b[self.pos] as char).is_ascii_whitespace() {
            if b[self.pos] == b'\n' {
                self.first_on_line = true;
            }
            self.pos += 1;
        }
        let start = self.pos;
        let c = self.at(start)?;
        let rest = &self.text[start..];
        let (end, kind) = if rest.starts_with("//") {
            (
                rest.find('\n').map_or(b.len(), |k| start + k),
                Kind::Comment,
            )
        } else if let Some(body) = rest.strip_prefix("/*") {
            (
                body.find("*/").map_or(b.len(), |k| start + 2 + k + 2),
                Kind::Comment,
            )
        } else if c == '"' {
            (self.quoted_end(start), Kind::Str)
        } else if c == '\'' {
            (self.quoted_end(start), Kind::Char)
        } else if let Some(lit) = ident_start(c)
            .then(|| self.prefixed_literal(start))
            .flatten()
        {
            lit
        } else if ident_start(c) {
            let len = rest.find(|ch| !ident_char(ch)).unwrap_or(rest.len());
            (start + len, Kind::Ident)
        } else if c.is_ascii_digit()
            || (c == '.' && rest.as_bytes().get(1).is_some_and(u8::is_ascii_digit))
        {
            (self.number_end(start), Kind::Number)
        } else if rest.starts_with("<::") && !rest[3..].starts_with([':', '>']) {
            // C++: `<::` is `<` then `::` unless a `:` or `>` follows (`vector<::T>`).
            (start + 1, Kind::Punct)
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(*p)) {
            (start + p.len(), Kind::Punct)
        } else if SINGLE.contains(c) {
            (start + 1, Kind::Punct)
        } else {
            (start + c.len_utf8(), Kind::Other)
        };
        self.pos = end;
        let first_on_line = std::mem::replace(&mut self.first_on_line, false);
        if kind == Kind::Comment {
            // A comment does not end the line's leading space: `/* x */ #include` is a directive.
            self.first_on_line = first_on_line || self.text[start..end].contains('\n');
        }
        let span = self.map[start]..self.map[end - 1] + 1;
        Some(Token {
            kind,
            text: self.text[start..end].to_string(),
            line: self.line_of(span.start),
            span,
            first_on_line,
        })
    }
}

/// `src` with every comment replaced by spaces (and the newlines a block comment holds), so
/// lines and columns stay where they were; strings and everything else are untouched.
pub fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut from = 0;
    for t in tokens(src).filter(|t| t.kind == Kind::Comment) {
        out.push_str(&src[from..t.span.start]);
        out.extend(
            src[t.span.clone()]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' }),
        );
        from = t.span.end;
    }
    out.push_str(&src[from..]);
    out
}

/// Each line that holds code, as `(line, text)`: its tokens (comments left out) joined by one
/// space, with digraphs written as what they stand for. The same code reads the same however it
/// is spaced or commented, so these lines suit fingerprints that must survive reformatting.
pub fn normalized_lines(src: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for t in tokens(src).filter(|t| t.kind != Kind::Comment) {
        match out.last_mut() {
            Some((line, text)) if *line == t.line => {
                text.push(' ');
                text.push_str(t.canonical());
            }
            _ => out.push((t.line, t.canonical().to_string())),
        }
    }
    out
}

/// A way a source file asks the preprocessor to read another file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileAccess {
    pub line: usize,
    /// What was written: `#include`, `%:include`, `__has_include`, a trigraph, ...
    pub what: String,
}

/// Directives that read a file (`#include` and its relatives of other compilers).
const FILE_DIRECTIVES: [&str; 4] = ["include", "include_next", "import", "embed"];
/// Operators that look for a file.
const FILE_PROBES: [&str; 3] = ["__has_include", "__has_include_next", "__has_embed"];

/// Every place `src` could make the preprocessor open a file: a `#`, `%:` or `??=` followed by
/// `include`, `include_next`, `import` or `embed` (wherever it stands: inside `#if 0` and inside
/// a macro definition too, and whatever follows it, a macro or a name), and every
/// `__has_include`-like probe. Trigraphs that make a `#` or a line splice (`??=`, `??/`) are
/// refused as such: a compiler may or may not read them, so the scan cannot know. Comments,
/// strings and character literals are not looked into.
pub fn file_access(src: &str) -> Vec<FileAccess> {
    let mut out = Vec::new();
    for (i, l) in src.lines().enumerate() {
        for tri in ["??=", "??/"] {
            if l.contains(tri) {
                out.push(FileAccess {
                    line: i + 1,
                    what: format!("the trigraph `{tri}`"),
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
                });
            }
        } else if t.kind == Kind::Ident && FILE_PROBES.contains(&t.text.as_str()) {
            out.push(FileAccess {
                line: t.line,
                what: format!("`{}`", t.text),
            });
        }
    }
    out.sort_by_key(|a| a.line);
    out
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
    fn comments_strings_and_chars_hide_what_they_hold() {
        let t = kinds("a /* b \"c */ \"d /* e\" 'f' // g \"h\n i");
        assert_eq!(
            t,
            [
                (Kind::Ident, "a".into()),
                (Kind::Comment, "/* b \"c */".into()),
                (Kind::Str, "\"d /* e\"".into()),
                (Kind::Char, "'f'".into()),
                (Kind::Comment, "// g \"h".into()),
                (Kind::Ident, "i".into()),
            ]
        );
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
            ("#include_next <x>\n", "`#include_next`"),
            ("#embed \"/etc/passwd\"\n", "`#embed`"),
            ("#import \"x\"\n", "`#import`"),
            ("??=include \"/etc/passwd\"\n", "the trigraph `??=`"),
            ("#if 0\n#include \"x\"\n#endif\n", "`#include`"),
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
            "#pragma once\n#define A 1\n",
        ] {
            assert!(
                file_access(clean).is_empty(),
                "{clean:?}: {:?}",
                file_access(clean)
            );
        }
    }

    #[test]
    fn punctuators_and_digraphs() {
        let t: Vec<String> = tokens("a<:1:>->*b<<=c %:%: d <% %> ... x.y v<::T>")
            .map(|t| t.canonical().to_string())
            .collect();
        assert_eq!(
            t,
            [
                "a", "[", "1", "]", "->*", "b", "<<=", "c", "##", "d", "{", "}", "...", "x", ".",
                "y", "v", "<", "::", "T", ">"
            ]
        );
    }

    #[test]
    fn first_on_line_marks_directives() {
        let t: Vec<(String, bool)> = tokens("a # b\n  /* c */ # d\n")
            .filter(|t| t.kind != Kind::Comment)
            .map(|t| (t.text, t.first_on_line))
            .collect();
        assert_eq!(
            t,
            [
                ("a".into(), true),
                ("#".into(), false),
                ("b".into(), false),
                ("#".into(), true),
                ("d".into(), false)
            ]
        );
    }

    #[test]
    fn spans_point_into_the_original() {
        let src = "x = \"a\\\nb\"; // c\n";
        for t in tokens(src) {
            let orig = &src[t.span.clone()];
            assert_eq!(orig.replace("\\\n", ""), t.text);
        }
    }

    #[test]
    fn stripped_and_normalized_text() {
        let src = "int  a; /* x\ny */ int b; // z\n  s = \"// no\";\n";
        assert_eq!(
            strip_comments(src),
            "int  a;     \n     int b;     \n  s = \"// no\";\n"
        );
        assert_eq!(
            normalized_lines("  __syncthreads( ) ;  // wait\n\n%:define X 1\n"),
            [
                (1, "__syncthreads ( ) ;".to_string()),
                (3, "# define X 1".to_string())
            ]
        );
    }

    #[test]
    fn literal_includes_are_listed() {
        assert_eq!(
            literal_includes("#include \"a.h\"\n  # include <b/c.h> // x\n#include M\n"),
            ["a.h", "b/c.h"]
        );
    }
}
