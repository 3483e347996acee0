//! Source stage for users' own kernels: `racegate.toml`, a manifest that describes each kernel
//! well enough to stress it and sanitize it with no Rust written.
//!
//! ```toml
//! [[kernel]]
//! name = "block_sum"                    # the name in reports and in the baseline
//! source = "kernels/block_sum.cu"       # relative to the manifest's folder
//! entry = "block_sum"                   # extern "C" kernel name
//! options = ["-DBLOCK=256"]             # extra NVRTC options (optional)
//! sizes = { n = [1, 1000000] }          # named sizes: [lo, hi] drawn per input set, or a number
//! sanitize_sizes = { n = 1000 }         # small sizes for the sanitizers (default: each lo)
//! grid = ["ceil_div(n, 256)"]           # up to 3 integer expressions over the sizes
//! block = ["256"]
//! oracle = "determinism"                # or { reference = "ref.cu:kernel" }, or "none"
//! tolerance = 0.0                       # absolute, for f32 outputs (default 0: bit-exact)
//! args = [
//!   { name = "x", kind = "in", type = "f32", len = "n", gen = "int(0, 8)" },
//!   { name = "out", kind = "out", type = "f32", len = "ceil_div(n, 256)" },
//!   { name = "n", kind = "scalar", type = "i32", value = "n" },
//! ]
//! ```
//!
//! Every error names the manifest, the line and the key.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::ChaCha8Rng;
use rand::RngExt;
use serde::Deserialize;
use toml::Spanned;

use crate::entry::Entry;
use crate::errors::{Error, Result};
use crate::exercises::{Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice};

/// The default manifest file name.
pub const FILE: &str = "racegate.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    kernel: Vec<Spanned<RawKernel>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    name: Spanned<String>,
    source: Spanned<String>,
    entry: Spanned<String>,
    #[serde(default)]
    options: Vec<String>,
    sizes: Spanned<BTreeMap<String, SizeSpec>>,
    #[serde(default)]
    sanitize_sizes: Option<Spanned<BTreeMap<String, u32>>>,
    grid: Spanned<Vec<String>>,
    block: Spanned<Vec<String>>,
    oracle: Spanned<RawCheck>,
    #[serde(default)]
    tolerance: Option<f32>,
    args: Vec<Spanned<RawArg>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum SizeSpec {
    Fixed(u32),
    Range([u32; 2]),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawCheck {
    Named(String),
    Reference { reference: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArg {
    name: String,
    kind: Spanned<String>,
    #[serde(rename = "type")]
    ty: Spanned<String>,
    len: Option<Spanned<String>>,
    gen: Option<Spanned<String>>,
    value: Option<Spanned<String>>,
}

/// What checks a kernel's results (the manifest's `oracle` key): this decides where the
/// expected outputs come from; comparing them is `crate::oracle`'s job.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// A trusted kernel run on the same inputs: `path` (relative to the manifest) and entry.
    Reference { path: String, entry: String },
    /// The same inputs under different jitter seeds must give identical outputs.
    Determinism,
    /// Sanitizers only.
    None,
}

/// How an argument's data is made.
#[derive(Clone, Debug, PartialEq)]
pub enum Gen {
    /// Uniform integers in lo..=hi (stored in the buffer's type).
    Int(i64, i64),
    Zeros,
    /// 0, 1, 2, ...
    Iota,
}

/// One kernel argument.
#[derive(Clone, Debug)]
pub enum ArgSpec {
    Buffer {
        name: String,
        kind: BufKind,
        elem: Elem,
        len: String,
        gen: Gen,
    },
    Scalar {
        name: String,
        value: String,
    },
}

/// Direction of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufKind {
    In,
    Out,
    InOut,
}

/// One kernel of the manifest.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub name: String,
    /// Relative to the manifest's folder.
    pub source: String,
    pub entry: String,
    pub options: Vec<String>,
    pub sizes: BTreeMap<String, (u32, u32)>,
    pub sanitize_sizes: BTreeMap<String, u32>,
    pub grid: Vec<String>,
    pub block: Vec<String>,
    /// The `oracle` key.
    pub check: Check,
    pub tolerance: f32,
    pub args: Vec<ArgSpec>,
}

/// A parsed manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub kernels: Vec<KernelSpec>,
}

fn line_of(text: &str, span: Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}

impl Manifest {
    /// Reads and checks a manifest.
    pub fn load(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
        Manifest::parse(path, &text)
    }

