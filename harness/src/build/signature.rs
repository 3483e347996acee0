//! A manifest's kernels checked against their compiled code before anything is launched: every
//! launch entry and the reference entry exist in the PTX, and each launch's arguments match the
//! kernel's parameters in number, width and kind, then in type where the declaration says it.
//!
//! Two readings, as in grading ([`crate::source::cscan::decl`]):
//! * the **compiled code** (PTX): the parameter count, and each parameter's width and whether it
//!   is a float (a buffer is an 8-byte pointer, a scalar its type's size, a float scalar a
//!   `.f32`/`.f64` parameter);
//! * the **declaration**: PTX does not know pointee types, so a buffer's element type is compared
//!   with what the kernel declares (`const float*` holds f32, not f64). For an `extern "C"`
//!   kernel that is every `__global__` declaration of the name on the token stream (where two
//!   disagree, as under `#if`, or a type is a macro or typedef, nothing is claimed); for a C++
//!   name expression, the lowered name NVRTC compiled ([`crate::source::cscan::mangled`]), which
//!   holds the instantiation's own types.
//!
//! Messages count parameters from 1 (as grading does), name the argument, and point at the
//! manifest line that passed it (the argument, a `[[kernel.launch]]`'s `args`, the `oracle`).

use crate::build::compile::{self, BuildOptions};
use crate::build::ptx;
use crate::errors::{Error, Result};
use crate::source::catalog::Catalog;
use crate::source::cscan::decl::{self, CType};
use crate::source::cscan::{self, mangled, Kind, Token};
use crate::source::files;
use crate::source::manifest::{ArgSpec, Check, KernelSpec, LaunchSpec};
use crate::source::values::Elem;

/// A mismatch: the manifest line it belongs to, the key, and what is wrong.
struct Mismatch {
    line: usize,
    key: String,
    message: String,
}

/// Which launch of a kernel is checked, so a message can point at its lines.
#[derive(Clone, Copy)]
enum Which {
    /// The n-th launch of the kernel (0-based here, shown from 1).
    Launch(usize),
    /// The reference's launch; `own`: it has its own `oracle.args`.
    Reference { own: bool },
}

/// Compiles every file a manifest names and checks each kernel's launches against the PTX and
/// the declarations. Errors name the manifest, the line and the key; a compile error is
/// returned as is.
pub fn check(catalog: &Catalog, arch: &str) -> Result<()> {
    let Some(m) = &catalog.manifest else {
        return Ok(());
    };
    let options = |k: &KernelSpec, path: &str| BuildOptions {
        arch: arch.to_string(),
        jitter: false,
        extra: k.build_options(path),
    };
    // Every module the checks read, built side by side first: one NVRTC child each, and one
    // after another they took 15 s of the corpus gate's 101 on the H200 (run 26, call A). They
    // go through the process's build memo ([`compile::compile_to_cache`]), so the runs after
    // the check (the same file, text and options) do not build them again. A build that fails
    // here is built again in the loop below, which reports its error in the manifest's order,
    // as before.
    let mut wanted: Vec<(String, BuildOptions)> = Vec::new();
    for k in &m.kernels {
        let mut paths = vec![k.source.clone()];
        if let Check::Reference { path, .. } = &k.check {
            paths.push(path.clone());
        }
        for p in paths {
            let w = (p.clone(), options(k, &p));
            if !wanted.contains(&w) {
                wanted.push(w);
            }
        }
    }
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let built: Vec<Option<std::path::PathBuf>> = crate::proc::pool::run_all(
        wanted.clone(),
        jobs,
        |(path, opts)| {
            compile::compile_to_cache(&catalog.root, &catalog.manifest_file(&path), &opts).ok()
        },
        |_| {},
    );
    let ready = |path: &str, opts: &BuildOptions| -> Option<String> {
        let at = wanted.iter().position(|(p, o)| p == path && o == opts)?;
        std::fs::read_to_string(built[at].as_ref()?).ok()
    };
    for k in &m.kernels {
        let err = |x: Mismatch| Error::Toml {
            path: m.path.display().to_string(),
            line: x.line,
            message: format!("kernel `{}`: `{}`: {}", k.name, x.key, x.message),
        };
        let build = |path: &str| -> Result<Module> {
            let opts = options(k, path);
            let file = catalog.manifest_file(path);
            let ptx = match ready(path, &opts) {
                Some(ptx) => ptx,
                None => compile::compile(&catalog.root, &file, &opts)?.ptx,
            };
            // ignored: the declarations are read from the file as written; one that cannot be
            // read leaves only the compiled code's reading.
            let source = files::read_text(&catalog.root.join(&file), "a kernel", files::TEXT_LIMIT)
                .unwrap_or_default();
            Ok(Module {
                file: path.to_string(),
                ptx,
                code: cscan::tokens(&source)
                    .filter(|t| t.kind != Kind::Comment)
                    .collect(),
            })
        };
        let module = build(&k.source)?;
        for (i, l) in k.launches.iter().enumerate() {
            check_launch(k, l, Which::Launch(i), &module).map_err(err)?;
        }
        if let Check::Reference { path, entry } = &k.check {
            let other;
            let ref_module = if *path == k.source {
                &module
            } else {
                other = build(path)?;
                &other
            };
            let (launch, own) = match &k.reference_launch {
                Some(l) => (l.clone(), true),
                None => (
                    LaunchSpec {
                        entry: entry.clone(),
                        ..k.launches[0].clone()
                    },
                    false,
                ),
            };
            check_launch(k, &launch, Which::Reference { own }, ref_module).map_err(err)?;
        }
    }
    Ok(())
}

