//! A `__shared__` variable the kernel reads and no code of the module ever writes.
//!
//! sharedcheck sees reads of unwritten shared memory as they happen, but a read the compiler
//! deleted never happens: when a `__shared__` variable has no store left (`is_last = ...` removed,
//! `docs/mutate-survivors.md` #15), NVVM folds its loads to an undefined value and the binary
//! reads nothing (nvcc 13.0: no `ld.shared` of it, "has been demoted"), so whatever branch the
//! compiler picked runs, and no poison can show it. The unoptimized PTX (`-G`) still has every
//! access as written: a variable whose every access there is a load (followed from its address
//! through `mov`, `cvt` and `cvta` to the load's address operand) is read and never written. Any
//! other use of its address (arithmetic, a call, a store of the address) could write it: such a
//! variable is never reported. Dynamic shared memory (`extern .shared`) is not looked at.

use std::collections::{BTreeMap, BTreeSet};

/// One variable read and never written: its PTX name, the function and the line of a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeverWritten {
    pub symbol: String,
    /// The variable as the source names it (`is_last` of `_ZZ13sum_lastblockE7is_last`).
    pub name: String,
    pub function: String,
    /// `path:line` of the first read, from the PTX's `.loc`; `None` without one.
    pub line: Option<(String, u32)>,
}

/// The variables of `ptx` (unoptimized, `-G`) that are read and never written, their reads
/// counted only in functions reachable from `entry` (the case's kernel; `None`: every function).
pub fn find(ptx: &str, entry: Option<&str>) -> Vec<NeverWritten> {
    let stmts = statements(ptx);
    let mut files: BTreeMap<u32, String> = BTreeMap::new();
    let mut symbols: BTreeSet<String> = BTreeSet::new();
    for t in &stmts {
        if let Some(rest) = t.strip_prefix(".file") {
            let mut it = rest.split_whitespace();
            if let (Some(n), Some(p)) = (it.next().and_then(|n| n.parse().ok()), it.next()) {
                files.insert(n, p.trim_matches('"').to_string());
            }
        } else if t.starts_with(".shared") && !t.contains(".extern") {
            if let Some(name) = t.split_whitespace().last() {
                symbols.insert(name.split('[').next().unwrap_or(name).to_string());
            }
        }
    }
    let reachable = entry.map(|e| reachable_from(&stmts, e));
    let mut out = Vec::new();
    for sym in symbols {
        let mut reads: Vec<(String, Option<(u32, u32)>)> = Vec::new();
        let mut other = false;
        let mut tracked: BTreeSet<String> = BTreeSet::new();
        let mut function = String::new();
        let mut loc: Option<(u32, u32)> = None;
        for t in &stmts {
            if let Some(f) = function_name(t) {
                function = f;
                tracked.clear();
                continue;
            }
            if let Some(rest) = t.strip_prefix(".loc") {
                let mut it = rest.split_whitespace();
                if let (Some(f), Some(n)) = (
                    it.next().and_then(|f| f.parse().ok()),
                    it.next().and_then(|n| n.parse().ok()),
                ) {
                    loc = Some((f, n));
                }
                continue;
            }
            let Some((op, operands)) = instruction(t) else {
                continue;
            };
            // An operand that is the variable, a register holding its address, an address made
            // of either, or a vector `{...}` or call list `(...)` with one of them inside.
            let mentions = |o: &str| {
                o.trim_matches(|c| matches!(c, '(' | ')' | '{' | '}'))
                    .split(',')
                    .map(str::trim)
                    .any(|o| {
                        o == sym
                            || tracked.contains(o)
                            || strip_offset(o) == sym
                            || address(o).is_some_and(|a| a == sym || tracked.contains(a))
                    })
            };
            // A declaration or anything this parser does not read as an instruction, naming the
            // variable or its address: it may write it.
            let base = op.split('.').next().unwrap_or("");
            let (dest, srcs) = operands
                .split_first()
                .map_or(("", &[][..]), |(d, s)| (*d, s));
            let from = srcs.iter().any(|o| mentions(o));
            let at_dest = mentions(dest);
            if dest.starts_with('[') {
                // A store (or reduction) through an address: to the variable, or of its address.
                if at_dest || from {
                    other = true;
                    break;
                }
                continue;
            }
            if !from {
                if !at_dest {
                    continue;
                }
                // A register that held the address now holds something else, when the
                // instruction writes its first operand; any other mention may write the variable.
                if dest.starts_with('%') && WRITES_FIRST_OPERAND.contains(&base) {
                    tracked.remove(dest);
                    continue;
                }
                other = true;
                break;
            }
            if matches!(base, "mov" | "cvt" | "cvta") && srcs.len() == 1 {
                tracked.insert(dest.to_string());
            } else if base == "ld" && srcs.len() == 1 && address(srcs[0]).is_some() {
                if reachable.as_ref().is_none_or(|r| r.contains(&function)) {
                    reads.push((function.clone(), loc));
                }
            } else {
                // An atomic, arithmetic on the address, a call: it may be written.
                other = true;
                break;
            }
        }
        if other || reads.is_empty() {
            continue;
        }
        let (function, at) = reads.swap_remove(0);
        out.push(NeverWritten {
            name: source_name(&sym),
            symbol: sym,
            function,
            line: at.and_then(|(f, n)| files.get(&f).map(|p| (p.clone(), n))),
        });
    }
    out
}

