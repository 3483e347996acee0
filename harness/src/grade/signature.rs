//! Does the compiled submission define the kernels the exercise requires, with their exact
//! parameters? Two readings, each for what only it can see:
//!
//! * the **compiled code** ([`crate::build::ptx`]): the kernel exists under its exact, unmangled name
//!   (`extern "C"`), with the parameter count, widths and float-ness the exercise needs. Macros,
//!   attributes (`__launch_bounds__`), `#if`, comments and strings are all resolved by the
//!   compiler, so nothing written around the kernel can fake or hide it;
//! * the **declaration**, on the token stream ([`crate::source::cscan`]): PTX knows neither `const`,
//!   what a pointer points to, nor signedness, so every `__global__` declaration of the name is
//!   read and its parameter types compared with the exercise's, qualifiers in any order
//!   (`float const*` is `const float*`), `__restrict__` and parameter names ignored.
//!
//! Messages say which reading failed and which parameter differs in what.

use super::spec::Spec;
use super::submission::Rejection;
use crate::source::cscan::{self, Kind, Token};
use crate::build::ptx;

/// A parameter type, as far as it matters to the grader.
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
fn canonical_base(words: &[String]) -> String {
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
struct Decl {
    line: usize,
    params: Vec<Vec<Token>>,
}

/// Every `__global__` declaration of `name` in `code` (tokens without comments).
fn declarations(code: &[Token], name: &str) -> Vec<Decl> {
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

/// What `ty` is in PTX: (width in bytes, float); `None` for a type it does not know.
fn ptx_shape(ty: &CType) -> Option<(usize, bool)> {
    if !ty.ptrs.is_empty() || ty.reference {
        return Some((8, false));
    }
    Some(match ty.base.as_str() {
        "float" => (4, true),
        "double" => (8, true),
        "char" | "i8" | "u8" | "bool" => (1, false),
        "i16" | "u16" | "__half" | "__nv_bfloat16" => (2, false),
        "i32" | "u32" => (4, false),
        "i64" | "u64" => (8, false),
        _ => return None,
    })
}

fn describe_ptx(p: &ptx::Param) -> String {
    match (p.width, p.float) {
        (8, false) => "an 8-byte pointer or integer".into(),
        (w, true) => format!("a {w}-byte float"),
        (w, false) => format!("a {w}-byte integer"),
    }
}

/// How `found` differs from `want`, in words.
fn difference(found: &CType, want: &CType) -> &'static str {
    let int = |b: &str| b.len() == 3 && (b.starts_with('i') || b.starts_with('u'));
    if found.ptrs.len() != want.ptrs.len() || found.reference != want.reference {
        "one is a pointer where the other is not"
    } else if found.base != want.base {
        let same_width = int(&found.base) && int(&want.base) && found.base[1..] == want.base[1..];
        match (same_width, want.ptrs.is_empty()) {
            (true, _) => "they differ in signedness",
            (false, false) => "they point to different types",
            (false, true) => "they are different types",
        }
    } else if found.base_const != want.base_const {
        "they differ in the `const` on what the pointer points to"
    } else {
        "they differ in their qualifiers (`const`, `volatile`)"
    }
}

/// The types of a parameter list written as in a spec (`"const float*"`), parsed.
fn spec_types(params: &[String]) -> Vec<CType> {
    params
        .iter()
        .filter_map(|p| {
            let toks: Vec<Token> = cscan::tokens(p).collect();
            parse_type(&toks).map(|(t, _)| t)
        })
        .collect()
}

/// Checks every kernel the exercise requires against the compiled `ptx` and the `source`.
pub fn check(spec: &Spec, source: &str, ptx_text: &str) -> Result<(), Rejection> {
    let entries = ptx::entries(ptx_text);
    let code: Vec<Token> = cscan::tokens(source)
        .filter(|t| t.kind != Kind::Comment)
        .collect();
    let wanted =
        std::iter::once((spec.entry.clone(), spec.params.clone())).chain(spec.also.iter().cloned());
    for (name, params) in wanted {
        check_one(&entries, &code, &name, &params)?;
    }
    Ok(())
}

/// The name a student wrote for a PTX entry: itself, or the name inside a simple C++ mangling
/// (`_Z6reducePKfPfi` -> `reduce`).
fn written_name(entry: &str) -> &str {
    let Some(rest) = entry.strip_prefix("_Z") else {
        return entry;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    match rest[..digits].parse::<usize>() {
        Ok(n) if rest.len() >= digits + n => &rest[digits..digits + n],
        _ => entry,
    }
}

fn check_one(
    entries: &[ptx::Entry],
    code: &[Token],
    name: &str,
    params: &[String],
) -> Result<(), Rejection> {
    let decls = declarations(code, name);
    let line = decls.first().map_or(0, |d| d.line);
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        if entries.iter().any(|e| written_name(&e.name) == name) {
            return Err(Rejection::NotExternC {
                name: name.into(),
                line,
            });
        }
        // The prelude's own kernels (`racegate_*`) are not the student's.
        let found: Vec<String> = entries
            .iter()
            .map(|e| written_name(&e.name).to_string())
            .filter(|n| !n.starts_with("racegate_"))
            .collect();
        let closest = found
            .iter()
            .map(|n| (strsim::levenshtein(n, name), n))
            .filter(|(d, n)| *d <= 3 || n.contains(name) || name.contains(n.as_str()))
            .min()
            .map(|(_, n)| n.clone());
        return Err(Rejection::MissingKernel {
            wanted: name.into(),
            closest,
            found,
        });
    };
    let want = spec_types(params);
    let wrong = |found: Vec<String>, why: String| Rejection::WrongSignature {
        name: name.into(),
        line,
        expected: params.to_vec(),
        found,
        why,
    };
    // The compiled code: count, widths, float-ness.
    let compiled: Vec<String> = entry.params.iter().map(describe_ptx).collect();
    if entry.params.len() != want.len() {
        let why = format!(
            "the compiled kernel has {} parameter(s), the exercise requires {}",
            entry.params.len(),
            want.len()
        );
        let found = decls
            .first()
            .map(|d| d.params.iter().map(|p| shown(p)).collect())
            .unwrap_or(compiled);
        return Err(wrong(found, why));
    }
    for (k, (p, w)) in entry.params.iter().zip(&want).enumerate() {
        if let Some((width, float)) = ptx_shape(w) {
            if (p.width, p.float) != (width, float) {
                let why = format!(
                    "in the compiled code, parameter {} is {} where `{}` needs {}",
                    k + 1,
                    describe_ptx(p),
                    params[k],
                    describe_ptx(&ptx::Param { width, float })
                );
                let found = decls
                    .first()
                    .map(|d| d.params.iter().map(|p| shown(p)).collect())
                    .unwrap_or(compiled.clone());
                return Err(wrong(found, why));
            }
        }
    }
    // The declaration: const, what pointers point to, signedness.
    if decls.is_empty() {
        return Err(Rejection::Undeclared {
            name: name.into(),
            params: params.to_vec(),
        });
    }
    for d in &decls {
        let found: Vec<String> = d.params.iter().map(|p| shown(p)).collect();
        let at = |found, why| Rejection::WrongSignature {
            name: name.into(),
            line: d.line,
            expected: params.to_vec(),
            found,
            why,
        };
        if d.params.len() != want.len() {
            let why = format!(
                "as declared on line {}, it has {} parameter(s), the exercise requires {}",
                d.line,
                d.params.len(),
                want.len()
            );
            return Err(at(found, why));
        }
        for (k, (p, w)) in d.params.iter().zip(&want).enumerate() {
            let Some((ty, written)) = parse_type(p) else {
                let why = format!("parameter {} is not a type racegate can read", k + 1);
                return Err(at(found, why));
            };
            if ty != *w {
                let why = format!(
                    "as declared, parameter {} is `{written}` where the exercise requires `{}` ({})",
                    k + 1,
                    params[k],
                    difference(&ty, w)
                );
                return Err(at(found, why));
            }
        }
    }
    Ok(())
}

/// A parameter as written, for messages: its type when it reads as one, else its tokens.
fn shown(tokens: &[Token]) -> String {
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
        let toks: Vec<Token> = cscan::tokens(s).collect();
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
    }

    #[test]
    fn what_matters_differs() {
        let d = |a: &str, b: &str| difference(&ty(a).0, &ty(b).0);
        assert_eq!(d("unsigned n", "int n"), "they differ in signedness");
        assert!(d("float* in", "const float* in").contains("`const` on what"));
        assert_eq!(d("int* in", "float* in"), "they point to different types");
        assert_eq!(
            d("float in", "float* in"),
            "one is a pointer where the other is not"
        );
        assert_ne!(ty("char c").0, ty("unsigned char c").0);
    }

    #[test]
    fn declarations_are_found_past_attributes_comments_and_strings() {
        let src = "const char* s = \"/* __global__ void reduce(int) */\";\n\
                   // __global__ void reduce(double x)\n\
                   extern \"C\" __global__ void __launch_bounds__(256)\n  reduce(const float* in, float* out, int n) {\n  reduce_helper(in);\n}\n";
        let code: Vec<Token> = cscan::tokens(src)
            .filter(|t| t.kind != Kind::Comment)
            .collect();
        let d = declarations(&code, "reduce");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].line, 4);
        assert_eq!(d[0].params.len(), 3);
    }

    #[test]
    fn mangled_names_read_back() {
        assert_eq!(written_name("_Z6reducePKfPfi"), "reduce");
        assert_eq!(written_name("reduce"), "reduce");
        assert_eq!(written_name("_Z99x"), "_Z99x");
    }
}
