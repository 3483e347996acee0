//! Kernel declarations read on the token stream: every `__global__` declaration of a name, its
//! parameters split at top-level commas, and each parameter's type in a canonical form
//! ([`CType`]), qualifiers in any order (`float const*` is `const float*`), `__restrict__`,
//! attributes and parameter names ignored. PTX knows neither `const`, what a pointer points to,
//! nor signedness; grading and the manifest check read those here.
//!
//! A scanner, not a compiler: a type written through a macro or a typedef reads as that name
//! (`real_t`), which callers treat as unknown rather than guess.
//!
//! ```
//! use racegate::source::cscan::{decl, tokens, Kind};
//! let code: Vec<_> = tokens("extern \"C\" __global__ void k(float const* __restrict__ x, int n) {}")
//!     .filter(|t| t.kind != Kind::Comment)
//!     .collect();
//! let d = decl::declarations(&code, "k");
//! let (ty, written) = decl::parse_type(&d[0].params[0]).unwrap();
//! assert_eq!((ty.base.as_str(), ty.ptrs.len(), ty.base_const), ("float", 1, true));
//! assert_eq!(written, "float const*");
//! ```

use super::tokens::{Kind, Token};

/// A parameter type as declared: what a kernel's parameter is, as far as racegate checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CType {
    /// The base type, canonical: `float`, `i32`, `u8`, `char`, or a type's own name.
    pub base: String,
    pub base_const: bool,
    pub base_volatile: bool,
    /// One entry per `*` (or `[]`), outermost last: (const, volatile) of that pointer.
    pub ptrs: Vec<(bool, bool)>,
    pub reference: bool,
}

/// Words that are part of a type (not a parameter's name).
const TYPE_WORDS: [&str; 11] = [
    "unsigned", "signed", "short", "long", "int", "char", "float", "double", "bool", "void",
    "__int128",
];
/// Words that change nothing the grader checks.
const IGNORED: [&str; 9] = [
    "__restrict__",
    "__restrict",
    "restrict",
    "__grid_constant__",
    "struct",
    "class",
    "enum",
    "typename",
    "register",
];

/// The canonical name of a base type written as `words`.
pub fn canonical_base(words: &[String]) -> String {
    let has = |w: &str| words.iter().any(|x| x == w);
    let unsigned = has("unsigned");
    let longs = words.iter().filter(|w| *w == "long").count();
    let known = |w: &str| {
        Some(match w.trim_start_matches("std::") {
            "size_t" | "uint64_t" | "unsigned long long" => "u64",
            "ssize_t" | "ptrdiff_t" | "int64_t" => "i64",
            "uint32_t" => "u32",
            "int32_t" => "i32",
            "uint16_t" => "u16",
            "int16_t" => "i16",
            "uint8_t" => "u8",
            "int8_t" => "i8",
            "half" | "__half" => "__half",
            "nv_bfloat16" | "__nv_bfloat16" => "__nv_bfloat16",
            _ => return None,
        })
    };
    if words.len() == 1 {
        if let Some(k) = known(&words[0]) {
            return k.to_string();
        }
    }
    let sign = if unsigned { "u" } else { "i" };
    if has("float") {
        "float".into()
    } else if has("double") {
        if longs > 0 { "long double" } else { "double" }.into()
    } else if has("char") {
        if unsigned {
            "u8".into()
        } else if has("signed") {
            "i8".into()
        } else {
            "char".into()
        }
    } else if has("bool") || has("void") {
        words
            .iter()
            .find(|w| *w == "bool" || *w == "void")
            .cloned()
            .unwrap_or_default()
    } else if has("short") {
        format!("{sign}16")
    } else if longs > 0 {
        // `long` and `long long` are both 64 bits where CUDA runs.
        format!("{sign}64")
    } else if has("int") || has("signed") || unsigned {
        format!("{sign}32")
    } else {
        words.join(" ")
    }
}

/// Reads one parameter's tokens: its type, and the type as written (without name, qualifiers
/// it ignores and attributes). `None` when it is not a type it can read (a template, say).
pub fn parse_type(tokens: &[Token]) -> Option<(CType, String)> {
    let mut words: Vec<String> = Vec::new();
    let (mut base_const, mut base_volatile, mut reference) = (false, false, false);
    let mut ptrs: Vec<(bool, bool)> = Vec::new();
    let mut shown: Vec<String> = Vec::new();
    let mut named = false;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let text = t.canonical();
        i += 1;
        match t.kind {
            Kind::Ident if IGNORED.contains(&text) => {}
            Kind::Ident if text == "__attribute__" || text == "__align__" || text == "alignas" => {
                i = skip_group(tokens, i);
            }
            Kind::Ident if text == "const" || text == "volatile" => {
                let c = text == "const";
                match ptrs.last_mut() {
                    Some(p) if c => p.0 = true,
                    Some(p) => p.1 = true,
                    None if c => base_const = true,
                    None => base_volatile = true,
                }
                shown.push(text.into());
            }
            Kind::Ident if named => return None,
            Kind::Ident if TYPE_WORDS.contains(&text) || words.is_empty() => {
                words.push(text.into());
                shown.push(text.into());
            }
            Kind::Ident => named = true,
            Kind::Punct if text == "::" && !words.is_empty() && i < tokens.len() => {
                let next = tokens[i].canonical().to_string();
                i += 1;
                let last = words.pop().unwrap_or_default();
                words.push(format!("{last}::{next}"));
                shown.pop();
                shown.push(format!("{last}::{next}"));
            }
            Kind::Punct if text == "*" => {
                ptrs.push((false, false));
                shown.push("*".into());
            }
            Kind::Punct if text == "&" || text == "&&" => {
                reference = true;
                shown.push(text.into());
            }
            // `float in[]` is `float* in`.
            Kind::Punct if text == "[" && named => {
                i = skip_group(tokens, i - 1);
                ptrs.push((false, false));
                shown.push("*".into());
            }
            Kind::Punct if text == "[" && tokens.get(i).is_some_and(|n| n.is_punct("[")) => {
                i = skip_group(tokens, i - 1); // [[attribute]]
            }
            Kind::Punct if text == "=" => break, // a default argument
            _ => return None,
        }
    }
    if words.is_empty() {
        return None;
    }
    // Top-level qualifiers do not change the signature: `const int n` is `int n`.
    match ptrs.last_mut() {
        Some(p) => *p = (false, false),
        None => (base_const, base_volatile) = (false, false),
    }
    let shown = shown.join(" ").replace(" *", "*").replace(" &", "&");
    let base = canonical_base(&words);
    Some((
        CType {
            base,
            base_const,
            base_volatile,
            ptrs,
            reference,
        },
        shown,
    ))
}