/// One compiled file: its PTX and its code tokens (comments dropped).
struct Module {
    file: String,
    ptx: String,
    code: Vec<Token>,
}

/// A declared parameter type and how it is written (`float const*`).
type Declared = (CType, String);

/// The declared type of each parameter of `symbol` (`None` where it cannot be told), and where
/// that reading comes from (`k.cu:3`, or the compiled name).
fn declared(
    m: &Module,
    entry: &str,
    symbol: &str,
    count: usize,
) -> (Vec<Option<Declared>>, String) {
    if symbol.starts_with("_Z") {
        if let Some(types) = mangled::params(symbol).filter(|t| t.len() == count) {
            let types = types.into_iter().map(|t| {
                let shown = mangled::show(&t);
                Some((t, shown))
            });
            return (types.collect(), "as compiled".into());
        }
        return (vec![None; count], String::new());
    }
    // Declarations with another parameter count are other code (an `#if` branch, say).
    let decls: Vec<decl::Decl> = decl::declarations(&m.code, entry)
        .into_iter()
        .filter(|d| d.params.len() == count)
        .collect();
    let Some(first) = decls.first() else {
        return (vec![None; count], String::new());
    };
    let types = (0..count)
        .map(|i| {
            let mut seen = decls.iter().map(|d| decl::parse_type(&d.params[i]));
            let (ty, written) = seen.next()??;
            // Two declarations that disagree: which one was compiled is not known here.
            seen.all(|o| o.is_some_and(|(t, _)| t == ty))
                .then_some((ty, written))
        })
        .collect();
    (types, format!("{}:{}", m.file, first.line))
}

