//! The one PTX reader: which kernels a module has, their parameters' widths and whether each is
//! a float, and the lowered names of C++ kernels compiled from name expressions. Manifest
//! validation, grading and the loader all ask it, so "does this kernel exist with these
//! parameters" has one answer. PTX knows neither `const`, the pointee type nor signedness: a
//! pointer is an 8-byte integer here.

use std::collections::BTreeMap;

/// How `compile` writes a lowered name into the PTX text: `// racegate-name: EXPR = LOWERED`.
pub const NAME_COMMENT: &str = "// racegate-name: ";

/// One kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    /// In bytes: 1, 2, 4 or 8 (a struct passed by value: its `.b8` array's length).
    pub width: usize,
    /// `.f16`/`.f32`/`.f64` (NVRTC writes f16 and bf16 scalars as `.b16`, which reads as not float).
    pub float: bool,
}

/// One `.entry` of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub params: Vec<Param>,
}

/// Every kernel (`.entry`) of `ptx`, in order.
pub fn entries(ptx: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut rest = ptx;
    while let Some(at) = rest.find(".entry ") {
        let after = &rest[at + ".entry ".len()..];
        let name_end = after
            .find(|c: char| c == '(' || c.is_whitespace())
            .unwrap_or(after.len());
        let name = after[..name_end].to_string();
        let mut params = Vec::new();
        let body_from = after[name_end..].trim_start();
        if let Some(list) = body_from.strip_prefix('(') {
            let close = list.find(')').unwrap_or(list.len());
            for p in list[..close].split(',').filter(|p| p.contains(".param")) {
                params.push(param(p));
            }
            rest = &list[close..];
        } else {
            rest = after;
        }
        out.push(Entry { name, params });
    }
    out
}

fn param(decl: &str) -> Param {
    // `.param .u64 .ptr .global .align 1 k_param_0`, `.param .f32 k_param_1`,
    // `.param .align 4 .b8 k_param_2[12]`.
    let words: Vec<&str> = decl.split_whitespace().collect();
    let ty = words
        .iter()
        .skip(1)
        .find(|w| {
            w.len() >= 3
                && w.starts_with('.')
                && matches!(w.as_bytes()[1], b'u' | b's' | b'b' | b'f')
                && w[2..].chars().all(|c| c.is_ascii_digit())
        })
        .copied()
        .unwrap_or(".b8");
    let bits: usize = ty[2..].parse().unwrap_or(8);
    let array = decl
        .rsplit_once('[')
        .and_then(|(_, n)| n.trim_end_matches(']').trim().parse::<usize>().ok());
    Param {
        width: array.map_or(bits / 8, |n| n * bits / 8),
        float: ty.starts_with(".f"),
    }
}

/// The lowered names `compile` wrote into `ptx`: name expression -> mangled symbol.
pub fn names(ptx: &str) -> BTreeMap<String, String> {
    ptx.lines()
        .filter_map(|l| l.strip_prefix(NAME_COMMENT))
        .filter_map(|l| l.rsplit_once(" = "))
        .map(|(n, l)| (n.to_string(), l.trim().to_string()))
        .collect()
}

/// The entry a user's name refers to: itself, or the lowered name of a name expression.
pub fn find<'a>(
    entries: &'a [Entry],
    names: &BTreeMap<String, String>,
    name: &str,
) -> Option<&'a Entry> {
    let symbol = names.get(name).map_or(name, String::as_str);
    entries.iter().find(|e| e.name == symbol)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
.version 9.0
.target sm_90
.address_size 64

	// .globl	saxpy
.visible .entry saxpy(
	.param .u32 saxpy_param_0,
	.param .f32 saxpy_param_1,
	.param .u64 .ptr .global .align 1 saxpy_param_2,
	.param .u64 .ptr .global .align 1 saxpy_param_3
)
{
	ret;
}
.visible .entry _Z6reduceIfLi256EEvPKfPfi(
	.param .u64 .ptr .align 1 _Z6reduceIfLi256EEvPKfPfi_param_0,
	.param .u64 .ptr .align 1 _Z6reduceIfLi256EEvPKfPfi_param_1,
	.param .u32 _Z6reduceIfLi256EEvPKfPfi_param_2,
	.param .align 4 .b8 _Z6reduceIfLi256EEvPKfPfi_param_3[12],
	.param .b16 _Z6reduceIfLi256EEvPKfPfi_param_4,
	.param .f64 _Z6reduceIfLi256EEvPKfPfi_param_5
)
{
	ret;
}
.visible .entry noargs()
{
	ret;
}
// racegate-name: reduce<float, 256> = _Z6reduceIfLi256EEvPKfPfi
"#;

    #[test]
    fn entries_and_their_parameters() {
        let e = entries(PTX);
        assert_eq!(
            e.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["saxpy", "_Z6reduceIfLi256EEvPKfPfi", "noargs"]
        );
        let p = |w, f| Param { width: w, float: f };
        assert_eq!(
            e[0].params,
            [p(4, false), p(4, true), p(8, false), p(8, false)]
        );
        assert_eq!(
            e[1].params,
            [
                p(8, false),
                p(8, false),
                p(4, false),
                p(12, false),
                p(2, false),
                p(8, true)
            ]
        );
        assert!(e[2].params.is_empty());
    }

    #[test]
    fn a_name_expression_finds_its_mangled_entry() {
        let e = entries(PTX);
        let n = names(PTX);
        assert_eq!(n["reduce<float, 256>"], "_Z6reduceIfLi256EEvPKfPfi");
        assert_eq!(find(&e, &n, "reduce<float, 256>").unwrap().params.len(), 6);
        assert_eq!(find(&e, &n, "saxpy").unwrap().params.len(), 4);
        assert!(find(&e, &n, "missing").is_none());
    }
}