/// Instructions whose first operand is a register they write (so a tracked register named
/// there is overwritten, not used).
const WRITES_FIRST_OPERAND: &[&str] = &[
    "mov", "cvt", "cvta", "ld", "add", "sub", "mul", "mad", "and", "or", "xor", "not", "shl",
    "shr", "selp", "setp", "min", "max", "neg", "abs", "div", "rem", "bfe", "prmt",
];

/// The PTX as statements: comments removed, lines joined until their `;` (a call's operands
/// span lines) and cut at each `;` (an inline-asm block puts several on one line), braces
/// dropped, empty ones left out. A line without `;` that is a directive (`.loc`, `.file`, a
/// function's header and parameters) or a label is a statement of its own.
fn statements(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let clean = |t: &str| {
        t.trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace())
            .to_string()
    };
    for line in ptx.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        if line
            .chars()
            .all(|c| matches!(c, '{' | '}' | '(' | ')' | ' ' | '\t'))
        {
            continue;
        }
        if pending.trim().is_empty()
            && !line.contains(';')
            && (line.starts_with('.') || line.ends_with(':'))
        {
            out.push(clean(line));
            continue;
        }
        pending.push(' ');
        pending.push_str(line);
        while let Some(i) = pending.find(';') {
            let t = clean(&pending[..i]);
            if !t.is_empty() {
                out.push(t);
            }
            pending.drain(..=i);
        }
    }
    let t = clean(&pending);
    if !t.is_empty() {
        out.push(t);
    }
    out
}

/// The name of the function a header statement opens (`.visible .entry NAME(`,
/// `.func (.param .b32 func_retval0) NAME(`, `.weak .func NAME()`), else `None`.
fn function_name(t: &str) -> Option<String> {
    let at = t.find(".entry").map(|i| i + ".entry".len()).or_else(|| {
        t.find(".func")
            .filter(|&i| t[..i].split_whitespace().all(|w| w.starts_with('.')))
            .map(|i| i + ".func".len())
    })?;
    let mut rest = t[at..].trim_start();
    if rest.starts_with('(') {
        // The return parameters.
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let name: String = rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '(')
        .collect();
    (!name.is_empty() && !name.starts_with('.')).then_some(name)
}

