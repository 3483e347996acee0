//! The scanner itself: [`tokens`] and the text helpers built on it ([`strip_comments`],
//! [`normalized_lines`]). See the module above for what it is for.

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

/// The text with line splices removed, and for each of its bytes the offset of that byte in the
/// original. A splice is a `\` followed by any number of carriage returns and then a newline,
/// as NVRTC reads it (`\` CR CR LF joins the lines there too).
fn splice(src: &str) -> (String, Vec<usize>) {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut map = Vec::with_capacity(b.len() + 1);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let crs = b[i + 1..].iter().take_while(|&&c| c == b'\r').count();
            if b.get(i + 1 + crs) == Some(&b'\n') {
                i += crs + 2;
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
        // Whitespace: C's (space, tab, newline, vertical tab, form feed, carriage return), and
        // every other control byte too, so `#`, a control byte and `include` still read as a
        // directive wherever a compiler might take the byte for a blank.
        while self.pos < b.len() && (b[self.pos] <= b' ' || b[self.pos] == 0x7f) {
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
}