    /// Parses manifest text; `path` is used in messages and to resolve relative files.
    pub fn parse(path: &Path, text: &str) -> Result<Manifest> {
        let shown = path.display().to_string();
        let err = |span: Range<usize>, key: &str, message: String| Error::Toml {
            path: shown.clone(),
            line: line_of(text, span),
            message: format!("`{key}`: {message}"),
        };
        let raw: RawManifest = toml::from_str(text).map_err(|e| Error::Toml {
            path: shown.clone(),
            line: e.span().map(|s| line_of(text, s)).unwrap_or(1),
            message: e.message().to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut kernels: Vec<KernelSpec> = Vec::new();
        for k in raw.kernel {
            let kspan = k.span();
            let k = k.into_inner();
            let name = k.name.get_ref().clone();
            if kernels.iter().any(|o| o.name == name) {
                return Err(err(
                    k.name.span(),
                    "name",
                    format!("kernel `{name}` is declared twice"),
                ));
            }
            if !dir.join(k.source.get_ref()).is_file() {
                return Err(err(
                    k.source.span(),
                    "source",
                    format!("{} does not exist", dir.join(k.source.get_ref()).display()),
                ));
            }
            let mut sizes = BTreeMap::new();
            for (s, spec) in k.sizes.get_ref() {
                let (lo, hi) = match spec {
                    SizeSpec::Fixed(n) => (*n, *n),
                    SizeSpec::Range([lo, hi]) => (*lo, *hi),
                };
                if lo == 0 || lo > hi {
                    return Err(err(
                        k.sizes.span(),
                        "sizes",
                        format!("`{s}`: need 1 <= lo <= hi, got [{lo}, {hi}]"),
                    ));
                }
                sizes.insert(s.clone(), (lo, hi));
            }
            if sizes.is_empty() {
                return Err(err(
                    k.sizes.span(),
                    "sizes",
                    "name at least one size".into(),
                ));
            }
            let sanitize_sizes = match &k.sanitize_sizes {
                Some(s) => {
                    for key in s.get_ref().keys() {
                        if !sizes.contains_key(key) {
                            return Err(err(
                                s.span(),
                                "sanitize_sizes",
                                format!("`{key}` is not one of `sizes`"),
                            ));
                        }
                    }
                    sizes
                        .iter()
                        .map(|(n, (lo, _))| (n.clone(), *s.get_ref().get(n).unwrap_or(lo)))
                        .collect()
                }
                None => sizes.iter().map(|(n, (lo, _))| (n.clone(), *lo)).collect(),
            };
            let lo_env: BTreeMap<String, i64> = sizes
                .iter()
                .map(|(n, (lo, _))| (n.clone(), *lo as i64))
                .collect();
            for (key, dims) in [("grid", &k.grid), ("block", &k.block)] {
                if dims.get_ref().is_empty() || dims.get_ref().len() > 3 {
                    return Err(err(dims.span(), key, "give 1 to 3 expressions".into()));
                }
                for e in dims.get_ref() {
                    eval(e, &lo_env).map_err(|m| err(dims.span(), key, m))?;
                }
            }
            let check = match k.oracle.get_ref() {
                RawCheck::Named(s) if s == "determinism" => Check::Determinism,
                RawCheck::Named(s) if s == "none" => Check::None,
                RawCheck::Named(s) => {
                    return Err(err(k.oracle.span(), "oracle", format!("`{s}`: expected \"determinism\", \"none\" or {{ reference = \"file.cu:kernel\" }}")))
                }
                RawCheck::Reference { reference } => {
                    let Some((p, e)) = reference.rsplit_once(':') else {
                        return Err(err(k.oracle.span(), "oracle", format!("reference `{reference}` is not `file.cu:kernel`")));
                    };
                    if !dir.join(p).is_file() {
                        return Err(err(k.oracle.span(), "oracle", format!("reference file {} does not exist", dir.join(p).display())));
                    }
                    Check::Reference { path: p.to_string(), entry: e.to_string() }
                }
            };
            let mut args = Vec::new();
            for a in &k.args {
                let span = a.span();
                let a = a.get_ref();
                let arg_err =
                    |key: &str, m: String| err(span.clone(), &format!("args.{}.{key}", a.name), m);
                let kind = a.kind.get_ref().as_str();
                if kind == "scalar" {
                    if a.ty.get_ref() != "i32" {
                        return Err(arg_err("type", "scalars are i32".into()));
                    }
                    let value = a
                        .value
                        .as_ref()
                        .ok_or_else(|| arg_err("value", "a scalar needs `value`".into()))?;
                    eval(value.get_ref(), &lo_env).map_err(|m| arg_err("value", m))?;
                    args.push(ArgSpec::Scalar {
                        name: a.name.clone(),
                        value: value.get_ref().clone(),
                    });
                    continue;
                }
                let kind = match kind {
                    "in" => BufKind::In,
                    "out" => BufKind::Out,
                    "inout" => BufKind::InOut,
                    other => {
                        return Err(arg_err(
                            "kind",
                            format!("`{other}`: expected in, out, inout or scalar"),
                        ))
                    }
                };
                let elem = match a.ty.get_ref().as_str() {
                    "f32" => Elem::F32,
                    "i32" => Elem::I32,
                    "u32" => Elem::U32,
                    "u8" => Elem::U8,
                    other => {
                        return Err(arg_err(
                            "type",
                            format!("`{other}`: expected f32, i32, u32 or u8"),
                        ))
                    }
                };
                let len = a
                    .len
                    .as_ref()
                    .ok_or_else(|| arg_err("len", "a buffer needs `len`".into()))?;
                eval(len.get_ref(), &lo_env).map_err(|m| arg_err("len", m))?;
                let gen = match (&a.gen, kind) {
                    (None, BufKind::Out) => Gen::Zeros,
                    (None, _) => {
                        return Err(arg_err(
                            "gen",
                            "an input needs `gen` (\"int(lo, hi)\", \"zeros\" or \"iota\")".into(),
                        ))
                    }
                    (Some(g), _) => parse_gen(g.get_ref()).map_err(|m| arg_err("gen", m))?,
                };
                args.push(ArgSpec::Buffer {
                    name: a.name.clone(),
                    kind,
                    elem,
                    len: len.get_ref().clone(),
                    gen,
                });
            }
            if !args.iter().any(|a| {
                matches!(
                    a,
                    ArgSpec::Buffer {
                        kind: BufKind::Out | BufKind::InOut,
                        ..
                    }
                )
            }) {
                return Err(err(
                    kspan,
                    "args",
                    format!("kernel `{name}` has no out or inout buffer to check"),
                ));
            }
            kernels.push(KernelSpec {
                name,
                source: k.source.into_inner(),
                entry: k.entry.into_inner(),
                options: k.options,
                sizes,
                sanitize_sizes,
                grid: k.grid.into_inner(),
                block: k.block.into_inner(),
                check,
                tolerance: k.tolerance.unwrap_or(0.0),
                args,
            });
        }
        if kernels.is_empty() {
            return Err(Error::Toml {
                path: shown,
                line: 1,
                message: "no [[kernel]] in the manifest".into(),
            });
        }
        Ok(Manifest {
            path: path.to_path_buf(),
            dir,
            kernels,
        })
    }
}

fn parse_gen(s: &str) -> std::result::Result<Gen, String> {
    let s = s.trim();
    match s {
        "zeros" => return Ok(Gen::Zeros),
        "iota" => return Ok(Gen::Iota),
        _ => {}
    }
    let inner = s
        .strip_prefix("int(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("`{s}`: expected \"int(lo, hi)\", \"zeros\" or \"iota\""))?;
    let (lo, hi) = inner
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: int needs two bounds"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<i64>()
            .map_err(|_| format!("`{x}` is not an integer"))
    };
    let (lo, hi) = (p(lo)?, p(hi)?);
    if lo > hi {
        return Err(format!("`{s}`: empty range"));
    }
    Ok(Gen::Int(lo, hi))
}