fn check_launch(
    k: &KernelSpec,
    l: &LaunchSpec,
    which: Which,
    m: &Module,
) -> std::result::Result<(), Mismatch> {
    let lines = &k.lines;
    let (entry_line, args_line, base_key) = match which {
        Which::Launch(i) if lines.tables => {
            let (e, a) = lines.launches.get(i).copied().unwrap_or_default();
            (e, a, format!("launch #{}", i + 1))
        }
        Which::Launch(i) => {
            let (e, a) = lines.launches.get(i).copied().unwrap_or_default();
            (e, a, String::new())
        }
        Which::Reference { own } => (
            lines.oracle,
            if own {
                lines.oracle
            } else {
                lines.launches.first().map_or(lines.oracle, |l| l.1)
            },
            "oracle".to_string(),
        ),
    };
    let key = |part: &str| match (base_key.as_str(), part) {
        ("", p) => p.to_string(),
        ("oracle", "entry") => "oracle".to_string(),
        (b, p) => format!("{b}.{p}"),
    };
    let entries = ptx::entries(&m.ptx);
    let names = ptx::names(&m.ptx);
    let Some(e) = ptx::find(&entries, &names, &l.entry) else {
        let have: Vec<&str> = entries
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| !n.starts_with("racegate_"))
            .collect();
        return Err(Mismatch {
            line: entry_line,
            key: key("entry"),
            message: format!(
                "no kernel `{}` in the compiled code of {} (it has: {}); is it `extern \"C\"`, \
                 or a template named by its instantiation such as `f<float, 256>`?",
                l.entry,
                m.file,
                if have.is_empty() {
                    "none".into()
                } else {
                    have.join(", ")
                }
            ),
        });
    };
    if e.params.len() != l.args.len() {
        return Err(Mismatch {
            line: args_line,
            key: key("args"),
            message: format!(
                "`{}` takes {} parameter(s), the launch passes {} ({})",
                l.entry,
                e.params.len(),
                l.args.len(),
                l.args.join(", ")
            ),
        });
    }
    let (types, from) = declared(m, &l.entry, &e.name, e.params.len());
    for (i, ((p, name), ty)) in e.params.iter().zip(&l.args).zip(&types).enumerate() {
        let Some(arg) = k.arg(name) else {
            return Err(Mismatch {
                line: args_line,
                key: key("args"),
                message: format!("the launch passes `{name}`, which is not an argument"),
            });
        };
        // A kernel-level launch passes each argument on its own line; a launch table or the
        // reference's own launch in its `args` list.
        let (line, arg_key) = match which {
            Which::Launch(_) if base_key.is_empty() => (
                lines.args.get(name).copied().unwrap_or(args_line),
                format!("args.{name}"),
            ),
            Which::Reference { own: false } => (
                lines.args.get(name).copied().unwrap_or(args_line),
                format!("args.{name}"),
            ),
            _ => (args_line, key("args")),
        };
        if let Some(message) = judge(arg, p, ty.as_ref(), &from) {
            return Err(Mismatch {
                line,
                key: arg_key,
                message: format!("parameter {} `{name}` of `{}`: {message}", i + 1, l.entry),
            });
        }
    }
    Ok(())
}

/// What the manifest says an argument is, in words: `f64` for a buffer, `a f32 scalar`.
fn manifest_says(arg: &ArgSpec) -> String {
    match arg {
        ArgSpec::Buffer { elem, .. } => format!("a {} buffer", elem.name()),
        ArgSpec::Scalar { elem, .. } => format!("a {} scalar", elem.name()),
    }
}

/// A PTX parameter in words.
fn compiled(p: &ptx::Param) -> String {
    match (p.width, p.float) {
        (8, false) => "an 8-byte pointer or integer".into(),
        (w, true) => format!("a {w}-byte float"),
        (w, false) => format!("a {w}-byte integer"),
    }
}

/// What a declared base type is, as far as a manifest type can say: a float type's own element
/// type, an integer's width and signedness (`char`: either), or `None` for a type racegate does
/// not know (a typedef, a macro, a struct, `void`).
fn elem_of(base: &str) -> Option<(&'static [Elem], usize, bool)> {
    use Elem::*;
    // (the manifest types it holds, width, float)
    Some(match base {
        "float" => (&[F32], 4, true),
        "double" => (&[F64], 8, true),
        "__half" => (&[F16], 2, true),
        "__nv_bfloat16" => (&[BF16], 2, true),
        "char" | "bool" => (&[I8, U8], 1, false),
        "i8" => (&[I8], 1, false),
        "u8" => (&[U8], 1, false),
        "i16" => (&[I16], 2, false),
        "u16" => (&[U16], 2, false),
        "i32" => (&[I32], 4, false),
        "u32" => (&[U32], 4, false),
        "i64" => (&[I64], 8, false),
        "u64" => (&[U64], 8, false),
        _ => return None,
    })
}

