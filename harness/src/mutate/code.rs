//! The code a mutation operator may touch, as tokens: the source through `cscan` with comments
//! and preprocessor directives left out, each function body found, and the small questions every
//! operator asks of a token (does a statement start here, where does it end, which function holds
//! it). Nothing inside a comment, a string or a directive is ever a candidate, because none of
//! their text is a code token here.

use std::ops::Range;

use crate::source::cscan::{tokens, Kind, Token};

/// One change: `span` of the original text becomes `replacement`. `tokens` are the code tokens
/// the change is about (their lines are the context a mutant's id is made from).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub span: Range<usize>,
    pub replacement: String,
    pub tokens: Range<usize>,
}

/// A function body: its name and the indices of its `{` and `}` in [`Code::toks`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Func {
    pub name: String,
    pub open: usize,
    pub close: usize,
    /// Whether its head says `__global__`: an entry point the host launches.
    pub global: bool,
}

/// A source file's code tokens.
pub struct Code<'a> {
    pub src: &'a str,
    /// Every token that is code: no comment, nothing on a preprocessor directive's lines.
    pub toks: Vec<Token>,
    pub funcs: Vec<Func>,
}

/// Whether a head before `{` is an initializer (`int a[] = {`), not a function: an `=` outside
/// every parenthesis. One inside them is a default argument (`f(int n = 4) {`).
fn initializer(head: &[Token]) -> bool {
    let mut depth = 0i32;
    for t in head {
        if t.is_punct("(") {
            depth += 1;
        } else if t.is_punct(")") {
            depth -= 1;
        } else if depth == 0 && t.is_punct("=") {
            return true;
        }
    }
    false
}

/// Words that can stand between a function's `)` and `{`, or before its name, and are not it.
const NOT_A_NAME: [&str; 12] = [
    "__launch_bounds__",
    "__attribute__",
    "__declspec",
    "alignas",
    "decltype",
    "__align__",
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
];