/// The index just past the bracketed group that opens at `i` (`(...)` or `[...]`, nested);
/// `i` itself when no group opens there.
fn skip_group(tokens: &[Token], i: usize) -> usize {
    let Some(open) = tokens.get(i).map(|t| t.canonical().to_string()) else {
        return i;
    };
    let close = match open.as_str() {
        "(" => ")",
        "[" => "]",
        _ => return i,
    };
    let mut depth = 0;
    for (k, t) in tokens.iter().enumerate().skip(i) {
        if t.is_punct(&open) {
            depth += 1;
        } else if t.is_punct(close) {
            depth -= 1;
            if depth == 0 {
                return k + 1;
            }
        }
    }
    tokens.len()
}

/// A parameter list's tokens split at its top-level commas.
fn split_params(tokens: &[Token]) -> Vec<&[Token]> {
    if tokens.is_empty() || (tokens.len() == 1 && tokens[0].is_ident("void")) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (k, t) in tokens.iter().enumerate() {
        match t.canonical() {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | "}" | ">" => depth -= 1,
            "," if depth == 0 => {
                out.push(&tokens[from..k]);
                from = k + 1;
            }
            _ => {}
        }
    }
    out.push(&tokens[from..]);
    out
}

/// A `__global__` declaration of a kernel in the source: its line and parameters' tokens.
pub struct Decl {
    pub line: usize,
    pub params: Vec<Vec<Token>>,
}

/// Every `__global__` declaration of `name` in `code` (tokens without comments).
pub fn declarations(code: &[Token], name: &str) -> Vec<Decl> {
    let mut out = Vec::new();
    for i in 0..code.len() {
        if !code[i].is_ident(name) || !code.get(i + 1).is_some_and(|t| t.is_punct("(")) {
            continue;
        }
        let global = code[..i]
            .iter()
            .rev()
            .take_while(|t| !(t.is_punct(";") || t.is_punct("{") || t.is_punct("}")))
            .any(|t| t.is_ident("__global__"));
        if !global {
            continue;
        }
        let end = skip_group(code, i + 1);
        let inner = &code[i + 2..end.saturating_sub(1).max(i + 2)];
        out.push(Decl {
            line: code[i].line,
            params: split_params(inner)
                .into_iter()
                .map(<[Token]>::to_vec)
                .collect(),
        });
    }
    out
}

/// A parameter as written, for messages: its type when it reads as one, else its tokens.
pub fn shown(tokens: &[Token]) -> String {
    parse_type(tokens).map(|(_, s)| s).unwrap_or_else(|| {
        tokens
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> (CType, String) {
        let toks: Vec<Token> = super::super::tokens(s).collect();
        parse_type(&toks).unwrap_or_else(|| panic!("{s} does not parse"))
    }

    #[test]
    fn qualifiers_in_any_order_read_the_same() {
        for (a, b) in [
            ("const float* in", "float const *__restrict__ in"),
            ("const float* in", "const float in[]"),
            ("int n", "const int n"),
            ("int n", "signed n"),
            ("unsigned int* bins", "unsigned *bins"),
            ("const unsigned char* data", "unsigned char const* data"),
            ("float* out", "float* const out"),
            ("size_t n", "unsigned long n"),
            ("long long n", "long n"),
        ] {
            assert_eq!(ty(a).0, ty(b).0, "{a} vs {b}");
        }
        assert_eq!(ty("float const * __restrict__ in").1, "float const*");
        assert_eq!(ty("unsigned n").1, "unsigned");
        assert_ne!(ty("char c").0, ty("unsigned char c").0);
    }

    #[test]
    fn declarations_are_found_past_attributes_comments_and_strings() {
        let src = "const char* s = \"/* __global__ void reduce(int) */\";\n\
                   // __global__ void reduce(double x)\n\
                   extern \"C\" __global__ void __launch_bounds__(256)\n  reduce(const float* in, float* out, int n) {\n  reduce_helper(in);\n}\n";
        let code: Vec<Token> = super::super::tokens(src)
            .filter(|t| t.kind != Kind::Comment)
            .collect();
        let d = declarations(&code, "reduce");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].line, 4);
        assert_eq!(d[0].params.len(), 3);
    }
}