/// Every function a kernel named `entry` can reach through `call`s, itself included: the kernel
/// of that name, or a C++ one whose mangled name holds it as a whole identifier (its length,
/// then the name: `reduce` in `_Z6reduceIfLi256EEvPKT_PS0_i`).
fn reachable_from(stmts: &[String], entry: &str) -> BTreeSet<String> {
    let mut calls: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut kernels = Vec::new();
    let mut current = String::new();
    let mangled = format!("{}{entry}", entry.len());
    for t in stmts {
        if let Some(f) = function_name(t) {
            if t.contains(".entry") {
                kernels.push(f.clone());
            }
            current = f;
            continue;
        }
        if let Some((op, operands)) = instruction(t) {
            if op.starts_with("call") {
                for o in operands {
                    let callee = o.trim_matches(|c| c == '(' || c == ')').trim();
                    if !callee.is_empty() && !callee.starts_with('%') {
                        calls
                            .entry(current.clone())
                            .or_default()
                            .insert(callee.to_string());
                    }
                }
            }
        }
    }
    let mut seen: BTreeSet<String> = kernels
        .into_iter()
        .filter(|k| *k == entry || (k.starts_with("_Z") && k.contains(&mangled)))
        .collect();
    let mut todo: Vec<String> = seen.iter().cloned().collect();
    while let Some(f) = todo.pop() {
        for c in calls.get(&f).into_iter().flatten() {
            if seen.insert(c.clone()) {
                todo.push(c.clone());
            }
        }
    }
    seen
}

