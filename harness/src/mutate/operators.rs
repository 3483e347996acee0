//! The mutation operators: each is a small, named, documented change that a correct CUDA kernel
//! must not survive, found on the code tokens of [`super::code`] (never inside a comment, a
//! string or a preprocessor directive). Each operator yields [`Site`]s: a byte span of the
//! original text and what replaces it. Atomics, whose rewrite is the longest, are in
//! [`super::atomics`]; padding and swizzle removal, which change speed and not results, in
//! [`super::bank`] (their mutants are judged by `racegate perf`'s counters, [`Operator::speed_only`]).

use serde::Serialize;

use super::atomics;
use super::bank;
use super::code::{shared_names, Code, Site};
use crate::source::cscan::Kind;

/// One mutation operator.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Operator {
    /// `__syncthreads();` deleted (a lone body of `if`/`for`/`while` becomes `;`; a line left
    /// empty goes too). `__syncthreads_count/_and/_or` are not touched: they return a value the
    /// code goes on to use, so deleting them is a different change (a wrong value, not a
    /// missing barrier).
    RemoveBarrier,
    /// `__syncthreads();` -> `if (((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +
    /// threadIdx.x) % 2 == 0) __syncthreads();`: the barrier taken by every other thread of the
    /// block (a condition on the linear thread index, so 2-D blocks diverge too, inside every
    /// warp).
    BarrierIntoBranch,
    /// An atomic read-modify-write becomes a plain one: `atomicAdd(&x, v)` -> `x += v`,
    /// `atomicSub` -> `-=`, `atomicAnd/Or/Xor` -> `&=`/`|=`/`^=`, `atomicMax/Min` ->
    /// `x = max(x, v)`, `atomicExch` -> `x = v`, `atomicInc(&x, m)` ->
    /// `x = (x >= m) ? 0 : x + 1`, `atomicDec(&x, m)` -> `x = (x == 0 || x > m) ? m : x - 1`,
    /// `atomicCAS(&x, c, v)` -> `x = (x == c) ? v : x` (the `_block` and `_system` forms too).
    /// An address that is not `&lvalue` is dereferenced: `atomicAdd(p + i, v)` ->
    /// `*(p + i) += v`. Where the old value is used (`int slot = atomicAdd(&n, 1)`), the call
    /// becomes `[&] { auto racegate_old = x; x += v; return racegate_old; }()`, which returns
    /// the old value as the atomic did.
    AtomicToPlain,
    /// `__syncwarp();` or `__syncwarp(mask);` deleted, as remove-barrier does.
    DropSyncwarp,
    /// The full mask `0xffffffff` (any spelling of that number, suffix kept) as the first
    /// argument of a warp intrinsic (`__shfl*_sync`, `__ballot_sync`, `__all_sync`,
    /// `__any_sync`, `__uni_sync`, `__match_*_sync`, `__reduce_*_sync`, `__syncwarp`) ->
    /// `0x0000ffff`: the upper 16 lanes are left out. A mask held in a macro or a variable is
    /// not followed.
    ShuffleMaskNarrow,
    /// In the condition of an `if` or `while`, or the condition part of a `for`, one comparison
    /// admits its bound: `<` -> `<=` and `>=` -> `>` (`i < n` lets `i == n` in; an exit guard
    /// `if (i >= n) return;` lets `i == n` through). One mutant per comparison; `<` of a cast
    /// (`static_cast<int>`) is not one.
    BoundsOffByOne,
    /// A plain store into a `__shared__` variable (`s[tid] = ...;`, `flag = 0;`) that stands
    /// before the function's first `__syncthreads()` (anywhere in a function with none) is
    /// deleted, as remove-barrier deletes; inside an init loop (`for (...) s[i] = 0;`) the loop
    /// is left with an empty body. Compound assignments, atomics and stores through a pointer
    /// to shared memory are not such stores.
    DropSharedInit,
    /// A `__shared__` array's padding column removed: a last dimension that is the one before it
    /// plus one (`[TILE][TILE + 1]`, `[32][33]`) becomes the one before it. Results stay right;
    /// the bank conflicts come back: judged by `racegate perf` (`bank-conflicts=none` broken).
    PaddingRemoval,
    /// An XOR swizzle of a shared array's index removed: `(c ^ r)` or `[c ^ r]` inside a shared
    /// array's subscript, or in the device helper that computes one (`tile[swz(r, c)]`), becomes
    /// `c`. Judged by `racegate perf`, as padding-removal.
    SwizzleRemoval,
}