/// Evaluates an integer expression over named sizes: + - * / % and parentheses, `ceil_div(a, b)`,
/// `min(a, b)`, `max(a, b)`.
pub fn eval(expr: &str, env: &BTreeMap<String, i64>) -> std::result::Result<i64, String> {
    use evalexpr::{
        ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, Function,
        HashMapContext, Value,
    };
    let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
    for (k, v) in env {
        ctx.set_value(k.clone(), Value::Int(*v))
            .map_err(|e| e.to_string())?;
    }
    let two = |f: fn(i64, i64) -> Option<i64>| {
        Function::new(move |a: &Value<DefaultNumericTypes>| {
            let t = a.as_fixed_len_tuple(2)?;
            let (x, y) = (t[0].as_int()?, t[1].as_int()?);
            f(x, y)
                .map(Value::Int)
                .ok_or_else(|| evalexpr::EvalexprError::CustomMessage("division by zero".into()))
        })
    };
    ctx.set_function(
        "ceil_div".into(),
        two(|a, b| (b != 0).then(|| (a + b - 1).div_euclid(b))),
    )
    .map_err(|e| e.to_string())?;
    ctx.set_function("min".into(), two(|a, b| Some(a.min(b))))
        .map_err(|e| e.to_string())?;
    ctx.set_function("max".into(), two(|a, b| Some(a.max(b))))
        .map_err(|e| e.to_string())?;
    evalexpr::eval_int_with_context(expr, &ctx).map_err(|e| format!("`{expr}`: {e}"))
}