impl<'a> Code<'a> {
    pub fn new(src: &'a str) -> Code<'a> {
        let mut toks = Vec::new();
        let mut directive_end = 0;
        for t in tokens(src) {
            if t.kind == Kind::Comment || t.span.start < directive_end {
                continue;
            }
            if t.first_on_line && t.is_punct("#") {
                directive_end = line_end_unspliced(src, t.span.start);
                continue;
            }
            toks.push(t);
        }
        let mut code = Code {
            src,
            toks,
            funcs: Vec::new(),
        };
        code.funcs = code.find_funcs();
        code
    }

    /// The index of the bracket that closes the one at `open` (`(`, `[` or `{`); the last token
    /// when it is never closed.
    pub fn matching(&self, open: usize) -> usize {
        let (o, c) = match self.toks[open].canonical() {
            "(" => ("(", ")"),
            "[" => ("[", "]"),
            _ => ("{", "}"),
        };
        let mut depth = 0usize;
        for (i, t) in self.toks.iter().enumerate().skip(open) {
            if t.is_punct(o) {
                depth += 1;
            } else if t.is_punct(c) {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
        }
        self.toks.len() - 1
    }

    /// The index of the bracket that opens the one closing at `close`.
    pub fn opening(&self, close: usize) -> Option<usize> {
        let (o, c) = match self.toks[close].canonical() {
            ")" => ("(", ")"),
            "]" => ("[", "]"),
            _ => ("{", "}"),
        };
        let mut depth = 0usize;
        for i in (0..=close).rev() {
            let t = &self.toks[i];
            if t.is_punct(c) {
                depth += 1;
            } else if t.is_punct(o) {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
        }
        None
    }

    /// Whether the statement starting at token `i` is the whole body of an `if`, `for`, `while`,
    /// `else` or `do` (then deleting it must leave an empty statement `;` in its place).
    pub fn is_lone_body(&self, i: usize) -> bool {
        let Some(prev) = i.checked_sub(1).map(|p| &self.toks[p]) else {
            return false;
        };
        if prev.is_ident("else") || prev.is_ident("do") {
            return true;
        }
        if !prev.is_punct(")") {
            return false;
        }
        self.opening(i - 1)
            .and_then(|o| o.checked_sub(1))
            .is_some_and(|k| {
                ["if", "for", "while", "switch"]
                    .iter()
                    .any(|w| self.toks[k].is_ident(w))
            })
    }

    /// Whether a statement starts at token `i`: after `;`, `{`, `}`, or as a lone body.
    pub fn starts_statement(&self, i: usize) -> bool {
        match i.checked_sub(1).map(|p| &self.toks[p]) {
            None => true,
            Some(p) if p.is_punct(";") || p.is_punct("{") || p.is_punct("}") => true,
            Some(_) => self.is_lone_body(i),
        }
    }

    /// The `;` that ends the statement starting at `i` (the first at its own bracket depth).
    pub fn statement_end(&self, i: usize) -> Option<usize> {
        let mut depth = 0i32;
        for (k, t) in self.toks.iter().enumerate().skip(i) {
            match t.canonical() {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth < 0 {
                        return None;
                    }
                }
                ";" if depth == 0 => return Some(k),
                _ => {}
            }
        }
        None
    }

    /// The bytes of tokens `first..=last` in the original text.
    pub fn span(&self, first: usize, last: usize) -> Range<usize> {
        self.toks[first].span.start..self.toks[last].span.end
    }

    /// The original text of tokens `first..=last`.
    pub fn text(&self, first: usize, last: usize) -> &'a str {
        &self.src[self.span(first, last)]
    }

    /// The function holding token `i` (the innermost), if any.
    pub fn func_of(&self, i: usize) -> Option<&Func> {
        self.funcs
            .iter()
            .filter(|f| f.open < i && i < f.close)
            .min_by_key(|f| f.close - f.open)
    }

    /// The tokens on lines `lines` (1-based, inclusive), canonical and joined by one space: the
    /// normalized text a mutant's id is made from.
    pub fn normalized(&self, lines: std::ops::RangeInclusive<usize>) -> String {
        self.toks
            .iter()
            .filter(|t| lines.contains(&t.line))
            .map(|t| t.canonical())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The edit that deletes the statement `first..=last`: a lone body becomes `;`; a statement
    /// alone on its line takes the whole line (and its newline) with it; otherwise just its
    /// tokens go.
    pub fn delete_statement(&self, first: usize, last: usize) -> (Range<usize>, String) {
        let span = self.span(first, last);
        if self.is_lone_body(first) {
            return (span, ";".into());
        }
        let line_start = self.src[..span.start].rfind('\n').map_or(0, |k| k + 1);
        let line_end = self.src[span.end..]
            .find('\n')
            .map_or(self.src.len(), |k| span.end + k);
        let blank = |s: &str| s.chars().all(|c| c == ' ' || c == '\t' || c == '\r');
        if blank(&self.src[line_start..span.start]) {
            if blank(&self.src[span.end..line_end]) {
                let end = (line_end + 1).min(self.src.len());
                return (line_start..end, String::new());
            }
            // Only a comment follows: it keeps its place at the statement's indentation.
            let rest = &self.src[span.end..line_end];
            let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
            return (span.start..span.end + spaces, String::new());
        }
        (span, String::new())
    }

    /// Function bodies: a `{` outside any function whose head (the tokens since the last `;`,
    /// `{` or `}`) holds a parameter list and is no initializer, namespace, class or
    /// `extern "C"` block.
    fn find_funcs(&self) -> Vec<Func> {
        let mut out = Vec::new();
        let mut i = 0;
        let mut head_start = 0;
        while i < self.toks.len() {
            let t = &self.toks[i];
            if t.is_punct(";") || t.is_punct("}") {
                head_start = i + 1;
            } else if t.is_punct("{") {
                let head = &self.toks[head_start..i];
                let opener = head.first();
                let is_block = opener.is_some_and(|o| {
                    ["namespace", "struct", "class", "union", "enum"]
                        .iter()
                        .any(|w| o.is_ident(w))
                }) || initializer(head)
                    || (head.len() == 2 && head[0].is_ident("extern"));
                let name = (!is_block).then(|| function_name(head)).flatten();
                match name {
                    Some(name) => {
                        let close = self.matching(i);
                        out.push(Func {
                            name,
                            open: i,
                            close,
                            global: head.iter().any(|t| t.is_ident("__global__")),
                        });
                        i = close + 1;
                        head_start = i;
                        continue;
                    }
                    None => head_start = i + 1,
                }
            }
            i += 1;
        }
        out
    }
}

/// The name in a function's head: the identifier before the first `(` that does not open an
/// attribute's arguments.
fn function_name(head: &[Token]) -> Option<String> {
    // `template <int (*F)()>`: the parameter list's parentheses name no function (read as
    // one, its name would be `int`, and reachability would leave the template out).
    let mut skip = 0;
    while head.get(skip).is_some_and(|t| t.is_ident("template")) {
        let mut angle = 0i32;
        let from = skip + 1;
        skip = from;
        for (k, t) in head.iter().enumerate().skip(from) {
            match t.canonical() {
                "<" => angle += 1,
                ">" => angle -= 1,
                ">>" => angle -= 2,
                _ => {}
            }
            if angle <= 0 {
                skip = k + 1;
                break;
            }
        }
        if angle > 0 {
            return None;
        }
    }
    let head = &head[skip..];
    let mut depth = 0;
    for (k, t) in head.iter().enumerate() {
        if t.is_punct("(") {
            if depth == 0 && k > 0 {
                let before = &head[k - 1];
                if before.kind == Kind::Ident && !NOT_A_NAME.contains(&before.text.as_str()) {
                    return Some(before.text.clone());
                }
            }
            depth += 1;
        } else if t.is_punct(")") {
            depth -= 1;
        }
    }
    None
}

/// Where the line holding byte `at` ends, following line splices (a directive goes on).
fn line_end_unspliced(src: &str, at: usize) -> usize {
    let b = src.as_bytes();
    let mut i = at;
    while i < b.len() {
        if b[i] == b'\n' {
            let spliced =
                i > 0 && (b[i - 1] == b'\\' || (b[i - 1] == b'\r' && i > 1 && b[i - 2] == b'\\'));
            if !spliced {
                return i;
            }
        }
        i += 1;
    }
    b.len()
}

/// The names a `__shared__` declaration starting at token `at` declares.
pub fn shared_names(code: &Code, at: usize) -> Vec<String> {
    let Some(end) = code.statement_end(at) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    let mut depth = 0;
    for k in at + 1..end {
        let t = &code.toks[k];
        match t.canonical() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            _ if depth == 0 && t.kind == Kind::Ident => {
                let next = &code.toks[k + 1];
                if ["[", ",", ";", "="].iter().any(|p| next.is_punct(p)) {
                    names.push(t.text.clone());
                }
            }
            _ => {}
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_are_found_with_their_names() {
        let src = "#define X(a) { a }\ntemplate <int B> __device__ void f(int* p) { if (p) { p[0] = 1; } }\n\
                   struct S { int a; };\nextern \"C\" __global__ void __launch_bounds__(256) k(int n) { f<1>(&n); }\n\
                   int table[2] = {1, 2};\n";
        let c = Code::new(src);
        let names: Vec<&str> = c.funcs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["f", "k"]);
    }

    #[test]
    fn a_default_argument_is_no_initializer() {
        let c = Code::new(
            "__device__ int helper(int n = 4) { if (n > 0) { __syncthreads(); } return n; }\n\
             int table[2] = {1, 2};\n",
        );
        let names: Vec<&str> = c.funcs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["helper"]);
    }

    #[test]
    fn directives_and_comments_are_no_code() {
        let c = Code::new(
            "#include <a.h>\n#define S \\\n  __syncthreads()\n// __syncthreads();\nint x;\n",
        );
        let texts: Vec<&str> = c.toks.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["int", "x", ";"]);
    }
}