impl Operator {
    /// Every operator, in the order mutants are listed.
    pub const ALL: [Operator; 9] = [
        Operator::RemoveBarrier,
        Operator::BarrierIntoBranch,
        Operator::AtomicToPlain,
        Operator::DropSyncwarp,
        Operator::ShuffleMaskNarrow,
        Operator::BoundsOffByOne,
        Operator::DropSharedInit,
        Operator::PaddingRemoval,
        Operator::SwizzleRemoval,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operator::RemoveBarrier => "remove-barrier",
            Operator::BarrierIntoBranch => "barrier-into-branch",
            Operator::AtomicToPlain => "atomic-to-plain",
            Operator::DropSyncwarp => "drop-syncwarp",
            Operator::ShuffleMaskNarrow => "shuffle-mask-narrow",
            Operator::BoundsOffByOne => "bounds-off-by-one",
            Operator::DropSharedInit => "drop-shared-init",
            Operator::PaddingRemoval => "padding-removal",
            Operator::SwizzleRemoval => "swizzle-removal",
        }
    }

    /// Whether its mutants change speed only (the results stay right): the battery cannot kill
    /// them, `racegate perf`'s counters can.
    pub fn speed_only(self) -> bool {
        matches!(self, Operator::PaddingRemoval | Operator::SwizzleRemoval)
    }

    pub fn from_name(s: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|o| o.name() == s)
    }

    /// Every place in `code` this operator changes, in source order.
    pub fn sites(self, code: &Code) -> Vec<Site> {
        match self {
            Operator::RemoveBarrier => delete_calls(code, "__syncthreads"),
            Operator::BarrierIntoBranch => barrier_into_branch(code),
            Operator::AtomicToPlain => atomics::sites(code),
            Operator::DropSyncwarp => delete_calls(code, "__syncwarp"),
            Operator::ShuffleMaskNarrow => narrow_masks(code),
            Operator::BoundsOffByOne => off_by_one(code),
            Operator::DropSharedInit => drop_shared_init(code),
            Operator::PaddingRemoval => bank::padding(code),
            Operator::SwizzleRemoval => bank::swizzle(code),
        }
    }
}

impl std::fmt::Display for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The condition barrier-into-branch puts the barrier under.
pub const BRANCH: &str =
    "if (((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 2 == 0) ";

/// Calls statements `name(...);` at statement start: (first token, `;` token).
fn call_statements<'c>(code: &'c Code, name: &'c str) -> impl Iterator<Item = (usize, usize)> + 'c {
    (0..code.toks.len()).filter_map(move |i| {
        let t = &code.toks[i];
        if !t.is_ident(name) || !code.toks.get(i + 1).is_some_and(|n| n.is_punct("(")) {
            return None;
        }
        let close = code.matching(i + 1);
        let semi = close + 1;
        (code.starts_statement(i) && code.toks.get(semi).is_some_and(|s| s.is_punct(";")))
            .then_some((i, semi))
    })
}

fn delete_calls(code: &Code, name: &str) -> Vec<Site> {
    call_statements(code, name)
        .map(|(first, last)| {
            let (span, replacement) = code.delete_statement(first, last);
            Site {
                span,
                replacement,
                tokens: first..last + 1,
            }
        })
        .collect()
}

fn barrier_into_branch(code: &Code) -> Vec<Site> {
    call_statements(code, "__syncthreads")
        .map(|(first, last)| Site {
            span: code.span(first, first),
            replacement: format!("{BRANCH}__syncthreads"),
            tokens: first..last + 1,
        })
        .collect()
}

/// Warp intrinsics whose first argument is a lane mask.
const MASKED: [&str; 17] = [
    "__shfl_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__shfl_xor_sync",
    "__ballot_sync",
    "__all_sync",
    "__any_sync",
    "__uni_sync",
    "__match_any_sync",
    "__match_all_sync",
    "__reduce_add_sync",
    "__reduce_min_sync",
    "__reduce_max_sync",
    "__reduce_and_sync",
    "__reduce_or_sync",
    "__reduce_xor_sync",
    "__syncwarp",
];

/// A number token's value and its suffix (`0xffffffffu` -> (0xffffffff, "u")).
fn number_value(text: &str) -> Option<(u64, String)> {
    let clean = text.replace('\'', "");
    let body = clean.trim_end_matches(['u', 'U', 'l', 'L']);
    let suffix = clean[body.len()..].to_string();
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u64::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse().ok()?
    };
    Some((v, suffix))
}

