//! The operators that change speed only: a shared tile's padding column removed
//! (`[T][T + 1]` -> `[T][T]`) and an XOR swizzle of a shared tile's index removed
//! (`(c ^ r)` -> `c`). The results stay right; the bank conflicts come back, which only
//! Nsight Compute's counters see (`racegate perf`): `mutate --run` judges these mutants by the
//! kernel's `//@ perf:` expectation (in `speed.rs`), never by the battery.

use super::code::{shared_names, Code, Site};
use crate::source::cscan::Kind;

/// The value of a plain decimal or hex number token (`33`, `0x21`, `33u`).
fn number(text: &str) -> Option<u64> {
    let body = text.trim_end_matches(['u', 'U', 'l', 'L']);
    match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => body.parse().ok(),
    }
}

/// Whether the tokens `last` are the tokens `prev` plus one: `X + 1` for `X`, or the number
/// one more than a number.
fn is_plus_one(code: &Code, prev: std::ops::Range<usize>, last: std::ops::Range<usize>) -> bool {
    let t = |k: usize| &code.toks[k];
    if prev.len() == 1 && last.len() == 1 {
        let (a, b) = (t(prev.start), t(last.start));
        if a.kind == Kind::Number && b.kind == Kind::Number {
            return matches!((number(&a.text), number(&b.text)), (Some(x), Some(y)) if y == x + 1);
        }
    }
    if prev.is_empty() || last.len() != prev.len() + 2 {
        return false;
    }
    let same = prev
        .clone()
        .zip(last.clone())
        .all(|(a, b)| t(a).text == t(b).text);
    let plus = t(last.start + prev.len());
    let one = t(last.start + prev.len() + 1);
    same && plus.is_punct("+") && one.kind == Kind::Number && number(&one.text) == Some(1)
}

/// padding-removal: in every `__shared__` declaration of an array of two or more dimensions
/// whose last dimension is the one before it plus one, the last dimension becomes the one
/// before it.
pub fn padding(code: &Code) -> Vec<Site> {
    let mut out = Vec::new();
    for at in (0..code.toks.len()).filter(|&k| code.toks[k].is_ident("__shared__")) {
        let Some(end) = code.statement_end(at) else {
            continue;
        };
        let mut k = at + 1;
        while k < end {
            // A declarator's subscripts: `name [a] [b] ...`.
            if !(code.toks[k].kind == Kind::Ident && code.toks[k + 1].is_punct("[")) {
                k += 1;
                continue;
            }
            let mut dims = Vec::new();
            let mut j = k + 1;
            while j < end && code.toks[j].is_punct("[") {
                let close = code.matching(j);
                dims.push((j, close));
                j = close + 1;
            }
            if let [.., (po, pc), (lo, lc)] = dims[..] {
                if is_plus_one(code, po + 1..pc, lo + 1..lc) {
                    out.push(Site {
                        span: code.span(lo + 1, lc - 1),
                        replacement: code.text(po + 1, pc - 1).to_string(),
                        tokens: at..end + 1,
                    });
                }
            }
            k = j;
        }
    }
    out
}

/// The innermost bracket (`(` or `[`) still open at token `k`.
fn enclosing(code: &Code, k: usize) -> Option<usize> {
    let mut depth = 0i32;
    for i in (0..k).rev() {
        match code.toks[i].canonical() {
            ")" | "]" | "}" => depth += 1,
            "(" | "[" if depth == 0 => return Some(i),
            "{" if depth == 0 => return None,
            "(" | "[" | "{" => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Whether token `k` stands inside a subscript of one of `names` (`tile[... k ...]`, at any
/// depth, `tile[a][... k ...]` too).
fn in_subscript_of(code: &Code, mut k: usize, names: &[String]) -> bool {
    while let Some(o) = enclosing(code, k) {
        if code.toks[o].is_punct("[") {
            // Back over the subscripts before this one to the array's name.
            let mut b = o;
            while b > 0 && code.toks[b - 1].is_punct("]") {
                match code.opening(b - 1) {
                    Some(x) => b = x,
                    None => break,
                }
            }
            if b > 0 && names.contains(&code.toks[b - 1].text) {
                return true;
            }
        }
        k = o;
    }
    false
}

/// The `__shared__` names visible in the function holding token `k` (the file's and its own).
fn shared_in_scope(code: &Code, k: usize) -> Vec<String> {
    let func = code.func_of(k);
    (0..code.toks.len())
        .filter(|&i| code.toks[i].is_ident("__shared__"))
        .filter(|&i| {
            let f = code.func_of(i);
            f.is_none() || f.map(|f| f.open) == func.map(|f| f.open)
        })
        .flat_map(|i| shared_names(code, i))
        .collect()
}

/// The functions called inside a shared array's subscript (`tile[swz(r, c)]`): index helpers.
fn index_helpers(code: &Code) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in &code.funcs {
        let names = shared_in_scope(code, f.open + 1);
        for k in f.open + 1..f.close {
            let t = &code.toks[k];
            if t.kind == Kind::Ident
                && code.toks[k + 1].is_punct("(")
                && !out.contains(&t.text)
                && in_subscript_of(code, k, &names)
            {
                out.push(t.text.clone());
            }
        }
    }
    out
}

/// Operators that bind no tighter than `^`: with one beside the `^`, the operand is unclear.
const LOOSER: [&str; 12] = [
    "^", "|", "||", "&&", "&", "?", ":", ",", "=", "==", "!=", ";",
];

/// swizzle-removal: `(a ^ b)` or `[a ^ b]` in a shared array's index (inside its subscript,
/// or in a function called there, `tile[swz(r, c)]` with `swz` returning `r * T + (c ^ r)`)
/// becomes `a`: the column left unswizzled. Only a bracket that holds exactly the one `^`.
pub fn swizzle(code: &Code) -> Vec<Site> {
    let helpers = index_helpers(code);
    let mut out = Vec::new();
    for k in (0..code.toks.len()).filter(|&k| code.toks[k].is_punct("^")) {
        let Some(open) = enclosing(code, k) else {
            continue;
        };
        let close = code.matching(open);
        let is_call = open > 0
            && code.toks[open].is_punct("(")
            && (code.toks[open - 1].kind == Kind::Ident || code.toks[open - 1].is_punct(")"));
        if is_call || open + 1 == k || k + 1 == close {
            continue;
        }
        // Only `^` at the bracket's own depth, and nothing that binds as loosely.
        let mut depth = 0;
        let lone = (open + 1..close).all(|i| {
            let c = code.toks[i].canonical();
            match c {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                _ => {}
            }
            i == k || depth != 0 || !LOOSER.contains(&c)
        });
        let func = code.func_of(k);
        let used = in_subscript_of(code, k, &shared_in_scope(code, k))
            || func.is_some_and(|f| !f.global && helpers.contains(&f.name));
        if !lone || !used {
            continue;
        }
        let left = code.text(open + 1, k - 1);
        let (span, replacement) = if code.toks[open].is_punct("[") {
            (code.span(open + 1, close - 1), left.to_string())
        } else if k == open + 2 || (k == open + 4 && code.toks[open + 2].is_punct(".")) {
            // One name (`c`, `threadIdx.x`): no parentheses needed.
            (code.span(open, close), left.to_string())
        } else {
            (code.span(open + 1, close - 1), left.to_string())
        };
        out.push(Site {
            span,
            replacement,
            tokens: open..close + 1,
        });
    }
    out
}