impl KernelSpec {
    fn dims(&self, exprs: &[String], env: &BTreeMap<String, i64>) -> Dim3 {
        let v: Vec<u32> = exprs
            .iter()
            .map(|e| eval(e, env).unwrap_or(1).max(1) as u32)
            .collect();
        Dim3(v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1))
    }

    /// Draws a problem. Outputs carry no expected bytes: the trial's judge fills them in on the
    /// device.
    pub fn draw(&self, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let env: BTreeMap<String, i64> = match size {
            SizeChoice::Sanitize => self
                .sanitize_sizes
                .iter()
                .map(|(k, v)| (k.clone(), *v as i64))
                .collect(),
            SizeChoice::Fixed(n) => self.sizes.keys().map(|k| (k.clone(), n as i64)).collect(),
            SizeChoice::Random { .. } => self
                .sizes
                .iter()
                .map(|(k, (lo, hi))| (k.clone(), rng.random_range(*lo..=*hi) as i64))
                .collect(),
        };
        let mut buffers = Vec::new();
        let mut args = Vec::new();
        for a in &self.args {
            match a {
                ArgSpec::Scalar { value, .. } => {
                    args.push(Arg::Int(eval(value, &env).unwrap_or(0) as i32))
                }
                ArgSpec::Buffer {
                    name,
                    kind,
                    elem,
                    len,
                    gen,
                } => {
                    let n = eval(len, &env).unwrap_or(0).max(0) as usize;
                    let data: Vec<i64> = (0..n)
                        .map(|i| match gen {
                            Gen::Int(lo, hi) => rng.random_range(*lo..=*hi),
                            Gen::Zeros => 0,
                            Gen::Iota => i as i64,
                        })
                        .collect();
                    let bytes: Vec<u8> = data.iter().flat_map(|x| elem.encode_int(*x)).collect();
                    let name = Arc::<str>::from(name.as_str());
                    buffers.push(match kind {
                        BufKind::In => Buffer::input(name, *elem, bytes),
                        BufKind::Out => Buffer {
                            compare: Default::default(),
                            may_stay_unwritten: false,
                            name,
                            elem: *elem,
                            init: Init::Poison(n * elem.size()),
                            expected: None,
                            judge_fills: true,
                        },
                        BufKind::InOut => Buffer {
                            compare: Default::default(),
                            may_stay_unwritten: false,
                            name,
                            elem: *elem,
                            init: Init::Data(bytes),
                            expected: None,
                            judge_fills: true,
                        },
                    });
                    args.push(Arg::Buf(buffers.len() - 1));
                }
            }
        }
        let grid = self.dims(&self.grid, &env);
        let block = self.dims(&self.block, &env);
        let label = env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("{label} grid={grid} block={block}"),
            buffers,
            launches: vec![LaunchStep {
                shared: 0,
                kernel: self.entry.clone(),
                grid,
                block,
                args,
            }],
        }
    }
}

impl Exercise for KernelSpec {
    fn name(&self) -> &'static str {
        "manifest"
    }

    fn params(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, u32::MAX)
    }

    fn problem(&self, _entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        // A random choice draws from the manifest's own ranges, whatever range it carries.
        self.draw(size, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn expressions_evaluate_over_sizes() {
        let e = env(&[("n", 1000), ("m", 7)]);
        assert_eq!(eval("ceil_div(n, 256)", &e), Ok(4));
        assert_eq!(eval("n * m + 1", &e), Ok(7001));
        assert_eq!(eval("(n + m) % 10", &e), Ok(7));
        assert_eq!(eval("min(n, m) + max(n, m)", &e), Ok(1007));
        assert!(eval("ceil_div(n, 0)", &e)
            .unwrap_err()
            .contains("division by zero"));
        assert!(eval("k + 1", &e).is_err(), "unknown size");
    }

    #[test]
    fn generators_parse() {
        assert_eq!(parse_gen("int(-4, 4)"), Ok(Gen::Int(-4, 4)));
        assert_eq!(parse_gen("iota"), Ok(Gen::Iota));
        assert!(parse_gen("int(4, -4)").is_err());
        assert!(parse_gen("random").is_err());
    }
}
