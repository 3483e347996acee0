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
use crate::build::ptx;
use crate::source::cscan::decl::{declarations, parse_type, shown, CType};
use crate::source::cscan::{self, Kind, Token};

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

/// The most kernel names a message lists, and the most bytes of each it shows.
const NAMES_SHOWN: usize = 10;
const NAME_SHOWN: usize = 80;

/// `n`, or its first [`NAME_SHOWN`] bytes (at a character boundary) and how many were cut.
fn bounded_name(n: &str) -> String {
    if n.len() <= NAME_SHOWN {
        return n.to_string();
    }
    let mut end = NAME_SHOWN;
    while !n.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} more bytes)", &n[..end], n.len() - end)
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
        let all: Vec<&str> = entries
            .iter()
            .map(|e| written_name(&e.name))
            .filter(|n| !n.starts_with("racegate_"))
            .collect();
        // Names of a reasonable length only are compared (token pasting can make a name of
        // megabytes), and the list is bounded, saying what was left out.
        let closest = all
            .iter()
            .filter(|n| n.len() <= 4 * NAME_SHOWN)
            .map(|n| (strsim::levenshtein(n, name), *n))
            .filter(|(d, n)| *d <= 3 || n.contains(name) || name.contains(*n))
            .min()
            .map(|(_, n)| bounded_name(n));
        let mut found: Vec<String> = all
            .iter()
            .take(NAMES_SHOWN)
            .map(|n| bounded_name(n))
            .collect();
        if all.len() > NAMES_SHOWN {
            found.push(format!("... and {} more", all.len() - NAMES_SHOWN));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> (CType, String) {
        let toks: Vec<Token> = cscan::tokens(s).collect();
        parse_type(&toks).unwrap_or_else(|| panic!("{s} does not parse"))
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
    }

    #[test]
    fn mangled_names_read_back() {
        assert_eq!(written_name("_Z6reducePKfPfi"), "reduce");
        assert_eq!(written_name("reduce"), "reduce");
        assert_eq!(written_name("_Z99x"), "_Z99x");
    }
}
