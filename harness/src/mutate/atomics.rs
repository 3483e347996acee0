//! atomic-to-plain (the operator's docs say each rewrite): an atomic read-modify-write call
//! rewritten as the plain read-modify-write it stands for.

use super::code::{Code, Site};
use crate::source::cscan::Kind;

/// The atomics rewritten, by their name without a `_block`/`_system` scope suffix.
const ATOMICS: [&str; 11] = [
    "atomicAdd",
    "atomicSub",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
    "atomicMax",
    "atomicMin",
    "atomicExch",
    "atomicInc",
    "atomicDec",
    "atomicCAS",
];

/// The plain update for `op` on the lvalue `x` with the other arguments `a` (already
/// parenthesized where needed), as a statement without its `;`.
fn update(op: &str, x: &str, a: &[String]) -> Option<String> {
    let v = a.first()?;
    Some(match op {
        "atomicAdd" => format!("{x} += {v}"),
        "atomicSub" => format!("{x} -= {v}"),
        "atomicAnd" => format!("{x} &= {v}"),
        "atomicOr" => format!("{x} |= {v}"),
        "atomicXor" => format!("{x} ^= {v}"),
        "atomicMax" => format!("{x} = max({x}, {v})"),
        "atomicMin" => format!("{x} = min({x}, {v})"),
        "atomicExch" => format!("{x} = {v}"),
        "atomicInc" => format!("{x} = ({x} >= {v}) ? 0 : {x} + 1"),
        "atomicDec" => format!("{x} = ({x} == 0 || {x} > {v}) ? {v} : {x} - 1"),
        "atomicCAS" => format!("{x} = ({x} == {v}) ? {} : {x}", a.get(1)?),
        _ => return None,
    })
}

/// The arguments of the call whose `(` is at `open`, as token ranges.
fn arguments(code: &Code, open: usize) -> Vec<std::ops::Range<usize>> {
    let close = code.matching(open);
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = open + 1;
    for k in open + 1..close {
        match code.toks[k].canonical() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => {
                out.push(start..k);
                start = k + 1;
            }
            _ => {}
        }
    }
    if start < close {
        out.push(start..close);
    }
    out
}

/// Whether tokens `r` are a name followed by subscripts and member accesses only (`a`,
/// `a[i].b`, `p->c[2]`): an lvalue that needs no parentheses.
fn is_postfix_lvalue(code: &Code, r: std::ops::Range<usize>) -> bool {
    if r.is_empty() || code.toks[r.start].kind != Kind::Ident {
        return false;
    }
    let mut k = r.start + 1;
    while k < r.end {
        let t = &code.toks[k];
        if t.is_punct("[") {
            k = code.matching(k) + 1;
        } else if (t.is_punct(".") || t.is_punct("->"))
            && code.toks.get(k + 1).is_some_and(|n| n.kind == Kind::Ident)
        {
            k += 2;
        } else {
            return false;
        }
    }
    k == r.end
}

/// Every atomic call rewritten.
pub fn sites(code: &Code) -> Vec<Site> {
    let mut out = Vec::new();
    for i in 0..code.toks.len() {
        let t = &code.toks[i];
        if t.kind != Kind::Ident {
            continue;
        }
        let base = t
            .text
            .strip_suffix("_block")
            .or_else(|| t.text.strip_suffix("_system"))
            .unwrap_or(&t.text);
        if !ATOMICS.contains(&base) || !code.toks.get(i + 1).is_some_and(|n| n.is_punct("(")) {
            continue;
        }
        let close = code.matching(i + 1);
        let args = arguments(code, i + 1);
        let want = if base == "atomicCAS" { 3 } else { 2 };
        if args.len() != want || args.iter().any(|a| a.is_empty()) {
            continue;
        }
        let addr = args[0].clone();
        let x = if code.toks[addr.start].is_punct("&")
            && is_postfix_lvalue(code, addr.start + 1..addr.end)
        {
            code.text(addr.start + 1, addr.end - 1).to_string()
        } else if addr.len() == 1 && code.toks[addr.start].kind == Kind::Ident {
            format!("*{}", code.text(addr.start, addr.start))
        } else {
            format!("*({})", code.text(addr.start, addr.end - 1))
        };
        let rest: Vec<String> = args[1..]
            .iter()
            .map(
                |a| match a.len() == 1 || is_postfix_lvalue(code, a.clone()) {
                    true => code.text(a.start, a.end - 1).to_string(),
                    false => format!("({})", code.text(a.start, a.end - 1)),
                },
            )
            .collect();
        let Some(stmt) = update(base, &x, &rest) else {
            continue;
        };
        let unused =
            code.starts_statement(i) && code.toks.get(close + 1).is_some_and(|n| n.is_punct(";"));
        let replacement = match unused {
            true => stmt,
            false => format!("[&] {{ auto racegate_old = {x}; {stmt}; return racegate_old; }}()"),
        };
        out.push(Site {
            span: code.span(i, close),
            replacement,
            tokens: i..close + 1,
        });
    }
    out
}