fn narrow_masks(code: &Code) -> Vec<Site> {
    let mut out = Vec::new();
    for i in 0..code.toks.len() {
        let t = &code.toks[i];
        if t.kind != Kind::Ident || !MASKED.contains(&t.text.as_str()) {
            continue;
        }
        let (Some(open), Some(mask), Some(after)) = (
            code.toks.get(i + 1),
            code.toks.get(i + 2),
            code.toks.get(i + 3),
        ) else {
            continue;
        };
        if !open.is_punct("(") || mask.kind != Kind::Number {
            continue;
        }
        if !(after.is_punct(",") || after.is_punct(")")) {
            continue;
        }
        if let Some((0xffff_ffff, suffix)) = number_value(&mask.text) {
            out.push(Site {
                span: mask.span.clone(),
                replacement: format!("0x0000ffff{suffix}"),
                tokens: i..code.matching(i + 1) + 1,
            });
        }
    }
    out
}

/// Casts and templates whose `<` is no comparison.
const ANGLED: [&str; 5] = [
    "static_cast",
    "reinterpret_cast",
    "const_cast",
    "dynamic_cast",
    "template",
];

fn off_by_one(code: &Code) -> Vec<Site> {
    let mut out = Vec::new();
    for i in 0..code.toks.len() {
        let t = &code.toks[i];
        let is_loop = t.is_ident("for");
        if !(t.is_ident("if") || t.is_ident("while") || is_loop) {
            continue;
        }
        if !code.toks.get(i + 1).is_some_and(|n| n.is_punct("(")) {
            continue;
        }
        let close = code.matching(i + 1);
        let mut cond = i + 2..close;
        if is_loop {
            // The condition is between the two `;` of the header (a range-for has none).
            let semis: Vec<usize> = cond
                .clone()
                .filter(|&k| code.toks[k].is_punct(";") && depth_between(code, i + 1, k) == 1)
                .collect();
            match semis.as_slice() {
                [a, b] => cond = a + 1..*b,
                _ => continue,
            }
        }
        for k in cond {
            let tok = &code.toks[k];
            let replacement = match tok.canonical() {
                "<" => "<=",
                ">=" => ">",
                _ => continue,
            };
            if tok.text == "<" && k > 0 && ANGLED.iter().any(|w| code.toks[k - 1].is_ident(w)) {
                continue;
            }
            out.push(Site {
                span: tok.span.clone(),
                replacement: replacement.into(),
                tokens: i..close + 1,
            });
        }
    }
    out
}

/// The bracket depth at token `k`, counted from the `(` at `open` (1 just inside it).
fn depth_between(code: &Code, open: usize, k: usize) -> i32 {
    let mut d = 0;
    for t in &code.toks[open..k] {
        match t.canonical() {
            "(" | "[" | "{" => d += 1,
            ")" | "]" | "}" => d -= 1,
            _ => {}
        }
    }
    d
}

fn drop_shared_init(code: &Code) -> Vec<Site> {
    let is_shared = |k: usize| code.toks[k].is_ident("__shared__");
    let global: Vec<String> = (0..code.toks.len())
        .filter(|&k| is_shared(k) && code.func_of(k).is_none())
        .flat_map(|k| shared_names(code, k))
        .collect();
    let mut out = Vec::new();
    for f in &code.funcs {
        let mut names = global.clone();
        let body = f.open + 1..f.close;
        for k in body.clone().filter(|&k| is_shared(k)) {
            names.extend(shared_names(code, k));
        }
        let barrier = body
            .clone()
            .find(|&k| code.toks[k].is_ident("__syncthreads"))
            .unwrap_or(f.close);
        let mut k = f.open + 1;
        while k < barrier {
            let t = &code.toks[k];
            let store = t.kind == Kind::Ident
                && names.contains(&t.text)
                && code.starts_statement(k)
                && assigns(code, k);
            if let (true, Some(semi)) = (store, code.statement_end(k)) {
                let (span, replacement) = code.delete_statement(k, semi);
                out.push(Site {
                    span,
                    replacement,
                    tokens: k..semi + 1,
                });
                k = semi + 1;
                continue;
            }
            k += 1;
        }
    }
    out
}

/// Whether the statement at `k` is `name` (with any `[...]` subscripts) `=` ...
fn assigns(code: &Code, k: usize) -> bool {
    let mut j = k + 1;
    while code.toks.get(j).is_some_and(|t| t.is_punct("[")) {
        j = code.matching(j) + 1;
    }
    code.toks.get(j).is_some_and(|t| t.is_punct("="))
}