/// An instruction statement `[@p] op a, b, [c]` as its mnemonic and operands (directives,
/// labels and declarations are not instructions). A vector operand `{%r1, %r2}` is one operand.
fn instruction(t: &str) -> Option<(&str, Vec<&str>)> {
    if t.starts_with('.') || t.ends_with(':') || t.starts_with('$') {
        return None;
    }
    let t = if t.starts_with('@') {
        t.split_once(char::is_whitespace)?.1.trim()
    } else {
        t
    };
    let (op, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    let mut operands = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in rest.char_indices() {
        match c {
            '{' | '(' => depth += 1,
            '}' | ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                operands.push(rest[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    operands.push(rest[start..].trim());
    operands.retain(|o| !o.is_empty());
    Some((op, operands))
}

/// `[%rd12]`, `[%r3+8]`, `[sym+4]` -> the register or symbol inside.
fn address(o: &str) -> Option<&str> {
    let inner = o.strip_prefix('[')?.strip_suffix(']')?;
    Some(strip_offset(inner.trim()))
}

/// `sym+4` -> `sym`.
fn strip_offset(o: &str) -> &str {
    o.split('+').next().unwrap_or(o).trim()
}

/// `_ZZ13sum_lastblockE7is_last` -> `is_last`; other names as they are.
fn source_name(sym: &str) -> String {
    if let Some(rest) = sym.strip_prefix("_ZZ") {
        if let Some(e) = rest.rfind('E') {
            let tail = &rest[e + 1..];
            let digits: String = tail.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse::<usize>() {
                if let Some(name) = tail.get(digits.len()..digits.len() + n) {
                    return name.to_string();
                }
            }
        }
    }
    sym.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ_ONLY: &str = r#"
.visible .entry k(
	.param .u64 k_param_0
)
{
	.shared .align 1 .u8 _ZZ1kE7is_last;
	.shared .align 4 .b8 _ZZ1kE4tile[64];
	.loc	1 53 5
	mov.u32 	%r23, _ZZ1kE7is_last;
	{ .reg .b64 %tmp;
	  cvt.u64.u32 	%tmp, %r23;
	  cvta.shared.u64 	%rd12, %tmp; }
	ld.u8 	%rs1, [%rd12];
	.loc	1 60 5
	mov.u32 	%r24, _ZZ1kE4tile;
	{ .reg .b64 %tmp;
	  cvt.u64.u32 	%tmp, %r24;
	  cvta.shared.u64 	%rd13, %tmp; }
	st.u32 	[%rd13], %r1;
	ld.u32 	%r2, [%rd13];
	ret;
}
	.file	1 "/w/kernels/k.cu"
"#;

    #[test]
    fn a_shared_variable_only_loaded_is_found_with_its_line() {
        let f = find(READ_ONLY, Some("k"));
        assert_eq!(find(READ_ONLY, None), f);
        // Reads in a kernel other than the case's do not count.
        assert!(find(READ_ONLY, Some("other")).is_empty());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].name, "is_last");
        assert_eq!(f[0].function, "k");
        assert_eq!(f[0].line, Some(("/w/kernels/k.cu".to_string(), 53)));
    }

    #[test]
    fn a_store_an_atomic_or_address_arithmetic_means_it_may_be_written() {
        for (what, extra) in [
            ("a store", "\tst.shared.u8 \t[_ZZ1kE7is_last], %rs3;"),
            (
                "an atomic",
                "\tatom.shared.exch.b32 \t%r9, [_ZZ1kE7is_last], 0;",
            ),
            ("arithmetic", "\tadd.s32 \t%r30, %r23, 4;"),
            ("a stored address", "\tst.u64 \t[%rd40], %rd12;"),
            ("a call", "\tcall.uni (retval0), f, (%rd12);"),
        ] {
            let ptx = READ_ONLY.replace("\tret;", &format!("{extra}\n\tret;"));
            assert!(
                find(&ptx, None).iter().all(|f| f.name != "is_last"),
                "{what}: {:?}",
                find(&ptx, None)
            );
        }
        // Dynamic shared memory is never judged.
        let ptx = ".extern .shared .align 16 .b8 smem[];\n\tmov.u32 %r1, smem;\n\tld.shared.u32 %r2, [%r1];\n";
        assert!(find(ptx, None).is_empty());
    }

    /// The whole class of uses the parser does not read as a load: every mnemonic below, the
    /// variable's address (the symbol itself, or a register holding it) in every operand place
    /// and address form, with and without a predicate, a comment or a second statement on the
    /// line. None may leave the variable "never written"; only a plain load may count as a read.
    #[test]
    fn every_use_of_the_address_but_a_load_counts_as_a_possible_write() {
        let ops = [
            "st.shared.u32",
            "st.u32",
            "st.v2.u32",
            "st.volatile.shared.u8",
            "atom.shared.add.u32",
            "atom.exch.b32",
            "red.shared.add.u32",
            "cp.async.ca.shared.global",
            "add.s64",
            "add.u32",
            "mad.lo.s32",
            "sub.s64",
            "and.b64",
            "cvt.u32.u64",
            "call.uni",
            "mov.b64",
            "stmatrix.sync.aligned.m8n8.x4.shared.b16",
            "mbarrier.init.shared.b64",
            "prefetch.L1",
            "selp.b64",
            "shfl.sync.idx.b32",
            "st.global.u64",
        ];
        let addr = [
            "%rd12",
            "[%rd12]",
            "[%rd12+4]",
            "_ZZ1kE7is_last",
            "[_ZZ1kE7is_last+0]",
            "{%rd12, %rd13}",
            "(%rd12)",
        ];
        let mut tried = 0;
        for op in ops {
            for a in addr {
                for place in 0..3 {
                    let mut operands = ["%r90", "%r91", "%r92"];
                    operands[place] = a;
                    for (pre, post) in [
                        ("", ""),
                        ("@%p1 ", ""),
                        ("", " // note"),
                        ("", "; mov.u32 %r93, 1"),
                    ] {
                        let line = format!("\t{pre}{op} \t{};{post}", operands.join(", "));
                        let ptx = READ_ONLY.replace("\tret;", &format!("{line}\n\tret;"));
                        let found = find(&ptx, Some("k"));
                        let base = op.split('.').next().unwrap_or("");
                        // The register written by a register-writing instruction is overwritten,
                        // not used: the variable stays read and never written.
                        let overwrite =
                            place == 0 && a == "%rd12" && WRITES_FIRST_OPERAND.contains(&base);
                        assert_eq!(
                            found.iter().any(|f| f.name == "is_last"),
                            overwrite,
                            "`{line}`"
                        );
                        tried += 1;
                    }
                }
            }
        }
        assert!(tried > 1500, "{tried}");
    }

    #[test]
    fn source_names_come_from_the_mangled_local_name() {
        assert_eq!(source_name("_ZZ13sum_lastblockE7is_last"), "is_last");
        assert_eq!(source_name("_ZZ4dot_IfEvPKT_E5warps"), "warps");
        assert_eq!(source_name("plain_name"), "plain_name");
    }
}