/// Whether `arg` fits the parameter compiled as `p` and declared as `ty`; the message when not.
fn judge(arg: &ArgSpec, p: &ptx::Param, ty: Option<&Declared>, from: &str) -> Option<String> {
    let written = ty.map(|(_, w)| w.as_str()).unwrap_or_default();
    let shown = |_: &CType| {
        let at = if from.is_empty() {
            String::new()
        } else {
            format!(" ({from})")
        };
        format!("declared `{written}`{at}")
    };
    let ty = ty.map(|(t, _)| t);
    let (width, float) = match arg {
        ArgSpec::Buffer { .. } => (8, false),
        ArgSpec::Scalar { elem, .. } => (elem.size(), matches!(elem, Elem::F32 | Elem::F64)),
    };
    let says = manifest_says(arg);
    if (p.width, p.float) != (width, float) {
        return Some(match ty {
            Some(t) => format!(
                "{}, manifest says {says} (compiled: {}, the manifest needs {})",
                shown(t),
                compiled(p),
                compiled(&ptx::Param { width, float })
            ),
            None => format!(
                "the compiled kernel takes {}, manifest says {says} ({})",
                compiled(p),
                compiled(&ptx::Param { width, float })
            ),
        });
    }
    let t = ty?;
    if t.reference {
        return None;
    }
    match arg {
        ArgSpec::Buffer { elem, .. } => {
            if t.ptrs.is_empty() {
                // An 8-byte integer where a pointer is passed: only a known type says so.
                elem_of(&t.base)?;
                return Some(format!("{}, manifest says {says}", shown(t)));
            }
            if t.ptrs.len() > 1 {
                return Some(format!("{}, manifest says {says}", shown(t)));
            }
            let (holds, _, _) = elem_of(&t.base)?;
            (!holds.contains(elem)).then(|| format!("{}, manifest says {}", shown(t), elem.name()))
        }
        ArgSpec::Scalar { elem, .. } => {
            if !t.ptrs.is_empty() {
                return Some(format!("{}, manifest says {says}", shown(t)));
            }
            let (holds, w, f) = elem_of(&t.base)?;
            if holds.contains(elem) {
                return None;
            }
            // Signedness counts, as `grade` counts it: `int` is `i32`, `unsigned int` is `u32`
            // (the bits passed are the same, but the value's range and its meaning are not).
            let signedness = !f && !elem.is_float() && w == elem.size();
            Some(match signedness {
                true => format!(
                    "{}, manifest says {says}: they differ in signedness (write type = \"{}\")",
                    shown(t),
                    holds.first().map_or("", |e| e.name())
                ),
                false => format!("{}, manifest says {says}", shown(t)),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::manifest::gen::Gen;
    use crate::source::manifest::spec::BufKind;
    use crate::source::values::Compare;

    const ELEMS: [Elem; 12] = [
        Elem::F32,
        Elem::F64,
        Elem::F16,
        Elem::BF16,
        Elem::I8,
        Elem::U8,
        Elem::I16,
        Elem::U16,
        Elem::I32,
        Elem::U32,
        Elem::I64,
        Elem::U64,
    ];

    /// The C spelling a team would declare for each manifest type.
    fn c_type(e: Elem) -> &'static str {
        match e {
            Elem::F32 => "float",
            Elem::F64 => "double",
            Elem::F16 => "__half",
            Elem::BF16 => "__nv_bfloat16",
            Elem::I8 => "signed char",
            Elem::U8 => "unsigned char",
            Elem::I16 => "short",
            Elem::U16 => "unsigned short",
            Elem::I32 => "int",
            Elem::U32 => "unsigned int",
            Elem::I64 => "long long",
            Elem::U64 => "size_t",
        }
    }

    fn ty(s: &str) -> Declared {
        let toks: Vec<Token> = cscan::tokens(s).collect();
        decl::parse_type(&toks).unwrap()
    }

    fn buffer(elem: Elem) -> ArgSpec {
        ArgSpec::Buffer {
            name: "a".into(),
            kind: BufKind::In,
            elem,
            len: "n".into(),
            gen: Gen::Zeros,
            compare: Compare::default(),
            unwritten: false,
        }
    }

    fn scalar(elem: Elem) -> ArgSpec {
        ArgSpec::Scalar {
            name: "w".into(),
            elem,
            value: "1".into(),
        }
    }

    fn ptx_of(elem: Elem) -> ptx::Param {
        ptx::Param {
            width: elem.size(),
            float: matches!(elem, Elem::F32 | Elem::F64),
        }
    }

    const PTR: ptx::Param = ptx::Param {
        width: 8,
        float: false,
    };

    #[test]
    fn every_buffer_type_against_every_declared_pointee() {
        // A generator over every pair: only the matching declaration passes.
        for declared in ELEMS {
            for given in ELEMS {
                for spelling in [
                    format!("const {}* a", c_type(declared)),
                    format!("{} const* __restrict__ a", c_type(declared)),
                    format!("{}* a", c_type(declared)),
                ] {
                    let got = judge(&buffer(given), &PTR, Some(&ty(&spelling)), "k.cu:1");
                    if declared == given {
                        assert_eq!(got, None, "{spelling} with {}", given.name());
                    } else {
                        let m = got
                            .unwrap_or_else(|| panic!("{spelling} with {} passed", given.name()));
                        assert!(
                            m.starts_with("declared `")
                                && m.ends_with(&format!("manifest says {}", given.name())),
                            "{m}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_issue_s_example_reads_as_written() {
        let m = judge(
            &buffer(Elem::F64),
            &PTR,
            Some(&ty("const float* a")),
            "k.cu:3",
        )
        .unwrap();
        assert_eq!(m, "declared `const float*` (k.cu:3), manifest says f64");
    }

    #[test]
    fn types_racegate_does_not_know_are_never_judged() {
        for spelling in [
            "void* a",
            "float4* a",
            "real_t* a",
            "T* a",
            "const ns::S* a",
        ] {
            for given in ELEMS {
                assert_eq!(
                    judge(&buffer(given), &PTR, Some(&ty(spelling)), "k.cu:1"),
                    None,
                    "{spelling}"
                );
            }
        }
        assert_eq!(
            judge(&buffer(Elem::U8), &PTR, Some(&ty("char* a")), ""),
            None
        );
        assert_eq!(
            judge(&buffer(Elem::I8), &PTR, Some(&ty("char* a")), ""),
            None
        );
        assert_eq!(judge(&buffer(Elem::F32), &PTR, None, ""), None);
    }

    #[test]
    fn scalars_say_what_was_declared_and_what_was_given() {
        for declared in ELEMS {
            for given in ELEMS {
                let p = ptx_of(declared);
                let got = judge(
                    &scalar(given),
                    &p,
                    Some(&ty(&format!("{} w", c_type(declared)))),
                    "k.cu:2",
                );
                // Signedness counts: only the type itself fits.
                let same_kind = declared == given;
                match got {
                    None => assert!(
                        same_kind,
                        "{} declared, {} given: passed",
                        declared.name(),
                        given.name()
                    ),
                    Some(m) => {
                        assert!(
                            !same_kind,
                            "{} declared, {} given: {m}",
                            declared.name(),
                            given.name()
                        );
                        assert!(
                            m.contains(&format!(
                                "declared `{}`",
                                ty(&format!("{} w", c_type(declared))).1
                            )) && m.contains(&format!("manifest says a {} scalar", given.name())),
                            "{m}"
                        );
                    }
                }
            }
        }
        // Without a declaration the compiled code still says int vs float.
        let m = judge(&scalar(Elem::F32), &ptx_of(Elem::I32), None, "").unwrap();
        assert_eq!(
            m,
            "the compiled kernel takes a 4-byte integer, manifest says a f32 scalar (a 4-byte float)"
        );
        // A pointer passed a scalar of the same width is caught by the declaration.
        let m = judge(&scalar(Elem::I64), &PTR, Some(&ty("float* w")), "k.cu:2").unwrap();
        assert_eq!(m, "declared `float*` (k.cu:2), manifest says a i64 scalar");
    }
}
