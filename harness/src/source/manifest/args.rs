//! One `args` entry of a kernel: a buffer (direction, type, length, generator, how it is
//! compared, whether it may stay unwritten) or a scalar (type and value). What can be checked
//! without the sizes is checked here; expressions are checked over the whole size range by
//! `validate.rs`.

use serde::Deserialize;
use toml::Spanned;

use super::gen::Gen;
use super::spec::{ArgSpec, BufKind};
use crate::source::values::{Compare, Elem, Tolerance};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawArg {
    pub name: String,
    kind: Spanned<String>,
    #[serde(rename = "type")]
    ty: Spanned<String>,
    len: Option<String>,
    gen: Option<String>,
    value: Option<String>,
    compare: Option<RawCompare>,
    unwritten: Option<bool>,
}

/// `compare = "exact" | "ignore" | "unordered"`, or a table read by [`CompareTable`] (kept
/// as a plain table first so that a misspelled key gets toml's own message).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawCompare {
    Named(String),
    Table(toml::Table),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareTable {
    tolerance: Option<RawTolerance>,
    #[serde(default)]
    unordered: bool,
    prefix: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTolerance {
    abs: Option<f64>,
    rel: Option<f64>,
    ulp: Option<u64>,
}

/// An error in an argument: the key under `args.NAME` and the message.
pub(super) type ArgError = (String, String);

fn types() -> String {
    Elem::ALL.map(Elem::name).join(", ")
}

fn elem(ty: &str) -> Result<Elem, ArgError> {
    Elem::from_name(ty).ok_or_else(|| ("type".into(), format!("`{ty}`: expected {}", types())))
}

/// Reads one argument; `tolerance` is the kernel-level tolerance, applied to float outputs
/// that give none of their own.
pub(super) fn parse(a: &RawArg, tolerance: f32) -> Result<ArgSpec, ArgError> {
    let kind = a.kind.get_ref().as_str();
    let elem = elem(a.ty.get_ref())?;
    let refuse = |key: &str, why: &str| -> Result<(), ArgError> { Err((key.into(), why.into())) };
    if kind == "scalar" {
        for (given, key) in [
            (a.len.is_some(), "len"),
            (a.gen.is_some(), "gen"),
            (a.compare.is_some(), "compare"),
            (a.unwritten.is_some(), "unwritten"),
        ] {
            if given {
                refuse(key, "a scalar takes `type` and `value` only")?;
            }
        }
        let value = a
            .value
            .clone()
            .ok_or_else(|| ("value".to_string(), "a scalar needs `value`".to_string()))?;
        return Ok(ArgSpec::Scalar {
            name: a.name.clone(),
            elem,
            value,
        });
    }
    let kind = match kind {
        "in" => BufKind::In,
        "out" => BufKind::Out,
        "inout" => BufKind::InOut,
        other => {
            return Err((
                "kind".into(),
                format!("`{other}`: expected in, out, inout or scalar"),
            ))
        }
    };
    if a.value.is_some() {
        refuse("value", "a buffer takes `len` (and `gen`), not `value`")?;
    }
    let len = a
        .len
        .clone()
        .ok_or_else(|| ("len".to_string(), "a buffer needs `len`".to_string()))?;
    let gen =
        match (&a.gen, kind) {
            (None, BufKind::Out) => Gen::Zeros,
            (Some(_), BufKind::Out) => return Err((
                "gen".into(),
                "an out buffer starts as poison, so `gen` would be ignored; make it `inout` to \
                 start from generated data"
                    .into(),
            )),
            (None, _) => return Err((
                "gen".into(),
                "an in or inout buffer needs `gen` (such as \"int(0, 8)\", \"zeros\" or \"iota\")"
                    .into(),
            )),
            (Some(g), _) => Gen::parse(g).map_err(|m| ("gen".to_string(), m))?,
        };
    if gen.is_float() && !elem.is_float() {
        return Err((
            "gen".into(),
            format!(
                "`{}` draws floats, which a {} buffer cannot hold; use int(lo, hi)",
                a.gen.as_deref().unwrap_or_default(),
                elem.name()
            ),
        ));
    }
    if a.unwritten.is_some() && kind != BufKind::Out {
        refuse(
            "unwritten",
            "only an out buffer may stay unwritten: an inout buffer keeps its data where the \
             kernel does not write, and that is compared",
        )?;
    }
    let mut compare =
        match &a.compare {
            None => Compare::default(),
            Some(_) if kind == BufKind::In => return Err((
                "compare".into(),
                "an in buffer is not compared: it must come back unchanged; make it `inout` if \
                 the kernel writes it"
                    .into(),
            )),
            Some(c) => compare(c, elem).map_err(|m| ("compare".to_string(), m))?,
        };
    if tolerance > 0.0 && elem.is_float() && compare.tolerance.is_none() && !compare.ignore {
        compare.tolerance = Some(Tolerance {
            abs: tolerance as f64,
            ..Tolerance::default()
        });
    }
    Ok(ArgSpec::Buffer {
        name: a.name.clone(),
        kind,
        elem,
        len,
        gen,
        compare,
        unwritten: a.unwritten.unwrap_or(false),
    })
}

fn compare(c: &RawCompare, elem: Elem) -> Result<Compare, String> {
    let t = match c {
        RawCompare::Named(s) => {
            return match s.as_str() {
                "exact" => Ok(Compare::default()),
                "ignore" => Ok(Compare {
                    ignore: true,
                    ..Compare::default()
                }),
                "unordered" => Ok(Compare {
                    unordered: true,
                    ..Compare::default()
                }),
                other => Err(format!(
                    "`{other}`: expected \"exact\", \"ignore\", \"unordered\" or a table \
                     {{ tolerance = {{ abs = .., rel = .., ulp = .. }}, unordered = true, prefix = \"EXPR\" }}"
                )),
            }
        }
        RawCompare::Table(t) => t,
    };
    let t: CompareTable = toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim_end().to_string())?;
    let tolerance = match t.tolerance {
        None => None,
        Some(_) if !elem.is_float() => {
            return Err(format!(
                "a tolerance is for float buffers; {} is compared exactly",
                elem.name()
            ))
        }
        Some(RawTolerance {
            abs: None,
            rel: None,
            ulp: None,
        }) => return Err("`tolerance`: give abs, rel or ulp".into()),
        Some(r) => {
            for (name, v) in [("abs", r.abs), ("rel", r.rel)] {
                if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                    return Err(format!("`tolerance.{name}`: need a finite number >= 0"));
                }
            }
            Some(Tolerance {
                abs: r.abs.unwrap_or(0.0),
                rel: r.rel.unwrap_or(0.0),
                ulp: r.ulp.unwrap_or(0),
            })
        }
    };
    if let Some(p) = &t.prefix {
        if p.trim().is_empty() {
            return Err("`prefix`: give an expression, such as \"count[0]\"".into());
        }
    }
    Ok(Compare {
        ignore: false,
        tolerance,
        unordered: t.unordered,
        prefix: t.prefix,
    })
}

/// Checks a launch's argument names against the kernel's: each known, none twice. Linear in
/// the number of arguments (a generated manifest can have tens of thousands).
pub(super) fn arg_names(names: &[String], args: &[ArgSpec]) -> std::result::Result<(), String> {
    let known: std::collections::HashSet<&str> = args.iter().map(|a| a.name()).collect();
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !known.contains(n.as_str()) {
            const SHOWN: usize = 20;
            let mut list: Vec<&str> = args.iter().take(SHOWN).map(|a| a.name()).collect();
            let more = args.len().saturating_sub(SHOWN);
            let more = format!(" and {more} more");
            if args.len() > SHOWN {
                list.push(&more);
            }
            return Err(format!(
                "`{n}` is not an argument (arguments: {})",
                list.join(", ")
            ));
        }
        if !seen.insert(n.as_str()) {
            return Err(format!("`{n}` is listed twice"));
        }
    }
    Ok(())
}
